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
