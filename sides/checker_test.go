package sides_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/ops/opstest"
	"github.com/ipcfuzz/ipcfuzz/sides"
)

func candidate(t *testing.T, a, b, rel string) *corpus.Candidate {
	sc := opstest.Script(t, "subsystem ids\nget msg key=0x0 mode=0600\nget msg key=0x0 mode=0600\n")
	return &corpus.Candidate{Script: sc, Header: corpus.Header{Kind: "divergence", A: a, B: b, Relation: rel, Signature: "ids/recorded"}}
}

// The legacy allocator's second id differs from the idr's under exact:
// the divergence reproduces on every try, its signature recomputed.
func TestCheckerReproduce(t *testing.T) {
	chk := &sides.Checker{Options: sides.Options{InProcess: true}, Relations: func(string) ([]equiv.Relation, error) {
		return []equiv.Relation{equiv.Exact, equiv.IDsRenamed}, nil
	}}
	defer chk.Close()
	c := candidate(t, "naive:alloc=legacy", "optimized", "exact")
	require.Empty(t, chk.Stale(c))
	v, err := chk.Reproduce(context.Background(), c, 2)
	require.NoError(t, err)
	require.Equal(t, 2, v.Reproduced)
	require.NotEmpty(t, v.Signature)
	require.NotEqual(t, "ids/recorded", v.Signature)

	v, err = chk.Reproduce(context.Background(), candidate(t, "naive", "optimized", "exact"), 1)
	require.NoError(t, err)
	require.Zero(t, v.Reproduced, "the same allocator agrees")
}

// What no longer fits this build is stale, and says why.
func TestCheckerStale(t *testing.T) {
	chk := &sides.Checker{Relations: func(sub string) ([]equiv.Relation, error) {
		if sub != "ids" {
			return nil, fmt.Errorf("no subsystem %s", sub)
		}
		return []equiv.Relation{equiv.Exact}, nil
	}}
	seed := candidate(t, "naive", "optimized", "exact")
	seed.Header.Kind = ""
	require.Contains(t, chk.Stale(seed), "not a finding file")
	require.Equal(t, `subsystem ids is not compared under "ids-renamed"`, chk.Stale(candidate(t, "naive", "optimized", "ids-renamed")))
	require.Equal(t, "plugin ./no-such-plugin is not here", chk.Stale(candidate(t, "./no-such-plugin", "optimized", "exact")))
	require.Contains(t, chk.Stale(candidate(t, "nosuch", "optimized", "exact")), "nosuch")
}

// Replayers replay on fresh instances: nothing carries over from one
// script to the next.
func TestReplayers(t *testing.T) {
	_, err := sides.Replayers([]string{"naive", "nosuch"})
	require.ErrorContains(t, err, "nosuch")
	rs, err := sides.Replayers([]string{"naive"})
	require.NoError(t, err)
	require.Contains(t, rs[0].Subsystems, "ids")
	sc := opstest.Script(t, "subsystem ids\nget msg key=0x0 mode=0600\n")
	for range 2 {
		out, err := rs[0].Replay(sc)
		require.NoError(t, err)
		require.Equal(t, "id=0", ops.FormatResult(sc.Steps[0].Op, out.Results[0]))
	}
}
