package corpus

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime/coverage"
)

// modelCoverage measures which coverage units (basic blocks of the
// packages an ipcfuzz built with -cover instruments) a replay reached.
// Built without -cover (or without atomic counters), it measures nothing
// and says why.
type modelCoverage struct{ why string }

// newModelCoverage starts measuring, if this binary can.
func newModelCoverage() *modelCoverage {
	// The counter mode is known, and counters can be read, once the
	// meta-data has been emitted.
	if err := coverage.WriteMeta(io.Discard); err != nil {
		return &modelCoverage{why: "this ipcfuzz was built without -cover (" + firstLine(err.Error()) + ")"}
	}
	if err := coverage.ClearCounters(); err != nil {
		return &modelCoverage{why: "this ipcfuzz was built without -cover -covermode=atomic (" + firstLine(err.Error()) + ")"}
	}
	return &modelCoverage{}
}

// ok reports whether coverage is measured.
func (m *modelCoverage) ok() bool { return m.why == "" }

// reset zeroes every counter before a replay.
func (m *modelCoverage) reset() error {
	if !m.ok() {
		return nil
	}
	if err := coverage.ClearCounters(); err != nil {
		return fmt.Errorf("clearing coverage counters: %w", err)
	}
	return nil
}

// units returns the units reached since the last reset.
func (m *modelCoverage) units() ([]string, error) {
	if !m.ok() {
		return nil, nil
	}
	var buf bytes.Buffer
	if err := coverage.WriteCounters(&buf); err != nil {
		return nil, fmt.Errorf("reading coverage counters: %w", err)
	}
	return coveredUnits(buf.Bytes())
}

// Counter-data layout (internal/coverage, file version 1): a 32-byte
// header, segments (a 16-byte segment header, a string table, an args
// table, padding to 4 bytes, then per function: counter count, package
// index, function index, counters), a 16-byte footer after each segment.
const (
	covHeaderLen   = 32
	covSegHeadLen  = 16
	covFooterLen   = 16
	covFlavorRaw   = 1
	covFlavorULeb  = 2
	covFileVersion = 1
)

var covMagic = []byte{0x00, 0x63, 0x77, 0x6d}

// counterReader walks one counter-data file.
type counterReader struct {
	data      []byte
	pos       int
	flavor    byte
	bigEndian bool
}

// coveredUnits parses a counter-data file and names each unit whose count
// is not zero "cov:package:function:unit" (indexes as this process
// numbers them).
func coveredUnits(data []byte) ([]string, error) {
	if len(data) < covHeaderLen+covFooterLen || !bytes.Equal(data[:4], covMagic) {
		return nil, errors.New("coverage counters: not a counter-data file")
	}
	if v := binary.LittleEndian.Uint32(data[4:8]); v > covFileVersion {
		return nil, fmt.Errorf("coverage counters: file version %d, want %d", v, covFileVersion)
	}
	r := &counterReader{data: data, pos: covHeaderLen, flavor: data[24], bigEndian: data[25] != 0}
	segments := binary.LittleEndian.Uint32(data[len(data)-8 : len(data)-4])
	var out []string
	for s := uint32(0); s < segments; s++ {
		units, err := r.segment()
		if err != nil {
			return nil, err
		}
		out = append(out, units...)
		r.pos += covFooterLen
	}
	return out, nil
}

// segment reads one segment's functions.
func (r *counterReader) segment() ([]string, error) {
	if r.pos+covSegHeadLen > len(r.data) {
		return nil, errors.New("coverage counters: truncated segment header")
	}
	fns := binary.LittleEndian.Uint64(r.data[r.pos:])
	strLen := binary.LittleEndian.Uint32(r.data[r.pos+8:])
	argsLen := binary.LittleEndian.Uint32(r.data[r.pos+12:])
	r.pos += covSegHeadLen + int(strLen) + int(argsLen)
	r.pos = (r.pos + 3) &^ 3
	var out []string
	for range fns {
		units, err := r.function()
		if err != nil {
			return nil, err
		}
		out = append(out, units...)
	}
	return out, nil
}

// function reads one function's counters.
func (r *counterReader) function() ([]string, error) {
	var head [3]uint32 // counters, package, function
	for i := range head {
		v, err := r.value()
		if err != nil {
			return nil, err
		}
		head[i] = v
	}
	var out []string
	for i := range head[0] {
		v, err := r.value()
		if err != nil {
			return nil, err
		}
		if v != 0 {
			out = append(out, fmt.Sprintf("cov:%d:%d:%d", head[1], head[2], i))
		}
	}
	return out, nil
}

// value reads one number in the file's flavor.
func (r *counterReader) value() (uint32, error) {
	switch r.flavor {
	case covFlavorULeb:
		var v uint64
		for shift := uint(0); r.pos < len(r.data); shift += 7 {
			b := r.data[r.pos]
			r.pos++
			v |= uint64(b&0x7f) << shift
			if b&0x80 == 0 {
				return uint32(v), nil
			}
		}
	case covFlavorRaw:
		if r.pos+4 <= len(r.data) {
			r.pos += 4
			if r.bigEndian {
				return binary.BigEndian.Uint32(r.data[r.pos-4:]), nil
			}
			return binary.LittleEndian.Uint32(r.data[r.pos-4:]), nil
		}
	default:
		return 0, fmt.Errorf("coverage counters: unknown flavor %d", r.flavor)
	}
	return 0, errors.New("coverage counters: truncated")
}
