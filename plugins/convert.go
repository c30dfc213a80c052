package plugins

import (
	"fmt"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	ipcfuzzv1 "github.com/ipcfuzz/ipcfuzz/plugins/proto/ipcfuzz/v1"
)

// The envelopes: protobuf messages around the packed vocabulary. Nil and
// empty are one and the same here (a nil map or slice is what comes out).

// InfoToProto converts an ops.Info, naming this build's packed layout.
func InfoToProto(info ops.Info) *ipcfuzzv1.Info {
	return &ipcfuzzv1.Info{
		Name: info.Name, Version: info.Version, Subsystems: info.Subsystems,
		ExactIds: info.ExactIDs, Blocking: info.Blocking, Counters: info.Counters, Follows: info.Follows,
		PackedLayout: LayoutVersion(), Facts: info.Facts.Map(), Notes: info.Notes,
	}
}

// InfoFromProto converts back, refusing a plugin that speaks another packed
// layout than this host.
func InfoFromProto(m *ipcfuzzv1.Info) (ops.Info, error) {
	if m == nil {
		return ops.Info{}, fmt.Errorf("no info")
	}
	if m.GetPackedLayout() != LayoutVersion() {
		return ops.Info{}, fmt.Errorf("it speaks packed layout %q, this host %q: rebuild it against this version of ipcfuzz", clipped(m.GetPackedLayout()), LayoutVersion())
	}
	// A fact this build does not know is one a newer plugin models and
	// this host cannot hand on: it is left out.
	facts, _ := ops.FactsFromMap(m.GetFacts())
	return ops.Info{
		Name: m.GetName(), Version: m.GetVersion(), Subsystems: m.GetSubsystems(),
		ExactIDs: m.GetExactIds(), Blocking: m.GetBlocking(), Counters: m.GetCounters(), Follows: m.GetFollows(),
		Facts: facts, Notes: m.GetNotes(),
	}, nil
}

func clipped(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// ConfigToProto converts an ops.Config.
func ConfigToProto(cfg ops.Config) *ipcfuzzv1.Config {
	m := &ipcfuzzv1.Config{Options: cfg.Options, Facts: cfg.Facts.Map()}
	if cfg.Observe.Any() {
		m.Observe = &ipcfuzzv1.Observing{Time: cfg.Observe.Time, Cover: cfg.Observe.Cover}
	}
	return m
}

// ConfigFromProto converts back; the options are never nil. A fact this
// build does not know is left out: no model here depends on it.
func ConfigFromProto(m *ipcfuzzv1.Config) ops.Config {
	opts := map[string]string{}
	for k, v := range m.GetOptions() {
		opts[k] = v
	}
	facts, _ := ops.FactsFromMap(m.GetFacts())
	obs := m.GetObserve()
	return ops.Config{Options: opts, Facts: facts, Observe: ops.Observing{Time: obs.GetTime(), Cover: obs.GetCover()}}
}

// OutcomesToProto packs outcomes.
func OutcomesToProto(outs []ops.Outcome) []*ipcfuzzv1.Outcome {
	ms := make([]*ipcfuzzv1.Outcome, len(outs))
	for i, o := range outs {
		ms[i] = &ipcfuzzv1.Outcome{Results: PackResults(o.Results), Snapshot: PackSnapshot(o.Snapshot), Observed: PackObserved(o.Observed)}
	}
	return ms
}

// OutcomesFromProto unpacks outcomes.
func OutcomesFromProto(ms []*ipcfuzzv1.Outcome) ([]ops.Outcome, error) {
	out := make([]ops.Outcome, len(ms))
	for i, m := range ms {
		rs, err := UnpackResults(m.GetResults())
		if err != nil {
			return nil, fmt.Errorf("outcome %d: %w", i+1, err)
		}
		snap, err := UnpackSnapshot(m.GetSnapshot())
		if err != nil {
			return nil, fmt.Errorf("outcome %d: %w", i+1, err)
		}
		obs, err := UnpackObserved(m.GetObserved())
		if err != nil {
			return nil, fmt.Errorf("outcome %d: %w", i+1, err)
		}
		out[i] = ops.Outcome{Results: rs, Snapshot: snap, Observed: obs}
	}
	return out, nil
}

// ScriptsToProto packs scripts.
func ScriptsToProto(scripts [][]ops.Op) [][]byte {
	ms := make([][]byte, len(scripts))
	for i, s := range scripts {
		ms[i] = PackOps(s)
	}
	return ms
}

// ScriptsFromProto unpacks scripts.
func ScriptsFromProto(ms [][]byte) ([][]ops.Op, error) {
	out := make([][]ops.Op, len(ms))
	for i, m := range ms {
		s, err := UnpackOps(m)
		if err != nil {
			return nil, fmt.Errorf("script %d: %w", i+1, err)
		}
		out[i] = s
	}
	return out, nil
}
