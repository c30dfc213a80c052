//go:build linux && amd64

package vm

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// GuestConfig says what /init serves.
type GuestConfig struct {
	// Args run the plugin server: this program's arguments ("plugin",
	// "serve", "kernel").
	Args []string
	// Env are more "KEY=value" entries of the plugin's environment.
	Env []string
	// SlowdownEnv names the variable that tells the plugin its slowdown.
	SlowdownEnv string
	// CacheDir is the directory the plugin's helpers are found in (set as
	// XDG_CACHE_HOME).
	CacheDir string
}

// IsGuestInit reports whether this process is ipcfuzz's /init in a guest
// booted by Boot.
func IsGuestInit() bool { return os.Getpid() == 1 && os.Getenv(envInit) == "1" }

// GuestInit is /init in the guest: it mounts, loads the modules, starts
// the plugin server, says ready on the console, carries the port's bytes
// to the plugin and back, and powers the guest off when the plugin exits.
// It never returns.
func GuestInit(c GuestConfig) {
	// Capabilities are a thread's: the bounding set is dropped on this
	// thread, which also starts the plugin.
	runtime.LockOSThread()
	var err error
	if prog := os.Getenv(envRun); prog != "" {
		err = runInGuest(prog)
	} else {
		err = serveGuest(c)
	}
	if err != nil {
		fmt.Printf("%s%v\n", failedPrefix, err)
	}
	unix.Sync()
	_ = unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
	os.Exit(1) // only if the reboot failed: the kernel panics, QEMU (-no-reboot) exits
}

func serveGuest(c GuestConfig) error {
	if err := mountAll(); err != nil {
		return err
	}
	if err := loadModules(); err != nil {
		return err
	}
	// CAP_SYS_RESOURCE is kept for the guest's root only if the host asked
	// (Spec.Caps); otherwise the guest's root has what the host's usually
	// has (caps=none).
	if os.Getenv(envCaps) != ops.CapSysResource {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, unix.CAP_SYS_RESOURCE, 0, 0, 0); err != nil {
			return fmt.Errorf("dropping CAP_SYS_RESOURCE: %w", err)
		}
	}
	slowdown := 1.0
	if host, err := strconv.ParseInt(os.Getenv(envHostCalib), 10, 64); err == nil && host > 0 {
		slowdown = max(1, float64(calibrate().Nanoseconds())/float64(host))
	}
	if os.Getenv(EnvGuestAccel) == "tcg" {
		slowdown = max(slowdown, TCGMinSlowdown)
	}
	port, err := findPort(10 * time.Second)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		self = "/init"
	}
	cmd := exec.Command(self, c.Args...)
	// Later entries win: ours over what the kernel gave init.
	cmd.Env = pluginEnv(c, slowdown)
	cmd.Stderr = os.Stdout
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the plugin: %w", err)
	}
	exited := make(chan error, 1)
	lines := bufio.NewReader(out)
	hs, err := lines.ReadString('\n')
	if err != nil {
		return fmt.Errorf("the plugin printed no handshake: %v (%v)", err, cmd.Wait())
	}
	hs = strings.TrimSpace(hs)
	go func() {
		_, _ = io.Copy(os.Stdout, lines) // what the plugin prints later
		exited <- cmd.Wait()
	}()
	addr, err := handshakeAddr(hs)
	if err != nil {
		_ = cmd.Process.Kill()
		return err
	}
	// The port is open before the host hears the guest is ready, so that
	// what the host sends never waits for the guest to open it. (Opening
	// it first was not what made a host's first connection go unanswered
	// now and then: that still happens, and the host gives such a
	// connection up and connects again, plugins/host.DefaultConnectTimeout.)
	fd, err := unix.Open(port, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = cmd.Process.Kill()
		return fmt.Errorf("opening %s: %w", port, err)
	}
	fmt.Println(readyLine(slowdown, hs))
	go bridge(fd, addr)
	if err := <-exited; err != nil {
		fmt.Printf("the plugin exited: %v\n", err)
	}
	return nil
}

// runInGuest runs the program prog (a static binary of the initramfs, Run's
// mode) with the console as its output, and says on the console how it
// exited: the exit line, its status or 128+signal.
func runInGuest(prog string) error {
	if err := mountAll(); err != nil {
		return err
	}
	if err := loadModules(); err != nil {
		return err
	}
	cmd := exec.Command(prog)
	cmd.Dir = "/tmp"
	cmd.Env = []string{"PATH=/bin", "HOME=/tmp", "TMPDIR=/tmp"}
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stdout
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
		if ws, ok := ee.Sys().(unix.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	case err != nil:
		return fmt.Errorf("running %s: %w", prog, err)
	}
	fmt.Printf("%s%d\n", exitPrefix, code)
	return nil
}

// mountAll mounts what the adapter reads and writes.
func mountAll() error {
	for _, m := range []struct{ fs, dir string }{
		{"proc", "/proc"}, {"sysfs", "/sys"}, {"devtmpfs", "/dev"}, {"tmpfs", "/tmp"},
	} {
		if err := os.MkdirAll(m.dir, 0o755); err != nil {
			return err
		}
		if err := unix.Mount(m.fs, m.dir, m.fs, 0, ""); err != nil && !errors.Is(err, unix.EBUSY) {
			return fmt.Errorf("mount %s on %s: %w", m.fs, m.dir, err)
		}
	}
	// debugfs, for KCOV (/sys/kernel/debug/kcov), where the kernel has it.
	_ = unix.Mount("debugfs", "/sys/kernel/debug", "debugfs", 0, "")
	return nil
}

// loadModules loads the initramfs's modules, in their order.
func loadModules() error {
	files, _ := filepath.Glob(filepath.Join(guestModules, "*.ko"))
	slices.Sort(files)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if err := unix.InitModule(data, ""); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("loading module %s: %w", filepath.Base(f), err)
		}
	}
	return nil
}

// findPort waits up to d for the virtio-serial port named PortName and
// returns its device.
func findPort(d time.Duration) (string, error) {
	deadline := time.Now().Add(d)
	for {
		names, _ := filepath.Glob("/sys/class/virtio-ports/*/name")
		for _, n := range names {
			b, err := os.ReadFile(n)
			if err == nil && strings.TrimSpace(string(b)) == PortName {
				dev := "/dev/" + filepath.Base(filepath.Dir(n))
				if fileExists(dev) {
					return dev, nil
				}
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no virtio-serial port %q after %v (a kernel needs CONFIG_VIRTIO_PCI and CONFIG_VIRTIO_CONSOLE, built in or as modules of its package)", PortName, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// handshakeAddr is the unix socket of a go-plugin handshake line
// "CORE|APP|unix|ADDR|grpc|...".
func handshakeAddr(line string) (string, error) {
	f := strings.Split(line, "|")
	if len(f) < 5 || f[2] != "unix" {
		return "", fmt.Errorf("the plugin's handshake %q is not a go-plugin line on a unix socket", line)
	}
	return f[3], nil
}

// bridge carries bytes between the port and the plugin's socket, one host
// connection at a time. A port without a host connection reads 0 bytes at
// once (virtio_console): the bridge waits for the first byte of the host
// (gRPC's client speaks first) before it connects to the plugin, and drops
// that connection when the host hangs up.
func bridge(fd int, addr string) {
	buf := make([]byte, 64<<10)
	var conn net.Conn
	for {
		n, err := unix.Read(fd, buf)
		if err == unix.EINTR || err == unix.EAGAIN {
			continue
		}
		if err != nil {
			fmt.Printf("reading the port: %v\n", err)
			return
		}
		if n == 0 { // no host connected
			if conn != nil {
				conn.Close()
				conn = nil
			}
			time.Sleep(5 * time.Millisecond)
			continue
		}
		if conn == nil {
			if conn, err = net.Dial("unix", addr); err != nil {
				fmt.Printf("connecting to the plugin: %v\n", err)
				return
			}
			go toPort(conn, fd)
		}
		if _, err := conn.Write(buf[:n]); err != nil {
			conn.Close()
			conn = nil
		}
	}
}

// toPort copies what the plugin sends to the port.
func toPort(conn net.Conn, fd int) {
	buf := make([]byte, 64<<10)
	for {
		n, err := conn.Read(buf)
		if n > 0 {
			for b := buf[:n]; len(b) > 0; {
				w, werr := unix.Write(fd, b)
				if werr == unix.EINTR || werr == unix.EAGAIN {
					continue
				}
				if werr != nil {
					return
				}
				b = b[w:]
			}
		}
		if err != nil {
			return
		}
	}
}
