//go:build linux && amd64

package vma

import (
	"context"
	"errors"
	"fmt"
)

// Restarting is a helper that is replaced by a new one when its reset
// cannot undo what the last script left: a sealed VMA (ErrSealed: mseal is
// for the life of the process), a range the kernel refuses to unmap, a
// helper that died (a kernel that does something unexpected must never
// break the side). The next script gets a new process, whose start checks
// the window and probes the quirks again. Everything else is the current
// helper's.
type Restarting struct {
	*Helper
	ctx      context.Context
	opt      Options
	restarts int
}

// StartRestarting starts a helper that Reset replaces when it must.
func StartRestarting(ctx context.Context, opt Options) (*Restarting, error) {
	h, err := Start(ctx, opt)
	if err != nil {
		return nil, err
	}
	return &Restarting{Helper: h, ctx: ctx, opt: opt}, nil
}

// Reset implements ops.AddressSpace: a reset that fails (something sealed
// stays, the kernel refuses to undo, the helper is gone) closes the helper
// and starts another, which must report the same rules.
func (r *Restarting) Reset() error {
	why := r.Helper.Reset()
	if why == nil {
		return nil
	}
	old := r.Helper
	_ = old.Close()
	h, err := Start(r.ctx, r.opt)
	if err != nil {
		if errors.Is(why, ErrSealed) {
			return fmt.Errorf("vma helper: a new helper after a sealed script: %w", err)
		}
		return fmt.Errorf("vma helper: a new helper after a reset that failed (%v): %w", why, err)
	}
	if h.Quirks() != old.Quirks() {
		_ = h.Close()
		return fmt.Errorf("vma helper: the new helper reports quirks %s, the old one %s", h.Quirks(), old.Quirks())
	}
	r.Helper = h
	r.restarts++
	return nil
}

// Restarts counts the helpers replaced so far.
func (r *Restarting) Restarts() int { return r.restarts }
