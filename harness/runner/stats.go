package runner

import "github.com/ipcfuzz/ipcfuzz/harness/ops"

// ScriptStat is what one script's results show about tasks that block.
type ScriptStat struct {
	// BlockedThenCompleted: a task's call blocked and a later operation
	// completed it.
	BlockedThenCompleted bool
	// Race: an operation had several allowed outcomes (woken tasks racing),
	// as the model that computed the results counted them.
	Race bool
}

// ScriptStats reads the statistics of one script from its results. Only the
// operations up to the first race count for BlockedThenCompleted: after a
// race the path depends on the kernel's scheduling, and the same seed must
// give the same statistics.
func ScriptStats(script []ops.Op, results []ops.Result) ScriptStat {
	var st ScriptStat
	var blocked [ops.NumTasks]bool
	for i, r := range results {
		for _, c := range r.Done {
			if int(c.Task) < len(blocked) && blocked[c.Task] {
				st.BlockedThenCompleted = true
				blocked[c.Task] = false
			}
		}
		if r.Blocked && i < len(script) && int(script[i].Task) < len(blocked) {
			blocked[script[i].Task] = true
		}
		if r.Alternatives > 1 {
			st.Race = true
			break
		}
	}
	return st
}

// Stats counts, over a run, the scripts with each property.
type Stats struct {
	BlockedThenCompleted int `json:"blocked_then_completed"`
	Races                int `json:"races"`
}

func (s *Stats) add(script []ops.Op, outs ...ops.Outcome) {
	var any ScriptStat
	for _, o := range outs {
		st := ScriptStats(script, o.Results)
		any.BlockedThenCompleted = any.BlockedThenCompleted || st.BlockedThenCompleted
		any.Race = any.Race || st.Race
	}
	if any.BlockedThenCompleted {
		s.BlockedThenCompleted++
	}
	if any.Race {
		s.Races++
	}
}
