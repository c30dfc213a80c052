package runner_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/sides"
)

// The stated script keeps the file's comments and blank lines where they
// were and states every result.
func TestWriteStated(t *testing.T) {
	s, err := sides.Open(context.Background(), "naive", sides.Options{InProcess: true})
	require.NoError(t, err)
	defer s.Impl.Close()
	path := filepath.Join(t.TempDir(), "s.ops")
	require.NoError(t, os.WriteFile(path, []byte("# a seed\n\nsubsystem ids\nstat msg id=-1\n# between\nget msg key=0x0 mode=0600\n# the end\n"), 0o644))
	var out bytes.Buffer
	require.NoError(t, runner.WriteStated(context.Background(), path, "ids", s, &out))
	require.Equal(t, "# a seed\n\nsubsystem ids\nstat msg id=-1 -> EINVAL\n# between\nget msg key=0x0 mode=0600 -> id=0\n# the end\n", out.String())

	require.NoError(t, os.WriteFile(path, []byte("subsystem ids\nno such op\n"), 0o644))
	out.Reset()
	err = runner.WriteStated(context.Background(), path, "ids", s, &out)
	var pe *ops.ParseError
	require.ErrorAs(t, err, &pe)
	require.Empty(t, out.String(), "nothing is written when the script cannot run")
}
