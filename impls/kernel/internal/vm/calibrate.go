//go:build linux && amd64

package vm

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// calibrate times a fixed piece of work of the kinds the kernel side does
// (syscalls, Go code, page faults), the best of three: the guest runs it
// too, and the ratio of the two is the guest's slowdown, by which its
// timeouts are multiplied.
func calibrate() time.Duration {
	best := time.Duration(1<<63 - 1)
	for range 3 {
		begin := time.Now()
		for range 5000 {
			unix.Getppid()
		}
		x := uint64(1)
		for i := range 300000 {
			x = x*6364136223846793005 + uint64(i)
		}
		runtime.KeepAlive(x)
		if b, err := unix.Mmap(-1, 0, 2<<20, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS); err == nil {
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			_ = unix.Munmap(b)
		}
		best = min(best, time.Since(begin))
	}
	return best
}
