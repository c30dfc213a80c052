package runner

import (
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Expected is the divergences one known entry (Options.Known) explained:
// a difference between the kernels' versions, not a finding.
type Expected struct {
	*corpus.KnownEntry
	Hits       int                 `json:"hits"`
	Signatures []ExpectedSignature `json:"signatures"`
}

// ExpectedHits counts the divergences known entries explained.
func (r *Result) ExpectedHits() int {
	n := 0
	for _, x := range r.Expected {
		n += x.Hits
	}
	return n
}

// ExpectedSignature is one signature an entry explained: its hits and the
// first script that showed it.
type ExpectedSignature struct {
	Signature string `json:"signature"`
	Hits      int    `json:"hits"`
	Index     int    `json:"index"`
}

// expected accounts for a divergence that a known entry explains and
// reports whether one did.
func (c *collector) expected(index int, sig string) bool {
	e := c.o.Known.Match(sig, c.res.KernelA, c.res.KernelB, MirrorSignature)
	if e == nil {
		return false
	}
	c.account(e, index, sig)
	return true
}

// account counts one divergence (script index, signature sig) that the
// known entry e explained.
func (c *collector) account(e *corpus.KnownEntry, index int, sig string) {
	k, ok := c.known[e]
	if !ok {
		k = len(c.res.Expected)
		c.known[e] = k
		c.res.Expected = append(c.res.Expected, Expected{KnownEntry: e})
	}
	x := &c.res.Expected[k]
	x.Hits++
	for i := range x.Signatures {
		if x.Signatures[i].Signature == sig {
			x.Signatures[i].Hits++
			return
		}
	}
	x.Signatures = append(x.Signatures, ExpectedSignature{Signature: sig, Hits: 1, Index: index})
}

// stale lists the known entries of the run's subsystem that apply to its
// kernels and explained nothing. A run stopped early (at its first
// finding, or interrupted) says nothing of them.
func (c *collector) stale() []*corpus.KnownEntry {
	out := []*corpus.KnownEntry{}
	if c.o.Known == nil || c.stopped || c.res.Interrupted {
		return out
	}
	for _, e := range c.o.Known.Entries {
		sub, _, _ := strings.Cut(e.Pattern, "/")
		if _, hit := c.known[e]; !hit && sub == c.pair.Subsystem && e.Applies(c.res.KernelA, c.res.KernelB) {
			out = append(out, e)
		}
	}
	return out
}

// MirrorSignature is the signature the same divergence has with the sides
// swapped: the two result classes ("vma/seal/ok-ENOSYS" and
// "vma/seal/ENOSYS-ok"), A-merges and B-merges, only-A and only-B, the
// flags each side has ("flags+nh" and "flags-nh", "flags+lf-unnamed" and
// "flags+unnamed-lf"); what names no side (a listing's dup-row, a final
// group) is its own mirror.
func MirrorSignature(sig string) string {
	i := strings.LastIndex(sig, "/")
	head, last := sig[:i+1], sig[i+1:]
	swap := map[string]string{"A-merges": "B-merges", "B-merges": "A-merges", "only-A": "only-B", "only-B": "only-A"}
	if m, ok := swap[last]; ok {
		return head + m
	}
	if rest, ok := strings.CutPrefix(last, "flags"); ok && strings.Contains(head, "/space/") {
		plus, minus := "", ""
		if p, ok := strings.CutPrefix(rest, "+"); ok {
			plus, minus, _ = strings.Cut(p, "-")
		} else {
			minus = strings.TrimPrefix(rest, "-")
		}
		out := "flags"
		if minus != "" {
			out += "+" + minus
		}
		if plus != "" {
			out += "-" + plus
		}
		return head + out
	}
	// SUBSYSTEM/KIND/CA-CB: the classes (errno names, ok, blocked, none)
	// hold no "-".
	parts := strings.Split(sig, "/")
	if len(parts) == 3 && ops.SpecByName(parts[1]) != nil {
		if a, b, ok := strings.Cut(last, "-"); ok && !strings.Contains(b, "-") {
			return head + b + "-" + a
		}
	}
	return sig
}
