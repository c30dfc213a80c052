//go:build linux && amd64

package repro

import (
	"fmt"
	"strconv"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// The ids subsystem: get, the *ctl(IPC_RMID) and IPC_STAT of every type,
// the sysctls of the ids, listings and churn.

func init() {
	steps.Add(text((*gen).get), ops.KindGet)
	steps.Add(text(func(g *gen, op ops.Op) string {
		return asWrap(op, ctl(op.Type, g.ref(op.Obj), "IPC_RMID_", "0")) + fail + "\tput(out, \"ok\");\n"
	}), ops.KindRmid)
	steps.Add(text((*gen).stat), ops.KindStat)
	steps.Add(text(func(g *gen, op ops.Op) string {
		return g.sysctl(op, fmt.Sprintf("%s_next_id", op.Type), strconv.FormatInt(op.Value, 10))
	}), ops.KindNextID)
	steps.Add(text((*gen).limit), ops.KindLimit)
	steps.Add(text(func(_ *gen, op ops.Op) string {
		return fmt.Sprintf("\tchar v[64];\n\tif (read_file(\"/proc/sys/kernel/%s_next_id\", v, sizeof v) < 0)\n\t\tsetup_failed(\"reading %s_next_id\");\n\tput(out, \"ret=%%ld\", strtol(v, NULL, 10));\n", op.Type, op.Type)
	}), ops.KindReadNextID)
	steps.Add(text(func(_ *gen, op ops.Op) string {
		if op.As != 0 {
			return fmt.Sprintf("\tas_begin(%d);\n\tlisting(%q, %d, out);\n\tas_end();\n", op.As, op.Type.String(), b2i(op.Rows))
		}
		return fmt.Sprintf("\tlisting(%q, %d, out);\n", op.Type.String(), b2i(op.Rows))
	}), ops.KindList)
	steps.Add(text((*gen).churn), ops.KindChurn, ops.KindFill)
}

func (g *gen) get(op ops.Op) string {
	flags := fmt.Sprintf("0%o", op.Mode&0o777)
	if op.Creat {
		flags += " | IPC_CREAT_"
	}
	if op.Excl {
		flags += " | IPC_EXCL_"
	}
	if op.Huge {
		flags += " | 04000" // SHM_HUGETLB
	}
	var call string
	if op.Type == ops.Msg {
		call = fmt.Sprintf("long r = syscall(SYS_msgget, (long)%d, %s);", op.Key, flags)
	} else {
		call = fmt.Sprintf("long r = syscall(%s, (long)%d, %dL, %s);", typeNr[op.Type][0], op.Key, op.Size, flags)
	}
	s := asWrap(op, call) + fail
	if op.Bind > 0 {
		s += fmt.Sprintf("\tsh->h[%d] = r;\n", op.Bind)
	}
	return s + "\tput(out, \"id=%ld\", r);\n"
}

func (g *gen) stat(op ops.Op) string {
	s := "\tstatic long buf[32];\n" + asWrap(op, ctl(op.Type, g.ref(op.Obj), "IPC_STAT_", "buf")) + fail
	size := "0L"
	switch op.Type {
	case ops.Sem:
		size = "I64(buf, 80)"
	case ops.Shm:
		size = "I64(buf, 48)"
	}
	return s + fmt.Sprintf("\tput(out, \"key=\");\n\tput_key(out, I32(buf, P_KEY));\n\tput(out, \" mode=%%04o owner=%%u size=%%ld\", U16(buf, P_MODE) & 0777, U32(buf, P_UID), %s);\n", size)
}

// limit writes msgmni or shmmni, or for sem the 4th field of kernel.sem.
func (g *gen) limit(op ops.Op) string {
	if op.Type != ops.Sem {
		name := map[ops.IPCType]string{ops.Msg: "msgmni", ops.Shm: "shmmni"}[op.Type]
		return g.sysctl(op, name, strconv.FormatInt(op.Value, 10))
	}
	s := "\tchar cur[128], val[160];\n\tlong a = 0, b = 0, c = 0, d = 0;\n"
	s += "\tif (read_file(\"/proc/sys/kernel/sem\", cur, sizeof cur) < 0 || sscanf(cur, \"%ld %ld %ld %ld\", &a, &b, &c, &d) != 4)\n\t\tsetup_failed(\"reading /proc/sys/kernel/sem\");\n"
	s += fmt.Sprintf("\tsnprintf(val, sizeof val, \"%%ld %%ld %%ld %d\\n\", a, b, c);\n\t(void)d;\n", op.Value)
	if op.As != 0 {
		s += fmt.Sprintf("\tas_begin(%d);\n", op.As)
	}
	s += "\tint r = sysctl(\"sem\", val);\n"
	if op.As != 0 {
		s += "\tas_end();\n"
	}
	return s + "\tif (r) {\n\t\tput_err(out, r);\n\t\treturn;\n\t}\n\tput(out, \"ok\");\n"
}

// churn creates (and for churn removes) IPC_PRIVATE objects, N times.
func (g *gen) churn(op ops.Op) string {
	get := "syscall(SYS_msgget, 0L, 0600)"
	if op.Type != ops.Msg {
		get = fmt.Sprintf("syscall(%s, 0L, 1L, 0600)", typeNr[op.Type][0])
	}
	s := ""
	if op.As != 0 {
		s += fmt.Sprintf("\tas_begin(%d);\n", op.As)
	}
	s += fmt.Sprintf("\tlong r = 0;\n\tint e = 0;\n\tfor (long i = 0; i < %dL; i++) {\n\t\tr = %s;\n\t\tif (r < 0) {\n\t\t\te = errno;\n\t\t\tbreak;\n\t\t}\n", op.Value, get)
	if op.Kind == ops.KindChurn {
		rm := fmt.Sprintf("syscall(%s, r, IPC_RMID_, 0)", typeNr[op.Type][1])
		if op.Type == ops.Sem {
			rm = "syscall(SYS_semctl, r, 0, IPC_RMID_, 0)"
		}
		s += fmt.Sprintf("\t\tif (%s < 0)\n\t\t\tsetup_failed(\"churn: removing what it made\");\n", rm)
	}
	s += "\t}\n"
	if op.As != 0 {
		s += "\tas_end();\n"
	}
	return s + fail + "\tput(out, \"id=%ld\", r);\n"
}
