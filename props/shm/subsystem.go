package shm

import (
	"fmt"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// Subsystem is the shm subsystem in the registry.
var Subsystem = engine.Subsystem{
	Name:       "shm",
	Doc:        "shared memory: shmget, shmat/shmdt by several tasks, shmctl, IPC_RMID while attached, task exit, shm_rmid_forced, /proc/sysvipc rows",
	NewShadow:  func(src engine.Source, rel equiv.Relation) engine.Shadow { return NewShadow(src, rel) },
	MinLen:     1,
	MaxLen:     MaxLen,
	FuzzMaxLen: 64,
	Invariant:  CheckInvariants,
	Relations:  []equiv.Relation{equiv.Exact, equiv.IDsRenamed},
}

// Copy implements engine.Shadow.
func (s *Shadow) Copy() engine.Shadow { return s.clone() }

// clone copies the shadow so that gopter's states are never shared.
func (s *Shadow) clone() *Shadow {
	c := *s
	c.Progress = s.Progress.Copy()
	segs := map[*segment]*segment{}
	cp := func(g *segment) *segment {
		if g == nil {
			return nil
		}
		if n, ok := segs[g]; ok {
			return n
		}
		n := *g
		segs[g] = &n
		return &n
	}
	c.segs, c.keys, c.atts = map[int]*segment{}, map[int32]*segment{}, map[int]*attachment{}
	for h, g := range s.segs {
		c.segs[h] = cp(g)
	}
	for k, g := range s.keys {
		c.keys[k] = cp(g)
	}
	for a, at := range s.atts {
		n := *at
		n.seg = cp(at.seg)
		c.atts[a] = &n
	}
	c.segOrder = append([]int(nil), s.segOrder...)
	c.attOrder = append([]int(nil), s.attOrder...)
	return &c
}

// CheckInvariants checks what must hold of every shm state: each segment's
// nattch is the number of live attachments of it, a segment marked SHM_DEST
// has key IPC_PRIVATE and at least one attachment, every attachment is of a
// live segment, and shm_tot is the pages of the live segments.
func CheckInvariants(s ops.Snapshot) error {
	attached := map[int64]int64{}
	for _, a := range s.Shm.Attachments {
		if a.NS == 0 { // a segment of another namespace is listed there
			attached[a.ID]++
		}
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
