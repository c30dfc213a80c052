package vm

import (
	"fmt"
	"io"
	"path"
	"strings"
)

// cpioWriter writes a newc ("070701") cpio archive, the format the
// kernel unpacks as an initramfs (Documentation/driver-api/early-userspace/
// buffer-format.rst). Every entry belongs to root; directories are made as
// files need them.
type cpioWriter struct {
	w    io.Writer
	ino  int
	dirs map[string]bool
	err  error
}

func newCPIO(w io.Writer) *cpioWriter {
	return &cpioWriter{w: w, dirs: map[string]bool{".": true, "/": true}}
}

// file adds a regular file at name (an absolute guest path) with mode perm.
func (c *cpioWriter) file(name string, perm uint32, data []byte) error {
	name = strings.TrimPrefix(path.Clean("/"+name), "/")
	c.mkdirs(path.Dir(name))
	c.entry(name, 0o100000|perm, data)
	return c.err
}

// dir adds a directory (and its parents).
func (c *cpioWriter) dir(name string) error {
	c.mkdirs(strings.TrimPrefix(path.Clean("/"+name), "/"))
	return c.err
}

func (c *cpioWriter) mkdirs(dir string) {
	if dir == "" || c.dirs[dir] {
		return
	}
	c.mkdirs(path.Dir(dir))
	c.dirs[dir] = true
	c.entry(dir, 0o040755, nil)
}

// close writes the trailer.
func (c *cpioWriter) close() error {
	c.entry("TRAILER!!!", 0, nil)
	return c.err
}

func (c *cpioWriter) entry(name string, mode uint32, data []byte) {
	if c.err != nil {
		return
	}
	c.ino++
	nlink := 1
	if mode&0o040000 != 0 {
		nlink = 2
	}
	hdr := fmt.Sprintf("070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
		c.ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(name)+1, 0)
	c.write([]byte(hdr + name + "\x00"))
	c.pad(len(hdr) + len(name) + 1)
	c.write(data)
	c.pad(len(data))
}

func (c *cpioWriter) write(b []byte) {
	if c.err == nil && len(b) > 0 {
		_, c.err = c.w.Write(b)
	}
}

// pad writes the zeros that bring n up to a multiple of 4.
func (c *cpioWriter) pad(n int) {
	c.write(make([]byte, (4-n%4)%4))
}
