/*
 * ipcfuzz kernel task server: one task process (t1..t15) of the kernel
 * adapter, for x86-64 Linux, freestanding (no libc, one thread; the runtime
 * is freestanding.h). It speaks the protocol of protocol.go, whose
 * constants and layouts task_proto.h carries: on TASK_REQ_FD a request
 * (struct req, then len payload bytes), on TASK_RESP_FD the response
 * (struct resp, then the payload as the call left it). A request runs one
 * SysV IPC syscall (every argument whose bit is set in ptrargs is an offset
 * into the payload), optionally as another user and interruptible by
 * TASK_INTERRUPT_SIGNAL, or joins the IPC namespace whose /proc path is the
 * payload; a call whose joinlen is not 0 first joins the namespace whose
 * path is the last joinlen bytes of its payload. The end of the requests
 * is the task's exit. A touch request reads or writes one byte at an
 * address (an shm window or attachment of the task) and answers
 * errno=TASK_TOUCH_FAULT when the access took SIGSEGV, which the task
 * catches. A call or a join with TASK_COVER in its flags is traced with
 * KCOV: the program counters of its syscall (or of the join's open and
 * setns) follow the payload (pcs of them). A call with TASK_TIME in its
 * flags answers the CPU time of its syscall in nanos, and the clock reads
 * that took in clocks. Anything
 * it cannot do as asked is fatal: it answers fatal=TASK_FATAL and exits 2.
 */

#include "freestanding.h"
#include "task_proto.h"

enum {
	SYS_close = 3, SYS_rt_sigaction = 13, SYS_rt_sigprocmask = 14, SYS_rt_sigreturn = 15,
	SYS_getpid = 39, SYS_getgroups = 115, SYS_setgroups = 116, SYS_setresuid = 117,
	SYS_getresuid = 118, SYS_setresgid = 119, SYS_getresgid = 120, SYS_getppid = 110,
	SYS_capget = 125, SYS_prctl = 157, SYS_gettid = 186, SYS_openat = 257,
	SYS_readlinkat = 267, SYS_setns = 308, SYS_clone = 56, SYS_dup2 = 33, SYS_pipe2 = 293,
	SYS_mmap = 9, SYS_munmap = 11, SYS_ioctl = 16, SYS_clock_gettime = 228,
};

enum { CLOCK_THREAD_CPUTIME_ID = 3 };
enum { AT_FDCWD = -100, O_RDONLY_CLOEXEC = 02000000, CLONE_NEWIPC = 0x08000000 };
enum { SIG_SETMASK = 2, SA_RESTORER = 0x04000000, SA_RESTART = 0x10000000 };
enum { CLONE_PARENT = 0x8000, SIGCHLD = 17, PR_SET_NAME = 15 };
enum { PR_SET_PDEATHSIG = 1, PR_GET_DUMPABLE = 3, PR_SET_DUMPABLE = 4, SIGKILL = 9 };
enum { MAX_GROUPS = 256, NS_LEN = 64 };

struct req {
	u32 kind, flags, as, ptrargs;
	u64 nr;
	u64 args[6];
	u64 len;
	u32 joinlen, pad;
};

struct resp {
	u64 r, errno, fatal, len, pcs, nanos, clocks;
};

/* The layouts are the Go side's (task_proto.h). */
#define REQ_AT(f, off) _Static_assert(__builtin_offsetof(struct req, f) == off, "struct req." #f);
#define RESP_AT(f, off) _Static_assert(__builtin_offsetof(struct resp, f) == off, "struct resp." #f);
TASK_REQ(REQ_AT)
TASK_RESP(RESP_AT)
_Static_assert(sizeof(struct req) == TASK_REQ_SIZE, "struct req");
_Static_assert(sizeof(struct resp) == TASK_RESP_SIZE, "struct resp");

struct creds {
	u32 ruid, euid, suid, rgid, egid, sgid;
	i64 ngroups;
	u32 groups[MAX_GROUPS];
	u32 cap[6];
	i64 dumpable;
};

static __attribute__((noreturn)) void fail(const char *msg) { die_msg(2, "ipcfuzz kernel task: ", msg); }

/* read_full reads n bytes; 0 at once is the end (returns 0), else 1. */
static int read_full(int fd, void *b, u64 n)
{
	switch (read_all(fd, b, n)) {
	case 1:
		return 1;
	case 0:
		return 0;
	case -2:
		fail("a request cut short");
	}
	fail("reading a request");
}

static void write_full(int fd, const void *b, u64 n)
{
	if (write_all(fd, b, n) < 0)
		fail("writing a response");
}

static int allowed(u64 nr)
{
#define ALLOWED(n) case n:
	switch (nr) {
	TASK_SYSCALLS(ALLOWED)
		return 1;
	}
	return 0;
}

static void handler(int sig) { (void)sig; }

/* touch_read(addr) and touch_write(addr, v) access one byte; a SIGSEGV at
 * the access resumes at touch_fault, which returns -1 to their caller. */
__asm__(".text\n"
	"touch_read:\n"
	"touch_read_at:\n"
	"	movzbl (%rdi), %eax\n"
	"	ret\n"
	"touch_write:\n"
	"touch_write_at:\n"
	"	movb %sil, (%rdi)\n"
	"	xor %eax, %eax\n"
	"	ret\n"
	"touch_fault:\n"
	"	mov $-1, %rax\n"
	"	ret\n");
long touch_read(u64 addr);
long touch_write(u64 addr, u64 v);
extern char touch_read_at[], touch_write_at[], touch_fault[];

enum { SIGSEGV = 11, SA_SIGINFO = 4, UC_RIP = 168 /* uc_mcontext.rip in struct ucontext */ };

struct sigact {
	long h;
	u64 flags;
	long r;
	u64 mask;
};

/* segv sends a fault of a touch to touch_fault; any other fault kills the
 * task (the default action, once the handler returns and it faults again). */
static void segv(int sig, void *info, void *uc)
{
	(void)info;
	u64 *rip = (u64 *)((char *)uc + UC_RIP);
	if (*rip == (u64)touch_read_at || *rip == (u64)touch_write_at) {
		*rip = (u64)touch_fault;
		return;
	}
	struct sigact dfl = {0, 0, 0, 0};
	sys6(SYS_rt_sigaction, sig, (long)&dfl, 0, 8, 0, 0);
}

__asm__(".text\n"
	"restorer:\n"
	"	mov $15, %rax\n"
	"	syscall\n");
void restorer(void);

static int read_creds(struct creds *c)
{
	struct {
		u32 version;
		int pid;
	} hdr = {0x20080522, 0};
	if (sys3(SYS_getresuid, &c->ruid, &c->euid, &c->suid) < 0 ||
	    sys3(SYS_getresgid, &c->rgid, &c->egid, &c->sgid) < 0)
		return 0;
	c->ngroups = sys3(SYS_getgroups, MAX_GROUPS, c->groups, 0);
	c->dumpable = sys3(SYS_prctl, PR_GET_DUMPABLE, 0, 0);
	return c->ngroups >= 0 && c->dumpable >= 0 && sys3(SYS_capget, &hdr, c->cap, 0) == 0;
}

static int same_creds(const struct creds *a, const struct creds *b)
{
	return a->ruid == b->ruid && a->euid == b->euid && a->suid == b->suid && a->rgid == b->rgid &&
	       a->egid == b->egid && a->sgid == b->sgid && a->ngroups == b->ngroups &&
	       mem_eq(a->groups, b->groups, (u64)a->ngroups * 4) && mem_eq(a->cap, b->cap, sizeof(a->cap)) &&
	       a->dumpable == b->dumpable;
}

static struct creds self, now;

/* become_user switches to the unprivileged uid = gid = id, no groups; the
 * real and saved ids stay root, which lets restore switch back. */
static int become_user(u32 id)
{
	if (self.euid != 0 || id == 0xffffffffu)
		return 0;
	if (self.ngroups > 0 && sys3(SYS_setgroups, 0, 0, 0) < 0)
		return 0;
	return sys3(SYS_setresgid, -1, id, -1) == 0 && sys3(SYS_setresuid, -1, id, -1) == 0;
}

static int restore(void)
{
	if (sys3(SYS_setresuid, -1, self.euid, -1) < 0)
		return 0;
	if (self.ngroups > 0 && sys3(SYS_setgroups, self.ngroups, self.groups, 0) < 0)
		return 0;
	if (sys3(SYS_setresgid, -1, self.egid, -1) < 0 || sys3(SYS_prctl, PR_SET_DUMPABLE, self.dumpable, 0) < 0)
		return 0;
	return read_creds(&now) && same_creds(&now, &self);
}

static long parent;

/* rearm sets the parent-death signal again after a change of effective
 * ids, which clears it (commit_creds): a task asleep as another user when
 * its plugin dies must die too. A parent that died in between is seen by
 * its pid. */
static void rearm(void)
{
	if (sys3(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0) < 0)
		fail("setting the parent-death signal");
	if (sys3(SYS_getppid, 0, 0, 0) != parent)
		die(3);
}

static char my_ns[NS_LEN];

static long ns_of(const char *path, char *out)
{
	long n = sys6(SYS_readlinkat, AT_FDCWD, (long)path, (long)out, NS_LEN - 1, 0, 0);
	if (n >= 0)
		out[n] = 0;
	return n;
}

static int in_ns(const char *want)
{
	return ns_of("/proc/thread-self/ns/ipc", my_ns) > 0 && mem_eq(my_ns, want, slen(want) + 1);
}

static char path[4096], want_ns[NS_LEN];

/* join moves this task into the namespace at p (len bytes); the result is
 * an errno, or -1 when it got somewhere else than asked. */
static long join(const char *p, u64 len)
{
	if (len >= sizeof(path))
		return -1;
	memcpy(path, p, len);
	path[len] = 0;
	long fd = sys6(SYS_openat, AT_FDCWD, (long)path, O_RDONLY_CLOEXEC, 0, 0, 0);
	if (fd < 0)
		return -fd;
	long r = sys3(SYS_setns, fd, CLONE_NEWIPC, 0);
	sys3(SYS_close, fd, 0, 0);
	if (r < 0)
		return -r;
	if (ns_of(path, want_ns) <= 0 || !in_ns(want_ns))
		return -1;
	return 0;
}

static char buf[TASK_MAX_PAYLOAD + 64] __attribute__((aligned(16)));

/*
 * KCOV (Documentation/dev-tools/kcov.rst), enabled at the first call that
 * asks for coverage (TASK_COVER) and kept for the task's life: the buffer
 * is mapped where the kernel places it, outside the shm window. KCOV is
 * per task: a forked child drops the parent's buffer (fork_task) and
 * enables its own at its first covered call. Where the kernel has none
 * (no /sys/kernel/debug/kcov) a covered call answers 0 PCs, and the open
 * is not tried again. Without TASK_COVER nothing is opened or read.
 */
enum {
	KCOV_INIT_TRACE = 0x80086301, KCOV_ENABLE = 0x6364, KCOV_TRACE_PC = 0, ENOENT = 2,
	O_RDWR_CLOEXEC = 02000002, PROT_READ_WRITE = 3, MAP_SHARED = 1,
};
static u64 *kcov_area;
static long kcov_fd = -1;
static int kcov_absent;

/* kcov_enable enables KCOV for this task: 0, or an errno (ENOENT where
 * the kernel has no KCOV). */
static long kcov_enable(void)
{
	long fd = sys3(SYS_openat, AT_FDCWD, "/sys/kernel/debug/kcov", O_RDWR_CLOEXEC);
	if (fd < 0)
		return -fd;
	long e = sys3(SYS_ioctl, fd, KCOV_INIT_TRACE, TASK_COVER_WORDS);
	if (e < 0)
		goto fail;
	long a = sys6(SYS_mmap, 0, TASK_COVER_WORDS * 8, PROT_READ_WRITE, MAP_SHARED, fd, 0);
	if (a < 0 && a > -4096) {
		e = a;
		goto fail;
	}
	e = sys3(SYS_ioctl, fd, KCOV_ENABLE, KCOV_TRACE_PC);
	if (e < 0) {
		sys3(SYS_munmap, a, TASK_COVER_WORDS * 8, 0);
		goto fail;
	}
	kcov_area = (u64 *)a;
	kcov_fd = fd;
	return 0;
fail:
	sys3(SYS_close, fd, 0, 0);
	return -e;
}

/* kcov_drop unmaps and closes the buffer a forked child inherited: it
 * traces the parent. */
static void kcov_drop(void)
{
	if (kcov_area) {
		sys3(SYS_munmap, kcov_area, TASK_COVER_WORDS * 8, 0);
		sys3(SYS_close, kcov_fd, 0, 0);
	}
	kcov_area = 0;
	kcov_fd = -1;
}

/* kcov_ready makes sure KCOV traces this task before a covered call: 1
 * when it does, 0 where the kernel has none; any other failure is fatal. */
static int kcov_ready(void)
{
	if (kcov_area)
		return 1;
	if (kcov_absent)
		return 0;
	long e = kcov_enable();
	if (e == ENOENT) {
		kcov_absent = 1;
		return 0;
	}
	if (e != 0)
		fail("enabling KCOV on /sys/kernel/debug/kcov");
	return 1;
}

/* fork_ends are this task's ends of the last fork's pipes (the child's
 * request-pipe write end, its response-pipe read end), kept until the
 * owner has taken them (TASK_FORK_DONE); -1 when none. */
static long fork_ends[2] = {-1, -1};

static void close_fork_ends(void)
{
	for (int i = 0; i < 2; i++) {
		if (fork_ends[i] >= 0)
			sys3(SYS_close, fork_ends[i], 0, 0);
		fork_ends[i] = -1;
	}
}

/*
 * fork_task forks with CLONE_PARENT, so that the child is a child of this
 * task's parent (the owner's thread): its parent-death signal fires with
 * it, and the owner reaps it. It returns 0 in the child, which then serves
 * its own pipes (fds TASK_REQ_FD and TASK_RESP_FD again) and never answers
 * this request; in the task it fills a (R the child's pid, the payload the
 * fds of the pipe ends the owner takes).
 */
static long fork_task(struct resp *a, u64 len)
{
	int rq[2], rs[2];
	close_fork_ends();
	if (len < 16 || sys3(SYS_pipe2, (long)rq, 0, 0) < 0) {
		a->fatal = TASK_FATAL;
		return -1;
	}
	if (sys3(SYS_pipe2, (long)rs, 0, 0) < 0) {
		sys3(SYS_close, rq[0], 0, 0);
		sys3(SYS_close, rq[1], 0, 0);
		a->fatal = TASK_FATAL;
		return -1;
	}
	long c = sys6(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0, 0);
	if (c == 0) {
		if (sys3(SYS_dup2, rq[0], TASK_REQ_FD, 0) < 0 || sys3(SYS_dup2, rs[1], TASK_RESP_FD, 0) < 0)
			die(3);
		for (int i = 0; i < 2; i++) {
			sys3(SYS_close, rq[i], 0, 0);
			sys3(SYS_close, rs[i], 0, 0);
		}
		rearm();
		kcov_drop();
		/* ps and the tests tell a forked task by its name. */
		sys3(SYS_prctl, PR_SET_NAME, (long)"ipcfuzz-forked", 0);
		return 0;
	}
	sys3(SYS_close, rq[0], 0, 0);
	sys3(SYS_close, rs[1], 0, 0);
	if (c < 0) {
		sys3(SYS_close, rq[1], 0, 0);
		sys3(SYS_close, rs[0], 0, 0);
		a->errno = (u64)-c;
		return c;
	}
	fork_ends[0] = rq[1];
	fork_ends[1] = rs[0];
	u64 fds[2] = {(u64)rq[1], (u64)rs[0]};
	memcpy(buf, fds, sizeof fds);
	a->r = (u64)c;
	return c;
}

/* The clock's reads, each a system call (struct resp's clocks). */
static u64 clock_reads;

/* The thread's CPU time in nanoseconds (0 where it cannot be read). */
static u64 cpu_ns(void)
{
	clock_reads++;
	struct {
		i64 s, ns;
	} t = {0, 0};
	if (sys2(SYS_clock_gettime, CLOCK_THREAD_CPUTIME_ID, &t) < 0)
		return 0;
	return (u64)t.s * 1000000000ul + (u64)t.ns;
}

/* What two reads of the clock alone measure (the end of the first and the
 * start of the second), the least of 4 pairs, measured at the first timed
 * call: a timed call's time is what lies between them less this. */
static u64 clock_cost = ~0ul;

static u64 read_cost(void)
{
	if (clock_cost == ~0ul) {
		for (int i = 0; i < 4; i++) {
			u64 a = cpu_ns(), b = cpu_ns();
			if (b - a < clock_cost)
				clock_cost = b - a;
		}
	}
	return clock_cost;
}

static void serve(void)
{
	for (;;) {
		struct req q;
		struct resp a = {0, 0, 0, 0, 0, 0, 0};
		if (!read_full(TASK_REQ_FD, &q, sizeof(q)))
			return;
		if (q.len > TASK_MAX_PAYLOAD)
			fail("a request too large");
		if (q.len > 0 && !read_full(TASK_REQ_FD, buf, q.len))
			fail("a request without its payload");
		a.len = q.len;
		if ((q.kind == TASK_CALL || q.kind == TASK_FORK) && q.joinlen > 0) {
			/* the first call of a script joins its namespace first */
			if (q.joinlen > q.len || join(buf + q.len - q.joinlen, q.joinlen) != 0)
				fail("could not join the namespace a call names");
		}
		if (q.kind == TASK_TOUCH) {
			long r = q.args[1] ? touch_write(q.args[0], q.args[2]) : touch_read(q.args[0]);
			if (r < 0)
				a.errno = TASK_TOUCH_FAULT;
			else
				a.r = (u64)r;
		} else if (q.kind == TASK_FORK) {
			if (fork_task(&a, q.len - q.joinlen) == 0)
				continue; /* the child: its owner reads it on the new pipes */
		} else if (q.kind == TASK_FORK_DONE) {
			close_fork_ends();
		} else if (q.kind == TASK_JOIN) {
			/* a script's setns: traced as a call is (ipcns_install) */
			int cover = (q.flags & TASK_COVER) && kcov_ready();
			if (cover)
				__atomic_store_n(&kcov_area[0], 0, __ATOMIC_RELAXED);
			long e = join(buf, q.len);
			if (cover) {
				a.pcs = __atomic_load_n(&kcov_area[0], __ATOMIC_RELAXED);
				if (a.pcs > TASK_COVER_WORDS - 1)
					a.pcs = TASK_COVER_WORDS - 1;
			}
			if (e < 0)
				a.fatal = TASK_FATAL;
			else
				a.errno = (u64)e;
		} else if (q.kind != TASK_CALL || !allowed(q.nr)) {
			a.fatal = TASK_FATAL;
		} else {
			u64 args[6];
			for (int i = 0; i < 6; i++) {
				args[i] = q.args[i];
				if (q.ptrargs & (1u << i)) {
					if (args[i] >= q.len)
						a.fatal = TASK_FATAL;
					args[i] += (u64)buf;
				}
			}
			/* before the switch of user: debugfs is root's */
			int cover = !a.fatal && (q.flags & TASK_COVER) && kcov_ready();
			if (!a.fatal && q.as != 0 && !become_user(q.as))
				a.fatal = TASK_FATAL;
			if (!a.fatal && q.as != 0)
				rearm();
			if (!a.fatal) {
				u64 mask = ~0ul, old = 0;
				if (q.flags & TASK_INTERRUPTIBLE)
					mask &= ~(1ul << (TASK_INTERRUPT_SIGNAL - 1));
				if (sys6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&mask, (long)&old, 8, 0, 0) < 0)
					a.fatal = TASK_FATAL;
				int timed = (q.flags & TASK_TIME) != 0;
				u64 reads = clock_reads;
				u64 cost = timed ? read_cost() : 0;
				if (cover)
					__atomic_store_n(&kcov_area[0], 0, __ATOMIC_RELAXED);
				u64 t0 = timed ? cpu_ns() : 0;
				long r = sys6((long)q.nr, (long)args[0], (long)args[1], (long)args[2], (long)args[3],
					      (long)args[4], (long)args[5]);
				u64 t1 = timed ? cpu_ns() : 0;
				if (t1 > t0 + cost)
					a.nanos = t1 - t0 - cost;
				a.clocks = clock_reads - reads;
				if (cover) {
					a.pcs = __atomic_load_n(&kcov_area[0], __ATOMIC_RELAXED);
					if (a.pcs > TASK_COVER_WORDS - 1)
						a.pcs = TASK_COVER_WORDS - 1;
				}
				if (sys6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&old, 0, 8, 0, 0) < 0)
					a.fatal = TASK_FATAL;
				if (r < 0 && r > -4096)
					a.errno = (u64)-r;
				else
					a.r = (u64)r;
			}
			if (q.as != 0 && !restore())
				a.fatal = TASK_FATAL;
			if (q.as != 0)
				rearm();
		}
		if (q.len <= 4096) {
			static char out[sizeof(struct resp) + 4096];
			memcpy(out, &a, sizeof(a));
			memcpy(out + sizeof(a), buf, q.len);
			write_full(TASK_RESP_FD, out, sizeof(a) + q.len);
		} else {
			write_full(TASK_RESP_FD, &a, sizeof(a));
			write_full(TASK_RESP_FD, buf, q.len);
		}
		if (a.pcs > 0)
			write_full(TASK_RESP_FD, kcov_area + 1, a.pcs * 8);
		if (a.fatal)
			fail("could not run a request as asked");
	}
}

static const char ENV[] = TASK_ENV "=";

__attribute__((used)) void cmain(long *sp)
{
	long argc = sp[0];
	char **envp = (char **)(sp + 1 + argc + 1);
	const char *want = 0;
	for (; *envp; envp++)
		if (mem_eq(*envp, ENV, sizeof(ENV) - 1))
			want = *envp + sizeof(ENV) - 1;
	if (!want)
		fail("no namespace named in the environment");
	if (sys3(SYS_gettid, 0, 0, 0) != sys3(SYS_getpid, 0, 0, 0))
		fail("not the main thread");
	if (!in_ns(want))
		fail("not in the worker's IPC namespace: refusing to run");
	if (!read_creds(&self))
		fail("reading my credentials");
	parent = sys3(SYS_getppid, 0, 0, 0);
	struct {
		void (*h)(int);
		u64 flags;
		void (*r)(void);
		u64 mask;
	} act = {handler, SA_RESTORER | SA_RESTART, restorer, 0};
	if (sys6(SYS_rt_sigaction, TASK_INTERRUPT_SIGNAL, (long)&act, 0, 8, 0, 0) < 0)
		fail("installing the interrupt handler");
	struct sigact sa = {(long)segv, SA_SIGINFO | SA_RESTORER, (long)restorer, 0};
	if (sys6(SYS_rt_sigaction, SIGSEGV, (long)&sa, 0, 8, 0, 0) < 0)
		fail("installing the fault handler");
	/* A task shares the process group of the process that started it (a
	 * test binary, a plugin): Ctrl-C, or timeout -s INT signalling the
	 * group, must not end it in the middle of a script. It ends with its
	 * requests, or by SIGKILL (its parent-death signal, or its group being
	 * killed). SIGPIPE too: a response nobody reads is an error, not a
	 * silent death. */
	static const int job_signals[] = {1, 2, 3, 13, 15}; /* HUP INT QUIT PIPE TERM */
	struct {
		long h;
		u64 flags;
		long r;
		u64 mask;
	} ign = {1 /* SIG_IGN */, 0, 0, 0};
	for (unsigned i = 0; i < sizeof job_signals / sizeof job_signals[0]; i++)
		if (sys6(SYS_rt_sigaction, job_signals[i], (long)&ign, 0, 8, 0, 0) < 0)
			fail("ignoring the job-control signals");
	serve();
	die(0);
}

__asm__(".text\n"
	".global _start\n"
	"_start:\n"
	"	mov %rsp, %rdi\n"
	"	and $-16, %rsp\n"
	"	call cmain\n"
	"	hlt\n");
