package main

import (
	"context"
	"io"
	"os"

	"github.com/ipcfuzz/ipcfuzz/harness/report"
	"github.com/ipcfuzz/ipcfuzz/harness/sink"
	"github.com/ipcfuzz/ipcfuzz/internal/cli"
)

// maxReportFindings bounds the findings one report holds.
const maxReportFindings = 100000

// reportCmd writes findings as one static HTML page.
func reportCmd(_ context.Context, args []string, _, _ io.Writer) error {
	var out, plot, title string
	_, files, err := parse("report", args, []cli.Flag{
		cli.Opt("o", "report.html", "the HTML file to write", &out),
		cli.Opt("plot", nil, "an SVG plot of ipcfuzz complexity --plot to show at the top", &plot),
		cli.Opt("title", nil, "the page's title (default: ipcfuzz findings)", &title),
	})
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return cli.UsageError{Msg: "report needs at least one finding file"}
	}
	if len(files) > maxReportFindings {
		return cli.Usagef("report takes at most %d files", maxReportFindings)
	}
	opt := report.Options{Title: title}
	if plot != "" {
		if opt.Plot, err = os.ReadFile(plot); err != nil {
			return cli.InputError{Err: err}
		}
	}
	if err := sink.WriteHTML(out, files, opt); err != nil {
		return cli.InputError{Err: err}
	}
	return nil
}
