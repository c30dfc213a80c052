//go:build linux && amd64

package cbuild

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

// hello is a freestanding program that uses the runtime and a header of
// its own.
var hello = fstest.MapFS{
	"hello.c": {Data: []byte(`#include "freestanding.h"
#include "hello.h"

void cmain(void)
{
	char buf[8];
	memset(buf, 0, sizeof buf);
	memcpy(buf, GREETING, slen(GREETING));
	if (!mem_eq(buf, GREETING, slen(GREETING)) || write_all(1, buf, slen(buf)) < 0)
		die(1);
	die(HELLO_EXIT);
}

__asm__(".text\n.globl _start\n_start:\n\tand $-16, %rsp\n\tcall cmain\n\thlt\n");
`)},
	"hello.h": {Data: []byte("#define GREETING \"hello\"\nenum { HELLO_EXIT = 3 };\n")},
}

func build(t *testing.T, opt Options) string {
	t.Helper()
	path, err := Build(context.Background(), hello, "hello", opt)
	if errors.Is(err, ErrNoCompiler) {
		t.Skipf("needs a C compiler: %v", err)
	}
	require.NoError(t, err)
	return path
}

// A program builds with the runtime and its own headers, runs, and is
// built once: a second Build finds it in the cache.
func TestBuildAndCache(t *testing.T) {
	dir := t.TempDir()
	path := build(t, Options{CacheDir: dir})
	require.Equal(t, dir, filepath.Dir(path))
	require.True(t, strings.HasPrefix(filepath.Base(path), "hello-"))
	out, err := exec.Command(path).Output()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 3, exit.ExitCode())
	require.Equal(t, "hello", string(out))

	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, path, build(t, Options{CacheDir: dir}))
	fi2, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, fi.ModTime(), fi2.ModTime(), "not built again")
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, ents, 1, "nothing but the executable is left behind")
}

// A warning is an error, and the error is one line.
func TestWarningsFail(t *testing.T) {
	bad := fstest.MapFS{"bad.c": {Data: []byte("#include \"freestanding.h\"\nvoid cmain(void) { int unused; }\n")}}
	_, err := Build(context.Background(), bad, "bad", Options{CacheDir: t.TempDir()})
	if errors.Is(err, ErrNoCompiler) {
		t.Skipf("needs a C compiler: %v", err)
	}
	require.ErrorContains(t, err, "compiling bad with")
	require.ErrorContains(t, err, "unused")
	require.NotContains(t, err.Error(), "\n")
}

// Without a C compiler Build fails in one line wrapping ErrNoCompiler.
func TestNoCompiler(t *testing.T) {
	t.Setenv("PATH", "")
	t.Setenv("CC", "")
	_, err := Build(context.Background(), hello, "hello", Options{CacheDir: t.TempDir()})
	require.ErrorIs(t, err, ErrNoCompiler)
	require.NotContains(t, err.Error(), "\n")
}

// The cache holds programs that are run, by root too: a cache directory or
// a cached program that another user could have written is refused, and
// without a home the cache is this user's own directory in the temp dir.
func TestCacheThatOthersCouldWriteIsRefused(t *testing.T) {
	dir := t.TempDir()
	path := build(t, Options{CacheDir: dir})

	require.NoError(t, os.Chmod(path, 0o777))
	_, err := Build(context.Background(), hello, "hello", Options{CacheDir: dir})
	require.ErrorContains(t, err, "others may write")
	require.NoError(t, os.Chmod(path, 0o755))

	require.NoError(t, os.Chmod(dir, 0o777))
	_, err = Build(context.Background(), hello, "hello", Options{CacheDir: dir})
	require.ErrorContains(t, err, "others may write")
	require.NoError(t, os.Chmod(dir, 0o700))

	if os.Getuid() == 0 {
		require.NoError(t, os.Chown(path, 1000, 1000))
		_, err = Build(context.Background(), hello, "hello", Options{CacheDir: dir})
		require.ErrorContains(t, err, "belongs to uid 1000")
		require.NoError(t, os.Chown(path, 0, 0))
	}

	t.Setenv("HOME", "")
	t.Setenv("XDG_CACHE_HOME", "")
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	path = build(t, Options{})
	own := filepath.Join(tmp, fmt.Sprintf("ipcfuzz-cache-%d", os.Getuid()))
	require.Equal(t, own, filepath.Dir(path))
	fi, err := os.Stat(own)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
}
