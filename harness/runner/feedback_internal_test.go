package runner

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// logLearner writes down each call, in order.
type logLearner struct{ log []string }

func (l *logLearner) Next(seed uint64) []ops.Op {
	l.log = append(l.log, fmt.Sprintf("next %d", seed))
	return []ops.Op{{Value: int64(seed)}}
}

func (l *logLearner) Feedback(script []ops.Op, _ [2]ops.Outcome) {
	l.log = append(l.log, fmt.Sprintf("told %d", script[0].Value))
}

// A Learner is told of script j just before script j+lag+1 is drawn,
// whenever the collector took it: the calls interleave the same way
// however the pushes are timed.
func TestFeedbackIsToldAtAFixedLag(t *testing.T) {
	const n, lag = 40, 5
	want := func() []string {
		var w []string
		for i := range n {
			if j := i - lag - 1; j >= 0 {
				w = append(w, fmt.Sprintf("told %d", j))
			}
			w = append(w, fmt.Sprintf("next %d", i))
		}
		return w
	}()
	for round := range 3 {
		l := &logLearner{}
		fb := newFeedback(l, lag)
		scripts := make(chan []ops.Op, n)
		go func() { // the collector: takes each script some time after it was drawn
			rng := rand.New(rand.NewPCG(uint64(round), 1))
			for s := range scripts {
				time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
				fb.push(s, [2]ops.Outcome{})
			}
		}()
		for i := range n {
			require.True(t, fb.before(t.Context(), i))
			scripts <- l.Next(uint64(i))
		}
		close(scripts)
		require.Equal(t, want, l.log, "round %d", round)
	}
}

// A generator waiting for feedback that never comes (the run stopped at a
// finding) ends with the run's context.
func TestFeedbackWaitEndsWithTheRun(t *testing.T) {
	fb := newFeedback(&logLearner{}, 2)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.False(t, fb.before(ctx, 10))
	require.True(t, fb.before(ctx, 2), "nothing to wait for")
}
