package plugins

import (
	"encoding/hex"
	"flag"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

var update = flag.Bool("update", false, "rewrite PROTOCOL.md's layout block from the code")

// layoutBlock is the code block of PROTOCOL.md that quotes Layout().
var layoutBlock = regexp.MustCompile("(?s)```text\nOp \\{.*?```")

// PROTOCOL.md quotes the packed layout as it is; a vocabulary change that
// moves it must update the page (and so the layout version) too:
// go test ./plugins -run TestProtocolDocumentsTheLayout -update
func TestProtocolDocumentsTheLayout(t *testing.T) {
	doc, err := os.ReadFile("PROTOCOL.md")
	require.NoError(t, err)
	want := "```text\n" + Layout() + "```"
	if *update {
		require.True(t, layoutBlock.Match(doc), "PROTOCOL.md has no layout block")
		doc = layoutBlock.ReplaceAll(doc, []byte(want))
		require.NoError(t, os.WriteFile("PROTOCOL.md", doc, 0o644))
	}
	if !strings.Contains(string(doc), want) {
		t.Fatal("PROTOCOL.md does not quote the current layout: go test ./plugins -run TestProtocolDocumentsTheLayout -update")
	}
}

// The golden bytes, written by hand from PROTOCOL.md, decode to its example.
func TestGoldenBytes(t *testing.T) {
	text, err := os.ReadFile("testdata/golden.txt")
	require.NoError(t, err)
	golden := map[string][]byte{}
	for _, line := range strings.Split(string(text), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, hexes, _ := strings.Cut(line, " ")
		b, err := hex.DecodeString(strings.ReplaceAll(hexes, " ", ""))
		require.NoError(t, err, line)
		golden[name] = b
	}
	sc, err := ops.ParseString("subsystem ids\nh1 = get msg key=0x10 creat mode=0600\nlist msg\n")
	require.NoError(t, err)
	got, err := UnpackOps(golden["ops"])
	require.NoError(t, err)
	require.Equal(t, sc.Ops(), got)
	require.Equal(t, golden["ops"], PackOps(sc.Ops()))

	rs, err := UnpackResults(golden["results"])
	require.NoError(t, err)
	require.Equal(t, []string{"id=0", "[0:0x10]"}, []string{ops.FormatResult(got[0], rs[0]), ops.FormatResult(got[1], rs[1])})
	require.Equal(t, golden["results"], PackResults(rs))
}
