package equiv

import (
	"reflect"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// identical reports whether two values of the vocabulary hold the same
// data: reflect.DeepEqual's answer (nil and empty slices differ) for the
// integers, bools, strings, slices, arrays and structs ops is made of,
// compiled once per type. A field whose type is comparable is first
// checked for zero on both sides, one memory comparison each: most groups
// of a result are zero, and DeepEqual would walk every field of them.
//
// It only ever lets the comparison skip formatting: when it says "not
// identical", the canonical text decides.
type identical func(a, b reflect.Value) bool

var (
	identicalResults   = identicalFor(reflect.TypeFor[ops.Result]())
	identicalSnapshots = identicalFor(reflect.TypeFor[ops.Snapshot]())
)

func sameResultValue(a, b *ops.Result) bool {
	return identicalResults(reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem())
}

func sameSnapshotValue(a, b *ops.Snapshot) bool {
	return identicalSnapshots(reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem())
}

func identicalFor(t reflect.Type) identical {
	if t.Comparable() {
		return func(a, b reflect.Value) bool {
			az, bz := a.IsZero(), b.IsZero()
			if az || bz {
				return az == bz
			}
			return a.Equal(b)
		}
	}
	switch t.Kind() {
	case reflect.Slice:
		elem := identicalFor(t.Elem())
		return func(a, b reflect.Value) bool {
			if a.IsNil() != b.IsNil() || a.Len() != b.Len() {
				return false
			}
			for i := range a.Len() {
				if !elem(a.Index(i), b.Index(i)) {
					return false
				}
			}
			return true
		}
	case reflect.Array:
		elem := identicalFor(t.Elem())
		return func(a, b reflect.Value) bool {
			for i := range a.Len() {
				if !elem(a.Index(i), b.Index(i)) {
					return false
				}
			}
			return true
		}
	case reflect.Struct:
		fields := make([]identical, t.NumField())
		for i := range fields {
			fields[i] = identicalFor(t.Field(i).Type)
		}
		return func(a, b reflect.Value) bool {
			for i, f := range fields {
				if !f(a.Field(i), b.Field(i)) {
					return false
				}
			}
			return true
		}
	}
	// Maps, pointers, interfaces: not in the vocabulary today; DeepEqual
	// keeps the answer right should one appear.
	return func(a, b reflect.Value) bool { return reflect.DeepEqual(a.Interface(), b.Interface()) }
}
