package shm

import (
	"fmt"

	"pgregory.net/rapid"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/ids"
)

// Machine is the rapid state machine of the shm subsystem: after every step
// both sides' snapshots must satisfy the shm invariants and the outcomes so
// far must agree under the pair's relation.
func Machine(p ids.Pair) func(*rapid.T) {
	return ids.RunMachine(p, func(*rapid.T) ids.Stepper { return NewShadow(p.Relation) }, CheckInvariants)
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
