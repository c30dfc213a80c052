/* vma_proto.h: generated from impls/kernel/vma (protocol.go, space.go) and harness/ops (vma.go) by go generate (TestProtoHeader); do not edit. */
#ifndef IPCFUZZ_VMA_PROTO_H
#define IPCFUZZ_VMA_PROTO_H

/* The helper's file descriptors, regions and record sizes (protocol.go). */
enum {
	VMA_REQ_FD = 3,
	VMA_RESP_FD = 4,
	REGION_WINDOW = 0,
	REGION_HEAP = 1,
	REGION_THP = 2,
	REQUEST_SIZE = 56,
	RESPONSE_SIZE = 32,
	OP_TIMED = 1073741824,
};

/* The operations of a request (protocol.go). */
enum {
	OP_MAP = 1,
	OP_UNMAP = 2,
	OP_PROTECT = 3,
	OP_TOUCH = 4,
	OP_ADVISE = 5,
	OP_LOCK = 6,
	OP_UNLOCK = 7,
	OP_REMAP = 8,
	OP_BRK = 9,
	OP_OPEN = 10,
	OP_REOPEN = 11,
	OP_DUP = 12,
	OP_STATE = 13,
	OP_RESET = 14,
	OP_MEASURE = 15,
	OP_SEAL = 16,
	OP_FORK = 17,
	OP_COVER = 18,
	OP_MEMLOCK = 19,
};

/* The helper's refusals, a negative err (protocol.go). */
enum {
	BAD_REQUEST = -1,
	BAD_RANGE = -2,
	BAD_HANDLE = -3,
	HELPER_FAILED = -4,
};

/* The bits of a remap request's a[1] (protocol.go). */
enum {
	REMAP_FIXED = 1,
	REMAP_MAYMOVE = 2,
	REMAP_DONTUNMAP = 4,
};

/* ops.VMAMapFlags, the map request's flags (harness/ops). */
enum {
	MAPF_SHARED = 1,
	MAPF_NORESERVE = 2,
	MAPF_POPULATE = 4,
	MAPF_LOCKED = 8,
	MAPF_STACK = 16,
};

/* ops.VMAQuirks, as the helper reports them (harness/ops). */
enum {
	Q_ANON_MERGE_FIX = 1,
	Q_STICKY_GUARD = 2,
	Q_GUARD_REGIONS = 4,
	Q_ACCOUNT_DROP = 8,
	Q_STACK_NOHUGE = 16,
	Q_EXEC_ONLY_PKEY = 32,
	Q_KSM = 64,
	Q_THP = 128,
	Q_MULTI_MOVE = 256,
	Q_FORK_CHILD_REMAP = 512,
	Q_SOFT_DIRTY = 1024,
	Q_LF_UNNAMED = 2048,
	Q_HEAP_LABEL_INCLUSIVE = 4096,
	Q_MSEAL = 8192,
	Q_REMAP_LOOKUP_FIRST = 16384,
	Q_MMAP_NEXT_FIRST = 32768,
	Q_NO_SWAP = 65536,
	Q_NO_ZERO_PAGE = 131072,
	Q_DONTUNMAP_APART = 262144,
	Q_DONTUNMAP_SELF_MERGE = 524288,
	Q_DONTUNMAP_NO_SPLIT = 1048576,
	Q_DONTUNMAP_PGOFF_KEPT = 2097152,
	Q_POPULATE_IN_WALK = 4194304,
};

/* The MADV_* number of every advice the vocabulary has (space.go). */
enum {
	MADV_NORMAL = 0,
	MADV_RANDOM = 1,
	MADV_SEQUENTIAL = 2,
	MADV_DONTFORK = 10,
	MADV_DOFORK = 11,
	MADV_DONTDUMP = 16,
	MADV_DODUMP = 17,
	MADV_HUGEPAGE = 14,
	MADV_NOHUGEPAGE = 15,
	MADV_WIPEONFORK = 18,
	MADV_KEEPONFORK = 19,
	MADV_MERGEABLE = 12,
	MADV_UNMERGEABLE = 13,
	MADV_DONTNEED = 4,
	MADV_GUARD_INSTALL = 102,
	MADV_GUARD_REMOVE = 103,
	MADV_WILLNEED = 3,
	MADV_COLD = 20,
	MADV_PAGEOUT = 21,
	MADV_FREE = 8,
	MADV_DONTNEED_LOCKED = 24,
	MADV_REMOVE = 9,
	MADV_POPULATE_READ = 22,
	MADV_POPULATE_WRITE = 23,
};

/* The advices the helper takes. */
#define MADV_LIST(X) X(0) X(1) X(2) X(10) X(11) X(16) X(17) X(14) X(15) X(18) X(19) X(12) X(13) X(4) X(102) X(103) X(3) X(20) X(21) X(8) X(24) X(9) X(22) X(23)

#endif /* IPCFUZZ_VMA_PROTO_H */
