//go:build linux && amd64

package task

import (
	"runtime/debug"
	"unsafe"
)

// Touch reads the byte at addr, or writes v there, in this process; fault
// says the access took SIGSEGV (nothing mapped there, or a write to a
// mapping without write permission), which the runtime turns into a panic
// of this goroutine (debug.SetPanicOnFault) and Touch recovers. The
// address is one the caller knows to be its own: an shm window or an
// attachment it made, or page 1 or NULL, where nothing is mapped.
func Touch(addr uintptr, write bool, v uint8) (got uint8, fault bool) {
	old := debug.SetPanicOnFault(true)
	defer debug.SetPanicOnFault(old)
	defer func() {
		if recover() != nil {
			got, fault = 0, true
		}
	}()
	p := (*uint8)(unsafe.Add(unsafe.Pointer(nil), addr)) // an address of the shm window, not Go memory
	if write {
		*p = v
		return 0, false
	}
	return *p, false
}
