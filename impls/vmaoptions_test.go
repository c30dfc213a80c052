package impls_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/ops/opstest"
	"github.com/ipcfuzz/ipcfuzz/impls"
	"github.com/ipcfuzz/ipcfuzz/sides/sidestest"
)

// run applies the operations (text) on a fresh model after Reset(cfg) and
// returns their errnos and the final layout.
func runVMA(t *testing.T, name string, cfg ops.Config, lines ...string) ([]ops.Errno, string) {
	t.Helper()
	m := sidestest.Model(t, name)
	require.NoError(t, m.Reset(cfg))
	var errs []ops.Errno
	for _, op := range opstest.Lines(t, lines...) {
		r, err := m.Apply(op)
		require.NoError(t, err)
		errs = append(errs, r.Err)
	}
	s, err := m.Snapshot()
	require.NoError(t, err)
	return errs, ops.FormatVMAState(s.VMA)
}

// remap_order picks mremap's order of checks: 6.18's by default, 6.1's
// where the other side's kernel reports remap-lookup-first or the user
// asks for lookup-first, and 6.18's again with checks-first whatever the
// kernel reports. The two scripts are corpus/vma/kernel-6.1-mremap-check-order.ops
// and the early unmap it warns of.
func TestRemapOrderOption(t *testing.T) {
	onto := []string{"remap w:0+1 new=1 fixed to=0"}
	early := []string{"map w:0+2 r--", "remap w:0+0 new=1 fixed to=1", "protect w:0+2 ---"}
	facts61 := ops.Facts{}.With(ops.FactVMAQuirks, int64(ops.QuirkRemapLookupFirst|ops.QuirkSoftDirty))
	for _, name := range []string{"naive", "optimized"} {
		for _, c := range []struct {
			what        string
			cfg         ops.Config
			onto, early []ops.Errno
			layoutAfter string
		}{
			{"6.18 by default", ops.Config{}, []ops.Errno{ops.EINVAL}, []ops.Errno{ops.OK, ops.EINVAL, ops.OK}, "brk=0\nw:0-2 ---p anon mr,mw,me\n"},
			{"the other kernel's", ops.Config{Facts: facts61}, []ops.Errno{ops.EFAULT}, []ops.Errno{ops.OK, ops.EINVAL, ops.ENOMEM}, "brk=0\nw:0-1 ---p anon mr,mw,me,sd\n"},
			{"asked for", ops.Config{Options: map[string]string{impls.OptionRemapOrder: impls.RemapOrderLookupFirst}}, []ops.Errno{ops.EFAULT}, []ops.Errno{ops.OK, ops.EINVAL, ops.ENOMEM}, "brk=0\nw:0-1 ---p anon mr,mw,me\n"},
			{"asked against the kernel's", ops.Config{Facts: facts61, Options: map[string]string{impls.OptionRemapOrder: impls.RemapOrderChecksFirst}}, []ops.Errno{ops.EINVAL}, []ops.Errno{ops.OK, ops.EINVAL, ops.OK}, "brk=0\nw:0-2 ---p anon mr,mw,me,sd\n"},
		} {
			errs, _ := runVMA(t, name, c.cfg, onto...)
			require.Equal(t, c.onto, errs, "%s, %s", name, c.what)
			errs, layout := runVMA(t, name, c.cfg, early...)
			require.Equal(t, c.early, errs, "%s, %s", name, c.what)
			require.Equal(t, c.layoutAfter, layout, "%s, %s", name, c.what)
		}
	}
	m := sidestest.Model(t, "optimized")
	require.ErrorContains(t, m.Reset(ops.Config{Options: map[string]string{impls.OptionRemapOrder: "6.1"}}), "remap_order=6.1")
}

// vma_rules picks the kernel whose rules a model follows: the other side's
// by default, a named version's when asked, with the configuration quirks
// (sd here) of the other side's kernel kept. The script is
// corpus/vma/kernel-6.1-new-mapping-extends-next.ops.
func TestRulesOption(t *testing.T) {
	between := []string{"map w:0+1 rw-", "map w:2+1 rw-", "touch w:0 write", "touch w:2 write", "map w:1+1 rw-"}
	prevGrows, nextGrows := "brk=0\nw:0-2 rw-p anon mr,mw,me,ac\nw:2-3 rw-p anon mr,mw,me,ac\n", "brk=0\nw:0-1 rw-p anon mr,mw,me,ac\nw:1-3 rw-p anon mr,mw,me,ac\n"
	facts61 := ops.Facts{}.With(ops.FactVMAQuirks, int64(ops.VMAQuirksLinux61|ops.QuirkSoftDirty))
	sd := func(layout string) string { return strings.ReplaceAll(layout, ",ac\n", ",ac,sd\n") }
	rules := func(v string) map[string]string { return map[string]string{impls.OptionRules: v} }
	for _, name := range []string{"naive", "optimized"} {
		for _, c := range []struct {
			what string
			cfg  ops.Config
			want string
		}{
			{"6.18 by default", ops.Config{}, prevGrows},
			{"the other kernel's", ops.Config{Facts: facts61}, sd(nextGrows)},
			{"asked for 6.1", ops.Config{Options: rules("6.1")}, nextGrows},
			{"asked for 6.12", ops.Config{Options: rules("6.12")}, prevGrows},
			{"asked for 6.18 against 6.1", ops.Config{Facts: facts61, Options: rules("6.18")}, sd(prevGrows)},
			{"auto", ops.Config{Facts: facts61, Options: rules(impls.RulesAuto)}, sd(nextGrows)},
		} {
			_, layout := runVMA(t, name, c.cfg, between...)
			require.Equal(t, c.want, layout, "%s, %s", name, c.what)
		}
	}
}
