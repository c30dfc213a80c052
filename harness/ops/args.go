package ops

import (
	"fmt"
	"strconv"
	"strings"
)

// Arg is one argument of an operation in its text form: a positional value
// ("h1", "163940"), a named value ("key=0x10") or a word that is there or not
// ("creat").
type Arg struct {
	// Name is the name of a named value or the word of a flag; "" for a
	// positional value.
	Name     string
	field    field[Op]
	flag     *flagField
	when     func(*Op) bool
	optional bool
	handle   Class // the class of a handle value (0: not a handle)
	ref      func(*Op) *Ref
}

// pos is a positional argument.
func pos(f field[Op]) Arg { return Arg{field: f} }

// named is a named argument, written name=value.
func named(name string, f field[Op]) Arg { return Arg{Name: name, field: f} }

// word is a flag written as a bare word when get reports true.
func word(w string, get func(*Op) bool, set func(*Op, bool)) Arg {
	return Arg{Name: w, flag: &flagField{get: get, set: set}}
}

// flagBool is a flag held in a bool field.
func flagBool(w string, p func(*Op) *bool) Arg {
	return word(w, func(o *Op) bool { return *p(o) }, func(o *Op, v bool) { *p(o) = v })
}

// flagBit is a flag held in one bit of a small integer field.
func flagBit[T ~uint8 | ~uint16 | ~uint32](w string, p func(*Op) *T, bit T) Arg {
	return word(w, func(o *Op) bool { return *p(o)&bit != 0 }, func(o *Op, v bool) {
		if v {
			*p(o) |= bit
		} else {
			*p(o) &^= bit
		}
	})
}

// When makes the argument present only where cond holds (evaluated after the
// positional arguments are read).
func (a Arg) When(cond func(*Op) bool) Arg { a.when = cond; return a }

// Optional makes a named value optional: omitted from the text when zero.
func (a Arg) Optional() Arg { a.optional = true; return a }

// objectRef is the positional argument naming an IPC object: a handle hN or
// a literal id=N.
func objectRef(p func(*Op) *Ref) Arg {
	return Arg{field: refField(p), ref: p}
}

// handleOf is an argument naming a handle of class c (aN, fN).
func handleOf(c Class, name string, p func(*Op) *int) Arg {
	return Arg{Name: name, field: handleField{class: c, p: p}, handle: c}
}

// field is how one value of a struct S (an Op or a Result) is written and
// read.
type field[S any] interface {
	format(s *S) string
	parse(s *S, text string) error
	zero(s *S) bool
	// plainer returns values that are plainer than the current one, for the
	// shrinker, each applied by set.
	plainer(s *S) []func(*S)
	// syntax describes the values the field reads, for the help text.
	syntax() string
}

type flagField struct {
	get func(*Op) bool
	set func(*Op, bool)
}

type integer interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

// numField is an integer written in a base (10, 8 or 16), within [lo, hi],
// whose plainest value is plain.
type numField[S any, T integer] struct {
	p      func(*S) *T
	base   int
	width  int // octal: zero-padded width
	lo, hi int64
	plain  int64
	coarse bool
}

// dec is a decimal integer field within [lo, hi]; plain is its plainest value.
func dec[S any, T integer](p func(*S) *T, lo, hi, plain int64) field[S] {
	return numField[S, T]{p: p, base: 10, lo: lo, hi: hi, plain: plain}
}

// decCoarse is dec for a count whose every value costs time to try (the
// shrinker offers only the plainest value and the half).
func decCoarse[S any, T integer](p func(*S) *T, lo, hi, plain int64) field[S] {
	return numField[S, T]{p: p, base: 10, lo: lo, hi: hi, plain: plain, coarse: true}
}

// octal is an octal mode field 0..max, written %04o.
func octal[S any, T integer](p func(*S) *T, max, plain int64) field[S] {
	return numField[S, T]{p: p, base: 8, width: 4, lo: 0, hi: max, plain: plain}
}

// hex is a 32-bit key written 0x%x (a negative int32 as its unsigned bits).
func hex[S any](p func(*S) *int32) field[S] { return hexField[S]{p: p} }

func (f numField[S, T]) format(s *S) string {
	v := int64(*f.p(s))
	switch f.base {
	case 8:
		return fmt.Sprintf("%0*o", f.width, v)
	case 16:
		return fmt.Sprintf("0x%x", v)
	}
	return strconv.FormatInt(v, 10)
}

func (f numField[S, T]) parse(s *S, text string) error {
	v, err := strconv.ParseInt(text, f.base, 64)
	if err != nil || v < f.lo || v > f.hi {
		what := "a decimal integer"
		if f.base == 8 {
			what = "an octal number"
		}
		return fmt.Errorf("%q: want %s in %d..%d", clip(text), what, f.lo, f.hi)
	}
	*f.p(s) = T(v)
	return nil
}

func (f numField[S, T]) zero(s *S) bool { return *f.p(s) == 0 }

func (f numField[S, T]) syntax() string {
	switch {
	case f.base == 8:
		return fmt.Sprintf("0%o", f.hi)[:1] + "OOO"
	case f.lo <= -1<<31 && f.hi >= 1<<31-1, f.lo == 0 && f.hi >= 1<<31-1:
		return "N"
	case f.lo <= -1<<31:
		return fmt.Sprintf("N<=%d", f.hi)
	}
	return fmt.Sprintf("%d..%d", f.lo, f.hi)
}

// plainer lists values from the plainest toward the current one: the plain
// value, then points halfway, a quarter of the way, ... and one step away,
// so that the first that still fails is the largest step that keeps the
// failure. A coarse field (an expensive count) offers the plain value and
// the half only.
func (f numField[S, T]) plainer(s *S) []func(*S) {
	v := int64(*f.p(s))
	if v == f.plain {
		return nil
	}
	d := v - f.plain
	cands := []int64{f.plain}
	for step := d / 2; step != 0; step /= 2 {
		cands = append(cands, v-step)
		if f.coarse || len(cands) > 16 {
			break
		}
	}
	if !f.coarse {
		if d > 0 {
			cands = append(cands, v-1)
		} else {
			cands = append(cands, v+1)
		}
	}
	var out []func(*S)
	seen := map[int64]bool{v: true}
	for _, c := range cands {
		if seen[c] || c < f.lo || c > f.hi {
			continue
		}
		seen[c] = true
		out = append(out, func(s *S) { *f.p(s) = T(c) })
	}
	return out
}

type hexField[S any] struct{ p func(*S) *int32 }

func (f hexField[S]) format(s *S) string { return formatKey(*f.p(s)) }

func (f hexField[S]) parse(s *S, text string) error {
	k, err := parseKey(text)
	if err != nil {
		return err
	}
	*f.p(s) = k
	return nil
}

func (f hexField[S]) zero(s *S) bool { return *f.p(s) == 0 }

func (hexField[S]) syntax() string { return "0xHEX" }

func (f hexField[S]) plainer(s *S) []func(*S) {
	if *f.p(s) == 0 {
		return nil
	}
	return []func(*S){func(s *S) { *f.p(s) = 0 }}
}

// enumField is one of a set of names.
type enumField[S any, T comparable] struct {
	p     func(*S) *T
	names []enumName[T]
}

type enumName[T comparable] struct {
	v    T
	name string
}

// enum is a field whose values are written as names.
func enum[S any, T comparable](p func(*S) *T, names []enumName[T]) field[S] {
	return enumField[S, T]{p: p, names: names}
}

func (f enumField[S, T]) format(s *S) string {
	for _, n := range f.names {
		if n.v == *f.p(s) {
			return n.name
		}
	}
	return fmt.Sprintf("%v", *f.p(s))
}

func (f enumField[S, T]) parse(s *S, text string) error {
	for _, n := range f.names {
		if n.name == text {
			*f.p(s) = n.v
			return nil
		}
	}
	var want []string
	for _, n := range f.names {
		want = append(want, n.name)
	}
	return fmt.Errorf("%q: want one of %s", clip(text), strings.Join(want, ", "))
}

func (f enumField[S, T]) zero(s *S) bool { var z T; return *f.p(s) == z }

func (f enumField[S, T]) syntax() string {
	var names []string
	for _, n := range f.names {
		names = append(names, n.name)
	}
	return strings.Join(names, "|")
}

func (f enumField[S, T]) plainer(*S) []func(*S) { return nil }

// refField is an object reference: hN or id=N.
type refFieldT struct{ p func(*Op) *Ref }

func refField(p func(*Op) *Ref) field[Op] { return refFieldT{p: p} }

func (f refFieldT) format(o *Op) string { return formatRef(*f.p(o)) }

func (f refFieldT) parse(o *Op, text string) error {
	r, err := parseRef(text)
	if err != nil {
		return err
	}
	*f.p(o) = r
	return nil
}

func (f refFieldT) zero(o *Op) bool { return *f.p(o) == Ref{} }

func (refFieldT) syntax() string { return "hN|id=N" }

// plainer turns a literal id into -1 (the id no object has); handles are
// the renumbering's business.
func (f refFieldT) plainer(o *Op) []func(*Op) {
	r := *f.p(o)
	if r.Handle > 0 || r.ID == -1 {
		return nil
	}
	return []func(*Op){func(o *Op) { *f.p(o) = Ref{ID: -1} }}
}

// handleField is a handle of a class other than objects: aN, fN.
type handleField struct {
	class Class
	p     func(*Op) *int
}

func (f handleField) format(o *Op) string { return fmt.Sprintf("%c%d", f.class, *f.p(o)) }

func (f handleField) parse(o *Op, text string) error {
	n, err := parseHandleOf(f.class, text)
	if err != nil {
		return err
	}
	*f.p(o) = n
	return nil
}

func (f handleField) zero(o *Op) bool { return *f.p(o) == 0 }

func (f handleField) syntax() string { return string(f.class) + "N" }

func (f handleField) plainer(*Op) []func(*Op) { return nil }

func (f handleField) handlePtr(o *Op) *int { return f.p(o) }

// handleHolder is a field that holds a handle of another class than
// objects (an argument with Arg.handle set): renumbering and the check of
// bound handles reach it through handlePtr.
type handleHolder interface{ handlePtr(o *Op) *int }

func parseHandleOf(c Class, s string) (int, error) {
	v, ok := strings.CutPrefix(s, string(c))
	n, err := strconv.Atoi(v)
	if !ok || err != nil || n <= 0 || n > MaxHandle {
		return 0, fmt.Errorf("handle %q: want %c1..%c%d", clip(s), c, c, MaxHandle)
	}
	return n, nil
}

// MaxHandle is the largest handle number a script may use.
const MaxHandle = 1 << 24

func formatKey(k int32) string { return fmt.Sprintf("0x%x", uint32(k)) }

func parseKey(s string) (int32, error) {
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 32)
	if err != nil || !strings.HasPrefix(s, "0x") {
		return 0, fmt.Errorf("key %q: want 0x followed by up to 8 hex digits", clip(s))
	}
	return int32(uint32(v)), nil
}

func formatRef(r Ref) string {
	if r.Handle > 0 {
		return fmt.Sprintf("h%d", r.Handle)
	}
	return fmt.Sprintf("id=%d", r.ID)
}

func parseRef(s string) (Ref, error) {
	if v, ok := strings.CutPrefix(s, "id="); ok {
		id, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return Ref{}, fmt.Errorf("id %q: want a decimal integer", clip(v))
		}
		return Ref{ID: id}, nil
	}
	h, err := parseHandleOf(ClassObject, s)
	if err != nil {
		return Ref{}, fmt.Errorf("object %q: want hN or id=N", clip(s))
	}
	return Ref{Handle: h}, nil
}

// clipLen is how much of a bad input an error message echoes.
const clipLen = 40

// clip shortens text for an error message.
func clip(s string) string {
	if len(s) <= clipLen {
		return s
	}
	return s[:clipLen] + "..."
}

// u64Field is an unsigned 64-bit decimal field (results only).
type u64Field[S any] struct{ p func(*S) *uint64 }

func u64[S any](p func(*S) *uint64) field[S] { return u64Field[S]{p: p} }

func (f u64Field[S]) format(s *S) string { return strconv.FormatUint(*f.p(s), 10) }

func (f u64Field[S]) parse(s *S, text string) error {
	v, err := strconv.ParseUint(text, 10, 64)
	if err != nil {
		return fmt.Errorf("%q: want an unsigned decimal integer", clip(text))
	}
	*f.p(s) = v
	return nil
}

func (f u64Field[S]) zero(s *S) bool { return *f.p(s) == 0 }

func (u64Field[S]) syntax() string { return "N" }

func (f u64Field[S]) plainer(*S) []func(*S) { return nil }

// argGroup is IPC_SET's gid= (shmctl, msgctl, semctl), omitted when 0 (the
// rule without it).
var argGroup = named("gid", dec(func(o *Op) *uint32 { return &o.Group }, 0, 1<<32-1, 0)).Optional()
