package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/impls"
	"github.com/ipcfuzz/ipcfuzz/props"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// Shard is one row of the nightly shard table: one job that ci/nightly.sh
// runs for a budget of time. Every consumer (the nightly workflow's
// matrix, the Kubernetes Indexed Job's completions, ci/local-shards.sh)
// reads the same table, which `ipcfuzz list --shards` builds from the
// subsystem registry: a subsystem added there is fuzzed every night with
// no edit under ci/.
type Shard struct {
	ID        int    `json:"id"`        // the index ci/nightly.sh and JOB_COMPLETION_INDEX take
	Name      string `json:"name"`      // stable across tables: keys the shard's fuzz cache
	Kind      string `json:"kind"`      // compare, fuzz or rapid
	Subsystem string `json:"subsystem"` // the registry's name
	Budget    string `json:"budget"`    // the nightly budget (a Go duration)
	Command   string `json:"command"`   // what runs, without the budget, seed and output
}

// Shard kinds.
const (
	shardCompare = "compare" // ipcfuzz compare --keep-going for the budget
	shardFuzz    = "fuzz"    // go test -fuzz on every Fuzz target of props/<subsystem>
	shardRapid   = "rapid"   // props/<subsystem>'s tests, rounds of fresh rapid seeds
	shardPerf    = "perf"    // ipcfuzz worst, or compare --perf: a pattern on which optimized grows faster than naive
)

// perfBudget is a perf shard's nightly budget.
const perfBudget = "10m"

// perfThreshold is the growth of optimized's cost over naive's that a perf
// shard reports: above the n^0.25 a logarithm shows over small sizes (the
// radix tree's height against a slot's index), below a power of n.
const perfThreshold = "0.5"

// nightlyBudget is every shard's budget in the nightly run.
const nightlyBudget = "30m"

// shardPair is a pair of implementations a compare shard runs.
type shardPair struct {
	name   string // the shard name's suffix
	a, b   string // implementation specs
	engine string
	rel    equiv.Relation // "" for the subsystem's default
}

// defaultPairs are compared under each subsystem's default relation: the
// optimized model against the live kernel, and the two models with the
// other script generator.
func defaultPairs() []shardPair {
	return []shardPair{
		{name: "optimized-kernel", a: "optimized", b: "kernel", engine: "rapid"},
		{name: "naive-optimized", a: "naive", b: "optimized", engine: "gopter"},
	}
}

// The environment variables that name the kernel images of the shards on
// built kernels: ci/nightly.sh puts the image in kernel:image=$VAR, and
// skips the shard, saying why, where VAR names none (the nightly kernels
// job builds them with ci/kernel.sh and sets them).
const (
	envImageStock  = "IPCFUZZ_IMAGE_STOCK"
	envImagePre515 = "IPCFUZZ_IMAGE_PRE515"
)

// imagePairs are compared on built kernels booted in QEMU: this machine's
// kernel against the stock 6.1, and, where the seed 000 patch matters
// (the /proc/sysvipc listings of ids and shm), the stock 6.1 against the
// one with the sysvipc_find_ipc() of Linux <= 5.14 (0 divergences: the
// patch was a pure optimization).
func imagePairs(sub string) []shardPair {
	stock := "kernel:image=$" + envImageStock
	out := []shardPair{{name: "kernel-image", a: "kernel", b: stock, engine: "rapid"}}
	if sub == "ids" || sub == "shm" {
		out = append(out, shardPair{name: "image-pre515", a: stock, b: "kernel:image=$" + envImagePre515, engine: "rapid"})
	}
	return out
}

// relationPairs are compared for each further relation a subsystem
// declares: the relation exists for the pair it names.
func relationPairs() map[equiv.Relation]shardPair {
	return map[equiv.Relation]shardPair{
		equiv.IDsRenamed: {name: "legacy-kernel", a: "naive:alloc=legacy", b: "kernel", engine: "rapid", rel: equiv.IDsRenamed},
	}
}

// shardTable builds the table from the registry: for each subsystem, the
// compare pairs whose implementations run it, its fuzz targets and its
// rapid properties.
func shardTable() []Shard {
	var out []Shard
	for _, sub := range props.Subsystems() {
		out = append(out, subsystemShards(sub)...)
	}
	for i := range out {
		out[i].ID = i
	}
	return out
}

func subsystemShards(sub engine.Subsystem) []Shard {
	var out []Shard
	pairs := defaultPairs()
	for _, rel := range sub.Relations[min(1, len(sub.Relations)):] {
		if p, ok := relationPairs()[rel]; ok {
			pairs = append(pairs, p)
		}
	}
	pairs = append(pairs, imagePairs(sub.Name)...)
	for _, p := range pairs {
		if runs(p.a, sub.Name) && runs(p.b, sub.Name) {
			out = append(out, compareShard(sub, p))
		}
	}
	pkg := "./props/" + sub.Name
	out = append(out,
		Shard{Name: sub.Name + "-fuzz", Kind: shardFuzz, Subsystem: sub.Name, Budget: nightlyBudget,
			Command: "go test -run ^$ -fuzz ^Fuzz " + pkg},
		Shard{Name: sub.Name + "-rapid", Kind: shardRapid, Subsystem: sub.Name, Budget: nightlyBudget,
			Command: "go test -run ^Test " + pkg})
	if runs("optimized", sub.Name) && runs("naive", sub.Name) {
		out = append(out, Shard{Name: sub.Name + "-perf", Kind: shardPerf, Subsystem: sub.Name, Budget: perfBudget,
			Command: fmt.Sprintf("ipcfuzz worst optimized --vs naive --subsystem %s --fail-above %s", sub.Name, perfThreshold)},
			Shard{Name: sub.Name + "-perf-compare", Kind: shardPerf, Subsystem: sub.Name, Budget: perfBudget,
				Command: fmt.Sprintf("ipcfuzz compare naive optimized --subsystem %s --perf --threshold %s", sub.Name, perfThreshold)})
	}
	return out
}

func compareShard(sub engine.Subsystem, p shardPair) Shard {
	rel := p.rel
	if rel == "" && len(sub.Relations) > 0 {
		rel = sub.Relations[0]
	}
	cmd := fmt.Sprintf("ipcfuzz compare %s %s --subsystem %s --engine %s --equiv %s", p.a, p.b, sub.Name, p.engine, rel)
	if sub.Races() {
		cmd += " --stats"
	}
	return Shard{Name: sub.Name + "-" + p.name, Kind: shardCompare, Subsystem: sub.Name, Budget: nightlyBudget, Command: cmd}
}

// runs reports whether the built-in implementation spec names runs sub.
func runs(spec, sub string) bool {
	name, _, _ := strings.Cut(spec, ":")
	b, err := impls.Lookup(name)
	return err == nil && slices.Contains(b.Subsystems(), sub)
}

// shardHeader is the first line of the TSV table.
const shardHeader = "id\tname\tkind\tsubsystem\tbudget\tcommand"

// writeShardsTSV prints the table as ci/shards.tsv holds it: a header,
// then one tab-separated row per shard.
func writeShardsTSV(w io.Writer, shards []Shard) error {
	if _, err := fmt.Fprintln(w, shardHeader); err != nil {
		return fmt.Errorf("writing the shard table: %w", err)
	}
	for _, s := range shards {
		if _, err := fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.Name, s.Kind, s.Subsystem, s.Budget, s.Command); err != nil {
			return fmt.Errorf("writing the shard table: %w", err)
		}
	}
	return nil
}

// writeShardsJSON prints the table as one JSON array on one line: what a
// workflow's matrix takes with fromJSON.
func writeShardsJSON(w io.Writer, shards []Shard) error {
	if err := json.NewEncoder(w).Encode(shards); err != nil {
		return fmt.Errorf("writing the shard table: %w", err)
	}
	return nil
}
