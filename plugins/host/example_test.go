package host_test

import (
	"context"
	"fmt"
	"os"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/plugins/host"
)

// A plugin is a process whose main is one line,
//
//	func main() { plugins.Serve(ops.NewLocal(info, model)) }
//
// (here this test binary is that process: its TestMain serves a toy model
// when IPCFUZZ_TEST_PLUGIN is set). The host starts it, checks the
// handshake and the packed layout, and holds it behind ops.Impl: the same
// interface an in-process model has.
func ExampleOpen() {
	ctx := context.Background()
	self, _ := os.Executable()
	p, err := host.Open(ctx, host.Launch{Name: "toy", Path: self, Env: []string{"IPCFUZZ_TEST_PLUGIN=toy"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close()
	info, _ := p.Info(ctx)
	script := []ops.Op{{Kind: ops.KindGet, Type: ops.Msg, Mode: 0o600, Bind: 1}, {Kind: ops.KindGet, Type: ops.Msg, Mode: 0o600}}
	outs, err := p.Exec(ctx, ops.Config{Options: map[string]string{"start": "5"}}, [][]ops.Op{script}, nil)
	fmt.Println(info.Name, info.Subsystems, err)
	for _, r := range outs[0].Results {
		fmt.Println(r.ID)
	}
	// Output:
	// toy [ids] <nil>
	// 5
	// 6
}
