//go:build linux

// Package syscount counts the system calls a thread issues, and those of
// the processes it starts after it began counting, with the kernel's own
// raw_syscalls:sys_enter tracepoint through perf_event_open(2): what a
// kernel side of ipcfuzz spends in the kernel, in calls, beside the time
// it takes. Where the kernel or the machine offers no such counter (no
// tracepoints, no tracefs, a perf_event_paranoid that refuses) Open says
// why and nothing is counted.
package syscount

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ErrUnavailable is wrapped by Open's error where the kernel offers no
// syscall tracepoint to count with.
var ErrUnavailable = errors.New("no raw_syscalls:sys_enter tracepoint")

// Counter counts the system calls of the thread that opened it.
type Counter struct{ fd int }

// Tracepoint is the kernel's ID of raw_syscalls:sys_enter (Lookup).
type Tracepoint uint64

// Lookup finds the tracepoint's ID in tracefs, mounted where it usually
// is, or, where it is not, in a mount namespace of a thread of its own
// (the host's mounts are left alone). One lookup serves every counter.
func Lookup() (Tracepoint, error) {
	id, err := tracepointID()
	return Tracepoint(id), err
}

// Open starts counting the calling thread's system calls, and those of
// the processes and threads it starts from now on (the counter is
// inherited). The caller must be locked to its OS thread (a Go runtime
// thread may otherwise run it, and clone from it).
func (tp Tracepoint) Open() (*Counter, error) { return tp.open(0) }

// OpenPID starts counting the system calls of process pid (all its
// threads), and of the processes it starts from now on.
func (tp Tracepoint) OpenPID(pid int) (*Counter, error) { return tp.open(pid) }

// Open is Lookup, then Tracepoint.Open.
func Open() (*Counter, error) {
	tp, err := Lookup()
	if err != nil {
		return nil, err
	}
	return tp.Open()
}

func (tp Tracepoint) open(pid int) (*Counter, error) {
	attr := unix.PerfEventAttr{
		Type:   unix.PERF_TYPE_TRACEPOINT,
		Config: uint64(tp),
		Size:   uint32(unsafe.Sizeof(unix.PerfEventAttr{})),
		Bits:   unix.PerfBitInherit | unix.PerfBitExcludeHv,
	}
	fd, err := unix.PerfEventOpen(&attr, pid, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("syscount: perf_event_open of raw_syscalls:sys_enter: %w", err)
	}
	return &Counter{fd: fd}, nil
}

// Read is how many system calls were entered since Open, this read's own
// included.
func (c *Counter) Read() (int64, error) {
	var buf [8]byte
	if _, err := unix.Read(c.fd, buf[:]); err != nil {
		return 0, fmt.Errorf("syscount: read: %w", err)
	}
	return int64(binary.LittleEndian.Uint64(buf[:])), nil
}

// Close stops counting.
func (c *Counter) Close() error { return unix.Close(c.fd) }

// idFile is where tracefs keeps the tracepoint's ID.
const idFile = "events/raw_syscalls/sys_enter/id"

// tracepointID reads the ID of raw_syscalls:sys_enter from tracefs where
// it is mounted, else from a tracefs mounted for it in a private mount
// namespace (of a locked thread that ends with it).
func tracepointID() (uint64, error) {
	for _, dir := range []string{"/sys/kernel/tracing", "/sys/kernel/debug/tracing"} {
		if id, err := readID(filepath.Join(dir, idFile)); err == nil {
			return id, nil
		}
	}
	type answer struct {
		id  uint64
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		// The thread's mount namespace becomes its own: it is never
		// unlocked, so it ends with this goroutine.
		runtime.LockOSThread()
		id, err := mountedID()
		ch <- answer{id, err}
	}()
	a := <-ch
	return a.id, a.err
}

// mountedID mounts tracefs in a mount namespace of the calling thread's
// own and reads the ID there.
func mountedID() (uint64, error) {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return 0, fmt.Errorf("syscount: %w: tracefs is not mounted, and a mount namespace to mount it in: %w", ErrUnavailable, err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return 0, fmt.Errorf("syscount: %w: making the mounts private: %w", ErrUnavailable, err)
	}
	dir, err := os.MkdirTemp("", "ipcfuzz-tracefs-")
	if err != nil {
		return 0, fmt.Errorf("syscount: %w", err)
	}
	defer os.Remove(dir)
	if err := unix.Mount("nodev", dir, "tracefs", 0, ""); err != nil {
		return 0, fmt.Errorf("syscount: %w: mounting tracefs: %w", ErrUnavailable, err)
	}
	defer unix.Unmount(dir, unix.MNT_DETACH)
	id, err := readID(filepath.Join(dir, idFile))
	if err != nil {
		return 0, fmt.Errorf("syscount: %w: %w", ErrUnavailable, err)
	}
	return id, nil
}

func readID(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}
