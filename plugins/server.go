package plugins

import (
	"context"
	"errors"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	ipcfuzzv1 "github.com/ipcfuzz/ipcfuzz/plugins/proto/ipcfuzz/v1"
)

// NewServer returns the gRPC server side of the protocol, serving impl
// (normally an *ops.Local).
//
// An error impl returns travels in-band as a Failure, with whatever partial
// results came with it. Only when the call's own context ended (the host's
// deadline passed or it gave up) does the server answer with a gRPC status
// instead, so the host can tell "the implementation failed" from "the call
// failed". A request that does not decode is refused with InvalidArgument.
func NewServer(impl ops.Impl) ipcfuzzv1.ImplServer {
	return &server{impl: impl}
}

type server struct {
	ipcfuzzv1.UnimplementedImplServer
	impl ops.Impl
}

// failure turns an error of the implementation into its wire form, or into a
// gRPC status when the call's context is what ended it.
func failure(ctx context.Context, err error) (*ipcfuzzv1.Failure, error) {
	if err == nil {
		return nil, nil
	}
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	// proto3 strings must be valid UTF-8, or the whole response fails to encode.
	return &ipcfuzzv1.Failure{Message: strings.ToValidUTF8(err.Error(), "\uFFFD")}, nil
}

func (s *server) Info(ctx context.Context, _ *ipcfuzzv1.InfoRequest) (*ipcfuzzv1.InfoResponse, error) {
	info, err := s.impl.Info(ctx)
	f, serr := failure(ctx, err)
	if serr != nil {
		return nil, serr
	}
	return &ipcfuzzv1.InfoResponse{Info: InfoToProto(info), Failure: f}, nil
}

func (s *server) Reset(ctx context.Context, req *ipcfuzzv1.ResetRequest) (*ipcfuzzv1.ResetResponse, error) {
	err := s.impl.Reset(ctx, ConfigFromProto(req.GetConfig()))
	f, serr := failure(ctx, err)
	if serr != nil {
		return nil, serr
	}
	return &ipcfuzzv1.ResetResponse{Failure: f}, nil
}

func (s *server) Apply(ctx context.Context, req *ipcfuzzv1.ApplyRequest) (*ipcfuzzv1.ApplyResponse, error) {
	batch, err := UnpackOps(req.GetOps())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "apply: %v", err)
	}
	var follow []ops.Result
	if req.GetFollowSet() {
		if follow, err = UnpackResults(req.GetFollow()); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "apply: results to follow: %v", err)
		}
		if follow == nil {
			follow = []ops.Result{} // set, even when empty
		}
	}
	results, err := s.impl.Apply(ctx, batch, follow)
	f, serr := failure(ctx, err)
	if serr != nil {
		return nil, serr
	}
	return &ipcfuzzv1.ApplyResponse{Results: PackResults(results), Failure: f, Followed: req.GetFollowSet()}, nil
}

func (s *server) Snapshot(ctx context.Context, req *ipcfuzzv1.SnapshotRequest) (*ipcfuzzv1.SnapshotResponse, error) {
	var follow *ops.Snapshot
	if req.GetFollowSet() {
		other, err := UnpackSnapshot(req.GetFollow())
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "snapshot: snapshot to follow: %v", err)
		}
		follow = &other
	}
	snap, err := s.impl.Snapshot(ctx, follow)
	f, serr := failure(ctx, err)
	if serr != nil {
		return nil, serr
	}
	return &ipcfuzzv1.SnapshotResponse{Snapshot: PackSnapshot(snap), Failure: f, Followed: req.GetFollowSet()}, nil
}

func (s *server) Exec(ctx context.Context, req *ipcfuzzv1.ExecRequest) (*ipcfuzzv1.ExecResponse, error) {
	began := time.Now()
	scripts, err := ScriptsFromProto(req.GetScripts())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "exec: %v", err)
	}
	var follow []ops.Outcome
	if req.GetFollowSet() {
		if follow, err = OutcomesFromProto(req.GetFollow()); err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "exec: outcomes to follow: %v", err)
		}
	}
	outcomes, err := s.impl.Exec(ctx, ConfigFromProto(req.GetConfig()), scripts, follow)
	f, serr := failure(ctx, err)
	if serr != nil {
		return nil, serr
	}
	resp := &ipcfuzzv1.ExecResponse{Outcomes: OutcomesToProto(outcomes), Failure: f}
	resp.ServerNs = time.Since(began).Nanoseconds()
	return resp, nil
}

// Measure implements ipcfuzzv1.ImplServer.
func (s *server) Measure(ctx context.Context, req *ipcfuzzv1.MeasureRequest) (*ipcfuzzv1.MeasureResponse, error) {
	m, err := s.impl.Measure(ctx, ConfigFromProto(req.GetConfig()), ops.Workload(req.GetWorkload()), int(req.GetN()), int(req.GetReps()))
	f, serr := failure(ctx, err)
	if serr != nil {
		return nil, serr
	}
	return &ipcfuzzv1.MeasureResponse{WallNs: m.WallNs, Counters: m.Counters, Primary: m.Primary, Failure: f}, nil
}
