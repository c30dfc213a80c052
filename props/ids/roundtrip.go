package ids

import (
	"reflect"

	"pgregory.net/rapid"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// TextRoundTrip is the property parse(format(x)) == x for the scripts draw
// makes, with the results m gives attached as expectations on a random part
// of the steps (Result.Alternatives, a statistic, is not part of the text).
func TextRoundTrip(subsystem string, draw func(Source) []ops.Op, m ops.Model) func(*rapid.T) {
	return func(t *rapid.T) {
		script := draw(NewRapidSource(t))
		out, err := ops.Run(m, ops.Config{}, script)
		if err != nil {
			t.Fatal(err)
		}
		sc := ops.NewScript(subsystem, script)
		for i := range sc.Steps {
			if rapid.Bool().Draw(t, "with result") {
				r := out.Results[i]
				r.Alternatives = 0
				sc.Steps[i].Want = &r
			}
		}
		text := ops.Format(sc)
		back, err := ops.ParseString(text)
		if err != nil {
			t.Fatalf("parse(format(x)): %v\n%s", err, text)
		}
		if again := ops.Format(back); again != text {
			t.Fatalf("format(parse(format(x))) differs:\n%s\nvs\n%s", text, again)
		}
		if !reflect.DeepEqual(sc, back) {
			t.Fatalf("parse(format(x)) != x for\n%s", text)
		}
	}
}
