package corpus

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// fuzzFileHeader is the first line of a go test -fuzz corpus file.
const fuzzFileHeader = "go test fuzz v1"

// ReadFuzzInput reads the []byte argument of a go test -fuzz corpus file
// (what a failing input written to testdata/fuzz/FuzzX/ holds): the bytes
// a fuzz target drew its script from.
func ReadFuzzInput(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 || strings.TrimSpace(lines[0]) != fuzzFileHeader {
		return nil, fmt.Errorf("%s: not a go test fuzz v1 file with one argument", path)
	}
	arg := strings.TrimSpace(lines[1])
	if !strings.HasPrefix(arg, "[]byte(") || !strings.HasSuffix(arg, ")") {
		return nil, fmt.Errorf("%s:2: want []byte(\"...\")", path)
	}
	s, err := strconv.Unquote(arg[len("[]byte(") : len(arg)-1])
	if err != nil {
		return nil, fmt.Errorf("%s:2: %w", path, err)
	}
	return []byte(s), nil
}
