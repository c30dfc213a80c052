package cover

import (
	"bufio"
	"os"
	"path/filepath"
	"testing"
)

// kcovImage returns the vmlinux of a KCOV build named name ("stock", or a
// zoo series) with ci/kernel.sh --cover: $IPCFUZZ_KCOV_VMLINUX for stock,
// else the newest in the kernel cache ($IPCFUZZ_KERNEL_CACHE or
// ~/.cache/ipcfuzz/kernel-builds). It skips, saying what is missing,
// where there is none.
func kcovImage(t *testing.T, name string) string {
	t.Helper()
	if v := os.Getenv("IPCFUZZ_KCOV_VMLINUX"); v != "" && name == "stock" {
		return v
	}
	cache := os.Getenv("IPCFUZZ_KERNEL_CACHE")
	if cache == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			t.Skipf("no KCOV kernel: no cache directory (%v)", err)
		}
		cache = filepath.Join(base, "ipcfuzz", "kernel-builds")
	}
	matches, _ := filepath.Glob(filepath.Join(cache, name+"-cover-*", "vmlinux"))
	var newest string
	var when int64
	for _, m := range matches {
		if st, err := os.Stat(m); err == nil && st.ModTime().UnixNano() > when {
			newest, when = m, st.ModTime().UnixNano()
		}
	}
	if newest == "" {
		how := "ci/kernel.sh --base 6.12 --cover (or set IPCFUZZ_KCOV_VMLINUX)"
		if name != "stock" {
			how = "ci/kernel.sh --cover " + name
		}
		t.Skipf("no KCOV kernel %s in %s: build one with %s", name, cache, how)
	}
	return newest
}

// TestOpenKCOVImage maps a real KCOV vmlinux: every covered file has
// functions and instrumented blocks, the blocks' lines are lines of their
// files in the build tree, and the entry points of the syscalls ipcfuzz
// speaks are there.
func TestOpenKCOVImage(t *testing.T) {
	im, err := Open(kcovImage(t, "stock"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d units, %d functions, %d instrumented blocks, built in %s", im.Path, len(im.Units), len(im.Funcs), len(im.Sites), im.BuildDir)
	for _, want := range []string{"ipc/msg.c", "ipc/sem.c", "ipc/shm.c", "ipc/util.c", "mm/mmap.c", "mm/vma.c", "mm/mremap.c", "mm/mprotect.c", "mm/mlock.c", "mm/madvise.c", "mm/mseal.c"} {
		found := false
		for _, u := range im.Units {
			found = found || u == want
		}
		if !found {
			t.Errorf("no unit %s among %v", want, im.Units)
		}
	}
	funcs := map[string]Func{}
	for _, f := range im.Funcs {
		funcs[f.Name] = f
	}
	// The syscalls' entry points (the syscall table calls them, so no
	// compiler inlines them away, as it may do_mprotect_pkey).
	for name, file := range map[string]string{"__x64_sys_msgsnd": "ipc/msg.c", "__x64_sys_msgget": "ipc/msg.c", "__x64_sys_semtimedop": "ipc/sem.c", "__x64_sys_shmat": "ipc/shm.c", "__x64_sys_mprotect": "mm/mprotect.c", "__x64_sys_mremap": "mm/mremap.c", "__x64_sys_brk": "mm/mmap.c"} {
		f, ok := funcs[name]
		switch {
		case !ok:
			t.Errorf("no function %s", name)
		case f.File != file:
			t.Errorf("%s is of %s, want %s", name, f.File, file)
		case len(f.Sites) == 0:
			t.Errorf("%s has no instrumented block", name)
		}
	}
	// Each block's line is a line of code of its file, within the file.
	lines := map[string]int{}
	for _, u := range im.Units {
		n, err := countLines(filepath.Join(im.BuildDir, u))
		if err != nil {
			t.Skipf("the build tree's sources are gone: %v", err)
		}
		lines[u] = n
	}
	inUnit := 0
	for _, s := range im.Sites {
		if s.Ret != s.Call+5 {
			t.Fatalf("block at %#x: the call is %d bytes, want 5", s.Call, s.Ret-s.Call)
		}
		if n, ok := lines[s.File]; ok {
			inUnit++
			if s.Line < 1 || s.Line > n {
				t.Errorf("block at %#x in %s: line %d of a file of %d lines", s.Call, s.Func, s.Line, n)
			}
		}
	}
	if inUnit*2 < len(im.Sites) {
		t.Errorf("only %d of %d blocks are on lines of the covered files", inUnit, len(im.Sites))
	}
	// All blocks reached: every instrumented line and function is.
	all := make([]uint64, len(im.Sites))
	for i, s := range im.Sites {
		all[i] = s.Ret
	}
	r := im.Cover(all)
	if r.Lines.Reached != r.Lines.Total || r.Entered.Reached != r.Entered.Total || r.Outside != 0 {
		t.Errorf("every block reached, yet %s", r.Summary())
	}
	t.Log(r.Summary())
}

// TestPatchOnKCOVImage maps a zoo patch's lines onto its KCOV build
// (ci/kernel.sh --cover bug-mprotect-error-enomem): every line it changes
// has code, and with every block of the patched function reached, it ran.
func TestPatchOnKCOVImage(t *testing.T) {
	const bug = "bug-mprotect-error-enomem"
	im, err := Open(kcovImage(t, bug), nil)
	if err != nil {
		t.Fatal(err)
	}
	patches, _ := filepath.Glob(filepath.Join("..", "..", "ci", "kernels", bug, "*.patch"))
	if len(patches) == 0 {
		t.Skipf("no patch of %s", bug)
	}
	f, err := os.Open(patches[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines, err := ParsePatch(f)
	if err != nil {
		t.Fatal(err)
	}
	none := im.Cover(nil).Patch(lines)
	if none.Reached.Total == 0 || none.Reached.Reached != 0 {
		t.Fatalf("nothing reached: %s", none.Summary())
	}
	all := make([]uint64, len(im.Sites))
	for i, s := range im.Sites {
		all[i] = s.Ret
	}
	every := im.Cover(all).Patch(lines)
	if every.Reached.Reached != every.Reached.Total {
		t.Errorf("every block reached: %s", every.Summary())
	}
	t.Logf("%s: %d lines changed, %s", bug, len(lines), every.Summary())
}

func countLines(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	n := 0
	for sc.Scan() {
		n++
	}
	return n, sc.Err()
}
