package testkit

import (
	_ "embed" // kunit_counts.py
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// EnvKunitParser names the directory of the kernel's KTAP parser
// (tools/testing/kunit, with kunit_parser.py and kunit_printer.py), or the
// parser file itself, for the tests that check KTAP output with it.
const EnvKunitParser = "IPCFUZZ_KUNIT_PARSER"

// defaultKunitParser is where the kernel builds unpack Debian's
// linux-source 6.12, under the user's cache.
const defaultKunitParser = "ipcfuzz/kernel-builds/src/linux-source-6.12_6.12.118-1~deb12u1/tools/testing/kunit"

//go:embed kunit_counts.py
var kunitCounts string

// KunitResult is what the kernel's KTAP parser made of an output: the
// main test's status and counts (TestStatus and TestCounts of
// kunit_parser.py) and its tests, in order.
type KunitResult struct {
	Status  string `json:"status"`
	Passed  int    `json:"passed"`
	Failed  int    `json:"failed"`
	Crashed int    `json:"crashed"`
	Skipped int    `json:"skipped"`
	Errors  int    `json:"errors"`
	Tests   []struct {
		Name   string `json:"name"`
		Status string `json:"status"`
	} `json:"tests"`
}

// Counts are the counts of the result in the parser's order: passed,
// failed, crashed, skipped, errors.
func (k KunitResult) Counts() [5]int {
	return [5]int{k.Passed, k.Failed, k.Crashed, k.Skipped, k.Errors}
}

// KunitParser returns the directory of the kernel's kunit_parser.py
// (EnvKunitParser, else the copy in the kernel builds' cache) and skips
// the test, naming what is missing, where it or python3 is absent.
func KunitParser(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(EnvKunitParser)
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			t.Skipf("no user cache directory for the kernel's kunit_parser.py (set %s): %v", EnvKunitParser, err)
		}
		dir = filepath.Join(cache, defaultKunitParser)
	}
	if strings.HasSuffix(dir, ".py") {
		dir = filepath.Dir(dir)
	}
	for _, f := range []string{"kunit_parser.py", "kunit_printer.py"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Skipf("the kernel's KTAP parser is not here (%s names its directory; Debian's linux-source has it in tools/testing/kunit): %v", EnvKunitParser, err)
		}
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skipf("python3, which runs the kernel's kunit_parser.py, is not here: %v", err)
	}
	return dir
}

// ParseKTAP has the kernel's KTAP parser (in dir, KunitParser) read out
// and returns what it made of it.
func ParseKTAP(t testing.TB, dir, out string) KunitResult {
	t.Helper()
	cmd := exec.Command("python3", "-c", kunitCounts, dir)
	cmd.Stdin = strings.NewReader(out)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	require.NoError(t, err, "kunit_parser.py: %s", stderr.String())
	var r KunitResult
	require.NoError(t, json.Unmarshal(b, &r), "kunit_parser.py printed %q", b)
	return r
}

// RequireKTAP has the kernel's KTAP parser (in dir) read out, requires the
// status and the counts (Counts) it gives, and returns its result.
func RequireKTAP(t testing.TB, dir, out, status string, counts [5]int) KunitResult {
	t.Helper()
	k := ParseKTAP(t, dir, out)
	require.Equal(t, status, k.Status, out)
	require.Equal(t, counts, k.Counts(), "%+v\n%s", k, out)
	return k
}
