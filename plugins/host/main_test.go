package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/plugins"
	ipcfuzzv1 "github.com/ipcfuzz/ipcfuzz/plugins/proto/ipcfuzz/v1"
)

// The test binary is also the plugin: when modeEnv is set, TestMain serves
// the implementation that mode names instead of running tests.
const (
	modeEnv    = "IPCFUZZ_TEST_PLUGIN"
	crashAtEnv = "IPCFUZZ_TEST_CRASH_AT" // the Apply call that crashes (1-based)
	hostEnv    = "IPCFUZZ_TEST_HOST"     // the test binary is a host (see runHost)
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(modeEnv); mode != "" {
		servePlugin(mode)
		os.Exit(0)
	}
	if mode := os.Getenv(hostEnv); mode != "" {
		os.Exit(runHost(mode))
	}
	code := m.Run()
	plugin.CleanupClients()
	os.Exit(code)
}

var toyInfo = ops.Info{Name: "toy", Version: "1", Subsystems: []string{"ids"}, Counters: true}

func newToy() *ops.Local { return ops.NewLocal(toyInfo, &toyModel{}) }

// servePlugin is the plugin side of the tests, one behaviour per mode.
func servePlugin(mode string) {
	switch mode {
	case "toy":
		plugins.Serve(newToy())
	case "follower": // the toy model, following the other side's results and snapshot
		plugins.Serve(ops.NewLocal(toyInfo, &follower{}))
	case "unfollowing": // a plugin that predates following in Apply and Snapshot
		plugins.ServeServer(&unfollowing{ImplServer: plugins.NewServer(ops.NewLocal(toyInfo, &follower{}))}, nil)
	case "crash", "panic":
		at, _ := strconv.Atoi(os.Getenv(crashAtEnv))
		plugins.Serve(&crashing{Local: newToy(), at: max(at, 1), panic: mode == "panic"})
	case "hang":
		plugins.Serve(&hanging{Local: newToy()})
	case "chatty": // writes to stdout and stderr after the handshake
		plugins.Serve(&chatty{Local: newToy()})
	case "short": // loses the last result of every batch
		plugins.Serve(&short{Local: newToy()})
	case "failing": // the model fails on next_id
		plugins.Serve(ops.NewLocal(toyInfo, &toyModel{failNextID: true}))
	case "badsnap": // a snapshot with two IPC types
		plugins.ServeServer(&badSnapshot{ImplServer: plugins.NewServer(newToy())}, nil)
	case "shortexec": // loses the last result of every script Exec runs
		plugins.ServeServer(&badExec{ImplServer: plugins.NewServer(newToy()), short: true}, nil)
	case "badexecsnap": // Exec's snapshots are bytes that do not decode
		plugins.ServeServer(&badExec{ImplServer: plugins.NewServer(newToy())}, nil)
	case "spawner": // starts a child that holds its stdout and stderr; Info.Version is the child's pid
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), modeEnv+"=sleeper")
		child.Stdout, child.Stderr = os.Stdout, os.Stderr
		if err := child.Start(); err != nil {
			panic(err)
		}
		info := toyInfo
		info.Version = strconv.Itoa(child.Process.Pid)
		plugins.Serve(ops.NewLocal(info, &toyModel{}))
	case "sleeper":
		time.Sleep(time.Hour)
	case "not-a-plugin":
		fmt.Println("hello, I am an ordinary program")
	case "noise": // prints before serving: breaks the handshake
		fmt.Println("starting toy model...")
		plugins.Serve(newToy())
	case "exit-early":
		os.Exit(0)
	case "other-cookie": // a go-plugin plugin of another product
		cfg := plugins.HandshakeConfig()
		cfg.MagicCookieKey, cfg.MagicCookieValue = "OTHER_PRODUCT_PLUGIN", "x"
		plugin.Serve(&plugin.ServeConfig{HandshakeConfig: cfg, Plugins: plugins.PluginSet(plugins.NewServer(newToy())), GRPCServer: plugins.NewGRPCServer})
	case "other-layout": // built against another vocabulary
		plugins.ServeServer(&otherLayout{ImplServer: plugins.NewServer(newToy())}, nil)
	case "future": // a future protocol version
		cfg := plugins.HandshakeConfig()
		cfg.ProtocolVersion = plugins.ProtocolVersion + 1
		plugin.Serve(&plugin.ServeConfig{HandshakeConfig: cfg, Plugins: plugins.PluginSet(plugins.NewServer(newToy())), GRPCServer: plugins.NewGRPCServer})
	default:
		fmt.Fprintf(os.Stderr, "unknown %s mode %q\n", modeEnv, mode)
		os.Exit(2)
	}
}

// toyModel is a tiny ops.Model: get hands out sequential ids (from 0, or from
// the "start" option), rmid/stat find them, list lists them, limit caps the
// number of objects per type.
type toyModel struct {
	failNextID bool
	next       int64
	objs       [len(ops.IPCTypes)][]ops.Object
	limit      [len(ops.IPCTypes)]int64
}

func (m *toyModel) Reset(cfg ops.Config) error {
	*m = toyModel{failNextID: m.failNextID}
	for i := range m.limit {
		m.limit[i] = 1 << 20
	}
	for k, v := range cfg.Options {
		if k != "start" {
			return fmt.Errorf("toy: unknown option %q", k)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("toy: start=%q: %w", v, err)
		}
		m.next = n
	}
	return nil
}

func (m *toyModel) find(t ops.IPCType, id int64) int {
	return slices.IndexFunc(m.objs[t], func(o ops.Object) bool { return o.ID == id })
}

func (m *toyModel) Apply(op ops.Op) (ops.Result, error) {
	if int(op.Type) >= len(ops.IPCTypes) {
		return ops.Result{Err: ops.EINVAL}, nil
	}
	t := op.Type
	switch op.Kind {
	case ops.KindGet:
		if int64(len(m.objs[t])) >= m.limit[t] {
			return ops.Result{Err: ops.ENOSPC}, nil
		}
		id := m.next
		m.next++
		m.objs[t] = append(m.objs[t], ops.Object{ID: id, Key: op.Key, Mode: op.Mode, Owner: op.As, Size: op.Size})
		return ops.Result{ID: id}, nil
	case ops.KindRmid:
		i := m.find(t, op.Obj.ID)
		if i < 0 {
			return ops.Result{Err: ops.EINVAL}, nil
		}
		m.objs[t] = slices.Delete(m.objs[t], i, i+1)
		return ops.Result{}, nil
	case ops.KindStat:
		i := m.find(t, op.Obj.ID)
		if i < 0 {
			return ops.Result{Err: ops.EINVAL}, nil
		}
		o := m.objs[t][i]
		o.ID = 0
		return ops.Result{Obj: o}, nil
	case ops.KindLimit:
		m.limit[t] = op.Value
		return ops.Result{}, nil
	case ops.KindList:
		list := make([]ops.Entry, len(m.objs[t]))
		for i, o := range m.objs[t] {
			list[i] = ops.Entry{ID: o.ID, Key: o.Key}
		}
		return ops.Result{List: list}, nil
	case ops.KindNextID:
		if m.failNextID {
			return ops.Result{}, errors.New("toy: next_id is not implemented")
		}
	}
	return ops.Result{Err: ops.ENOSYS}, nil
}

func (m *toyModel) Snapshot() (ops.Snapshot, error) {
	var s ops.Snapshot
	for t := range s.IDs {
		s.IDs[t] = ops.TypeState{Objects: slices.Clone(m.objs[t]), NextID: -1, Limit: m.limit[t]}
	}
	return s, nil
}

func (m *toyModel) Close() error { return nil }

// crashing exits (status 3) or panics on its at-th Apply.
type crashing struct {
	*ops.Local
	at, calls int
	panic     bool
}

func (c *crashing) Apply(ctx context.Context, batch []ops.Op, follow []ops.Result) ([]ops.Result, error) {
	if c.calls++; c.calls == c.at {
		if c.panic {
			panic(fmt.Sprintf("toy: boom on apply %d", c.calls))
		}
		// What a dying plugin says last, through the os.Stderr that
		// plugin.Serve swapped for its stdio stream.
		fmt.Fprintf(os.Stderr, "toy: giving up on apply %d\n", c.calls)
		time.Sleep(200 * time.Millisecond)
		os.Exit(3)
	}
	return c.Local.Apply(ctx, batch, follow)
}

// hanging never answers Apply.
type hanging struct{ *ops.Local }

func (*hanging) Apply(context.Context, []ops.Op, []ops.Result) ([]ops.Result, error) {
	for {
		time.Sleep(time.Hour)
	}
}

// chatty prints on every Apply.
type chatty struct{ *ops.Local }

func (c *chatty) Apply(ctx context.Context, batch []ops.Op, follow []ops.Result) ([]ops.Result, error) {
	fmt.Printf("chatty: applying %d ops\n", len(batch))
	fmt.Fprintf(os.Stderr, "chatty: stderr says hello\n")
	return c.Local.Apply(ctx, batch, follow)
}

// short drops the last result.
type short struct{ *ops.Local }

func (s *short) Apply(ctx context.Context, batch []ops.Op, follow []ops.Result) ([]ops.Result, error) {
	rs, err := s.Local.Apply(ctx, batch, follow)
	if len(rs) > 0 {
		rs = rs[:len(rs)-1]
	}
	return rs, err
}

// otherLayout says it speaks another packed layout.
type otherLayout struct{ ipcfuzzv1.ImplServer }

func (o *otherLayout) Info(ctx context.Context, req *ipcfuzzv1.InfoRequest) (*ipcfuzzv1.InfoResponse, error) {
	resp, err := o.ImplServer.Info(ctx, req)
	if err == nil {
		resp.Info.PackedLayout = "packed-000000000000"
	}
	return resp, err
}

// badSnapshot answers Snapshot with bytes that are no packed snapshot.
type badSnapshot struct{ ipcfuzzv1.ImplServer }

func (*badSnapshot) Snapshot(context.Context, *ipcfuzzv1.SnapshotRequest) (*ipcfuzzv1.SnapshotResponse, error) {
	return &ipcfuzzv1.SnapshotResponse{Snapshot: []byte{0xff, 0xff, 0xff}}, nil
}

// badExec answers Exec with outcomes whose results lose their last one
// (short) or whose snapshots do not decode: the same wrong bytes for the
// same scripts, every time.
type badExec struct {
	ipcfuzzv1.ImplServer
	short bool
}

func (b *badExec) Exec(ctx context.Context, req *ipcfuzzv1.ExecRequest) (*ipcfuzzv1.ExecResponse, error) {
	resp, err := b.ImplServer.Exec(ctx, req)
	if err != nil {
		return nil, err
	}
	for _, o := range resp.Outcomes {
		if !b.short {
			o.Snapshot = []byte{0xff, 0xff, 0xff}
			continue
		}
		rs, err := plugins.UnpackResults(o.Results)
		if err != nil {
			return nil, err
		}
		if len(rs) > 0 {
			o.Results = plugins.PackResults(rs[:len(rs)-1])
		}
	}
	return resp, nil
}

// follower is the toy model that follows: given the other side's result of
// an operation (or its final snapshot), it answers that instead.
type follower struct{ toyModel }

func (f *follower) ApplyFollowing(op ops.Op, other *ops.Result) (ops.Result, error) {
	if other != nil {
		return *other, nil
	}
	return f.Apply(op)
}

func (f *follower) SnapshotFollowing(other *ops.Snapshot) (ops.Snapshot, error) {
	if other != nil {
		return *other, nil
	}
	return f.Snapshot()
}

// unfollowing answers as a server that does not know the follow fields.
type unfollowing struct{ ipcfuzzv1.ImplServer }

func (u *unfollowing) Apply(ctx context.Context, req *ipcfuzzv1.ApplyRequest) (*ipcfuzzv1.ApplyResponse, error) {
	resp, err := u.ImplServer.Apply(ctx, &ipcfuzzv1.ApplyRequest{Ops: req.GetOps()})
	if resp != nil {
		resp.Followed = false
	}
	return resp, err
}

func (u *unfollowing) Snapshot(ctx context.Context, req *ipcfuzzv1.SnapshotRequest) (*ipcfuzzv1.SnapshotResponse, error) {
	resp, err := u.ImplServer.Snapshot(ctx, &ipcfuzzv1.SnapshotRequest{})
	if resp != nil {
		resp.Followed = false
	}
	return resp, err
}

// runHost is a host process for the tests: it opens the toy plugin and
// prints its socket directory and pid, then "hold" waits to be killed and
// "once" closes the plugin and exits.
func runHost(mode string) int {
	p, err := Open(context.Background(), Launch{Name: "toy", Path: os.Args[0], Env: []string{modeEnv + "=toy"}, CallTimeout: 20 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(p.cur.sockDir, p.Pid())
	if mode == "hold" {
		select {}
	}
	p.Close()
	return 0
}
