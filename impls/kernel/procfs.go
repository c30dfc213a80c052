//go:build linux && amd64

package kernel

import (
	"bytes"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/task"
)

// Everything here runs on the worker thread: /proc/sysvipc shows the opener's
// IPC namespace, and the ipc sysctls under /proc/sys/kernel act on it too.
// The files are read and written with plain syscalls so that no poller or
// other goroutine gets involved.

// limitSysctl names the object-limit sysctl of each type (semmni is the 4th
// field of "sem").
var limitSysctl = [...]string{ops.Msg: "msgmni", ops.Sem: "sem", ops.Shm: "shmmni"}

// procfs reads /proc files into a buffer it reuses. Its reads and writes
// are timed by clock (the worker's timing; nil for none): the operations
// that read or write /proc files are those system calls.
type procfs struct {
	buf   []byte
	clock *task.Timing
}

// read reads a whole /proc file into the buffer. The result is valid
// until the next read.
func (p *procfs) read(path string) ([]byte, unix.Errno, error) {
	defer p.clock.End(p.clock.Begin())
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, errnoOf(err), nil
	}
	defer unix.Close(fd)
	if cap(p.buf) < 64<<10 {
		p.buf = make([]byte, 0, 64<<10)
	}
	b := p.buf[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := unix.Read(fd, b[len(b):cap(b)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, errnoOf(err), nil
		}
		if n == 0 {
			break
		}
		b = b[:len(b)+n]
	}
	p.buf = b
	return b, 0, nil
}

// write is writeProc, timed.
func (p *procfs) write(path, text string) (unix.Errno, error) {
	defer p.clock.End(p.clock.Begin())
	return writeProc(path, text)
}

// writeProc writes text to a /proc file in one write and returns the errno of
// the open or the write.
func writeProc(path, text string) (unix.Errno, error) {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return errnoOf(err), nil
	}
	defer unix.Close(fd)
	n, err := unix.Write(fd, []byte(text))
	if err != nil {
		return errnoOf(err), nil
	}
	if n != len(text) {
		return 0, fmt.Errorf("write %s: short write (%d of %d bytes)", path, n, len(text))
	}
	return 0, nil
}

func errnoOf(err error) unix.Errno {
	if e, ok := err.(unix.Errno); ok {
		return e
	}
	return unix.EIO // unix.Open/Read/Write only return Errno
}

// readInt reads a one-number /proc file.
func (p *procfs) readInt(path string) (int64, error) {
	b, e, err := p.read(path)
	if err == nil && e != 0 {
		err = e
	}
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	n, err := strconv.ParseInt(string(bytes.TrimSpace(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	return n, nil
}

// setNextID writes <type>_next_id.
func (p *procfs) setNextID(typ ops.IPCType, v int64) (unix.Errno, error) {
	return p.write("/proc/sys/kernel/"+typ.String()+"_next_id", strconv.FormatInt(v, 10)+"\n")
}

// setLimit writes msgmni or shmmni, or for sem rewrites the four fields of
// "sem" with the 4th (semmni) set to v and the others kept.
func (p *procfs) setLimit(typ ops.IPCType, v int64) (unix.Errno, error) {
	path := "/proc/sys/kernel/" + limitSysctl[typ]
	text := strconv.FormatInt(v, 10) + "\n"
	if typ == ops.Sem {
		b, e, err := p.read(path)
		if err != nil || e != 0 {
			return e, err
		}
		f, err := parseSemLimits(b)
		if err != nil {
			return 0, err
		}
		text = fmt.Sprintf("%d %d %d %d\n", f[0], f[1], f[2], v)
	}
	return p.write(path, text)
}
