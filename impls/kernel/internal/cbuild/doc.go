// Package cbuild builds the freestanding C programs of the kernel adapters
// (the task server of package task, the VMA helper of package vma) and
// holds what they share: freestanding.h, their runtime (the syscall
// wrapper, memcpy and memset, string length, exit, whole reads and
// writes), and the writer of the headers that carry Go's constants to C.
//
// # Build design
//
// A program's sources are embedded in the Go binary and compiled at first
// use with the system's C compiler (Options.CC, else $CC, else cc, else
// gcc) into a cache directory (os.UserCacheDir()/ipcfuzz unless
// Options.CacheDir says otherwise), as a static -nostdlib executable named
// after the program and a hash of its sources, freestanding.h and the
// flags; later runs reuse it. A build writes into a temporary directory
// and renames the executable into place, so concurrent builders agree.
// Every program gets the same flags, -Werror among them.
//
// # Constants shared with Go
//
// A number both sides must agree on (a protocol's operation codes, a quirk
// bit, an madvise advice) is written in Go only. Each package that drives
// a program writes its header (csrc/*_proto.h) from its Go tables with
// Header, in a test that fails when the committed header differs from what
// the tables give: go generate ./impls/kernel/... rewrites them.
package cbuild
