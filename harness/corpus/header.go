package corpus

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// FlakyMark starts the header line a merge adds to a script that
// reproduced on some of its tries only.
const FlakyMark = "# FLAKY:"

var tableLine = regexp.MustCompile(`^#\s+step\s+A: (\S+)\s+B: (\S+)\s*$`)

// Hash is the content hash a script is stored under: the first 12 hex
// digits of the SHA-256 of its canonical text, as PathOf names files.
func Hash(sc *ops.Script) string {
	sum := sha256.Sum256([]byte(ops.Format(sc)))
	return hex.EncodeToString(sum[:6])
}

// MarkFlaky returns a finding's text with a FlakyMark line after its
// first line (or the text unchanged if it is marked already).
func MarkFlaky(text, why string) string {
	if strings.Contains(text, "\n"+FlakyMark) {
		return text
	}
	first, rest, _ := strings.Cut(text, "\n")
	return first + "\n" + FlakyMark + " " + why + "\n" + rest
}
