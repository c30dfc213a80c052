package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
	"text/tabwriter"

	"github.com/ipcfuzz/ipcfuzz/ci/shards"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls"
	"github.com/ipcfuzz/ipcfuzz/plugins"
	"github.com/ipcfuzz/ipcfuzz/props"
)

// pluginCmd is the hidden "plugin serve NAME": this binary serving one of its
// built-in implementations to a host over the plugin protocol.
func pluginCmd(args []string) error {
	if len(args) != 2 || args[0] != "serve" {
		return usageError{"usage: ipcfuzz plugin serve NAME (started by ipcfuzz itself, not by hand)"}
	}
	b, err := impls.Lookup(args[1])
	if err != nil {
		return usageError{err.Error()}
	}
	m, info, err := b.Start()
	if err != nil {
		// Before the handshake: the host shows this line as why the plugin failed to start.
		fmt.Fprintf(os.Stderr, "%s: %v\n", args[1], err)
		os.Exit(exitUsage)
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
func listCmd(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("list", flag.ContinueOnError)
	subsystems := fs.Bool("subsystems", false, "print the subsystems' names, one a line")
	listShards := fs.Bool("shards", false, "print the nightly shard table (ci/shards.tsv)")
	asJSON := fs.Bool("json", false, "with --shards: one JSON array (a workflow matrix)")
	if _, err := parseInterspersed(fs, args); err != nil {
		return err
	}
	if *listShards {
		if *asJSON {
			return shards.WriteJSON(stdout, shardTable())
		}
		return shards.WriteTSV(stdout, shardTable())
	}
	if *subsystems {
		for _, n := range props.Names() {
			fmt.Fprintln(stdout, n)
		}
		return nil
	}
	w := tabwriter.NewWriter(stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tSUBSYSTEMS\tEXACT IDS\tCOUNTERS\tOPTIONS")
	for _, n := range impls.Names() {
		b, _ := impls.Lookup(n)
		fmt.Fprintf(w, "%s\t%s\t%v\t%v\t%s\n", n, strings.Join(b.Subsystems(), ","), b.ExactIDs, b.Counters, b.Options())
	}
	fmt.Fprintln(w, "./PATH\tany executable that speaks the ipcfuzz plugin handshake (see docs/plugins.md)\t\t\t")
	if err := w.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "kernel:image=PATH boots in QEMU under %s on this machine\n", strings.ToUpper(impls.VMAccel()))
	return nil
}
