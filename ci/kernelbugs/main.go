// Command kernelbugs is the bench of the kernel zoo: every historic bug of
// ci/kernels/bugs.tsv re-introduced into its base kernel, built, booted and
// hunted by ipcfuzz under a fixed budget, and the table of what was found
// written to docs/kernel-bugs.md.
//
//	go run ./ci/kernelbugs [--budget 3m] [--only bug-a,bug-b] [--seed 1] [--out docs/kernel-bugs.md] [--work DIR]
//
// Per bug (a directory ci/kernels/NAME with its patches, `base` and
// `subsystem` files), it builds the stock kernel of the base and the bug's
// (ci/kernel.sh's recipe, cached), then runs
//
//	ipcfuzz compare kernel:image=STOCK kernel:image=BUG --subsystem S --time BUDGET --seed SEED --keep-going --json
//	ipcfuzz compare optimized kernel:image=BUG ... (the same)
//
// and records, per pair, whether something was found, the script count
// and seconds to the first divergence, its shrunk length, the signatures
// and causes; then the reproducer of the first finding is run in a guest
// of each kernel (`ipcfuzz repro --run`): it must exit 1 on the bug kernel
// and 0 on the stock one. The bug's witness.ops (a script stating the
// stock kernel's results) is run the same way. Everything is kept in the
// work directory (results.json, the findings), and the table is written
// from results.json, so --only reruns some bugs and keeps the others'.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/ipcfuzz/ipcfuzz/ci"
	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "kernelbugs: %v\n", err)
		os.Exit(2)
	}
}

// Bug is one row of ci/kernels/bugs.tsv.
type Bug struct {
	Name, Base, Subsystem, Area, FixCommit, FixSubject, Release, Kind string
}

// Pair is what one compare of a bug's kernel found.
type Pair struct {
	A, B       string
	Exit       int
	Checks     int
	Seconds    float64
	Found      bool
	FirstIndex int     // the first script that diverged (0-based)
	FirstSecs  float64 // seconds to it
	FirstOps   int     // its shrunk length
	FirstSig   string
	FirstFile  string
	Signatures []string
	Causes     int
	CauseKeys  []string // each cause's key, in order of first appearance
	Failures   int
	Infra      int
	Error      string `json:",omitempty"`
}

// Result is one bug's record.
type Result struct {
	Bug
	Date         string
	Load         string
	BuildSecs    float64
	StockKernel  string
	BugKernel    string
	KernelKernel Pair
	ModelKernel  Pair
	// The reproducer of the first finding, and the witness, run in a
	// guest of each kernel: their exit statuses (-1: not run).
	ReproBug, ReproStock     int
	WitnessBug, WitnessStock int
	ReproFrom                string
	Error                    string `json:",omitempty"`
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("kernelbugs", flag.ContinueOnError)
	budget := fs.Duration("budget", 3*time.Minute, "time of each compare")
	only := fs.String("only", "", "the bugs to run, comma-separated (default: all of bugs.tsv)")
	seed := fs.Uint64("seed", 1, "the compares' seed")
	out := fs.String("out", "docs/kernel-bugs.md", "the table to write")
	work := fs.String("work", "", "where results and findings are kept (default: $XDG_CACHE_HOME/ipcfuzz/kernel-bugs)")
	tsv := fs.String("bugs", "ci/kernels/bugs.tsv", "the zoo's table")
	tableOnly := fs.Bool("table-only", false, "only write the table from the results kept")
	reproOnly := fs.Bool("repro-only", false, "keep the compares of the results kept and run only the reproducers again")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *budget <= 0 {
		return fmt.Errorf("--budget %v: want a positive duration", *budget)
	}
	if *work == "" {
		c, err := os.UserCacheDir()
		if err != nil {
			return err
		}
		*work = filepath.Join(c, "ipcfuzz", "kernel-bugs")
	}
	if err := os.MkdirAll(*work, 0o755); err != nil {
		return err
	}
	bugs, err := readBugs(*tsv)
	if err != nil {
		return err
	}
	resultsPath := filepath.Join(*work, "results.json")
	results := map[string]*Result{}
	if b, err := os.ReadFile(resultsPath); err == nil {
		if err := json.Unmarshal(b, &results); err != nil {
			return fmt.Errorf("%s: %w", resultsPath, err)
		}
	}
	if !*tableOnly {
		bin := filepath.Join(*work, "ipcfuzz")
		if o, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/ipcfuzz").CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./cmd/ipcfuzz: %v: %s", err, o)
		}
		want := map[string]bool{}
		for _, n := range strings.Split(*only, ",") {
			if n != "" {
				want[n] = true
			}
		}
		for _, b := range bugs {
			if len(want) > 0 && !want[b.Name] {
				continue
			}
			if ctx.Err() != nil {
				break
			}
			var r *Result
			if old, ok := results[b.Name]; ok && *reproOnly && old.Error == "" {
				r = old
				reproduce(ctx, bin, r)
			} else {
				r = hunt(ctx, bin, b, *budget, *seed, filepath.Join(*work, b.Name))
			}
			results[b.Name] = r
			data, _ := json.MarshalIndent(results, "", "  ")
			if err := corpus.WriteFileAtomic(resultsPath, data, 0o644); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "kernelbugs: %s: %s\n", b.Name, r.line())
		}
	}
	return corpus.WriteFileAtomic(*out, []byte(table(bugs, results, *budget, *seed)), 0o644)
}

// readBugs reads the zoo's table: a header line, then tab-separated rows.
func readBugs(path string) ([]Bug, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var bugs []Bug
	s := bufio.NewScanner(f)
	line := 0
	for s.Scan() {
		line++
		t := s.Text()
		if line == 1 || strings.TrimSpace(t) == "" || strings.HasPrefix(t, "#") {
			continue
		}
		c := strings.Split(t, "\t")
		if len(c) != 8 {
			return nil, fmt.Errorf("%s:%d: %d columns, want 8 (name base subsystem area fix_commit fix_subject release kind)", path, line, len(c))
		}
		bugs = append(bugs, Bug{c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]})
	}
	return bugs, s.Err()
}

// hunt builds, compares and reproduces one bug.
func hunt(ctx context.Context, bin string, b Bug, budget time.Duration, seed uint64, dir string) *Result {
	r := &Result{Bug: b, Date: time.Now().UTC().Format(time.RFC3339), Load: load(), ReproBug: -1, ReproStock: -1, WitnessBug: -1, WitnessStock: -1}
	_ = os.RemoveAll(dir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		r.Error = err.Error()
		return r
	}
	var err error
	if r.StockKernel, err = ci.BuildKernel(ctx, ci.Build{Base: b.Base, Log: os.Stderr}); err != nil {
		r.Error = err.Error()
		return r
	}
	began := time.Now()
	if r.BugKernel, err = ci.BuildKernel(ctx, ci.Build{Patches: filepath.Join("ci", "kernels", b.Name), Log: os.Stderr}); err != nil {
		r.Error = err.Error()
		return r
	}
	r.BuildSecs = time.Since(began).Seconds()
	stock, bug := "kernel:image="+r.StockKernel, "kernel:image="+r.BugKernel
	r.KernelKernel = compare(ctx, bin, stock, bug, b.Subsystem, budget, seed, filepath.Join(dir, "kernel-kernel"))
	r.ModelKernel = compare(ctx, bin, "optimized", bug, b.Subsystem, budget, seed, filepath.Join(dir, "optimized-kernel"))
	reproduce(ctx, bin, r)
	return r
}

// reproduce runs the first finding's reproducer and the witness in a guest
// of each kernel. The reproducer expects side A's results: the stock
// kernel's, or the model's where only the model found it.
func reproduce(ctx context.Context, bin string, r *Result) {
	stock, bug := "kernel:image="+r.StockKernel, "kernel:image="+r.BugKernel
	r.ReproFrom = ""
	r.ReproBug, r.ReproStock, r.WitnessBug, r.WitnessStock = -1, -1, -1, -1
	if p := r.KernelKernel; p.FirstFile != "" {
		r.ReproFrom = p.FirstFile
	} else if p := r.ModelKernel; p.FirstFile != "" {
		r.ReproFrom = p.FirstFile
	}
	if r.ReproFrom != "" {
		r.ReproBug = repro(ctx, bin, r.ReproFrom, bug)
		r.ReproStock = repro(ctx, bin, r.ReproFrom, stock)
	}
	if w := filepath.Join("ci", "kernels", r.Name, "witness.ops"); exists(w) {
		r.WitnessBug = repro(ctx, bin, w, bug)
		r.WitnessStock = repro(ctx, bin, w, stock)
	}
}

// compare runs one compare and reads its JSON summary.
func compare(ctx context.Context, bin, a, b, sub string, budget time.Duration, seed uint64, corpusDir string) Pair {
	p := Pair{A: a, B: b}
	cmd := exec.CommandContext(ctx, bin, "compare", a, b, "--subsystem", sub, "--time", budget.String(), "--seed", fmt.Sprint(seed), "--keep-going", "--json", "--corpus", corpusDir)
	cmd.Stderr = os.Stderr
	outb, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		p.Exit = ee.ExitCode()
	} else if err != nil {
		p.Error = err.Error()
		return p
	}
	var s struct {
		Checks   int     `json:"checks"`
		Seconds  float64 `json:"seconds"`
		Failures int     `json:"plugin_failures"`
		Infra    int     `json:"infrastructure"`
		Findings []struct {
			Signature string  `json:"signature"`
			Kind      string  `json:"kind"`
			Script    string  `json:"script"`
			Index     int     `json:"index"`
			Seconds   float64 `json:"seconds"`
			Ops       int     `json:"ops"`
		} `json:"findings"`
		Causes []struct {
			Key string `json:"key"`
		} `json:"causes"`
	}
	lines := strings.Split(strings.TrimSpace(string(outb)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &s); err != nil {
		p.Error = fmt.Sprintf("reading the summary: %v", err)
		return p
	}
	p.Checks, p.Seconds, p.Failures, p.Infra = s.Checks, s.Seconds, s.Failures, s.Infra
	p.Causes = len(s.Causes)
	for _, c := range s.Causes {
		p.CauseKeys = append(p.CauseKeys, c.Key)
	}
	first := -1
	for i, f := range s.Findings {
		p.Signatures = append(p.Signatures, f.Signature)
		if f.Kind == "divergence" && (first < 0 || f.Index < s.Findings[first].Index) {
			first = i
		}
	}
	if first >= 0 {
		f := s.Findings[first]
		p.Found, p.FirstIndex, p.FirstSecs, p.FirstOps, p.FirstSig, p.FirstFile = true, f.Index, f.Seconds, f.Ops, f.Signature, f.Script
	}
	if p.Causes == 0 {
		p.Causes = len(p.Signatures)
	}
	return p
}

// repro runs a script's reproducer in a guest of the kernel side and
// returns its exit status (3: the guest did not run it).
func repro(ctx context.Context, bin, script, side string) int {
	cmd := exec.CommandContext(ctx, bin, "repro", script, "--run", side)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	return 3
}

// line is one bug's verdict in a line.
func (r *Result) line() string {
	if r.Error != "" {
		return "error: " + r.Error
	}
	return fmt.Sprintf("stock vs bug: %s; optimized vs bug: %s; reproducer bug/stock exits %d/%d, witness %d/%d",
		r.KernelKernel.verdict(), r.ModelKernel.verdict(), r.ReproBug, r.ReproStock, r.WitnessBug, r.WitnessStock)
}

func (p Pair) verdict() string {
	if p.Error != "" {
		return "error: " + p.Error
	}
	if !p.Found {
		return fmt.Sprintf("not found in %d checks (%.0f s)", p.Checks, p.Seconds)
	}
	return fmt.Sprintf("found at script %d after %.0f s, %d ops, %s (%d signatures, %d causes: %s)", p.FirstIndex+1, p.FirstSecs, p.FirstOps, p.FirstSig, len(p.Signatures), p.Causes, strings.Join(p.CauseKeys, "; "))
}

// table is docs/kernel-bugs.md.
func table(bugs []Bug, results map[string]*Result, budget time.Duration, seed uint64) string {
	var b strings.Builder
	b.WriteString("# The kernel zoo: historic bugs re-introduced, and what ipcfuzz finds of them\n\n")
	b.WriteString("Each bug below was fixed upstream; `ci/kernels/<name>/` re-introduces it into Debian's 6.1 or 6.12\n")
	b.WriteString("source (its patch's header names the fix and says what user space sees), and `witness.ops` states\n")
	b.WriteString("the stock kernel's results of a script that shows it. The bench builds every bug kernel and hunts it\n")
	b.WriteString("under TCG with a fixed budget per compare; this page is its output:\n\n")
	fmt.Fprintf(&b, "```text\ngo run ./ci/kernelbugs --budget %v --seed %d   # builds, boots, compares, reproduces; writes this page\n```\n\n", budget, seed)
	b.WriteString("Columns: **stock vs bug** is `compare kernel:image=<stock> kernel:image=<bug> --keep-going`; **optimized vs bug** is\n")
	b.WriteString("`compare optimized kernel:image=<bug> --keep-going`; each gives the script (1-based) and seconds at which the first\n")
	b.WriteString("divergence was seen, its shrunk length and signature, and how many signatures (causes) the run reported.\n")
	b.WriteString("**repro** is the first finding's C reproducer run in a guest of each kernel (`ipcfuzz repro FILE --run`): bug/stock exit\n")
	b.WriteString("statuses, 1/0 is right; **witness** the same for `witness.ops`. **build** is the bug kernel's rebuild from the base tree\n")
	b.WriteString("(0 s: it was built before, by the cache). A finding whose sides differ only in the final state (`final`,\n")
	b.WriteString("`listing`, `space` signatures) is stored with a witness step appended, an observation (a layout, a listing, a\n")
	b.WriteString("stat, a semctl get) whose result differs, so that its C reproducer, which checks steps, tells the kernels apart.\n")
	b.WriteString("The guest kernels built here come from tinyconfig and have no swap (`MADV_WILLNEED` on anonymous memory is\n")
	b.WriteString("EBADF); the kernel side reports it as the `no-swap` VMA quirk and the models follow it.\n\n")
	b.WriteString("| bug | area | fix | base | kind | stock vs bug | optimized vs bug | repro | witness | build |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|\n")
	found, total := 0, 0
	for _, bug := range bugs {
		r, ok := results[bug.Name]
		total++
		fix := fmt.Sprintf("`%s` %s (%s)", short(bug.FixCommit), bug.FixSubject, bug.Release)
		if !ok {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | not run | not run | | | |\n", bug.Name, bug.Area, fix, bug.Base, bug.Kind)
			continue
		}
		if r.Error != "" {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | error: %s | | | | |\n", bug.Name, bug.Area, fix, bug.Base, bug.Kind, strings.ReplaceAll(r.Error, "|", "/"))
			continue
		}
		if r.KernelKernel.Found || r.ModelKernel.Found {
			found++
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %.0f s |\n", bug.Name, bug.Area, fix, bug.Base, bug.Kind,
			r.KernelKernel.cell(), r.ModelKernel.cell(), exits(r.ReproBug, r.ReproStock), exits(r.WitnessBug, r.WitnessStock), r.BuildSecs)
	}
	fmt.Fprintf(&b, "\nFound: %d of %d bugs.\n\n", found, total)
	b.WriteString("The runs (date, load average at the start of each bug's hunt):\n\n")
	names := make([]string, 0, len(results))
	for n := range results {
		names = append(names, n)
	}
	slices.Sort(names)
	b.WriteString("| bug | date | load | stock vs bug: checks, seconds | optimized vs bug: checks, seconds | every signature (stock vs bug) |\n|---|---|---|---|---|---|\n")
	for _, n := range names {
		r := results[n]
		fmt.Fprintf(&b, "| %s | %s | %s | %d, %.0f | %d, %.0f | %s |\n", n, r.Date, r.Load, r.KernelKernel.Checks, r.KernelKernel.Seconds, r.ModelKernel.Checks, r.ModelKernel.Seconds, strings.Join(r.KernelKernel.Signatures, ", "))
	}
	return b.String()
}

func (p Pair) cell() string {
	switch {
	case p.Error != "":
		return "error"
	case !p.Found:
		s := fmt.Sprintf("not found (%d checks)", p.Checks)
		if p.Failures > 0 {
			s += fmt.Sprintf(", %d plugin failures", p.Failures)
		}
		return s
	}
	s := fmt.Sprintf("script %d, %.0f s, %d ops, `%s`; %d sig., %d causes", p.FirstIndex+1, p.FirstSecs, p.FirstOps, p.FirstSig, len(p.Signatures), p.Causes)
	if p.Failures > 0 {
		s += fmt.Sprintf(", %d plugin failures", p.Failures)
	}
	return s
}

func exits(bug, stock int) string {
	if bug < 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d", bug, stock)
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

func load() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
