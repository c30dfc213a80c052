//go:build linux && amd64

// Package kcov is the kernel's code coverage of one thread
// (Documentation/dev-tools/kcov.rst): the program counters of the kernel
// code that the thread's own syscalls ran, collected by a kernel built
// with CONFIG_KCOV into a buffer shared with the thread.
//
// A Tracer belongs to the OS thread that opened it: only that thread's
// syscalls are traced, so it must be opened on a thread locked to its
// goroutine (package worker) and used there. Reset before a call, PCs
// after it. Nothing here costs anything unless a Tracer is open.
package kcov

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Path is KCOV's file in debugfs.
const Path = "/sys/kernel/debug/kcov"

// The ioctls of <linux/kcov.h>.
const (
	initTrace = 0x80086301 // _IOR('c', 1, unsigned long)
	enable    = 0x6364     // _IO('c', 100)
	disable   = 0x6365     // _IO('c', 101)
	tracePC   = 0          // KCOV_TRACE_PC
)

// DefaultWords is the buffer's size in program counters: 256 Ki, 2 MiB.
// One operation of ipcfuzz reaches a few thousand.
const DefaultWords = 1 << 18

// ErrNoKCOV is what Open returns on a kernel without KCOV, or where debugfs
// is not mounted.
var ErrNoKCOV = errors.New("kcov: no " + Path + " (a kernel without CONFIG_KCOV, or debugfs not mounted)")

// Available reports whether this kernel offers KCOV (Path exists).
func Available() bool {
	_, err := os.Stat(Path)
	return err == nil
}

// Tracer is KCOV enabled on the thread that opened it.
type Tracer struct {
	fd    int
	area  []byte
	words []uint64 // area as words: [0] is the count, then the PCs
	// Overflows counts the reads that found the buffer full: their PCs
	// are the first that fit.
	Overflows int
}

// Open enables KCOV for the calling thread, with a buffer of words program
// counters (DefaultWords when 0). The caller must be locked to its OS thread
// and stay there until Close.
func Open(words int) (*Tracer, error) {
	if words <= 0 {
		words = DefaultWords
	}
	fd, err := unix.Open(Path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, ErrNoKCOV
		}
		return nil, fmt.Errorf("kcov: opening %s: %w", Path, err)
	}
	t := &Tracer{fd: fd}
	if err := unix.IoctlSetInt(fd, initTrace, words); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("kcov: KCOV_INIT_TRACE %d: %w", words, err)
	}
	t.area, err = unix.Mmap(fd, 0, words*8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("kcov: mmap of its buffer: %w", err)
	}
	t.words = unsafe.Slice((*uint64)(unsafe.Pointer(&t.area[0])), words)
	if err := unix.IoctlSetInt(fd, enable, tracePC); err != nil {
		t.release()
		return nil, fmt.Errorf("kcov: KCOV_ENABLE: %w", err)
	}
	t.Reset()
	return t, nil
}

// Reset forgets what was collected: the next PCs are of what runs after it.
func (t *Tracer) Reset() {
	atomic.StoreUint64(&t.words[0], 0)
}

// PCs appends to dst the program counters collected since the last Reset,
// in the order they ran (repeats included).
func (t *Tracer) PCs(dst []uint64) []uint64 {
	n := atomic.LoadUint64(&t.words[0])
	if n >= uint64(len(t.words)-1) {
		n = uint64(len(t.words) - 1)
		t.Overflows++
	}
	return append(dst, t.words[1:1+n]...)
}

// Close disables KCOV for the thread and frees the buffer. It must run on
// the thread that opened it.
func (t *Tracer) Close() error {
	err := unix.IoctlSetInt(t.fd, disable, 0)
	if err2 := t.release(); err == nil {
		err = err2
	}
	if err != nil {
		return fmt.Errorf("kcov: closing: %w", err)
	}
	return nil
}

func (t *Tracer) release() error {
	var err error
	if t.area != nil {
		err = unix.Munmap(t.area)
		t.area, t.words = nil, nil
	}
	if cerr := unix.Close(t.fd); err == nil {
		err = cerr
	}
	return err
}
