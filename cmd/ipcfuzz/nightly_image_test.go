package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/ci/shards"
)

// A shard on a built kernel (kernel:image=$IPCFUZZ_IMAGE_STOCK) where the
// variable names no image is skipped, saying why: exit 0, status clean,
// skipped, no checks, a skipped test in junit.xml. A variable naming a
// file that is not there is the same.
func TestNightlyImageShardSkippedWithoutImage(t *testing.T) {
	t.Parallel()
	long(t) // end to end, seconds each: the long pass runs it (issue 31: the suite that fits)
	needNightlyTools(t)
	id := shardNamed(t, "ids-kernel-image")
	for _, env := range [][]string{
		{shards.EnvImageStock + "="},
		{shards.EnvImageStock + "=" + filepath.Join(t.TempDir(), "no-such-vmlinux")},
	} {
		dir, s := runShard(t, env, id, "2s", "clean")
		require.Equal(t, true, s["skipped"])
		require.EqualValues(t, 0, s["checks"])
		require.Contains(t, s["reason"], "skipped: no kernel image: $"+shards.EnvImageStock)
		junit := shardJUnit(t, dir)
		require.Contains(t, junit, "skipped")
	}
}
