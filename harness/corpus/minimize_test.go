package corpus_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls"
)

// naive replays scripts on fresh in-process instances of the naive model.
func naive(t *testing.T) corpus.Replayer {
	b, err := impls.Lookup("naive")
	require.NoError(t, err)
	return corpus.Replayer{Name: "naive", Subsystems: b.Subsystems(), Replay: func(sc *ops.Script) (ops.Outcome, error) {
		m, _, err := b.Start()
		if err != nil {
			return ops.Outcome{}, err
		}
		defer m.Close()
		return ops.Run(m, ops.Config{}, sc.Ops())
	}}
}

// Smallest first: a script that adds no (operation, result class) pair to
// the smaller ones before it is dropped; an unparsable one is skipped, and
// CopyKept writes only the kept ones.
func TestMinimize(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a.ops":   "subsystem ids\nstat msg id=-1\n",
		"b.ops":   "subsystem ids\nstat msg id=-1\nstat msg id=-2\n",
		"c.ops":   "subsystem ids\nget msg key=0x0 mode=0600\nstat msg id=-1\n",
		"bad.ops": "subsystem ids\nno such op\n",
	}
	for n, text := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, n), []byte(text), 0o644))
	}
	rep, err := corpus.Minimize(context.Background(), dir, []corpus.Replayer{naive(t)})
	require.NoError(t, err)
	require.Equal(t, 4, rep.Scripts)
	require.Equal(t, []string{filepath.Join(dir, "a.ops"), filepath.Join(dir, "c.ops")}, rep.Kept)
	require.Equal(t, []string{filepath.Join(dir, "b.ops")}, rep.Dropped)
	require.Len(t, rep.Skipped, 1)
	require.Equal(t, 2, rep.Pairs) // stat/EINVAL, get/ok
	require.Contains(t, rep.Coverage, "without -cover")

	out := t.TempDir()
	require.NoError(t, corpus.CopyKept(dir, out, rep.Kept))
	written, err := corpus.Files(out)
	require.NoError(t, err)
	require.Len(t, written, 2)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = corpus.Minimize(ctx, dir, []corpus.Replayer{naive(t)})
	require.ErrorIs(t, err, context.Canceled)
}
