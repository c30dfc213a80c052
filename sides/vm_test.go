package sides_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/ops/opstest"
	"github.com/ipcfuzz/ipcfuzz/impls"
	"github.com/ipcfuzz/ipcfuzz/internal/testkit"
	"github.com/ipcfuzz/ipcfuzz/sides"
)

// fakeBackend boots nothing: it runs the guest's agent, the kernel plugin
// of spec.Init, as a local process, and records the specs it was given.
type fakeBackend struct {
	mu    sync.Mutex
	specs []impls.VMSpec
}

func (f *fakeBackend) backend() impls.VMBackend {
	return impls.VMBackend{Name: "fake", Doc: "a local process", Boot: f.boot}
}

func (f *fakeBackend) boot(ctx context.Context, s impls.VMSpec) (impls.VMGuest, error) {
	f.mu.Lock()
	f.specs = append(f.specs, s)
	f.mu.Unlock()
	cmd := exec.Command(s.Init, "plugin", "serve", "kernel")
	cmd.Env = append(os.Environ(), s.Env...)
	cmd.Stderr = s.Console
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the agent: %w", err)
	}
	g := &fakeGuest{cmd: cmd, done: make(chan struct{})}
	go func() { g.err = cmd.Wait(); close(g.done) }()
	line := make(chan string, 1)
	go func() {
		hs, _ := bufio.NewReader(out).ReadString('\n')
		line <- strings.TrimSpace(hs)
	}()
	select {
	case g.hs = <-line:
	case <-ctx.Done():
		_ = g.Kill()
		return nil, ctx.Err()
	}
	fields := strings.Split(g.hs, "|")
	if len(fields) < 5 || fields[2] != "unix" {
		_ = g.Kill()
		return nil, fmt.Errorf("the agent's handshake %q", g.hs)
	}
	g.addr = &net.UnixAddr{Name: fields[3], Net: "unix"}
	return g, nil
}

// fakeGuest is the agent's process.
type fakeGuest struct {
	cmd  *exec.Cmd
	hs   string
	addr net.Addr
	done chan struct{}
	err  error
}

func (g *fakeGuest) Addr() net.Addr                 { return g.addr }
func (g *fakeGuest) Handshake() string              { return g.hs }
func (g *fakeGuest) Pid() int                       { return g.cmd.Process.Pid }
func (g *fakeGuest) ProcessState() *os.ProcessState { return g.cmd.ProcessState }
func (g *fakeGuest) Slowdown() float64              { return 1 }

func (g *fakeGuest) Wait() error {
	<-g.done
	return g.err
}

func (g *fakeGuest) Kill() error {
	_ = syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL)
	<-g.done
	return nil
}

// A kernel side whose backend boots nothing passes the same launch path
// as QEMU (sides, the plugin host's reattach, the handshake, a compare);
// the image's path may hold a comma in quotes, and caps= and cpus= travel
// once: to the backend, not to the guest's Reset.
func TestFakeBackendPassesTheLaunchPath(t *testing.T) {
	if err := sides.Usable("kernel", "msg"); err != nil {
		t.Skipf("the kernel side cannot run here: %v", err)
	}
	image := filepath.Join(t.TempDir(), "a,b", "vm linux")
	require.NoError(t, os.MkdirAll(filepath.Dir(image), 0o755))
	require.NoError(t, os.WriteFile(image, []byte("not booted"), 0o644))
	fake := &fakeBackend{}
	spec := fmt.Sprintf("kernel:vm=fake,caps=none,cpus=1,image=%q", image)
	ctx := context.Background()
	o := sides.Options{Self: bin, InProcess: true, CallTimeout: time.Minute,
		Backends: impls.VMBackends{impls.DefaultVMBackends()[0], fake.backend()}}
	p, closeAll, err := sides.OpenPair(ctx, "optimized", spec, "msg", equiv.Exact, o)
	require.NoError(t, err)
	defer closeAll()

	require.Len(t, fake.specs, 1)
	s := fake.specs[0]
	require.Equal(t, image, s.Image)
	require.Equal(t, "none", s.Caps)
	require.Equal(t, 1, s.CPUs)
	require.Equal(t, bin, s.Init)
	require.NotEmpty(t, s.Env, "the handshake's cookie")
	require.Equal(t, spec, p.B.Name)
	require.Empty(t, p.B.Config.Options, "the boot's options and caps= are not the guest's Reset's")

	for _, text := range []string{
		"subsystem msg\nh1 = get msg key=0x0 mode=0600\nmsgsnd msg h1 type=1 size=3 fill=0 nowait\nmsgrcv msg h1 size=8 type=0 nowait\n",
		"subsystem msg\nh1 = get msg key=0x5 creat mode=0600\nget msg key=0x5 creat excl mode=0600\nget msg key=0x6 mode=0600\n",
	} {
		sc := opstest.Script(t, text)
		v, err := p.CheckOne(ctx, sc.Ops())
		require.NoError(t, err)
		require.False(t, v.Diverged(), text)
	}
}

// vm= names a backend of the table; an unknown one is the user's error,
// said in one line naming the known ones (exit 2 from the command), before
// any image is looked at.
func TestUnknownBackendIsRefused(t *testing.T) {
	_, err := sides.Open(context.Background(), "kernel:vm=vng,image=/nonexistent", sides.Options{Self: bin})
	require.True(t, sides.IsSpecError(err), "%v", err)
	require.EqualError(t, err, `kernel:vm=vng,image=/nonexistent: no VM backend "vng" (known: qemu)`)

	r := testkit.Run(t, 2*time.Minute, nil, bin, "compare", "naive", "kernel:vm=vng,image=/nonexistent", "--checks", "1")
	require.Equal(t, 2, r.Code, r.Stderr)
	require.Equal(t, 1, strings.Count(strings.TrimSpace(r.Stderr), "\n")+1, r.Stderr)
	require.Contains(t, r.Stderr, `no VM backend "vng" (known: qemu)`)

	_, err = sides.Open(context.Background(), "kernel:vm=qemu", sides.Options{Self: bin})
	require.True(t, sides.IsSpecError(err), "%v", err)
	require.ErrorContains(t, err, "name the kernel to boot")
}

// cpus= sizes a guest: a number of 1 to impls.MaxGuestCPUs, and only
// beside an option that boots one; anything else is the user's error,
// said before any image is looked at.
func TestGuestCPUsAreChecked(t *testing.T) {
	for spec, want := range map[string]string{
		"kernel:cpus=1":                       "cpus= sizes a guest: give it with image=, source= or base=",
		"kernel:image=/nonexistent,cpus=0":    "cpus=0: the guest's vCPUs are a number of 1 to 8",
		"kernel:image=/nonexistent,cpus=9":    "cpus=9: the guest's vCPUs are a number of 1 to 8",
		"kernel:image=/nonexistent,cpus=many": "cpus=many: the guest's vCPUs are a number of 1 to 8",
	} {
		_, err := sides.Open(context.Background(), spec, sides.Options{Self: bin})
		require.True(t, sides.IsSpecError(err), "%s: %v", spec, err)
		require.ErrorContains(t, err, want, spec)
	}
	r := testkit.Run(t, 2*time.Minute, nil, bin, "compare", "naive", "kernel:cpus=1", "--checks", "1")
	require.Equal(t, 2, r.Code, r.Stderr)
	require.Equal(t, 1, strings.Count(strings.TrimSpace(r.Stderr), "\n")+1, r.Stderr)
}

// QEMU boots an image whose path holds a comma and a space (given in
// quotes), and caps=sys_resource reaches the guest's root through the
// boot alone: root raises qbytes above msgmnb there, as the model
// configured the same way says. Long: one guest under TCG.
func TestQEMUBootsAQuotedPathWithCaps(t *testing.T) {
	testkit.Long(t)
	image := os.Getenv("IPCFUZZ_TEST_IMAGE")
	if image == "" {
		t.Skip("no kernel image: set IPCFUZZ_TEST_IMAGE")
	}
	abs, err := filepath.Abs(image)
	require.NoError(t, err)
	link := filepath.Join(t.TempDir(), "a,b", "linux image.deb")
	require.NoError(t, os.MkdirAll(filepath.Dir(link), 0o755))
	require.NoError(t, os.Symlink(abs, link))
	spec := fmt.Sprintf("kernel:vm=qemu,caps=sys_resource,image=%q", link)
	ctx := context.Background()
	p, closeAll, err := sides.OpenPair(ctx, "optimized:caps=sys_resource", spec, "msg", equiv.Exact,
		sides.Options{Self: bin, InProcess: true, CallTimeout: 10 * time.Minute})
	require.NoError(t, err)
	defer closeAll()
	sc := opstest.Script(t, "subsystem msg\nh1 = get msg key=0x0 mode=0600\nmsgctl msg h1 set qbytes=16385 mode=0600\n")
	v, err := p.CheckOne(ctx, sc.Ops())
	require.NoError(t, err)
	require.False(t, v.Diverged())
	require.Equal(t, "ok", ops.FormatResult(sc.Steps[1].Op, v.Out[1].Results[1]))
}
