package ids

import (
	"context"
	"fmt"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// CompareChain runs script on every implementation (a nil one ends the
// chain: the kernel where it cannot run), checks every final state against
// invariant (when not nil) and compares each implementation exactly with
// the next. The error names the pair and shows the script.
func CompareChain(subsystem string, script []ops.Op, invariant func(ops.Snapshot) error, impls ...ops.Impl) error {
	text := func() string { return ops.Format(ops.NewScript(subsystem, script)) }
	var outs []ops.Outcome
	var names []string
	ctx := context.Background()
	for _, impl := range impls {
		if impl == nil {
			break
		}
		info, err := impl.Info(ctx)
		if err != nil {
			return err
		}
		out, err := impl.Exec(ctx, ops.Config{}, [][]ops.Op{script})
		if err != nil {
			return fmt.Errorf("%s: %w\n%s", info.Name, err, text())
		}
		if invariant != nil {
			if err := invariant(out[0].Snapshot); err != nil {
				return fmt.Errorf("%s: invariant: %w\n%s", info.Name, err, text())
			}
		}
		outs, names = append(outs, out[0]), append(names, info.Name)
	}
	for i := 1; i < len(outs); i++ {
		if d := equiv.Compare(equiv.Exact, script, outs[i-1], outs[i]); d != nil {
			return fmt.Errorf("%s vs %s: %v\n%s", names[i-1], names[i], d, text())
		}
	}
	return nil
}
