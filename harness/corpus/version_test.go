package corpus_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ipcfuzz/ipcfuzz/harness/corpus"
)

// A test binary is built without VCS stamps: the revision says so.
func TestBuildVersion(t *testing.T) {
	version, revision := corpus.BuildVersion()
	require.NotEmpty(t, version)
	require.True(t, strings.HasPrefix(revision, "unknown (the build stamped none") || len(revision) >= 40, revision)
}
