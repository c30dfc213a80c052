package kernel

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// idColumn and sizeColumn name the columns of /proc/sysvipc/<type> that hold
// the id and the size (none for msg).
var (
	idColumn   = [...]string{ops.Msg: "msqid", ops.Sem: "semid", ops.Shm: "shmid"}
	sizeColumn = [...]string{ops.Msg: "", ops.Sem: "nsems", ops.Shm: "size"}
)

// parseSysvipc reads the text of /proc/sysvipc/<t>: a header naming the
// columns, then one object a line in the kernel's iteration order (ascending
// idx). Columns are found by their header names, not their positions.
func parseSysvipc(t ops.IPCType, text []byte) ([]ops.Object, error) {
	header, rest, _ := bytes.Cut(text, []byte("\n"))
	cols := bytes.Fields(header)
	find := func(name string) (int, error) {
		for i, c := range cols {
			if string(c) == name {
				return i, nil
			}
		}
		return -1, fmt.Errorf("/proc/sysvipc/%s: no %q column in header %q", t, name, header)
	}
	var key, id, perms, uid, size int
	var err error
	for _, c := range []struct {
		name string
		at   *int
	}{{"key", &key}, {idColumn[t], &id}, {"perms", &perms}, {"uid", &uid}} {
		if *c.at, err = find(c.name); err != nil {
			return nil, err
		}
	}
	size = -1
	if sizeColumn[t] != "" {
		if size, err = find(sizeColumn[t]); err != nil {
			return nil, err
		}
	}

	var objs []ops.Object
	fields := make([][]byte, 0, len(cols))
	for line := 2; len(rest) > 0; line++ {
		var row []byte
		row, rest, _ = bytes.Cut(rest, []byte("\n"))
		fields = appendFields(fields[:0], row)
		if len(fields) == 0 {
			continue
		}
		if len(fields) != len(cols) {
			return nil, fmt.Errorf("/proc/sysvipc/%s line %d: %d fields, header has %d", t, line, len(fields), len(cols))
		}
		var o ops.Object
		k, err1 := strconv.ParseInt(string(fields[key]), 10, 32)
		i, err2 := strconv.ParseInt(string(fields[id]), 10, 64)
		m, err3 := strconv.ParseUint(string(fields[perms]), 8, 32)
		u, err4 := strconv.ParseUint(string(fields[uid]), 10, 32)
		var err5 error
		if size >= 0 {
			var s uint64
			s, err5 = strconv.ParseUint(string(fields[size]), 10, 63)
			o.Size = int64(s)
		}
		for _, err := range []error{err1, err2, err3, err4, err5} {
			if err != nil {
				return nil, fmt.Errorf("/proc/sysvipc/%s line %d: %w", t, line, err)
			}
		}
		o.ID, o.Key, o.Mode, o.Owner = i, int32(k), uint16(m&0o777), uint32(u)
		objs = append(objs, o)
	}
	return objs, nil
}

// appendFields appends the space-separated fields of row to dst without
// copying them.
func appendFields(dst [][]byte, row []byte) [][]byte {
	for {
		for len(row) > 0 && (row[0] == ' ' || row[0] == '\t') {
			row = row[1:]
		}
		if len(row) == 0 {
			return dst
		}
		n := bytes.IndexAny(row, " \t")
		if n < 0 {
			n = len(row)
		}
		dst = append(dst, row[:n])
		row = row[n:]
	}
}

// parseSemLimits splits /proc/sys/kernel/sem into its four fields: semmsl,
// semmns, semopm, semmni.
func parseSemLimits(text []byte) ([4]int64, error) {
	var v [4]int64
	f := bytes.Fields(text)
	if len(f) != 4 {
		return v, fmt.Errorf("/proc/sys/kernel/sem: want 4 fields, have %q", text)
	}
	for i := range v {
		n, err := strconv.ParseInt(string(f[i]), 10, 64)
		if err != nil {
			return v, fmt.Errorf("/proc/sys/kernel/sem field %d: %w", i+1, err)
		}
		v[i] = n
	}
	return v, nil
}
