package sink

import (
	"encoding/json"

	"github.com/ipcfuzz/ipcfuzz/harness/runner"
)

// jsonSink ends with one JSON object on out, the run's result
// (runner.Result); the findings, in full as they come, go to notes.
type jsonSink struct {
	out, notes *output
}

func (j *jsonSink) Err() error { return j.out.err }

func (j *jsonSink) Start(runner.Start) {}

func (j *jsonSink) Script(runner.Script) {}

func (j *jsonSink) Found(f runner.Found) {
	j.notes.print(f.Text)
	if f.Finding.Script != "" {
		j.notes.printf("# written to %s\n", f.Finding.Script)
	}
}

func (j *jsonSink) End(e runner.End) {
	if e.Result == nil || j.out.err != nil || j.out.w == nil {
		return
	}
	j.out.err = json.NewEncoder(j.out.w).Encode(e.Result)
}
