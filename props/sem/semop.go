package sem

import (
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// semop draws a simple or complex operation on a; by t0 (nowait true) it
// never sleeps, by a task it often does.
func (s *Shadow) semop(src Source, a *array, task uint8, nowait bool) ops.Op {
	op := ops.Op{Kind: ops.KindSemop, Type: ops.Sem, Obj: ops.Ref{Handle: a.handle}, Task: task}
	k := 1
	if src.Intn(3, "complex") == 0 {
		k = 2 + src.Intn(2, "nsops")
	}
	var sops []ops.Sop
	for range k {
		sp := ops.Sop{Num: uint16(src.Intn(len(a.vals), "num")), Op: int16(engine.Pick(src, opPool, "op"))}
		if src.Intn(12, "bound") == 0 {
			sp.Op = int16(engine.Pick(src, boundPool, "bound op"))
		}
		if src.Intn(6, "undo") == 0 {
			sp.Flags |= ops.SemUndo
		}
		if nowait || src.Intn(5, "nowait") == 0 {
			sp.Flags |= ops.SemNowait
		}
		sops = append(sops, sp)
	}
	setSops(&op, sops...)
	if task != 0 && src.Intn(8, "timeout") == 0 {
		op.Sem.Timeout = ops.SemZeroTimeout
	}
	if task == 0 && !nowait {
		op.Sem.Timeout = ops.SemZeroTimeout
	}
	if s.applies(a, sops) {
		s.apply(a, sops)
	} else if task != 0 && op.Sem.Timeout == ops.SemNoTimeout && !blockingNowait(a, sops) {
		s.asleep[task], s.waitOn[task] = a, sops[len(sops)-1]
	}
	return op
}

// sleep draws a semop by task t that blocks on the shadow values: a
// decrement past the value, or a wait for zero on a non-zero semaphore,
// sometimes with SEM_UNDO or behind a first sop that would run.
func (s *Shadow) sleep(src Source, a *array, t uint8) ops.Op {
	op := ops.Op{Kind: ops.KindSemop, Type: ops.Sem, Obj: ops.Ref{Handle: a.handle}, Task: t}
	n := src.Intn(len(a.vals), "num")
	sp := ops.Sop{Num: uint16(n), Op: int16(-(a.vals[n] + 1 + src.Intn(2, "more")))}
	if a.vals[n] != 0 && src.Intn(2, "zero") == 0 {
		sp.Op = 0
	}
	if src.Intn(4, "undo") == 0 {
		sp.Flags |= ops.SemUndo
	}
	sops := []ops.Sop{sp}
	if len(a.vals) > 1 && src.Intn(3, "complex") == 0 {
		m := (n + 1) % len(a.vals)
		sops = append([]ops.Sop{{Num: uint16(m), Op: 1}}, sops...)
	}
	setSops(&op, sops...)
	s.asleep[t], s.waitOn[t] = a, sp
	return op
}

// applies reports whether sops would run now on the shadow values.
func (s *Shadow) applies(a *array, sops []ops.Sop) bool {
	v := append([]int(nil), a.vals...)
	for _, sp := range sops {
		n := int(sp.Num)
		switch {
		case sp.Op == 0 && v[n] != 0:
			return false
		case v[n]+int(sp.Op) < 0, v[n]+int(sp.Op) > ops.SemVMX:
			return false
		}
		v[n] += int(sp.Op)
	}
	return true
}

// blockingNowait reports whether the first sop that would block has
// IPC_NOWAIT (then the call fails with EAGAIN instead of sleeping).
func blockingNowait(a *array, sops []ops.Sop) bool {
	v := append([]int(nil), a.vals...)
	for _, sp := range sops {
		n := int(sp.Op)
		if (sp.Op == 0 && v[sp.Num] != 0) || v[sp.Num]+n < 0 {
			return sp.Flags&ops.SemNowait != 0
		}
		if v[sp.Num]+n > ops.SemVMX {
			return true
		}
		v[sp.Num] += n
	}
	return true
}

func (s *Shadow) apply(a *array, sops []ops.Sop) {
	for _, sp := range sops {
		a.vals[sp.Num] += int(sp.Op)
	}
}

// wake draws an operation by t0 that is likely to complete sleepers: an
// increment, a SETVAL or a SETALL.
func (s *Shadow) wake(src Source, a *array) ops.Op {
	ref := ops.Ref{Handle: a.handle}
	n := src.Intn(len(a.vals), "num")
	switch src.Intn(4, "how") {
	case 0:
		v := int64(engine.Pick(src, []int{0, 1, 3}, "val"))
		a.vals[n] = int(v)
		s.forgetSleepers(a)
		return ops.Op{Kind: ops.KindSemctl, Type: ops.Sem, Obj: ref, Sem: ops.SemArgs{Cmd: ops.SemSetVal, Num: int64(n), Val: v}}
	case 1:
		op := ops.Op{Kind: ops.KindSemctl, Type: ops.Sem, Obj: ref, Sem: ops.SemArgs{Cmd: ops.SemSetAll}}
		for i := range a.vals {
			a.vals[i] = src.Intn(3, "val")
			op.Sem.Vals[i] = int64(a.vals[i])
		}
		op.Sem.NVals = uint8(len(a.vals))
		s.forgetSleepers(a)
		return op
	}
	d := 1 + src.Intn(3, "up")
	if a.vals[n]+d > ops.SemVMX {
		d = 0
	}
	op := ops.Op{Kind: ops.KindSemop, Type: ops.Sem, Obj: ref}
	setSops(&op, ops.Sop{Num: uint16(n), Op: int16(d), Flags: ops.SemNowait})
	a.vals[n] += d
	s.forgetSleepers(a)
	return op
}

// forgetSleepers assumes the sleepers of a may have run: the shadow does
// not follow wake-ups, it only keeps a few tasks free for new sleepers.
func (s *Shadow) forgetSleepers(a *array) {
	for t, sl := range s.asleep {
		if sl == a && t%2 == 0 {
			s.asleep[t] = nil
		}
	}
}

func (s *Shadow) set(src Source, a *array) ops.Op {
	ref := ops.Ref{Handle: a.handle}
	if src.Intn(2, "setall") == 0 {
		op := ops.Op{Kind: ops.KindSemctl, Type: ops.Sem, Obj: ref, Sem: ops.SemArgs{Cmd: ops.SemSetAll}, As: s.caller(src)}
		n := len(a.vals)
		if src.Intn(4, "short") == 0 {
			n = max(n-1, 1)
		}
		for i := range n {
			v := engine.Pick(src, valPool, "val")
			if v < 0 {
				v = 0
			}
			op.Sem.Vals[i] = v
		}
		op.Sem.NVals = uint8(n)
		return op
	}
	return ops.Op{Kind: ops.KindSemctl, Type: ops.Sem, Obj: ref, As: s.caller(src),
		Sem: ops.SemArgs{Cmd: ops.SemSetVal, Num: int64(src.Intn(len(a.vals)+1, "num")), Val: engine.Pick(src, valPool, "val")}}
}

func (s *Shadow) stat(src Source, a *array) ops.Op {
	ref := ops.Ref{Handle: a.handle}
	switch src.Intn(5, "stat") {
	case 0:
		return ops.Op{Kind: ops.KindSemctl, Type: ops.Sem, Obj: ops.Ref{ID: int64(src.Intn(4, "index"))},
			Sem: ops.SemArgs{Cmd: engine.Pick(src, []ops.SemCmd{ops.SemStat, ops.SemStatAny}, "cmd")}, As: s.caller(src)}
	case 1:
		return ops.Op{Kind: ops.KindSemctl, Type: ops.Sem, Obj: ref, Sem: ops.SemArgs{Cmd: engine.Pick(src, []ops.SemCmd{ops.SemIPCInfo, ops.SemInfoCmd}, "cmd")}}
	case 2:
		op := ops.Op{Kind: ops.KindSemctl, Type: ops.Sem, Obj: ref, Sem: ops.SemArgs{Cmd: ops.SemIPCSet},
			Value: int64(engine.Pick(src, []uint32{0, 1000}, "owner")), Mode: engine.Pick(src, modePool, "mode"), As: s.caller(src),
			Group: engine.Pick(src, []uint32{0, 0, 1000}, "gid")}
		return op
	}
	return ops.Op{Kind: ops.KindSemctl, Type: ops.Sem, Obj: ref, Sem: ops.SemArgs{Cmd: ops.SemIPCStat}, As: s.caller(src)}
}

func (s *Shadow) limits(src Source) ops.Op {
	op := ops.Op{Kind: ops.KindSemLimits, Type: ops.Sem,
		Sem: ops.SemArgs{Limits: [4]int64{ops.DefaultSemmsl, ops.DefaultSemmns, ops.DefaultSemopm, ops.DefaultSemmni}}}
	switch src.Intn(5, "which limit") {
	case 0:
		op.Sem.Limits[0] = int64(1 + src.Intn(3, "semmsl"))
	case 1:
		op.Sem.Limits[1] = int64(src.Intn(8, "semmns"))
	case 2:
		op.Sem.Limits[2] = int64(1 + src.Intn(2, "semopm"))
	case 3:
		op.Sem.Limits[3] = engine.Pick(src, []int64{0, 3, ops.IPCMNI + 1, -1}, "semmni")
	}
	if op.Sem.Limits[3] >= 0 && op.Sem.Limits[3] <= ops.IPCMNI {
		s.semopm = op.Sem.Limits[2]
	}
	return op
}

// bad draws a deliberately invalid call.
func (s *Shadow) bad(src Source, a *array) ops.Op {
	ref := ops.Ref{Handle: a.handle}
	op := ops.Op{Kind: ops.KindSemop, Type: ops.Sem, Obj: ref}
	setSops(&op, ops.Sop{Num: 0, Op: 1, Flags: ops.SemNowait})
	switch src.Intn(10, "bad") {
	case 0: // EFBIG
		op.Sem.Sops[0].Num = uint16(engine.Pick(src, []int{len(a.vals), ops.SemMaxNum}, "num"))
	case 1: // an id that is no array
		op.Obj = ops.Ref{ID: engine.Pick(src, []int64{-1, ops.MakeID(7, 3)}, "id")}
	case 2: // an invalid timespec
		op.Sem.Timeout = engine.Pick(src, []ops.SemTimeout{ops.SemBadNsec, ops.SemNegSecond}, "timeout")
	case 3: // a stranger, EACCES where the mode refuses: an alter needs write, a wait for zero read
		op.As = 1000
		op.Sem.Sops[0].Op = engine.Pick(src, []int16{1, 0, -1}, "stranger op")
	case 4: // ERANGE: past SEMVMX, or a semadj past its bound
		setSops(&op, ops.Sop{Num: 0, Op: ops.SemVMX, Flags: ops.SemNowait}, ops.Sop{Num: 0, Op: 1, Flags: ops.SemNowait | ops.SemUndo})
	case 5: // nsops 0: EINVAL, even with a timeout
		setSops(&op)
		if src.Intn(2, "timed") == 0 {
			op.Sem.Timeout = ops.SemZeroTimeout
		}
	case 6: // a semctl command no kernel has: EINVAL
		return ops.Op{Kind: ops.KindSemctl, Type: ops.Sem, Obj: ref, Sem: ops.SemArgs{Cmd: ops.SemInvalid}, As: s.caller(src)}
	case 7: // bad sops or a bad timeout pointer: EFAULT in the kernel's order
		if src.Intn(3, "bad buffer id") == 0 {
			op.Obj = ops.Ref{ID: engine.Pick(src, []int64{-1, ops.MakeID(7, 3)}, "id")}
		}
		if src.Intn(2, "bad timeout") == 0 {
			op.Sem.Timeout = ops.SemBadPtr
		} else {
			op.BadBuf = true
		}
	case 8: // a semctl whose buffer is bad
		cmd := engine.Pick(src, []ops.SemCmd{ops.SemIPCStat, ops.SemStat, ops.SemIPCInfo, ops.SemGetAll, ops.SemSetAll, ops.SemIPCSet}, "cmd")
		c := ops.Op{Kind: ops.KindSemctl, Type: ops.Sem, Obj: ref, Sem: ops.SemArgs{Cmd: cmd}, As: s.caller(src), BadBuf: true}
		switch cmd {
		case ops.SemIPCSet:
			c.Mode = 0o600
		case ops.SemSetAll:
			c.Sem.NVals = 1 // one value, 0
		}
		return c
	default: // E2BIG if semopm was lowered
		setSops(&op, ops.Sop{Num: 0, Op: 0, Flags: ops.SemNowait}, ops.Sop{Num: 0, Op: 0, Flags: ops.SemNowait}, ops.Sop{Num: 0, Op: 0, Flags: ops.SemNowait})
	}
	return op
}
