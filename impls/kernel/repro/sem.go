//go:build linux && amd64

package repro

import (
	"fmt"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

func init() {
	steps.Add(writer{body: (*gen).semop, mayBlock: semopMayBlock}, ops.KindSemop)
	steps.Add(writer{body: (*gen).semctl}, ops.KindSemctl)
	steps.Add(text(func(g *gen, op ops.Op) string {
		l := op.Sem.Limits
		return g.sysctl(op, "sem", fmt.Sprintf("%d %d %d %d", l[0], l[1], l[2], l[3]))
	}), ops.KindSemLimits)
}

// semopMayBlock: a semop may sleep when a sop lacks IPC_NOWAIT, unless it
// has a timeout: a call with a timeout returns on its own (a zero timeout
// still sleeps, up to the timer slack: no evidence of blocking); it is
// waited for, as the kernel side does.
func semopMayBlock(op ops.Op) bool {
	if op.Sem.Timeout != ops.SemNoTimeout {
		return false
	}
	for _, s := range op.Sem.SopList() {
		if s.Flags&ops.SemNowait == 0 {
			return true
		}
	}
	return false
}

func (g *gen) semop(op ops.Op) (string, error) {
	sops := op.Sem.SopList()
	s := fmt.Sprintf("\tstatic short sops[%d][3];\n", max(len(sops), 1))
	for i, p := range sops {
		flg := 0
		if p.Flags&ops.SemNowait != 0 {
			flg |= 0o4000
		}
		if p.Flags&ops.SemUndo != 0 {
			flg |= 0x1000
		}
		s += fmt.Sprintf("\tsops[%d][0] = (short)%d;\n\tsops[%d][1] = %d;\n\tsops[%d][2] = 0x%x;\n", i, p.Num, i, p.Op, i, flg)
	}
	if op.BadBuf {
		s += "\t(void)sops; /* badbuf: the call is given a bad address instead */\n"
	}
	id := g.ref(op.Obj)
	var call string
	switch op.Sem.Timeout {
	case ops.SemNoTimeout:
		call = fmt.Sprintf("long r = syscall(SYS_semop, %s, %s, %dL);", id, buf(op, "sops"), len(sops))
	case ops.SemBadPtr:
		call = fmt.Sprintf("long r = syscall(SYS_semtimedop, %s, %s, %dL, (void *)0x%xUL);", id, buf(op, "sops"), len(sops), ops.BadAddress)
	default:
		ts, ok := map[ops.SemTimeout]string{ops.SemZeroTimeout: "{0, 0}", ops.SemBadNsec: "{0, 1000000000L}", ops.SemNegSecond: "{-1, 0}"}[op.Sem.Timeout]
		if !ok {
			return "", fmt.Errorf("semtimedop timeout number %d", op.Sem.Timeout)
		}
		s += fmt.Sprintf("\tstatic struct timespec ts = %s;\n", ts)
		call = fmt.Sprintf("long r = syscall(SYS_semtimedop, %s, %s, %dL, &ts);", id, buf(op, "sops"), len(sops))
	}
	return s + asWrap(op, call) + fail + "\tput(out, \"ok\");\n", nil
}

var semCmd = map[ops.SemCmd]string{
	ops.SemIPCStat: "IPC_STAT_", ops.SemIPCSet: "IPC_SET_", ops.SemIPCInfo: "IPC_INFO_", ops.SemInfoCmd: "19",
	ops.SemStat: "18", ops.SemStatAny: "20", ops.SemGetVal: "12", ops.SemGetPid: "11",
	ops.SemGetNcnt: "14", ops.SemGetZcnt: "15", ops.SemGetAll: "13", ops.SemSetVal: "16", ops.SemSetAll: "17",
	ops.SemInvalid: "-1",
}

func (g *gen) semctl(op ops.Op) (string, error) {
	cmd, ok := semCmd[op.Sem.Cmd]
	if !ok {
		return "", fmt.Errorf("semctl command %s", op.Sem.Cmd)
	}
	id := g.ref(op.Obj)
	call := func(arg string) string {
		return fmt.Sprintf("long r = syscall(SYS_semctl, %s, %dL, %s, %s);", id, op.Sem.Num, cmd, arg)
	}
	switch op.Sem.Cmd {
	case ops.SemGetVal, ops.SemGetNcnt, ops.SemGetZcnt:
		return asWrap(op, call("0L")) + fail + "\tput(out, \"ret=%ld\", r);\n", nil
	case ops.SemGetPid:
		return asWrap(op, call("0L")) + fail + "\tput(out, \"pid=\");\n\tput_pid(out, r);\n", nil
	case ops.SemSetVal:
		return asWrap(op, call(fmt.Sprintf("%dL", op.Sem.Val))) + fail + "\tput(out, \"ok\");\n", nil
	case ops.SemGetAll, ops.SemSetAll:
		// The array's size, read as root with SEM_STAT_ANY (0 when the id
		// names no array).
		s := fmt.Sprintf("\tstatic long st[32];\n\tlong nsems = 0;\n\t{\n\t\tlong q = syscall(SYS_semctl, %s & 32767, 0, 20, st);\n\t\tif (q >= 0 && (int)q == (int)%s)\n\t\t\tnsems = I64(st, 80);\n\t}\n", id, id)
		s += "\tstatic unsigned short vals[65536];\n\tmemset(vals, 0, sizeof vals);\n"
		if op.Sem.Cmd == ops.SemSetAll {
			for i, v := range op.Sem.ValList() {
				s += fmt.Sprintf("\tif (%d < nsems)\n\t\tvals[%d] = (unsigned short)%dL;\n", i, i, v)
			}
		}
		s += asWrap(op, call(buf(op, "vals"))) + fail
		if op.Sem.Cmd == ops.SemSetAll {
			return s + "\tput(out, \"ok\");\n", nil
		}
		return s + "\tput(out, \"[\");\n\tfor (long i = 0; i < nsems; i++)\n\t\tput(out, i ? \" %d\" : \"%d\", vals[i]);\n\tput(out, \"]\");\n", nil
	}
	s := "\tstatic long buf[32];\n\tmemset(buf, 0, sizeof buf);\n"
	if op.Sem.Cmd == ops.SemIPCSet {
		s += fmt.Sprintf("\tset_u32(buf, P_UID, %d);\n\tset_u32(buf, P_GID, %d);\n\tset_u32(buf, P_MODE, 0%o);\n", uint32(op.Value), op.GroupOr(uint32(op.Value)), op.Mode&0o777)
	}
	s += asWrap(op, call(buf(op, "buf"))) + fail
	switch op.Sem.Cmd {
	case ops.SemIPCStat, ops.SemStat, ops.SemStatAny:
		s += fmt.Sprintf("\tput(out, \"ret=%%ld \", %[1]s);\n\tput_sem_row(out, buf, %[1]s);\n", rowID(op.Sem.Cmd == ops.SemIPCStat))
	case ops.SemIPCInfo, ops.SemInfoCmd:
		s += "\tput(out, \"ret=%ld semmap=%d semmni=%d semmns=%d semmnu=%d semmsl=%d semopm=%d semume=%d semusz=%d semvmx=%d semaem=%d\", r, I32(buf, 0), I32(buf, 4), I32(buf, 8), I32(buf, 12), I32(buf, 16), I32(buf, 20), I32(buf, 24), I32(buf, 28), I32(buf, 32), I32(buf, 36));\n"
	default:
		s += "\tput(out, \"ok\");\n"
	}
	return s, nil
}
