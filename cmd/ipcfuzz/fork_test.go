package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A host killed with SIGKILL in the middle of a replay whose tasks fork
// (the forked ones holding an attachment) leaves no process behind: the
// plugins, the task processes and the forked ones (children of the
// plugin's worker thread by CLONE_PARENT, with its parent-death signal)
// all go, and with them the private namespace and every attachment; the
// host's IPC namespace is as it was.
func TestKillHostWithForkedTasks(t *testing.T) {
	t.Parallel()
	needKernel(t)
	dir := t.TempDir()
	script := "subsystem shm\nh1 = get shm key=0x7 creat mode=0600 size=4096\na1 = shmat shm h1 task=t1\n" +
		"fork_task task=t1 child=t2\nfork_task task=t2 child=t3\nshmctl shm h1 stat\n"
	args := []string{"replay", "--impls", "naive,kernel"}
	for i := range 2000 {
		f := filepath.Join(dir, fmt.Sprintf("s%04d.ops", i))
		require.NoError(t, os.WriteFile(f, []byte(script), 0o644))
		args = append(args, f)
	}
	before := hostIPC(t)
	cmd := exec.Command(bin, args...)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	host := cmd.Process.Pid
	var below map[int]string
	require.Eventually(t, func() bool {
		below = descendants(host, map[int]string{})
		return len(forkedOf(below)) > 0
	}, time.Minute, 20*time.Millisecond, "no forked task under the host: %s", &out)
	require.NoError(t, syscall.Kill(host, syscall.SIGKILL))
	_ = cmd.Wait()
	require.Eventually(t, func() bool {
		for pid := range below {
			if stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat")); err == nil && !bytes.Contains(stat, []byte(") Z")) {
				return false
			}
		}
		return true
	}, 30*time.Second, 50*time.Millisecond, "processes of the killed host are still alive: %v", below)
	require.Equal(t, before, hostIPC(t), "the host's IPC namespace changed")
}

// forkedOf lists the forked task processes (named ipcfuzz-forked) among
// procs.
func forkedOf(procs map[int]string) []int {
	var out []int
	for pid := range procs {
		if comm, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "comm")); err == nil && strings.TrimSpace(string(comm)) == "ipcfuzz-forked" {
			out = append(out, pid)
		}
	}
	return out
}
