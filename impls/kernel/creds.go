//go:build linux && amd64

package kernel

import (
	"fmt"
	"slices"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// creds is what an op run as another user changes on the worker thread and
// what must be back, exactly, before the thread serves the next op. The
// dumpable flag, which a change of effective ids also clears, is the
// process's, not the thread's: see users.
type creds struct {
	ruid, euid, suid uint32
	rgid, egid, sgid uint32
	groups           []uint32
	capEff, capPrm   uint64
}

// users counts the threads of this process that run as another user (two
// Models in one process, as --in-process with two jobs makes them, have a
// worker thread each). Every change of an effective id sets the process's
// dumpable flag to fs.suid_dumpable, so the flag is saved when the first
// of them switches and put back when the last one switches back; every
// switch, either way, is made under mu, so that a thread checking what it
// restored sees no other thread's change half-way.
var users struct {
	mu       sync.Mutex
	n        int
	dumpable uintptr
}

// keep is -1 as a uid_t/gid_t argument: "leave this id unchanged".
const keep = uintptr(0xffffffff)

func currentCreds() (creds, error) {
	var c creds
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

// dumpable reads the process's dumpable flag.
func dumpable() (uintptr, error) {
	d, _, e := unix.RawSyscall(unix.SYS_PRCTL, unix.PR_GET_DUMPABLE, 0, 0)
	if e != 0 {
		return 0, fmt.Errorf("prctl(PR_GET_DUMPABLE): %w", e)
	}
	return d, nil
}

func (c creds) equal(o creds) bool {
	return c.ruid == o.ruid && c.euid == o.euid && c.suid == o.suid &&
		c.rgid == o.rgid && c.egid == o.egid && c.sgid == o.sgid &&
		slices.Equal(c.groups, o.groups) &&
		c.capEff == o.capEff && c.capPrm == o.capPrm
}

func (c creds) String() string {
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

// becomeUser makes the calling thread an unprivileged caller: no
// supplementary groups, egid = euid = id. The real and saved ids stay as they
// were (root), which is what lets restoreSelf switch back; the kernel clears
// the effective capabilities when the euid leaves 0 and keeps the permitted
// set. Only this thread changes: these are raw syscalls, not the Go
// runtime's all-threads unix.Setresuid.
func (t *thread) becomeUser(id uint32) error { return becomeUser(t.self, id) }

// becomeUser switches the calling thread, whose credentials were self, to
// the unprivileged user id (see thread.becomeUser). Whatever it returns,
// restoreCreds must follow: the thread counts among users until then.
func becomeUser(self creds, id uint32) error {
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
		return fmt.Errorf("running an op as uid %d needs a root worker thread (euid is %d)", id, self.euid)
	}
	if uintptr(id) == keep {
		return fmt.Errorf("uid %d is not a valid user", id)
	}
	if len(self.groups) > 0 {
		if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
			return fmt.Errorf("setgroups([]): %w", e)
		}
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, keep, uintptr(id), keep); e != 0 {
		return fmt.Errorf("setresgid(-1, %d, -1): %w", id, e)
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, keep, uintptr(id), keep); e != 0 {
		return fmt.Errorf("setresuid(-1, %d, -1): %w", id, e)
	}
	return nil
}

// restoreSelf switches the thread back to the credentials it started with
// and checks that every one of them, capabilities included, is back.
func (t *thread) restoreSelf() error { return restoreCreds(t.self) }

// restoreCreds switches the calling thread back to s and checks that every
// credential is back; the last thread of users to switch back puts the
// dumpable flag back too.
func restoreCreds(s creds) error {
	users.mu.Lock()
	defer users.mu.Unlock()
	users.n = max(users.n-1, 0)
	// The euid first: it brings back the effective capabilities (from the
	// permitted set), which setgroups and setresgid need.
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, keep, uintptr(s.euid), keep); e != 0 {
		return fmt.Errorf("setresuid(-1, %d, -1): %w", s.euid, e)
	}
	if len(s.groups) > 0 { // becomeUser cleared them
		if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(s.groups)), uintptr(unsafe.Pointer(&s.groups[0])), 0); e != 0 {
			return fmt.Errorf("setgroups(%v): %w", s.groups, e)
		}
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, keep, uintptr(s.egid), keep); e != 0 {
		return fmt.Errorf("setresgid(-1, %d, -1): %w", s.egid, e)
	}
	now, err := currentCreds()
	if err != nil {
		return err
	}
	if !now.equal(s) {
		return fmt.Errorf("credentials not restored: have %v, want %v", now, s)
	}
	if users.n > 0 {
		return nil // another thread runs as a user: the process stays non-dumpable
	}
	return restoreDumpable(users.dumpable)
}

// restoreDumpable puts back the dumpable flag that changing the euid
// cleared for the whole process (fs.suid_dumpable), and checks it is back.
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
