package host

import (
	"errors"
	"fmt"
	"strings"
)

// ErrKind says how a plugin misbehaved.
type ErrKind int

// The ways a plugin can fail. After Crashed or Hung the plugin process is gone
// and every call fails with the same error until Restart; after Garbage or
// Failed the process is still running and may be used again (Restart it if its
// state can no longer be trusted).
const (
	// Start: the executable could not be started at all (missing, not
	// executable, bad format).
	Start ErrKind = iota + 1
	// Handshake: the process started but is not a usable ipcfuzz plugin: it
	// printed something other than the go-plugin handshake, exited before it,
	// has another cookie or protocol version, speaks net/rpc, or does not serve
	// the ipcfuzz.v1.Impl service.
	Handshake
	// Crashed: the process exited, or its connection broke, during or between
	// calls. The error includes the exit status and the telling line of its
	// stderr when there is one.
	Crashed
	// Hung: a call did not answer before its deadline. The process has been
	// killed.
	Hung
	// Garbage: an answer could not be decoded or does not fit the request
	// (wrong number of results, values out of range, unknown method).
	Garbage
	// Failed: the implementation itself returned an error (a failing model,
	// not a failing process); the process is alive.
	Failed
)

// errKindNames names each kind as it appears in error messages.
var errKindNames = [...]string{
	Start: "cannot start", Handshake: "handshake failed", Crashed: "crashed", Hung: "hung",
	Garbage: "sent garbage", Failed: "implementation failed",
}

// String names the kind as it appears in error messages.
func (k ErrKind) String() string {
	if k >= Start && int(k) < len(errKindNames) {
		return errKindNames[k]
	}
	return fmt.Sprintf("ErrKind(%d)", int(k))
}

// PluginError is how a plugin failed. Error() is one line naming the plugin;
// Unwrap gives the underlying cause (context.DeadlineExceeded for Hung, the
// gRPC status for transport errors, ...).
type PluginError struct {
	Plugin string // Launch.Name, or the path when it has no name
	Kind   ErrKind
	Err    error
	// Stderr is what the process wrote to its stderr, for a report (kept
	// for Crashed and Hung; at most 1 MiB).
	Stderr string
}

// PluginStderr returns what the process wrote to its stderr.
func (e *PluginError) PluginStderr() string { return e.Stderr }

// Error is one line: plugin "<name>": <kind>: <what happened>.
func (e *PluginError) Error() string {
	msg := "unknown error"
	if e.Err != nil {
		msg = oneLine(e.Err.Error())
	}
	return fmt.Sprintf("plugin %q: %s: %s", e.Plugin, e.Kind, msg)
}

// Unwrap returns the cause.
func (e *PluginError) Unwrap() error { return e.Err }

// IsKind reports whether err is, or wraps, a *PluginError of kind k.
func IsKind(err error, k ErrKind) bool {
	var pe *PluginError
	return errors.As(err, &pe) && pe.Kind == k
}

// ErrClosed is returned (wrapped) by every call on a Plugin after Close.
var ErrClosed = errors.New("plugin closed")

// ErrNotRunning is returned (wrapped) by calls on a Plugin that was killed
// with Kill, or whose Restart failed; Restart it to use it again.
var ErrNotRunning = errors.New("plugin not running (Restart it)")

// oneLine joins the non-blank lines of s with "; ".
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	var parts []string
	for _, l := range strings.FieldsFunc(s, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if l = strings.TrimSpace(l); l != "" {
			parts = append(parts, l)
		}
	}
	return strings.Join(parts, "; ")
}
