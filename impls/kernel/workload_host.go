//go:build linux && amd64

package kernel

import (
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The sleeper workloads start a thread or a process per sleeper; they
// refuse, in one line, a size the host has no room for.

// threadMargin is how many threads are kept free for the runtime and
// everything else when a workload starts sleeping threads.
const threadMargin = 64

// threadRoom returns how many more threads this process may start, and
// which limit says so: the least of Go's own thread limit (SetMaxThreads,
// 10000 by default: past it the runtime dies of "thread exhaustion"),
// kernel.threads-max and kernel.pid_max against every thread of the
// machine, the pids.max of this process's cgroup, and RLIMIT_NPROC where
// it applies (not to root, which the kernel exempts); less a margin.
func threadRoom() (int64, string) {
	room, why := int64(1<<62), ""
	take := func(n int64, what string) {
		if n < room {
			room, why = n, what
		}
	}
	own := selfThreads()
	goMax := int64(debug.SetMaxThreads(1 << 30))
	debug.SetMaxThreads(int(goMax))
	take(goMax-own, fmt.Sprintf("Go's thread limit %d, %d in use", goMax, own))
	if all, err := machineThreads(); err == nil {
		if v, err := readProcInt("/proc/sys/kernel/threads-max"); err == nil {
			take(v-all, fmt.Sprintf("kernel.threads-max %d, %d threads on the machine", v, all))
		}
		if v, err := readProcInt("/proc/sys/kernel/pid_max"); err == nil {
			take(v-all, fmt.Sprintf("kernel.pid_max %d, %d threads on the machine", v, all))
		}
	}
	if max, cur, path, ok := cgroupPids(); ok {
		take(max-cur, fmt.Sprintf("%s %d, %d in use", path, max, cur))
	}
	if unix.Geteuid() != 0 {
		var r unix.Rlimit
		if unix.Getrlimit(unix.RLIMIT_NPROC, &r) == nil && r.Cur != unix.RLIM_INFINITY {
			take(int64(r.Cur)-own, fmt.Sprintf("RLIMIT_NPROC %d", r.Cur))
		}
	}
	return max(room-threadMargin, 0), why
}

// checkSleepers refuses, in one line, a workload that would start n
// sleeping threads where the host allows fewer.
func checkSleepers(n int) error {
	room, why := threadRoom()
	if int64(n) > room {
		return fmt.Errorf("%d sleeping threads needed; this host allows %d more (%s, less %d kept free)", n, room, why, threadMargin)
	}
	return nil
}

// selfThreads is the number of threads of this process.
func selfThreads() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// machineThreads is the number of threads on the machine (the total of
// /proc/loadavg's running/total field).
func machineThreads() (int64, error) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) < 4 {
		return 0, fmt.Errorf("/proc/loadavg: %q", b)
	}
	_, total, ok := strings.Cut(f[3], "/")
	if !ok {
		return 0, fmt.Errorf("/proc/loadavg: %q", b)
	}
	return strconv.ParseInt(total, 10, 64)
}

// cgroupPids reads pids.max and pids.current of this process's cgroup (v1
// pids controller or v2); ok is false when there is no such limit.
func cgroupPids() (max, cur int64, path string, ok bool) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, 0, "", false
	}
	var dirs []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 {
			continue
		}
		switch {
		case f[1] == "pids":
			dirs = append(dirs, "/sys/fs/cgroup/pids"+f[2])
		case f[0] == "0" && f[1] == "":
			dirs = append(dirs, "/sys/fs/cgroup"+f[2], "/sys/fs/cgroup/unified"+f[2])
		}
	}
	for _, d := range dirs {
		m, err := os.ReadFile(d + "/pids.max")
		if err != nil || strings.TrimSpace(string(m)) == "max" {
			continue
		}
		max, err1 := strconv.ParseInt(strings.TrimSpace(string(m)), 10, 64)
		cur, err2 := readProcInt(d + "/pids.current")
		if err1 == nil && err2 == nil {
			return max, cur, d + "/pids.max", true
		}
	}
	return 0, 0, "", false
}
