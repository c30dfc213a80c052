//go:build linux && amd64

package vm

import (
	"fmt"
	"strconv"
	"strings"
)

// The guest protocol: what the host and the guest's /init say to each
// other, the same for every backend (Backend). The host puts the
// environment below on the guest kernel's command line and serves the
// port PortName; /init starts the plugin, prints one line for the host on
// the console (ready, failed, or how Run's program exited) and carries the
// plugin's gRPC over the port.

// The lines /init writes on the console for the host: ready (with the
// slowdown it measured and the plugin's go-plugin handshake line), or why
// it failed.
const (
	readyPrefix  = "IPCFUZZ-VM-READY "
	failedPrefix = "IPCFUZZ-VM-FAILED "
	// exitPrefix is Run's line: how the program exited.
	exitPrefix = "IPCFUZZ-VM-EXIT "
)

// The environment of /init that the host sets: that it is ipcfuzz's guest
// init, how long the calibration took on the host (nanoseconds), and the
// capabilities its root keeps (Spec.Caps).
const (
	envInit      = "IPCFUZZ_VM_INIT"
	envHostCalib = "IPCFUZZ_VM_HOST_NS"
	envCaps      = "IPCFUZZ_VM_CAPS"
	// envRun, in Run's guests, is the program /init runs instead of the
	// plugin.
	envRun = "IPCFUZZ_VM_RUN"
)

// EnvGuestAccel names the variable that tells the guest's processes how
// the backend runs them ("kvm" or "tcg" for QEMU), for what they say of
// themselves.
const EnvGuestAccel = "IPCFUZZ_VM_GUEST_ACCEL"

// PortName is the name of the guest's virtio-serial port that carries the
// plugin's gRPC.
const PortName = "ipcfuzz.0"

// initEnv is the environment of /init the host sets: the marker, the
// host's calibration time, the accelerator, the capabilities ("" keeps
// the default, caps=none), then more entries.
func initEnv(hostNS int64, accel, caps string, more []string) []string {
	env := []string{envInit + "=1", envHostCalib + "=" + strconv.FormatInt(hostNS, 10), EnvGuestAccel + "=" + accel}
	if caps != "" {
		env = append(env, envCaps+"="+caps)
	}
	return append(env, more...)
}

// pluginEnv is the plugin's environment in the guest: c.Env, then ours
// (later entries win).
func pluginEnv(c GuestConfig, slowdown float64) []string {
	return append(append([]string{}, c.Env...),
		"PATH=/bin", "HOME=/tmp", "TMPDIR=/tmp",
		"XDG_CACHE_HOME="+c.CacheDir,
		"PLUGIN_UNIX_SOCKET_DIR=/tmp",
		fmt.Sprintf("%s=%.3f", c.SlowdownEnv, slowdown))
}

// readyLine is /init's line once the plugin serves.
func readyLine(slowdown float64, handshake string) string {
	return fmt.Sprintf("%sslowdown=%.3f handshake=%s", readyPrefix, slowdown, handshake)
}

// parseReady reads the ready line's "slowdown=F handshake=LINE" (the
// prefix cut off): the slowdown (at least 1) and the handshake.
func parseReady(s string) (slowdown float64, handshake string, err error) {
	slow, hs, ok := strings.Cut(s, " handshake=")
	f, err := strconv.ParseFloat(strings.TrimPrefix(slow, "slowdown="), 64)
	if !ok || err != nil {
		return 0, "", fmt.Errorf("the guest's ready line %q is not \"slowdown=F handshake=LINE\"", s)
	}
	return max(f, 1), hs, nil
}

// isHostLine reports whether a console line is one of /init's lines for
// the host.
func isHostLine(line string) bool {
	return strings.HasPrefix(line, readyPrefix) || strings.HasPrefix(line, failedPrefix) || strings.HasPrefix(line, exitPrefix)
}
