// Package layers_test holds the house's layering as a test: which room
// may import which. The rooms and the reasons are those of this
// repository's ARCHITECTURE.md; a package that imports up a floor (the
// vocabulary importing the runner, a model importing the plugin host, a
// generator importing an implementation) fails it, naming the arrow.
package layers_test

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/ipcfuzz/ipcfuzz/"

// rooms says, for each room (a package path, or a prefix ending in "/"),
// which of our packages its non-test code may import (the same forms).
// The most specific room wins. Test files may import more (a property
// test opens implementations).
var rooms = map[string][]string{
	// The ground floor: the vocabulary imports nothing of ours.
	"harness/ops": nil,
	// The harness stands on the vocabulary; the runner on the rest.
	"harness/":       {"harness/ops"},
	"harness/runner": {"harness/ops", "harness/equiv", "harness/shrink", "harness/corpus"},
	// The output formats render what the runner tells; the HTML one
	// is the report of the finding files.
	"harness/sink": {"harness/runner", "harness/report", "harness/corpus"},
	// The report reads finding files.
	"harness/report": {"harness/ops", "harness/corpus"},
	// The worst-case search measures through the complexity engine and
	// minimises with the shrinker's renumbering.
	"harness/worst": {"harness/ops", "harness/complexity", "harness/shrink"},
	// Performance findings judge patterns through the search's Measure and
	// are stored like the corpus's findings; a run draws its scripts as
	// the runner does and reports in the runner's result.
	"harness/perf": {"harness/ops", "harness/complexity", "harness/worst", "harness/corpus", "harness/runner"},
	// Implementations know the vocabulary and one another, nothing of
	// the harness's machinery or of plugins.
	"impls/": {"harness/ops", "impls/"},
	"impls":  {"harness/ops", "impls/"},
	// Inside the kernel adapter: the process machinery knows nothing of
	// the adapters above it.
	"impls/kernel/internal/": {"harness/ops", "impls/kernel/internal/"},
	// The wire knows the vocabulary and its own envelopes.
	"plugins":      {"harness/ops", "plugins/proto/"},
	"plugins/":     {"harness/ops", "plugins/"},
	"plugins/host": {"harness/ops", "plugins", "plugins/proto/"},
	// An example plugin composes models and serves them.
	"plugins/example/": {"harness/ops", "impls/", "plugins"},
	// Generators stand on the vocabulary and the engine; the engine on
	// the harness. None knows an implementation or the wire.
	"props/engine": {"harness/"},
	"props/":       {"harness/ops", "harness/equiv", "props/engine"},
	"props":        {"props/"},
	// Opening sides assembles implementations, the wire and the runner;
	// it says which failures to open a side are the user's to fix, in the
	// command line's terms.
	"sides": {"ci", "harness/", "impls", "plugins/host", "internal/cli"},
	// The kernel build the binary shares with ci/kernel.sh imports nothing
	// of ours.
	"ci": nil,
	// The tools beside the nightly scripts: the zoo's bench builds kernels,
	// runs the ipcfuzz binary and writes as the corpus does; the
	// 0-day-shaped table reads complexity's reports.
	"ci/": {"ci", "harness/complexity", "harness/corpus", "harness/ops"},
	// The shard table is data of the registry's subsystems, handed in: it
	// knows their relations' names, not the registry.
	"ci/shards": {"harness/equiv"},
	// The sides tests share: suites over opened sides, and a built-in's
	// model started for a test (impls); it builds the ipcfuzz binary as
	// the other end-to-end tests do (internal/testkit).
	"sides/sidestest": {"harness/", "impls", "internal/testkit", "props/engine", "sides"},
	// What several packages' tests share imports nothing of ours.
	"internal/testkit": nil,
	// The command line's tables, refusals and exit statuses import
	// nothing of ours: the command hands its lists in.
	"internal/cli": nil,
	// The command assembles everything.
	"cmd/": {"ci/shards", "harness/", "impls", "internal/cli", "impls/kernel/repro", "plugins", "plugins/host", "props", "props/", "sides"},
}

// roomOf is the most specific room that holds pkg.
func roomOf(pkg string) (string, bool) {
	best, found := "", false
	for r := range rooms {
		if matches(pkg, r) && len(r) >= len(best) {
			best, found = r, true
		}
	}
	return best, found
}

// matches reports whether pkg is the package pattern names, or under it
// when the pattern ends in "/".
func matches(pkg, pattern string) bool {
	if strings.HasSuffix(pattern, "/") {
		return strings.HasPrefix(pkg, pattern)
	}
	return pkg == pattern
}

type listed struct {
	ImportPath string
	Imports    []string
}

// ours lists every package of the module with the packages of ours its
// non-test code imports.
func ours(t *testing.T) []listed {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var pkgs []listed
	for dec.More() {
		var p listed
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list: %v", err)
		}
		p.ImportPath = strings.TrimPrefix(p.ImportPath, module)
		var imps []string
		for _, i := range p.Imports {
			if rest, ok := strings.CutPrefix(i, module); ok {
				imps = append(imps, rest)
			}
		}
		p.Imports = imps
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// Every import of ours runs down a floor, as rooms says.
func TestImportsRunDown(t *testing.T) {
	pkgs := ours(t)
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages: not the whole module", len(pkgs))
	}
	for _, p := range pkgs {
		if strings.HasPrefix(p.ImportPath, "github.com/") || strings.Contains(p.ImportPath, "/proto/") {
			continue // the module root's own test package; generated code
		}
		room, ok := roomOf(p.ImportPath)
		if !ok {
			t.Errorf("%s is in no room of layers_test.go: say which floor it is on", p.ImportPath)
			continue
		}
		for _, imp := range p.Imports {
			if !allowed(room, imp) {
				t.Errorf("%s imports %s: the room %q may import only %v", p.ImportPath, imp, room, rooms[room])
			}
		}
	}
}

func allowed(room, imp string) bool {
	for _, pattern := range rooms[room] {
		if matches(imp, pattern) {
			return true
		}
	}
	return false
}
