package runner

import "fmt"

// LaunchEventer is an Impl whose launches may fail for reasons outside it
// and be tried again (a kernel booted in a guest on a loaded machine,
// plugins/host): each such launch is an infrastructure event of the run,
// never a finding.
type LaunchEventer interface {
	// LaunchEvents returns, and forgets, the launches that failed and
	// were tried again since the last call, one line each.
	LaunchEvents() []string
}

// launchEvents records the launch events of every side of pairs as
// infrastructure events; next is the first script not yet accounted for.
func (c *collector) launchEvents(pairs []*Pair, next int) {
	for _, p := range pairs {
		for _, s := range []Side{p.A, p.B} {
			le, ok := s.Impl.(LaunchEventer)
			if !ok {
				continue
			}
			for _, line := range le.LaunchEvents() {
				c.res.Infrastructure++
				e := Event{Side: s.Name, Error: line, Index: next,
					Reason: "a launch failed for reasons outside the side (a guest not ready in time, or one that did not answer) and was tried again: not a finding"}
				c.res.Events = append(c.res.Events, e)
				if c.o.Progress != nil {
					fmt.Fprintf(c.o.Progress, "ipcfuzz: infrastructure event: %s: %s; %s\n", s.Name, line, e.Reason)
				}
			}
		}
	}
}
