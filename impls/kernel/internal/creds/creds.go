//go:build linux && amd64

// Package creds switches the calling thread to an unprivileged user and
// back, with raw per-thread syscalls: an operation run "as" another user
// changes only the thread that issues it, never the whole process (the Go
// runtime's unix.Setresuid would change every thread).
//
// A thread that switched must switch back, and prove it: Restore checks
// that every credential, capabilities included, is what it was. The
// dumpable flag is the process's, not a thread's: every change of an
// effective id sets it to fs.suid_dumpable, so it is saved when the first
// thread of the process switches and put back when the last one switches
// back (two Models in one process have a worker thread each).
package creds

import (
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Creds are what running as another user changes on a thread and what
// must be back, exactly, before it serves anything else.
type Creds struct {
	ruid, euid, suid uint32
	rgid, egid, sgid uint32
	groups           []uint32
	capEff, capPrm   uint64
}

// users counts the threads of this process that run as another user, and
// holds the dumpable flag from before the first of them switched. Every
// switch, either way, is made under mu, so that a thread checking what it
// restored sees no other thread's change half-way.
var users struct {
	mu       sync.Mutex
	n        int
	dumpable uintptr
}

// Keep is -1 as a uid_t/gid_t argument: "leave this id unchanged".
const Keep = uintptr(0xffffffff)

// Current reads the calling thread's credentials.
func Current() (Creds, error) {
	var c Creds
	if _, _, e := unix.RawSyscall(unix.SYS_GETRESUID, uintptr(unsafe.Pointer(&c.ruid)), uintptr(unsafe.Pointer(&c.euid)), uintptr(unsafe.Pointer(&c.suid))); e != 0 {
		return c, fmt.Errorf("getresuid: %w", e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_GETRESGID, uintptr(unsafe.Pointer(&c.rgid)), uintptr(unsafe.Pointer(&c.egid)), uintptr(unsafe.Pointer(&c.sgid))); e != 0 {
		return c, fmt.Errorf("getresgid: %w", e)
	}
	n, _, e := unix.RawSyscall(unix.SYS_GETGROUPS, 0, 0, 0)
	if e != 0 {
		return c, fmt.Errorf("getgroups: %w", e)
	}
	c.groups = make([]uint32, n)
	if n > 0 {
		if _, _, e := unix.RawSyscall(unix.SYS_GETGROUPS, n, uintptr(unsafe.Pointer(&c.groups[0])), 0); e != 0 {
			return c, fmt.Errorf("getgroups: %w", e)
		}
	}
	var err error
	if c.capEff, c.capPrm, err = threadCaps(); err != nil {
		return c, err
	}
	return c, nil
}

// Equal reports whether c and o are the same credentials.
func (c Creds) Equal(o Creds) bool {
	return c.ruid == o.ruid && c.euid == o.euid && c.suid == o.suid &&
		c.rgid == o.rgid && c.egid == o.egid && c.sgid == o.sgid &&
		slices.Equal(c.groups, o.groups) &&
		c.capEff == o.capEff && c.capPrm == o.capPrm
}

func (c Creds) String() string {
	return fmt.Sprintf("uid=%d/%d/%d gid=%d/%d/%d groups=%v CapEff=%016x CapPrm=%016x",
		c.ruid, c.euid, c.suid, c.rgid, c.egid, c.sgid, c.groups, c.capEff, c.capPrm)
}

// threadCaps returns the calling thread's effective and permitted capability
// sets (capget with pid 0 reads the calling thread).
func threadCaps() (eff, prm uint64, err error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if _, _, e := unix.RawSyscall(unix.SYS_CAPGET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return 0, 0, fmt.Errorf("capget: %w", e)
	}
	eff = uint64(data[1].Effective)<<32 | uint64(data[0].Effective)
	prm = uint64(data[1].Permitted)<<32 | uint64(data[0].Permitted)
	return eff, prm, nil
}

// dumpable reads the process's dumpable flag.
func dumpable() (uintptr, error) {
	d, _, e := unix.RawSyscall(unix.SYS_PRCTL, unix.PR_GET_DUMPABLE, 0, 0)
	if e != 0 {
		return 0, fmt.Errorf("prctl(PR_GET_DUMPABLE): %w", e)
	}
	return d, nil
}

// BecomeUser makes the calling thread, whose credentials are self, an
// unprivileged caller: no supplementary groups, egid = euid = id. The real
// and saved ids stay as they were (root), which is what lets Restore switch
// back; the kernel clears the effective capabilities when the euid leaves 0
// and keeps the permitted set. Whatever it returns, Restore must follow:
// the thread counts as switched until then.
func BecomeUser(self Creds, id uint32) error {
	users.mu.Lock()
	defer users.mu.Unlock()
	if users.n++; users.n == 1 {
		d, err := dumpable()
		if err != nil {
			return err
		}
		users.dumpable = d
	}
	if self.euid != 0 {
		return fmt.Errorf("running an op as uid %d needs a root thread (euid is %d)", id, self.euid)
	}
	if uintptr(id) == Keep {
		return fmt.Errorf("uid %d is not a valid user", id)
	}
	if len(self.groups) > 0 {
		if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
			return fmt.Errorf("setgroups([]): %w", e)
		}
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, Keep, uintptr(id), Keep); e != 0 {
		return fmt.Errorf("setresgid(-1, %d, -1): %w", id, e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, Keep, uintptr(id), Keep); e != 0 {
		return fmt.Errorf("setresuid(-1, %d, -1): %w", id, e)
	}
	return nil
}

// Restore switches the calling thread back to self and checks that every
// credential is back; the last thread of the process to switch back puts
// the dumpable flag back too.
func Restore(self Creds) error {
	users.mu.Lock()
	defer users.mu.Unlock()
	users.n = max(users.n-1, 0)
	// The euid first: it brings back the effective capabilities (from the
	// permitted set), which setgroups and setresgid need.
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, Keep, uintptr(self.euid), Keep); e != 0 {
		return fmt.Errorf("setresuid(-1, %d, -1): %w", self.euid, e)
	}
	if len(self.groups) > 0 { // BecomeUser cleared them
		if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(self.groups)), uintptr(unsafe.Pointer(&self.groups[0])), 0); e != 0 {
			return fmt.Errorf("setgroups(%v): %w", self.groups, e)
		}
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, Keep, uintptr(self.egid), Keep); e != 0 {
		return fmt.Errorf("setresgid(-1, %d, -1): %w", self.egid, e)
	}
	var derr error
	if users.n == 0 {
		derr = restoreDumpable(users.dumpable)
	} // else another thread runs as a user: the process stays non-dumpable
	now, err := Current()
	if err != nil {
		return err
	}
	if !now.Equal(self) {
		return fmt.Errorf("credentials not restored: have %v, want %v", now, self)
	}
	return derr
}

// restoreDumpable puts back the dumpable flag that changing the euid
// cleared for the whole process, and checks that it is back.
func restoreDumpable(want uintptr) error {
	if _, _, e := unix.RawSyscall(unix.SYS_PRCTL, unix.PR_SET_DUMPABLE, want, 0); e != 0 {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE, %d): %w", want, e)
	}
	d, err := dumpable()
	if err != nil {
		return err
	}
	if d != want {
		return fmt.Errorf("dumpable flag not restored: have %d, want %d", d, want)
	}
	return nil
}
