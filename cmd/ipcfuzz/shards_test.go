package main

import (
	"bytes"
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/props"

	"github.com/ipcfuzz/ipcfuzz/ci/shards"
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
	table := shardTable()
	kinds := map[string]map[string]int{}
	names := map[string]bool{}
	for i, s := range table {
		require.Equal(t, i, s.ID)
		require.False(t, names[s.Name], "shard name %s twice", s.Name)
		names[s.Name] = true
		if kinds[s.Subsystem] == nil {
			kinds[s.Subsystem] = map[string]int{}
		}
		kinds[s.Subsystem][s.Kind]++
		_, err := time.ParseDuration(s.Budget)
		require.NoError(t, err, s.Name)
		if s.Kind == shards.Compare {
			args := strings.Fields(strings.TrimPrefix(s.Command, "ipcfuzz compare "))
			_, err := parseCompare(args)
			require.NoError(t, err, "shard %s: %s", s.Name, s.Command)
		}
		if s.Kind == shards.Perf && strings.HasPrefix(s.Command, "ipcfuzz compare ") {
			args := strings.Fields(strings.TrimPrefix(s.Command, "ipcfuzz compare "))
			c, err := parseCompare(args)
			require.NoError(t, err, "shard %s: %s", s.Name, s.Command)
			require.True(t, c.perf.on, "shard %s: a perf shard that compares compares costs: %s", s.Name, s.Command)
		} else if s.Kind == shards.Perf {
			args := strings.Fields(strings.TrimPrefix(s.Command, "ipcfuzz worst "))
			_, err := parseWorst(args, io.Discard)
			require.NoError(t, err, "shard %s: %s", s.Name, s.Command)
		}
	}
	for _, sub := range props.Names() {
		require.GreaterOrEqual(t, kinds[sub][shards.Compare], 1, sub)
		require.Equal(t, 1, kinds[sub][shards.Fuzz], sub)
		require.Equal(t, 1, kinds[sub][shards.Rapid], sub)
		require.Equal(t, 2, kinds[sub][shards.Perf], sub) // worst, and compare --perf
	}
	require.Len(t, kinds, len(props.Names()))
}

// The fuzz shards are exactly the packages that have Fuzz targets, as go
// test finds them (a FuzzXxx(*testing.F) in a test file of the package, as
// go list gives them; nightly.sh lists them with go test -list, which
// TestNightlyFuzzFindingExits1 runs): a target is never left out of the
// nights. Read from the source, not with go test -list, which links a
// test binary per package.
func TestFuzzShardsMatchFuzzTargets(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-json=ImportPath,Dir,TestGoFiles,XTestGoFiles", "../../props/...").Output()
	require.NoError(t, err)
	withTargets := map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var pkg struct {
			ImportPath, Dir           string
			TestGoFiles, XTestGoFiles []string
		}
		require.NoError(t, dec.Decode(&pkg))
		for _, name := range append(pkg.TestGoFiles, pkg.XTestGoFiles...) {
			f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(pkg.Dir, name), nil, parser.SkipObjectResolution)
			require.NoError(t, err)
			for _, d := range f.Decls {
				if fn, ok := d.(*ast.FuncDecl); ok && isFuzzTarget(fn) {
					withTargets["./"+strings.TrimPrefix(pkg.ImportPath, "github.com/ipcfuzz/ipcfuzz/")] = true
				}
			}
		}
	}
	fuzzed := map[string]bool{}
	for _, s := range shardTable() {
		if s.Kind == shards.Fuzz {
			fuzzed[s.Command[strings.LastIndex(s.Command, " ")+1:]] = true
		}
	}
	require.NotEmpty(t, withTargets)
	require.Equal(t, withTargets, fuzzed)
}

func TestListShardsJSON(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 0, run(context.Background(), []string{"list", "--shards", "--json"}, &out, &errb), errb.String())
	var got []shards.Shard
	require.NoError(t, json.Unmarshal(out.Bytes(), &got))
	require.Equal(t, shardTable(), got)
	require.Equal(t, 1, strings.Count(strings.TrimSpace(out.String()), "\n")+1, "one line, for a workflow output")
}

// isFuzzTarget is go test's rule: func FuzzXxx(f *testing.F), Xxx not
// starting with a lower-case letter.
func isFuzzTarget(fn *ast.FuncDecl) bool {
	name, ok := strings.CutPrefix(fn.Name.Name, "Fuzz")
	if !ok || fn.Recv != nil || fn.Type.TypeParams != nil {
		return false
	}
	if r, _ := utf8.DecodeRuneInString(name); unicode.IsLower(r) {
		return false
	}
	params := fn.Type.Params.List
	if len(params) != 1 || len(params[0].Names) > 1 {
		return false
	}
	star, ok := params[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "F"
}
