package ops_test

import (
	"testing"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

func TestResultClass(t *testing.T) {
	for _, c := range []struct {
		r    ops.Result
		want string
	}{
		{ops.Result{}, "ok"},
		{ops.Result{Blocked: true}, "blocked"},
		{ops.Result{Err: ops.EINVAL}, "EINVAL"},
	} {
		if got := c.r.Class(); got != c.want {
			t.Errorf("%+v: Class() = %q, want %q", c.r, got, c.want)
		}
	}
}
