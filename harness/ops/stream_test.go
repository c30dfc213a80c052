package ops

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// readAll reads a script with a ScriptReader into a Script, as Parse would
// return it.
func readAll(name, text string) (*Script, error) {
	r := NewScriptReader(name, strings.NewReader(text))
	sc := &Script{}
	for r.Next() {
		sc.Steps = append(sc.Steps, r.Step())
		if r.Steps() != len(sc.Steps) {
			return nil, nil
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	sc.Subsystem = r.Subsystem()
	return sc, nil
}

// A ScriptReader reads what Parse reads, step for step, and refuses what
// Parse refuses with the same error: every corpus script and every case of
// TestStrictParser.
func TestScriptReaderReadsAsParse(t *testing.T) {
	files, err := filepath.Glob("../../corpus/*/*.ops")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	texts := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts[f] = string(b)
	}
	long := strings.Repeat("x", 70000)
	for name, text := range map[string]string{
		"no subsystem":       "h1 = get msg key=0x0 mode=0600\n",
		"subsystem twice":    "subsystem ids\nget msg key=0x0 mode=0600\nsubsystem ids\n",
		"empty script":       "subsystem ids\n# nothing\n",
		"empty file":         "",
		"late error":         "subsystem ids\nh1 = get msg key=0x0 mode=0600\n\nrmid msg h1\nrmid msg h2\n",
		"rebound":            "subsystem ids\nh1 = get msg key=0x0 mode=0600\nh1 = get msg key=0x0 mode=0600\n",
		"long line":          "subsystem ids\nget msg key=0x0 mode=0600\nget msg key=0x" + long + " mode=0600\n",
		"bad expectation":    "subsystem ids\nh1 = get msg key=0x0 mode=0600 ->\n",
		"no final newline":   "subsystem ids\nh1 = get msg key=0x0 mode=0600 -> id=0",
		"comments and blank": "# a\n\nsubsystem ids\n\n# b\nh1 = get msg key=0x0 mode=0600\n  \nrmid msg h1 -> ok\n",
	} {
		texts[name] = text
	}
	for name, text := range texts {
		want, wantErr := Parse(name, strings.NewReader(text))
		got, gotErr := readAll(name, text)
		switch {
		case wantErr != nil || gotErr != nil:
			if wantErr == nil || gotErr == nil || wantErr.Error() != gotErr.Error() {
				t.Errorf("%s: ScriptReader says %v, Parse %v", name, gotErr, wantErr)
			}
		case !reflect.DeepEqual(got, want):
			t.Errorf("%s: ScriptReader read another script than Parse", name)
		}
	}
}
