package engine

import "github.com/ipcfuzz/ipcfuzz/harness/ops"

// Progress is what a shadow of a subsystem with tasks keeps of the script
// drawn so far, besides its objects: the highest task the script names,
// the next handle, the swarm weights, the operations planned ahead (a race
// set up at the start, the rest of a scenario or of a visit to another
// namespace), the task slots used (for a fork's child) and the tasks in
// another IPC namespace. A shadow embeds it.
type Progress struct {
	// Span is the highest task the script names (DrawTaskSpan).
	Span       int
	NextHandle int
	Swarm      Swarm
	// Plan holds operations drawn ahead, which a step hands out first.
	Plan  Plan
	Slots Slots
	Away  Away
}

// NewProgress returns the progress of a fresh script with swarm weights w,
// and the task span drawn from src.
func NewProgress(src Source, w Swarm) Progress {
	return Progress{Swarm: w, Span: DrawTaskSpan(src)}
}

// Note records what op does to the task slots and namespaces; a shadow's
// Step ends with it.
func (p *Progress) Note(op ops.Op) ops.Op {
	p.Slots.Note(op)
	p.Away.Note(op)
	return op
}

// Copy returns a copy that shares no plan with p.
func (p Progress) Copy() Progress {
	p.Plan = p.Plan.Copy()
	return p
}
