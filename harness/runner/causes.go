package runner

import (
	"slices"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Cause is one cause a run found: the findings whose shrunk scripts
// diverge first at operations of one cause key (ops.Cause: the same kind
// and the arguments that choose what it does), each signature with its
// hits. One bug that shows under several signatures (a msgrcv that finds
// no message where it should: ok-blocked, E2BIG-ENOMSG, ok-ENOMSG) is one
// cause; every signature keeps its finding file.
type Cause struct {
	Key        string           `json:"key"`
	Signatures []CauseSignature `json:"signatures"`
	Hits       int              `json:"hits"`
}

// CauseSignature is one signature of a cause: its hits and its finding
// file ("" when it could not be stored).
type CauseSignature struct {
	Signature string `json:"signature"`
	Hits      int    `json:"hits"`
	File      string `json:"file"`
}

// CauseKey is the cause key of a divergence d of a (shrunk) script: the
// subsystem and ops.Cause of the operation where the results first differ
// ("vma: seal", "msg: msgrcv msg type<0"); where the divergence is an
// observation (a layout step, a listing, the final state), of the last
// operation before it that is not one, which made what was observed. A
// script with no such operation is keyed by its signature. In the ids
// subsystem the IPC type word is left out (ops.UntypedCause). Where the
// sides differ only in which sleeping tasks an operation completed, or
// how, the cause is the call that task sleeps in (a msgrcv whose search
// misses a message shows when the msgsnd that should wake it does not).
func CauseKey(subsystem string, script []ops.Op, outs [2]ops.Outcome, d *equiv.Divergence, sig string) string {
	at := causeAt(script, outs, d)
	if at < 0 {
		return sig
	}
	return subsystem + ": " + causeWords(subsystem, script[at], nil)
}

// causeWords is the cause key of op without its subsystem, the values of
// the arguments in wild written "*" (ops.GeneralCause).
func causeWords(subsystem string, op ops.Op, wild map[int]bool) string {
	return ops.GeneralCause(op, subsystem != "ids", wild)
}

// causeAt is the index in script of the call CauseKey keys divergence d
// by; -1 when there is none (the key is then the signature).
func causeAt(script []ops.Op, outs [2]ops.Outcome, d *equiv.Divergence) int {
	step := d.Step
	if step < 0 || step > len(script) {
		step = len(script)
	}
	if i := sleeper(script, outs, step); i >= 0 {
		step = i
	}
	if step < len(script) && !ops.Observes(script[step]) {
		return step
	}
	for i := step - 1; i >= 0; i-- {
		if !ops.Observes(script[i]) {
			return i
		}
	}
	return -1
}

// sleeper is the index of the sleeping call whose completion differs at
// step, where the two results at step differ only in their completions;
// -1 otherwise.
func sleeper(script []ops.Op, outs [2]ops.Outcome, step int) int {
	ra, rb := outs[0].Results, outs[1].Results
	if step >= len(script) || step >= len(ra) || step >= len(rb) {
		return -1
	}
	a, b := ra[step], rb[step]
	if slices.Equal(a.Done, b.Done) {
		return -1
	}
	a.Done, b.Done = nil, nil
	if ops.FormatResult(script[step], a) != ops.FormatResult(script[step], b) {
		return -1
	}
	task, ok := firstDifferentCompletion(ra[step].Done, rb[step].Done)
	if !ok {
		return -1
	}
	for i := step - 1; i >= 0; i-- {
		if script[i].Task == task && (ra[i].Blocked || rb[i].Blocked) {
			return i
		}
	}
	return -1
}

// firstDifferentCompletion is the lowest task completed differently (or
// on one side only) in a and b.
func firstDifferentCompletion(a, b []ops.Completion) (uint8, bool) {
	of := func(cs []ops.Completion, t uint8) (ops.Completion, bool) {
		for _, c := range cs {
			if c.Task == t {
				return c, true
			}
		}
		return ops.Completion{}, false
	}
	for t := uint8(0); t <= ops.MaxTask; t++ {
		ca, okA := of(a, t)
		cb, okB := of(b, t)
		if okA != okB || ca != cb {
			return t, true
		}
	}
	return 0, false
}

// groupCauses groups findings by their cause, in order of first
// appearance; a finding without a cause key is a cause of its own. A key
// with an argument of any value ("vma: protect *", ops.GeneralCause)
// takes in every finding whose key it covers, and the cause is named by
// it.
func groupCauses(findings []Finding) []Cause {
	keyOf := func(f Finding) string {
		if f.Cause == "" {
			return f.Signature
		}
		return f.Cause
	}
	var general []string
	for _, f := range findings {
		if k := keyOf(f); strings.Contains(k, "*") && !slices.Contains(general, k) {
			general = append(general, k)
		}
	}
	group := func(key string) string {
		sub, words, ok := strings.Cut(key, ": ")
		if !ok {
			return key
		}
		for _, g := range general {
			gsub, gwords, _ := strings.Cut(g, ": ")
			if gsub == sub && ops.CauseCovers(gwords, words) {
				return g
			}
		}
		return key
	}
	out := []Cause{}
	at := map[string]int{}
	for _, f := range findings {
		key := group(keyOf(f))
		k, ok := at[key]
		if !ok {
			k = len(out)
			at[key] = k
			out = append(out, Cause{Key: key})
		}
		c := &out[k]
		c.Signatures = append(c.Signatures, CauseSignature{Signature: f.Signature, Hits: f.Hits, File: f.Script})
		c.Hits += f.Hits
	}
	return out
}
