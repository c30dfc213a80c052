package complexity_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/complexity"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

func TestReadPatternFile(t *testing.T) {
	require.False(t, complexity.IsPatternFile("shm-list"))
	require.True(t, complexity.IsPatternFile("x.perf"))
	require.True(t, complexity.IsPatternFile("dir/x"))
	path := filepath.Join(t.TempDir(), "shm-list.perf")
	require.NoError(t, os.WriteFile(path, []byte("subsystem shm\nrepeat n {\nget shm key=0x0 mode=0600 size=1\n}\nmeasure\nlist shm\n"), 0o644))
	w, label, err := complexity.ReadPatternFile(path)
	require.NoError(t, err)
	require.Equal(t, "shm-list", label)
	require.True(t, ops.IsPattern(w))
	require.Equal(t, complexity.DefaultPatternSizes, complexity.DefaultSizes(w))
	require.NoError(t, os.WriteFile(path, []byte("subsystem shm\nlist shm\n"), 0o644))
	_, _, err = complexity.ReadPatternFile(path)
	require.Error(t, err)

	require.ErrorContains(t, complexity.Write(&bytes.Buffer{}, &complexity.Report{}, "yaml", complexity.Wall), `format "yaml"`)
}
