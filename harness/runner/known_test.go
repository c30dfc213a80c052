package runner_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/props"
)

// knownSides opens the sides the known-difference tests compare: the
// mutant whose msgrcv with type<0 finds nothing, said to run 6.1, as A and
// the optimized model, said to run 6.18, as B.
func knownSides(t *testing.T) (a, b runner.Side) {
	t.Helper()
	a = openLowestLost(t)
	a.Info.Version = "Linux 6.1.0-57-amd64"
	b = open(t, "optimized", false).side
	b.Info.Version = "Linux 6.18.44-fc"
	return a, b
}

// runKnown compares a and b on msg's scripts (keepGoing, 400 checks) with
// the known differences known (nil: none); it returns the result and the
// corpus directory.
func runKnown(t *testing.T, a, b runner.Side, known *corpus.Known) (*runner.Result, string) {
	t.Helper()
	p, err := runner.NewPair(context.Background(), a, b, "msg", equiv.Exact)
	require.NoError(t, err)
	return keepGoing(t, p, runner.Options{Checks: 400, Batch: 64, Known: known})
}

// keepGoing runs p on its subsystem's rapid scripts from seed 1, keeping
// going, into a corpus directory of its own, with the other options of o
// (checks, batch, known differences, sink); it returns the result and the
// directory.
func keepGoing(t *testing.T, p *runner.Pair, o runner.Options) (*runner.Result, string) {
	t.Helper()
	sub, err := props.Lookup(p.Subsystem)
	require.NoError(t, err)
	o.Pairs, o.Source, o.Seed, o.KeepGoing, o.Corpus = []*runner.Pair{p}, runner.Seeded(sub.RapidScripts(p.Relation)), 1, true, t.TempDir()
	res, err := runner.Run(context.Background(), o)
	require.NoError(t, err)
	return res, o.Corpus
}

// A divergence a known entry explains (its pattern matches the signature,
// and one side's release is in its range, the other's not) is reported
// apart, with its hits, and is neither a finding nor a divergence; an
// entry that applies and explains nothing is stale; one whose range
// neither side is in says nothing. Here the sides say they run 6.1 (the
// mutant whose msgrcv with type<0 finds nothing) and 6.18 (the optimized
// model): the entry, written with the kernel in its range as side B
// (ok-ENOMSG), explains the mirrored signature ENOMSG-ok.
func TestKnownDifferencesAreReportedApart(t *testing.T) {
	a, b := knownSides(t)
	run := func(known *corpus.Known) (*runner.Result, string) {
		res, dir := runKnown(t, a, b, known)
		require.Equal(t, "6.1.0-57-amd64", res.KernelA)
		require.Equal(t, "6.18.44-fc", res.KernelB)
		return res, dir
	}
	plain, _ := run(nil)
	hits := map[string]int{}
	for _, f := range plain.Findings {
		hits[f.Signature] = f.Hits
	}
	require.Contains(t, hits, "msg/msgrcv/ENOMSG-ok")

	entries, err := corpus.ParseKnown("msg.known",
		"msg/msgrcv/ok-ENOMSG  <6.10  -  the lowest type is not searched before 6.10 (B is the kernel in the range: mirrored)\n"+
			"msg/msgsnd/*  <6.10  0123456789ab  msgsnd differs before 6.10\n"+
			"msg/msgrcv/*  >=7.0  -  a range neither side is in\n"+
			"vma/seal/*ENOSYS*  <6.10  8be7258aad44  another subsystem's\n")
	require.NoError(t, err)
	res, dir := run(&corpus.Known{Entries: entries})

	require.Len(t, res.Expected, 1)
	x := res.Expected[0]
	require.Equal(t, "msg.known:1", x.Where())
	require.Equal(t, hits["msg/msgrcv/ENOMSG-ok"], x.Hits)
	require.Equal(t, []runner.ExpectedSignature{{Signature: "msg/msgrcv/ENOMSG-ok", Hits: x.Hits, Index: x.Signatures[0].Index}}, x.Signatures)
	require.Equal(t, plain.Divergences-x.Hits, res.Divergences, "an expected divergence is not a divergence")
	require.Equal(t, plain.Checks, res.Checks)
	for _, f := range res.Findings {
		require.NotEqual(t, "msg/msgrcv/ENOMSG-ok", f.Signature, "an expected divergence is not a finding")
		require.Equal(t, hits[f.Signature], f.Hits)
	}
	require.Len(t, res.Findings, len(plain.Findings)-1)
	files, err := filepath.Glob(filepath.Join(dir, "msg", "*.ops"))
	require.NoError(t, err)
	require.Len(t, files, len(res.Findings), "no file for an expected divergence")
	for _, f := range files {
		require.NotContains(t, filepath.Base(f), "ENOMSG-ok")
		_, err := os.Stat(f)
		require.NoError(t, err)
	}

	require.Len(t, res.StaleKnown, 1, "%+v", res.StaleKnown)
	require.Equal(t, "msg.known:2", res.StaleKnown[0].Where())
	require.True(t, strings.HasPrefix(res.StaleKnown[0].Pattern, "msg/msgsnd/"))
}

// A signature mirrored is the one of the same divergence with the sides

// An entry with a cause (PATTERN@CAUSE) explains the divergences whose
// shrunk script's cause key it names, whatever their signatures, and
// only those: here every finding of the mutant is keyed by a msgrcv that
// searches for the lowest type ("msg: msgrcv msg type<0"), and an entry
// naming another call explains nothing and is stale.
func TestKnownCauseExplainsEverySignatureOfOneCall(t *testing.T) {
	a, b := knownSides(t)
	run := func(known *corpus.Known) *runner.Result {
		res, _ := runKnown(t, a, b, known)
		return res
	}
	plain := run(nil)
	require.NotEmpty(t, plain.Findings)
	causes := map[string]bool{}
	for _, f := range plain.Findings {
		causes[f.Cause] = true
	}
	require.Equal(t, map[string]bool{"msg: msgrcv msg type<0": true}, causes, "the mutant's findings have one cause")

	entries, err := corpus.ParseKnown("msg.known",
		"msg/*/*@msgrcv+msg+type<0  <6.10  -  the lowest type is not searched before 6.10\n"+
			"msg/*/*@msgsnd*  <6.10  -  another call\n")
	require.NoError(t, err)
	require.Equal(t, "msgrcv msg type<0", entries[0].Cause)
	res := run(&corpus.Known{Entries: entries})
	require.Empty(t, res.Findings, "every finding was the named call's")
	require.Zero(t, res.Divergences)
	require.Len(t, res.Expected, 1)
	require.Equal(t, "msg.known:1", res.Expected[0].Where())
	require.Equal(t, plain.Divergences, res.Expected[0].Hits)
	require.Len(t, res.Expected[0].Signatures, len(plain.Findings))
	require.Len(t, res.StaleKnown, 1)
	require.Equal(t, "msg.known:2", res.StaleKnown[0].Where())

	_, err = corpus.ParseKnown("bad.known", "msg/*/*@  <6.10  -  no cause\n")
	require.ErrorContains(t, err, "bad.known:1: cause")
}

// swapped; mirrored twice it is itself.
func TestMirrorSignature(t *testing.T) {
	for sig, want := range map[string]string{
		"vma/seal/ok-ENOSYS":         "vma/seal/ENOSYS-ok",
		"msg/msgrcv/ENOMSG-blocked":  "msg/msgrcv/blocked-ENOMSG",
		"vma/space/A-merges":         "vma/space/B-merges",
		"vma/space/only-B":           "vma/space/only-A",
		"vma/space/flags+nh":         "vma/space/flags-nh",
		"vma/space/flags-ac":         "vma/space/flags+ac",
		"vma/space/flags+lf-unnamed": "vma/space/flags+unnamed-lf",
		"vma/space/flags+lf,sd-ac":   "vma/space/flags+ac-lf,sd",
		"vma/space/heap-label":       "vma/space/heap-label",
		"shm/listing/shm/dup-row":    "shm/listing/shm/dup-row",
		"sem/final/namespaces":       "sem/final/namespaces",
		"ids/plugin-failure/x/hung":  "ids/plugin-failure/x/hung",
	} {
		require.Equal(t, want, runner.MirrorSignature(sig), sig)
		require.Equal(t, sig, runner.MirrorSignature(runner.MirrorSignature(sig)), sig)
	}
}
