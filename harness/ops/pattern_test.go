package ops

import (
	"strings"
	"testing"
)

const listingPattern = `# a comment
subsystem shm
h1 = get shm key=0x10 creat mode=0600 size=1
repeat n {
h2 = get shm key=0x0 mode=0600 size=4096
}
measure
list shm rows
stat shm h2
`

func TestPatternRoundTrip(t *testing.T) {
	p, err := ParsePatternString(listingPattern)
	if err != nil {
		t.Fatal(err)
	}
	if p.Subsystem != "shm" || len(p.Setup) != 1 || len(p.Body) != 1 || len(p.Tail) != 2 {
		t.Fatalf("sections: %+v", p)
	}
	text := FormatPattern(p, "found by: test")
	q, err := ParsePatternString(text)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if FormatPattern(q) != FormatPattern(p) {
		t.Fatalf("round trip:\n%s\n%s", FormatPattern(q), FormatPattern(p))
	}
	w := PatternWorkload(p)
	if !IsPattern(w) || IsPattern(ProcReadShm) || WorkloadSubsystem(w) != "shm" {
		t.Fatalf("pattern workload %q", w)
	}
	if err := CheckMeasure(w, p.MaxN()+1, 1); err == nil {
		t.Fatal("a size beyond the pattern's bound was accepted")
	}
}

// Each of these is refused with one line naming the file and line.
func TestStrictPatternParser(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"no repeat", "subsystem ids\nlist msg\n", "p.perf: want 'repeat n {'"},
		{"no measure", "subsystem ids\nrepeat n {\nget msg key=0x0 mode=0600\n}\n", "p.perf: want 'repeat n {'"},
		{"empty body", "subsystem ids\nrepeat n {\n}\nmeasure\nlist msg\n", "p.perf: the repeated body has no operation"},
		{"empty tail", "subsystem ids\nrepeat n {\nget msg key=0x0 mode=0600\n}\nmeasure\n", "p.perf: nothing to measure"},
		{"repeat twice", "subsystem ids\nrepeat n {\nrepeat n {\n", "p.perf:3: 'repeat n {' must come once"},
		{"repeat count", "subsystem ids\nrepeat 5 {\n", "p.perf:2: want 'repeat n {'"},
		{"stray brace", "subsystem ids\n}\n", "p.perf:2: '}' closes nothing"},
		{"op between", "subsystem ids\nrepeat n {\nget msg key=0x0 mode=0600\n}\nlist msg\n", "p.perf:5: an operation between the body and 'measure'"},
		{"result", "subsystem ids\nrepeat n {\nget msg key=0x0 mode=0600 -> id=0\n", "p.perf:3: a pattern states no results"},
		{"unbound", "subsystem ids\nrepeat n {\nstat msg h1\n", "p.perf:3: handle h1 is used before any line binds it"},
		{"bad op", "subsystem ids\nrepeat n {\nfrob\n", "p.perf:3: unknown operation"},
		{"too long", "subsystem ids\nrepeat n {\n" + strings.Repeat("get msg key=0x0 mode=0600\n", MaxPatternOps+1) + "}\nmeasure\nlist msg\n", "p.perf: a section of 257 operations"},
	} {
		_, err := ParsePattern("p.perf", strings.NewReader(c.text))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}
