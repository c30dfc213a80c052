package shm

import (
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// forkTask forks a task, most often one holding an attachment, into a free
// slot: the child's copies of its attachments (where the kernel chose, and
// in its window at the same pages) count in nattch until the child detaches
// them or exits.
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
	op := s.Slots.Fork(src, parent)
	child := int(op.ForkChild())
	if s.Slots[child] {
		return op // EBUSY
	}
	p := int(parent)
	var copies []*attachment
	for _, a := range s.attOrder {
		if at := s.atts[a]; at.live && at.task == p && at.gen == s.gen[p] {
			c := *at
			c.origin = a
			copies = append(copies, &c)
		}
	}
	for _, at := range s.copies {
		if at.live && at.task == p && at.gen == s.gen[p] {
			c := *at
			copies = append(copies, &c)
		}
	}
	for _, c := range copies {
		c.task, c.gen = child, s.gen[child]
		c.seg.nattch++
		s.copies = append(s.copies, c)
	}
	return op
}

// copyOf is the live copy task holds of the attachment handle a names,
// or nil.
func (s *Shadow) copyOf(a, task int) *attachment {
	for _, at := range s.copies {
		if at.live && at.origin == a && at.task == task && at.gen == s.gen[task] {
			return at
		}
	}
	return nil
}
