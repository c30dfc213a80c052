package shards_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/ci/shards"
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
)

// Two subsystems, one with a further relation and races, and
// implementations that run only some of them.
func table() []shards.Shard {
	subs := []shards.Subsystem{
		{Name: "ids", Relations: []equiv.Relation{equiv.Exact, equiv.IDsRenamed}},
		{Name: "vma", Relations: []equiv.Relation{equiv.Exact}, Races: true},
	}
	runs := func(spec, sub string) bool {
		name, _, _ := strings.Cut(spec, ":")
		return name != "naive" || sub == "ids" // naive runs ids only
	}
	return shards.Table(subs, runs)
}

func TestTable(t *testing.T) {
	got := table()
	var names []string
	for i, s := range got {
		require.Equal(t, i, s.ID)
		_, err := time.ParseDuration(s.Budget)
		require.NoError(t, err, s.Name)
		names = append(names, s.Name)
	}
	require.Equal(t, []string{
		"ids-optimized-kernel", "ids-naive-optimized", "ids-legacy-kernel", "ids-kernel-image", "ids-guided-kcov", "ids-image-pre515",
		"ids-fuzz", "ids-rapid", "ids-perf", "ids-perf-compare",
		"vma-optimized-kernel", "vma-kernel-image", "vma-guided-kcov", "vma-fuzz", "vma-rapid",
	}, names)
	require.Equal(t, "ipcfuzz compare naive:alloc=legacy kernel --subsystem ids --engine rapid --equiv ids-renamed", got[2].Command)
	require.Equal(t, "ipcfuzz compare kernel kernel:image=$"+shards.EnvImageStock+" --subsystem vma --engine rapid --equiv exact --stats", got[11].Command)
	require.Equal(t, "ipcfuzz compare optimized kernel:image=$"+shards.EnvImageCover+" --subsystem vma --engine guided --equiv exact --stats", got[12].Command)
	require.Equal(t, shards.Perf, got[9].Kind)
	require.Equal(t, "go test -run ^$ -fuzz ^Fuzz ./props/vma", got[13].Command)
}

func TestWrite(t *testing.T) {
	var tsv, js bytes.Buffer
	require.NoError(t, shards.WriteTSV(&tsv, table()))
	lines := strings.Split(strings.TrimSpace(tsv.String()), "\n")
	require.Equal(t, shards.Header, lines[0])
	require.Len(t, lines, len(table())+1)
	require.Equal(t, "14\tvma-rapid\trapid\tvma\t30m\tgo test -run ^Test ./props/vma", lines[15])

	require.NoError(t, shards.WriteJSON(&js, table()))
	require.Equal(t, 1, strings.Count(js.String(), "\n"), "one line, for a workflow output")
	var back []shards.Shard
	require.NoError(t, json.Unmarshal(js.Bytes(), &back))
	require.Equal(t, table(), back)
}
