package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/ipcfuzz/ipcfuzz/harness/report"
	"github.com/ipcfuzz/ipcfuzz/harness/sink"
)

// maxReportFindings bounds the findings one report holds.
const maxReportFindings = 100000

// reportCmd writes findings as one static HTML page.
func reportCmd(_ context.Context, args []string, _, _ io.Writer) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	out := fs.String("o", "report.html", "the HTML file to write")
	plot := fs.String("plot", "", "an SVG plot of ipcfuzz complexity --plot to show at the top")
	title := fs.String("title", "", "the page's title (default: ipcfuzz findings)")
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return usageError{"report needs at least one finding file"}
	}
	if len(files) > maxReportFindings {
		return usageError{fmt.Sprintf("report takes at most %d files", maxReportFindings)}
	}
	opt := report.Options{Title: *title}
	if *plot != "" {
		if opt.Plot, err = os.ReadFile(*plot); err != nil {
			return inputError{err}
		}
	}
	return writeReport(*out, files, opt)
}

// writeReport reads the finding files and writes their page to out
// (sink.WriteHTML).
func writeReport(out string, files []string, opt report.Options) error {
	if err := sink.WriteHTML(out, files, opt); err != nil {
		return inputError{err}
	}
	return nil
}
