package vma

import "github.com/ipcfuzz/ipcfuzz/harness/ops"

// Builders of operations: each sets only the fields its kind's text
// carries, so that every drawn operation survives a text round trip.

func args(r int, start, pages int64) ops.VMAArgs {
	a := ops.VMAArgs{Start: start, Pages: pages}
	a.SetRegion(regionOf(r))
	return a
}

func mapOp(r int, start, pages int64, like page, populate bool) ops.Op {
	a := args(r, start, pages)
	a.Prot, a.Flags, a.File = like.prot, like.flags&lasting, like.file
	if populate {
		a.Flags |= ops.MapPopulate
	}
	if like.file != 0 {
		a.Offset = like.off
	}
	return ops.Op{Kind: ops.KindMap, VMA: a}
}

func rangeOp(k ops.Kind, r int, start, pages int64) ops.Op {
	return ops.Op{Kind: k, VMA: args(r, start, pages)}
}

func protectOp(r int, start, pages int64, prot ops.VMAProt) ops.Op {
	op := rangeOp(ops.KindProtect, r, start, pages)
	op.VMA.Prot = prot
	return op
}

func touchOp(r int, p int64, write bool) ops.Op {
	op := rangeOp(ops.KindTouch, r, p, 0)
	op.VMA.Write = write
	return op
}

func adviseOp(r int, start, pages int64, adv ops.VMAAdvice) ops.Op {
	op := rangeOp(ops.KindAdvise, r, start, pages)
	op.VMA.Advice = adv
	return op
}

func lockOp(r int, start, pages int64, onFault bool) ops.Op {
	op := rangeOp(ops.KindLock, r, start, pages)
	op.VMA.OnFault = onFault
	return op
}

// remapOp resizes [start, start+pages) in place to newPages.
func remapOp(r int, start, pages, newPages int64) ops.Op {
	op := rangeOp(ops.KindRemap, r, start, pages)
	op.VMA.NewPages = newPages
	return op
}

// remapToOp moves [start, start+pages) to target with newPages pages
// (MREMAP_MAYMOVE|MREMAP_FIXED).
func remapToOp(r int, start, pages, newPages, target int64) ops.Op {
	op := remapOp(r, start, pages, newPages)
	op.VMA.Fixed, op.VMA.Target = true, target
	return op
}

func brkOp(b int64) ops.Op { return ops.Op{Kind: ops.KindBrk, VMA: ops.VMAArgs{Break: b}} }

func openOp(h int, readOnly bool) ops.Op {
	return ops.Op{Kind: ops.KindOpen, Bind: h, VFile: ops.VFileArgs{ReadOnly: readOnly}}
}

func reopenOp(h, of int, readOnly bool) ops.Op {
	return ops.Op{Kind: ops.KindReopen, Bind: h, VFile: ops.VFileArgs{Of: of, ReadOnly: readOnly}}
}

func dupOp(h, of int) ops.Op {
	return ops.Op{Kind: ops.KindDup, Bind: h, VFile: ops.VFileArgs{Of: of}}
}
