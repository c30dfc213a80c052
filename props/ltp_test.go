package props_test

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// ltpDir holds one script per LTP test of the SysV IPC syscalls.
var ltpDir = filepath.Join(corpusDir, "ltp")

// ltpHeader is the first line of every script of corpus/ltp: the LTP test
// it ports and the LTP commit it was read at.
var ltpHeader = regexp.MustCompile(`^# LTP testcases/kernel/syscalls/([a-z]+)/([a-z]+[0-9]+)\.c \(linux-test-project/ltp ([0-9a-f]{12})[,)]`)

// ltpFile is what one script of corpus/ltp says of its LTP test: the case
// lines it ports ("# Case: ..."), and those it cannot, each with its
// reason ("# Not ported: <case>: <reason>").
type ltpFile struct {
	test, commit string
	ported       int
	notPorted    []ltpGap
}

type ltpGap struct{ test, what, reason string }

// ltpT is what readLTP needs of a test: a *testing.T, or fakeT.
type ltpT interface {
	require.TestingT
	Helper()
}

// readLTP reads the case lines of one script, and checks that each ported
// one is followed by an operation that states its result.
func readLTP(t ltpT, path string) ltpFile {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out ltpFile
	sc := bufio.NewScanner(f)
	n, pending := 0, 0 // pending: the line of a Case still waiting for its operation
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if n == 1 {
			m := ltpHeader.FindStringSubmatch(line)
			require.NotNil(t, m, "%s:1: the first line must name the LTP test and commit: %q", path, line)
			require.Equal(t, "ltp-"+m[2]+".ops", filepath.Base(path), "%s:1: the file must be named after its LTP test", path)
			out.test, out.commit = m[2], m[3]
			continue
		}
		switch {
		case strings.HasPrefix(line, "# Case:"):
			require.NotEmpty(t, strings.TrimSpace(strings.TrimPrefix(line, "# Case:")), "%s:%d: a Case names its case", path, n)
			out.ported++
			if pending == 0 {
				pending = n
			}
		case strings.HasPrefix(line, "# Not ported:"):
			body := strings.TrimSpace(strings.TrimPrefix(line, "# Not ported:"))
			i := strings.LastIndex(body, ": ")
			require.True(t, i > 0 && i+2 < len(body), "%s:%d: want \"# Not ported: <case>: <reason>\", got %q", path, n, line)
			out.notPorted = append(out.notPorted, ltpGap{out.test, body[:i], body[i+2:]})
		case line == "" || strings.HasPrefix(line, "#"):
		default:
			if pending != 0 {
				require.Contains(t, line, " -> ", "%s:%d: the operation after the Case of line %d states no result", path, n, pending)
				pending = 0
			}
		}
	}
	require.NoError(t, sc.Err())
	require.Zero(t, pending, "%s:%d: a Case with no operation after it", path, pending)
	return out
}

// ltpSection renders docs/ltp.md's tables from the scripts: per LTP test,
// the lines ported and the lines in all; then the lines not ported, by
// reason.
func ltpSection(files []ltpFile) string {
	var b strings.Builder
	ported, total := 0, 0
	b.WriteString("| LTP test | lines ported / lines |\n|---|---|\n")
	for _, f := range files {
		n := f.ported + len(f.notPorted)
		fmt.Fprintf(&b, "| %s | %d / %d |\n", f.test, f.ported, n)
		ported += f.ported
		total += n
	}
	fmt.Fprintf(&b, "| all | %d / %d (%d %%) |\n", ported, total, ported*100/max(total, 1))
	byReason := map[string][]ltpGap{}
	for _, f := range files {
		for _, g := range f.notPorted {
			byReason[g.reason] = append(byReason[g.reason], g)
		}
	}
	reasons := make([]string, 0, len(byReason))
	for r := range byReason {
		reasons = append(reasons, r)
	}
	sort.Slice(reasons, func(i, j int) bool {
		a, b := byReason[reasons[i]], byReason[reasons[j]]
		if len(a) != len(b) {
			return len(a) > len(b)
		}
		return reasons[i] < reasons[j]
	})
	b.WriteString("\n| not expressible: reason | lines | where |\n|---|---|---|\n")
	for _, r := range reasons {
		gs := byReason[r]
		where := make([]string, len(gs))
		for i, g := range gs {
			where[i] = g.test + " " + g.what
		}
		fmt.Fprintf(&b, "| %s | %d | %s |\n", r, len(gs), strings.Join(where, "; "))
	}
	return b.String()
}

// ltpDoc is the document that holds the LTP table, from this package.
var ltpDoc = filepath.Join("..", "docs", "ltp.md")

// The LTP table of docs/ltp.md is what the scripts of corpus/ltp say: the
// test counts the "# Case:" and "# Not ported:" lines of every script and
// renders the tables, which the document must hold as they are (between
// its two ltp-table markers), so that it cannot drift.
var ltpUpdate = flag.Bool("ltp.update", false, "rewrite docs/ltp.md's LTP table from corpus/ltp (TestLTPCorpusTable)")

func TestLTPCorpusTable(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(ltpDir, "*.ops"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	sort.Strings(paths)
	var files []ltpFile
	commits := map[string]bool{}
	for _, p := range paths {
		f := readLTP(t, p)
		commits[f.commit] = true
		files = append(files, f)
	}
	require.Len(t, commits, 1, "every script of corpus/ltp is read at one LTP commit")

	doc, err := os.ReadFile(ltpDoc)
	require.NoError(t, err)
	const begin, end = "<!-- ltp-table: begin (props/ltp_test.go checks it) -->\n", "<!-- ltp-table: end -->"
	text := string(doc)
	i, j := strings.Index(text, begin), strings.Index(text, end)
	require.True(t, i >= 0 && j > i, "docs/ltp.md has no %q ... %q section", strings.TrimSpace(begin), end)
	got, want := text[i+len(begin):j], ltpSection(files)
	if *ltpUpdate && got != want {
		require.NoError(t, os.WriteFile(ltpDoc, []byte(text[:i+len(begin)]+want+text[j:]), 0o644))
		got = want
	}
	require.Equal(t, want, got, "docs/ltp.md's LTP table differs from corpus/ltp (go test ./props -run TestLTPCorpusTable -ltp.update rewrites it); it should read:\n%s", want)
}

// The table catches a change: a case moved from ported to not ported, a
// Case with no stated result, a file not named after its test.
func TestLTPCorpusTableCatches(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	head := "# LTP testcases/kernel/syscalls/msgget/msgget09.c (linux-test-project/ltp 695827725f4f):\n"
	f := readLTP(t, write("ltp-msgget09.ops", head+"# Not ported: tc[1]: fork\nsubsystem msg\n# Case: tc[0]\n# Case: tc[2]\nh1 = get msg key=0x0 mode=0600 -> id=0\n"))
	require.Equal(t, 2, f.ported)
	require.Equal(t, []ltpGap{{"msgget09", "tc[1]", "fork"}}, f.notPorted)
	require.Equal(t, "| LTP test | lines ported / lines |\n|---|---|\n| msgget09 | 2 / 3 |\n| all | 2 / 3 (66 %) |\n\n"+
		"| not expressible: reason | lines | where |\n|---|---|---|\n| fork | 1 | msgget09 tc[1] |\n", ltpSection([]ltpFile{f}))

	for _, bad := range []struct{ name, body string }{
		{"ltp-msgget09.ops", head + "subsystem msg\n# Case: tc[0]\nh1 = get msg key=0x0 mode=0600\n"},
		{"ltp-msgget09.ops", head + "subsystem msg\nh1 = get msg key=0x0 mode=0600 -> id=0\n# Case: tc[0]\n"},
		{"ltp-msgget09.ops", head + "# Not ported: tc[1] with no reason\nsubsystem msg\n"},
		{"ltp-msgget08.ops", head + "subsystem msg\n"},
		{"ltp-msgget09.ops", "# msgget09\nsubsystem msg\n"},
	} {
		p := write(bad.name, bad.body)
		ft := &fakeT{}
		func() {
			defer func() { _ = recover() }()
			readLTP(ft, p)
		}()
		require.True(t, ft.failed, "%s passed:\n%s", bad.name, bad.body)
		require.NoError(t, os.Remove(p))
	}
}

// fakeT records a failure of readLTP's checks instead of failing the test.
type fakeT struct{ failed bool }

func (f *fakeT) Helper() {}

func (f *fakeT) Errorf(string, ...any) { f.failed = true }

func (f *fakeT) FailNow() { f.failed = true; panic("FailNow") }
