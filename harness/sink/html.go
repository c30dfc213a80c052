package sink

import (
	"bytes"
	"fmt"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/report"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
)

// HTML returns a sink that writes, at the end of a compare that ended
// without an error, the page of the findings it stored (WriteHTML) to
// path; a replay writes none.
func HTML(path string, opt report.Options) Writer {
	return &htmlSink{path: path, opt: opt}
}

type htmlSink struct {
	path  string
	opt   report.Options
	start runner.Start
	err   error
}

func (h *htmlSink) Err() error { return h.err }

func (h *htmlSink) Start(s runner.Start) { h.start = s }

func (h *htmlSink) Script(runner.Script) {}

func (h *htmlSink) Found(runner.Found) {}

func (h *htmlSink) End(e runner.End) {
	if e.Result == nil || e.Err != nil || h.start.Files != nil {
		return
	}
	h.err = WriteHTML(h.path, e.Result.Scripts, h.opt)
}

// WriteHTML reads finding files and writes their page (harness/report)
// to path, whole or not at all.
func WriteHTML(path string, files []string, opt report.Options) error {
	fs := make([]report.Finding, 0, len(files))
	for _, f := range files {
		r, err := report.Read(f)
		if err != nil {
			return err
		}
		fs = append(fs, r)
	}
	var b bytes.Buffer
	if err := report.Write(&b, fs, opt); err != nil {
		return err
	}
	if err := corpus.WriteFileAtomic(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// Tee returns a sink that tells every one of ws, in turn, and whose
// error is the first of theirs.
func Tee(ws ...Writer) Writer { return tee(ws) }

type tee []Writer

func (t tee) Err() error {
	for _, w := range t {
		if err := w.Err(); err != nil {
			return err
		}
	}
	return nil
}

func (t tee) Start(s runner.Start)   { tellEach(t, s, Writer.Start) }
func (t tee) Script(s runner.Script) { tellEach(t, s, Writer.Script) }
func (t tee) Found(f runner.Found)   { tellEach(t, f, Writer.Found) }
func (t tee) End(e runner.End)       { tellEach(t, e, Writer.End) }

// tellEach tells every one of ws, in turn, the event e by tell.
func tellEach[E any](ws []Writer, e E, tell func(Writer, E)) {
	for _, w := range ws {
		tell(w, e)
	}
}
