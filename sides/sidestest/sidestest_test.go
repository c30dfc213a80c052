package sidestest

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/props/engine"
)

// recorder is a test that records a fatal failure or a skip instead of
// ending the real one.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Skip(args ...any) {
	r.skip = fmt.Sprint(args...)
	runtime.Goexit()
}

func fromEnv(t *testing.T, sub engine.Subsystem) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		FromEnv(r, sub)
	}()
	<-done
	return r
}

// An implementation named in IPCFUZZ_IMPLS that does not run the
// subsystem fails the fuzz target, saying why: a skip would read as "ok".
func TestNamedImplementationMustRunTheSubsystem(t *testing.T) {
	t.Setenv(EnvImpls, "naive,optimized")
	r := fromEnv(t, engine.Subsystem{Name: "nosuch"})
	require.Empty(t, r.skip)
	require.Equal(t, `IPCFUZZ_IMPLS="naive,optimized": naive does not run the nosuch subsystem`, r.fatal)
}

// A built-in served as a plugin runs from an ipcfuzz built once for the
// tests that use it at the same time, in a temporary directory removed
// when the last of them ends.
func TestPluginBinaryGoesWithItsTests(t *testing.T) {
	ids := engine.Subsystem{Name: "ids"}
	var path string
	t.Run("users", func(t *testing.T) {
		a := Open(t, "plugin:naive", ids)
		path = built.path
		require.FileExists(t, path)
		t.Run("another", func(t *testing.T) {
			b := Open(t, "plugin:naive:alloc=legacy", ids)
			require.Equal(t, map[string]string{"alloc": "legacy"}, b.Config.Options)
			require.Equal(t, path, built.path, "built twice")
			_, err := b.Impl.Info(context.Background())
			require.NoError(t, err)
		})
		require.FileExists(t, path, "removed while a test still uses it")
		_, err := a.Impl.Info(context.Background())
		require.NoError(t, err)
	})
	require.NoFileExists(t, path)
	require.NoDirExists(t, filepath.Dir(path))
}
