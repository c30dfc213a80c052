package ops

import "context"

// WireOutcome is one script's outcome as an implementation sent it over a
// wire, before it is decoded: its results and its final snapshot, each in
// the packed form of plugins/PROTOCOL.md, and its observations (the side
// channel; empty unless the run asked for them).
type WireOutcome struct {
	Results, Snapshot []byte
	Observed          []byte
}

// Same reports whether two wire outcomes are the same bytes: their results
// and snapshots. Observations are not compared: two sides that answered
// alike are the same however long each took.
func (w WireOutcome) Same(o WireOutcome) bool {
	return string(w.Results) == string(o.Results) && string(w.Snapshot) == string(o.Snapshot)
}

// Wire is implemented by an Impl whose scripts and outcomes travel as bytes
// (a plugin). Two sides that speak the same Layout let the runner pack a
// batch of scripts once for both, and decode an outcome once when both sent
// the same bytes: decoding is a function, so equal bytes are equal
// outcomes.
type Wire interface {
	Impl
	// Layout names the packed layout; sides with equal layouts read each
	// other's bytes.
	Layout() string
	// PackScripts encodes scripts for ExecPacked.
	PackScripts(scripts [][]Op) [][]byte
	// ExecPacked is Exec (without following) of scripts packed by
	// PackScripts, whose lengths are lens: each outcome as it came. With a
	// failure of the implementation it also returns the outcomes of the
	// scripts before the failing one, as Exec does.
	ExecPacked(ctx context.Context, cfg Config, packed [][]byte, lens []int) ([]WireOutcome, error)
	// Decode turns the wire outcome of script (its index in the batch,
	// for the error), which has n operations, into an Outcome; an error
	// says the bytes do not fit (the side answered garbage), as Exec would
	// have said.
	Decode(w WireOutcome, script, n int) (Outcome, error)
	// DecodeObserved decodes the observations of w alone (Decode does
	// too): for an outcome whose results and snapshot another side sent
	// as the same bytes, and which were decoded from that side's.
	DecodeObserved(w WireOutcome, script, n int) ([]Observation, error)
}
