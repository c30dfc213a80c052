package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/internal/cli"
	"github.com/ipcfuzz/ipcfuzz/props"
	"github.com/ipcfuzz/ipcfuzz/sides"
)

// mergeCmd is "ipcfuzz corpus merge DIR... [--into corpus]": see
// corpus.Merge. It prints a report (or, with --json, the report object),
// writes a markdown summary with --summary, and exits 0 whatever it found:
// finding is the shards' business, merging is bookkeeping.
func mergeCmd(ctx context.Context, args []string, stdout, _ io.Writer) error {
	var into, summary, date string
	var tries int
	var asJSON bool
	var sf sides.Flags
	_, dirs, err := parse("corpus merge", args, []cli.Flag{
		cli.Opt("into", "corpus", "the corpus merged into (nothing in it is removed)", &into),
		cli.Opt("tries", 3, "replays of each new script on its recorded pair", &tries),
		cli.Opt("summary", nil, "write a markdown summary to this file", &summary),
		cli.Opt("date", time.Now().UTC().Format("2006-01-02"), "today, for inputs that do not say when they ran", &date),
		cli.Opt("json", nil, "print the report as one JSON object", &asJSON),
	}, sf.Rows(60*time.Second))
	if err != nil {
		return err
	}
	if len(dirs) == 0 || tries < 1 {
		return cli.UsageError{Msg: "usage: ipcfuzz corpus merge DIR... [--into DIR] [--tries N] [--summary FILE.md] [--json]"}
	}
	chk := &sides.Checker{Options: sf.Options(), Relations: relationsOf}
	defer chk.Close()
	rep, err := corpus.Merge(ctx, corpus.MergeOptions{Into: into, Inputs: dirs, Tries: tries, Date: date, Checker: chk})
	if err != nil {
		return err
	}
	if summary != "" {
		if err := corpus.WriteFileAtomic(summary, []byte(rep.Markdown()), 0o644); err != nil {
			return fmt.Errorf("corpus merge: %w", err)
		}
	}
	if asJSON {
		return json.NewEncoder(stdout).Encode(rep)
	}
	rep.WriteText(stdout, into)
	return nil
}

// relationsOf are the relations the registry compares a subsystem under.
func relationsOf(subsystem string) ([]equiv.Relation, error) {
	sub, err := props.Lookup(subsystem)
	return sub.Relations, err
}
