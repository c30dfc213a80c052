//go:build linux && amd64

package vm

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// What is not a kernel is refused in one line that names the file.
func TestResolveRefusesWhatIsNotAKernel(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(p, []byte("hello"), 0o644))
	_, err := Resolve(context.Background(), p, dir)
	require.ErrorContains(t, err, p+": not a vmlinux (ELF), a bzImage or a Debian kernel package (.deb)")
	_, err = Resolve(context.Background(), filepath.Join(dir, "nothing"), dir)
	require.ErrorContains(t, err, "nothing: no such file")
}

// An ELF file is booted as it is.
func TestResolveELF(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	img, err := Resolve(context.Background(), self, t.TempDir())
	require.NoError(t, err)
	require.Equal(t, self, img.Kernel)
	require.Empty(t, img.Modules)
}

func TestModuleName(t *testing.T) {
	for file, want := range map[string]string{
		"virtio_pci.ko": "virtio_pci", "virtio-pci.ko.xz": "virtio_pci", "9pnet.ko.zst": "9pnet",
	} {
		got, ok := moduleName(file)
		require.True(t, ok)
		require.Equal(t, want, got)
	}
	_, ok := moduleName("modules.dep")
	require.False(t, ok)
}

// The handshake's address is its fourth field, on a unix socket only.
func TestHandshakeAddr(t *testing.T) {
	a, err := handshakeAddr("1|2|unix|/tmp/plugin123|grpc|")
	require.NoError(t, err)
	require.Equal(t, "/tmp/plugin123", a)
	_, err = handshakeAddr("1|2|tcp|127.0.0.1:1234|grpc|")
	require.Error(t, err)
	_, err = handshakeAddr("hello")
	require.Error(t, err)
}
