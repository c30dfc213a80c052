package sem_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/impls/optimized"
	"github.com/ipcfuzz/ipcfuzz/props/sem"
	"github.com/ipcfuzz/ipcfuzz/sides/sidestest"
)

var sub = sem.Subsystem

// The checks every subsystem has (sidestest.Suite).
func TestSuite(t *testing.T) {
	sidestest.Suite{Sub: sub, RoundTrip: optimized.New, Commands: sidestest.Models()[:1], Seed: 9, MaxSize: 30}.Run(t)
}

// The generator must reach every situation the subsystem is about: tasks
// that block and are completed (by semop, SETVAL, SETALL, an undo at exit),
// complex operations, the boundaries, and each deliberately invalid call.
func TestGeneratorReaches(t *testing.T) {
	a := sidestest.Open(t, "optimized", sub)
	gen := sub.RapidScripts(equiv.Exact)
	seen := map[string]bool{}
	blocked := 0
	const n = 400
	for seed := range uint64(n) {
		script := gen(seed)
		outs, err := a.Impl.Exec(context.Background(), ops.Config{}, [][]ops.Op{script}, nil)
		require.NoError(t, err)
		res := outs[0].Results
		if runner.ScriptStats(script, res).BlockedThenCompleted {
			blocked++
		}
		for i, op := range script {
			r := res[i]
			if len(r.Done) > 0 {
				switch {
				case op.Kind == ops.KindSemop:
					seen["completed by semop"] = true
				case op.Kind == ops.KindSemctl && op.Sem.Cmd == ops.SemSetVal:
					seen["completed by SETVAL"] = true
				case op.Kind == ops.KindSemctl && op.Sem.Cmd == ops.SemSetAll:
					seen["completed by SETALL"] = true
				case op.Kind == ops.KindExit:
					seen["completed by an exit's undo"] = true
				case op.Kind == ops.KindRmid:
					seen["EIDRM to sleepers"] = true
				case op.Kind == ops.KindInterrupt:
					seen["EINTR"] = true
				}
			}
			switch {
			case op.Kind == ops.KindSemop && op.Sem.NSops > 1 && r.Blocked:
				seen["complex op asleep"] = true
			case op.Kind == ops.KindSemop && r.Err != ops.OK && !r.Blocked:
				seen["semop "+r.Err.String()] = true
			case op.Kind == ops.KindSemctl && op.Sem.Cmd == ops.SemGetNcnt && r.ID > 0:
				seen["GETNCNT > 0"] = true
			case op.Kind == ops.KindSemctl && op.Sem.Cmd == ops.SemGetZcnt && r.ID > 0:
				seen["GETZCNT > 0"] = true
			case op.Kind == ops.KindGet && r.Err == ops.EINVAL:
				seen["semget EINVAL"] = true
			case op.Kind == ops.KindSemLimits:
				seen["kernel.sem"] = true
			}
		}
	}
	t.Logf("%d of %d scripts had a task blocked then completed", blocked, n)
	require.GreaterOrEqual(t, blocked*100/n, 30)
	for _, k := range []string{"completed by semop", "completed by SETVAL", "completed by SETALL", "completed by an exit's undo",
		"EIDRM to sleepers", "EINTR", "complex op asleep", "semop EAGAIN", "semop EFBIG", "semop E2BIG", "semop ERANGE",
		"semop EINVAL", "semop EACCES", "GETNCNT > 0", "GETZCNT > 0", "semget EINVAL", "kernel.sem"} {
		require.True(t, seen[k], "no script of %d reached %q", n, k)
	}
}

// FuzzSem turns the fuzzer's bytes into a script (one byte a choice) and
// compares the implementations IPCFUZZ_IMPLS names (naive, optimized and,
// where it can run, the live kernel by default) each with the next.
func FuzzSem(f *testing.F) {
	sub.Fuzz(f, sidestest.FromEnv(f, sub))
}
