package ops_test

import (
	"slices"
	"testing"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

func TestHandlersMissing(t *testing.T) {
	h := ops.NewHandlers[string]("a test side")
	h.Add("send or receive", ops.KindMsgsnd, ops.KindMsgrcv)
	if got := h.Claims(); !slices.Equal(got, []string{"msg"}) {
		t.Fatalf("Claims = %v, want [msg]", got)
	}
	var msg, sem []ops.Kind // the kinds of msg but the two handled, and all of sem's
	for _, s := range ops.Specs() {
		switch {
		case s.Subsystem == "msg" && s.Kind != ops.KindMsgsnd && s.Kind != ops.KindMsgrcv:
			msg = append(msg, s.Kind)
		case s.Subsystem == "sem":
			sem = append(sem, s.Kind)
		}
	}
	if got := h.Missing(); !slices.Equal(got, msg) || !slices.Contains(got, ops.KindMsgctl) {
		t.Fatalf("Missing() = %v, want %v", got, msg)
	}
	if got := h.Missing("sem"); !slices.Equal(got, sem) {
		t.Fatalf("Missing(sem) = %v, want %v", got, sem)
	}
	if f, ok := h.Of(ops.KindMsgrcv); !ok || f != "send or receive" {
		t.Fatalf("Of(msgrcv) = %q, %v", f, ok)
	}
	if err := h.Unhandled(ops.KindMsgctl); err == nil || err.Error() != "a test side has no handler for msgctl operations (subsystem msg)" {
		t.Fatalf("Unhandled = %v", err)
	}
}

func TestHandlersAddTwicePanics(t *testing.T) {
	h := ops.NewHandlers[int]("a test side")
	h.Add(1, ops.KindGet)
	defer func() {
		if recover() == nil {
			t.Fatal("a second handler for get did not panic")
		}
	}()
	h.Add(2, ops.KindGet)
}
