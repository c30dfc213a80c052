package sidestest

import (
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/commands"
	"pgregory.net/rapid"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// Suite is the checks every subsystem's property tests share, each a
// subtest of Run: the text round trip of drawn scripts on a built-in,
// rapid's state machine on pairs of sides (each pair a subtest: one that
// cannot run here skips alone), and gopter's command sequences on pairs of
// sides, one property each, drawn in turn from one seed (a pair that
// cannot run here skips them all). What a subsystem checks besides is its own.
type Suite struct {
	Sub engine.Subsystem
	// RoundTrip starts the model the drawn scripts run on before their
	// text is printed and parsed back (nil: no round trip).
	RoundTrip func() (ops.Model, error)
	// Machines are the pairs rapid's state machine compares (nil:
	// Models(); empty: none).
	Machines []Compared
	// Commands are the pairs gopter's command sequences compare (nil:
	// Models()), drawn from Seed (0: 1), at most MaxSize commands long (0:
	// gopter's default).
	Commands []Compared
	Seed     int64
	MaxSize  int
}

// Models are the pairs a suite compares unless it says otherwise: the
// models with each other, then the optimized one with the live kernel.
func Models() []Compared {
	return []Compared{Exactly("naive", "optimized"), Exactly("optimized", "kernel")}
}

// Compared is a pair of sides (Open's specs) and the relation they are
// compared under. Sub, when set, is the subsystem drawn instead of the
// suite's (ids against the kernel draws no seq wrap: it costs seconds).
type Compared struct {
	A, B string
	Rel  equiv.Relation
	Sub  *engine.Subsystem
}

// Exactly is the pair a, b compared exactly.
func Exactly(a, b string) Compared { return Compared{A: a, B: b, Rel: equiv.Exact} }

func (s *Suite) defaults() {
	if s.Machines == nil {
		s.Machines = Models()
	}
	if s.Commands == nil {
		s.Commands = Models()
	}
	if s.Seed == 0 {
		s.Seed = 1
	}
}

func (c Compared) sub(s engine.Subsystem) engine.Subsystem {
	if c.Sub != nil {
		return *c.Sub
	}
	return s
}

func (c Compared) String() string { return c.A + " vs " + c.B + " " + string(c.Rel) }

// Run runs the suite's checks as subtests of t.
func (s Suite) Run(t *testing.T) {
	s.defaults()
	if s.RoundTrip != nil {
		t.Run("text round trip", func(t *testing.T) {
			m, err := s.RoundTrip()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = m.Close() })
			rapid.Check(t, s.Sub.TextRoundTrip(m))
		})
	}
	for _, c := range s.Machines {
		t.Run("machine "+c.String(), func(t *testing.T) {
			sub := c.sub(s.Sub)
			rapid.Check(t, sub.Machine(Pair(t, sub, c.A, c.B, c.Rel)))
		})
	}
	t.Run("gopter commands", func(t *testing.T) {
		params := gopter.DefaultTestParameters()
		params.Rng.Seed(s.Seed)
		if s.MaxSize > 0 {
			params.MaxSize = s.MaxSize
		}
		props := gopter.NewProperties(params)
		for _, c := range s.Commands {
			sub := c.sub(s.Sub)
			props.Property(c.String(), commands.Prop(sub.Commands(Pair(t, sub, c.A, c.B, c.Rel))))
		}
		props.TestingRun(t)
	})
}
