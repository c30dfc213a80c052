package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// --cover and --patch are refused, in one line and before anything runs,
// without a kernel:image= side with KCOV.
func TestCoverRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notKCOV := writeFile(t, dir, "vmlinux", "not an ELF file")
	refusedAll(t, []string{"compare", "naive", "optimized", "--checks", "1"}, []refusal{
		{[]string{"--patch", "x.diff"}, "--patch needs --cover DIR"},
		{[]string{"--cover", dir}, "--cover: no side is a kernel:image=VMLINUX"},
	})
	r := ipcfuzz(t, "replay", "--impls", "naive,optimized", "--cover", dir, "x.ops")
	require.Equal(t, 2, r.code, r.stderr)
	require.Contains(t, r.stderr, "--cover: no side is a kernel:image=VMLINUX")
	r = ipcfuzz(t, "compare", "optimized", "kernel:image="+notKCOV, "--checks", "1", "--cover", dir)
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "--cover: cover: ")
	require.NotContains(t, r.stderr, "checks", "refused before the run")
}

// A zoo patch's lines on its KCOV build: compare --cover --patch writes the
// report and prints the lines reached out of those with code. It needs the
// bug's KCOV kernel (ci/kernel.sh --cover bug-mprotect-error-enomem) and
// boots it (IPCFUZZ_LONG=1).
func TestComparePatchCoverage(t *testing.T) {
	long(t)
	const bug = "bug-mprotect-error-enomem"
	vmlinux := kcovBuild(t, bug)
	patches, err := filepath.Glob(filepath.Join("..", "..", "ci", "kernels", bug, "*.patch"))
	require.NoError(t, err)
	require.NotEmpty(t, patches)
	dir := t.TempDir()
	r := ipcfuzz(t, "compare", "optimized", "kernel:image="+vmlinux, "--subsystem", "vma", "--checks", "40", "--seed", "1",
		"--keep-going", "--corpus", t.TempDir(), "--known", "none", "--cover", dir, "--patch", patches[0])
	require.Contains(t, []int{0, 1}, r.code, r.stderr)
	require.Regexp(t, regexp.MustCompile(`kernel coverage of \d+ files: lines \d+/\d+`), r.stdout)
	require.Regexp(t, regexp.MustCompile(`patch lines reached \d+/[1-9]\d*`), r.stdout)
	for _, f := range []string{"coverage.txt", "index.html", "patch.txt", "src/mm_mprotect.c.html"} {
		require.FileExists(t, filepath.Join(dir, f))
	}
	t.Log(r.stdout)
}

// kcovBuild is the vmlinux of the KCOV build of series name in the kernel
// cache, or skips naming the command that builds it.
func kcovBuild(t *testing.T, name string) string {
	t.Helper()
	cache := os.Getenv("IPCFUZZ_KERNEL_CACHE")
	if cache == "" {
		base, err := os.UserCacheDir()
		require.NoError(t, err)
		cache = filepath.Join(base, "ipcfuzz", "kernel-builds")
	}
	m, _ := filepath.Glob(filepath.Join(cache, name+"-cover-*", "vmlinux"))
	if len(m) == 0 {
		t.Skipf("no KCOV kernel %s in %s: build it with ci/kernel.sh --cover %s", name, cache, name)
	}
	return m[len(m)-1]
}

// --engine guided without a KCOV side runs, and says that it had no
// kernel program counters to follow.
func TestGuidedWithoutKCOV(t *testing.T) {
	t.Parallel()
	r := ipcfuzz(t, "compare", "naive", "optimized", "--engine", "guided", "--subsystem", "msg", "--checks", "30", "--seed", "3", "--corpus", t.TempDir())
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "--engine guided: no side reported kernel program counters")
	require.Contains(t, r.stdout, "30 checks")
}

// A guided run on a KCOV kernel keeps the scripts that reached new kernel
// code. (Two runs of one seed draw the same scripts only as long as the
// kernel reports the same program counters: the calls of tasks that race
// take other paths from run to run, so this checks what a run keeps, not
// that two runs agree; TestFeedbackIsToldAtAFixedLag and the engine's
// tests hold the runner and the source to repeatability.) It needs a stock
// KCOV kernel (ci/kernel.sh --base 6.12 --cover) and boots it
// (IPCFUZZ_LONG=1).
func TestGuidedFollowsKernelCoverage(t *testing.T) {
	long(t)
	vmlinux := kcovBuild(t, "stock")
	r := ipcfuzz(t, "compare", "optimized", "kernel:image="+vmlinux, "--engine", "guided", "--subsystem", "shm", "--checks", "150", "--seed", "1",
		"--keep-going", "--corpus", t.TempDir(), "--known", "none")
	require.Contains(t, []int{0, 1}, r.code, r.stderr)
	m := regexp.MustCompile(`--engine guided: (\d+) kernel program counters and steps between two reached; (\d+) scripts kept`).FindStringSubmatch(r.stderr)
	require.NotNil(t, m, r.stderr)
	require.NotEqual(t, "0", m[2], "nothing kept")
	require.Contains(t, r.stdout, "150 checks")
}

// replay --cover runs each file once more, whole, for its kernel coverage,
// and writes the report as compare does. It needs a stock KCOV kernel
// (ci/kernel.sh --base 6.12 --cover) and boots it (IPCFUZZ_LONG=1).
func TestReplayCoverage(t *testing.T) {
	long(t)
	vmlinux := kcovBuild(t, "stock")
	files, err := filepath.Glob(filepath.Join("..", "..", "corpus", "shm", "*.ops"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	dir := t.TempDir()
	r := ipcfuzz(t, append([]string{"replay", "--impls", "optimized,kernel:image=" + vmlinux, "--cover", dir}, files[:min(5, len(files))]...)...)
	require.Contains(t, []int{0, 1}, r.code, r.stderr)
	m := regexp.MustCompile(`kernel coverage of \d+ files: lines (\d+)/\d+`).FindStringSubmatch(r.stdout)
	require.NotNil(t, m, r.stdout)
	require.NotEqual(t, "0", m[1], "no line reached")
	require.FileExists(t, filepath.Join(dir, "coverage.txt"))
}

// corpus minimize on a KCOV kernel side counts the kernel program counters
// each script reaches as features. It needs a stock KCOV kernel
// (ci/kernel.sh --base 6.12 --cover) and boots it (IPCFUZZ_LONG=1).
func TestMinimizeTakesKernelCoverage(t *testing.T) {
	long(t)
	vmlinux := kcovBuild(t, "stock")
	r := ipcfuzz(t, "corpus", "minimize", filepath.Join("..", "..", "corpus", "shm"), "--impls", "optimized,kernel:image="+vmlinux, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var rep struct {
		Kept      []string `json:"kept"`
		KernelPCs int      `json:"kernel_pcs"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep), r.stdout)
	require.NotEmpty(t, rep.Kept)
	require.Positive(t, rep.KernelPCs, "no kernel program counter counted")
}
