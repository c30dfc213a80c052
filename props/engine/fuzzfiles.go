package engine

import (
	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// DrawFuzzFiles draws the script of each go test -fuzz input file
// (testdata/fuzz/FuzzX/...) as the subsystem's fuzz target draws it.
func (s Subsystem) DrawFuzzFiles(files []string) ([][]ops.Op, error) {
	out := make([][]ops.Op, len(files))
	for i, f := range files {
		data, err := corpus.ReadFuzzInput(f)
		if err != nil {
			return nil, err
		}
		out[i] = s.DrawFuzz(&ByteSource{Data: data})
	}
	return out, nil
}
