package main

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
)

// Each deliberate semaphore bug is found against the optimized model and
// shrunk to a few operations; so is the counting rule of Linux 3.10-3.15
// (naive:ncnt=legacy).
func TestSemMutantsAreFoundAndShrunk(t *testing.T) {
	dir := t.TempDir()
	for _, m := range []string{"zerolast", "noclamp", "ncnt=legacy"} {
		t.Run(m, func(t *testing.T) {
			impl := "naive:" + m
			if m != "ncnt=legacy" {
				impl = filepath.Join(dir, "semmutant-"+m)
				out, err := exec.Command("go", "build", "-ldflags", "-X main.mutation="+m, "-o", impl, "./testdata/semmutant").CombinedOutput()
				require.NoError(t, err, string(out))
			}
			r := ipcfuzz(t, "compare", impl, "optimized", "--subsystem", "sem", "--checks", "10000", "--seed", "1", "--json", "--corpus", dir)
			require.Equal(t, 1, r.code, r.stderr)
			s := summary(t, r)
			require.EqualValues(t, 1, s["divergences"])
			sc, err := corpus.Read(s["scripts"].([]any)[0].(string))
			require.NoError(t, err)
			require.LessOrEqual(t, len(sc.Steps), 6, "not shrunk")
		})
	}
}
