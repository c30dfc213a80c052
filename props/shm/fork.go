package shm

import (
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// forkTask forks a task, most often one holding an attachment, into a free
// slot: the child's copies count in nattch.
func (s *Shadow) forkTask(src engine.Source) ops.Op {
	var holders []uint8
	for _, a := range s.attOrder {
		if at := s.atts[a]; at.live && at.task > 0 && at.gen == s.gen[at.task] {
			holders = append(holders, uint8(at.task))
		}
	}
	parent := uint8(1 + src.Intn(ops.MaxTask, "parent"))
	if len(holders) > 0 && src.Intn(4, "a holder?") != 0 {
		parent = engine.Pick(src, holders, "holder")
	}
	op := s.slots.Fork(src, parent)
	if !s.slots[op.ForkChild()] {
		for _, a := range s.attOrder {
			if at := s.atts[a]; at.live && at.task == int(parent) && at.gen == s.gen[parent] {
				at.seg.nattch++
			}
		}
	}
	return op
}
