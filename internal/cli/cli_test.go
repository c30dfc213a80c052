package cli_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/internal/cli"
)

// A table's rows set their variables, keep their defaults, refuse a count
// or a duration of nothing, and take flags between positional arguments.
func TestParseTable(t *testing.T) {
	var n int
	var d time.Duration
	var s string
	var b bool
	table := func() []cli.Flag {
		return []cli.Flag{
			cli.Positive("checks", nil, "how many", &n),
			cli.Positive("call-timeout", time.Minute, "deadline", &d),
			cli.Opt("name", "x", "a name", &s),
			cli.Opt("json", nil, "json", &b),
		}
	}
	fs, pos, err := cli.Parse("cmd", "", []string{"a", "--checks", "3", "b", "--json"}, table())
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, pos)
	require.Equal(t, 3, n)
	require.Equal(t, time.Minute, d)
	require.Equal(t, "x", s)
	require.True(t, b)
	require.True(t, cli.Given(fs, "checks"))
	require.False(t, cli.Given(fs, "name"))

	_, _, err = cli.Parse("cmd", "", []string{"--checks", "0"}, table())
	require.EqualError(t, err, `invalid value "0" for flag -checks: must be at least 1`)
	require.ErrorAs(t, err, new(cli.UsageError))
	_, _, err = cli.Parse("cmd", "", []string{"--call-timeout", "0s"}, table())
	require.EqualError(t, err, `invalid value "0s" for flag -call-timeout: must be more than 0`)
}

// --help is the header and every flag with its kind and default.
func TestParseHelp(t *testing.T) {
	var n int
	var d time.Duration
	_, _, err := cli.Parse("cmd", "HEAD\n\n", []string{"--help"}, []cli.Flag{
		cli.Positive("reps", 5, "repetitions", &n),
		cli.Positive("call-timeout", time.Minute, "deadline", &d),
	})
	var he cli.HelpError
	require.ErrorAs(t, err, &he)
	require.Equal(t, "HEAD\n\nFlags:\n"+
		"  --call-timeout DURATION deadline (default 1m0s)\n"+
		"  --reps INT             repetitions (default 5)\n", he.Text)
}

// --json is --format json, and refuses another format beside it.
func TestFormat(t *testing.T) {
	for _, c := range []struct {
		args      []string
		want, err string
	}{
		{nil, "text", ""},
		{[]string{"--json"}, "json", ""},
		{[]string{"--format", "ktap"}, "ktap", ""},
		{[]string{"--format", "ktap", "--json"}, "", "--json is --format json, not --format ktap"},
		{[]string{"--format", "xml"}, "", `unknown format "xml" (want text, json, ktap)`},
	} {
		var f cli.Format
		_, _, err := cli.Parse("cmd", "", c.args, f.Flags([]string{"text", "json", "ktap"}))
		require.NoError(t, err)
		got, err := f.Value()
		if c.err != "" {
			require.EqualError(t, err, c.err)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, c.want, got)
	}
}

// Each kind of error has its exit status and its one line.
func TestExit(t *testing.T) {
	for _, c := range []struct {
		err            error
		code           int
		stdout, stderr string
	}{
		{nil, 0, "", ""},
		{cli.HelpError{Text: "help\n"}, 0, "help\n", ""},
		{cli.Foundf("%d found", 2), cli.ExitFound, "", "ipcfuzz: 2 found\n"},
		{cli.InfrastructureError{Msg: "killed"}, cli.ExitInfra, "", "ipcfuzz: killed\n"},
		{fmt.Errorf("wrapped: %w", cli.Interruptedf("stopped")), cli.ExitInterrupted, "", "ipcfuzz: wrapped: stopped\n"},
		{cli.Usagef("bad %s", "flag"), cli.ExitUsage, "", "ipcfuzz: bad flag (see 'ipcfuzz help')\n"},
		{cli.InputError{Err: errors.New("f.ops:3: bad\nmore")}, cli.ExitUsage, "", "ipcfuzz: f.ops:3: bad\n"},
	} {
		var out, errb bytes.Buffer
		require.Equal(t, c.code, cli.Exit(c.err, &out, &errb), "%v", c.err)
		require.Equal(t, c.stdout, out.String())
		require.Equal(t, c.stderr, errb.String())
	}
}

// Every command's help header is its synopsis and doc; Lookup finds
// two-word commands.
func TestCommands(t *testing.T) {
	for _, c := range cli.Commands() {
		require.True(t, strings.HasPrefix(cli.Header(c.Name), c.Synopsis+"\n\n"+c.Doc), c.Name)
	}
	c, rest, ok := cli.Lookup([]string{"corpus", "merge", "d"})
	require.True(t, ok)
	require.Equal(t, "corpus merge", c.Name)
	require.Equal(t, []string{"d"}, rest)
	_, _, ok = cli.Lookup([]string{"corpus"})
	require.False(t, ok)
}
