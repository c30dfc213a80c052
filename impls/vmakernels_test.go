package impls_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls"
)

// The VMA models follow the stock kernels users boot: every script of
// testdata/kernels was recorded against one (a finding of compare
// optimized kernel:image=..., or a script run there), states that kernel's
// results and final state, and names the facts its kernel side reported.
// Handed those facts, as compare hands them, both models give every
// stated result and the kernel's final state.
func TestVMAModelsFollowRecordedKernels(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "kernels", "*.ops"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	kernels := map[string]bool{}
	for _, f := range files {
		fd, err := corpus.ReadFinding(f)
		require.NoError(t, err)
		require.NotEmpty(t, fd.Kernel, "%s: the file names no kernel", f)
		version := strings.Join(strings.SplitN(fd.Kernel, ".", 3)[:2], ".")
		kernels[version] = true
		facts, err := ops.ParseFacts(fd.Facts)
		require.NoError(t, err, f)
		q, ok := facts.VMAQuirks()
		require.True(t, ok, "%s: the file names no VMA quirks", f)
		named, ok := ops.VMAQuirksOf(version)
		require.True(t, ok, "%s: no quirk set for %s (ops.VMAQuirksOf)", f, version)
		require.Equal(t, named&^ops.VMAQuirksConfig, q&^ops.VMAQuirksConfig, "%s: the quirks %s reported are not ops.VMAQuirksOf(%q)", f, fd.Kernel, version)
		for _, name := range []string{"naive", "optimized"} {
			b, err := impls.Lookup(name)
			require.NoError(t, err)
			m, _, err := b.Start()
			require.NoError(t, err)
			require.NoError(t, m.Reset(ops.Config{Facts: facts}))
			for i, st := range fd.Script.Steps {
				r, err := m.Apply(st.Op)
				require.NoError(t, err, "%s on %s: step %d", name, f, i+1)
				if st.Want != nil {
					require.Equal(t, ops.FormatResult(st.Op, *st.Want), ops.FormatResult(st.Op, r), "%s on %s: step %d %s", name, f, i+1, ops.FormatOp(st.Op))
				}
			}
			snap, err := m.Snapshot()
			require.NoError(t, err)
			for _, g := range fd.Final {
				if g.Name == "vma" {
					want := g.B
					if fd.Stated == "A" {
						want = g.A
					}
					require.Equal(t, strings.TrimSpace(want), strings.TrimSpace(ops.FormatVMAState(snap.VMA)), "%s on %s: the final state", name, f)
				}
			}
			require.NoError(t, m.Close())
		}
	}
	for _, k := range []string{"6.1", "6.12"} {
		require.True(t, kernels[k], "no script recorded against %s", k)
	}
}
