//go:build linux && amd64

package task

import (
	"flag"
	"testing"

	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/cbuild"
)

var update = flag.Bool("update", false, "rewrite csrc/task_proto.h from the Go tables")

// protoHeader is csrc/task_proto.h as the Go tables of protocol.go give it.
func protoHeader() []byte {
	h := cbuild.NewHeader("task_proto.h", "impls/kernel/internal/task/protocol.go", "go generate (TestProtoHeader)")
	h.Enum("The task protocol: file descriptors, request kinds and flags, the fatal answer, limits.",
		cbuild.Const{Name: "TASK_REQ_FD", Value: ReqFD},
		cbuild.Const{Name: "TASK_RESP_FD", Value: RespFD},
		cbuild.Const{Name: "TASK_CALL", Value: int64(KindCall)},
		cbuild.Const{Name: "TASK_JOIN", Value: int64(KindJoin)},
		cbuild.Const{Name: "TASK_TOUCH", Value: int64(KindTouch)},
		cbuild.Const{Name: "TASK_TOUCH_FAULT", Value: int64(TouchFault)},
		cbuild.Const{Name: "TASK_FORK", Value: int64(KindFork)},
		cbuild.Const{Name: "TASK_FORK_DONE", Value: int64(KindForkDone)},
		cbuild.Const{Name: "TASK_INTERRUPTIBLE", Value: int64(Interruptible)},
		cbuild.Const{Name: "TASK_COVER", Value: int64(FlagCover)},
		cbuild.Const{Name: "TASK_COVER_WORDS", Value: CoverWords},
		cbuild.Const{Name: "TASK_TIME", Value: int64(FlagTime)},
		cbuild.Const{Name: "TASK_FATAL", Value: Fatal},
		cbuild.Const{Name: "TASK_INTERRUPT_SIGNAL", Value: int64(InterruptSignal)},
		cbuild.Const{Name: "TASK_MAX_PAYLOAD", Value: MaxPayload},
	)
	h.Layout("struct req: field, offset.", "TASK_REQ", Req{})
	h.Layout("struct resp: field, offset.", "TASK_RESP", Resp{})
	var nrs []int64
	for _, nr := range Syscalls {
		nrs = append(nrs, int64(nr))
	}
	h.List("The only syscalls a task runs.", "TASK_SYSCALLS", nrs...)
	h.String("The environment variable that names the worker's namespace.", "TASK_ENV", EnvNamespace)
	return h.Bytes()
}

// The C server's constants come from csrc/task_proto.h, which must be what
// the Go tables give: a number changed on one side only fails here.
func TestProtoHeader(t *testing.T) {
	if err := cbuild.CheckHeader("csrc/task_proto.h", protoHeader(), *update); err != nil {
		t.Fatal(err)
	}
}
