//go:build linux && amd64

package repro

import (
	"fmt"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/madv"
)

// The vma subsystem: the syscall on the pages an operation names, its
// errno or ok; the runtime's helpers for what is more than one call.

func init() {
	steps.Add(vmaCall(mmapCall), ops.KindMap)
	steps.Add(vmaCall(func(a ops.VMAArgs, addr, length string) (string, error) {
		return fmt.Sprintf("long r = munmap((void *)%s, %s);", addr, length), nil
	}), ops.KindUnmap)
	steps.Add(vmaCall(func(a ops.VMAArgs, addr, length string) (string, error) {
		return fmt.Sprintf("long r = mprotect((void *)%s, %s, %d);", addr, length, a.Prot), nil
	}), ops.KindProtect)
	steps.Add(text(func(_ *gen, op ops.Op) string {
		return fmt.Sprintf("\ttouch(out, %s, %d);\n", vmaAddr(op.VMA.Region(), op.VMA.Start), b2i(op.VMA.Write))
	}), ops.KindTouch)
	steps.Add(vmaCall(func(a ops.VMAArgs, addr, length string) (string, error) {
		n, ok := madv.Number(a.Advice)
		if !ok {
			return "", fmt.Errorf("advice %s has no MADV_ number", a.Advice)
		}
		return fmt.Sprintf("long r = syscall(SYS_madvise, %s, %s, %d);", addr, length, n), nil
	}), ops.KindAdvise)
	steps.Add(vmaCall(func(a ops.VMAArgs, addr, length string) (string, error) {
		if a.OnFault {
			return fmt.Sprintf("long r = syscall(SYS_mlock2, %s, %s, 1);", addr, length), nil // MLOCK_ONFAULT
		}
		return fmt.Sprintf("long r = syscall(SYS_mlock, %s, %s);", addr, length), nil
	}), ops.KindLock)
	steps.Add(vmaCall(func(a ops.VMAArgs, addr, length string) (string, error) {
		return fmt.Sprintf("long r = syscall(SYS_munlock, %s, %s);", addr, length), nil
	}), ops.KindUnlock)
	steps.Add(vmaCall(func(a ops.VMAArgs, addr, length string) (string, error) {
		return fmt.Sprintf("long r = syscall(462 /* SYS_mseal */, %s, %s, 0);", addr, length), nil
	}), ops.KindSeal)
	steps.Add(writer{body: remapStep}, ops.KindRemap)
	steps.Add(text(func(_ *gen, op ops.Op) string {
		// A break the kernel refuses leaves the old one: ENOMEM.
		return fmt.Sprintf("\tunsigned long want = start_brk + %dL * PAGE + %dL;\n\tput(out, \"%%s\", (unsigned long)syscall(SYS_brk, want) == want ? \"ok\" : \"ENOMEM\");\n", op.VMA.Break, op.VMA.BreakBytes)
	}), ops.KindBrk)
	steps.Add(fixed("\tlayout(out);\n"), ops.KindLayout)
	steps.Add(fixed("\tvma_fork(out);\n"), ops.KindFork)
	steps.Add(text(func(_ *gen, op ops.Op) string {
		return fmt.Sprintf("\tvma_memlock(out, %d);\n", op.VMA.Limit)
	}), ops.KindMemlock)
	steps.Add(text(func(_ *gen, op ops.Op) string {
		return fmt.Sprintf("\tfile_open(out, %d, -1, 0, %d);\n", op.Bind, b2i(op.VFile.ReadOnly))
	}), ops.KindOpen)
	steps.Add(text(func(_ *gen, op ops.Op) string {
		return fmt.Sprintf("\tfile_open(out, %d, %d, 0, %d);\n", op.Bind, op.VFile.Of, b2i(op.VFile.ReadOnly))
	}), ops.KindReopen)
	steps.Add(text(func(_ *gen, op ops.Op) string {
		return fmt.Sprintf("\tfile_open(out, %d, %d, 1, 0);\n", op.Bind, op.VFile.Of)
	}), ops.KindDup)
}

// vmaAddr is the C expression of page p of op's region.
func vmaAddr(r ops.VMARegion, p int64) string {
	switch r {
	case ops.RegionHeap:
		return fmt.Sprintf("(start_brk + %dUL * PAGE)", p)
	case ops.RegionTHP:
		return fmt.Sprintf("(thp_base + %dUL * PAGE)", p)
	}
	return fmt.Sprintf("(window_base + %dUL * PAGE)", p)
}

// vmaCall is the writer of one syscall on the pages op names: call is
// the C statement that sets r from the address and length expressions;
// the step puts its errno or ok.
func vmaCall(call func(a ops.VMAArgs, addr, length string) (string, error)) writer {
	return writer{body: func(_ *gen, op ops.Op) (string, error) {
		a := op.VMA
		c, err := call(a, vmaAddr(a.Region(), a.Start), fmt.Sprintf("%dUL * PAGE", a.Pages))
		if err != nil {
			return "", err
		}
		return "\t" + c + "\n\tput_result(out, r, errno);\n", nil
	}}
}

// mmapCall is the mmap of a map operation: fixed, private or shared, of
// the anonymous memory or the file it names.
func mmapCall(a ops.VMAArgs, addr, length string) (string, error) {
	flags := "MAP_FIXED | MAP_PRIVATE"
	if a.Flags&ops.MapShared != 0 {
		flags = "MAP_FIXED | MAP_SHARED"
	}
	for _, f := range []struct {
		bit  ops.VMAMapFlags
		name string
	}{{ops.MapNoReserve, "MAP_NORESERVE"}, {ops.MapPopulate, "MAP_POPULATE"}, {ops.MapLocked, "MAP_LOCKED"}, {ops.MapStack, "MAP_STACK"}} {
		if a.Flags&f.bit != 0 {
			flags += " | " + f.name
		}
	}
	fd := "-1"
	if a.File == 0 {
		flags += " | MAP_ANONYMOUS"
	} else {
		fd = fmt.Sprintf("file_fd[%d]", a.File)
	}
	return fmt.Sprintf("long r = (long)mmap((void *)%s, %s, %d, %s, %s, %dL * PAGE);\n\tif (r == (long)MAP_FAILED)\n\t\tr = -1;", addr, length, a.Prot, flags, fd, a.Offset), nil
}

// remapStep is an mremap: in place, or fixed to a target (MREMAP_MAYMOVE
// | MREMAP_FIXED), or where the kernel chooses (the runtime's
// remap_maymove, which puts where it went), each perhaps with
// MREMAP_DONTUNMAP.
func remapStep(g *gen, op ops.Op) (string, error) {
	a := op.VMA
	dontUnmap := ""
	if a.DontUnmap {
		dontUnmap = " | MREMAP_DONTUNMAP"
	}
	if a.MayMove {
		flags := "0"
		if a.DontUnmap {
			flags = "MREMAP_DONTUNMAP"
		}
		return fmt.Sprintf("\tremap_maymove(out, %s, %d, %d, %s);\n", vmaAddr(a.Region(), a.Start), a.Pages, a.NewPages, flags), nil
	}
	return vmaCall(func(a ops.VMAArgs, addr, length string) (string, error) {
		if a.Fixed {
			return fmt.Sprintf("long r = syscall(SYS_mremap, %s, %s, %dUL * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED%s, %s);", addr, length, a.NewPages, dontUnmap, vmaAddr(a.Region(), a.Target)), nil
		}
		if a.DontUnmap {
			return fmt.Sprintf("long r = syscall(SYS_mremap, %s, %s, %dUL * PAGE, MREMAP_DONTUNMAP, 0UL);", addr, length, a.NewPages), nil
		}
		return fmt.Sprintf("long r = syscall(SYS_mremap, %s, %s, %dUL * PAGE, 0);", addr, length, a.NewPages), nil
	}).body(g, op)
}
