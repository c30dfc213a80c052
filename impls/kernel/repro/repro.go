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
	fmt.Fprintf(b, "#define REPRO_VMA %d /* the vma subsystem: a window, the heap area and the THP area */\n#define REPRO_IPC %d /* an IPC subsystem: a private IPC namespace */\n", vma, 1-vma)
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

// rowID is the id a *_STAT row shows: the call's return, except for
// IPC_STAT, which returns 0.
func rowID(ipcStat bool) string {
	if ipcStat {
		return "0L"
	}
	return "r"
}

// ctl is the C call of a *ctl of type t on id with cmd and buffer arg.
func ctl(t ops.IPCType, id, cmd, arg string) string {
	if t == ops.Sem {
		return fmt.Sprintf("long r = syscall(SYS_semctl, %s, 0, %s, %s);", id, cmd, arg)
	}
	return fmt.Sprintf("long r = syscall(%s, %s, %s, %s);", typeNr[t][1], id, cmd, arg)
}

// step writes the body of one step's C function (steps).
func (g *gen) step(op ops.Op) (string, error) {
	if op.Bind > 0 {
		if s := ops.Spec(op.Kind); s != nil && s.Binds == ops.ClassObject {
			g.handles = max(g.handles, op.Bind)
		}
	}
	w, ok := steps.Of(op.Kind)
	if !ok {
		return "", steps.Unhandled(op.Kind)
	}
	return w.body(g, op)
}

// writer writes the C of one kind's steps.
type writer struct {
	// body is the step function's body: the call, then the result text.
	body func(g *gen, op ops.Op) (string, error)
	// mayBlock reports whether the call may sleep when a task other than
	// t0 makes it (nil: it never does).
	mayBlock func(op ops.Op) bool
}

// steps is the reproducer's table of kinds: each file adds those it
// writes, from init (ops.Handlers).
var steps = ops.NewHandlers[writer]("the C reproducer")

// Handles reports whether the reproducer writes operations of kind k.
func Handles(k ops.Kind) bool { return steps.Handles(k) }

// text is a writer of a body that cannot fail; fixed one of the same body
// for every step of its kind.
func text(f func(g *gen, op ops.Op) string) writer {
	return writer{body: func(g *gen, op ops.Op) (string, error) { return f(g, op), nil }}
}

func fixed(body string) writer {
	return text(func(*gen, ops.Op) string { return body })
}

// mayBlock reports whether op is a call by a task other than t0 that may sleep.
func mayBlock(op ops.Op) bool {
	w, _ := steps.Of(op.Kind)
	return op.Task != 0 && w.mayBlock != nil && w.mayBlock(op)
}

// sysctl writes name (below /proc/sys/kernel) as op's caller.
func (g *gen) sysctl(op ops.Op, name, val string) string {
	call := fmt.Sprintf("int r = sysctl(%q, %q);", name, val+"\n")
	if op.As == 0 {
		return "\t" + call + "\n\tif (r) {\n\t\tput_err(out, r);\n\t\treturn;\n\t}\n\tput(out, \"ok\");\n"
	}
	return fmt.Sprintf("\tas_begin(%d);\n\t%s\n\tas_end();\n\tif (r) {\n\t\tput_err(out, r);\n\t\treturn;\n\t}\n\tput(out, \"ok\");\n", op.As, call)
}
