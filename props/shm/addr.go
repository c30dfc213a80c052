package shm

import (
	"slices"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// Attachments at window addresses, shmdt by address, reads and writes, and
// SHM_HUGETLB: the shadow keeps where each window attachment is, well
// enough to aim at free pages, at attachments and next to them.

// windowPage draws a page of the window, the low ones more often (where
// the attachments are).
func windowPage(src engine.Source) int64 {
	if src.Intn(3, "low page") > 0 {
		return int64(src.Intn(8, "page"))
	}
	return int64(src.Intn(ops.ShmWindowPages, "page"))
}

// winAtts lists the live window attachments of a task's current
// incarnation, its own and those a fork copied into it.
func (s *Shadow) winAtts(task int) []*attachment {
	var out []*attachment
	for _, a := range s.attOrder {
		at := s.atts[a]
		if at.live && at.win && at.task == task && at.gen == s.gen[task] {
			out = append(out, at)
		}
	}
	for _, at := range s.copies { // a fork's copies: the same pages
		if at.live && at.win && at.task == task && at.gen == s.gen[task] {
			out = append(out, at)
		}
	}
	return out
}

// attachAt is a shmat at a window page (sometimes unaligned with SHM_RND,
// sometimes SHM_REMAP over what is there, never past the window: the
// kernel side maps nothing over what is not the script's).
func (s *Shadow) attachAt(src engine.Source, h int) ops.Op {
	op := s.attach(src, h)
	if op.Flags&ops.ShmatBadAddr != 0 {
		op.Flags &^= ops.ShmatBadAddr
	}
	g := s.segs[h]
	task := int(op.Task)
	page := windowPage(src)
	if as := s.winAtts(task); len(as) > 0 && src.Intn(3, "near an attachment") == 0 {
		near := engine.Pick(src, as, "attachment")
		page = min(near.page+int64(src.Intn(int(near.pages)+1, "offset")), ops.ShmWindowPages-1)
	}
	op.Addr = ops.ShmAddr{Win: true, Page: page}
	if src.Intn(4, "rnd") == 0 {
		op.Flags |= ops.ShmatRnd
		op.Addr.Off = int64(src.Intn(ops.PageSize, "offset"))
	}
	// A keyed segment may be one the shadow lost track of (destroyed, and
	// the key's get made a larger one): its remap stays within the window
	// whatever size the pool drew.
	fits := page+g.pages <= ops.ShmWindowPages && (g.key == ops.IPCPrivate || page+maxPages <= ops.ShmWindowPages)
	remap := src.Intn(3, "remap") == 0 && fits
	if remap {
		op.Flags |= ops.ShmatRemap
	}
	// attach recorded an attachment where the kernel chooses: move it.
	at := s.atts[op.Bind]
	if at == nil {
		return op
	}
	end := page + g.pages
	// A shmat that will fail: the shadow's record of it goes, and with
	// it do_shmat's own count (a segment nobody attached may go too).
	if end > ops.ShmWindowPages && !remap {
		s.close(at)
		return op
	}
	for _, o := range s.winAtts(task) {
		if o != at && o.page < end && page < o.page+o.pages {
			if !remap {
				s.close(at) // fails: as above
				return op
			}
			s.close(o) // approximately: a piece may stay
		}
	}
	at.win, at.page, at.pages = true, page, g.pages
	return op
}

// maxPages is the size of the largest segment the generator draws.
var maxPages = ops.Pages(slices.Max(sizePool))

// attachBad is a shmat the address checks refuse: an unaligned window
// address without SHM_RND, address 1 with SHM_RND and SHM_REMAP (LTP
// shmat03), or SHM_REMAP at NULL.
func (s *Shadow) attachBad(src engine.Source, h int) ops.Op {
	s.nextAtt++
	op := ops.Op{Kind: ops.KindShmat, Type: ops.Shm, Bind: s.nextAtt, Obj: ops.Ref{Handle: h}, Task: s.task(src)}
	switch src.Intn(3, "bad address") {
	case 0:
		op.Addr = ops.ShmAddr{Win: true, Page: windowPage(src), Off: 1 + int64(src.Intn(ops.PageSize-1, "offset"))}
	case 1:
		op.Addr, op.Flags = ops.ShmAddr{Off: 1}, ops.ShmatRnd|ops.ShmatRemap
	default:
		op.Flags = ops.ShmatRemap
	}
	return op
}

// detachAt is a shmdt at a window address: where an attachment starts,
// inside one, or anywhere; sometimes unaligned.
func (s *Shadow) detachAt(src engine.Source) ops.Op {
	task := int(s.task(src))
	op := ops.Op{Kind: ops.KindShmdt, Type: ops.Shm, Task: uint8(task), Addr: ops.ShmAddr{Win: true, Page: windowPage(src)}}
	if as := s.winAtts(task); len(as) > 0 && src.Intn(4, "at an attachment") > 0 {
		at := engine.Pick(src, as, "attachment")
		op.Addr.Page = at.page
		if at.pages > 1 && src.Intn(3, "inside") == 0 {
			op.Addr.Page += 1 + int64(src.Intn(int(at.pages-1), "page"))
		} else {
			s.close(at)
		}
	}
	if src.Intn(8, "unaligned") == 0 {
		op.Addr.Off = 1 + int64(src.Intn(ops.PageSize-1, "offset"))
	}
	return op
}

// access is a read or a write of one byte: through an attachment handle
// (by its task, or by another), or at a window address.
func (s *Shadow) access(src engine.Source) ops.Op {
	op := ops.Op{Kind: ops.KindShmRead, Type: ops.Shm}
	if src.Intn(2, "write") == 0 {
		op.Kind, op.Value = ops.KindShmWrite, int64(1+src.Intn(255, "value"))
	}
	if len(s.attOrder) > 0 && src.Intn(3, "window address") > 0 {
		a := engine.Pick(src, s.attOrder, "attachment")
		op.Att, op.Task = a, uint8(s.atts[a].task)
		if src.Intn(4, "other task") == 0 {
			op.Task = s.task(src)
		}
	} else {
		op.Addr, op.Task = ops.ShmAddr{Win: true, Page: windowPage(src)}, s.task(src)
	}
	if src.Intn(3, "offset") == 0 {
		op.Addr.Off = int64(src.Intn(ops.PageSize, "offset"))
	}
	return op
}

// hugetlb is a shmget with SHM_HUGETLB: EPERM for a user, else ENOMEM
// where the machine has too few huge pages.
func (s *Shadow) hugetlb(src engine.Source) ops.Op {
	s.huge = true
	defer func() { s.huge = false }()
	return s.get(src, engine.Pick(src, append([]int32{ops.IPCPrivate}, keyPool...), "key"))
}
