// Package ops is the vocabulary every side of ipcfuzz shares: the operations a
// script can issue, their results, the observable state of an implementation,
// and the canonical text form of all three.
//
// It is the ground floor of the project and imports nothing of ours. Each
// subsystem adds its operations in a file of its own (ids.go for the SysV IPC
// id allocator and /proc/sysvipc listings).
package ops
