package cover

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// builtSource is a covered file of a tiny program built with gcc's KCOV
// instrumentation (-fsanitize-coverage=trace-pc) and line tables, as
// ci/kernel.sh --cover builds the kernel: Open's reading of the ELF, the
// DWARF and the calls runs on it wherever gcc is, without a kernel.
const builtSource = `int sink;

__attribute__((noinline)) int pick(int x)
{
	if (x > 3)
		return x * 2;
	sink = x;
	return x + 1;
}

__attribute__((noinline)) int never(int x)
{
	return x - 1;
}

void _start(void)
{
	pick(sink);
	for (;;)
		;
}
`

// buildTiny builds the program in a temporary build tree and returns its
// executable: ipc/msg.c instrumented, __sanitizer_cov_trace_pc in a file
// of its own that is not.
func buildTiny(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skipf("needs gcc: %v", err)
	}
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("ipc/msg.c", builtSource)
	write("lib/stub.c", "void __sanitizer_cov_trace_pc(void) {}\n")
	for _, args := range [][]string{
		{"-O2", "-g", "-gdwarf-4", "-fsanitize-coverage=trace-pc", "-fno-pie", "-c", "ipc/msg.c", "-o", "msg.o"},
		{"-O2", "-fno-pie", "-c", "lib/stub.c", "-o", "stub.o"},
		{"-nostdlib", "-static", "-no-pie", "-o", "vmlinux", "msg.o", "stub.o"},
	} {
		cmd := exec.Command("gcc", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Skipf("gcc %v: %v: %s", args, err, out)
		}
	}
	return filepath.Join(dir, "vmlinux")
}

func TestOpenBuilt(t *testing.T) {
	im, err := Open(buildTiny(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Units) != 1 || im.Units[0] != "ipc/msg.c" {
		t.Fatalf("units %v, want [ipc/msg.c]", im.Units)
	}
	funcs := map[string]Func{}
	for _, f := range im.Funcs {
		funcs[f.Name] = f
	}
	for name, lines := range map[string][2]int{"pick": {3, 9}, "never": {11, 14}, "_start": {16, 21}} {
		f, ok := funcs[name]
		if !ok || len(f.Sites) == 0 {
			t.Fatalf("function %s: %+v, want one with instrumented blocks", name, f)
		}
		for _, si := range f.Sites {
			s := im.Sites[si]
			if s.File != "ipc/msg.c" || s.Line < lines[0] || s.Line > lines[1] || s.Func != name || s.Ret != s.Call+5 {
				t.Errorf("%s: block %+v, want one of ipc/msg.c lines %d-%d", name, s, lines[0], lines[1])
			}
		}
	}
	if _, ok := funcs["__sanitizer_cov_trace_pc"]; ok {
		t.Errorf("the trace function's file is not covered, yet it is among the functions")
	}
	// pick's first block (its entry) ran, nothing else.
	first := im.Sites[funcs["pick"].Sites[0]]
	r := im.Cover([]uint64{first.Ret})
	entered := map[string]bool{}
	for _, f := range r.Funcs {
		entered[f.Name] = f.Entered
	}
	if !entered["pick"] || entered["never"] || entered["_start"] {
		t.Errorf("entered %v, want pick only", entered)
	}
	if r.Entered != (Stat{1, 3}) || r.Lines.Reached < 1 || r.Lines.Reached >= r.Lines.Total {
		t.Errorf("%s", r.Summary())
	}
	if ran, ok := r.Ran(FileLine{"ipc/msg.c", 13}); !ok || ran {
		t.Errorf("never's line 13: ran %v, has code %v; want code that did not run", ran, ok)
	}
	if src, err := os.ReadFile(filepath.Join(im.BuildDir, "ipc/msg.c")); err != nil || string(src) != builtSource {
		t.Errorf("the build directory %s does not hold the source: %v", im.BuildDir, err)
	}
}
