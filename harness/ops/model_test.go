package ops_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// An option written with no value (kernel:image=, what kernel:image=$UNSET
// expands to) is refused naming the implementation and the option; one
// with a value is read.
func TestParseImplNameRefusesAnOptionWithoutValue(t *testing.T) {
	for _, spec := range []string{"kernel:image=", "naive:alloc=", "naive:alloc=legacy,caps="} {
		_, _, err := ops.ParseImplName(spec)
		require.Error(t, err, spec)
		require.Contains(t, err.Error(), spec)
		require.Contains(t, err.Error(), "has no value")
	}
	_, _, err := ops.ParseImplName("naive:alloc=legacy,caps=")
	require.ErrorContains(t, err, "option caps= has no value")
	name, cfg, err := ops.ParseImplName("naive:alloc=legacy")
	require.NoError(t, err)
	require.Equal(t, "naive", name)
	require.Equal(t, "legacy", cfg.Options["alloc"])
}

// A value in double quotes may hold commas (a path): it is read as a Go
// string literal, and Config.String writes it back the same way.
func TestParseImplNameReadsQuotedValues(t *testing.T) {
	name, cfg, err := ops.ParseImplName(`kernel:image="/k/a,b \"c\".deb",vm=qemu`)
	require.NoError(t, err)
	require.Equal(t, "kernel", name)
	require.Equal(t, map[string]string{"image": `/k/a,b "c".deb`, "vm": "qemu"}, cfg.Options)
	require.Equal(t, `image="/k/a,b \"c\".deb",vm=qemu`, cfg.String())
	_, again, err := ops.ParseImplName("kernel:" + cfg.String())
	require.NoError(t, err)
	require.Equal(t, cfg.Options, again.Options)
	for spec, want := range map[string]string{
		`kernel:image=/k/a,b`:       `option "b" is not key=value`,
		`kernel:image="/k/a,b`:      `option image=: "/k/a,b is not a closed Go string literal`,
		`kernel:image="/k/a"b,vm=x`: `option image="/k/a": a comma must follow the closing quote`,
		`kernel:image=""`:           `option image= has no value`,
		`naive:alloc=legacy,`:       `option "" is not key=value`,
	} {
		_, _, err := ops.ParseImplName(spec)
		require.ErrorContains(t, err, want, spec)
	}
}

// leader is a Follower that answers id 1 (2 when following).
type leader struct{}

func (leader) Reset(ops.Config) error                                { return nil }
func (leader) Apply(ops.Op) (ops.Result, error)                      { return ops.Result{ID: 1}, nil }
func (leader) Snapshot() (ops.Snapshot, error)                       { return ops.Snapshot{}, nil }
func (leader) Close() error                                          { return nil }
func (leader) SnapshotFollowing(*ops.Snapshot) (ops.Snapshot, error) { return ops.Snapshot{}, nil }
func (leader) ApplyFollowing(_ ops.Op, o *ops.Result) (ops.Result, error) {
	return ops.Result{ID: 2}, nil
}

// mutant wraps the Follower and overrides Apply alone.
type mutant struct{ leader }

func (mutant) Apply(ops.Op) (ops.Result, error) { return ops.Result{ID: 3}, nil }

// Not following, Run and Local.Apply call the model's Apply (the mutant's
// override), and observe nothing unless asked; following, ApplyFollowing.
func TestRunAppliesTheModelsOwnApply(t *testing.T) {
	script := []ops.Op{{Kind: ops.KindList}}
	out, err := ops.Run(mutant{}, ops.Config{}, script)
	require.NoError(t, err)
	require.Equal(t, int64(3), out.Results[0].ID)
	require.Nil(t, out.Observed)
	out, err = ops.Run(mutant{}, ops.Config{Observe: ops.Observing{Time: true}}, script)
	require.NoError(t, err)
	require.Len(t, out.Observed, 1)
	out, err = ops.RunFollowing(mutant{}, ops.Config{}, script, &ops.Outcome{Results: []ops.Result{{}}})
	require.NoError(t, err)
	require.Equal(t, int64(2), out.Results[0].ID)

	l := ops.NewLocal(ops.Info{}, mutant{})
	rs, err := l.Apply(t.Context(), script, nil)
	require.NoError(t, err)
	require.Equal(t, int64(3), rs[0].ID)
	rs, err = l.Apply(t.Context(), script, []ops.Result{{}})
	require.NoError(t, err)
	require.Equal(t, int64(2), rs[0].ID)
}
