package engine_test

import (
	"fmt"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// queues is a toy shadow: it knows which message queues the script made,
// and removes the last one or makes another.
type queues struct {
	live []int // handles of the live queues
	next int   // the last handle bound
}

func (q *queues) Step(src engine.Source) ops.Op {
	if len(q.live) > 0 && src.Intn(2, "remove") == 0 {
		h := q.live[len(q.live)-1]
		q.live = q.live[:len(q.live)-1]
		return ops.Op{Kind: ops.KindRmid, Type: ops.Msg, Obj: ops.Ref{Handle: h}}
	}
	q.next++
	q.live = append(q.live, q.next)
	return ops.Op{Kind: ops.KindGet, Type: ops.Msg, Mode: 0o600, Bind: q.next}
}

func (q *queues) Copy() engine.Shadow {
	return &queues{live: append([]int(nil), q.live...), next: q.next}
}

// A subsystem is described once, by its shadow (the generator); every
// engine draws from it: rapid and gopter for compare, fuzz bytes for
// go test -fuzz (one byte a choice). The same bytes draw the same script.
func ExampleSubsystem_DrawFuzz() {
	sub := engine.Subsystem{
		Name: "ids", MinLen: 1, MaxLen: 8, FuzzMaxLen: 6,
		NewShadow: func(engine.Source, equiv.Relation) engine.Shadow { return &queues{} },
	}
	script := sub.DrawFuzz(&engine.ByteSource{Data: []byte{3, 1, 0, 1, 0, 0, 1, 0}})
	fmt.Print(ops.Format(ops.NewScript(sub.Name, script)))
	// Output:
	// subsystem ids
	// h1 = get msg key=0x0 mode=0600
	// h2 = get msg key=0x0 mode=0600
	// rmid msg h2
	// h3 = get msg key=0x0 mode=0600
}
