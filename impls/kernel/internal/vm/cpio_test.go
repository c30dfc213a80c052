package vm

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// readCPIO reads a newc archive back: name to (mode, data).
func readCPIO(t *testing.T, b []byte) map[string]struct {
	mode uint32
	data string
} {
	t.Helper()
	out := map[string]struct {
		mode uint32
		data string
	}{}
	for off := 0; ; {
		require.Equal(t, "070701", string(b[off:off+6]), "magic at %d", off)
		field := func(i int) int {
			v, err := strconv.ParseUint(string(b[off+6+8*i:off+14+8*i]), 16, 32)
			require.NoError(t, err)
			return int(v)
		}
		mode, size, nameSize := field(1), field(6), field(11)
		name := string(b[off+110 : off+110+nameSize-1])
		require.Equal(t, byte(0), b[off+110+nameSize-1])
		dataAt := off + 110 + nameSize
		dataAt += (4 - dataAt%4) % 4
		if name == "TRAILER!!!" {
			require.Zero(t, (dataAt+size)%4)
			require.Equal(t, len(b), dataAt+size)
			return out
		}
		out[name] = struct {
			mode uint32
			data string
		}{uint32(mode), string(b[dataAt : dataAt+size])}
		off = dataAt + size
		off += (4 - off%4) % 4
	}
}

// The archive is what the kernel unpacks: every entry aligned, each
// file's directories before it, once, the trailer last.
func TestCPIO(t *testing.T) {
	var b bytes.Buffer
	a := newCPIO(&b)
	require.NoError(t, a.dir("/dev"))
	require.NoError(t, a.file("/init", 0o755, []byte("12345")))
	require.NoError(t, a.file("/cache/ipcfuzz/taskserver-0123", 0o755, []byte("ab")))
	require.NoError(t, a.file("cache/ipcfuzz/vmahelper-4567", 0o700, nil))
	require.NoError(t, a.close())
	got := readCPIO(t, b.Bytes())
	require.Len(t, got, 6)
	require.Equal(t, uint32(0o100755), got["init"].mode)
	require.Equal(t, "12345", got["init"].data)
	require.Equal(t, "ab", got["cache/ipcfuzz/taskserver-0123"].data)
	require.Equal(t, uint32(0o100700), got["cache/ipcfuzz/vmahelper-4567"].mode)
	for _, d := range []string{"dev", "cache", "cache/ipcfuzz"} {
		require.Equal(t, uint32(0o040755), got[d].mode, d)
	}
	require.Less(t, bytes.Index(b.Bytes(), []byte("cache\x00")), bytes.Index(b.Bytes(), []byte("cache/ipcfuzz\x00")))
}
