package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/impls/kernel"
	"github.com/ipcfuzz/ipcfuzz/internal/testkit"
)

// The README and the documents of docs/ are executable: every block of
// them is run here, by its fence, the blocks in parallel.
//
//   - sh: each line is a command, run as from the repository's root; a
//     trailing "# exit N" is its expected exit status (default 0). "go run
//     ./cmd/ipcfuzz" is this test's build of ipcfuzz; "go build" and "go
//     test" run as written, except "go test ./...", which is this suite.
//     What the commands write (findings/, out.svg, bin/) goes to a scratch
//     root of the block's own (see runReadme), not into the checkout.
//   - console: "$ COMMAND" (with "# exit N" as in sh) then the output it
//     prints. Each line of the output shown must appear in the real one,
//     in order, with decimal numbers (timings, fitted exponents) free to
//     differ and integers (sizes, counts) exact; lines may be left out
//     ("..." says so), and "..." inside a line stands for any text (what a
//     generator change may alter: a pattern's operations, a count of
//     scripts).
//   - ops: a script; it is replayed on naive and optimized and, where the
//     kernel can run, optimized and kernel, and every result it states must
//     be what each gives.
//   - go, text: shown, not run (a plugin's source is built by an sh block;
//     text holds synopses).
//
// A fence right after the line "<!-- long -->" is a long block: one that
// takes tens of seconds (a QEMU boot, a search with a budget, a shrink
// against the kernel), run only with IPCFUZZ_LONG=1, as .ci/run does.
// Commands that need the kernel side skip, saying so, where it cannot run.
// After every block has run, git status, ignored files included, is what
// it was.
func TestReadme(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the README's commands take about a minute")
	}
	// Not t.Parallel(): then its blocks (the fuzz and complexity ones are
	// the package's longest) would start last, behind every parallel test
	// of the package. As it is, they run in parallel with each other as
	// soon as it is reached, and the parallel tests after: none runs
	// beside them (the fuzz shards of the nightly tests write into
	// props/ids/testdata/fuzz for a while, which go test -fuzz ./props/ids
	// would read and git status see).
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	var blocks []readmeBlock
	for _, doc := range docFiles(t, root) {
		blocks = append(blocks, readmeBlocks(t, root, doc)...)
	}
	before := gitStatus(t, root)
	t.Cleanup(func() { // after the blocks, which run in parallel
		if after := gitStatus(t, root); after != before {
			t.Errorf("the README's commands changed the work tree:\nbefore:\n%s\nafter:\n%s", before, after)
		}
	})
	tracked := trackedTopLevel(t, root)
	kernelOK := kernelAvailable()
	for _, b := range blocks {
		name := fmt.Sprintf("%s:%d_%s", strings.ReplaceAll(b.file, "/", "_"), b.line, b.lang)
		t.Run(name, func(t *testing.T) {
			if b.long {
				testkit.Long(t)
			}
			t.Parallel()
			switch b.lang {
			case "sh":
				scratch := scratchRoot(t, root, tracked)
				for i, line := range b.lines {
					cmd, want := readmeCommand(line)
					if cmd == "" {
						continue
					}
					where := fmt.Sprintf("%s:%d: %s", b.file, b.line+1+i, cmd)
					if strings.Contains(cmd, "$"+envTestImage) {
						img, why := readmeImage()
						if why != "" {
							t.Logf("%s: skipped: %s", where, why)
							continue
						}
						cmd = strings.ReplaceAll(cmd, "$"+envTestImage, img)
					}
					if needsKernel(cmd) && !kernelOK {
						t.Logf("%s: skipped: the kernel side needs a private IPC namespace (root)", where)
						continue
					}
					code, out := runReadme(t, root, scratch, cmd)
					require.Equal(t, want, code, "%s\n%s", where, clipOutput(out))
				}
			case "console":
				require.True(t, len(b.lines) > 0 && strings.HasPrefix(b.lines[0], "$ "), "%s:%d: a console block starts with $ COMMAND", b.file, b.line+1)
				cmd, want := readmeCommand(strings.TrimPrefix(b.lines[0], "$ "))
				if needsKernel(cmd) && !kernelOK {
					t.Skipf("%s:%d: the kernel side needs a private IPC namespace (root)", b.file, b.line+1)
				}
				code, out := runReadme(t, root, scratchRoot(t, root, tracked), cmd)
				require.Equal(t, want, code, "%s:%d: %s\n%s", b.file, b.line+1, cmd, clipOutput(out))
				matchShown(t, b.file, b.line+2, b.lines[1:], out)
			case "ops":
				file := filepath.Join(t.TempDir(), fmt.Sprintf("readme-%d.ops", b.line))
				require.NoError(t, os.WriteFile(file, []byte(strings.Join(b.lines, "\n")+"\n"), 0o644))
				pairs := []string{"naive,optimized"}
				if kernelOK {
					pairs = append(pairs, "optimized,kernel")
				} else {
					t.Logf("%s:%d: optimized,kernel skipped: the kernel side needs a private IPC namespace (root)", b.file, b.line)
				}
				for _, p := range pairs {
					r := ipcfuzz(t, "replay", file, "--impls", p)
					require.Equal(t, 0, r.code, "%s:%d: the script does not hold on %s:\n%s%s", b.file, b.line, p, r.stdout, r.stderr)
				}
			case "go", "text":
			default:
				t.Fatalf("%s:%d: a block of %q is neither run nor declared shown", b.file, b.line, b.lang)
			}
		})
	}
}

// trackedTopLevel lists the names at the top of the checkout that git
// tracks (go.mod, cmd, corpus, ...).
func trackedTopLevel(t *testing.T, root string) []string {
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	require.NoError(t, err)
	seen := map[string]bool{}
	var names []string
	for _, f := range strings.Split(string(out), "\x00") {
		if top, _, _ := strings.Cut(f, "/"); top != "" && !seen[top] {
			seen[top] = true
			names = append(names, top)
		}
	}
	return names
}

// scratchRoot makes a directory of the test's own that stands for the
// repository's root: a symbolic link to each tracked name at the top of
// the checkout, and nothing else, so that a command reads corpus/... as it
// is and writes findings/, out.svg or bin/ here.
func scratchRoot(t *testing.T, root string, tracked []string) string {
	dir := t.TempDir()
	for _, name := range tracked {
		require.NoError(t, os.Symlink(filepath.Join(root, name), filepath.Join(dir, name)))
	}
	return dir
}

type readmeBlock struct {
	file  string // the document, relative to the repository's root
	line  int    // the line of the opening fence
	lang  string
	long  bool // the line before the fence is longMarker: run with IPCFUZZ_LONG=1 only
	lines []string
}

// docFiles lists the executable documents, relative to root: README.md,
// then docs/*.md.
func docFiles(t *testing.T, root string) []string {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	files := []string{"README.md"}
	for _, d := range docs {
		files = append(files, filepath.Join("docs", filepath.Base(d)))
	}
	return files
}

// longMarker, on the line before a fence, makes its block a long one.
const longMarker = "<!-- long -->"

// readmeBlocks reads the fenced blocks of the markdown file root/file.
func readmeBlocks(t *testing.T, root, file string) []readmeBlock {
	f, err := os.Open(filepath.Join(root, file))
	require.NoError(t, err)
	defer f.Close()
	var blocks []readmeBlock
	var cur *readmeBlock
	long := false // the line before was the long marker
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && line == longMarker:
			long = true
			continue
		case cur == nil && strings.HasPrefix(line, "```"):
			info := strings.Fields(strings.TrimPrefix(line, "```"))
			require.NotEmpty(t, info, "%s:%d: a fence without a language", file, n)
			require.Len(t, info, 1, "%s:%d: a fence says %q after its language (a long block has the line %s before it)", file, n, line, longMarker)
			cur = &readmeBlock{file: file, line: n, lang: info[0], long: long}
		case cur == nil:
			long = false
		case cur != nil && line == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, line)
		}
	}
	require.NoError(t, sc.Err())
	require.Nil(t, cur, "%s: a fence is never closed", file)
	return blocks
}

var exitComment = regexp.MustCompile(`#\s*exit (\d+)`)

// readmeCommand splits a line of an sh block into its command and the exit
// status it expects; a comment line gives "".
func readmeCommand(line string) (string, int) {
	line = strings.TrimSpace(line)
	if line == "" || strings.HasPrefix(line, "#") {
		return "", 0
	}
	want := 0
	if m := exitComment.FindStringSubmatch(line); m != nil {
		want, _ = strconv.Atoi(m[1])
	}
	if i := strings.Index(line, " #"); i >= 0 {
		line = strings.TrimSpace(line[:i])
	}
	return line, want
}

// readmeImage is the kernel image the README's kernel:image= commands
// boot ($IPCFUZZ_TEST_IMAGE), or why there is none.
func readmeImage() (string, string) {
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		return "", "kernel:image= needs QEMU (apt-get install qemu-system-x86)"
	}
	img := os.Getenv(envTestImage)
	if img == "" {
		return "", envTestImage + " names no kernel image (.ci/run fetches Debian's 6.1)"
	}
	return img, ""
}

// needsKernel reports whether a command runs the kernel side: it names it,
// it fuzzes with the default implementations (the kernel among them), or it
// is a C reproducer.
func needsKernel(cmd string) bool {
	if strings.HasPrefix(cmd, "./repro") { // a reproducer makes a private IPC namespace
		return true
	}
	if slices.Contains(strings.Fields(cmd), "kernel") || strings.Contains(cmd, ",kernel") || strings.Contains(cmd, "kernel,") {
		return true
	}
	return strings.Contains(cmd, "-fuzz=") && !strings.Contains(cmd, "IPCFUZZ_IMPLS=")
}

// runReadme runs one command of the README as from the repository's root:
// in scratch (see scratchRoot), except go commands, which run in the root
// itself (a package seen through a link would miss the build cache) with
// a relative -o taken in scratch.
func runReadme(t *testing.T, root, scratch, line string) (int, string) {
	args := shellWords(t, line)
	var env []string
	for len(args) > 1 && regexp.MustCompile(`^[A-Z_]+=`).MatchString(args[0]) {
		env, args = append(env, args[0]), args[1:]
	}
	dir := scratch
	switch {
	case len(args) >= 3 && args[0] == "go" && args[1] == "run" && args[2] == "./cmd/ipcfuzz":
		args = append([]string{bin}, args[3:]...)
	case len(args) >= 2 && args[0] == "go" && args[1] == "test" && slices.Contains(args, "./..."):
		t.Logf("%s: this suite itself, not run again", line)
		return 0, ""
	case args[0] == "cc":
		// A C compiler builds a reproducer in scratch.
		cc, err := exec.LookPath("cc")
		if err != nil {
			t.Skipf("%s: no C compiler", line)
		}
		args[0] = cc
	case args[0] == "go":
		dir = root
		for i := 1; i+1 < len(args); i++ {
			if args[i] == "-o" && !filepath.IsAbs(args[i+1]) {
				args[i+1] = filepath.Join(scratch, args[i+1])
			}
		}
	default:
		args[0] = filepath.Join(scratch, args[0])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String()
	}
	require.NoError(t, err, line)
	return 0, out.String()
}

// shellWords splits a command line on blanks, with single and double quotes.
func shellWords(t *testing.T, s string) []string {
	var words []string
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	require.Zero(t, quote, "unclosed quote in %q", s)
	if in {
		words = append(words, cur.String())
	}
	return words
}

var number = regexp.MustCompile(`-?[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?`)

// matchShown checks that every line shown appears in out, in order, with
// decimal numbers free to differ, blanks collapsed and "..." in a line
// standing for any text.
func matchShown(t *testing.T, file string, line int, shown []string, out string) {
	got := strings.Split(out, "\n")
	j := 0
	for i, s := range shown {
		if strings.TrimSpace(s) == "..." || strings.TrimSpace(s) == "" {
			continue
		}
		re := regexp.MustCompile("^" + shownPattern(s) + "$")
		for j < len(got) && !re.MatchString(strings.Join(strings.Fields(got[j]), " ")) {
			j++
		}
		require.Less(t, j, len(got), "%s:%d: %q is not in the output (in order):\n%s", file, line+i, s, clipOutput(out))
		j++
	}
}

// shownPattern turns a shown line into a pattern: decimal numbers match any
// number, runs of blanks one blank, "..." any text.
func shownPattern(s string) string {
	var parts []string
	for _, part := range strings.Split(strings.Join(strings.Fields(s), " "), "...") {
		parts = append(parts, numberPattern(part))
	}
	return strings.Join(parts, ".*")
}

// numberPattern quotes s, its decimal numbers matching any number.
func numberPattern(s string) string {
	var b strings.Builder
	last := 0
	for _, m := range number.FindAllStringIndex(s, -1) {
		if !strings.ContainsAny(s[m[0]:m[1]], ".e") {
			continue // an integer (a size, a count) is shown as it is
		}
		b.WriteString(regexp.QuoteMeta(s[last:m[0]]))
		b.WriteString(`-?[0-9]+(\.[0-9]+)?(e[-+]?[0-9]+)?`)
		last = m[1]
	}
	b.WriteString(regexp.QuoteMeta(s[last:]))
	return b.String()
}

func gitStatus(t *testing.T, root string) string {
	cmd := exec.Command("git", "status", "--porcelain", "--ignored")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("git status: %v (not a git work tree)", err)
	}
	return string(out)
}

// kernelAvailable reports whether the kernel side can run here (a private
// IPC namespace: root).
func kernelAvailable() bool {
	m, err := kernel.New()
	if err != nil {
		return false
	}
	m.Close()
	return true
}

func clipOutput(s string) string {
	if len(s) > 4000 {
		return s[:2000] + "\n...\n" + s[len(s)-2000:]
	}
	return s
}

// readmeMaxLines is as long as the README may grow: what a newcomer reads
// before the first command. The reference goes in docs/.
const readmeMaxLines = 300

// The README stays short.
func TestReadmeIsShort(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	n := strings.Count(string(data), "\n")
	require.LessOrEqual(t, n, readmeMaxLines, "README.md has %d lines, at most %d: move the reference to docs/", n, readmeMaxLines)
}

// mdLink is a markdown link or image: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// Every relative link of the README and of docs/*.md names a file or
// directory that exists: a link to a document another branch adds comes
// with that document.
func TestDocsLinksExist(t *testing.T) {
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	links := 0
	for _, doc := range docFiles(t, root) {
		data, err := os.ReadFile(filepath.Join(root, doc))
		require.NoError(t, err)
		for i, line := range strings.Split(string(data), "\n") {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target, _, _ := strings.Cut(m[1], "#")
				if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				links++
				_, err := os.Stat(filepath.Join(root, filepath.Dir(doc), target))
				require.NoError(t, err, "%s:%d: the link %s names nothing", doc, i+1, m[1])
			}
		}
	}
	require.Greater(t, links, 10, "the README's links to docs/ were not seen")
}

// A shown line matches the real one with other decimal numbers and
// blanks, "..." standing for any text; integers and the rest are exact.
func TestShownPattern(t *testing.T) {
	for _, c := range []struct {
		shown, got string
		match      bool
	}{
		{"naive  n^1.99 [1.98, 2.00] O(n^2)", "naive n^2.01 [1.90, 2.10] O(n^2)", true},
		{"naive  n^1.99 [1.98, 2.00] O(n^2)", "naive n^2.01 [1.90, 2.10] O(n)", false},
		{"1024 525824", "1024 525825", false},
		{"steepest: naive probes grows ... O(n^2) (... removed)", "steepest: naive probes grows n^1.9 [1.8, 2.0] O(n^2) (3 operations removed)", true},
		{"steepest: naive probes grows ... O(n^2) (... removed)", "steepest: naive probes grows n^1.9 [1.8, 2.0] O(n) (3 operations removed)", false},
		{"a vs b (msg, ...", "a vs b (msg, seed 1): 100 scripts", true},
		{"a vs b (msg, ...", "a vs b (shm, seed 1)", false},
	} {
		re := regexp.MustCompile("^" + shownPattern(c.shown) + "$")
		require.Equal(t, c.match, re.MatchString(strings.Join(strings.Fields(c.got), " ")), "%q against %q", c.shown, c.got)
	}
}
