package plugins

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	ipcfuzzv1 "github.com/ipcfuzz/ipcfuzz/plugins/proto/ipcfuzz/v1"
)

// benchExec is an Exec of 64 scripts of 30 gets and lists, with outcomes
// shaped like a small model's.
func benchExec() ([][]ops.Op, []ops.Outcome) {
	scripts := make([][]ops.Op, 64)
	outs := make([]ops.Outcome, 64)
	for i := range scripts {
		var snap ops.Snapshot
		for j := range 30 {
			t := ops.IPCType(j % 3)
			op := ops.Op{Kind: ops.KindGet, Type: t, Bind: j + 1, Key: int32(j * 7919), Creat: true, Mode: 0o600, Size: 4096}
			r := ops.Result{ID: int64(j)}
			if j%5 == 4 {
				op = ops.Op{Kind: ops.KindStat, Type: t, Obj: ops.Ref{Handle: j}}
				r = ops.Result{Obj: ops.Object{Key: int32(j), Mode: 0o600, Size: 4096}}
			} else {
				snap.IDs[t].Objects = append(snap.IDs[t].Objects, ops.Object{ID: int64(j), Key: op.Key, Mode: op.Mode, Size: op.Size})
			}
			scripts[i] = append(scripts[i], op)
			outs[i].Results = append(outs[i].Results, r)
		}
		outs[i].Snapshot = snap
	}
	return scripts, outs
}

// BenchmarkExecWire is what one Exec costs in encoding alone: request and
// response each converted, marshalled, unmarshalled and converted back.
func BenchmarkExecWire(b *testing.B) {
	scripts, outs := benchExec()
	b.ReportAllocs()
	for b.Loop() {
		req, _ := proto.Marshal(&ipcfuzzv1.ExecRequest{Scripts: ScriptsToProto(scripts)})
		var mreq ipcfuzzv1.ExecRequest
		if err := proto.Unmarshal(req, &mreq); err != nil {
			b.Fatal(err)
		}
		if _, err := ScriptsFromProto(mreq.Scripts); err != nil {
			b.Fatal(err)
		}
		resp, _ := proto.Marshal(&ipcfuzzv1.ExecResponse{Outcomes: OutcomesToProto(outs)})
		var mresp ipcfuzzv1.ExecResponse
		if err := proto.Unmarshal(resp, &mresp); err != nil {
			b.Fatal(err)
		}
		if _, err := OutcomesFromProto(mresp.Outcomes); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*64*30)/b.Elapsed().Seconds(), "ops/s")
}
