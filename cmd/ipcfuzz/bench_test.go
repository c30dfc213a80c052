package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/impls"
	"github.com/ipcfuzz/ipcfuzz/plugins/host"
	"github.com/ipcfuzz/ipcfuzz/props"
	"github.com/ipcfuzz/ipcfuzz/props/ids"
)

// side opens a built-in implementation in this process or as a plugin
// process of the ipcfuzz binary built by TestMain.
func side(b *testing.B, name string, plugin bool) runner.Side {
	b.Helper()
	if plugin {
		p, err := host.Open(context.Background(), host.Launch{Name: name, Path: bin, Args: []string{"plugin", "serve", name}, CallTimeout: time.Minute})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { p.Close() })
		return runner.Side{Name: name, Impl: p}
	}
	bi, err := impls.Lookup(name)
	if err != nil {
		b.Fatal(err)
	}
	m, err := bi.New()
	if err != nil {
		b.Skipf("%s: %v", name, err)
	}
	l := ops.NewLocal(bi.Info, m)
	b.Cleanup(func() { l.Close() })
	return runner.Side{Name: name, Impl: l}
}

// benchCompare measures the whole compare pipeline (generation, both sides,
// comparison) in ops/s: one iteration is 512 scripts in batches of 256, the CLI default.
func benchCompare(b *testing.B, a, bb string, plugin bool) {
	sa, sb := side(b, a, plugin), side(b, bb, plugin)
	gen := ids.Subsystem.RapidScripts(equiv.Exact)
	const checks = 512
	ops := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := runner.Run(context.Background(), runner.Options{
			A: sa, B: sb, Subsystem: "ids", Relation: equiv.Exact, Generate: gen,
			Seed: uint64(i * checks), Checks: checks, Batch: 256,
		})
		if err != nil || res.Divergences > 0 || res.Failures > 0 {
			b.Fatalf("run %d: %v %+v", i, err, res)
		}
		ops += res.Ops
	}
	b.ReportMetric(float64(ops)/b.Elapsed().Seconds(), "ops/s")
}

func BenchmarkCompareNaiveOptimizedInProcess(b *testing.B) {
	benchCompare(b, "naive", "optimized", false)
}

func BenchmarkCompareNaiveOptimizedPlugins(b *testing.B) {
	benchCompare(b, "naive", "optimized", true)
}

func BenchmarkCompareOptimizedKernelPlugins(b *testing.B) {
	benchCompare(b, "optimized", "kernel", true)
}

// BenchmarkGenerate is the share of generation in the figures above, for
// each engine: rapid's and gopter's sources of ids scripts.
func BenchmarkGenerate(b *testing.B) {
	for _, engine := range []string{"rapid", "gopter"} {
		b.Run(engine, func(b *testing.B) {
			gen, _ := ids.Subsystem.Scripts(engine, equiv.Exact)
			ops := 0
			for i := 0; i < b.N; i++ {
				ops += len(gen(uint64(i)))
			}
			b.ReportMetric(float64(ops)/b.Elapsed().Seconds(), "ops/s")
		})
	}
}

// BenchmarkCompareKernel is compare optimized kernel through plugins, as
// the CLI runs it, for each subsystem with tasks, with one job and with
// two (a pair of plugins each, the scripts split between them): ops/s of
// the whole pipeline over 1000 scripts an iteration. Run it as
//
//	go test ./cmd/ipcfuzz -run '^$' -bench CompareKernel -benchtime 1x -count 3
//
// and take the medians. No subsystem may diverge.
func BenchmarkCompareKernel(b *testing.B) {
	for _, sub := range []string{"shm", "msg", "sem"} {
		for _, jobs := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/jobs=%d", sub, jobs), func(b *testing.B) {
				s, err := props.Lookup(sub)
				if err != nil {
					b.Fatal(err)
				}
				var pairs []runner.Pair
				for range jobs {
					a := side(b, "optimized", true)
					// As compare does: where woken tasks race, the model
					// follows the kernel's way.
					a.Follows = s.Races()
					pairs = append(pairs, runner.Pair{A: a, B: side(b, "kernel", true)})
				}
				gen := s.RapidScripts(equiv.Exact)
				const checks = 1000
				ops := 0
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					res, err := runner.Run(context.Background(), runner.Options{
						A: pairs[0].A, B: pairs[0].B, More: pairs[1:], Subsystem: sub, Relation: equiv.Exact, Generate: gen,
						Seed: uint64(1 + i*checks), Checks: checks, Batch: 256,
					})
					if err != nil || res.Failures > 0 || res.Divergences > 0 {
						b.Fatalf("run %d: %v %+v", i, err, res)
					}
					ops += res.Ops
				}
				b.ReportMetric(float64(ops)/b.Elapsed().Seconds(), "ops/s")
			})
		}
	}
}
