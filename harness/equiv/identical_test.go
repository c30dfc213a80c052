package equiv

import (
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// settable lists the addressable leaves of v (integers, bools, strings).
func settable(v reflect.Value, out []reflect.Value) []reflect.Value {
	switch v.Kind() {
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			out = settable(v.Index(i), out)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			out = settable(v.Field(i), out)
		}
	default:
		out = append(out, v)
	}
	return out
}

// identical gives reflect.DeepEqual's answer on drawn values, on copies
// of them, and on copies with one leaf changed.
func checkIdentical[T any](t *testing.T, same func(a, b *T) bool) {
	rapid.Check(t, func(t *rapid.T) {
		a := rapid.Make[T]().Draw(t, "a")
		var b T
		switch rapid.IntRange(0, 2).Draw(t, "how") {
		case 0:
			b = rapid.Make[T]().Draw(t, "b")
		default:
			b = clone(a)
			leaves := settable(reflect.ValueOf(&b).Elem(), nil)
			if len(leaves) > 0 && rapid.Bool().Draw(t, "change") {
				l := leaves[rapid.IntRange(0, len(leaves)-1).Draw(t, "leaf")]
				switch l.Kind() {
				case reflect.Bool:
					l.SetBool(!l.Bool())
				case reflect.String:
					l.SetString(l.String() + "x")
				case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
					l.SetInt(l.Int() ^ 1)
				default:
					l.SetUint(l.Uint() ^ 1)
				}
			}
		}
		if got, want := same(&a, &b), reflect.DeepEqual(a, b); got != want {
			t.Fatalf("identical says %v, DeepEqual %v:\n%+v\n%+v", got, want, a, b)
		}
	})
}

func TestIdenticalIsDeepEqual(t *testing.T) {
	t.Run("Result", func(t *testing.T) { checkIdentical[ops.Result](t, sameResultValue) })
	t.Run("Snapshot", func(t *testing.T) { checkIdentical[ops.Snapshot](t, sameSnapshotValue) })
}
