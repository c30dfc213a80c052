// Package vm runs the kernel side inside a guest booted from a kernel
// image: any kernel becomes a side, the stock one beside a patched one
// (docs/kernel-images.md is the user's guide).
//
// A Backend (backend.go) boots a Spec into a Guest whose plugin serves;
// QEMU is the first (package kernel's QEMU, on Boot here). Every backend
// keeps the guest protocol of protocol.go: /init's environment, the port
// PortName and the console's ready line.
//
// The host builds the guest's whole initramfs itself (initramfs in
// boot.go, the cpio writer in cpio.go): the
// ipcfuzz binary as /init, the C helpers at the paths where the guest's
// adapter looks for them, the modules a distribution kernel needs for its
// virtio-serial port, nothing else. It boots QEMU (boot.go) with
// -nodefaults, KVM where the CPU really has it and TCG otherwise
// (accel.go), the plugin's gRPC on a virtio-serial port whose host end is
// an abstract unix socket of QEMU's: the host's go-plugin client reattaches
// to it, with no relay process and no file. The initramfs lives in a memfd;
// QEMU gets a parent-death signal: a host killed with SIGKILL leaves no
// QEMU, no socket and no temporary file.
//
// In the guest, /init (guest.go) mounts what the adapter reads, loads the
// modules, measures how much slower than the host it runs, starts the
// plugin server (ipcfuzz plugin serve kernel) and copies bytes between its
// unix socket and the port; it says "ready" on the console, and powers the
// guest off when the plugin exits. Run boots a guest whose /init runs one
// static program instead (a C reproducer: ipcfuzz repro --run) and reads
// how it exited from the console.
//
// Images (image.go): a vmlinux (booted through its PVH entry), a bzImage
// (its vmlinux is cut out and cached when the tools to decompress it are
// here), or a Debian kernel package (.deb: unpacked into the cache, its
// virtio modules loaded in their depends= order).
package vm
