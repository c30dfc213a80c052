// Package shards decides the nightly shard table: which jobs ci/nightly.sh
// runs for each subsystem of the registry, with what command and budget.
// Every consumer (the nightly workflow's matrix, the Kubernetes Indexed
// Job's completions, ci/local-shards.sh) reads the same table, which
// `ipcfuzz list --shards` prints from the registry: a subsystem added
// there is fuzzed every night with no edit under ci/.
package shards

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
)

// Shard is one row of the table: one job that ci/nightly.sh runs for a
// budget of time.
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
	Compare = "compare" // ipcfuzz compare --keep-going for the budget
	Fuzz    = "fuzz"    // go test -fuzz on every Fuzz target of props/<subsystem>
	Rapid   = "rapid"   // props/<subsystem>'s tests, rounds of fresh rapid seeds
	Perf    = "perf"    // ipcfuzz worst, or compare --perf: a pattern on which optimized grows faster than naive
)

// perfBudget is a perf shard's nightly budget.
const perfBudget = "10m"

// perfThreshold is the growth of optimized's cost over naive's that a perf
// shard reports: above the n^0.25 a logarithm shows over small sizes (the
// radix tree's height against a slot's index), below a power of n.
const perfThreshold = "0.5"

// nightlyBudget is every shard's budget in the nightly run.
const nightlyBudget = "30m"

// Subsystem is what the table needs of a registry entry.
type Subsystem struct {
	Name      string
	Relations []equiv.Relation // the first is the default
	Races     bool             // its compare shards count races (--stats)
}

// Runs reports whether the built-in implementation spec names (options
// after a colon) runs the subsystem sub.
type Runs func(spec, sub string) bool

// pair is a pair of implementations a compare shard runs.
type pair struct {
	name   string // the shard name's suffix
	a, b   string // implementation specs
	engine string
	rel    equiv.Relation // "" for the subsystem's default
}

// defaultPairs are compared under each subsystem's default relation: the
// optimized model against the live kernel, and the two models with the
// other script generator.
func defaultPairs() []pair {
	return []pair{
		{name: "optimized-kernel", a: "optimized", b: "kernel", engine: "rapid"},
		{name: "naive-optimized", a: "naive", b: "optimized", engine: "gopter"},
	}
}

// The environment variables that name the kernel images of the shards on
// built kernels: ci/nightly.sh puts the image in kernel:image=$VAR, and
// skips the shard, saying why, where VAR names none (the nightly kernels
// job builds them with ci/kernel.sh and sets them).
const (
	EnvImageStock  = "IPCFUZZ_IMAGE_STOCK"
	EnvImagePre515 = "IPCFUZZ_IMAGE_PRE515"
	// EnvImageCover names a stock kernel with KCOV (ci/kernel.sh --base
	// 6.12 --cover), the guided shards' kernel.
	EnvImageCover = "IPCFUZZ_IMAGE_COVER"
)

// imagePairs are compared on built kernels booted in QEMU: this machine's
// kernel against the stock 6.1, the optimized model against a KCOV kernel
// with guided scripts, and, where the seed 000 patch matters
// (the /proc/sysvipc listings of ids and shm), the stock 6.1 against the
// one with the sysvipc_find_ipc() of Linux <= 5.14 (0 divergences: the
// patch was a pure optimization).
func imagePairs(sub string) []pair {
	stock := "kernel:image=$" + EnvImageStock
	out := []pair{{name: "kernel-image", a: "kernel", b: stock, engine: "rapid"},
		// Scripts that go where the kernel has not been: the guided
		// engine follows the program counters of a KCOV kernel.
		{name: "guided-kcov", a: "optimized", b: "kernel:image=$" + EnvImageCover, engine: "guided"}}
	if sub == "ids" || sub == "shm" {
		out = append(out, pair{name: "image-pre515", a: stock, b: "kernel:image=$" + EnvImagePre515, engine: "rapid"})
	}
	return out
}

// relationPairs are compared for each further relation a subsystem
// declares: the relation exists for the pair it names.
func relationPairs() map[equiv.Relation]pair {
	return map[equiv.Relation]pair{
		equiv.IDsRenamed: {name: "legacy-kernel", a: "naive:alloc=legacy", b: "kernel", engine: "rapid", rel: equiv.IDsRenamed},
	}
}

// Table builds the table: for each subsystem, in order, the compare pairs
// whose implementations run it, its fuzz targets, its rapid properties
// and, where both models run it, its performance searches.
func Table(subs []Subsystem, runs Runs) []Shard {
	var out []Shard
	for _, sub := range subs {
		out = append(out, subsystemShards(sub, runs)...)
	}
	for i := range out {
		out[i].ID = i
	}
	return out
}

func subsystemShards(sub Subsystem, runs Runs) []Shard {
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
		Shard{Name: sub.Name + "-fuzz", Kind: Fuzz, Subsystem: sub.Name, Budget: nightlyBudget,
			Command: "go test -run ^$ -fuzz ^Fuzz " + pkg},
		Shard{Name: sub.Name + "-rapid", Kind: Rapid, Subsystem: sub.Name, Budget: nightlyBudget,
			Command: "go test -run ^Test " + pkg})
	if runs("optimized", sub.Name) && runs("naive", sub.Name) {
		out = append(out, Shard{Name: sub.Name + "-perf", Kind: Perf, Subsystem: sub.Name, Budget: perfBudget,
			Command: fmt.Sprintf("ipcfuzz worst optimized --vs naive --subsystem %s --fail-above %s", sub.Name, perfThreshold)},
			Shard{Name: sub.Name + "-perf-compare", Kind: Perf, Subsystem: sub.Name, Budget: perfBudget,
				Command: fmt.Sprintf("ipcfuzz compare naive optimized --subsystem %s --perf --threshold %s", sub.Name, perfThreshold)})
	}
	return out
}

func compareShard(sub Subsystem, p pair) Shard {
	rel := p.rel
	if rel == "" && len(sub.Relations) > 0 {
		rel = sub.Relations[0]
	}
	cmd := fmt.Sprintf("ipcfuzz compare %s %s --subsystem %s --engine %s --equiv %s", p.a, p.b, sub.Name, p.engine, rel)
	if sub.Races {
		cmd += " --stats"
	}
	return Shard{Name: sub.Name + "-" + p.name, Kind: Compare, Subsystem: sub.Name, Budget: nightlyBudget, Command: cmd}
}

// Header is the first line of the TSV table.
const Header = "id\tname\tkind\tsubsystem\tbudget\tcommand"

// WriteTSV prints the table as ci/shards.tsv holds it: a header, then one
// tab-separated row per shard.
func WriteTSV(w io.Writer, shards []Shard) error {
	if _, err := fmt.Fprintln(w, Header); err != nil {
		return fmt.Errorf("writing the shard table: %w", err)
	}
	for _, s := range shards {
		row := []string{fmt.Sprint(s.ID), s.Name, s.Kind, s.Subsystem, s.Budget, s.Command}
		if _, err := fmt.Fprintln(w, strings.Join(row, "\t")); err != nil {
			return fmt.Errorf("writing the shard table: %w", err)
		}
	}
	return nil
}

// WriteJSON prints the table as one JSON array on one line: what a
// workflow's matrix takes with fromJSON.
func WriteJSON(w io.Writer, shards []Shard) error {
	if err := json.NewEncoder(w).Encode(shards); err != nil {
		return fmt.Errorf("writing the shard table: %w", err)
	}
	return nil
}
