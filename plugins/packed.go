package plugins

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"unsafe"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// The vocabulary (operations, results, snapshots) travels packed: a compact
// encoding derived from the Go types of harness/ops by reflection, so that a
// field added to the vocabulary is on the wire the day it is added, with no
// list to update. PROTOCOL.md writes the rules down for plugins in other
// languages:
//
//   - an unsigned integer or a bool is a uvarint; a signed integer a zigzag
//     varint; a string a uvarint length and its bytes;
//   - a slice is a uvarint count and its elements (nil and empty are the
//     same: both decode as nil); an array its elements, as many as its type has;
//   - a struct is a uvarint mask with bit i set for each field i that is not
//     zero, then those fields in order.
//
// Layout() describes the types field by field; its hash, LayoutVersion(),
// travels in Info and the host refuses a plugin whose layout differs.

// codec encodes and decodes one Go type, reading and writing the value
// in place through its address: the layout (field offsets, element sizes)
// is taken from reflection once, when the codec is built, so that no field
// goes through a reflect.Value on the hot path. enc always writes the value
// and reports whether it held anything (not zero, not only empty lists): a
// struct cuts the fields that held nothing back out and leaves them out of
// its mask, so that nil and empty lists encode alike, in one pass.
type codec struct {
	enc func(p *packer, at unsafe.Pointer) bool
	dec func(u *unpacker, at unsafe.Pointer)
}

var (
	opsCodec      = codecFor(reflect.TypeFor[[]ops.Op]())
	resultsCodec  = codecFor(reflect.TypeFor[[]ops.Result]())
	snapshotCodec = codecFor(reflect.TypeFor[ops.Snapshot]())
	observedCodec = codecFor(reflect.TypeFor[[]ops.Observation]())
	layout        = describe(reflect.TypeFor[ops.Op](), reflect.TypeFor[ops.Result](), reflect.TypeFor[ops.Snapshot](), reflect.TypeFor[ops.Observation]())
	layoutVersion = func() string {
		sum := sha256.Sum256([]byte(layout))
		return "packed-" + hex.EncodeToString(sum[:6])
	}()
)

// Layout describes the packed layout of Op, Result, Snapshot and
// Observation: each
// struct's fields in order with their types (PROTOCOL.md quotes it).
func Layout() string { return layout }

// LayoutVersion names the packed layout: a hash of Layout().
func LayoutVersion() string { return layoutVersion }

// PackOps encodes a script.
func PackOps(script []ops.Op) []byte {
	p := &packer{b: make([]byte, 0, 8*len(script)+4)}
	opsCodec.enc(p, unsafe.Pointer(&script))
	return p.b
}

// UnpackOps decodes what PackOps wrote. The result is never nil.
func UnpackOps(b []byte) ([]ops.Op, error) {
	var out []ops.Op
	err := unpack(b, opsCodec, &out, "operations")
	if out == nil {
		out = []ops.Op{}
	}
	return out, err
}

// PackResults encodes the results of a script.
func PackResults(rs []ops.Result) []byte {
	p := &packer{b: make([]byte, 0, 4*len(rs)+4)}
	resultsCodec.enc(p, unsafe.Pointer(&rs))
	return p.b
}

// UnpackResults decodes what PackResults wrote.
func UnpackResults(b []byte) ([]ops.Result, error) {
	var out []ops.Result
	return out, unpack(b, resultsCodec, &out, "results")
}

// PackSnapshot encodes a snapshot.
func PackSnapshot(s ops.Snapshot) []byte {
	p := &packer{}
	snapshotCodec.enc(p, unsafe.Pointer(&s))
	return p.b
}

// UnpackSnapshot decodes what PackSnapshot wrote.
func UnpackSnapshot(b []byte) (ops.Snapshot, error) {
	var s ops.Snapshot
	return s, unpack(b, snapshotCodec, &s, "snapshot")
}

// PackObserved encodes the observations of a script (the side channel,
// Outcome.Observed).
func PackObserved(obs []ops.Observation) []byte {
	if len(obs) == 0 {
		return nil
	}
	p := &packer{b: make([]byte, 0, 4*len(obs)+4)}
	observedCodec.enc(p, unsafe.Pointer(&obs))
	return p.b
}

// UnpackObserved decodes what PackObserved wrote; no bytes are no
// observations (nil).
func UnpackObserved(b []byte) ([]ops.Observation, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var out []ops.Observation
	return out, unpack(b, observedCodec, &out, "observations")
}

func unpack[T any](b []byte, c codec, out *T, what string) error {
	u := &unpacker{b: b}
	c.dec(u, unsafe.Pointer(out))
	if u.err == nil && len(u.b) != 0 {
		u.err = fmt.Errorf("%d bytes left after the %s", len(u.b), what)
	}
	if u.err != nil {
		var zero T
		*out = zero
		return fmt.Errorf("packed %s: %w", what, u.err)
	}
	return nil
}

// codecFor builds the codec of t. The vocabulary holds only integers,
// bools, strings, slices, arrays and structs of those.
func codecFor(t reflect.Type) codec {
	switch t.Kind() {
	case reflect.Bool:
		return codec{
			enc: func(p *packer, at unsafe.Pointer) bool {
				x := *(*bool)(at)
				p.bool(x)
				return x
			},
			dec: func(u *unpacker, at unsafe.Pointer) { *(*bool)(at) = u.small(1) == 1 },
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return intCodec(t)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return uintCodec(t)
	case reflect.String:
		return codec{
			enc: func(p *packer, at unsafe.Pointer) bool {
				x := *(*string)(at)
				p.s(x)
				return x != ""
			},
			dec: func(u *unpacker, at unsafe.Pointer) { *(*string)(at) = u.s() },
		}
	case reflect.Slice:
		return sliceCodec(t)
	case reflect.Array:
		return arrayCodec(t)
	case reflect.Struct:
		return structCodec(t)
	}
	panic(fmt.Sprintf("plugins: the packed codec has no encoding for %s (%s)", t, t.Kind()))
}

// intCodec: a zigzag varint, refused on decoding when it overflows the
// field's size; uintCodec: a uvarint, likewise.
func intCodec(t reflect.Type) codec {
	switch t.Bits() {
	case 8:
		return signed[int8](8)
	case 16:
		return signed[int16](16)
	case 32:
		return signed[int32](32)
	}
	return signed[int64](64)
}

func uintCodec(t reflect.Type) codec {
	switch t.Bits() {
	case 8:
		return unsigned[uint8](math.MaxUint8)
	case 16:
		return unsigned[uint16](math.MaxUint16)
	case 32:
		return unsigned[uint32](math.MaxUint32)
	}
	return unsigned[uint64](math.MaxUint64)
}

func signed[T int8 | int16 | int32 | int64](bits int) codec {
	return codec{
		enc: func(p *packer, at unsafe.Pointer) bool {
			x := int64(*(*T)(at))
			p.i(x)
			return x != 0
		},
		dec: func(u *unpacker, at unsafe.Pointer) {
			x := u.i()
			if bits < 64 && (x < -1<<(bits-1) || x >= 1<<(bits-1)) {
				u.fail(fmt.Errorf("%d overflows a %d-bit integer", x, bits))
				return
			}
			*(*T)(at) = T(x)
		},
	}
}

func unsigned[T uint8 | uint16 | uint32 | uint64](limit uint64) codec {
	return codec{
		enc: func(p *packer, at unsafe.Pointer) bool {
			x := uint64(*(*T)(at))
			p.u(x)
			return x != 0
		},
		dec: func(u *unpacker, at unsafe.Pointer) { *(*T)(at) = T(u.small(limit)) },
	}
}

// sliceCodec: a count, then the elements. The slice itself is read and
// written through reflect (one Value per slice); its elements in place.
func sliceCodec(t reflect.Type) codec {
	elem := codecFor(t.Elem())
	size := t.Elem().Size()
	return codec{
		enc: func(p *packer, at unsafe.Pointer) bool {
			v := reflect.NewAt(t, at).Elem()
			n := v.Len()
			p.u(uint64(n))
			if n == 0 {
				return false
			}
			base := v.UnsafePointer()
			for i := range n {
				elem.enc(p, unsafe.Add(base, uintptr(i)*size))
			}
			return true
		},
		dec: func(u *unpacker, at unsafe.Pointer) {
			v := reflect.NewAt(t, at).Elem()
			n := u.count()
			if n == 0 {
				v.SetZero()
				return
			}
			s := reflect.MakeSlice(t, n, n)
			base := s.UnsafePointer()
			for i := 0; i < n && u.err == nil; i++ {
				elem.dec(u, unsafe.Add(base, uintptr(i)*size))
			}
			v.Set(s)
		},
	}
}

// arrayCodec: the elements, as many as the type has.
func arrayCodec(t reflect.Type) codec {
	elem := codecFor(t.Elem())
	size, n := t.Elem().Size(), t.Len()
	return codec{
		enc: func(p *packer, at unsafe.Pointer) bool {
			full := false
			for i := range n {
				full = elem.enc(p, unsafe.Add(at, uintptr(i)*size)) || full
			}
			return full
		},
		dec: func(u *unpacker, at unsafe.Pointer) {
			for i := range n {
				elem.dec(u, unsafe.Add(at, uintptr(i)*size))
			}
		},
	}
}

// field is one struct field's codec and place.
type field struct {
	codec
	offset, size uintptr
	// plain says how to see that the field is zero at once, when its
	// memory holds no pointer (no string or slice): all-zero memory is
	// then exactly a zero value, and it is skipped. Most groups of a
	// result are zero.
	plain plainKind
}

// plainKind is how a field is checked for zero: not at all (it holds
// pointers), as one aligned integer of its size, or against zeros.
type plainKind uint8

const (
	notPlain plainKind = iota
	plainMem
	plain1
	plain2
	plain4
	plain8
)

// plainKindOf says how a field of type t is checked for zero.
func plainKindOf(t reflect.Type) plainKind {
	switch {
	case !plainType(t) || t.Size() > uintptr(len(zeros)):
		return notPlain
	case t.Size() == 1:
		return plain1
	case t.Size() == 2 && t.Align() >= 2:
		return plain2
	case t.Size() == 4 && t.Align() >= 4:
		return plain4
	case t.Size() == 8 && t.Align() >= 8:
		return plain8
	}
	return plainMem
}

// zero reports whether the plain field at at is all zero bytes.
func (f *field) zero(at unsafe.Pointer) bool {
	switch f.plain {
	case plain1:
		return *(*uint8)(at) == 0
	case plain2:
		return *(*uint16)(at) == 0
	case plain4:
		return *(*uint32)(at) == 0
	case plain8:
		return *(*uint64)(at) == 0
	case plainMem:
		return string(unsafe.Slice((*byte)(at), f.size)) == string(zeros[:f.size])
	}
	return false
}

// zeros is compared with plain fields' memory; never written.
var zeros [512]byte

func structCodec(t reflect.Type) codec {
	if t.NumField() > 64 {
		panic(fmt.Sprintf("plugins: %s has more than 64 fields", t))
	}
	fields := make([]field, t.NumField())
	for i := range fields {
		f := t.Field(i)
		fields[i] = field{codec: codecFor(f.Type), offset: f.Offset, size: f.Type.Size(), plain: plainKindOf(f.Type)}
	}
	return codec{
		enc: func(p *packer, at unsafe.Pointer) bool {
			// The mask goes before the fields: a byte is kept for it, and
			// the fields are shifted up when it needs more.
			start := len(p.b)
			p.b = append(p.b, 0)
			var mask uint64
			for i := range fields {
				f := &fields[i]
				fat := unsafe.Add(at, f.offset)
				if f.plain != notPlain && f.zero(fat) {
					continue
				}
				before := len(p.b)
				if f.enc(p, fat) {
					mask |= 1 << i
				} else {
					p.b = p.b[:before]
				}
			}
			if mask < 0x80 {
				p.b[start] = byte(mask)
				return mask != 0
			}
			var m [binary.MaxVarintLen64]byte
			n := binary.PutUvarint(m[:], mask)
			end := len(p.b)
			p.b = append(p.b, m[:n-1]...)
			copy(p.b[start+n:], p.b[start+1:end])
			copy(p.b[start:], m[:n])
			return true
		},
		dec: func(u *unpacker, at unsafe.Pointer) {
			mask := u.u()
			if mask>>len(fields) != 0 {
				u.fail(fmt.Errorf("%s: field mask %#x names fields it does not have", t.Name(), mask))
				return
			}
			for i := range fields {
				if mask&(1<<i) != 0 && u.err == nil {
					fields[i].dec(u, unsafe.Add(at, fields[i].offset))
				}
			}
		},
	}
}

// plainType reports whether t holds no pointer: integers and bools, and
// arrays and structs of those.
func plainType(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	case reflect.Array:
		return plainType(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if !plainType(t.Field(i).Type) {
				return false
			}
		}
		return true
	}
	return false
}

// describe writes the layout of types: each struct's fields in order with
// their types, every struct described once.
func describe(types ...reflect.Type) string {
	var b strings.Builder
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		switch t.Kind() {
		case reflect.Slice, reflect.Array:
			walk(t.Elem())
			return
		case reflect.Struct:
		default:
			return
		}
		if seen[t] {
			return
		}
		seen[t] = true
		fmt.Fprintf(&b, "%s {", t.Name())
		for i := range t.NumField() {
			f := t.Field(i)
			fmt.Fprintf(&b, " %d:%s %s;", i, f.Name, typeName(f.Type))
		}
		b.WriteString(" }\n")
		for i := range t.NumField() {
			walk(t.Field(i).Type)
		}
	}
	for _, t := range types {
		walk(t)
	}
	return b.String()
}

// typeName is a field's type in Layout: its encoding, not its Go name.
func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return fmt.Sprintf("sint%d", t.Bits())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprintf("uint%d", t.Bits())
	case reflect.String:
		return "string"
	case reflect.Slice:
		return "[]" + typeName(t.Elem())
	case reflect.Array:
		return fmt.Sprintf("[%d]%s", t.Len(), typeName(t.Elem()))
	}
	return t.Name()
}

type packer struct{ b []byte }

func (p *packer) u(v uint64) { p.b = binary.AppendUvarint(p.b, v) }
func (p *packer) i(v int64)  { p.b = binary.AppendVarint(p.b, v) }
func (p *packer) s(v string) {
	p.u(uint64(len(v)))
	p.b = append(p.b, v...)
}
func (p *packer) bool(v bool) {
	if v {
		p.b = append(p.b, 1)
	} else {
		p.b = append(p.b, 0)
	}
}

type unpacker struct {
	b   []byte
	err error
}

var errShort = errors.New("packed data ends early")

func (u *unpacker) u() uint64 {
	v, n := binary.Uvarint(u.b)
	return took(u, v, n)
}

func (u *unpacker) i() int64 {
	v, n := binary.Varint(u.b)
	return took(u, v, n)
}

// took consumes the n bytes a varint v was read from (binary.Uvarint's
// or binary.Varint's answer) and returns v, or fails where there was
// none (n <= 0).
func took[T uint64 | int64](u *unpacker, v T, n int) T {
	if n <= 0 {
		u.fail(errShort)
		return 0
	}
	u.b = u.b[n:]
	return v
}

func (u *unpacker) s() string {
	n := u.count() // each byte of the string takes a byte
	v := string(u.b[:n])
	u.b = u.b[n:]
	return v
}

// small reads a value that must fit in max.
func (u *unpacker) small(max uint64) uint64 {
	v := u.u()
	if v > max {
		u.fail(fmt.Errorf("%d is out of range (at most %d)", v, max))
		return 0
	}
	return v
}

// count reads a slice length; every element takes at least a byte, so a
// count beyond what is left is corrupt (and never allocated).
func (u *unpacker) count() int {
	n := u.u()
	if n > uint64(len(u.b)) {
		u.fail(errShort)
		return 0
	}
	return int(n)
}

func (u *unpacker) fail(err error) {
	if u.err == nil {
		u.err = err
	}
	u.b = nil
}
