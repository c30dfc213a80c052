package runner

import (
	"slices"
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
	// With are the other entries that explain the rest of the signature,
	// where it is several version differences at once (the flags of one
	// VMA); the hits count under this entry only.
	With []string `json:"with,omitempty"`
}

// expected accounts for a divergence that a known entry explains and
// reports whether one did.
func (c *collector) expected(index int, sig string) bool {
	e := c.o.Known.Match(sig, c.res.KernelA, c.res.KernelB, MirrorSignature)
	if e != nil {
		c.account(e, index, sig)
		return true
	}
	parts := c.expectedParts(sig)
	if len(parts) < 2 {
		return false
	}
	c.account(parts[0], index, sig)
	x := &c.res.Expected[c.known[parts[0]]]
	for i := range x.Signatures {
		if s := &x.Signatures[i]; s.Signature == sig && s.With == nil {
			for _, p := range parts[1:] {
				s.With = append(s.With, p.Written())
			}
		}
	}
	return true
}

// expectedParts is, for a signature of flags that differ on one VMA
// ("vma/space/flags+nh,lf-unnamed"), the known entries without a cause
// that apply to the run's kernels, each a flags signature of its own
// ("vma/space/flags+nh", "vma/space/flags+lf-unnamed"), that together make
// up exactly its flags: several version differences seen at once. nil
// where they do not.
func (c *collector) expectedParts(sig string) []*corpus.KnownEntry {
	head, plus, minus, ok := flagSets(sig)
	if !ok || c.o.Known == nil {
		return nil
	}
	var out []*corpus.KnownEntry
	for _, e := range c.o.Known.Entries {
		if e.Cause != "" || !e.Applies(c.res.KernelA, c.res.KernelB) {
			continue
		}
		eh, ep, em, ok := flagSets(e.Pattern)
		if !ok || eh != head {
			continue
		}
		if e.InRange(c.res.KernelA) {
			ep, em = em, ep // written with the kernel in its range as B
		}
		if !subset(ep, plus) || !subset(em, minus) {
			continue
		}
		plus, minus = without(plus, ep), without(minus, em)
		out = append(out, e)
	}
	if len(plus) > 0 || len(minus) > 0 {
		return nil
	}
	return out
}

// flagSets splits a flags signature ("vma/space/flags+nh,lf-unnamed") into
// its head ("vma/space/") and the flags only A has and only B has; ok is
// false for any other signature, or one with a wildcard.
func flagSets(sig string) (head string, plus, minus []string, ok bool) {
	i := strings.LastIndex(sig, "/")
	head, last := sig[:i+1], sig[i+1:]
	rest, ok := strings.CutPrefix(last, "flags")
	if !ok || !strings.Contains(head, "/space/") || strings.ContainsAny(sig, "*?[") || rest == "" {
		return "", nil, nil, false
	}
	var p, m string
	if r, isPlus := strings.CutPrefix(rest, "+"); isPlus {
		p, m, _ = strings.Cut(r, "-")
	} else {
		m = strings.TrimPrefix(rest, "-")
	}
	split := func(s string) []string {
		if s == "" {
			return nil
		}
		return strings.Split(s, ",")
	}
	return head, split(p), split(m), true
}

// subset reports whether every element of a is in b.
func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// without is b less the elements of a.
func without(b, a []string) []string {
	var out []string
	for _, x := range b {
		if !slices.Contains(a, x) {
			out = append(out, x)
		}
	}
	return out
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
	with := map[string]bool{}
	for _, x := range c.res.Expected {
		for _, s := range x.Signatures {
			for _, w := range s.With {
				with[w] = true
			}
		}
	}
	for _, e := range c.o.Known.Entries {
		sub, _, _ := strings.Cut(e.Pattern, "/")
		if _, hit := c.known[e]; !hit && !with[e.Written()] && sub == c.pair.Subsystem && e.Applies(c.res.KernelA, c.res.KernelB) {
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
	if _, plus, minus, ok := flagSets(sig); ok {
		out := "flags"
		if len(minus) > 0 {
			out += "+" + strings.Join(minus, ",")
		}
		if len(plus) > 0 {
			out += "-" + strings.Join(plus, ",")
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
