package host

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// Each plugin process gets a private directory for its Unix socket, in the
// temporary directory, named ipcfuzz-plugin-<host pid>-<n> (short: the
// plugin's socket, pluginNNNNNNNNNN, goes in it, and a socket's path has at
// most 107 bytes; no longer than the ipcfuzz-plugin-<random> it was).
//
// The host removes it when it stops the plugin; a host killed with SIGKILL
// cannot, so the first launch of every host removes the directories of
// hosts that are gone: their pid is not alive, and no process holds the
// lock (flock) the owning host took on the directory for as long as it
// uses it (so a reused pid or a host in another pid namespace sharing the
// directory is never mistaken for a dead one).
const sockDirPrefix = "ipcfuzz-plugin-"

var sweepStale sync.Once

// makeSockDir makes a socket directory for one plugin process of this host
// and returns it with the open descriptor that holds its lock, after
// removing the directories of dead hosts (once per process).
func makeSockDir() (string, *os.File, error) {
	sweepStale.Do(func() { removeStaleSockDirs(os.TempDir()) })
	path, err := mkSockDir()
	if err != nil {
		return "", nil, err
	}
	lock, err := os.Open(path) // close-on-exec: the plugin does not inherit it
	if err == nil {
		if err = syscall.Flock(int(lock.Fd()), syscall.LOCK_SH); err != nil {
			lock.Close()
		}
	}
	if err != nil {
		os.RemoveAll(path)
		return "", nil, err
	}
	return path, lock, nil
}

var sockDirSeq atomic.Uint64

// mkSockDir makes the next ipcfuzz-plugin-<pid>-<n> directory that does
// not exist yet (one of a dead host with the same pid may), or, after many
// that do, one with a random suffix.
func mkSockDir() (string, error) {
	prefix := filepath.Join(os.TempDir(), fmt.Sprintf("%s%d-", sockDirPrefix, os.Getpid()))
	for range 100 {
		path := prefix + strconv.FormatUint(sockDirSeq.Add(1), 10)
		err := os.Mkdir(path, 0o700)
		if err == nil {
			return path, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return os.MkdirTemp("", filepath.Base(prefix))
}

// removeSockDir deletes a directory of makeSockDir and releases its lock.
func removeSockDir(path string, lock *os.File) {
	_ = os.RemoveAll(path)
	if lock != nil {
		_ = lock.Close()
	}
}

// removeStaleSockDirs removes the socket directories under dir whose host
// is gone. Directories it cannot judge (another naming, another user's
// that it may not remove) are left alone.
func removeStaleSockDirs(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		pidText, _, ok := strings.Cut(strings.TrimPrefix(e.Name(), sockDirPrefix), "-")
		if !e.IsDir() || !strings.HasPrefix(e.Name(), sockDirPrefix) || !ok {
			continue
		}
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || pid == os.Getpid() || alive(pid) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			_ = os.RemoveAll(path)
		}
		f.Close()
	}
}

// alive reports whether a process with this pid exists (a zombie counts:
// its directory goes at a later sweep).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
