package host

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

// A plugin runs in a process group of its own so that stopping it also stops
// whatever it spawned (a kernel adapter may run tasks as child processes).
// Without that, a descendant that inherited the plugin's stdout or stderr
// keeps go-plugin waiting on those pipes forever, and outlives the host.

// inOwnGroup makes cmd start in a new process group and makes cancelling its
// context kill the whole group.
func inOwnGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		return killGroup(cmd.Process.Pid)
	}
}

// killGroup SIGKILLs every process of the group led by pid.
func killGroup(pid int) error {
	if pid <= 0 { // kill(0) and kill(-1) would hit the host itself
		return nil
	}
	err := syscall.Kill(-pid, syscall.SIGKILL)
	if err == syscall.ESRCH {
		return os.ErrProcessDone
	}
	return err
}

// isZombie reports whether pid has exited but is not reaped yet: go-plugin
// reaps a plugin only once its stdout and stderr are closed, so a zombie
// leader means a descendant still holds them.
func isZombie(pid int) bool {
	if pid <= 0 {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// "pid (comm) S ...": comm may contain anything, the state follows the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}
