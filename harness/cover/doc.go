// Package cover maps the program counters KCOV reports from a guest kernel
// onto the kernel's source: which instrumented blocks of ipc/*.c and of
// the VMA code (mm/mmap.c, mm/vma.c, ...) a run reached, per file, per
// function and per line, and which lines of a patch ran.
//
// Everything comes from the vmlinux, in Go: its ELF symbols give the
// functions and __sanitizer_cov_trace_pc, a disassembly of each covered
// function (golang.org/x/arch/x86/x86asm) gives its calls of it (the
// instrumented blocks; KCOV records each call's return address), and the
// DWARF line tables give each call's file and line. A kernel built
// without CONFIG_KCOV or without debug info is refused, saying so
// (ci/kernel.sh --cover builds one with both).
//
// A line is instrumented when an instrumented block starts on it; it is
// reached when one of those blocks ran. A line of a patch is judged by
// its code: it ran when a block holding some of its code ran (the last
// block that starts before that code in its function).
package cover
