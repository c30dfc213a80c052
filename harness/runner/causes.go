package runner

import (
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
// script with no such operation is keyed by its signature.
func CauseKey(subsystem string, script []ops.Op, d *equiv.Divergence, sig string) string {
	step := d.Step
	if step < 0 || step > len(script) {
		step = len(script)
	}
	if step < len(script) && !ops.Observes(script[step]) {
		return subsystem + ": " + ops.Cause(script[step])
	}
	for i := step - 1; i >= 0; i-- {
		if !ops.Observes(script[i]) {
			return subsystem + ": " + ops.Cause(script[i])
		}
	}
	return sig
}

// groupCauses groups findings by their cause, in order of first
// appearance; a finding without a cause key is a cause of its own.
func groupCauses(findings []Finding) []Cause {
	out := []Cause{}
	at := map[string]int{}
	for _, f := range findings {
		key := f.Cause
		if key == "" {
			key = f.Signature
		}
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
