//go:build linux && amd64

package vma

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The protocol between the adapter and vmahelper. Both pipes carry
// little-endian fixed-size records; the helper reads requests on its fd
// requestFD and answers each on its fd responseFD, in order. The C side
// takes every number here from csrc/vma_proto.h, which proto_test.go
// writes from these tables (go generate).
//
// A request is 56 bytes:
//
//	op u32, region u32 (0: the window, 1: the heap area),
//	start i64, pages i64 (pages of the region), a [4]i64
//
// A response is 32 bytes, then n bytes of payload:
//
//	err i32 (0: success; > 0: the syscall's errno; < 0: the helper refused
//	the request, see refusals), n u32, val i64, ns i64, clocks i64
//
// A request whose op has the bit opTimed set asks for the helper's CPU
// time on it (ns: its thread's CPU clock read after the request was read
// and before the response is written, less what two reads alone take;
// the helper is a small C program, so that is its system calls and page
// faults) and the clock reads that took (clocks, each a system call); 0
// and 0 for a request without it.
//
// Before the first request the helper sends one response whose payload is
// its hello line: "vmahelper 1 start_brk=<hex> quirks=<hex> release=<uname -r>".
//
//	op        arguments                                          val / payload
//	map       a: prot, ops.VMAMapFlags, handle (0: anon), offset  -
//	unmap     -                                                   -
//	protect   a: prot                                             -
//	touch     pages 1; a: write (1) or read (0)                   -
//	advise    a: MADV_* number                                    -
//	lock      a: MLOCK_ONFAULT (1) or not                         -
//	unlock    -                                                   -
//	remap     a: new pages, fixed (1), maymove (2) or in place,   maymove: the window page it is at
//	          target page
//	brk       a: the break in pages above start_brk, bytes more   - (ENOMEM if it did not move)
//	open      a: handle, -, read-only                             inode
//	reopen    a: handle, of, read-only                            inode
//	dup       a: handle, of                                       inode
//	state     -                                                   the break; smaps lines of the VMAs
//	                                                              meeting the window, the heap area or
//	                                                              the THP area
//	                                                              (header, ProtectionKey, VmFlags)
//	reset     -                                                   - (EPERM: something sealed stays;
//	                                                              the helper must be replaced)
//	measure   a: n, repetitions, rounds (brk-expand)              repetitions × i64 ns
//	seal      -                                                   - (mseal; ENOSYS without it)
//	fork      -                                                   the child's pid
//	cover     a: 1 enable KCOV (ENOENT: the kernel has none), or   0: the program counters (u64 each)
//	          0 read the program counters of the requests since   collected since the last read,
//	          the last read (and empty the buffer)                 val: how many
//
// A fork is clone(CLONE_PARENT): the child is the adapter's own child; it
// answers the fork and serves every later request, and the parent exits
// without answering.
//
// The helper exits when its request pipe is closed.
const (
	opMap uint32 = iota + 1
	opUnmap
	opProtect
	opTouch
	opAdvise
	opLock
	opUnlock
	opRemap
	opBrk
	opOpen
	opReopen
	opDup
	opState
	opReset
	opMeasure
	opSeal
	opFork
	opCover
	opMemlock
)

// opNames names the operations in C (OP_<name>).
var opNames = [...]string{
	opMap: "MAP", opUnmap: "UNMAP", opProtect: "PROTECT", opTouch: "TOUCH", opAdvise: "ADVISE",
	opLock: "LOCK", opUnlock: "UNLOCK", opRemap: "REMAP", opBrk: "BRK", opOpen: "OPEN",
	opReopen: "REOPEN", opDup: "DUP", opState: "STATE", opReset: "RESET", opMeasure: "MEASURE",
	opSeal: "SEAL", opFork: "FORK", opCover: "COVER", opMemlock: "MEMLOCK",
}

// The helper's file descriptors: requests in, responses out.
const (
	requestFD  = 3
	responseFD = 4
)

// The regions a request's range lies in.
const (
	regionWindow uint32 = iota // the window
	regionHeap                 // the heap area
	regionTHP                  // the THP area
)

// The bits of a remap request's a[1]: how mremap moves the range.
const (
	remapFixed     = 1 // MREMAP_MAYMOVE|MREMAP_FIXED to the target a[2]
	remapMayMove   = 2 // MREMAP_MAYMOVE, where the kernel picks
	remapDontUnmap = 4 // MREMAP_DONTUNMAP as well
)

const (
	requestSize  = 56
	responseSize = 32
)

// opTimed, set in a request's op, asks for the helper's CPU time on it.
const opTimed uint32 = 1 << 30

type request struct {
	op, region   uint32
	start, pages int64
	a            [4]int64
}

func (r *request) encode(b *[requestSize]byte) {
	le := binary.LittleEndian
	le.PutUint32(b[0:], r.op)
	le.PutUint32(b[4:], r.region)
	le.PutUint64(b[8:], uint64(r.start))
	le.PutUint64(b[16:], uint64(r.pages))
	for i, v := range r.a {
		le.PutUint64(b[24+8*i:], uint64(v))
	}
}

type response struct {
	err        int32
	n          uint32
	val        int64
	ns, clocks int64
	payload    []byte
}

func decodeResponse(b *[responseSize]byte) response {
	le := binary.LittleEndian
	return response{err: int32(le.Uint32(b[0:])), n: le.Uint32(b[4:]), val: int64(le.Uint64(b[8:])),
		ns: int64(le.Uint64(b[16:])), clocks: int64(le.Uint64(b[24:]))}
}

// The helper's refusals: a negative err, and what it means.
var refusals = []struct {
	code int32
	name string // in C
	err  error
}{
	{-1, "BAD_REQUEST", errors.New("the helper refused the request: bad request")},
	{-2, "BAD_RANGE", errors.New("the helper refused the request: range outside the window, the heap area and the THP area")},
	{-3, "BAD_HANDLE", errors.New("the helper refused the request: bad file handle")},
	{-4, "HELPER_FAILED", errors.New("the helper failed to carry the request out")},
}

// refusal turns a negative err into an error.
func refusal(err int32) error {
	for _, r := range refusals {
		if r.code == err {
			return r.err
		}
	}
	return fmt.Errorf("the helper refused the request: code %d", err)
}
