package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/debug"

	"github.com/ipcfuzz/ipcfuzz/ci/shards"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls"
	"github.com/ipcfuzz/ipcfuzz/internal/cli"
	"github.com/ipcfuzz/ipcfuzz/plugins"
	"github.com/ipcfuzz/ipcfuzz/props"
)

// pluginCmd is the hidden "plugin serve NAME": this binary serving one of its
// built-in implementations to a host over the plugin protocol.
func pluginCmd(args []string) error {
	if len(args) != 2 || args[0] != "serve" {
		return cli.UsageError{Msg: "usage: ipcfuzz plugin serve NAME (started by ipcfuzz itself, not by hand)"}
	}
	b, err := impls.Lookup(args[1])
	if err != nil {
		return cli.UsageError{Msg: err.Error()}
	}
	m, info, err := b.Start()
	if err != nil {
		// Before the handshake: the host shows this line as why the plugin failed to start.
		fmt.Fprintf(os.Stderr, "%s: %v\n", args[1], err)
		os.Exit(cli.ExitUsage)
	}
	// A plugin's garbage is mostly each batch's scripts and outcomes,
	// dead at the next batch: collecting at twice the live heap instead of
	// once spends less of the pipeline's CPU on GC (a tenth more checks a
	// second through plugins, at a few MB of RSS). GOGC, when set, wins.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(200)
	}
	plugins.Serve(ops.NewLocal(info, m))
	return nil
}

// listCmd prints the built-in implementations and what they support, or
// with --subsystems the subsystems' names, one a line (for scripts), or
// with --shards the nightly shard table (TSV, or JSON with --json).
func listCmd(_ context.Context, args []string, stdout, _ io.Writer) error {
	var subsystems, listShards, asJSON bool
	if _, _, err := parse("list", args, []cli.Flag{
		cli.Opt("subsystems", nil, "print the subsystems' names, one a line", &subsystems),
		cli.Opt("shards", nil, "print the nightly shard table (ci/shards.tsv)", &listShards),
		cli.Opt("json", nil, "with --shards: one JSON array (a workflow matrix)", &asJSON),
	}); err != nil {
		return err
	}
	if listShards {
		if asJSON {
			return shards.WriteJSON(stdout, shardTable())
		}
		return shards.WriteTSV(stdout, shardTable())
	}
	if subsystems {
		for _, n := range props.Names() {
			fmt.Fprintln(stdout, n)
		}
		return nil
	}
	return impls.WriteList(stdout)
}
