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

// codec encodes and decodes one Go type. empty reports whether a value
// holds nothing (zero, or only empty lists): a struct field that is empty is
// left out, so that nil and empty lists encode alike.
type codec struct {
	enc   func(p *packer, v reflect.Value)
	dec   func(u *unpacker, v reflect.Value)
	empty func(v reflect.Value) bool
}

var (
	opsCodec      = codecFor(reflect.TypeFor[[]ops.Op]())
	resultsCodec  = codecFor(reflect.TypeFor[[]ops.Result]())
	snapshotCodec = codecFor(reflect.TypeFor[ops.Snapshot]())
	layout        = describe(reflect.TypeFor[ops.Op](), reflect.TypeFor[ops.Result](), reflect.TypeFor[ops.Snapshot]())
	layoutVersion = func() string {
		sum := sha256.Sum256([]byte(layout))
		return "packed-" + hex.EncodeToString(sum[:6])
	}()
)

// Layout describes the packed layout of Op, Result and Snapshot: each
// struct's fields in order with their types (PROTOCOL.md quotes it).
func Layout() string { return layout }

// LayoutVersion names the packed layout: a hash of Layout().
func LayoutVersion() string { return layoutVersion }

// PackOps encodes a script.
func PackOps(script []ops.Op) []byte {
	p := &packer{b: make([]byte, 0, 8*len(script)+4)}
	opsCodec.enc(p, reflect.ValueOf(script))
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
	resultsCodec.enc(p, reflect.ValueOf(rs))
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
	snapshotCodec.enc(p, reflect.ValueOf(s))
	return p.b
}

// UnpackSnapshot decodes what PackSnapshot wrote.
func UnpackSnapshot(b []byte) (ops.Snapshot, error) {
	var s ops.Snapshot
	return s, unpack(b, snapshotCodec, &s, "snapshot")
}

func unpack[T any](b []byte, c codec, out *T, what string) error {
	u := &unpacker{b: b}
	c.dec(u, reflect.ValueOf(out).Elem())
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
	c := scalarCodec(t)
	if c.empty == nil {
		c.empty = func(v reflect.Value) bool { return v.IsZero() }
	}
	return c
}

func scalarCodec(t reflect.Type) codec {
	switch t.Kind() {
	case reflect.Bool:
		return codec{
			enc: func(p *packer, v reflect.Value) { p.bool(v.Bool()) },
			dec: func(u *unpacker, v reflect.Value) { v.SetBool(u.small(1) == 1) },
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		bits := t.Bits()
		return codec{
			enc: func(p *packer, v reflect.Value) { p.i(v.Int()) },
			dec: func(u *unpacker, v reflect.Value) {
				x := u.i()
				if bits < 64 && (x < -1<<(bits-1) || x >= 1<<(bits-1)) {
					u.fail(fmt.Errorf("%d overflows a %d-bit integer", x, bits))
				}
				v.SetInt(x)
			},
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		limit := uint64(math.MaxUint64)
		if t.Bits() < 64 {
			limit = 1<<t.Bits() - 1
		}
		return codec{
			enc: func(p *packer, v reflect.Value) { p.u(v.Uint()) },
			dec: func(u *unpacker, v reflect.Value) { v.SetUint(u.small(limit)) },
		}
	case reflect.String:
		return codec{
			enc: func(p *packer, v reflect.Value) { p.s(v.String()) },
			dec: func(u *unpacker, v reflect.Value) { v.SetString(u.s()) },
		}
	case reflect.Slice:
		return sliceCodec(t)
	case reflect.Array:
		elem := codecFor(t.Elem())
		return codec{
			enc: func(p *packer, v reflect.Value) {
				for i := range v.Len() {
					elem.enc(p, v.Index(i))
				}
			},
			dec: func(u *unpacker, v reflect.Value) {
				for i := range v.Len() {
					elem.dec(u, v.Index(i))
				}
			},
			empty: func(v reflect.Value) bool {
				for i := range v.Len() {
					if !elem.empty(v.Index(i)) {
						return false
					}
				}
				return true
			},
		}
	case reflect.Struct:
		return structCodec(t)
	}
	panic(fmt.Sprintf("plugins: the packed codec has no encoding for %s (%s)", t, t.Kind()))
}

func sliceCodec(t reflect.Type) codec {
	elem := codecFor(t.Elem())
	return codec{
		enc: func(p *packer, v reflect.Value) {
			p.u(uint64(v.Len()))
			for i := range v.Len() {
				elem.enc(p, v.Index(i))
			}
		},
		dec: func(u *unpacker, v reflect.Value) {
			n := u.count()
			if n == 0 {
				v.SetZero()
				return
			}
			s := reflect.MakeSlice(t, n, n)
			for i := 0; i < n && u.err == nil; i++ {
				elem.dec(u, s.Index(i))
			}
			v.Set(s)
		},
		empty: func(v reflect.Value) bool { return v.Len() == 0 },
	}
}

func structCodec(t reflect.Type) codec {
	if t.NumField() > 64 {
		panic(fmt.Sprintf("plugins: %s has more than 64 fields", t))
	}
	fields := make([]codec, t.NumField())
	for i := range fields {
		fields[i] = codecFor(t.Field(i).Type)
	}
	return codec{
		enc: func(p *packer, v reflect.Value) {
			var mask uint64
			for i, f := range fields {
				if !f.empty(v.Field(i)) {
					mask |= 1 << i
				}
			}
			p.u(mask)
			for i, f := range fields {
				if mask&(1<<i) != 0 {
					f.enc(p, v.Field(i))
				}
			}
		},
		dec: func(u *unpacker, v reflect.Value) {
			mask := u.u()
			if mask>>len(fields) != 0 {
				u.fail(fmt.Errorf("%s: field mask %#x names fields it does not have", t.Name(), mask))
				return
			}
			for i, f := range fields {
				if mask&(1<<i) != 0 && u.err == nil {
					f.dec(u, v.Field(i))
				}
			}
		},
		empty: func(v reflect.Value) bool {
			for i, f := range fields {
				if !f.empty(v.Field(i)) {
					return false
				}
			}
			return true
		},
	}
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
	if n <= 0 {
		u.fail(errShort)
		return 0
	}
	u.b = u.b[n:]
	return v
}

func (u *unpacker) i() int64 {
	v, n := binary.Varint(u.b)
	if n <= 0 {
		u.fail(errShort)
		return 0
	}
	u.b = u.b[n:]
	return v
}

func (u *unpacker) s() string {
	n := u.u()
	if n > uint64(len(u.b)) {
		u.fail(errShort)
		return ""
	}
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
