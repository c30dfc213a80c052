package host

import (
	"context"
	"testing"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// The runner's unit of work: 64 scripts of 30 operations in one Exec.
const benchScripts, benchOps = 64, 30

func benchmarkExec(b *testing.B, impl ops.Impl) {
	ctx := context.Background()
	scripts := toyScripts(42, benchScripts, benchOps)
	if _, err := impl.Exec(ctx, ops.Config{}, scripts, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := impl.Exec(ctx, ops.Config{}, scripts, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*benchScripts*benchOps)/b.Elapsed().Seconds(), "ops/s")
	b.ReportMetric(float64(b.N*benchScripts)/b.Elapsed().Seconds(), "scripts/s")
}

func BenchmarkExecLocal(b *testing.B) { benchmarkExec(b, newToy()) }

func BenchmarkExecPlugin(b *testing.B) { benchmarkExec(b, open(b, launch(b, "toy"))) }
