package host

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
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
}

const (
	tailLines   = 8
	maxLineText = 300
)

func (s *stderrTail) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
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
	if s.panic == "" && (strings.HasPrefix(l, "panic: ") || strings.HasPrefix(l, "fatal error: ")) {
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

// crashLine is the line that best explains a crash: the panic, else the last
// line.
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
