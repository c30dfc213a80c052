package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// actionlint runs the module's actionlint tool on files, from the
// repository root.
func actionlint(t *testing.T, files ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("go", append([]string{"tool", "actionlint", "-no-color"}, files...)...)
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Every workflow passes actionlint (github.com/rhysd/actionlint, a tool of
// this module; it also runs shellcheck on run: scripts where shellcheck is
// installed).
func TestWorkflowsPassActionlint(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", ".github", "workflows", "*.yml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var rel []string
	for _, f := range files {
		r, err := filepath.Rel(filepath.Join("..", ".."), f)
		require.NoError(t, err)
		rel = append(rel, r)
	}
	out, err := actionlint(t, rel...)
	require.NoError(t, err, out)
	// And it does reject a broken workflow, so a pass means something.
	bad := filepath.Join(t.TempDir(), "bad.yml")
	require.NoError(t, os.WriteFile(bad, []byte("on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ matrix.nosuch }}\n"), 0o644))
	out, err = actionlint(t, bad)
	require.Error(t, err, out)
}

// The nightly workflow reads the shard table and merges whatever the
// shards left, and its shape is the one ci/README.md describes.
func TestNightlyWorkflowShape(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", ".github", "workflows", "nightly.yml"))
	require.NoError(t, err)
	text := string(data)
	for _, want := range []string{
		"go run ./cmd/ipcfuzz list --shards --json",
		"include: ${{ fromJSON(needs.plan.outputs.shards) }}",
		"ci/nightly.sh \"$SHARD\" \"$BUDGET\" out",
		"key: fuzzcache-${{ matrix.name }}-${{ needs.plan.outputs.date }}",
		"restore-keys: |",
		"name: shard-${{ matrix.id }}",
		"needs: [plan, fuzz, kernels, guided]",
		"contains(\"kernel:image=$IPCFUZZ_IMAGE_\")",
		"ci/kernel.sh --base 6.12 --cover > cover.path",
		"contains(\"--engine guided\")",
		"corpus merge",
		"GITHUB_STEP_SUMMARY",
		"gh issue create",
	} {
		require.Contains(t, text, want)
	}
	require.Regexp(t, `(?m)^  merge:\n    needs: \[plan, fuzz, kernels, guided\]\n    if: always\(\)$`, text)
	require.NoFileExists(t, filepath.Join("..", "..", "ci", "nightly.yml"), "GitHub runs workflows only from .github/workflows")
}
