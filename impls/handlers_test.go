package impls_test

import (
	"runtime"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls"
)

// Every kind of the vocabulary is run by exactly one part of every
// built-in, and that part has a handler for it (its table of kinds,
// ops.Handlers): a kind added to the vocabulary without its handlers, or a
// subsystem no part claims, fails here the day it is added.
func TestEveryKindHasAHandlerInEveryBuiltin(t *testing.T) {
	for _, name := range impls.Names() {
		if name == "kernel" && (runtime.GOOS != "linux" || runtime.GOARCH != "amd64") {
			continue // the adapter runs nothing here
		}
		b, err := impls.Lookup(name)
		require.NoError(t, err)
		for _, s := range ops.Specs() {
			var claims []impls.PartSpec
			for _, p := range b.Parts {
				if slices.Contains(p.Subsystems, s.Subsystem) {
					claims = append(claims, p)
				}
			}
			if len(claims) != 1 {
				t.Errorf("%s: %d parts run the %s subsystem (of kind %s), want 1", name, len(claims), s.Subsystem, s.Name)
				continue
			}
			if h := claims[0].Handles; h == nil || !h(s.Kind) {
				t.Errorf("%s: the part that runs the %s subsystem has no handler for %s", name, s.Subsystem, s.Name)
			}
		}
	}
}
