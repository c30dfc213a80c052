package ops

import (
	"fmt"
	"strconv"
	"strings"
)

// Addresses of the shm subsystem: every task owns a window of
// ShmWindowPages pages (the same scheme as the vma subsystem's window: an
// address is a page of the window, w:P, and results say where an
// attachment landed relative to it, so they compare across sides). Nothing
// but the task's own attachments is ever mapped in its window, and the page
// on each side of it is mapped PROT_NONE, so an attachment that would reach
// past the window overlaps a mapping.

// ShmWindowPages is the size of each task's shm window.
const ShmWindowPages = 32

// More operations of the shm subsystem.
const (
	// KindShmRead reads one byte at an address of the task (Op.Addr): its
	// result is the byte (val=N), or "fault" when the task took SIGSEGV.
	KindShmRead Kind = 20 + iota
	// KindShmWrite writes the byte Op.Value at an address of the task:
	// "ok", or "fault" when the task took SIGSEGV (nothing mapped there, or
	// a mapping without write permission: a SHM_RDONLY attachment).
	KindShmWrite
)

// More flags of shmat (Op.Flags).
const (
	ShmatRnd   = 1 << (iota + 3) // SHM_RND: round the address down to SHMLBA
	ShmatRemap                   // SHM_REMAP: replace what is mapped there
)

// ShmLBA is SHMLBA on x86-64: the page size.
const ShmLBA = PageSize

// ShmAddr is an address of the shm operations: the address of the
// attachment handle Op.Att (in the task that names it), a window address
// (Win: page Page of the task's window), or a small absolute address
// (neither), each plus Off bytes. The zero value with Op.Att 0 is NULL.
type ShmAddr struct {
	Win  bool
	Page int64
	Off  int64
}

// An attachment handle names the address its shmat got in the task that
// holds it. A handle whose attachment is at a window address names that
// window address in every task, attached or not; one at an address the
// kernel chose names it while attached in that task, and page 1 (where
// nothing is ever mapped) otherwise.

// ShmAddrNotAttached is the address a handle names where it names nothing.
const ShmAddrNotAttached = BadAddress

// shmAddrField is the address argument: aN[+0xOFF], w:P[+0xOFF] or 0xN.
type shmAddrField struct{ handles bool }

func (f shmAddrField) format(o *Op) string {
	a := o.Addr
	var base string
	switch {
	case o.Att > 0:
		base = fmt.Sprintf("a%d", o.Att)
	case a.Win:
		base = fmt.Sprintf("w:%d", a.Page)
	default:
		return fmt.Sprintf("0x%x", a.Off)
	}
	if a.Off != 0 {
		base += fmt.Sprintf("+0x%x", a.Off)
	}
	return base
}

func (f shmAddrField) parse(o *Op, text string) error {
	base, off, hasOff := strings.Cut(text, "+")
	var a ShmAddr
	if hasOff {
		v, err := strconv.ParseInt(strings.TrimPrefix(off, "0x"), 16, 64)
		if err != nil || !strings.HasPrefix(off, "0x") || v < 0 || v >= PageSize {
			return fmt.Errorf("address offset %q: want 0x0..0x%x", clip(off), PageSize-1)
		}
		a.Off = v
	}
	switch {
	case strings.HasPrefix(base, "w:"):
		p, err := strconv.ParseInt(base[2:], 10, 64)
		if err != nil || p < 0 || p >= ShmWindowPages {
			return fmt.Errorf("window page %q: want w:0..w:%d", clip(base), ShmWindowPages-1)
		}
		a.Win, a.Page = true, p
	case strings.HasPrefix(base, "a") && f.handles:
		n, err := parseHandleOf(ClassAttachment, base)
		if err != nil {
			return err
		}
		o.Att = n
	case strings.HasPrefix(base, "0x") && !hasOff:
		v, err := strconv.ParseInt(base[2:], 16, 64)
		if err != nil || v < 0 || v >= ShmLBA {
			return fmt.Errorf("address %q: an absolute address is below 0x%x", clip(base), ShmLBA)
		}
		a.Off = v
	default:
		return fmt.Errorf("address %q: want %s", clip(text), f.syntax())
	}
	o.Addr = a
	return nil
}

func (f shmAddrField) zero(o *Op) bool { return o.Att == 0 && o.Addr == ShmAddr{} }

func (f shmAddrField) syntax() string {
	if f.handles {
		return "aN[+0xOFF]|w:P[+0xOFF]|0xN"
	}
	return "w:P[+0xOFF]|0xN"
}

// plainer turns shmat's address into NULL (the plain shmat), then moves
// a window address toward w:0 and drops an offset; a handle stays (handles
// are the renumbering's).
func (f shmAddrField) plainer(o *Op) []func(*Op) {
	var out []func(*Op)
	a := o.Addr
	if !f.handles && a != (ShmAddr{}) {
		out = append(out, func(o *Op) { o.Addr = ShmAddr{} })
	}
	if a.Off != 0 {
		out = append(out, func(o *Op) { o.Addr.Off = 0 })
	}
	if a.Win && a.Page != 0 {
		out = append(out, func(o *Op) { o.Addr.Page = 0 }, func(o *Op) { o.Addr.Page = a.Page / 2 })
	}
	return out
}

func (f shmAddrField) handlePtr(o *Op) *int { return &o.Att }

// ShmResult is what the shm address operations return: where a shmat
// landed (At: 1 + the window page; 0 where the kernel chose), and what a
// read or a write did.
type ShmResult struct {
	At    int64
	Fault bool  // the task took SIGSEGV
	Val   uint8 // the byte a read got
}

// shmatResult is "ok" for an attachment where the kernel chose, "at=w:P"
// for one in the window.
type shmatResult struct{}

func (shmatResult) format(_ *Op, r *Result) string {
	if r.Shm.At == 0 {
		return "ok"
	}
	return fmt.Sprintf("at=w:%d", r.Shm.At-1)
}

func (shmatResult) parse(_ *Op, r *Result, text string) error {
	if text == "ok" {
		return nil
	}
	p, ok := strings.CutPrefix(text, "at=w:")
	v, err := strconv.ParseInt(p, 10, 64)
	if !ok || err != nil || v < 0 || v >= ShmWindowPages {
		return fmt.Errorf("result %q: want ok or at=w:0..w:%d", clip(text), ShmWindowPages-1)
	}
	r.Shm.At = v + 1
	return nil
}

// shmAccessResult is "fault", or "ok" (a write) or "val=N" (a read).
type shmAccessResult struct{ read bool }

func (f shmAccessResult) format(_ *Op, r *Result) string {
	switch {
	case r.Shm.Fault:
		return "fault"
	case f.read || r.Shm.Val != 0:
		return fmt.Sprintf("val=%d", r.Shm.Val)
	}
	return "ok"
}

func (f shmAccessResult) parse(_ *Op, r *Result, text string) error {
	switch {
	case text == "fault":
		r.Shm.Fault = true
		return nil
	case text == "ok" && !f.read:
		return nil
	}
	v, ok := strings.CutPrefix(text, "val=")
	n, err := strconv.ParseUint(v, 10, 8)
	if !f.read || !ok || err != nil {
		want := "ok or fault"
		if f.read {
			want = "val=0..255 or fault"
		}
		return fmt.Errorf("result %q: want %s", clip(text), want)
	}
	r.Shm.Val = uint8(n)
	return nil
}

// shmatArgAddr is shmat's at=: a window address or a small absolute one.
var shmatArgAddr = named("at", shmAddrField{}).Optional()

// shmAddrArg is the address of shmdt, read and write.
var shmAddrArg = Arg{field: shmAddrField{handles: true}, handle: ClassAttachment}

// checkShmat refuses an absolute address with SHM_RND and without
// SHM_REMAP: rounded down to NULL, it would map the segment at page 0 (as
// root); with SHM_REMAP it is EINVAL, without SHM_RND unaligned (EINVAL).
func checkShmat(op Op) error {
	if op.Addr != (ShmAddr{}) && !op.Addr.Win && op.Flags&ShmatRnd != 0 && op.Flags&ShmatRemap == 0 {
		return fmt.Errorf("shmat at=0x%x rnd without remap would map page 0", op.Addr.Off)
	}
	return nil
}

func init() {
	shm := []IPCType{Shm}
	register(SubsystemSpec{Name: "shm"},
		KindSpec{Kind: KindShmRead, Name: "read", Doc: "read one byte at an address of the task: val=N, or fault (SIGSEGV)", Subsystem: "shm", Types: shm, Task: true,
			Args: []Arg{shmAddrArg}, Result: shmAccessResult{read: true}},
		KindSpec{Kind: KindShmWrite, Name: "write", Doc: "write the byte val=N at an address of the task: ok, or fault (SIGSEGV: nothing there, or read-only)", Subsystem: "shm", Types: shm, Task: true,
			Args: []Arg{shmAddrArg, named("val", dec(func(o *Op) *int64 { return &o.Value }, 0, 255, 0))}, Result: shmAccessResult{}},
	)
}
