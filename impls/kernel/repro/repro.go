//go:build linux && amd64

// Package repro writes a C reproducer of a script: one self-contained C
// file, libc only, that runs the script's raw syscalls on the kernel it is
// run on and checks every result against the one expected of it.
//
// Outline of the program it writes (syzkaller's pkg/csource is the
// anchor: a sandbox, then the calls in program order):
//
//  1. A header comment: the script, where it was found and how to build
//     and run the program.
//  2. The runtime (csrc/runtime.c): a private IPC namespace, task
//     processes t1..t15 forked at their first step, "blocked" decided from
//     evidence (state S and /proc/PID/syscall inside the call, as the
//     kernel side of ipcfuzz does), credentials switched for as=, and the canonical text
//     of every result; unshare and setns in the task process (setns into
//     /proc/PID/ns/ipc of the task named, or of the main process for the
//     program's namespace, which the main process never leaves).
//  3. One C function per step that issues its syscall and writes its
//     result, a dispatch over them, and main: each step on its task, the
//     sleeping tasks settled after it, its text compared with the expected
//     one ("step N: <op>: kernel -> X, expected Y"), exit 1 on a mismatch.
//
// Expectations are canonical result texts, one per step ("" leaves a step
// unchecked): a script's stated results, or one side's results of a
// finding. The final state is not checked (see Write).
package repro

import (
	_ "embed"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/madv"
)

//go:embed csrc/runtime.c
var runtime string

// Options are what a reproducer says of itself besides the script.
type Options struct {
	// Expect holds the expected result text of each step; "" (or a
	// missing entry) leaves the step unchecked.
	Expect []string
	// ExpectFrom names whose results Expect holds ("the script's stated
	// results", "side A: naive").
	ExpectFrom string
	// Notes are lines of the header comment: where the script was found,
	// its seed, the kernel release.
	Notes []string
}

// Unsupported is the error of Write for a script with an operation the C
// reproducer cannot issue yet; it names the step.
type Unsupported struct {
	Step int
	Op   string
	Why  string
}

func (e *Unsupported) Error() string {
	return fmt.Sprintf("step %d: %s: %s", e.Step, e.Op, e.Why)
}

// Write returns the C reproducer of sc. It fails with *Unsupported for an
// operation it cannot translate.
func Write(sc *ops.Script, opt Options) ([]byte, error) {
	g := &gen{}
	steps := sc.Ops()
	bodies := make([]string, len(steps))
	for i, op := range steps {
		b, err := g.step(op)
		if err != nil {
			return nil, &Unsupported{Step: i + 1, Op: ops.FormatOp(op), Why: err.Error()}
		}
		bodies[i] = b
	}
	var b strings.Builder
	header(&b, sc, opt)
	g.prologue(&b, sc.Subsystem, steps, opt.Expect)
	b.WriteString(runtime)
	for i, body := range bodies {
		fmt.Fprintf(&b, "\n/* step %d: %s */\nstatic void step%d(char *out)\n{\n%s}\n", i+1, cComment(ops.FormatOp(steps[i])), i+1, body)
	}
	g.dispatch(&b, steps)
	// The lowest long has no literal of its own in C.
	return []byte(strings.ReplaceAll(b.String(), "-9223372036854775808L", "(-9223372036854775807L - 1)")), nil
}

// header writes the comment at the top of the file.
func header(b *strings.Builder, sc *ops.Script, opt Options) {
	b.WriteString("/*\n * ipcfuzz reproducer (ipcfuzz repro) of a " + sc.Subsystem + " script. Build and run it")
	if sc.Subsystem == "vma" {
		b.WriteString(":\n *\n *   cc -O2 -o repro repro.c && ./repro\n *\n")
		b.WriteString(" * (not -static: a static glibc puts its TLS on the heap, which the script\n")
		b.WriteString(" * owns). The script's mappings are made in a window of 64 pages at\n")
		b.WriteString(" * 0x200000000000 and in the 32 pages above the initial break, both checked\n")
		b.WriteString(" * free with MAP_FIXED_NOREPLACE first.")
	} else {
		b.WriteString(", as root:\n *\n *   cc -O2 -static -o repro repro.c && ./repro\n *\n")
		b.WriteString(" * It runs in a private IPC namespace of its own, with that namespace's\n")
		b.WriteString(" * default limits (the script's own writes to them excepted), as root, each\n")
		b.WriteString(" * task t1..t15 a forked process.")
		if movesNamespace(sc.Ops()) {
			b.WriteString(" unshare and setns move tasks t1..t15\n")
			b.WriteString(" * between IPC namespaces, each in its own process; the main process (t0)\n")
			b.WriteString(" * stays in the program's namespace.")
		}
	}
	b.WriteString(" Exit status: 0 every checked result is the\n")
	b.WriteString(" * expected one, 1 a result differs (\"step N: <op>: kernel -> X, expected Y\"),\n")
	b.WriteString(" * 2 it could not set up.\n *\n")
	checked := 0
	for _, e := range opt.Expect {
		if e != "" {
			checked++
		}
	}
	from := opt.ExpectFrom
	if from == "" {
		from = "the script's stated results"
	}
	fmt.Fprintf(b, " * Expected results: %s;\n * %d of %d steps checked (the final state as a whole is not).\n *\n", cComment(from), checked, len(sc.Steps))
	for _, n := range opt.Notes {
		fmt.Fprintf(b, " * %s\n", cComment(n))
	}
	b.WriteString(" *\n * The script, with the results expected:\n *\n")
	fmt.Fprintf(b, " *   subsystem %s\n", sc.Subsystem)
	for i, st := range sc.Steps {
		line := ops.FormatOp(st.Op)
		if i < len(opt.Expect) && opt.Expect[i] != "" {
			line += " -> " + opt.Expect[i]
		}
		fmt.Fprintf(b, " *   %s\n", cComment(line))
	}
	b.WriteString(" */\n")
}

// movesNamespace reports whether a step moves a task to another IPC
// namespace (unshare, setns).
func movesNamespace(steps []ops.Op) bool {
	for _, op := range steps {
		if op.Kind == ops.KindUnshare || op.Kind == ops.KindSetns {
			return true
		}
	}
	return false
}

// cComment keeps text from closing a C comment.
func cComment(s string) string { return strings.ReplaceAll(s, "*/", "* /") }

// cString quotes s as a C string literal.
func cString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, c := range []byte(s) {
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c < 0x20 || c >= 0x7f:
			fmt.Fprintf(&b, "\\%03o", c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// gen collects what the steps need: handle and attachment counts.
type gen struct {
	handles, atts int
}

// prologue writes the constants the runtime needs: the handle counts, the
// errno names, the text of every op and the expected results.
func (g *gen) prologue(b *strings.Builder, sub string, steps []ops.Op, expect []string) {
	fmt.Fprintf(b, "\nenum { NSTEPS = %d, NHANDLES = %d, NATTS = %d, NTASK = %d };\n", len(steps), g.handles, g.atts, ops.NumTasks)
	vma := b2i(sub == "vma")
	fmt.Fprintf(b, "#define REPRO_VMA %d /* the vma subsystem: a window and the heap area */\n#define REPRO_IPC %d /* an IPC subsystem: a private IPC namespace */\n", vma, 1-vma)
	fmt.Fprintf(b, "#define SHM_WINDOW_BASE 0x%xUL /* each task's shm window */\nenum { SHM_WINDOW_PAGES = %d };\n", shmWindowBase, ops.ShmWindowPages)
	b.WriteString("\n/* The canonical names of errors, as ipcfuzz writes them. */\n#define ERRNO_NAMES(X)")
	for _, e := range errnoNames() {
		fmt.Fprintf(b, " X(%d, %s)", e.num, cString(e.name))
	}
	b.WriteString("\n")
	if sub == "vma" {
		b.WriteString("\n/* The VmFlags mnemonics ipcfuzz shows, in its order. */\nstatic const char *const vma_flag_names[] = {")
		for _, n := range ops.VMAFlagNames {
			fmt.Fprintf(b, "%s, ", cString(n))
		}
		b.WriteString("0 };\n")
	}
	b.WriteString("\nstatic const char *const op_text[NSTEPS + 1] = {\n\t0,\n")
	for _, op := range steps {
		fmt.Fprintf(b, "\t%s,\n", cString(ops.FormatOp(op)))
	}
	b.WriteString("};\n\nstatic const char *const expected[NSTEPS + 1] = {\n\t0,\n")
	for i := range steps {
		if i < len(expect) && expect[i] != "" {
			fmt.Fprintf(b, "\t%s,\n", cString(expect[i]))
		} else {
			b.WriteString("\t0, /* not checked */\n")
		}
	}
	b.WriteString("};\n\n")
}

type errnoName struct {
	num  int
	name string
}

// errnoNames are the errors the vocabulary names, from its own table.
func errnoNames() []errnoName {
	var out []errnoName
	for n := 1; n < 256; n++ {
		if s := ops.Errno(n).String(); !strings.HasPrefix(s, "errno") {
			out = append(out, errnoName{n, s})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].num < out[j].num })
	return out
}

// dispatch writes run_step and main.
func (g *gen) dispatch(b *strings.Builder, steps []ops.Op) {
	b.WriteString("\nstatic void run_step(int step, char *out)\n{\n\tswitch (step) {\n")
	for i := range steps {
		fmt.Fprintf(b, "\tcase %d:\n\t\tstep%d(out);\n\t\tbreak;\n", i+1, i+1)
	}
	b.WriteString("\t}\n}\n\nint main(void)\n{\n\tsetup(REPRO_IPC);\n\tvma_setup();\n")
	b.WriteString("\tfor (int i = 0; i <= NHANDLES; i++)\n\t\tsh->h[i] = -1;\n")
	b.WriteString("\tint bad = 0;\n\tstatic char got[OUT];\n")
	var used [ops.NumTasks]bool // the slots a fork_task's child may not take
	for i, op := range steps {
		fmt.Fprintf(b, "\tgot[0] = 0;\n")
		switch op.Kind {
		case ops.KindForkTask:
			fmt.Fprintf(b, "\tfork_task(%d, %d, %d, %d, got);\n", op.Task, op.ForkChild(), i+1, b2i(used[op.ForkChild()]))
		case ops.KindExit:
			fmt.Fprintf(b, "\texit_task(%d, got);\n", op.Task)
		case ops.KindInterrupt:
			fmt.Fprintf(b, "\tinterrupt_task(%d, got);\n", op.Task)
		case ops.KindSetns:
			fmt.Fprintf(b, "\tsetns_task(%d, %d, %d, got);\n", op.Task, op.NamespaceOf(), i+1)
		default:
			fmt.Fprintf(b, "\tissue(%d, %d, %d, got);\n", op.Task, i+1, b2i(mayBlock(op)))
		}
		fmt.Fprintf(b, "\tsettle(got);\n\tbad |= check(%d, got, expected[%d]);\n", i+1, i+1)
		switch {
		case op.Kind == ops.KindExit:
			used[op.Task] = false
		case op.Kind == ops.KindInterrupt:
		case op.Kind == ops.KindForkTask && !used[op.ForkChild()]:
			used[op.Task], used[op.ForkChild()] = true, true
		case op.Task > 0:
			used[op.Task] = true
		}
	}
	b.WriteString("\tteardown();\n\treturn bad;\n}\n")
}

func b2i(v bool) int {
	if v {
		return 1
	}
	return 0
}

// mayBlock reports whether op is a call by a task other than t0 that may sleep.
func mayBlock(op ops.Op) bool {
	if op.Task == 0 {
		return false
	}
	switch op.Kind {
	case ops.KindMsgsnd, ops.KindMsgrcv:
		return op.MsgFlags&ops.MsgNowait == 0
	case ops.KindSemop:
		if op.Sem.Timeout != ops.SemNoTimeout {
			// A call with a timeout returns on its own (a zero timeout
			// still sleeps, up to the timer slack: no evidence of
			// blocking); it is waited for, as the kernel side does.
			return false
		}
		for _, s := range op.Sem.SopList() {
			if s.Flags&ops.SemNowait == 0 {
				return true
			}
		}
	}
	return false
}

// ref is the C expression of the id op names.
func (g *gen) ref(r ops.Ref) string {
	if r.Handle > 0 {
		g.handles = max(g.handles, r.Handle)
		return fmt.Sprintf("sh->h[%d]", r.Handle)
	}
	return strconv.FormatInt(r.ID, 10) + "L"
}

// asWrap wraps call in a switch of credentials when op runs as another
// user.
func asWrap(op ops.Op, call string) string {
	if op.As == 0 {
		return "\t" + call + "\n\tint e = errno;\n"
	}
	return fmt.Sprintf("\tas_begin(%d);\n\t%s\n\tint e = errno;\n\tas_end();\n", op.As, call)
}

// buf is the C expression of op's buffer argument: the buffer, or where
// op's is bad (badbuf) an address certainly unmapped (ops.BadAddress).
func buf(op ops.Op, name string) string {
	if op.BadBuf {
		return fmt.Sprintf("(void *)0x%xUL", ops.BadAddress)
	}
	return name
}

// fail is the tail of a call's code: the errno name when it failed.
const fail = "\tif (r < 0) {\n\t\tput_err(out, e);\n\t\treturn;\n\t}\n"

var typeNr = map[ops.IPCType][3]string{
	ops.Msg: {"SYS_msgget", "SYS_msgctl", "msg"},
	ops.Sem: {"SYS_semget", "SYS_semctl", "sem"},
	ops.Shm: {"SYS_shmget", "SYS_shmctl", "shm"},
}

// ctl is the C call of a *ctl of type t on id with cmd and buffer arg.
func ctl(t ops.IPCType, id, cmd, arg string) string {
	if t == ops.Sem {
		return fmt.Sprintf("long r = syscall(SYS_semctl, %s, 0, %s, %s);", id, cmd, arg)
	}
	return fmt.Sprintf("long r = syscall(%s, %s, %s, %s);", typeNr[t][1], id, cmd, arg)
}

// step writes the body of one step's C function.
func (g *gen) step(op ops.Op) (string, error) {
	if op.Bind > 0 {
		if s := ops.Spec(op.Kind); s != nil && s.Binds == ops.ClassObject {
			g.handles = max(g.handles, op.Bind)
		}
	}
	switch op.Kind {
	case ops.KindExit, ops.KindInterrupt:
		return "\t(void)out;\n", nil
	case ops.KindGet:
		return g.get(op), nil
	case ops.KindRmid:
		return asWrap(op, ctl(op.Type, g.ref(op.Obj), "IPC_RMID_", "0")) + fail + "\tput(out, \"ok\");\n", nil
	case ops.KindStat:
		return g.stat(op), nil
	case ops.KindNextID:
		return g.sysctl(op, fmt.Sprintf("%s_next_id", op.Type), strconv.FormatInt(op.Value, 10)), nil
	case ops.KindLimit:
		return g.limit(op), nil
	case ops.KindReadNextID:
		return fmt.Sprintf("\tchar v[64];\n\tif (read_file(\"/proc/sys/kernel/%s_next_id\", v, sizeof v) < 0)\n\t\tsetup_failed(\"reading %s_next_id\");\n\tput(out, \"ret=%%ld\", strtol(v, NULL, 10));\n", op.Type, op.Type), nil
	case ops.KindList:
		if op.As != 0 {
			return fmt.Sprintf("\tas_begin(%d);\n\tlisting(%q, %d, out);\n\tas_end();\n", op.As, op.Type.String(), b2i(op.Rows)), nil
		}
		return fmt.Sprintf("\tlisting(%q, %d, out);\n", op.Type.String(), b2i(op.Rows)), nil
	case ops.KindChurn, ops.KindFill:
		return g.churn(op), nil
	case ops.KindMsgsnd:
		return g.msgsnd(op), nil
	case ops.KindMsgrcv:
		return g.msgrcv(op), nil
	case ops.KindMsgctl:
		return g.msgctl(op)
	case ops.KindSemop:
		return g.semop(op)
	case ops.KindSemctl:
		return g.semctl(op)
	case ops.KindShmat:
		return g.shmat(op), nil
	case ops.KindShmdt:
		g.atts = max(g.atts, op.Att)
		s := fmt.Sprintf("\tunsigned long addr = %s;\n", shmAddr(op)) + "\tlong r = syscall(SYS_shmdt, addr);\n\tint e = errno;\n" + fail
		if op.Att > 0 {
			s += fmt.Sprintf("\tif (sh->att[%d] == addr)\n\t\tdetached(%d);\n", op.Att, op.Att)
		}
		return s + "\tput(out, \"ok\");\n", nil
	case ops.KindShmRead, ops.KindShmWrite:
		g.atts = max(g.atts, op.Att)
		return fmt.Sprintf("\tshm_touch(out, %s, %d, %d);\n", shmAddr(op), b2i(op.Kind == ops.KindShmWrite), op.Value), nil
	case ops.KindForkTask:
		return "\tfork_child_step(out);\n", nil
	case ops.KindUnshare:
		return "\tunshare_ns(out);\n", nil
	case ops.KindSetns:
		return "\tenter_ns(out);\n", nil
	case ops.KindShmctl:
		return g.shmctl(op)
	case ops.KindRmidForced:
		return g.sysctl(op, "shm_rmid_forced", strconv.FormatInt(op.Value, 10)), nil
	case ops.KindMap, ops.KindUnmap, ops.KindProtect, ops.KindTouch, ops.KindAdvise, ops.KindLock, ops.KindUnlock, ops.KindRemap, ops.KindBrk, ops.KindSeal:
		return vmaStep(op)
	case ops.KindLayout:
		return "\tlayout(out);\n", nil
	case ops.KindFork:
		return "\tvma_fork(out);\n", nil
	case ops.KindOpen:
		return fmt.Sprintf("\tfile_open(out, %d, -1, 0, %d);\n", op.Bind, b2i(op.VFile.ReadOnly)), nil
	case ops.KindReopen:
		return fmt.Sprintf("\tfile_open(out, %d, %d, 0, %d);\n", op.Bind, op.VFile.Of, b2i(op.VFile.ReadOnly)), nil
	case ops.KindDup:
		return fmt.Sprintf("\tfile_open(out, %d, %d, 1, 0);\n", op.Bind, op.VFile.Of), nil
	case ops.KindSemLimits:
		l := op.Sem.Limits
		return g.sysctl(op, "sem", fmt.Sprintf("%d %d %d %d", l[0], l[1], l[2], l[3])), nil
	}
	return "", fmt.Errorf("the C reproducer has no translation for %s operations yet (subsystem %s)", ops.Spec(op.Kind).Name, ops.Spec(op.Kind).Subsystem)
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

func (g *gen) sysctl(op ops.Op, name, val string) string {
	call := fmt.Sprintf("int r = sysctl(%q, %q);", name, val+"\n")
	if op.As == 0 {
		return "\t" + call + "\n\tif (r) {\n\t\tput_err(out, r);\n\t\treturn;\n\t}\n\tput(out, \"ok\");\n"
	}
	return fmt.Sprintf("\tas_begin(%d);\n\t%s\n\tas_end();\n\tif (r) {\n\t\tput_err(out, r);\n\t\treturn;\n\t}\n\tput(out, \"ok\");\n", op.As, call)
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

// msgFlags is the C expression of a msgsnd or msgrcv's flags.
func msgFlags(f uint8) string {
	var parts []string
	for _, x := range []struct {
		bit  uint8
		name string
	}{{ops.MsgNowait, "IPC_NOWAIT_"}, {ops.MsgNoerror, "010000"}, {ops.MsgExcept, "020000"}, {ops.MsgCopy, "040000"}} {
		if f&x.bit != 0 {
			parts = append(parts, x.name)
		}
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, " | ")
}

// msgRoom is the text room of a message buffer: a size outside
// 0..msgmax gets none (the kernel refuses it before reading any text).
func msgRoom(size int64) int64 {
	if size < 0 || size > ops.DefaultMsgmax {
		return 0
	}
	return size
}

func (g *gen) msgsnd(op ops.Op) string {
	s := fmt.Sprintf("\tstatic char buf[8 + %d];\n\t*(long *)buf = %dL;\n\tmsg_text(buf + 8, %d, %d);\n", msgRoom(op.Size)+1, op.Mtype, msgRoom(op.Size), op.Fill)
	if op.BadBuf {
		s += "\t(void)buf; /* badbuf: the call is given a bad address instead */\n"
	}
	call := fmt.Sprintf("long r = syscall(SYS_msgsnd, %s, %s, %dL, %s);", g.ref(op.Obj), buf(op, "buf"), op.Size, msgFlags(op.MsgFlags))
	return s + asWrap(op, call) + fail + "\tput(out, \"ok\");\n"
}

func (g *gen) msgrcv(op ops.Op) string {
	s := fmt.Sprintf("\tstatic char buf[8 + %d];\n", msgRoom(op.Size)+1)
	call := fmt.Sprintf("long r = syscall(SYS_msgrcv, %s, %s, %dL, %dL, %s);", g.ref(op.Obj), buf(op, "buf"), op.Size, op.Mtype, msgFlags(op.MsgFlags))
	return s + asWrap(op, call) + fail + "\tput(out, \"type=%ld text=%.*s\", *(long *)buf, (int)r, buf + 8);\n"
}

var msgCmd = map[ops.MsgCmd]string{
	ops.MsgIPCStat: "IPC_STAT_", ops.MsgIPCSet: "IPC_SET_", ops.MsgIPCInfo: "IPC_INFO_",
	ops.MsgInfoCmd: "12", ops.MsgStat: "11", ops.MsgStatAny: "13", ops.MsgInvalid: "-1",
}

func (g *gen) msgctl(op ops.Op) (string, error) {
	cmd, ok := msgCmd[op.MCmd]
	if !ok {
		return "", fmt.Errorf("msgctl command %s", op.MCmd)
	}
	id := g.ref(op.Obj)
	s := "\tstatic long buf[32];\n\tmemset(buf, 0, sizeof buf);\n"
	if op.MCmd == ops.MsgIPCSet {
		// uid and gid as they are (read with MSG_STAT_ANY, as root), the
		// group from gid= when given, the mode and qbytes of the op.
		s += fmt.Sprintf("\t{\n\t\tstatic long cur[32];\n\t\tlong r = syscall(SYS_msgctl, %s & 32767, 13, cur);\n\t\tif (r >= 0 && (int)r == (int)%s) {\n\t\t\tset_u32(buf, P_UID, U32(cur, P_UID));\n\t\t\tset_u32(buf, P_GID, U32(cur, P_GID));\n\t\t}\n\t}\n", id, id)
		if op.Group != 0 {
			s += fmt.Sprintf("\tset_u32(buf, P_GID, %d);\n", op.Group)
		}
		s += fmt.Sprintf("\tset_u32(buf, P_MODE, 0%o);\n\tset_i64(buf, 88, %dL);\n", op.Mode&0o777, op.Value)
	}
	s += asWrap(op, fmt.Sprintf("long r = syscall(SYS_msgctl, %s, %s, %s);", id, cmd, buf(op, "buf"))) + fail
	switch op.MCmd {
	case ops.MsgIPCStat, ops.MsgStat, ops.MsgStatAny:
		rowID := "r"
		if op.MCmd == ops.MsgIPCStat {
			rowID = "0L"
		}
		s += fmt.Sprintf("\tput(out, \"ret=%%ld \", %s);\n\tput_msg_row(out, buf, %s);\n\tput(out, \" qbytes=%%ld\", I64(buf, 88));\n", rowID, rowID)
	case ops.MsgIPCInfo, ops.MsgInfoCmd:
		s += "\tput(out, \"ret=%ld msgpool=%d msgmap=%d msgmax=%d msgmnb=%d msgmni=%d msgssz=%d msgtql=%d msgseg=%d\", r, I32(buf, 0), I32(buf, 4), I32(buf, 8), I32(buf, 12), I32(buf, 16), I32(buf, 20), I32(buf, 24), U16(buf, 28));\n"
	default:
		s += "\tput(out, \"ok\");\n"
	}
	return s, nil
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
		rowID := "r"
		if op.Sem.Cmd == ops.SemIPCStat {
			rowID = "0L"
		}
		s += fmt.Sprintf("\tput(out, \"ret=%%ld \", %s);\n\tput_sem_row(out, buf, %s);\n", rowID, rowID)
	case ops.SemIPCInfo, ops.SemInfoCmd:
		s += "\tput(out, \"ret=%ld semmap=%d semmni=%d semmns=%d semmnu=%d semmsl=%d semopm=%d semume=%d semusz=%d semvmx=%d semaem=%d\", r, I32(buf, 0), I32(buf, 4), I32(buf, 8), I32(buf, 12), I32(buf, 16), I32(buf, 20), I32(buf, 24), I32(buf, 28), I32(buf, 32), I32(buf, 36));\n"
	default:
		s += "\tput(out, \"ok\");\n"
	}
	return s, nil
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
		rowID := "r"
		if op.Cmd == ops.ShmIPCStat {
			rowID = "0L"
		}
		s += fmt.Sprintf("\tput_shm_row(out, buf, %s);\n", rowID)
	case ops.ShmIPCInfo:
		s += "\tput(out, \"ret=%ld shmmax=%lu shmmin=%lu shmmni=%lu shmseg=%lu shmall=%lu\", r, (unsigned long)I64(buf, 0), (unsigned long)I64(buf, 8), (unsigned long)I64(buf, 16), (unsigned long)I64(buf, 24), (unsigned long)I64(buf, 32));\n"
	case ops.ShmInfoCmd:
		s += "\tput(out, \"ret=%ld used_ids=%d shm_tot=%ld shm_rss=%ld shm_swp=%ld swap_attempts=%ld swap_successes=%ld\", r, I32(buf, 0), I64(buf, 8), I64(buf, 16), I64(buf, 24), I64(buf, 32), I64(buf, 40));\n"
	default:
		s += "\tput(out, \"ok\");\n"
	}
	return s, nil
}

// vmaAddr is the C expression of page p of op's region.
func vmaAddr(heap bool, p int64) string {
	if heap {
		return fmt.Sprintf("(start_brk + %dUL * PAGE)", p)
	}
	return fmt.Sprintf("(window_base + %dUL * PAGE)", p)
}

// vmaStep is the C of one VMA operation: the syscall on the pages it
// names, its errno or ok.
func vmaStep(op ops.Op) (string, error) {
	a := op.VMA
	addr, length := vmaAddr(a.Heap, a.Start), fmt.Sprintf("%dUL * PAGE", a.Pages)
	var call string
	switch op.Kind {
	case ops.KindMap:
		flags := "MAP_FIXED | MAP_PRIVATE"
		if a.Flags&ops.MapShared != 0 {
			flags = "MAP_FIXED | MAP_SHARED"
		}
		for _, f := range []struct {
			bit  ops.VMAMapFlags
			name string
		}{{ops.MapNoReserve, "MAP_NORESERVE"}, {ops.MapPopulate, "MAP_POPULATE"}, {ops.MapLocked, "MAP_LOCKED"}, {ops.MapStack, "MAP_STACK"}} {
			if a.Flags&f.bit != 0 {
				flags += " | " + f.name
			}
		}
		fd := "-1"
		if a.File == 0 {
			flags += " | MAP_ANONYMOUS"
		} else {
			fd = fmt.Sprintf("file_fd[%d]", a.File)
		}
		call = fmt.Sprintf("long r = (long)mmap((void *)%s, %s, %d, %s, %s, %dL * PAGE);\n\tif (r == (long)MAP_FAILED)\n\t\tr = -1;", addr, length, a.Prot, flags, fd, a.Offset)
	case ops.KindUnmap:
		call = fmt.Sprintf("long r = munmap((void *)%s, %s);", addr, length)
	case ops.KindProtect:
		call = fmt.Sprintf("long r = mprotect((void *)%s, %s, %d);", addr, length, a.Prot)
	case ops.KindTouch:
		return fmt.Sprintf("\ttouch(out, %s, %d);\n", addr, b2i(a.Write)), nil
	case ops.KindAdvise:
		n, ok := madv.Number(a.Advice)
		if !ok {
			return "", fmt.Errorf("advice %s has no MADV_ number", a.Advice)
		}
		call = fmt.Sprintf("long r = syscall(SYS_madvise, %s, %s, %d);", addr, length, n)
	case ops.KindLock:
		if a.OnFault {
			call = fmt.Sprintf("long r = syscall(SYS_mlock2, %s, %s, 1);", addr, length) // MLOCK_ONFAULT
		} else {
			call = fmt.Sprintf("long r = syscall(SYS_mlock, %s, %s);", addr, length)
		}
	case ops.KindUnlock:
		call = fmt.Sprintf("long r = syscall(SYS_munlock, %s, %s);", addr, length)
	case ops.KindSeal:
		call = fmt.Sprintf("long r = syscall(462 /* SYS_mseal */, %s, %s, 0);", addr, length)
	case ops.KindRemap:
		if a.MayMove {
			return fmt.Sprintf("\tremap_maymove(out, %s, %d, %d);\n", addr, a.Pages, a.NewPages), nil
		}
		if a.Fixed {
			call = fmt.Sprintf("long r = syscall(SYS_mremap, %s, %s, %dUL * PAGE, 3, %s);", addr, length, a.NewPages, vmaAddr(a.Heap, a.Target)) // MREMAP_MAYMOVE | MREMAP_FIXED
		} else {
			call = fmt.Sprintf("long r = syscall(SYS_mremap, %s, %s, %dUL * PAGE, 0);", addr, length, a.NewPages)
		}
	case ops.KindBrk:
		// A break the kernel refuses leaves the old one: ENOMEM.
		return fmt.Sprintf("\tunsigned long want = start_brk + %dL * PAGE + %dL;\n\tput(out, \"%%s\", (unsigned long)syscall(SYS_brk, want) == want ? \"ok\" : \"ENOMEM\");\n", a.Break, a.BreakBytes), nil
	}
	return "\t" + call + "\n\tput_result(out, r, errno);\n", nil
}
