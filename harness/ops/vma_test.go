package ops

import (
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func genVMA() *rapid.Generator[VMA] {
	return rapid.Custom(func(t *rapid.T) VMA {
		v := VMA{
			Heap:      rapid.Bool().Draw(t, "heap"),
			Start:     rapid.Int64Range(-1<<40, 1<<40).Draw(t, "start"),
			End:       rapid.Int64Range(-1<<40, 1<<40).Draw(t, "end"),
			Perms:     VMAPerms(rapid.IntRange(0, 15).Draw(t, "perms")),
			File:      rapid.IntRange(0, 20).Draw(t, "file"),
			Shm:       rapid.IntRange(0, 20).Draw(t, "shm"),
			Offset:    rapid.Int64Range(-5, 1<<30).Draw(t, "offset"),
			HeapLabel: rapid.Bool().Draw(t, "label"),
			Pkey:      rapid.IntRange(-2, 15).Draw(t, "pkey"),
			Flags:     VMAFlags(rapid.Uint64().Draw(t, "flags")),
		}
		return v
	})
}

// parse(format(x)) == x for every VMA, including combinations no kernel
// produces (an anonymous VMA with an offset, a file and a shmem object).
func TestVMATextRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := genVMA().Draw(t, "vma")
		line := FormatVMA(v)
		got, err := ParseVMA(line)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if got != v {
			t.Fatalf("%q parsed as %+v, want %+v", line, got, v)
		}
	})
}

func TestVMAStateTextRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := VMAState{Brk: rapid.Int64Range(-3, 100).Draw(t, "brk")}
		s.VMAs = rapid.SliceOfN(genVMA(), 0, 6).Draw(t, "vmas")
		if len(s.VMAs) == 0 {
			s.VMAs = nil
		}
		got, err := ParseVMAState(FormatVMAState(s))
		if err != nil {
			t.Fatal(err)
		}
		if FormatVMAState(got) != FormatVMAState(s) || len(got.VMAs) != len(s.VMAs) {
			t.Fatalf("round trip:\n%s\nvs\n%s", FormatVMAState(got), FormatVMAState(s))
		}
	})
}

func TestVMAFormatExamples(t *testing.T) {
	for _, c := range []struct {
		v    VMA
		line string
	}{
		{VMA{Start: 0, End: 4, Perms: PermRead | PermWrite, Flags: MustVMAFlags("mr mw me ac")}, "w:0-4 rw-p anon mr,mw,me,ac"},
		{VMA{Heap: true, End: 2, Perms: PermRead | PermWrite, HeapLabel: true, Flags: MustVMAFlags("mr mw me ac")}, "h:0-2 rw-p anon [heap] mr,mw,me,ac"},
		{VMA{Start: 4, End: 8, Perms: PermRead | PermShared, File: 1, Flags: MustVMAFlags("mr me ms")}, "w:4-8 r--s f1+0 mr,me,ms"},
		{VMA{Start: 8, End: 9, Perms: PermRead | PermWrite | PermShared, Shm: 1, Offset: 3, Flags: MustVMAFlags("mr mw me ms")}, "w:8-9 rw-s z1+3 mr,mw,me,ms"},
		{VMA{Start: 9, End: 10, Perms: PermExec, Pkey: 1, Flags: MustVMAFlags("mr mw me")}, "w:9-10 --xp anon pkey=1 mr,mw,me"},
		{VMA{Start: 10, End: 11}, "w:10-11 ---p anon -"},
	} {
		require.Equal(t, c.line, FormatVMA(c.v))
		got, err := ParseVMA(c.line)
		require.NoError(t, err)
		require.Equal(t, c.v, got)
	}
	for _, bad := range []string{
		"x:0-1 rw-p anon -", "w:0 rw-p anon -", "w:0-1 rw-q anon -", "w:0-1 rw-p anon+0 -",
		"w:0-1 rw-p f1 -", "w:0-1 rw-p q1+0 -", "w:0-1 rw-p anon zz", "w:0-1 rw-p anon pkey=0 -",
		"w:0-1 rw-p anon", "w:0-1 rw-p anon mr extra",
	} {
		_, err := ParseVMA(bad)
		require.Error(t, err, bad)
	}
}

func TestVMASmallTypesRoundTrip(t *testing.T) {
	for p := VMAProt(0); p < 8; p++ {
		got, err := ParseVMAProt(p.String())
		require.NoError(t, err)
		require.Equal(t, p, got)
	}
	for f := VMAMapFlags(0); f < 32; f++ {
		got, err := ParseVMAMapFlags(f.String())
		require.NoError(t, err)
		require.Equal(t, f, got)
	}
	for _, a := range VMAAdvices {
		got, err := ParseVMAAdvice(a.String())
		require.NoError(t, err)
		require.Equal(t, a, got)
	}
	for q := VMAQuirks(0); q < 1<<len(quirkNames); q += 37 {
		got, err := ParseVMAQuirks(q.String())
		require.NoError(t, err)
		require.Equal(t, q, got)
	}
	require.Equal(t, VMAQuirks(1<<len(quirkNames)-1), VMAQuirksAll, "every quirk has a name")
	got, err := ParseVMAQuirks(VMAQuirksLinux618.String())
	require.NoError(t, err)
	require.Equal(t, VMAQuirksLinux618, got)
}

func TestCheckVMAArgs(t *testing.T) {
	require.NoError(t, CheckVMAArgs(VMAArgs{Start: 0, Pages: VMAWindowPages}))
	require.NoError(t, CheckVMAArgs(VMAArgs{Heap: true, Start: 2, Pages: 3, Break: -VMABrkBelow}))
	require.NoError(t, CheckVMAArgs(VMAArgs{Start: 1, Pages: 2, NewPages: 4, Fixed: true, Target: 60}))
	for _, bad := range []VMAArgs{
		{Start: -1, Pages: 1},
		{Start: 60, Pages: 5},
		{Heap: true, Start: 30, Pages: 3},
		{Start: 1, Pages: 2, NewPages: 70},
		{Start: 1, Pages: 2, NewPages: 4, Fixed: true, Target: 61},
		{Break: VMAHeapPages + 1},
		{File: VMAMaxHandles + 1, Pages: 1},
		{File: 1, Pages: 4, Offset: VMAFileOffsetMax - 3},
	} {
		require.Error(t, CheckVMAArgs(bad), "%+v", bad)
	}
	require.Error(t, CheckVMAFileArgs(VMAFileArgs{Handle: 0}))
	require.NoError(t, CheckVMAFileArgs(VMAFileArgs{Handle: 2, Of: 1}))
}
