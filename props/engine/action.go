package engine

import "github.com/ipcfuzz/ipcfuzz/harness/ops"

// Action is one named thing a generator can do next, given its shadow S:
// how often (Weight, scaled by the script's swarm), when it makes sense
// (When; nil: always) and what it draws (Draw, which advances the shadow by
// the operation's expected effect). A scenario is an action whose Draw
// returns its first operation and puts the rest in the shadow's Plan.
type Action[S any] struct {
	Name   string
	Weight int
	When   func(S) bool
	Draw   func(S, Source) ops.Op
}

// Actions is a generator's table of actions. An action's index in the
// table is its swarm slot, so a script's swarm has len(table) weights.
type Actions[S any] []Action[S]

// Swarm draws the swarm weights of one script for the table (NewSwarm).
func (as Actions[S]) Swarm(src Source) Swarm { return NewSwarm(src, len(as)) }

// Choose draws one of the actions whose When holds for s, each weighted by
// its Weight times its swarm weight; when the swarm leaves out every
// action that makes sense now, by Weight alone. It returns nil when no
// action makes sense.
func (as Actions[S]) Choose(src Source, w Swarm, s S) *Action[S] {
	var ok []int
	total, plain := 0, 0
	for i := range as {
		if as[i].When != nil && !as[i].When(s) {
			continue
		}
		ok = append(ok, i)
		total += as[i].Weight * w.weight(i)
		plain += as[i].Weight
	}
	if len(ok) == 0 {
		return nil
	}
	swarmed := total > 0
	if !swarmed {
		total = plain
	}
	k := src.Intn(total, "action")
	for _, i := range ok {
		wt := as[i].Weight
		if swarmed {
			wt *= w.weight(i)
		}
		if k -= wt; k < 0 {
			return &as[i]
		}
	}
	return &as[ok[len(ok)-1]]
}

// Step chooses an action (Choose) and draws it; ok is false when no action
// makes sense.
func (as Actions[S]) Step(src Source, w Swarm, s S) (op ops.Op, ok bool) {
	a := as.Choose(src, w, s)
	if a == nil {
		return ops.Op{}, false
	}
	return a.Draw(s, src), true
}

// Plan is the rest of a scenario an earlier step began: operations drawn
// ahead, which a shadow's Step hands out before it draws anything new.
type Plan struct {
	next []ops.Op
}

// Add appends operations to the plan.
func (p *Plan) Add(op ...ops.Op) { p.next = append(p.next, op...) }

// Next takes the plan's first operation; ok is false when the plan is empty.
func (p *Plan) Next() (op ops.Op, ok bool) {
	if len(p.next) == 0 {
		return ops.Op{}, false
	}
	op = p.next[0]
	p.next = p.next[1:]
	return op, true
}

// Len is the number of operations still planned.
func (p *Plan) Len() int { return len(p.next) }

// Copy returns an independent copy (a shadow's Copy copies its plan).
func (p Plan) Copy() Plan { return Plan{next: append([]ops.Op(nil), p.next...)} }
