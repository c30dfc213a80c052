//go:build linux && amd64

package worker

import (
	"fmt"

	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/creds"
)

// AsUser runs f on the thread, which must be the calling one, with its
// effective uid and gid set to uid and no supplementary groups, then
// switches back; ran says whether f ran. A thread that cannot switch back
// is discarded: the error says so, Discarded returns it, and the thread
// ends after the call.
func (t *Thread) AsUser(uid uint32, f func()) (ran bool, err error) {
	if err := creds.BecomeUser(t.self, uid); err != nil {
		if rerr := creds.Restore(t.self); rerr != nil {
			t.discarded = fmt.Errorf("%v; then could not restore the worker thread, discarded it: %w", err, rerr)
			return false, t.discarded
		}
		return false, fmt.Errorf("switching to uid %d: %w", uid, err)
	}
	f()
	if rerr := creds.Restore(t.self); rerr != nil {
		t.discarded = fmt.Errorf("could not restore the worker thread, discarded it: %w", rerr)
		return true, t.discarded
	}
	return true, nil
}
