// Package vma runs the VMA operations of ipcfuzz on the real kernel.
//
// The operations never run in a Go process: the runtime maps, reserves and
// madvises memory on other threads at any time, so neither the layout nor
// the merges would be the script's alone. They run in vmahelper, a small
// freestanding C program (csrc/vmahelper.c) with no libc, no
// loader, no threads and no allocation at all: static buffers and raw
// syscalls. Its address space holds its text, data and bss, the stack, the
// vDSO, and what the script maps; nothing else ever moves.
//
// # Build design
//
// The C source is embedded in the Go binary and compiled at first use by
// package cbuild (the same routine and flags as the kernel task server,
// -Werror among them) with the system's C compiler (Options.CC, $CC, cc,
// else gcc) into a cache directory (os.UserCacheDir()/ipcfuzz, named by a
// hash of the sources and flags), as a static -nostdlib executable; later
// runs reuse it. The helper's runtime (syscalls, memcpy, whole reads and
// writes) is cbuild's freestanding.h; the numbers it shares with Go (the
// protocol's operations and refusals, the map flags, the quirk bits, the
// MADV_* numbers) come from csrc/vma_proto.h, which proto_test.go writes
// from the Go tables and checks (go generate). This was chosen over
// a cgo constructor that takes over a re-executed Go binary (runc's nsenter
// technique) because that would make the whole module need cgo (and
// dynamic libc) for one subsystem, and the helper would still carry the Go
// binary's tens of megabytes of mappings and libc's own brk and TLS set-up;
// a freestanding helper starts with an empty heap (start_brk == brk, the
// case vma-spec §6.9 warns about, made the rule) and a handful of VMAs. It
// works the same in go test binaries. Without a C compiler Start fails with
// one line wrapping ErrNoCompiler.
//
// # The helper's life
//
// The helper is started from an OS thread locked for its whole life (a
// parent-death signal fires when the thread that forked the child exits),
// with PR_SET_PDEATHSIG set to SIGKILL both by the Go side and by the
// helper itself, which also checks that its parent is still the one that
// started it: it never outlives the process driving it, even one killed
// with SIGKILL. At start it checks that the window (a page above it and as
// many pages below it as it has) and the THP area (Options.THPBase, 2 MiB
// aligned, 1 GiB above the window by default) are free with
// MAP_FIXED_NOREPLACE, and
// refuses in one line if not;
// finds start_brk in /proc/self/stat and checks that the heap area (and the
// page below start_brk) is free, so that no VMA of the program itself can
// merge with the heap; then probes the kernel's version-dependent rules
// (ops.VMAQuirks) in the window and leaves it empty.
//
// # The heap
//
// The helper's own heap is the brk area. Being freestanding, the helper
// never calls brk itself: the initial break is start_brk and the heap is
// absent. With address space randomization (randomize_va_space=2) the
// kernel leaves at least a page between the bss and start_brk, which the
// helper checks; the heap's observable is relative to the initial break
// (ops.VMA.Heap) and so the same on every run.
//
// # Moves the kernel places
//
// mremap with MREMAP_MAYMOVE and no MREMAP_FIXED takes its new address from
// get_unmapped_area, which searches top-down below mmap_base. For that call
// only, the helper fills every gap from the window's end to a little below
// its stack with a PROT_NONE mapping of a file of its own (which merges
// with nothing), so the highest gap that fits is the window's, or the one
// at its bottom, which goes on below the window; a range that lands there
// is unmapped at once. The models place it by the same rule.
//
// # Requests sent ahead
//
// A script's requests do not wait for each other's answers: Pipeline (the
// vma part's Run, when nothing is observed per operation) writes the
// request of each operation up to the first whose call sends none of its
// own or must act on its answer first (a fork; requestOf), and the final
// state's, in one write; the helper runs
// them back to back, and each call then only checks that its request is
// the next one sent and reads its answer. A call out of that order breaks
// the helper; a reset reads and drops the answers no call read.
//
// # Seals
//
// A sealed VMA stays for the life of the process: a reset that cannot
// unmap the window, the heap area or the THP area says EPERM, and Restarting replaces
// the helper by a new one (which checks the window and probes the quirks
// again) before the next script.
//
// # Reset
//
// Reset unmaps the window, the heap area and the THP area, puts the break back at
// start_brk (giving the shrink a page to unmap if the script unmapped the
// heap under the break) and closes every file. That returns the layout to
// the initial state exactly: the tests run a thousand scripts on one
// helper and check nothing outside the window changed and every state
// after a reset is empty. What survives a reset is kernel state that no
// layout shows: the execute-only protection key stays allocated (the
// quirk probe allocates it at start, so every script sees the same), and
// the mm stays registered with KSM and khugepaged.
package vma
