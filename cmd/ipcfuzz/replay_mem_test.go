package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ipcfuzz/ipcfuzz/internal/testkit"
)

// BenchmarkReplayPeakRSS replays a generated 400k-operation script (200k
// pairs of get of a private queue and rmid of it) with the ipcfuzz binary,
// for naive,optimized and optimized,kernel (as root), and reports the peak
// RSS (VmHWM, polled from /proc every few milliseconds) of the host and of
// each plugin process, in MB, beside the time of a replay:
//
//	go test ./cmd/ipcfuzz -run '^$' -bench ReplayPeakRSS -benchtime 1x
func BenchmarkReplayPeakRSS(b *testing.B) {
	path := filepath.Join(b.TempDir(), "big400k.ops")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "subsystem ids")
	for i := 1; i <= 200_000; i++ {
		fmt.Fprintf(w, "h%d = get msg key=0x0 mode=0600\nrmid msg h%d\n", i, i)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	for _, impls := range []string{"naive,optimized", "optimized,kernel"} {
		b.Run(impls, func(b *testing.B) {
			if strings.Contains(impls, "kernel") && os.Geteuid() != 0 {
				b.Skip("the kernel side runs as root")
			}
			peaks := map[string]int64{}
			for range b.N {
				for name, kb := range replayPeaks(b, path, impls) {
					peaks[name] = max(peaks[name], kb)
				}
			}
			for name, kb := range peaks {
				b.ReportMetric(float64(kb)/1024, name+"-peak-MB")
			}
		})
	}
}

// replayPeaks runs one replay and returns the peak RSS, in kB, of the host
// ("host") and of each plugin it started (by the implementation it serves).
func replayPeaks(b *testing.B, path, impls string) map[string]int64 {
	cmd := exec.Command(bin, "replay", path, "--impls", impls)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	peaks := map[string]int64{}
	names := map[int]string{cmd.Process.Pid: "host"}
	poll := func() {
		for pid, name := range descendants(cmd.Process.Pid, names) {
			if kb := vmHWM(pid); kb > peaks[name] {
				peaks[name] = kb
			}
		}
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if err != nil {
				b.Fatalf("replay --impls %s: %v\n%s", impls, err, out.String())
			}
			if !strings.Contains(out.String(), "1 scripts agree") {
				b.Fatalf("replay --impls %s:\n%s", impls, out.String())
			}
			return peaks
		case <-tick.C:
			poll()
		}
	}
}

// descendants adds the processes below root to names (a plugin by the
// implementation it serves, another process by its command) and returns
// those alive.
func descendants(root int, names map[int]string) map[int]string {
	parent := map[int]int{}
	procs, _ := testkit.Procs()
	for _, p := range procs {
		parent[p.PID] = p.PPID
	}
	alive := map[int]string{}
	below := func(pid int) bool {
		for p := pid; p > 1; p = parent[p] {
			if p == root {
				return true
			}
		}
		return false
	}
	for pid := range parent {
		if !below(pid) {
			continue
		}
		if _, ok := names[pid]; !ok {
			args := strings.Split(strings.TrimRight(testkit.Cmdline(pid), "\x00"), "\x00")
			switch {
			case len(args) >= 4 && args[1] == "plugin" && args[2] == "serve":
				names[pid] = args[3]
			default:
				names[pid] = filepath.Base(args[0])
			}
		}
		alive[pid] = names[pid]
	}
	return alive
}

// vmHWM is the peak RSS of a process in kB (0 when it is gone).
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb
		}
	}
	return 0
}
