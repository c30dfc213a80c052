package corpus_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
)

func TestReadFuzzInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	got, err := corpus.ReadFuzzInput(write("ok", "go test fuzz v1\n[]byte(\"\\x00ab\")\n"))
	require.NoError(t, err)
	require.Equal(t, []byte("\x00ab"), got)

	_, err = corpus.ReadFuzzInput(write("two", "go test fuzz v1\n[]byte(\"a\")\nint(1)\n"))
	require.ErrorContains(t, err, "not a go test fuzz v1 file with one argument")
	_, err = corpus.ReadFuzzInput(write("str", "go test fuzz v1\nstring(\"a\")\n"))
	require.ErrorContains(t, err, `str:2: want []byte("...")`)
	_, err = corpus.ReadFuzzInput(write("quote", "go test fuzz v1\n[]byte(\"a)\n"))
	require.ErrorContains(t, err, "quote:2:")
}
