// Package cli decides what a command line means and how a command ends:
// the flags of each command from a declarative table, the refusal of
// values that would mean nothing (one line, exit 2), the help text of a
// command, and the exit status and message of the error a command
// returns.
package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
)

// Exit statuses.
const (
	ExitFound = 1 // a divergence or a failing plugin was found
	ExitUsage = 2 // a bad command line, a bad input file or a setup failure
	// ExitInfra: nothing was found, but a side failed in a way no script
	// showed again (killed from outside: the OOM killer, kill -9).
	ExitInfra       = 3
	ExitInterrupted = 130 // stopped by SIGINT or SIGTERM before the end, nothing found so far
)

// UsageError is a bad command line.
type UsageError struct{ Msg string }

func (e UsageError) Error() string { return e.Msg }

// Usagef is a UsageError of the formatted message.
func Usagef(format string, a ...any) error { return UsageError{fmt.Sprintf(format, a...)} }

// InputError is a bad input file: one line naming the file and line.
type InputError struct{ Err error }

func (e InputError) Error() string { return e.Err.Error() }

// FoundError means the command ran and found something: exit 1.
type FoundError struct{ Msg string }

func (e FoundError) Error() string { return e.Msg }

// Foundf is a FoundError of the formatted message.
func Foundf(format string, a ...any) error { return FoundError{fmt.Sprintf(format, a...)} }

// InfrastructureError means the command ran, found nothing, and saw an
// infrastructure event: exit 3.
type InfrastructureError struct{ Msg string }

func (e InfrastructureError) Error() string { return e.Msg }

// InterruptedError means the command was stopped before its end.
type InterruptedError struct{ Msg string }

func (e InterruptedError) Error() string { return e.Msg }

// Interruptedf is an InterruptedError of the formatted message.
func Interruptedf(format string, a ...any) error {
	return InterruptedError{fmt.Sprintf(format, a...)}
}

// HelpError is a request for a command's help (-h, --help): its text goes
// to stdout and the exit status is 0.
type HelpError struct{ Text string }

func (e HelpError) Error() string { return e.Text }

// Exit prints what err says to stdout or stderr and returns the exit
// status it means: 0 for nil or a help request, 1 found, 3 an
// infrastructure event, 130 interrupted, and 2 for a usage error (which
// points at the help) or any other error (its first line).
func Exit(err error, stdout, stderr io.Writer) int {
	var ue UsageError
	var he HelpError
	var fe FoundError
	var ie InterruptedError
	var xe InfrastructureError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &he):
		fmt.Fprint(stdout, he.Text)
		return 0
	case errors.As(err, &fe):
		fmt.Fprintf(stderr, "ipcfuzz: %v\n", err)
		return ExitFound
	case errors.As(err, &xe):
		fmt.Fprintf(stderr, "ipcfuzz: %v\n", err)
		return ExitInfra
	case errors.As(err, &ie):
		fmt.Fprintf(stderr, "ipcfuzz: %v\n", err)
		return ExitInterrupted
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "ipcfuzz: %v (see 'ipcfuzz help')\n", err)
		return ExitUsage
	default:
		fmt.Fprintf(stderr, "ipcfuzz: %s\n", firstLine(err.Error()))
		return ExitUsage
	}
}

// firstLine keeps an error to one line.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
