package sides_test

import (
	"testing"

	"github.com/ipcfuzz/ipcfuzz/internal/testkit"
)

// bin is the ipcfuzz binary the tests' guests run as their agent.
var bin string

func TestMain(m *testing.M) { testkit.Main(m, "../cmd/ipcfuzz", func(b string) { bin = b }) }
