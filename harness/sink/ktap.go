package sink

import (
	"strings"

	"github.com/ipcfuzz/ipcfuzz/harness/runner"
)

// ktap writes KTAP version 1 (the kernel's Documentation/dev-tools/ktap.rst):
// the version line and the command as a diagnostic at the start; a
// replay's plan (its files) then, and each file's result as it is
// replayed; a compare's plan and tests at its end, when its findings are
// known (a line "# found SIGNATURE ..." says each one as it comes). A
// test's diagnostic lines ("# ...") come before its result line, where
// the kernel's parser (tools/testing/kunit/kunit_parser.py) files them
// under it.
type ktap struct {
	out   *output
	start runner.Start
	n     int               // the tests written
	texts map[string]string // a compare's finding files, by signature
}

func (k *ktap) Err() error { return k.out.err }

func (k *ktap) Start(s runner.Start) {
	k.start = s
	k.out.print("KTAP version 1\n")
	if s.Command != "" {
		k.diag(s.Command)
	}
	if s.Files != nil {
		k.diag("replay on " + SideLabel(s.A, s.KernelA) + " vs " + SideLabel(s.B, s.KernelB) + ", " + s.Relation)
		k.out.printf("1..%d\n", len(s.Files))
	}
}

func (k *ktap) Script(s runner.Script) {
	if k.start.Files != nil {
		k.test(replayCase(s))
	}
}

func (k *ktap) Found(f runner.Found) {
	k.texts[f.Finding.Signature] = f.Text
	where := ""
	if f.Finding.Script != "" {
		where = ": " + f.Finding.Script
	}
	k.out.printf("# found %s at script %d%s\n", f.Finding.Signature, f.Finding.Index, where)
}

func (k *ktap) End(e runner.End) {
	if e.Result == nil {
		return
	}
	if k.start.Files != nil {
		for k.n < len(k.start.Files) {
			k.test(notRun(k.start.Files[k.n], e))
		}
		return
	}
	cases := compareCases(k.start, e, k.texts)
	k.out.printf("1..%d\n", len(cases))
	for _, c := range cases {
		k.test(c)
	}
}

// test writes one test: its diagnostics, then its result line.
func (k *ktap) test(c testCase) {
	k.n++
	for _, d := range c.diag {
		k.diag(d)
	}
	result := "ok"
	if c.status == failed {
		result = "not ok"
	}
	k.out.printf("%s %d %s", result, k.n, ktapName(c.name))
	if c.status == skipped {
		k.out.printf(" # SKIP %s", strings.ReplaceAll(runner.OneLine(c.skip), "#", ""))
	}
	k.out.print("\n")
}

// diag writes one diagnostic line. A line that would read as a subtest's
// header ("# Subtest: ...") is set off.
func (k *ktap) diag(line string) {
	line = strings.TrimRight(line, " \t\r")
	if strings.HasPrefix(strings.TrimSpace(line), "Subtest:") {
		line = "> " + line
	}
	if line == "" {
		k.out.print("#\n")
		return
	}
	k.out.printf("# %s\n", line)
}

// ktapName is a test's name as KTAP allows it: one line, without "#" (a
// directive's start), nor blank.
func ktapName(name string) string {
	name = strings.Join(strings.Fields(strings.ReplaceAll(name, "#", "_")), "_")
	if name == "" {
		return "unnamed"
	}
	return name
}
