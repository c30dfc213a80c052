package vma

import "github.com/ipcfuzz/ipcfuzz/harness/ops"

// Memlock implements ops.AddressSpace: RLIMIT_MEMLOCK becomes a.Limit
// pages and the process loses CAP_IPC_LOCK (its effective set), so the
// limit applies from now on, a fork's child included, until Reset.
func (s *Space) Memlock(a ops.VMAArgs) (ops.Errno, error) {
	if err := s.check(a); err != nil {
		return 0, err
	}
	s.memlock = a.Limit
	return ops.OK, nil
}

// limited reports whether the locked-memory limit applies (a memlock ran:
// no CAP_IPC_LOCK).
func (s *Space) limited() bool { return s.memlock >= 0 }

// canDoMlock is can_do_mlock: a limit above 0, or CAP_IPC_LOCK.
func (s *Space) canDoMlock() bool { return !s.limited() || s.memlock > 0 }

// mlockFutureOK is mlock_future_ok: flags without VM_LOCKED, CAP_IPC_LOCK,
// or pages more locked memory within the limit.
func (s *Space) mlockFutureOK(flags Flags, pages int64) bool {
	return flags&VMLocked == 0 || !s.limited() || pages+s.lockedVM() <= s.memlock
}

// mlockLimit is do_mlock's check before it locks [start, end): EPERM where
// it cannot lock at all (can_do_mlock), ENOMEM where the range's pages not
// locked yet (count_mm_mlocked_page_nr), added to what is, pass the limit.
func (s *Space) mlockLimit(start, end int64) ops.Errno {
	if !s.canDoMlock() {
		return ops.EPERM
	}
	if !s.limited() {
		return ops.OK
	}
	locked := end - start + s.lockedVM()
	if locked > s.memlock {
		locked -= s.countMlocked(start, end)
	}
	if locked > s.memlock {
		return ops.ENOMEM
	}
	return ops.OK
}

// lockedVM is mm->locked_vm: the pages of the VM_LOCKED VMAs (mlock_fixup,
// mmap, mremap and munmap keep it so; a fork's child starts at 0 with no
// VMA locked), and those a kernel leaked (Space.leaked).
func (s *Space) lockedVM() int64 { return s.lockedPages() + s.leaked }

// lockedPages is the pages of the VM_LOCKED VMAs.
func (s *Space) lockedPages() int64 {
	var n int64
	for _, v := range s.layout.All() {
		if v.Flags&VMLocked != 0 {
			n += v.Pages()
		}
	}
	return n
}

// countMlocked is count_mm_mlocked_page_nr: the pages of [start, end) in
// VM_LOCKED VMAs.
func (s *Space) countMlocked(start, end int64) int64 {
	var n int64
	for _, v := range s.layout.All() {
		if v.Flags&VMLocked != 0 && v.Start < end && start < v.End {
			n += min(end, v.End) - max(start, v.Start)
		}
	}
	return n
}
