package main

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Each edge mutant (testdata/edgemutant: a bug at an edge few scripts
// reach) is found by compare with rapid on one seed, built as
// docs/plugins.md's recipe builds a plugin; the two found after many
// scripts are long tests. ci/edge-mutants.sh is the long form (both
// engines, three seeds, and go test -fuzz).
func TestEdgeMutantsAreFound(t *testing.T) {
	long(t) // compare runs of seconds to tens of seconds each
	dir := t.TempDir()
	for _, m := range []struct {
		mutation, subsystem string
		long                bool // found after many scripts: tens of seconds
	}{
		{"earlywrap", "ids", true}, {"keepmaxidx", "ids", false}, {"noupperclamp", "sem", false}, {"norestart", "sem", true},
	} {
		t.Run(m.mutation, func(t *testing.T) {
			if m.long {
				long(t)
			}
			t.Parallel()
			bin := filepath.Join(dir, m.mutation)
			out, err := exec.Command("go", "build", "-ldflags", "-X main.mutation="+m.mutation, "-o", bin, "./testdata/edgemutant").CombinedOutput()
			require.NoError(t, err, string(out))
			r := ipcfuzz(t, "compare", bin, "optimized", "--subsystem", m.subsystem, "--checks", "2000", "--seed", "1", "--json", "--corpus", filepath.Join(dir, m.mutation+"-findings"))
			require.Equal(t, 1, r.code, r.stderr)
			require.EqualValues(t, 1, summary(t, r)["divergences"])
		})
	}
}
