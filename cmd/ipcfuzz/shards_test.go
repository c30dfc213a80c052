package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/props"
)

// The committed table is the one the registry gives: every consumer
// (nightly.sh, local-shards.sh, the workflow, the Kubernetes Job) can read
// either.
func TestShardTableIsCommitted(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"list", "--shards"}, &out, &errb), errb.String())
	committed, err := os.ReadFile("../../ci/shards.tsv")
	require.NoError(t, err)
	require.Equal(t, out.String(), string(committed),
		"ci/shards.tsv differs from the registry's table: run 'go run ./cmd/ipcfuzz list --shards > ci/shards.tsv' and set completions and parallelism in deploy/k8s/shards-job.yaml to its row count")
}

// Every subsystem of the registry is fuzzed every night: it has compare,
// fuzz and rapid shards, and every compare command is one compare takes.
func TestShardTableCoversRegistry(t *testing.T) {
	shards := shardTable()
	kinds := map[string]map[string]int{}
	names := map[string]bool{}
	for i, s := range shards {
		require.Equal(t, i, s.ID)
		require.False(t, names[s.Name], "shard name %s twice", s.Name)
		names[s.Name] = true
		if kinds[s.Subsystem] == nil {
			kinds[s.Subsystem] = map[string]int{}
		}
		kinds[s.Subsystem][s.Kind]++
		_, err := time.ParseDuration(s.Budget)
		require.NoError(t, err, s.Name)
		if s.Kind == shardCompare {
			args := strings.Fields(strings.TrimPrefix(s.Command, "ipcfuzz compare "))
			_, err := parseCompare(args)
			require.NoError(t, err, "shard %s: %s", s.Name, s.Command)
		}
	}
	for _, sub := range props.Names() {
		require.GreaterOrEqual(t, kinds[sub][shardCompare], 1, sub)
		require.Equal(t, 1, kinds[sub][shardFuzz], sub)
		require.Equal(t, 1, kinds[sub][shardRapid], sub)
	}
	require.Len(t, kinds, len(props.Names()))
}

// The fuzz shards are exactly the packages that have Fuzz targets, as go
// test -list finds them: a target is never left out of the nights.
func TestFuzzShardsMatchFuzzTargets(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "test", "-list", "^Fuzz", "../../props/...").CombinedOutput()
	require.NoError(t, err, string(out))
	withTargets := map[string]bool{}
	pending := 0
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 1 && strings.HasPrefix(f[0], "Fuzz"):
			pending++
		case len(f) >= 2 && f[0] == "ok":
			if pending > 0 {
				withTargets["./"+strings.TrimPrefix(f[1], "github.com/ipcfuzz/ipcfuzz/")] = true
			}
			pending = 0
		}
	}
	fuzzed := map[string]bool{}
	for _, s := range shardTable() {
		if s.Kind == shardFuzz {
			fuzzed[s.Command[strings.LastIndex(s.Command, " ")+1:]] = true
		}
	}
	require.NotEmpty(t, withTargets)
	require.Equal(t, withTargets, fuzzed)
}

func TestListShardsJSON(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"list", "--shards", "--json"}, &out, &errb), errb.String())
	var got []Shard
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	require.Equal(t, shardTable(), got)
	require.Equal(t, 1, strings.Count(strings.TrimSpace(out.String()), "\n")+1, "one line, for a workflow output")
}
