package ops

import (
	"strings"
	"testing"
)

const varyPattern = `subsystem vma
repeat n {
map w:2*$i+0+1 rw-
touch w:$i+3
}
measure
map w:5+1 rw-
`

const sleepersPattern = `subsystem msg
h1 = get msg key=0x0 mode=0600
msgctl msg h1 set qbytes=16 mode=0600
repeat n {
msgsnd msg h1 type=3 size=20 fill=0 task=t$i
}
measure
msgrcv msg h1 size=200 type=0 nowait
`

// $i in a repeated body round-trips, and repetition i issues the operation
// moved by i strides, or by task ti.
func TestPatternVaryRoundTrip(t *testing.T) {
	for _, text := range []string{varyPattern, sleepersPattern} {
		p, err := ParsePatternString(text)
		if err != nil {
			t.Fatal(err)
		}
		if got := FormatPattern(p); got != text {
			t.Fatalf("round trip:\n%s\nwant\n%s", got, text)
		}
	}
	p, _ := ParsePatternString(varyPattern)
	if got := p.BodyAt(3); got[0].VMA.Start != 6 || got[1].VMA.Start != 6 || p.Body[0].VMA.Start != 0 {
		t.Fatalf("repetition 3: %s, %s", FormatOp(got[0]), FormatOp(got[1]))
	}
	if p.MaxN() < 1<<13 {
		t.Fatalf("a stride of 2 in %d pages allows n=%d", VMAPatternPages, p.MaxN())
	}
	q, _ := ParsePatternString(sleepersPattern)
	if got := q.BodyAt(MaxTask); got[0].Task != MaxTask {
		t.Fatalf("repetition %d is issued by %s", MaxTask, FormatOp(got[0]))
	}
	if q.MaxN() != MaxTask {
		t.Fatalf("task=t$i allows n=%d, want %d (one task per repetition)", q.MaxN(), MaxTask)
	}
	if err := CheckMeasure(PatternWorkload(q), MaxTask+1, 1); err == nil {
		t.Fatal("more repetitions than tasks were accepted")
	}
}

func TestPatternVaryErrors(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"subsystem vma\nmap w:$i+0+1 rw-\nrepeat n {\nmap w:0+1 rw-\n}\nmeasure\nlayout\n", ":2: $i only in the repeated body"},
		{"subsystem vma\nrepeat n {\nmap h:$i+0+1 rw-\n}\nmeasure\nlayout\n", "not the heap area"},
		{"subsystem vma\nrepeat n {\nmap w:$x+0+1 rw-\n}\nmeasure\nlayout\n", "w:K*$i+START+PAGES"},
		{"subsystem vma\nrepeat n {\nmap w:0*$i+0+1 rw-\n}\nmeasure\nlayout\n", "stride"},
		{"subsystem vma\nrepeat n {\nbrk $i\n}\nmeasure\nlayout\n", "task=t$i"},
		{"subsystem vma\nrepeat n {\nmap w:20000*$i+0+1 rw-\n}\nmeasure\nlayout\n", "fewer than 3 sizes"},
	} {
		_, err := ParsePatternString(c.text)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.text, err, c.want)
		}
	}
}
