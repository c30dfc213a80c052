package main

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/ipcfuzz/ipcfuzz/harness/equiv"
	"github.com/ipcfuzz/ipcfuzz/harness/runner"
	"github.com/ipcfuzz/ipcfuzz/props"
	"github.com/ipcfuzz/ipcfuzz/props/ids"
	"github.com/ipcfuzz/ipcfuzz/sides"
)

// pair opens two built-in implementations in this process or as plugin
// processes of the ipcfuzz binary built by TestMain, as compare does.
func pair(b *testing.B, a, bb, sub string, plugin bool) *runner.Pair {
	b.Helper()
	p, closeAll, err := sides.OpenPair(context.Background(), a, bb, sub, equiv.Exact,
		sides.Options{Self: bin, InProcess: !plugin, CallTimeout: time.Minute})
	if err != nil {
		b.Fatalf("%s vs %s: %v", a, bb, err)
	}
	b.Cleanup(closeAll)
	return p
}

// benchCompare measures the whole compare pipeline (generation, both sides,
// comparison) in ops/s: one iteration is 512 scripts in batches of 256, the CLI default.
func benchCompare(b *testing.B, a, bb string, plugin bool) {
	benchRuns(b, pair(b, a, bb, "ids", plugin), ids.Subsystem.RapidScripts(equiv.Exact), 512, 0)
}

// benchRuns runs p on gen's scripts, checks of them an iteration in
// batches of 256 (iteration i from seed first+i*checks), requires that no
// run diverges or fails, and reports the operations compared a second.
func benchRuns(b *testing.B, p *runner.Pair, gen runner.Seeded, checks int, first uint64) {
	b.Helper()
	ops := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := runner.Run(context.Background(), runner.Options{
			Pairs: []*runner.Pair{p}, Source: gen,
			Seed: first + uint64(i*checks), Checks: checks, Batch: 256,
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
				// As compare does: where woken tasks race, the model
				// follows the kernel's way (NewPair decides it).
				var pairs []*runner.Pair
				for range jobs {
					pairs = append(pairs, pair(b, "optimized", "kernel", sub, true))
				}
				gen := s.RapidScripts(equiv.Exact)
				const checks = 1000
				ops := 0
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					res, err := runner.Run(context.Background(), runner.Options{
						Pairs: pairs, Source: runner.Seeded(gen),
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

// envTestImage names the kernel image the kernel:image= benchmark and
// README commands boot (.ci/run fetches Debian's 6.1 and sets it).
const envTestImage = "IPCFUZZ_TEST_IMAGE"

// BenchmarkKernelImage is the kernel side in a guest booted from
// $IPCFUZZ_TEST_IMAGE (Debian's 6.1 under .ci/run): "launch" is QEMU's
// start to the plugin's first answer, one iteration a boot; "ops" is
// compare optimized against the host's kernel and against the guest's, in
// the same run, for each subsystem (200 scripts an iteration). Run it as
//
//	go test ./cmd/ipcfuzz -run '^$' -bench KernelImage -benchtime 3x
//
// (launch: the mean of 3; the note's median comes from -count 3).
func BenchmarkKernelImage(b *testing.B) {
	img := os.Getenv(envTestImage)
	if img == "" {
		b.Skipf("%s names no kernel image", envTestImage)
	}
	spec := "kernel:image=" + img
	b.Run("launch", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			s, err := sides.Open(context.Background(), spec, sides.Options{Self: bin, CallTimeout: time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			_ = s.Impl.Close()
			b.StartTimer()
		}
		b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/launch")
	})
	for _, sub := range []string{"ids", "shm", "msg", "sem"} {
		for _, side := range []string{"kernel", spec} {
			name := "host"
			if side != "kernel" {
				name = "image"
			}
			b.Run(fmt.Sprintf("ops/%s/%s", sub, name), func(b *testing.B) {
				s, err := props.Lookup(sub)
				if err != nil {
					b.Fatal(err)
				}
				benchRuns(b, pair(b, "optimized", side, sub, true), s.RapidScripts(equiv.Exact), 200, 1)
			})
		}
	}
}
