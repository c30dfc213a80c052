package cbuild

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
)

// Header writes a C header of constants from the Go tables that own them.
type Header struct {
	b     bytes.Buffer
	guard string
}

// Const is a named number of a Header.
type Const struct {
	Name  string
	Value int64
}

// NewHeader starts the header file name (task_proto.h, say), saying that
// it is generated from the Go source from, and by what.
func NewHeader(name, from, by string) *Header {
	guard := "IPCFUZZ_" + strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(name))
	h := &Header{guard: guard}
	fmt.Fprintf(&h.b, "/* %s: generated from %s by %s; do not edit. */\n", name, from, by)
	fmt.Fprintf(&h.b, "#ifndef %s\n#define %s\n", guard, guard)
	return h
}

// Enum writes an anonymous enum of the constants, under a comment.
func (h *Header) Enum(comment string, cs ...Const) {
	fmt.Fprintf(&h.b, "\n/* %s */\nenum {\n", comment)
	for _, c := range cs {
		fmt.Fprintf(&h.b, "\t%s = %d,\n", c.Name, c.Value)
	}
	h.b.WriteString("};\n")
}

// List writes an X-macro, name(X), that applies X to each value in turn:
// a switch on it is "switch (v) { name(CASE) return 1; }" with
// "#define CASE(v) case v:".
func (h *Header) List(comment, name string, values ...int64) {
	fmt.Fprintf(&h.b, "\n/* %s */\n#define %s(X)", comment, name)
	for _, v := range values {
		fmt.Fprintf(&h.b, " X(%d)", v)
	}
	h.b.WriteString("\n")
}

// Layout writes an X-macro, name(X), that applies X to each field of the
// struct v (its name in lower case, and its offset) and a size constant
// name_SIZE: the C side asserts that its struct has the same layout.
func (h *Header) Layout(comment, name string, v any) {
	t := reflect.TypeOf(v)
	fmt.Fprintf(&h.b, "\n/* %s */\n#define %s(X)", comment, name)
	for i := range t.NumField() {
		if f := t.Field(i); f.Name != "_" {
			fmt.Fprintf(&h.b, " X(%s, %d)", strings.ToLower(f.Name), f.Offset)
		}
	}
	fmt.Fprintf(&h.b, "\nenum { %s_SIZE = %d };\n", name, t.Size())
}

// String writes a string constant as a macro.
func (h *Header) String(comment, name, value string) {
	fmt.Fprintf(&h.b, "\n/* %s */\n#define %s %s\n", comment, name, strconv.Quote(value))
}

// Bytes ends the header and returns its text.
func (h *Header) Bytes() []byte {
	b := bytes.Clone(h.b.Bytes())
	return append(b, fmt.Sprintf("\n#endif /* %s */\n", h.guard)...)
}

// CheckHeader fails unless the file at path holds want; with update set it
// writes want there instead. It names the first line that differs.
func CheckHeader(path string, want []byte, update bool) error {
	if update {
		return os.WriteFile(path, want, 0o644)
	}
	have, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%w: go generate ./impls/kernel/... writes it", err)
	}
	if bytes.Equal(have, want) {
		return nil
	}
	hl, wl := strings.Split(string(have), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(hl), len(wl)) {
		var h, w string
		if i < len(hl) {
			h = hl[i]
		}
		if i < len(wl) {
			w = wl[i]
		}
		if h != w {
			return fmt.Errorf("%s differs from what the Go tables give at line %d: has %q, want %q; go generate ./impls/kernel/... rewrites it", path, i+1, h, w)
		}
	}
	return fmt.Errorf("%s differs from what the Go tables give", path)
}
