package ops

import "fmt"

// Errno is a Linux error number as a syscall returns it; 0 means success.
type Errno uint16

// The errors the vocabulary can express. Values are the x86-64 Linux numbers.
const (
	OK     Errno = 0
	EPERM  Errno = 1
	ENOENT Errno = 2
	EINTR  Errno = 4
	E2BIG  Errno = 7
	EAGAIN Errno = 11
	ENOMEM Errno = 12
	EACCES Errno = 13
	EFAULT Errno = 14
	EBADF  Errno = 9
	EFBIG  Errno = 27
	// EBUSY is not a syscall's: it is the result of an operation issued by
	// a task that is still asleep in an earlier call.
	EBUSY   Errno = 16
	EEXIST  Errno = 17
	EINVAL  Errno = 22
	ENOSPC  Errno = 28
	ERANGE  Errno = 34
	ENOMSG  Errno = 42
	EIDRM   Errno = 43
	ENOSYS  Errno = 38
	EOVERFL Errno = 75 // EOVERFLOW
)

var errnoNames = map[Errno]string{
	OK: "ok", EPERM: "EPERM", ENOENT: "ENOENT", EBADF: "EBADF", EINTR: "EINTR", E2BIG: "E2BIG", EAGAIN: "EAGAIN",
	ENOMEM: "ENOMEM", EACCES: "EACCES", EFAULT: "EFAULT", EFBIG: "EFBIG", EBUSY: "EBUSY", EEXIST: "EEXIST", EINVAL: "EINVAL",
	ENOSPC: "ENOSPC", ERANGE: "ERANGE", ENOMSG: "ENOMSG", EIDRM: "EIDRM", ENOSYS: "ENOSYS",
	EOVERFL: "EOVERFLOW",
}

var errnoByName = func() map[string]Errno {
	m := make(map[string]Errno, len(errnoNames))
	for e, n := range errnoNames {
		m[n] = e
	}
	return m
}()

// String returns the canonical name ("EINVAL", or "ok" for success).
func (e Errno) String() string {
	if n, ok := errnoNames[e]; ok {
		return n
	}
	return fmt.Sprintf("errno%d", uint16(e))
}

// ParseErrno reads a name written by String.
func ParseErrno(s string) (Errno, error) {
	if e, ok := errnoByName[s]; ok {
		return e, nil
	}
	var n uint16
	if _, err := fmt.Sscanf(s, "errno%d", &n); err == nil {
		return Errno(n), nil
	}
	return 0, fmt.Errorf("unknown error name %q", s)
}
