//go:build linux && amd64

package repro

import (
	"fmt"
	"strconv"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

func init() {
	steps.Add(text((*gen).shmat), ops.KindShmat)
	steps.Add(text((*gen).shmdt), ops.KindShmdt)
	steps.Add(writer{body: (*gen).shmctl}, ops.KindShmctl)
	steps.Add(text(func(g *gen, op ops.Op) string {
		g.atts = max(g.atts, op.Att)
		return fmt.Sprintf("\tshm_touch(out, %s, %d, %d);\n", shmAddr(op), b2i(op.Kind == ops.KindShmWrite), op.Value)
	}), ops.KindShmRead, ops.KindShmWrite)
	steps.Add(text(func(g *gen, op ops.Op) string {
		return g.sysctl(op, "shm_rmid_forced", strconv.FormatInt(op.Value, 10))
	}), ops.KindRmidForced)
}

func (g *gen) shmdt(op ops.Op) string {
	g.atts = max(g.atts, op.Att)
	s := fmt.Sprintf("\tunsigned long addr = %s;\n", shmAddr(op)) + "\tlong r = syscall(SYS_shmdt, addr);\n\tint e = errno;\n" + fail
	if op.Att > 0 {
		s += fmt.Sprintf("\tif (sh->att[%d] == addr)\n\t\tdetached(%d);\n", op.Att, op.Att)
	}
	return s + "\tput(out, \"ok\");\n"
}

func (g *gen) shmat(op ops.Op) string {
	flags := "0"
	for _, f := range []struct {
		bit uint8
		c   string
	}{{ops.ShmatRdonly, "010000"}, {ops.ShmatExec, "0100000"}, {ops.ShmatRnd, "020000"}, {ops.ShmatRemap, "040000"}} {
		if op.Flags&f.bit != 0 {
			flags += " | " + f.c // SHM_RDONLY, SHM_EXEC, SHM_RND, SHM_REMAP
		}
	}
	addr := "0UL"
	switch {
	case op.Flags&ops.ShmatBadAddr != 0:
		addr = "0x1001UL" // not page-aligned and no SHM_RND: EINVAL
	case op.Addr != ops.ShmAddr{}:
		addr = shmAddr(op)
	}
	s := asWrap(op, fmt.Sprintf("long r = syscall(SYS_shmat, %s, %s, %s);", g.ref(op.Obj), addr, flags)) + fail + "\tif (self_task == 0)\n\t\tshm_dontfork((unsigned long)r);\n"
	if op.Bind > 0 {
		g.atts = max(g.atts, op.Bind)
		s += fmt.Sprintf("\tsh->att[%d] = (unsigned long)r;\n\tsh->att_tasks[%d] = 1u << self_task;\n", op.Bind, op.Bind)
		s += fmt.Sprintf("\tsh->att_win[%d] = (unsigned long)r >= shm_window && (unsigned long)r < shm_window + SHM_WINDOW_PAGES * PAGE ? ((unsigned long)r - shm_window) / PAGE + 1 : 0;\n", op.Bind)
	}
	return s + "\tshm_at(out, (unsigned long)r);\n"
}

// shmWindowBase is where the reproducer's tasks have their shm window (the
// kernel side's task processes have theirs there too).
const shmWindowBase = 0x240000000000

// shmAddr is the C expression of the address op names (ops.ShmAddr).
func shmAddr(op ops.Op) string {
	a := op.Addr
	return fmt.Sprintf("shm_addr(%d, %d, %d, %d)", op.Att, b2i(a.Win), a.Page, a.Off)
}

var shmCmd = map[ops.ShmCmd]string{
	ops.ShmIPCStat: "IPC_STAT_", ops.ShmIPCSet: "IPC_SET_", ops.ShmLock: "11", ops.ShmUnlock: "12",
	ops.ShmIPCInfo: "IPC_INFO_", ops.ShmInfoCmd: "14", ops.ShmStat: "13", ops.ShmStatAny: "15", ops.ShmInvalid: "-1",
}

func (g *gen) shmctl(op ops.Op) (string, error) {
	cmd, ok := shmCmd[op.Cmd]
	if !ok {
		return "", fmt.Errorf("shmctl command %s", op.Cmd)
	}
	s := "\tstatic long buf[32];\n\tmemset(buf, 0, sizeof buf);\n"
	if op.Cmd == ops.ShmIPCSet {
		s += fmt.Sprintf("\tset_u32(buf, P_UID, %d);\n\tset_u32(buf, P_GID, %d);\n\tset_u32(buf, P_MODE, 0%o);\n", uint32(op.Value), op.GroupOr(uint32(op.Value)), op.Mode&0o777)
	}
	s += asWrap(op, fmt.Sprintf("long r = syscall(SYS_shmctl, %s, %s, %s);", g.ref(op.Obj), cmd, buf(op, "buf"))) + fail
	switch op.Cmd {
	case ops.ShmIPCStat, ops.ShmStat, ops.ShmStatAny:
		s += fmt.Sprintf("\tput_shm_row(out, buf, %s);\n", rowID(op.Cmd == ops.ShmIPCStat))
	case ops.ShmIPCInfo:
		s += "\tput(out, \"ret=%ld shmmax=%lu shmmin=%lu shmmni=%lu shmseg=%lu shmall=%lu\", r, (unsigned long)I64(buf, 0), (unsigned long)I64(buf, 8), (unsigned long)I64(buf, 16), (unsigned long)I64(buf, 24), (unsigned long)I64(buf, 32));\n"
	case ops.ShmInfoCmd:
		s += "\tput(out, \"ret=%ld used_ids=%d shm_tot=%ld shm_rss=%ld shm_swp=%ld swap_attempts=%ld swap_successes=%ld\", r, I32(buf, 0), I64(buf, 8), I64(buf, 16), I64(buf, 24), I64(buf, 32), I64(buf, 40));\n"
	default:
		s += "\tput(out, \"ok\");\n"
	}
	return s, nil
}
