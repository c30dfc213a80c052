//go:build linux && amd64

package task

import (
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The evidence is the state and the syscall number, whatever the kernel's
// functions are called (vm-probe.md §5: ksys_msgrcv, do_msgrcv.constprop.0).
func TestSleepsInCall(t *testing.T) {
	const stat = "4242 (ipcfuzz-task) S 1 4242 4242 0 -1"
	for _, c := range []struct {
		stat, syscall string
		want          bool
	}{
		{stat, "69 0x3 0x7ffd 0x10 0x0 0x0 0x0 0x7ffc 0x7f12\n", true},  // msgsnd
		{stat, "70 0x3 0x7ffd 0x10 0x0 0x0 0x0 0x7ffc 0x7f12\n", true},  // msgrcv
		{stat, "65 0x3 0x7ffd 0x1 0x0 0x0 0x0 0x7ffc 0x7f12\n", true},   // semop
		{stat, "220 0x3 0x7ffd 0x1 0x0 0x0 0x0 0x7ffc 0x7f12\n", true},  // semtimedop
		{stat, "0 0x3 0x7ffd 0x1 0x0 0x0 0x0 0x7ffc 0x7f12\n", false},   // read
		{stat, "230 0x0 0x0 0x7ffd 0x0 0x0 0x0 0x7ffc 0x7f12\n", false}, // clock_nanosleep
		{stat, "running\n", false},
		{stat, "-1 0x7ffc 0x7f12\n", false}, // asleep outside any syscall
		{stat, "", false},
		{"4242 (a) b) S) R 1 4242", "70 0x3\n", false}, // the state follows the last ')'
		{"4242 (ipcfuzz-task) D 1", "70 0x3\n", false},
		{"4242 (ipcfuzz-task) R 1", "70 0x3\n", false},
		{"garbage", "70 0x3\n", false},
	} {
		require.Equal(t, c.want, SleepsInCall([]byte(c.stat), []byte(c.syscall)), "%q %q", c.stat, c.syscall)
	}
}

// On this kernel: a thread asleep in read(2) is in state S inside syscall
// 0, which is not an IPC call; the same files read live say so.
func TestSleepsInCallLive(t *testing.T) {
	var p [2]int
	require.NoError(t, unix.Pipe2(p[:], unix.O_CLOEXEC))
	defer unix.Close(p[1])
	tids := make(chan int, 1)
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread() // the thread dies with the goroutine: nothing else runs on it
		tids <- unix.Gettid()
		var b [1]byte
		_, _ = unix.Read(p[0], b[:])
		unix.Close(p[0])
		close(done)
	}()
	base := "/proc/self/task/" + strconv.Itoa(<-tids) + "/"
	for {
		stat, err := os.ReadFile(base + "stat")
		require.NoError(t, err)
		sc, err := os.ReadFile(base + "syscall")
		if err != nil {
			t.Skipf("/proc/PID/syscall unreadable here: %v", err)
		}
		if sleeping(stat) && len(sc) > 0 && sc[0] == '0' {
			require.False(t, SleepsInCall(stat, sc))
			break
		}
		time.Sleep(time.Millisecond) // until the thread is in read: evidence, not a delay
	}
	_, err := unix.Write(p[1], []byte{1})
	require.NoError(t, err)
	<-done
}
