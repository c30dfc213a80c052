//go:build linux && amd64

package vm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Image is a kernel to boot, resolved from what the user named.
type Image struct {
	// Path is what the user named.
	Path string
	// Kernel is the file QEMU boots (-kernel): a vmlinux, entered through
	// its PVH note, or a bzImage.
	Kernel string
	// Modules are the modules the guest loads, in order, before it looks
	// for its port (a distribution kernel has virtio as modules).
	Modules []Module
}

// Module is one kernel module to load in the guest.
type Module struct {
	Name string
	Data []byte
}

// The modules the guest needs when they are not built in: the PCI
// transport of virtio and the virtio console (the serial port).
var wantModules = []string{"virtio_pci", "virtio_console"}

// kinds of image file, by their magic.
const (
	kindELF = iota
	kindBzImage
	kindDeb
)

// Resolve reads the image at path: a vmlinux, a bzImage or a Debian
// kernel package. A bzImage's vmlinux, and a package's contents, are
// cached in cacheDir (default os.UserCacheDir()/ipcfuzz/kernels), named
// by a hash of the file.
func Resolve(ctx context.Context, path, cacheDir string) (*Image, error) {
	kind, err := imageKind(path)
	if err != nil {
		return nil, err
	}
	img := &Image{Path: path, Kernel: path}
	if kind == kindELF {
		return img, nil
	}
	dir, err := kernelCache(cacheDir)
	if err != nil {
		return nil, err
	}
	sum, err := fileKey(path)
	if err != nil {
		return nil, err
	}
	bz := path
	if kind == kindDeb {
		root, err := unpackDeb(ctx, path, filepath.Join(dir, "deb-"+sum))
		if err != nil {
			return nil, err
		}
		if bz, err = debKernel(root); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if img.Modules, err = debModules(ctx, root, bz); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		img.Kernel = bz
		if sum, err = fileKey(bz); err != nil {
			return nil, err
		}
	}
	// A vmlinux boots through its PVH entry without decompressing itself,
	// seconds faster under TCG; the bzImage boots where none can be cut out.
	if v, err := extractVmlinux(ctx, bz, filepath.Join(dir, "vmlinux-"+sum)); err == nil {
		img.Kernel = v
	}
	return img, nil
}

// imageKind tells a vmlinux, a bzImage and a .deb apart by their magic.
func imageKind(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("kernel image: %w", err)
	}
	defer f.Close()
	head := make([]byte, 0x210)
	n, _ := io.ReadFull(f, head)
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, []byte("\x7fELF")):
		return kindELF, nil
	case bytes.HasPrefix(head, []byte("!<arch>\ndebian-binary")):
		return kindDeb, nil
	case len(head) >= 0x206 && string(head[0x202:0x206]) == "HdrS":
		return kindBzImage, nil
	}
	return 0, fmt.Errorf("kernel image %s: not a vmlinux (ELF), a bzImage or a Debian kernel package (.deb)", path)
}

// kernelCache is the directory images are cached in.
func kernelCache(dir string) (string, error) {
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			base = filepath.Join(os.TempDir(), fmt.Sprintf("ipcfuzz-cache-%d", os.Getuid()))
		}
		dir = filepath.Join(base, "ipcfuzz", "kernels")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("kernel cache: %w", err)
	}
	return dir, nil
}

// fileKey names a file's version for the cache: 16 hex digits of the
// SHA-256 of its absolute path, size and modification time (hashing a
// 70 MB package at every launch would cost more than the cache saves).
func fileKey(path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("kernel image: %w", err)
	}
	h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%d", abs, fi.Size(), fi.ModTime().UnixNano()))
	return hex.EncodeToString(h[:8]), nil
}

// StrippedInit is prog without its symbols and debug sections (strip -o,
// cached in cacheDir like images), a quarter smaller and so faster for the
// guest to unpack; prog itself where strip is not found or fails.
func StrippedInit(ctx context.Context, prog, cacheDir string) string {
	strip, err := exec.LookPath("strip")
	if err != nil {
		return prog
	}
	dir, err := kernelCache(cacheDir)
	if err != nil {
		return prog
	}
	key, err := fileKey(prog)
	if err != nil {
		return prog
	}
	out := filepath.Join(dir, "init-"+key)
	if _, err := os.Stat(out); err == nil {
		return out
	}
	tmp := out + ".tmp-" + strconv.Itoa(os.Getpid())
	defer os.Remove(tmp)
	if err := exec.CommandContext(ctx, strip, "-o", tmp, prog).Run(); err != nil {
		return prog
	}
	if err := os.Rename(tmp, out); err != nil {
		return prog
	}
	return out
}

// unpackDeb unpacks the package into dir (once: a directory beside it,
// renamed into place, so a concurrent unpack never shows half of it).
func unpackDeb(ctx context.Context, deb, dir string) (string, error) {
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	if _, err := exec.LookPath("dpkg-deb"); err != nil {
		return "", fmt.Errorf("%s: unpacking a Debian package needs dpkg-deb: %w", deb, err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+"-unpack-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if out, err := exec.CommandContext(ctx, "dpkg-deb", "-x", deb, tmp).CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s: dpkg-deb -x: %v: %.200s", deb, err, bytes.TrimSpace(out))
	}
	if err := os.Rename(tmp, dir); err != nil && !errors.Is(err, fs.ErrExist) {
		if _, serr := os.Stat(dir); serr != nil {
			return "", fmt.Errorf("%s: %w", deb, err)
		}
	}
	return dir, nil
}

// debKernel is the package's boot/vmlinuz-*.
func debKernel(root string) (string, error) {
	m, _ := filepath.Glob(filepath.Join(root, "boot", "vmlinuz-*"))
	if len(m) != 1 {
		return "", fmt.Errorf("want one boot/vmlinuz-* in the package, found %d", len(m))
	}
	return m[0], nil
}

// debModules are the modules of wantModules (with what they depend on, in
// load order) that the package's config does not build in.
func debModules(ctx context.Context, root, vmlinuz string) ([]Module, error) {
	release := strings.TrimPrefix(filepath.Base(vmlinuz), "vmlinuz-")
	config, _ := os.ReadFile(filepath.Join(root, "boot", "config-"+release))
	index := map[string]string{}
	base := filepath.Join(root, "lib", "modules", release)
	_ = filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if name, ok := moduleName(d.Name()); ok {
				index[name] = p
			}
		}
		return nil
	})
	var out []Module
	loaded := map[string]bool{}
	var load func(name string, depth int) error
	load = func(name string, depth int) error {
		if loaded[name] || depth > 16 {
			return nil
		}
		loaded[name] = true
		p, ok := index[name]
		if !ok {
			return fmt.Errorf("module %s is not in %s", name, base)
		}
		data, err := readModule(ctx, p)
		if err != nil {
			return err
		}
		for _, dep := range moduleDepends(data) {
			if err := load(dep, depth+1); err != nil {
				return err
			}
		}
		out = append(out, Module{Name: name, Data: data})
		return nil
	}
	for _, m := range wantModules {
		if bytes.Contains(config, []byte("\nCONFIG_"+strings.ToUpper(m)+"=y\n")) {
			continue // built in
		}
		if err := load(m, 0); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// moduleName is a module file's module name ("virtio-pci.ko.xz" is
// virtio_pci).
func moduleName(file string) (string, bool) {
	for _, ext := range []string{".ko", ".ko.xz", ".ko.zst", ".ko.gz"} {
		if n, ok := strings.CutSuffix(file, ext); ok {
			return strings.ReplaceAll(n, "-", "_"), true
		}
	}
	return "", false
}

// readModule reads a module file, decompressed.
func readModule(ctx context.Context, p string) ([]byte, error) {
	tool := map[string]string{".xz": "xz", ".zst": "zstd", ".gz": "gzip"}[filepath.Ext(p)]
	if tool == "" {
		return os.ReadFile(p)
	}
	out, err := exec.CommandContext(ctx, tool, "-dc", p).Output()
	if err != nil {
		return nil, fmt.Errorf("decompressing %s with %s: %w", p, tool, err)
	}
	return out, nil
}

// moduleDepends reads depends= of a module's .modinfo.
func moduleDepends(ko []byte) []string {
	f, err := elf.NewFile(bytes.NewReader(ko))
	if err != nil {
		return nil
	}
	s := f.Section(".modinfo")
	if s == nil {
		return nil
	}
	data, err := s.Data()
	if err != nil {
		return nil
	}
	for _, kv := range bytes.Split(data, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("depends=")); ok && len(v) > 0 {
			return strings.Split(string(v), ",")
		}
	}
	return nil
}

// decompressors are the compressions a bzImage's payload may use: their
// magic and the tool that decompresses a stream of them
// (scripts/extract-vmlinux does the same).
var decompressors = []struct {
	magic []byte
	tool  string
}{
	{[]byte("\xfd7zXZ\x00"), "xz"},
	{[]byte("\x02\x21\x4c\x18"), "lz4"},
	{[]byte("\x1f\x8b\x08"), "gzip"},
	{[]byte("\x28\xb5\x2f\xfd"), "zstd"},
	{[]byte("BZh"), "bzip2"},
}

// extractVmlinux cuts the ELF vmlinux out of a bzImage into out (once).
func extractVmlinux(ctx context.Context, bz, out string) (string, error) {
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	data, err := os.ReadFile(bz)
	if err != nil {
		return "", err
	}
	for _, d := range decompressors {
		if _, err := exec.LookPath(d.tool); err != nil {
			continue
		}
		for off := 0; ; {
			i := bytes.Index(data[off:], d.magic)
			if i < 0 {
				break
			}
			off += i
			cmd := exec.CommandContext(ctx, d.tool, "-dc")
			cmd.Stdin = bytes.NewReader(data[off:])
			elfOut, _ := cmd.Output() // trailing bytes after the stream make it fail after the output
			off++
			if !bytes.HasPrefix(elfOut, []byte("\x7fELF")) {
				continue
			}
			if !hasPVHNote(elfOut) {
				return "", fmt.Errorf("%s: its vmlinux has no PVH entry", bz)
			}
			return out, writeAtomic(out, elfOut)
		}
	}
	return "", fmt.Errorf("%s: no vmlinux found in it", bz)
}

// hasPVHNote reports whether a vmlinux has the Xen PVH entry note
// (XEN_ELFNOTE_PHYS32_ENTRY, 18) QEMU boots it through.
func hasPVHNote(vmlinux []byte) bool {
	f, err := elf.NewFile(bytes.NewReader(vmlinux))
	if err != nil {
		return false
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			continue
		}
		for len(b) >= 12 {
			nameSz, descSz, typ := le32(b), le32(b[4:]), le32(b[8:])
			name := b[12:min(len(b), 12+int(nameSz))]
			if typ == 18 && bytes.HasPrefix(name, []byte("Xen")) {
				return true
			}
			next := 12 + align4(int(nameSz)) + align4(int(descSz))
			if next > len(b) || next <= 0 {
				break
			}
			b = b[next:]
		}
	}
	return false
}

func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}
func align4(n int) int { return (n + 3) &^ 3 }

// writeAtomic writes data to path through a temporary file renamed into
// place.
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// sortedKeys is slices.Sorted over a map's keys (for stable archives).
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
