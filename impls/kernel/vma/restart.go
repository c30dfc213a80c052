//go:build linux && amd64

package vma

import (
	"context"
	"errors"
	"fmt"
)

// Restarting is a helper that is replaced by a new one when a reset leaves
// a sealed VMA behind (ErrSealed): mseal is for the life of the process,
// so the next script gets a new process, whose start checks the window and
// probes the quirks again. Everything else is the current helper's.
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

// Reset implements ops.AddressSpace: a reset that leaves something sealed
// closes the helper and starts another, which must report the same rules.
func (r *Restarting) Reset() error {
	err := r.Helper.Reset()
	if !errors.Is(err, ErrSealed) {
		return err
	}
	old := r.Helper
	_ = old.Close()
	h, err := Start(r.ctx, r.opt)
	if err != nil {
		return fmt.Errorf("vma helper: a new helper after a sealed script: %w", err)
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
