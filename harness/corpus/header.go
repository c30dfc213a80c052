package corpus

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Header is what a finding file's comment header records: how it was
// found, on which pair, and under which signature. A seed (a file with no
// header) has an empty Kind.
type Header struct {
	Kind      string // "divergence", "plugin failure", or "" for a seed
	Command   string // the "found by" command line
	Signature string // the runner's signature, when the file names one
	A, B      string // the recorded pair of implementations
	Relation  string // the equivalence it was compared under ("exact" if not said)
	Flaky     bool   // marked flaky by the runner or by a merge
}

// FlakyMark starts the header line a merge adds to a script that
// reproduced on some of its tries only.
const FlakyMark = "# FLAKY:"

var tableLine = regexp.MustCompile(`^#\s+step\s+A: (\S+)\s+B: (\S+)\s*$`)

// ParseHeader reads the comment lines at the top of a finding file.
func ParseHeader(text string) Header {
	var h Header
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, "#") {
			break
		}
		h.take(line)
	}
	if h.Relation == "" {
		h.Relation = "exact"
	}
	return h
}

// take reads one header line.
func (h *Header) take(line string) {
	body := strings.TrimSpace(strings.TrimPrefix(line, "#"))
	switch {
	case strings.HasPrefix(body, "ipcfuzz ") && h.Kind == "":
		h.Kind = strings.TrimPrefix(body, "ipcfuzz ")
	case strings.HasPrefix(body, "found by: "):
		h.Command = strings.TrimPrefix(body, "found by: ")
		h.fromCommand()
	case strings.HasPrefix(body, "signature ") && h.Signature == "":
		h.Signature = strings.TrimSpace(strings.TrimPrefix(body, "signature "))
	case strings.HasPrefix(line, FlakyMark) || strings.Contains(body, ": FLAKY,"):
		h.Flaky = true
	}
	if m := tableLine.FindStringSubmatch(line); m != nil && h.A == "" {
		h.A, h.B = m[1], m[2]
	}
}

// fromCommand takes the pair and the relation from a "found by" line of
// the form "ipcfuzz compare A B ... --equiv R ...".
func (h *Header) fromCommand() {
	f := strings.Fields(h.Command)
	if len(f) >= 4 && strings.HasSuffix(f[0], "ipcfuzz") && f[1] == "compare" {
		h.A, h.B = f[2], f[3]
	}
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "--equiv" {
			h.Relation = f[i+1]
		}
	}
}

// IsFinding reports whether the header belongs to a finding (not a seed).
func (h Header) IsFinding() bool { return h.Kind != "" }

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
