//go:build linux && amd64

package vm

import (
	"bufio"
	"context"
	"crypto/rand"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Config says what to boot.
type Config struct {
	Image *Image
	// Init is the host path of the program the guest runs as /init (the
	// ipcfuzz binary, which runs GuestInit there).
	Init string
	// Files are more files of the initramfs: guest path to host path.
	Files map[string]string
	// Env are "KEY=value" entries of /init's environment (no spaces: they
	// travel on the kernel command line).
	Env []string
	// Caps is the capabilities the guest's root keeps (Spec.Caps).
	Caps string
	// MemoryMB and CPUs size the guest; 0: DefaultMemoryMB and 2.
	MemoryMB, CPUs int
	// Console receives the guest's console lines and QEMU's messages; nil:
	// discarded.
	Console io.Writer
	// QEMU is the QEMU binary; "": qemu-system-x86_64 on PATH.
	QEMU string
}

// QEMUGuest is a guest QEMU booted whose plugin serves.
type QEMUGuest struct {
	// Accel is how it runs: "kvm" or "tcg".
	Accel string
	// Addr is where the plugin's gRPC is reached: QEMU's end of the port.
	Addr *net.UnixAddr
	// Handshake is the plugin's go-plugin handshake line in the guest.
	Handshake string
	// Slowdown is how many times slower the guest ran the calibration
	// than the host (at least 1).
	Slowdown float64
	// BootTime is the time from QEMU's start to the ready line.
	BootTime time.Duration

	cmd   *exec.Cmd
	done  chan struct{}
	err   error
	begin time.Time
}

// Pid is QEMU's pid.
func (g *QEMUGuest) Pid() int { return g.cmd.Process.Pid }

// Cmd is QEMU's command; its ProcessState is set once Wait returned.
func (g *QEMUGuest) Cmd() *exec.Cmd { return g.cmd }

// Wait waits for QEMU to exit and returns how it did.
func (g *QEMUGuest) Wait() error {
	<-g.done
	return g.err
}

// Exited reports whether QEMU has exited.
func (g *QEMUGuest) Exited() bool {
	select {
	case <-g.done:
		return true
	default:
		return false
	}
}

// Kill kills QEMU (its process group) and waits for it.
func (g *QEMUGuest) Kill() error {
	if err := syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing QEMU: %w", err)
	}
	<-g.done
	return nil
}

// Boot starts QEMU on the image and waits until the guest's plugin
// serves, ctx's deadline at most. On an error nothing is left running.
func Boot(ctx context.Context, c Config) (*QEMUGuest, error) {
	g, ready, tail, err := start(c)
	if err != nil {
		return nil, err
	}
	select {
	case line, ok := <-ready:
		if !ok { // the console ended: QEMU is exiting
			<-g.done
			return nil, fmt.Errorf("QEMU exited before the guest was ready (%v)%s", g.err, tail.quote())
		}
		if msg, ok := strings.CutPrefix(line, failedPrefix); ok {
			_ = g.Kill()
			return nil, fmt.Errorf("the guest failed: %s", msg)
		}
		slowdown, hs, err := parseReady(strings.TrimPrefix(line, readyPrefix))
		if err != nil {
			_ = g.Kill()
			return nil, err
		}
		g.Slowdown, g.Handshake = slowdown, hs
		g.BootTime = time.Since(g.begin)
		return g, nil
	case <-g.done:
		<-ready // the console is read to its end
		return nil, fmt.Errorf("QEMU exited before the guest was ready (%v)%s", g.err, tail.quote())
	case <-ctx.Done():
		_ = g.Kill()
		return nil, fmt.Errorf("the guest was not ready after %v (%w)%s", time.Since(g.begin).Round(time.Millisecond), ctx.Err(), tail.quote())
	}
}

// Run boots the image with prog (a static program) in place of the
// plugin, and returns how prog exited in the guest: its status, or 128
// plus the signal that killed it. The console (prog's output among it)
// goes to c.Console. An error is the guest's or QEMU's, never prog's: the
// guest failed, QEMU exited without an exit line, or ctx ended first. On
// return nothing is left running.
func Run(ctx context.Context, c Config, prog string) (int, error) {
	files := map[string]string{"/bin/ipcfuzz-run": prog}
	libs, err := sharedLibs(prog) // a program not linked statically brings its loader and libraries
	if err != nil {
		return 0, err
	}
	for _, l := range libs {
		files[l] = l
	}
	for g, h := range c.Files {
		files[g] = h
	}
	c.Files = files
	c.Env = append(append([]string{}, c.Env...), envRun+"=/bin/ipcfuzz-run")
	g, ready, tail, err := start(c)
	if err != nil {
		return 0, err
	}
	defer func() { _ = g.Kill() }()
	select {
	case line, ok := <-ready:
		if !ok {
			<-g.done
			return 0, fmt.Errorf("QEMU exited before the program said how it ended (%v)%s", g.err, tail.quote())
		}
		if msg, ok := strings.CutPrefix(line, failedPrefix); ok {
			return 0, fmt.Errorf("the guest failed: %s", msg)
		}
		code, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, exitPrefix)))
		if err != nil || !strings.HasPrefix(line, exitPrefix) {
			return 0, fmt.Errorf("the guest said %q where the program's exit line was due", line)
		}
		select { // the guest powers off: its last console lines come first
		case <-g.done:
		case <-time.After(10 * time.Second):
		}
		return code, nil
	case <-ctx.Done():
		return 0, fmt.Errorf("the program had not ended in the guest after %v (%w)%s", time.Since(g.begin).Round(time.Millisecond), ctx.Err(), tail.quote())
	}
}

// start starts QEMU on the image with the initramfs of c: ready receives
// the guest's first line for the host (ready, failed or exited), and is
// closed if the console ends first.
func start(c Config) (*QEMUGuest, <-chan string, *lastLines, error) {
	qemu := c.QEMU
	if qemu == "" {
		qemu = "qemu-system-x86_64"
	}
	qemuPath, err := exec.LookPath(qemu)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("booting a kernel image needs QEMU (Debian: apt-get install qemu-system-x86): %w", err)
	}
	initrd, err := initramfs(c)
	if err != nil {
		return nil, nil, nil, err
	}
	defer initrd.Close() // QEMU has read it once it runs the guest
	sock, err := socketName()
	if err != nil {
		return nil, nil, nil, err
	}
	accel := ChooseAccel()
	hostNS := calibrate()
	args := qemuArgs(c, accel, sock, initEnv(hostNS.Nanoseconds(), accel.Name, c.Caps, c.Env))
	cmd := exec.Command(qemuPath, args...)
	cmd.ExtraFiles = []*os.File{initrd} // fd 3: -initrd /dev/fd/3
	// QEMU dies with the host: the parent-death signal is tied to the
	// thread that forks it, which therefore stays until QEMU is reaped.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// The console through a pipe of ours, not StdoutPipe: Wait would close
	// its end while the last lines (why QEMU exited) are still being read.
	stdout, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, err
	}
	cmd.Stdout = pw
	console := c.Console
	if console == nil {
		console = io.Discard
	}
	tail := &lastLines{n: 20}
	cmd.Stderr = &lineWriter{w: console, tail: tail}
	g := &QEMUGuest{Accel: accel.Name, Addr: &net.UnixAddr{Name: "@" + sock, Net: "unix"}, cmd: cmd, done: make(chan struct{})}
	started := make(chan error, 1)
	g.begin = time.Now()
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with QEMU
		err := cmd.Start()
		pw.Close()
		if err != nil {
			started <- err
			close(g.done)
			return
		}
		started <- nil
		g.err = cmd.Wait()
		close(g.done)
	}()
	if err := <-started; err != nil {
		stdout.Close()
		return nil, nil, nil, fmt.Errorf("starting QEMU: %w", err)
	}
	ready := make(chan string, 1)
	go scanConsole(stdout, console, tail, ready)
	return g, ready, tail, nil
}

// DefaultMemoryMB is a guest's memory unless Config says otherwise: above
// the 512 MB under which a kernel turns transparent huge pages off by
// default (hugepage_init), so that a guest runs its THP paths as the
// kernel's configuration sets them, as a machine of ordinary size does.
const DefaultMemoryMB = 1024

// qemuArgs is QEMU's command line: no default devices, the accelerator,
// the kernel and the initramfs, the console on stdout, the port on an
// abstract unix socket.
func qemuArgs(c Config, accel Accel, sock string, env []string) []string {
	mem, cpus := c.MemoryMB, c.CPUs
	if mem <= 0 {
		mem = DefaultMemoryMB
	}
	if cpus <= 0 {
		cpus = 2
	}
	// no_timer_check: a vCPU starved by a loaded host (TCG) fails the
	// IO-APIC timer check and the kernel panics ("IO-APIC + timer doesn't
	// work!"); every hypervisor's guest skips it.
	cmdline := append([]string{"console=ttyS0", "panic=-1", "quiet", "mitigations=off", "no_timer_check", "rdinit=/init"}, env...)
	args := []string{"-nodefaults", "-no-user-config", "-display", "none", "-no-reboot"}
	args = append(args, accel.Args...)
	return append(args,
		"-smp", strconv.Itoa(cpus), "-m", strconv.Itoa(mem),
		"-kernel", c.Image.Kernel, "-initrd", "/dev/fd/3",
		"-append", strings.Join(cmdline, " "),
		"-chardev", "stdio,id=con0,signal=off", "-serial", "chardev:con0",
		"-device", "virtio-serial-pci",
		"-chardev", "socket,id=port0,path="+sock+",abstract=on,server=on,wait=off",
		"-device", "virtserialport,chardev=port0,name="+PortName,
	)
}

// socketName is a fresh name for QEMU's abstract socket.
func socketName() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return fmt.Sprintf("ipcfuzz-vm-%d-%s", os.Getpid(), hex.EncodeToString(b[:])), nil
}

// initramfs writes the guest's initramfs into a memfd: /init, its loader
// and libraries if it is not static, the files, the modules.
func initramfs(c Config) (*os.File, error) {
	fd, err := unix.MemfdCreate("ipcfuzz-initramfs", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("initramfs: memfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), "initramfs")
	w := bufio.NewWriterSize(f, 1<<20)
	a := newCPIO(w)
	files := map[string]string{"/init": c.Init}
	libs, err := sharedLibs(c.Init)
	if err != nil {
		f.Close()
		return nil, err
	}
	for _, l := range libs {
		files[l] = l
	}
	for g, h := range c.Files {
		files[g] = h
	}
	for _, d := range []string{"/dev", "/proc", "/sys", "/tmp", "/run"} {
		_ = a.dir(d)
	}
	for _, g := range sortedKeys(files) {
		data, err := os.ReadFile(files[g])
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("initramfs: %w", err)
		}
		_ = a.file(g, 0o755, data)
	}
	for i, m := range c.Image.Modules {
		_ = a.file(fmt.Sprintf("%s/%02d-%s.ko", guestModules, i, m.Name), 0o644, m.Data)
	}
	if err := a.close(); err != nil {
		f.Close()
		return nil, fmt.Errorf("initramfs: %w", err)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return nil, fmt.Errorf("initramfs: %w", err)
	}
	return f, nil
}

// guestModules is where the initramfs holds the modules to load.
const guestModules = "/lib/ipcfuzz-modules"

// sharedLibs are the dynamic loader and the libraries a dynamically linked
// program needs (none for a static one), found where the loader looks.
func sharedLibs(prog string) ([]string, error) {
	f, err := elf.Open(prog)
	if err != nil {
		return nil, fmt.Errorf("initramfs: %s: %w", prog, err)
	}
	defer f.Close()
	var out []string
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err == nil {
				out = append(out, strings.TrimRight(string(b), "\x00"))
			}
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	needed, _ := f.ImportedLibraries()
	for _, lib := range needed {
		found := ""
		for _, dir := range []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"} {
			if p := filepath.Join(dir, lib); fileExists(p) {
				found = p
				break
			}
		}
		if found == "" {
			return nil, fmt.Errorf("initramfs: %s needs %s, which is nowhere here (build ipcfuzz with CGO_ENABLED=0)", prog, lib)
		}
		out = append(out, found)
	}
	return out, nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// scanConsole reads QEMU's stdout (the guest console) line by line: the
// ready or failed line goes to ready, the others to console and tail.
func scanConsole(r io.ReadCloser, console io.Writer, tail *lastLines, ready chan<- string) {
	sent := false
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	defer r.Close()
	for s.Scan() {
		line := strings.TrimRight(s.Text(), "\r")
		if !sent && isHostLine(line) {
			ready <- line
			sent = true
			continue
		}
		tail.add(line)
		fmt.Fprintln(console, line)
	}
	if !sent {
		close(ready)
	}
}

// lastLines keeps the last n lines, for an error.
type lastLines struct {
	mu    sync.Mutex
	n     int
	lines []string
}

func (l *lastLines) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if strings.TrimSpace(s) == "" {
		return
	}
	l.lines = append(l.lines, s)
	if len(l.lines) > l.n {
		l.lines = l.lines[len(l.lines)-l.n:]
	}
}

// quote is ": the guest said: ..." with the last lines, or "".
func (l *lastLines) quote() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 0 {
		return ""
	}
	return "; the console's last lines: " + strings.Join(l.lines, " | ")
}

// lineWriter passes QEMU's stderr to the console writer and its lines to
// the tail.
type lineWriter struct {
	w    io.Writer
	tail *lastLines
}

func (l *lineWriter) Write(p []byte) (int, error) {
	for _, line := range strings.Split(string(p), "\n") {
		l.tail.add(line)
	}
	return l.w.Write(p)
}
