package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
)

// A divergence is written even when the plugin fails while it is shrunk:
// testdata/shrinkfail hangs past the call timeout (or dies) on every
// script of two operations or fewer. Each such step is skipped with a
// fresh plugin, the third stops the shrink, and the finding holds the
// shortest script that still diverged (three operations), its note saying
// the shrink was cut short. Before, the run exited 2 and wrote nothing.
func TestShrinkKeepsTheFindWhenThePluginFails(t *testing.T) {
	long(t) // end to end, seconds of plugin runs: the long pass
	dir := t.TempDir()
	for _, mode := range []string{"hang", "die"} {
		t.Run(mode, func(t *testing.T) {
			bin := filepath.Join(dir, "shrinkfail-"+mode)
			out, err := exec.Command("go", "build", "-ldflags", "-X main.mode="+mode, "-o", bin, "./testdata/shrinkfail").CombinedOutput()
			require.NoError(t, err, string(out))
			findings := filepath.Join(dir, mode)
			r := ipcfuzz(t, "compare", bin, "optimized", "--subsystem", "ids", "--checks", "1", "--seed", "3", "--call-timeout", "2s", "--json", "--corpus", findings)
			require.Equal(t, 1, r.code, r.stderr)
			s := summary(t, r)
			require.EqualValues(t, 1, s["divergences"])
			require.EqualValues(t, 0, s["plugin_failures"])
			path := s["scripts"].([]any)[0].(string)
			sc, err := corpus.Read(path)
			require.NoError(t, err)
			require.Len(t, sc.Steps, 3)
			text, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Contains(t, string(text), "the shrink was cut short: 3 of its steps failed on a side and were skipped, each with a fresh plugin, and it stopped there")
			require.Contains(t, string(text), "# note: shrink step skipped: a candidate of 2 ops: plugin")
		})
	}
}
