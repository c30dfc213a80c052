package host

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// stderrTail keeps what a plugin wrote to its real stderr that best explains
// a failure: the first line, the first panic line and the last few lines. It
// is the io.Writer go-plugin copies raw stderr lines into.
type stderrTail struct {
	mu      sync.Mutex
	partial []byte
	first   string
	panic   string
	last    []string // at most tailLines
	all     []byte   // everything, up to maxStderr
	dropped int64
}

const (
	tailLines   = 8
	maxLineText = 300
	// maxStderr is how much of a plugin's stderr is kept for a report.
	maxStderr = 1 << 20
)

func (s *stderrTail) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if room := maxStderr - len(s.all); room > 0 {
		s.all = append(s.all, p[:min(room, len(p))]...)
		s.dropped += int64(len(p) - min(room, len(p)))
	} else {
		s.dropped += int64(len(p))
	}
	s.partial = append(s.partial, p...)
	for {
		i := bytes.IndexByte(s.partial, '\n')
		if i < 0 {
			break
		}
		s.line(string(s.partial[:i]))
		s.partial = s.partial[i+1:]
	}
	if len(s.partial) > 64*1024 { // a line without end: keep its start
		s.line(string(s.partial[:maxLineText]))
		s.partial = s.partial[:0]
	}
	return len(p), nil
}

func (s *stderrTail) line(l string) {
	l = strings.TrimSpace(l)
	if l == "" {
		return
	}
	l = readable(l)
	if len(l) > maxLineText {
		l = l[:maxLineText] + "..."
	}
	if s.first == "" {
		s.first = l
	}
	if s.panic == "" && tellsTheCrash(l) {
		s.panic = l
	}
	if len(s.last) == tailLines {
		copy(s.last, s.last[1:])
		s.last = s.last[:tailLines-1]
	}
	s.last = append(s.last, l)
}

// readable turns an hclog JSON line into "level: message".
func readable(l string) string {
	if !strings.HasPrefix(l, "{") {
		return l
	}
	var e struct {
		Level   string `json:"@level"`
		Message string `json:"@message"`
		Error   string `json:"error"`
	}
	if json.Unmarshal([]byte(l), &e) != nil || e.Message == "" {
		return l
	}
	out := e.Level + ": " + e.Message
	if e.Error != "" {
		out += ": " + e.Error
	}
	return out
}

// tellsTheCrash reports whether a stderr line says why a process died: a
// Go panic or fatal error, or the signal the runtime reports before its
// register dump.
func tellsTheCrash(l string) bool {
	for _, p := range []string{"panic: ", "fatal error: ", "unexpected fault address", "[signal "} {
		if strings.HasPrefix(l, p) {
			return true
		}
	}
	if sig, _, ok := strings.Cut(l, ": "); ok && strings.HasPrefix(sig, "SIG") && strings.ToUpper(sig) == sig && !strings.Contains(sig, " ") {
		return true // "SIGSEGV: segmentation violation"
	}
	return false
}

// text is everything the process wrote to stderr (up to maxStderr).
func (s *stderrTail) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dropped > 0 {
		return string(s.all) + fmt.Sprintf("\n[%d more bytes not kept]\n", s.dropped)
	}
	return string(s.all)
}

// crashLine is the line that best explains a crash: the panic or signal,
// else the last line.
func (s *stderrTail) crashLine() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.panic != "" {
		return s.panic
	}
	if n := len(s.last); n > 0 {
		return s.last[n-1]
	}
	return ""
}

// startLine is the line that best explains a failed start: the panic, else
// the first line (a refusal such as "This binary is a plugin..." comes first).
func (s *stderrTail) startLine() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.panic != "" {
		return s.panic
	}
	return s.first
}

// quoteStderr formats a stderr line for an error message, or "".
func quoteStderr(l string) string {
	if l == "" {
		return ""
	}
	return fmt.Sprintf("; stderr: %q", l)
}

// relayedLines is how many lines of a plugin's own log and stderr the host
// relays to its stderr; the rest (a panic's goroutine dump) is in the
// report's .stderr file.
const relayedLines = 20

// cappedLines passes on at most left lines, then says once that it stops.
type cappedLines struct {
	mu   sync.Mutex
	w    interface{ Write([]byte) (int, error) }
	left int
	what string
}

func (c *cappedLines) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.left > 0:
		c.left -= bytes.Count(p, []byte("\n"))
		if _, err := c.w.Write(p); err != nil {
			return 0, err
		}
		if c.left <= 0 {
			fmt.Fprintf(c.w, "[ipcfuzz: no more of plugin %q's output is shown here; a finding keeps all of it in its .stderr file]\n", c.what)
		}
	}
	return len(p), nil
}

// panicDump drops a crashing plugin's panic or signal dump from what the
// host relays: go-plugin logs its lines one by one, untagged, at Error; the
// host reports the crash itself in one line (its cause) and a finding keeps
// the whole dump in its .stderr file.
type panicDump struct {
	mu     sync.Mutex
	inDump bool
}

func (d *panicDump) excludes(level hclog.Level, msg string, args []any) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case len(args) > 0:
		d.inDump = false // a structured message: a process speaking again
	case level == hclog.Error && tellsTheCrash(strings.TrimSpace(msg)):
		d.inDump = true
	}
	return d.inDump
}

// syncStderr is where go-plugin writes what a plugin writes to the
// os.Stderr that plugin.Serve swapped for its stdio stream (fmt.Fprintf
// to os.Stderr after the handshake, a model's own messages): the
// launch's logger at debug level, and tail, so that a plugin that dies
// after saying why keeps those lines in its PluginError and the report.
// (The runtime's panics and the hclog lines go to the real stderr, which
// tail reads directly.)
func syncStderr(logger hclog.Logger, tail *stderrTail) io.Writer {
	return io.MultiWriter(tail, logger.Named("stderr").StandardWriter(&hclog.StandardLoggerOptions{ForceLevel: hclog.Debug}))
}
