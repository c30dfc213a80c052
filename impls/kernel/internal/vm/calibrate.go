//go:build linux && amd64

package vm

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// TCGMinSlowdown is the least slowdown a guest under TCG claims, whatever
// its calibration says. The calibration's ratio is a snapshot of two
// loaded moments: with two jobs, the host's half runs while the other
// guest boots, and on this 2-core machine it said 1.0x for a 6.1 guest
// whose seq-wrapping ids script (1.44 million creations and removals)
// took 20 s against the host kernel's 4 s, and 4.4x on another run. A
// timeout scaled by 1.0 then cuts a lone script at three times its idle
// time.
const TCGMinSlowdown = 4.0

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
