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
	if got := h.Missing(); !slices.Equal(got, []ops.Kind{ops.KindMsgctl}) {
		t.Fatalf("Missing() = %v, want [msgctl]", got)
	}
	if got := h.Missing("sem"); len(got) != 3 {
		t.Fatalf("Missing(sem) = %v, want the 3 sem kinds", got)
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
