package plugins

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	ipcfuzzv1 "github.com/ipcfuzz/ipcfuzz/plugins/proto/ipcfuzz/v1"
)

// counter is a minimal model: get returns 1, 2, 3...; stat fails with a
// message that is not valid UTF-8.
type counter struct{ n int64 }

func (c *counter) Reset(ops.Config) error { c.n = 0; return nil }
func (c *counter) Apply(op ops.Op) (ops.Result, error) {
	if op.Kind == ops.KindStat {
		return ops.Result{}, errors.New("stat \xff unsupported")
	}
	c.n++
	return ops.Result{ID: c.n}, nil
}
func (c *counter) Snapshot() (ops.Snapshot, error) { return ops.Snapshot{}, nil }
func (c *counter) Close() error                    { return nil }

// A failure of the implementation travels in band, after the results of
// the operations before it, whether the batch follows another side's
// results or not.
func TestServerReportsFailuresInBand(t *testing.T) {
	ctx := context.Background()
	srv := NewServer(ops.NewLocal(ops.Info{Name: "counter"}, &counter{}))
	batch := PackOps([]ops.Op{{Kind: ops.KindGet}, {Kind: ops.KindGet}, {Kind: ops.KindStat}, {Kind: ops.KindGet}})
	for _, follow := range []bool{false, true} {
		req := &ipcfuzzv1.ApplyRequest{Ops: batch}
		if follow {
			req.Follow, req.FollowSet = PackResults(make([]ops.Result, 4)), true
		}
		resp, err := srv.Apply(ctx, req)
		if err != nil {
			t.Fatalf("apply (follow %v): %v", follow, err)
		}
		results, err := UnpackResults(resp.Results)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Failure == nil || len(results) != 2 {
			t.Fatalf("follow %v: want 2 results and a failure, got %d results, failure %v", follow, len(results), resp.Failure)
		}
		if want := "op 3 (stat msg id=0): stat \uFFFD unsupported"; resp.Failure.Message != want {
			t.Errorf("follow %v: failure %q, want %q", follow, resp.Failure.Message, want)
		}
	}
}

func TestServerAnswersAnEndedCallWithItsStatus(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	srv := NewServer(ops.NewLocal(ops.Info{}, &counter{}))
	_, err := srv.Exec(ctx, &ipcfuzzv1.ExecRequest{Scripts: ScriptsToProto([][]ops.Op{{{Kind: ops.KindGet}}})})
	if status.Code(err) != codes.Canceled {
		t.Fatalf("exec with a cancelled context: %v, want status Canceled", err)
	}
}

func TestServerRefusesUndecodableRequests(t *testing.T) {
	srv := NewServer(ops.NewLocal(ops.Info{}, &counter{}))
	_, err := srv.Apply(context.Background(), &ipcfuzzv1.ApplyRequest{Ops: []byte{1, 1, 0xff, 0x7f}})
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("apply of a damaged script: %v, want InvalidArgument", err)
	}
}
