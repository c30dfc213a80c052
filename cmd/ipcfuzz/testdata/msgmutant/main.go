// Command msgmutant is a test-only implementation plugin: the optimized
// model with one deliberate message-queue bug, chosen when it is built
// (or, without one, by $IPCFUZZ_MUTATION at run time):
//
//	go build -ldflags "-X main.mutation=fits" ./cmd/ipcfuzz/testdata/msgmutant
//
// fits: the fits test with < instead of <=; lifo: receivers served newest
// first; e2big: a receiver too small for a message is left asleep; text: a
// received text with its last letter changed (same length); noerror: a
// message truncated under MSG_NOERROR to its tail instead of its head;
// idfirst: msgsnd looks the queue up before it reads the message, so a bad
// buffer sent to no queue gives EINVAL where the kernel's gives EFAULT.
package main

import (
	"fmt"
	"os"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls"
	"github.com/ipcfuzz/ipcfuzz/impls/ipcns"
	"github.com/ipcfuzz/ipcfuzz/impls/msgq"
	"github.com/ipcfuzz/ipcfuzz/impls/optimized"
	"github.com/ipcfuzz/ipcfuzz/plugins"
)

// mutation is set with -ldflags "-X main.mutation=..." or, in a build
// without it, by $IPCFUZZ_MUTATION (the tests build the mutant once and
// choose the mutation per run).
var mutation string

// received is the namespace with what a receiver gets rewritten.
type received struct {
	*ipcns.Namespace
	rewrite func(op ops.Op, m ops.Message) ops.Message
}

func (r received) Apply(op ops.Op) (ops.Result, error) { return r.ApplyFollowing(op, nil) }

func (r received) ApplyFollowing(op ops.Op, other *ops.Result) (ops.Result, error) {
	res, err := r.Namespace.ApplyFollowing(op, other)
	if op.Kind == ops.KindMsgrcv && res.Err == ops.OK && !res.Blocked {
		res.Msg = r.rewrite(op, res.Msg)
	}
	return res, err
}

// idFirst is the namespace whose msgsnd checks the id before it copies the
// message in.
type idFirst struct{ *ipcns.Namespace }

func (r idFirst) Apply(op ops.Op) (ops.Result, error) { return r.ApplyFollowing(op, nil) }

func (r idFirst) ApplyFollowing(op ops.Op, other *ops.Result) (ops.Result, error) {
	if op.Kind == ops.KindMsgsnd && op.BadBuf {
		snap, err := r.Snapshot()
		if err != nil {
			return ops.Result{}, err
		}
		live := false
		for _, o := range snap.ObjectsOf(ops.Msg) {
			live = live || o.ID == int64(int32(op.Obj.ID))
		}
		if !live {
			return ops.Result{Err: ops.EINVAL}, nil
		}
	}
	return r.Namespace.ApplyFollowing(op, other)
}

func lastLetterChanged(_ ops.Op, m ops.Message) ops.Message {
	if n := len(m.Text); n > 0 {
		b := []byte(m.Text)
		b[n-1] = 'a' + (b[n-1]-'a'+1)%26
		m.Text = string(b)
	}
	return m
}

// tailUnderNoerror gives a truncated message's last bytes: the text is
// MsgText(fill, size), so its tail is the same letters shifted.
func tailUnderNoerror(op ops.Op, m ops.Message) ops.Message {
	if op.MsgFlags&ops.MsgNoerror != 0 && int64(len(m.Text)) == op.Size && op.Size > 0 {
		b := []byte(m.Text)
		for i := range b {
			b[i] = 'a' + (b[i]-'a'+3)%26
		}
		m.Text = string(b)
	}
	return m
}

func main() {
	if mutation == "" {
		mutation = os.Getenv("IPCFUZZ_MUTATION")
	}
	ns := ipcns.New(func() ipcns.Table { return optimized.NewIDR() }, ipcns.Cyclic)
	var m ops.Model = ns
	quirks := map[string]msgq.Quirk{"fits": msgq.QuirkFitsStrict, "lifo": msgq.QuirkReceiversLIFO, "e2big": msgq.QuirkE2BIGStays}
	switch q, ok := quirks[mutation]; {
	case ok:
		ns.SetMsgQuirks(q)
	case mutation == "text":
		m = received{ns, lastLetterChanged}
	case mutation == "noerror":
		m = received{ns, tailUnderNoerror}
	case mutation == "idfirst":
		m = idFirst{ns}
	default:
		fmt.Fprintf(os.Stderr, "msgmutant: built without a known mutation (%q)\n", mutation)
		os.Exit(2)
	}
	info := impls.Compose(impls.IPCPart(m, ipcns.Options)).Describe(ops.Info{Name: "msgmutant-" + mutation, Version: "test", ExactIDs: true})
	plugins.Serve(ops.NewLocal(info, m))
}
