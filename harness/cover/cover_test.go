package cover

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

const zooLikePatch = `mm/mremap: a description

--- a/mm/mmap.c
+++ b/mm/mmap.c
@@ -10,7 +10,7 @@
 a
 b
 c
-			next->vm_pgoff - pglen, NULL, next);
+			mid->vm_pgoff, NULL, next);
 d
 e
 f
--- a/ipc/msg.c
+++ b/ipc/msg.c
@@ -20,5 +20,3 @@
 x
-y
-z
 w
 v
--- a/include/linux/mm.h
+++ b/include/linux/mm.h
@@ -1,2 +1,3 @@
 p
+q
 r
`

func TestParsePatch(t *testing.T) {
	got, err := ParsePatch(strings.NewReader(zooLikePatch))
	if err != nil {
		t.Fatal(err)
	}
	want := []FileLine{{"mm/mmap.c", 13}, {"ipc/msg.c", 21}, {"include/linux/mm.h", 2}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ParsePatch = %v, want %v", got, want)
	}
}

func TestParsePatchZoo(t *testing.T) {
	patches, _ := filepath.Glob("../../ci/kernels/bug-*/*.patch")
	if len(patches) == 0 {
		t.Skip("no zoo patches under ci/kernels/bug-*")
	}
	for _, p := range patches {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := ParsePatch(bytes.NewReader(b))
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		if len(lines) == 0 {
			t.Errorf("%s: no lines changed", p)
		}
	}
}

// synthetic is an Image of one file with two functions: f (sites at 0x100
// on line 10, 0x110 on line 12) and g (site 0x200 on line 20), and rows
// for lines 10-13 and 20-21.
func synthetic() *Image {
	im := &Image{Path: "vmlinux", Units: []string{"ipc/msg.c"}, byRet: map[uint64]int{}}
	im.rows = []row{
		{0xf0, "ipc/msg.c", 9}, {0x100, "ipc/msg.c", 10}, {0x108, "ipc/msg.c", 11},
		{0x110, "ipc/msg.c", 12}, {0x118, "ipc/msg.c", 13},
		{0x1f0, "ipc/msg.c", 19}, {0x200, "ipc/msg.c", 20}, {0x208, "ipc/msg.c", 21},
	}
	im.Funcs = []Func{
		{Name: "f", File: "ipc/msg.c", Low: 0xf0, High: 0x120, Line: 9, firstRow: 0, lastRow: 5},
		{Name: "g", File: "ipc/msg.c", Low: 0x1f0, High: 0x210, Line: 19, firstRow: 5, lastRow: 8},
	}
	for _, s := range []Site{
		{Call: 0x100, Ret: 0x105, File: "ipc/msg.c", Line: 10, Func: "f"},
		{Call: 0x110, Ret: 0x115, File: "ipc/msg.c", Line: 12, Func: "f"},
		{Call: 0x200, Ret: 0x205, File: "ipc/msg.c", Line: 20, Func: "g"},
	} {
		fi := 0
		if s.Func == "g" {
			fi = 1
		}
		im.byRet[s.Ret] = len(im.Sites)
		im.Funcs[fi].Sites = append(im.Funcs[fi].Sites, len(im.Sites))
		im.Sites = append(im.Sites, s)
	}
	im.govern()
	return im
}

func TestCover(t *testing.T) {
	r := synthetic().Cover([]uint64{0x105, 0x105, 0xdead})
	if r.PCs != 2 || r.Outside != 1 {
		t.Errorf("PCs %d outside %d, want 2 and 1", r.PCs, r.Outside)
	}
	if r.Lines != (Stat{1, 3}) || r.Entered != (Stat{1, 2}) {
		t.Errorf("lines %v entered %v, want 1/3 and 1/2", r.Lines, r.Entered)
	}
	for fl, want := range map[FileLine]bool{{"ipc/msg.c", 9}: true, {"ipc/msg.c", 11}: true, {"ipc/msg.c", 13}: false, {"ipc/msg.c", 21}: false} {
		if ran, ok := r.Ran(fl); !ok || ran != want {
			t.Errorf("Ran(%v) = %v, %v; want %v, true", fl, ran, ok, want)
		}
	}
	if _, ok := r.Ran(FileLine{"ipc/msg.c", 50}); ok {
		t.Errorf("line 50 has no code, Ran says it has")
	}
	p := r.Patch([]FileLine{{"ipc/msg.c", 11}, {"ipc/msg.c", 13}, {"ipc/msg.c", 50}, {"mm/x.c", 1}})
	if p.Reached != (Stat{1, 2}) || p.Outside != 1 {
		t.Errorf("patch %+v, want 1/2 reached and 1 outside", p)
	}
	var b bytes.Buffer
	if err := p.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "never reached ipc/msg.c:13\n") || strings.Contains(b.String(), ":50") {
		t.Errorf("patch text:\n%s", b.String())
	}
}

func TestWriteDir(t *testing.T) {
	im := synthetic()
	build := t.TempDir()
	im.BuildDir = build
	src := strings.Repeat("line\n", 25)
	if err := os.MkdirAll(filepath.Join(build, "ipc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(build, "ipc/msg.c"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r := im.Cover([]uint64{0x205})
	p := r.Patch([]FileLine{{"ipc/msg.c", 21}})
	out := t.TempDir()
	if err := r.WriteDir(out, &p); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(out, "src", "ipc_msg.c.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<tr id="L20"><td>20</td><td class="hit">`, `<tr id="L10"><td>10</td><td class="miss">`, `<tr id="L21" class="patch"><td>21</td><td class="ran">`} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("the page lacks %s", want)
		}
	}
	for _, f := range []string{"coverage.txt", "index.html", "patch.txt"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestCollector(t *testing.T) {
	var c Collector
	c.Outcomes([]ops.Outcome{
		{Observed: []ops.Observation{{PCs: []uint64{3, 1, 3}}, {}}},
		{Observed: []ops.Observation{{PCs: []uint64{2}}}},
	})
	c.Outcomes(nil)
	if got := c.PCs(); !reflect.DeepEqual(got, []uint64{1, 2, 3}) {
		t.Errorf("PCs %v, want [1 2 3]", got)
	}
	if observed, covered := c.Ops(); observed != 3 || covered != 2 {
		t.Errorf("ops %d observed, %d covered; want 3 and 2", observed, covered)
	}
}
