package plugins

import (
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// normalized returns v with every empty slice made nil, the one form the
// packed codec gives back.
func normalized[T any](v T) T {
	rv := reflect.ValueOf(&v).Elem()
	normalize(rv)
	return v
}

func normalize(v reflect.Value) {
	switch v.Kind() {
	case reflect.Slice:
		if v.Len() == 0 {
			v.SetZero()
			return
		}
		for i := range v.Len() {
			normalize(v.Index(i))
		}
	case reflect.Array:
		for i := range v.Len() {
			normalize(v.Index(i))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			normalize(v.Field(i))
		}
	}
}

// roundTrip checks unpack(pack(x)) == x for values drawn from the type
// itself, so that a field added to the vocabulary is covered the day it
// is added.
func roundTrip[T any](t *testing.T, pack func(T) []byte, unpack func([]byte) (T, error)) {
	rapid.Check(t, func(t *rapid.T) {
		v := rapid.Make[T]().Draw(t, "value")
		got, err := unpack(pack(v))
		if err != nil {
			t.Fatalf("unpack: %v", err)
		}
		if want := normalized(v); !reflect.DeepEqual(normalized(got), want) {
			t.Fatalf("round trip changed the value:\n got %+v\nwant %+v", got, want)
		}
	})
}

func TestPackedRoundTrip(t *testing.T) {
	t.Run("ops", func(t *testing.T) { roundTrip(t, PackOps, UnpackOps) })
	t.Run("results", func(t *testing.T) { roundTrip(t, PackResults, UnpackResults) })
	t.Run("snapshot", func(t *testing.T) { roundTrip(t, PackSnapshot, UnpackSnapshot) })
}

func TestUnpackRefusesDamagedData(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		script := rapid.SliceOfN(rapid.Make[ops.Op](), 1, 8).Draw(t, "script")
		b := PackOps(script)
		cut := rapid.IntRange(0, len(b)-1).Draw(t, "cut")
		if _, err := UnpackOps(b[:cut]); err == nil {
			t.Fatalf("a script cut at %d of %d bytes was accepted", cut, len(b))
		}
		if _, err := UnpackOps(append(b, 0)); err == nil {
			t.Fatalf("a script with a trailing byte was accepted")
		}
		rs := rapid.SliceOfN(rapid.Make[ops.Result](), 1, 8).Draw(t, "results")
		rb := PackResults(rs)
		if _, err := UnpackResults(rb[:rapid.IntRange(0, len(rb)-1).Draw(t, "rcut")]); err == nil {
			t.Fatalf("results cut short were accepted")
		}
		// Any bytes at all: an error or a value, never a panic.
		junk := rapid.SliceOfN(rapid.Byte(), 0, 64).Draw(t, "junk")
		_, _ = UnpackOps(junk)
		_, _ = UnpackResults(junk)
		_, _ = UnpackSnapshot(junk)
	})
}
