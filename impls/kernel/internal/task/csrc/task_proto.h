/* task_proto.h: generated from impls/kernel/internal/task/protocol.go by go generate (TestProtoHeader); do not edit. */
#ifndef IPCFUZZ_TASK_PROTO_H
#define IPCFUZZ_TASK_PROTO_H

/* The task protocol: file descriptors, request kinds and flags, the fatal answer, limits. */
enum {
	TASK_REQ_FD = 3,
	TASK_RESP_FD = 4,
	TASK_CALL = 1,
	TASK_JOIN = 2,
	TASK_TOUCH = 3,
	TASK_TOUCH_FAULT = 14,
	TASK_FORK = 4,
	TASK_FORK_DONE = 5,
	TASK_INTERRUPTIBLE = 1,
	TASK_COVER = 2,
	TASK_COVER_WORDS = 262144,
	TASK_TIME = 4,
	TASK_FATAL = 1,
	TASK_INTERRUPT_SIGNAL = 10,
	TASK_MAX_PAYLOAD = 1048576,
};

/* struct req: field, offset. */
#define TASK_REQ(X) X(kind, 0) X(flags, 4) X(as, 8) X(ptrargs, 12) X(nr, 16) X(args, 24) X(len, 72) X(joinlen, 80)
enum { TASK_REQ_SIZE = 88 };

/* struct resp: field, offset. */
#define TASK_RESP(X) X(r, 0) X(errno, 8) X(fatal, 16) X(len, 24) X(pcs, 32) X(nanos, 40) X(clocks, 48)
enum { TASK_RESP_SIZE = 56 };

/* The only syscalls a task runs. */
#define TASK_SYSCALLS(X) X(29) X(30) X(67) X(31) X(68) X(71) X(69) X(70) X(64) X(66) X(65) X(220) X(9) X(11) X(272)

/* The environment variable that names the worker's namespace. */
#define TASK_ENV "IPCFUZZ_KERNEL_TASK_IPCNS"

#endif /* IPCFUZZ_TASK_PROTO_H */
