//go:build linux && amd64

package vma

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// EnableCover asks the helper to collect the kernel's program counters of
// its syscalls (KCOV), and reports whether it does: false on a kernel
// without KCOV. A helper that already collects says yes again; a new one
// (after a restart, or a fork's child) starts collecting itself.
func (h *Helper) EnableCover() (bool, error) {
	r, err := h.call(request{op: opCover, a: [4]int64{1}})
	switch {
	case err != nil:
		return false, err
	case r.err == int32(unix.ENOENT):
		return false, nil
	case r.err != 0:
		return false, fmt.Errorf("vma helper %d: enabling KCOV: %w", h.Pid(), unix.Errno(r.err))
	}
	return true, nil
}

// CoverPCs returns the program counters the helper's syscalls reached
// since the last CoverPCs (or EnableCover), in the order the kernel
// reported them; nil when it does not collect.
func (h *Helper) CoverPCs() ([]uint64, error) {
	r, err := h.call(request{op: opCover})
	if err != nil {
		return nil, err
	}
	if len(r.payload)%8 != 0 {
		return nil, fmt.Errorf("vma helper %d: %d bytes of program counters", h.Pid(), len(r.payload))
	}
	pcs := make([]uint64, len(r.payload)/8)
	for i := range pcs {
		pcs[i] = binary.LittleEndian.Uint64(r.payload[8*i:])
	}
	return pcs, nil
}
