package kernel

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/ipcfuzz/ipcfuzz/harness/ops"
)

// parseSysvipc reads the text of /proc/sysvipc/<t>: a header naming the
// columns, then one object a line in the kernel's iteration order (ascending
// idx). Columns are found by their header names, not their positions; every
// column of ops.RowColumns(t) must be there. pid translates the pids the
// kernel prints into task identities.
func parseSysvipc(t ops.IPCType, text []byte, pid func(int64) ops.PID) ([]ops.Row, error) {
	header, rest, _ := bytes.Cut(text, []byte("\n"))
	cols := bytes.Fields(header)
	want := ops.RowColumns(t)
	at := make([]int, len(want))
	for i, name := range want {
		at[i] = -1
		for j, c := range cols {
			if string(c) == name {
				at[i] = j
			}
		}
		if at[i] < 0 {
			return nil, fmt.Errorf("/proc/sysvipc/%s: no %q column in header %q", t, name, header)
		}
	}
	var rows []ops.Row
	fields := make([][]byte, 0, len(cols))
	for line := 2; len(rest) > 0; line++ {
		var text []byte
		text, rest, _ = bytes.Cut(rest, []byte("\n"))
		fields = appendFields(fields[:0], text)
		if len(fields) == 0 {
			continue
		}
		if len(fields) != len(cols) {
			return nil, fmt.Errorf("/proc/sysvipc/%s line %d: %d fields, header has %d", t, line, len(fields), len(cols))
		}
		var r ops.Row
		for i, name := range want {
			if err := setColumn(&r, name, string(fields[at[i]]), pid); err != nil {
				return nil, fmt.Errorf("/proc/sysvipc/%s line %d column %s: %w", t, line, name, err)
			}
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// setColumn stores the value of one /proc/sysvipc column in r.
func setColumn(r *ops.Row, name, v string, pid func(int64) ops.PID) error {
	if name == "perms" {
		m, err := strconv.ParseUint(v, 8, 16)
		r.Mode = uint16(m)
		return err
	}
	if name == "key" {
		k, err := strconv.ParseInt(v, 10, 32)
		r.Key = int32(k)
		return err
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return err
	}
	switch name {
	case "msqid", "semid", "shmid":
		r.ID = n
	case "size", "nsems", "cbytes":
		r.Size = n
	case "qnum":
		r.Qnum = n
	case "cpid", "lspid":
		r.Cpid = pid(n)
	case "lpid", "lrpid":
		r.Lpid = pid(n)
	case "nattch":
		r.Nattch = n
	case "uid":
		r.UID = uint32(n)
	case "gid":
		r.GID = uint32(n)
	case "cuid":
		r.CUID = uint32(n)
	case "cgid":
		r.CGID = uint32(n)
	case "atime", "stime", "otime":
		r.Atime = n != 0
	case "dtime", "rtime":
		r.Dtime = n != 0
	case "ctime":
		r.Ctime = n != 0
	case "rss":
		r.RSS = n
	case "swap":
		r.Swap = n
	default:
		return fmt.Errorf("unknown column")
	}
	return nil
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
