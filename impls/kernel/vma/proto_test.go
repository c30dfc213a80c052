//go:build linux && amd64

package vma

import (
	"flag"
	"fmt"
	"strings"
	"testing"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
	"github.com/ipcfuzz/ipcfuzz/impls/kernel/internal/cbuild"
)

var update = flag.Bool("update", false, "rewrite csrc/vma_proto.h from the Go tables")

// cName turns a vocabulary name ("guard_install", "anon-merge-fix") into
// the tail of a C name.
func cName(s string) string {
	return strings.ToUpper(strings.NewReplacer("-", "_").Replace(s))
}

// protoHeader is csrc/vma_proto.h as the Go tables give it: the protocol
// (protocol.go), the MADV_* numbers (space.go), and the map flags and
// quirk bits of the vocabulary (harness/ops).
func protoHeader() []byte {
	h := cbuild.NewHeader("vma_proto.h", "impls/kernel/vma (protocol.go, space.go) and harness/ops (vma.go)", "go generate (TestProtoHeader)")
	h.Enum("The helper's file descriptors, regions and record sizes (protocol.go).",
		cbuild.Const{Name: "VMA_REQ_FD", Value: requestFD},
		cbuild.Const{Name: "VMA_RESP_FD", Value: responseFD},
		cbuild.Const{Name: "REGION_WINDOW", Value: int64(regionWindow)},
		cbuild.Const{Name: "REGION_HEAP", Value: int64(regionHeap)},
		cbuild.Const{Name: "REGION_THP", Value: int64(regionTHP)},
		cbuild.Const{Name: "REQUEST_SIZE", Value: requestSize},
		cbuild.Const{Name: "RESPONSE_SIZE", Value: responseSize},
		cbuild.Const{Name: "OP_TIMED", Value: int64(opTimed)},
	)
	var codes []cbuild.Const
	for op, name := range opNames {
		if name != "" {
			codes = append(codes, cbuild.Const{Name: "OP_" + name, Value: int64(op)})
		}
	}
	h.Enum("The operations of a request (protocol.go).", codes...)
	var refused []cbuild.Const
	for _, r := range refusals {
		refused = append(refused, cbuild.Const{Name: r.name, Value: int64(r.code)})
	}
	h.Enum("The helper's refusals, a negative err (protocol.go).", refused...)
	h.Enum("The bits of a remap request's a[1] (protocol.go).",
		cbuild.Const{Name: "REMAP_FIXED", Value: remapFixed},
		cbuild.Const{Name: "REMAP_MAYMOVE", Value: remapMayMove},
		cbuild.Const{Name: "REMAP_DONTUNMAP", Value: remapDontUnmap},
	)
	h.Enum("ops.VMAMapFlags, the map request's flags (harness/ops).", mapFlagConsts()...)
	h.Enum("ops.VMAQuirks, as the helper reports them (harness/ops).", quirkConsts()...)
	madv, numbers := madvConsts()
	h.Enum("The MADV_* number of every advice the vocabulary has (space.go).", madv...)
	h.List("The advices the helper takes.", "MADV_LIST", numbers...)
	return h.Bytes()
}

func mapFlagConsts() []cbuild.Const {
	var out []cbuild.Const
	for f := ops.VMAMapFlags(1); f != 0; f <<= 1 {
		if name := f.String(); name != "-" {
			out = append(out, cbuild.Const{Name: "MAPF_" + cName(name), Value: int64(f)})
		}
	}
	return out
}

func quirkConsts() []cbuild.Const {
	var out []cbuild.Const
	for i := range 32 {
		if name := ops.VMAQuirks(1 << i).String(); name != "-" {
			out = append(out, cbuild.Const{Name: "Q_" + cName(name), Value: 1 << i})
		}
	}
	return out
}

func madvConsts() ([]cbuild.Const, []int64) {
	var out []cbuild.Const
	var numbers []int64
	for _, a := range ops.VMAAdvices {
		n, ok := madvNumber(a)
		if !ok {
			panic(fmt.Sprintf("advice %s has no MADV_* number", a))
		}
		out = append(out, cbuild.Const{Name: "MADV_" + cName(a.String()), Value: n})
		numbers = append(numbers, n)
	}
	return out, numbers
}

// The helper's constants come from csrc/vma_proto.h, which must be what
// the Go tables give: a number changed on one side only fails here.
func TestProtoHeader(t *testing.T) {
	if err := cbuild.CheckHeader("csrc/vma_proto.h", protoHeader(), *update); err != nil {
		t.Fatal(err)
	}
}
