package plugins

import (
	"bytes"
	"encoding/binary"
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

// referencePack encodes v by the rules of PROTOCOL.md, written plainly
// over reflect.Value: the in-place codec must write the same bytes.
func referencePack(b []byte, v reflect.Value) []byte {
	switch v.Kind() {
	case reflect.Bool:
		if v.Bool() {
			return append(b, 1)
		}
		return append(b, 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return binary.AppendVarint(b, v.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return binary.AppendUvarint(b, v.Uint())
	case reflect.String:
		return append(binary.AppendUvarint(b, uint64(v.Len())), v.String()...)
	case reflect.Slice:
		b = binary.AppendUvarint(b, uint64(v.Len()))
		fallthrough
	case reflect.Array:
		for i := range v.Len() {
			b = referencePack(b, v.Index(i))
		}
		return b
	}
	var mask uint64
	for i := range v.NumField() {
		if !referenceEmpty(v.Field(i)) {
			mask |= 1 << i
		}
	}
	b = binary.AppendUvarint(b, mask)
	for i := range v.NumField() {
		if mask&(1<<i) != 0 {
			b = referencePack(b, v.Field(i))
		}
	}
	return b
}

// referenceEmpty: zero, or only empty lists.
func referenceEmpty(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Slice:
		return v.Len() == 0
	case reflect.Array:
		for i := range v.Len() {
			if !referenceEmpty(v.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Struct:
		for i := range v.NumField() {
			if !referenceEmpty(v.Field(i)) {
				return false
			}
		}
		return true
	}
	return v.IsZero()
}

func TestPackedMatchesTheRules(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		check := func(name string, got []byte, v any) {
			if want := referencePack(nil, reflect.ValueOf(v)); !bytes.Equal(got, want) {
				t.Fatalf("%s: packed %x, the rules give %x for %+v", name, got, want, v)
			}
		}
		script := rapid.SliceOfN(rapid.Make[ops.Op](), 0, 4).Draw(t, "script")
		rs := rapid.SliceOfN(rapid.Make[ops.Result](), 0, 4).Draw(t, "results")
		snap := rapid.Make[ops.Snapshot]().Draw(t, "snapshot")
		check("ops", PackOps(script), script)
		check("results", PackResults(rs), rs)
		check("snapshot", PackSnapshot(snap), snap)
	})
}

// Observations (the side channel) round-trip, and outcomes carry them
// through the envelope; none at all travel as no bytes.
func TestObservationsRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		obs := rapid.SliceOf(rapid.Custom(func(t *rapid.T) ops.Observation {
			return ops.Observation{
				Nanos:        rapid.Int64().Draw(t, "nanos"),
				PCs:          rapid.SliceOf(rapid.Uint64()).Draw(t, "pcs"),
				Syscalls:     rapid.Int64().Draw(t, "syscalls"),
				SyscallNanos: rapid.Int64().Draw(t, "syscall nanos"),
			}
		})).Draw(t, "observed")
		got, err := UnpackObserved(PackObserved(obs))
		if err != nil {
			t.Fatal(err)
		}
		if want := normalized(obs); !reflect.DeepEqual(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
		outs, err := OutcomesFromProto(OutcomesToProto([]ops.Outcome{{Observed: obs}}))
		if err != nil {
			t.Fatal(err)
		}
		if want := normalized(obs); !reflect.DeepEqual(outs[0].Observed, want) {
			t.Fatalf("through an outcome: got %v, want %v", outs[0].Observed, want)
		}
	})
	if PackObserved(nil) != nil {
		t.Fatal("no observations pack to bytes")
	}
	cfg := ConfigFromProto(ConfigToProto(ops.Config{Observe: ops.Observing{Time: true}}))
	if !cfg.Observe.Time || cfg.Observe.Cover {
		t.Fatalf("observe travels as %+v", cfg.Observe)
	}
}
