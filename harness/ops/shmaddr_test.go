package ops

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The address forms read back as written, and the ones the vocabulary
// refuses are refused in one line.
func TestShmAddressText(t *testing.T) {
	for _, line := range []string{
		"a1 = shmat shm h1 at=w:3",
		"a1 = shmat shm h1 rdonly at=w:31+0x7ff rnd remap",
		"a1 = shmat shm h1 at=0x1 rnd remap",
		"shmdt shm a1",
		"shmdt shm a2+0x10",
		"shmdt shm w:4+0x1",
		"shmdt shm 0x0",
		"read shm w:0 task=t2",
		"write shm a3+0xfff val=255",
	} {
		op, err := ParseOp(line)
		require.NoError(t, err, line)
		require.NoError(t, Validate(op), line)
		require.Equal(t, line, FormatOp(op))
	}
	for line, want := range map[string]string{ // want: what the error says, if anything in particular
		"a1 = shmat shm h1 at=w:32":             "",
		"a1 = shmat shm h1 at=w:1+0x1000":       "",
		"a1 = shmat shm h1 at=a1":               "",
		"a1 = shmat shm h1 at=0x1000 rnd remap": "",
		"write shm w:1 val=256":                 "",
		"shmdt shm w:1+16":                      "",
		"a1 = shmat shm h1 at=0x1 rnd":          "page 0",
	} {
		_, err := ParseOp(line)
		require.ErrorContains(t, err, want, line)
	}
}

// An explicit address shrinks back to NULL: the plain shmat.
func TestShmatAddressShrinksToNull(t *testing.T) {
	op, err := ParseOp("a1 = shmat shm h1 at=w:5+0x10 rnd remap")
	require.NoError(t, err)
	var texts []string
	for _, o := range Plainer(op) {
		texts = append(texts, FormatOp(o))
	}
	require.Contains(t, texts, "a1 = shmat shm h1 rnd remap")
	require.Contains(t, texts, "a1 = shmat shm h1 at=w:5+0x10 remap")
}

// A result of each form reads back as written.
func TestShmResultText(t *testing.T) {
	for _, c := range []struct{ op, res string }{
		{"a1 = shmat shm h1 at=w:3", "at=w:3"},
		{"a1 = shmat shm h1", "ok"},
		{"read shm a1", "val=7"},
		{"read shm a1", "fault"},
		{"write shm a1 val=1", "ok"},
		{"write shm a1 val=1", "fault"},
	} {
		op, err := ParseOp(c.op)
		require.NoError(t, err)
		r, err := ParseResult(op, c.res)
		require.NoError(t, err, c.res)
		require.Equal(t, c.res, FormatResult(op, r))
	}
	op, _ := ParseOp("read shm a1")
	_, err := ParseResult(op, "ok")
	require.Error(t, err)
}
