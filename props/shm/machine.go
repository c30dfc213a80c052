package shm

import (
	"context"
	"fmt"

	"pgregory.net/rapid"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/ids"
)

// Machine is the rapid state machine: every step draws one operation from
// the shadow and applies it to both sides; after every step both sides'
// snapshots must satisfy the shm invariants and the outcomes so far must
// agree under the pair's relation.
func Machine(p ids.Pair) func(*rapid.T) {
	return func(t *rapid.T) {
		ctx := context.Background()
		if err := p.A.Reset(ctx, p.CfgA); err != nil {
			t.Fatalf("reset A: %v", err)
		}
		if err := p.B.Reset(ctx, p.CfgB); err != nil {
			t.Fatalf("reset B: %v", err)
		}
		shadow := NewShadow(p.Relation)
		var script []ops.Op
		var outA, outB ops.Outcome
		t.Repeat(map[string]func(*rapid.T){
			"step": func(t *rapid.T) {
				op := shadow.Step(ids.RapidSource{T: t})
				t.Log(ops.FormatOp(op))
				ra, err := p.A.Apply(ctx, []ops.Op{op})
				if err != nil {
					t.Fatalf("A: %v", err)
				}
				rb, err := p.B.Apply(ctx, []ops.Op{op})
				if err != nil {
					t.Fatalf("B: %v", err)
				}
				script = append(script, op)
				outA.Results = append(outA.Results, ra...)
				outB.Results = append(outB.Results, rb...)
			},
			"": func(t *rapid.T) {
				var err error
				if outA.Snapshot, err = p.A.Snapshot(ctx); err != nil {
					t.Fatalf("snapshot A: %v", err)
				}
				if outB.Snapshot, err = p.B.Snapshot(ctx); err != nil {
					t.Fatalf("snapshot B: %v", err)
				}
				for side, s := range []ops.Snapshot{outA.Snapshot, outB.Snapshot} {
					if err := CheckInvariants(s); err != nil {
						t.Fatalf("%s: %v", "AB"[side:side+1], err)
					}
				}
				if d := equiv.Compare(p.Relation, script, outA, outB); d != nil {
					t.Fatalf("divergence: %v", d)
				}
			},
		})
	}
}

// CheckInvariants checks what must hold of every shm state: each segment's
// nattch is the number of live attachments of it, a segment marked SHM_DEST
// has key IPC_PRIVATE and at least one attachment, every attachment is of a
// live segment, and shm_tot is the pages of the live segments.
func CheckInvariants(s ops.Snapshot) error {
	attached := map[int64]int64{}
	for _, a := range s.Shm.Attachments {
		attached[a.ID]++
	}
	var pages int64
	live := map[int64]bool{}
	for _, r := range s.Rows[ops.Shm] {
		live[r.ID] = true
		pages += ops.Pages(r.Size)
		if r.Nattch != attached[r.ID] {
			return fmt.Errorf("segment %d: nattch %d, %d live attachments", r.ID, r.Nattch, attached[r.ID])
		}
		if r.Mode&ops.ShmDest != 0 && (r.Key != ops.IPCPrivate || r.Nattch == 0) {
			return fmt.Errorf("segment %d: SHM_DEST with key %#x and nattch %d", r.ID, uint32(r.Key), r.Nattch)
		}
	}
	for id := range attached {
		if !live[id] {
			return fmt.Errorf("an attachment of segment %d, which is not listed", id)
		}
	}
	if pages != s.Shm.Tot {
		return fmt.Errorf("shm_tot %d, live segments have %d pages", s.Shm.Tot, pages)
	}
	return nil
}
