// Package runner runs the same scripts on two implementations in lockstep
// batches, compares every result and the final state under an equivalence,
// shrinks divergences to minimal scripts and stores them in the corpus. A
// plugin that crashes, hangs or answers garbage is a finding too: the script
// that triggers it is stored and the run goes on with a fresh plugin.
//
// Several pairs of implementations (jobs) may share the work; script i is
// the same script whatever their number, results are taken in script order,
// and so the verdict, the counts and the first divergence do not depend on
// how many jobs ran.
package runner

import (
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// Options configure a run.
type Options struct {
	// Pairs are the pairs of the two implementations compared, one per
	// job; each has processes (and kernel namespaces) of its own. They
	// compare one subsystem's scripts under one relation.
	Pairs []*Pair
	// Source draws the scripts (Seeded: from their seed alone); a
	// Learner is told what each script did, in script order.
	Source   Source
	Seed     uint64
	Checks   int           // scripts to run; 0 with Duration means "until the time is up"
	Duration time.Duration // stop after this long (0: no limit)
	Batch    int           // scripts per Exec call (default 256)
	Corpus   string        // directory for findings ("" stores nothing)
	Command  string        // the command line, recorded in findings
	// Engine names the generator, and Version and Revision the ipcfuzz
	// that runs (its module version and VCS revision), for the headers of
	// findings and the result.
	Engine, Version, Revision string
	Progress                  io.Writer // progress lines (nil: none)
	Report                    io.Writer // divergence reports for humans (nil: none)
	// Stats counts the scripts that had a task blocked and later completed,
	// and those with a race (see ScriptStats).
	Stats bool
	// Observe asks both sides of every pair for these observations of
	// each operation (the side channel, ops.Observation): Run sets it in
	// the sides' Config. Observations are never compared. With Time,
	// the result has each operation kind's median time inside each side
	// (Result.Timing).
	Observe ops.Observing
	// KeepGoing records every divergence instead of stopping at the
	// first: each signature is shrunk once and counted every time it
	// recurs.
	KeepGoing bool
	// Known declares the differences the kernels' versions explain
	// (corpus.Known): a divergence one of its entries explains is
	// counted apart (Result.Expected), never shrunk, stored or counted
	// as a divergence, and does not stop the run.
	Known *corpus.Known
	// Sink is told of the run as it goes: its start, every script's
	// verdict, every finding and its end (nil: nothing is told).
	Sink Sink
}

// Result summarizes a run. Checks counts the scripts that were compared on
// both sides, and nothing else.
type Result struct {
	A           string  `json:"a"`
	B           string  `json:"b"`
	Subsystem   string  `json:"subsystem"`
	Checks      int     `json:"checks"`
	Ops         int     `json:"ops"`
	Divergences int     `json:"divergences"`
	Failures    int     `json:"plugin_failures"`
	Seconds     float64 `json:"seconds"`
	OpsPerSec   float64 `json:"ops_per_sec"`
	// Interrupted: the run was stopped (Ctrl-C, SIGTERM) before its end;
	// the counts are what was compared until then.
	Interrupted bool     `json:"interrupted"`
	Scripts     []string `json:"scripts"`
	// Findings groups what was found by signature, in order of first
	// appearance.
	Findings []Finding `json:"findings"`
	// Causes groups the findings by cause (Cause), in order of first
	// appearance: what a developer triages, one entry per bug.
	Causes []Cause `json:"causes"`
	// Seed, Engine and Relation are the run's; Kernel the release of its
	// kernel side(s) ("" when none; both, joined by a comma, when they
	// differ), and KernelA and KernelB the release each side ran (""
	// for a model): what actually ran, whatever the command line said.
	Seed     uint64 `json:"seed"`
	Engine   string `json:"engine"`
	Relation string `json:"relation"`
	Kernel   string `json:"kernel"`
	KernelA  string `json:"kernel_a"`
	KernelB  string `json:"kernel_b"`
	// Infrastructure counts the events that were not findings: a side
	// that failed (killed from outside: the OOM killer, kill -9) on a
	// batch of which no script failed again on a fresh plugin, alone.
	Infrastructure int     `json:"infrastructure"`
	Events         []Event `json:"infrastructure_events"`
	// Unstored counts the findings that could not be written under
	// Corpus: each is printed in full and kept in its Finding's Text.
	Unstored int `json:"unstored"`
	// Expected are the divergences known entries explained (Options.Known),
	// by entry in order of first appearance; StaleKnown the entries of
	// the run's subsystem that apply to its kernels and explained none
	// (empty for a run stopped early).
	Expected   []Expected           `json:"expected"`
	StaleKnown []*corpus.KnownEntry `json:"stale_known"`
	// Stats is filled in when Options.Stats asks for it.
	Stats *Stats `json:"stats,omitempty"`
	// Timing is, per operation kind in kind order, its median time
	// inside each side, from the observations; filled in when
	// Options.Observe.Time asks for them. Like Seconds, it is a
	// measurement: the same seed gives other figures.
	Timing []KindTiming `json:"timing,omitempty"`
	// Sides are, with Timing, each side's observations added up: its
	// operations, their time inside it and the system calls it entered
	// for them (counted by the kernel where the side can).
	Sides []SideTotal `json:"sides,omitempty"`
}

// Finding is one distinct thing a run found: a divergence or a plugin
// failure, its signature, its smallest script and how often it recurred.
type Finding struct {
	Signature string `json:"signature"`
	Kind      string `json:"kind"`
	Script    string `json:"script,omitempty"` // the corpus file, when one was written
	Index     int    `json:"index"`            // the first script (0-based) that showed it
	// Seconds is when the run first saw it, from its start (before its
	// shrink): a budget's time to the finding.
	Seconds float64 `json:"seconds"`
	Ops     int     `json:"ops"` // the length of its (shrunk) script
	Hits    int     `json:"hits"`
	// Cause is its cause key (CauseKey); the signature for a plugin
	// failure or a flaky divergence.
	Cause string `json:"cause"`
	// OutlivesReset: run again on restarted sides after the run, its
	// script agreed; it needed a state earlier scripts left in a side
	// (recheckFresh), and its Cause says so.
	OutlivesReset bool `json:"outlives_reset,omitempty"`
	// Text is the finding file's text when it could not be written
	// (StoreError says why); "" when it was.
	Text       string `json:"text,omitempty"`
	StoreError string `json:"store_error,omitempty"`
}

// Event is an infrastructure event: a side that failed in a way no script
// showed again (what a kill from outside looks like). It is not a finding.
type Event struct {
	Side   string `json:"side"`
	Error  string `json:"error"`
	Index  int    `json:"index"`   // the first script of the batch it failed on
	Batch  int    `json:"scripts"` // the scripts of that batch, each run again alone without failing
	Reason string `json:"reason"`
	// Stderr is the last lines the side wrote to its stderr (a guest's
	// console) before it failed, where it carries them.
	Stderr string `json:"stderr,omitempty"`
}

// Run compares the sides until Checks scripts have been compared, the time
// is up, a divergence is found (unless KeepGoing) or ctx ends; an ended ctx
// is not an error: the result says Interrupted. Options.Sink, if any, is
// told of the run as it goes (Sink).
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Batch <= 0 {
		o.Batch = 256
	}
	if len(o.Pairs) == 0 {
		return nil, errors.New("runner: no pair to run")
	}
	if o.Source == nil {
		return nil, errors.New("runner: no source of scripts")
	}
	first := o.Pairs[0]
	res := &Result{A: first.A.Name, B: first.B.Name, Subsystem: first.Subsystem, Scripts: []string{}, Findings: []Finding{}, Causes: []Cause{}, Expected: []Expected{}, StaleKnown: []*corpus.KnownEntry{},
		Seed: o.Seed, Engine: o.Engine, Relation: string(first.Relation), Kernel: first.KernelRelease(), KernelA: Release(first.A), KernelB: Release(first.B), Events: []Event{}}
	if o.Stats {
		res.Stats = &Stats{}
	}
	if o.Sink != nil {
		o.Sink.Start(Start{Command: o.Command, A: res.A, B: res.B, KernelA: res.KernelA, KernelB: res.KernelB, Subsystem: res.Subsystem,
			Relation: res.Relation, Engine: o.Engine, Seed: o.Seed, Checks: o.Checks, KeepGoing: o.KeepGoing})
	}
	start := time.Now()
	var times kindTimes
	var totals *sideTotals
	if o.Observe.Time {
		times, totals = kindTimes{}, &sideTotals{}
	}
	for _, p := range o.Pairs {
		p.A.Config.Observe, p.B.Config.Observe = o.Observe, o.Observe
		p.CallTime = nil // a pair run before adds nothing to this run's totals
		if totals != nil {
			p.CallTime = totals.callTime
		}
	}
	learner, _ := o.Source.(Learner)
	c := &collector{o: o, times: times, totals: totals, learner: learner, pair: first, res: res, start: start, lastProgress: start, pending: map[int]*batchResult{}, seen: map[string]int{}, records: map[int]*corpus.Finding{}, rewrite: map[int]bool{}, known: map[*corpus.KnownEntry]int{}, byCause: map[string]*corpus.KnownEntry{}}
	err := c.run(ctx)
	if err == nil {
		c.recheckFresh(ctx)
	}
	c.finishRecords()
	if times != nil {
		res.Timing = times.medians()
		res.Sides = totals.result(res.A, res.B)
	}
	res.Causes = groupCauses(res.Findings)
	res.Seconds = time.Since(start).Seconds()
	if res.Seconds > 0 {
		res.OpsPerSec = float64(res.Ops) / res.Seconds
	}
	if o.Sink != nil {
		o.Sink.End(End{Result: res, Err: err})
	}
	return res, err
}

// run has the pairs work through the batches and takes their results in
// script order, until the end, a finding that stops the run, an error or
// the end of ctx.
func (c *collector) run(ctx context.Context) error {
	o := c.o
	workCtx, stop := context.WithCancel(ctx)
	defer stop()
	if o.Duration > 0 {
		var cancel context.CancelFunc
		workCtx, cancel = context.WithTimeout(workCtx, o.Duration)
		defer cancel()
	}
	results := make(chan *batchResult, len(o.Pairs))
	pc := &pace{}
	var fb *feedback
	if c.learner != nil {
		// The workers' batches and the one drawn ahead may all be in
		// flight while the next is drawn.
		fb = newFeedback(c.learner, o.Batch*(len(o.Pairs)+1))
	}
	c.feedback = fb
	batches := generate(workCtx, o, pc, fb)
	var wg sync.WaitGroup
	for _, p := range o.Pairs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := worker{pair: p, pace: pc}
			// Every batch taken gives a result, so that the collector,
			// which takes them in script order, never waits on a gap.
			for bt := range batches {
				results <- w.run(workCtx, bt)
			}
		}()
	}
	go func() { wg.Wait(); close(results) }()
	var err error
	for br := range results {
		if err != nil || c.stopped {
			continue // drain
		}
		c.pending[br.start] = br
		for next := c.pending[c.next]; next != nil && err == nil && !c.stopped; next = c.pending[c.next] {
			delete(c.pending, c.next)
			c.next += next.n
			err = c.take(ctx, next)
			c.launchEvents(o.Pairs, next.start)
		}
		if err != nil || c.stopped {
			stop()
		}
	}
	c.launchEvents(o.Pairs, c.next)
	fb.flush() // the generator has ended: the workers' batches are all back
	switch {
	case err != nil:
		return err
	case ctx.Err() != nil:
		c.res.Interrupted = true
	}
	c.res.StaleKnown = c.stale()
	return nil
}

// batch is a run of consecutive scripts and their seeds.
type batch struct {
	start   int
	seeds   []uint64
	scripts [][]ops.Op
}

// ScriptSeed is the seed of script i of a run with seed seed: a splitmix64
// mix, so that runs with nearby seeds draw unrelated scripts.
func ScriptSeed(seed uint64, i int) uint64 {
	z := seed + uint64(i+1)*0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// BatchCost bounds the work of one batch (ops.Cost of its scripts, two
// million plain operations): scripts that wrap seq make 1.4 million objects
// each, seconds on the kernel, and a batch of them would outlast the call
// timeout. A script that costs more is a batch of its own.
const BatchCost = 1 << 21

// generate draws batches ahead of the plugins, so that drawing the next
// batch overlaps running the current one. Script i has seed
// ScriptSeed(Seed, i), whatever the batches. A batch ends before the
// script that would take its cost past pc's limit (BatchCost, or what the
// batches so far say takes BatchTime): that script starts the next batch,
// alone if it costs more than the limit by itself.
func generate(ctx context.Context, o Options, pc *pace, fb *feedback) <-chan batch {
	ch := make(chan batch, 1)
	go func() {
		defer close(ch)
		// Batches start small and double up to o.Batch: the first
		// verdicts come early, and a run interrupted in its first second
		// has compared something.
		size := min(o.Batch, 8)
		var held *drawn // drawn for the batch before, past its limit
		for next := 0; o.Checks <= 0 || next < o.Checks; {
			n := size
			size = min(o.Batch, 2*size)
			if o.Checks > 0 {
				n = min(n, o.Checks-next)
			}
			bt := batch{start: next}
			var cost int64
			limit := pc.limit()
			for i := 0; i < n; i++ {
				d := held
				if d == nil {
					if !fb.before(ctx, next+i) {
						return
					}
					d = draw(o.Source, o.Seed, next+i)
				}
				held = nil
				if len(bt.scripts) > 0 && cost+d.cost > limit {
					held = d
					break
				}
				bt.seeds, bt.scripts = append(bt.seeds, d.seed), append(bt.scripts, d.script)
				cost += d.cost
			}
			next += len(bt.scripts)
			select {
			case ch <- bt:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch
}

// drawn is one script drawn for a batch, with its seed and ops.Cost.
type drawn struct {
	seed   uint64
	script []ops.Op
	cost   int64
}

// draw draws script i of a run with seed seed.
func draw(src Source, seed uint64, i int) *drawn {
	s := ScriptSeed(seed, i)
	script := src.Next(s)
	return &drawn{seed: s, script: script, cost: ops.Cost(script)}
}
