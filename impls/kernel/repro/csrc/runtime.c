/*
 * The runtime of an ipcfuzz reproducer (libc only). It enters a private IPC
 * namespace, runs each step of the script on the task that issues it (t0 is
 * this process, t1..t15 forked processes that start at their first step),
 * decides that a task sleeps in a call from evidence only (state S and
 * /proc/PID/syscall inside msgsnd, msgrcv, semop or semtimedop, as the
 * ipcfuzz kernel side does), writes every result in ipcfuzz's canonical text and compares
 * it with the expected one. Exit status: 0 every result as expected, 1 a
 * mismatch (each one printed), 2 a setup that failed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <setjmp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A runtime function a script does not need is left unused. */
#define RT static __attribute__((unused))

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4 /* Linux 5.7; older C libraries do not name it */
#endif

enum { OUT = 8192, MAXPIDS = 256, IPC_CREAT_ = 01000, IPC_EXCL_ = 02000, IPC_NOWAIT_ = 04000 };
enum { IPC_RMID_ = 0, IPC_SET_ = 1, IPC_STAT_ = 2, IPC_INFO_ = 3 };

/* What every task process sees: the ids the handles were bound to, the
 * attachments' addresses, the pids of every task incarnation, and each
 * task's last result. */
struct shared {
	long h[NHANDLES + 1];
	unsigned long att[NATTS + 1];
	unsigned att_tasks[NATTS + 1]; /* the tasks mapping it: the shmat's, its forks' */
	long att_win[NATTS + 1]; /* 1 + the window page of an attachment at a window address */
	int fork_fd[2], fork_main, fork_child, fork_pid; /* a fork_task under way */
	int ns_pid; /* a setns under way: the process whose IPC namespace it enters */
	int npids;
	int pid[MAXPIDS], pid_task[MAXPIDS], pid_gen[MAXPIDS];
	char out[NTASK][OUT];
};

static struct shared *sh;
static int req_fd[NTASK], resp_fd[NTASK]; /* -1 until the task starts (setup) */
static pid_t tpid[NTASK];
static int gen[NTASK], pending[NTASK];
static int self_task; /* the task this process is */

__attribute__((noreturn)) RT void setup_failed(const char *what)
{
	fprintf(stderr, "repro: setup: %s: %s\n", what, strerror(errno));
	exit(2);
}

/* put appends to a result. */
RT void put(char *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
RT void put(char *out, const char *fmt, ...)
{
	size_t n = strlen(out);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out + n, OUT - n, fmt, ap);
	va_end(ap);
}

/* errname is the canonical name of an errno. */
RT void put_err(char *out, int e)
{
	switch (e) {
#define E(num, name) case num: put(out, "%s", name); return;
	ERRNO_NAMES(E)
#undef E
	}
	put(out, "errno%d", e);
}

RT void put_key(char *out, long key) { put(out, "0x%x", (unsigned)key); }

/* put_pid writes a pid as a task identity: tN or tN#G, 0, or ?. */
RT void put_pid(char *out, long pid)
{
	if (pid == 0) {
		put(out, "0");
		return;
	}
	for (int i = 0; i < sh->npids; i++)
		if (sh->pid[i] == pid) {
			if (sh->pid_gen[i] == 0)
				put(out, "t%d", sh->pid_task[i]);
			else
				put(out, "t%d#%d", sh->pid_task[i], sh->pid_gen[i]);
			return;
		}
	put(out, "?");
}

/* tm is how a time is written: * when it is set, else 0. */
RT const char *tm(long t) { return t ? "*" : "0"; }

RT void add_pid(int pid, int task, int g)
{
	if (sh->npids < MAXPIDS) {
		sh->pid[sh->npids] = pid;
		sh->pid_task[sh->npids] = task;
		sh->pid_gen[sh->npids] = g;
		sh->npids++;
	}
}

/* The x86-64 layouts of the kernel's ipc64_perm, msqid64_ds, semid64_ds
 * and shmid64_ds, read by offset from a 256-byte buffer. */
RT unsigned short U16(const void *b, int off)
{
	unsigned short v;
	memcpy(&v, (const char *)b + off, sizeof v);
	return v;
}

RT unsigned int U32(const void *b, int off)
{
	unsigned int v;
	memcpy(&v, (const char *)b + off, sizeof v);
	return v;
}

RT int I32(const void *b, int off) { return (int)U32(b, off); }

RT long I64(const void *b, int off)
{
	long v;
	memcpy(&v, (const char *)b + off, sizeof v);
	return v;
}

RT void set_u32(void *b, int off, unsigned int v) { memcpy((char *)b + off, &v, sizeof v); }

RT void set_i64(void *b, int off, long v) { memcpy((char *)b + off, &v, sizeof v); }
enum { P_KEY = 0, P_UID = 4, P_GID = 8, P_CUID = 12, P_CGID = 16, P_MODE = 20 };

/* sysctl writes /proc/sys/kernel/<name>; the errno on failure, else 0. */
RT int sysctl(const char *name, const char *val)
{
	char path[128];
	snprintf(path, sizeof path, "/proc/sys/kernel/%s", name);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	ssize_t n = write(fd, val, strlen(val));
	int e = n < 0 ? errno : 0;
	close(fd);
	return e;
}

/* read_file reads a whole /proc file into buf; its length, or -errno. */
RT long read_file(const char *path, char *buf, long size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	long n = 0;
	for (;;) {
		ssize_t r = read(fd, buf + n, size - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			close(fd);
			return -e;
		}
		if (r == 0 || n + r >= size - 1) {
			n += r;
			break;
		}
		n += r;
	}
	close(fd);
	buf[n] = 0;
	return n;
}

/* Running as another user: no supplementary groups, egid = euid = id, the
 * real and saved ids root, so that the effective capabilities come back
 * with the euid (the ipcfuzz kernel side switches the same way). */
RT void as_begin(unsigned id)
{
	if (setgroups(0, NULL) < 0 || syscall(SYS_setresgid, -1, id, -1) < 0 || syscall(SYS_setresuid, -1, id, -1) < 0)
		setup_failed("switching to another user");
}

RT void as_end(void)
{
	if (syscall(SYS_setresuid, -1, 0, -1) < 0 || syscall(SYS_setresgid, -1, 0, -1) < 0)
		setup_failed("switching back to root");
}

/* sleeps_in_call reports whether pid sleeps in msgsnd, msgrcv or semop:
 * state S and /proc/PID/syscall naming one of those calls. The syscall
 * number is the evidence, never the function in wchan (inlining renames it
 * from one kernel build to the next); the kernel fills that file only for a
 * task off the CPU ("running" otherwise). */
RT int sleeps_in_call(pid_t pid)
{
	char path[64], b[512];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	if (read_file(path, b, sizeof b) < 0)
		return 0;
	char *p = strrchr(b, ')');
	if (!p || p[1] != ' ' || p[2] != 'S')
		return 0;
	snprintf(path, sizeof path, "/proc/%d/syscall", pid);
	if (read_file(path, b, sizeof b) < 0 || b[0] < '0' || b[0] > '9')
		return 0;
	long nr = strtol(b, NULL, 10);
	return nr == SYS_msgsnd || nr == SYS_msgrcv || nr == SYS_semop || nr == SYS_semtimedop;
}

RT void run_step(int step, char *out);

RT void on_interrupt(int sig) { (void)sig; }

/* task_main serves the steps of one task process: a step number in, its
 * result in sh->out, one byte out. */
static int my_in = -1, my_out = -1; /* a task process's pipes */

RT void task_main(int t, int in, int out)
{
	self_task = t;
	my_in = in;
	my_out = out;
	for (;;) {
		int step;
		ssize_t r = read(in, &step, sizeof step);
		if (r < 0 && errno == EINTR)
			continue;
		if (r != (ssize_t)sizeof step || step < 0)
			_exit(0);
		sh->out[t][0] = 0;
		run_step(step, sh->out[t]);
		char c = 1;
		while (write(out, &c, 1) < 0 && errno == EINTR)
			;
	}
}

RT void task_start(int t)
{
	int a[2], b[2];
	if (pipe2(a, O_CLOEXEC) < 0 || pipe2(b, O_CLOEXEC) < 0)
		setup_failed("pipe");
	fflush(stdout); /* what is buffered is the parent's to write */
	pid_t pid = fork();
	if (pid < 0)
		setup_failed("fork");
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(a[1]);
		close(b[0]);
		for (int u = 1; u < NTASK; u++) /* the other tasks' pipes are not ours */
			if (req_fd[u] >= 0) {
				close(req_fd[u]);
				close(resp_fd[u]);
			}
		task_main(t, a[0], b[1]);
	}
	close(a[0]);
	close(b[1]);
	req_fd[t] = a[1];
	resp_fd[t] = b[0];
	tpid[t] = pid;
	add_pid(pid, t, gen[t]);
}

/* returned waits for task t's response: 1 when its call returned, 0 when
 * it sleeps in the call (only for calls that may block). */
RT int returned(int t, int may_block)
{
	for (int spins = 0;; spins++) {
		struct pollfd p = { .fd = resp_fd[t], .events = POLLIN };
		int n = poll(&p, 1, may_block ? 0 : -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			setup_failed("poll");
		if (n > 0) {
			char c;
			if (read(resp_fd[t], &c, 1) != 1) {
				fprintf(stderr, "repro: task t%d died\n", t);
				exit(2);
			}
			return 1;
		}
		if (sleeps_in_call(tpid[t]))
			return 0;
		if (spins < 100) {
			sched_yield();
		} else { /* a task that takes long: look again in 50 µs, not at once */
			struct timespec ts = { 0, 50000 };
			nanosleep(&ts, NULL);
		}
	}
}

RT void task_exit(int t)
{
	int end = -1;
	while (write(req_fd[t], &end, sizeof end) < 0 && errno == EINTR)
		;
	close(req_fd[t]);
	close(resp_fd[t]);
	req_fd[t] = resp_fd[t] = -1;
	int st;
	while (waitpid(tpid[t], &st, 0) < 0 && errno == EINTR)
		;
	tpid[t] = 0;
}

/* issue runs step on task t: its result in out ("blocked" for a call that
 * sleeps, EBUSY for a task still asleep in an earlier one). */
RT void issue(int t, int step, int may_block, char *out)
{
	if (t == 0) {
		run_step(step, out);
		return;
	}
	if (pending[t]) {
		put(out, "EBUSY");
		return;
	}
	if (!tpid[t])
		task_start(t);
	while (write(req_fd[t], &step, sizeof step) < 0)
		if (errno != EINTR)
			setup_failed("writing to a task");
	if (returned(t, may_block)) {
		put(out, "%s", sh->out[t]);
		return;
	}
	pending[t] = 1;
	put(out, "blocked");
}

/* settle: every call still pending either returned (a completion,
 * appended in task order) or sleeps again. */
RT void settle(char *out)
{
	for (int t = 1; t < NTASK; t++)
		if (pending[t] && returned(t, 1)) {
			pending[t] = 0;
			put(out, " ; t%d %s", t, sh->out[t]);
		}
}

/* interrupt sends task t, when it sleeps in a call, the signal that makes
 * the call return EINTR; a task that does not sleep is not disturbed. */
RT void interrupt_task(int t, char *out)
{
	if (pending[t])
		kill(tpid[t], SIGUSR1);
	put(out, "ok");
}

/* exit_task ends task t (EBUSY while it sleeps in a call). */
RT void exit_task(int t, char *out)
{
	if (pending[t]) {
		put(out, "EBUSY");
		return;
	}
	if (tpid[t])
		task_exit(t);
	for (int i = 1; i <= NATTS; i++) /* its attachments went with it */
		if (sh->att_tasks[i] >> t & 1) {
			sh->att_tasks[i] &= ~(1u << t);
			if (!sh->att_tasks[i])
				sh->att[i] = 0;
		}
	gen[t]++; /* its next step is a new process, tN#G */
	put(out, "ok");
}

/* listing writes /proc/sysvipc/<type> as "[id:key ...]" or whole rows. */
RT void listing(const char *type, int rows, char *out)
{
	static char b[1 << 20];
	char path[64];
	snprintf(path, sizeof path, "/proc/sysvipc/%s", type);
	long n = read_file(path, b, sizeof b);
	if (n < 0) {
		put_err(out, (int)-n);
		return;
	}
	char *line = strchr(b, '\n');
	int first = 1;
	put(out, "[");
	while (line && line[1]) {
		line++;
		char *end = strchr(line, '\n');
		if (end)
			*end = 0;
		long v[16] = { 0 };
		int nv = 0;
		for (char *p = line; *p && nv < 16;) {
			char *e;
			while (*p == ' ')
				p++;
			if (!*p)
				break;
			v[nv] = strtol(p, &e, nv == 2 ? 8 : 10); /* perms are octal */
			if (e == p)
				break;
			nv++;
			p = e;
		}
		if (!first)
			put(out, rows ? " | " : " ");
		first = 0;
		if (!rows) {
			put(out, "%ld:", v[1]);
			put_key(out, v[0]);
		} else if (!strcmp(type, "msg")) {
			/* key msqid perms cbytes qnum lspid lrpid uid gid cuid cgid stime rtime ctime */
			put_key(out, v[0]);
			put(out, " %ld %lo %ld %ld ", v[1], v[2], v[3], v[4]);
			put_pid(out, v[5]);
			put(out, " ");
			put_pid(out, v[6]);
			put(out, " %ld %ld %ld %ld %s %s %s", v[7], v[8], v[9], v[10], tm(v[11]), tm(v[12]), tm(v[13]));
		} else if (!strcmp(type, "sem")) {
			/* key semid perms nsems uid gid cuid cgid otime ctime */
			put_key(out, v[0]);
			put(out, " %ld %lo %ld %ld %ld %ld %ld %s %s", v[1], v[2], v[3], v[4], v[5], v[6], v[7], tm(v[8]), tm(v[9]));
		} else {
			/* key shmid perms size cpid lpid nattch uid gid cuid cgid atime dtime ctime rss swap */
			put_key(out, v[0]);
			put(out, " %ld %lo %ld ", v[1], v[2], v[3]);
			put_pid(out, v[4]);
			put(out, " ");
			put_pid(out, v[5]);
			put(out, " %ld %ld %ld %ld %ld %s %s %s %ld %ld", v[6], v[7], v[8], v[9], v[10], tm(v[11]), tm(v[12]), tm(v[13]),
			    v[14], v[15]);
		}
		line = end;
	}
	put(out, "]");
}

/* put_msg_row writes the row of a msqid64_ds. */
RT void put_msg_row(char *out, void *b, long id)
{
	put(out, "{");
	put_key(out, I32(b, P_KEY));
	put(out, " %ld %o %ld %ld ", id, U16(b, P_MODE), I64(b, 72), I64(b, 80));
	put_pid(out, I32(b, 96));
	put(out, " ");
	put_pid(out, I32(b, 100));
	put(out, " %u %u %u %u %s %s %s}", U32(b, P_UID), U32(b, P_GID), U32(b, P_CUID), U32(b, P_CGID),
	    tm(I64(b, 48)), tm(I64(b, 56)), tm(I64(b, 64)));
}

/* put_sem_row writes the row of a semid64_ds. */
RT void put_sem_row(char *out, void *b, long id)
{
	put(out, "{");
	put_key(out, I32(b, P_KEY));
	put(out, " %ld %o %ld %u %u %u %u %s %s}", id, U16(b, P_MODE), I64(b, 80), U32(b, P_UID), U32(b, P_GID), U32(b, P_CUID),
	    U32(b, P_CGID), tm(I64(b, 48)), tm(I64(b, 64)));
}

/* put_shm_row writes the row of a shmid64_ds (rss and swap are not in
 * it: 0). */
RT void put_shm_row(char *out, void *b, long id)
{
	put(out, "{");
	put_key(out, I32(b, P_KEY));
	put(out, " %ld %o %ld ", id, U16(b, P_MODE), I64(b, 48));
	put_pid(out, I32(b, 80));
	put(out, " ");
	put_pid(out, I32(b, 84));
	put(out, " %ld %u %u %u %u %s %s %s 0 0}", I64(b, 88), U32(b, P_UID), U32(b, P_GID), U32(b, P_CUID), U32(b, P_CGID),
	    tm(I64(b, 56)), tm(I64(b, 64)), tm(I64(b, 72)));
}

/* shm_dontfork keeps the attachment at addr out of task processes forked
 * later (MADV_DONTFORK): a fork would attach it again, which the kernel
 * side's tasks, started with exec, never do. */
RT void shm_dontfork(unsigned long addr)
{
	static char maps[1 << 16];
	if (read_file("/proc/self/maps", maps, sizeof maps) < 0)
		setup_failed("reading /proc/self/maps");
	for (char *l = maps; *l;) {
		unsigned long a, b;
		if (sscanf(l, "%lx-%lx", &a, &b) == 2 && a == addr) {
			if (madvise((void *)a, b - a, MADV_DONTFORK) < 0)
				setup_failed("madvise(MADV_DONTFORK) of an attachment");
			return;
		}
		char *nl = strchr(l, '\n');
		if (!nl)
			break;
		l = nl + 1;
	}
}

/* msg_text is the text of a message of size bytes from fill. */
RT void msg_text(char *b, long size, int fill)
{
	for (long i = 0; i < size; i++)
		b[i] = 'a' + (fill + i) % 26;
}

/* setup enters a private IPC namespace (for an IPC script) and makes the
 * shared table. */
RT void setup(int ipc)
{
	if (ipc && unshare(CLONE_NEWIPC) < 0)
		setup_failed("unshare(CLONE_NEWIPC) (run it as root)");
	sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		setup_failed("mmap");
	add_pid(getpid(), 0, 0);
	for (int t = 0; t < NTASK; t++)
		req_fd[t] = resp_fd[t] = -1;
	struct sigaction sa = { .sa_handler = on_interrupt }; /* no SA_RESTART: EINTR */
	if (sigaction(SIGUSR1, &sa, NULL) < 0)
		setup_failed("sigaction");
	signal(SIGPIPE, SIG_IGN);
}

/* teardown kills the tasks still there (asleep ones too) and reaps them. */
RT void teardown(void)
{
	for (int t = 1; t < NTASK; t++)
		if (tpid[t]) {
			kill(tpid[t], SIGKILL);
			waitpid(tpid[t], NULL, 0);
		}
}

/* check compares a step's result with the one expected. */
RT int check(int step, const char *got, const char *want)
{
	if (!want || !strcmp(got, want))
		return 0;
	printf("step %d: %s: kernel -> %s, expected %s\n", step, op_text[step], got, want);
	return 1;
}

#if REPRO_VMA
/*
 * VMA scripts: the window (WINDOW_PAGES pages at WINDOW_BASE, far from
 * everything), the heap area (HEAP_PAGES pages from the initial break) and
 * the THP area (THP_PAGES pages at thp_base, 2 MiB aligned) are checked free with MAP_FIXED_NOREPLACE at start and left empty; the
 * script's mmap, munmap, ... act inside them. Files are memfds of
 * FILE_PAGES pages, bound to handles.
 */
enum { PAGE = 4096, WINDOW_PAGES = 64, HEAP_PAGES = 32, FILE_PAGES = 64, MAX_FILES = 8, THP_PAGES = 1024 };
static const unsigned long window_base = 0x200000000000UL;
static const unsigned long thp_base = 0x200000000000UL + (1UL << 30);
static unsigned long start_brk;
static int file_fd[MAX_FILES + 1] = { -1, -1, -1, -1, -1, -1, -1, -1, -1 };
static int file_of[MAX_FILES + 1];  /* the file a handle maps: the n-th opened */
static unsigned long file_ino[MAX_FILES + 1]; /* the inode of the n-th file */
static int nfiles;
static int touch_pipe[2];

/* region_free: nothing is mapped in [a, b). */
RT int region_free(unsigned long a, unsigned long b)
{
	void *r = mmap((void *)a, b - a, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
	if (r == MAP_FAILED)
		return 0;
	munmap(r, b - a);
	return r == (void *)a;
}

RT void vma_setup(void)
{
	char b[1024];
	if (read_file("/proc/self/stat", b, sizeof b) < 0)
		setup_failed("reading /proc/self/stat");
	char *p = strrchr(b, ')');
	for (int field = 2; p && field < 47; field++) /* start_brk is field 47 */
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%lu", &start_brk) != 1)
		setup_failed("finding start_brk in /proc/self/stat");
	if ((unsigned long)syscall(SYS_brk, 0) != start_brk) {
		errno = EBUSY;
		setup_failed("the heap is in use before main (a static glibc puts its TLS there): build without -static");
	}
	/* the window, a page above it and as many below (where a range the
	 * kernel places may land) */
	if (!region_free(window_base - WINDOW_PAGES * PAGE, window_base + (WINDOW_PAGES + 1) * PAGE))
		setup_failed("the window is not free");
	if (!region_free(start_brk, start_brk + (HEAP_PAGES + 1) * PAGE))
		setup_failed("the heap area is not free");
	if (!region_free(thp_base, thp_base + THP_PAGES * PAGE))
		setup_failed("the THP area is not free");
	if (pipe2(touch_pipe, O_CLOEXEC) < 0)
		setup_failed("pipe");
	static char line[4096];
	setvbuf(stdout, line, _IOLBF, sizeof line); /* stdio must not take the heap */
}

/*
 * remap_maymove is mremap(MREMAP_MAYMOVE) without MREMAP_FIXED, placed as
 * ipcfuzz's kernel side places it: for the call, every gap above the window
 * up to a little below the stack is filled with a PROT_NONE mapping of a
 * file of its own, so that the kernel's top-down search finds the window's
 * highest gap that fits, or the one at its bottom, which goes on below it.
 * A range that lands below the window is unmapped at once. The result is
 * "at=PAGE", the window page the range is at. flags adds MREMAP_DONTUNMAP
 * (4), or 0.
 */
static char maps_buf[1 << 20];
static unsigned long fill_at[256][2];

RT void remap_maymove(char *out, unsigned long addr, unsigned long old_pages, unsigned long new_pages, int flags)
{
	static int fill_fd = -1;
	unsigned long lo = window_base + WINDOW_PAGES * PAGE, top = 0, cur = lo;
	int n = 0;
	if (fill_fd < 0 && (fill_fd = memfd_create("ipcfuzz-vma-fill", 0)) < 0)
		setup_failed("memfd_create (fill)");
	if (read_file("/proc/self/maps", maps_buf, sizeof maps_buf) < 0)
		setup_failed("reading /proc/self/maps");
	for (char *l = maps_buf; *l;) {
		unsigned long a, b;
		char *nl = strchr(l, '\n');
		if (sscanf(l, "%lx-%lx", &a, &b) == 2 && nl && memmem(l, nl - l, "[stack]", 7))
			top = a;
		l = nl ? nl + 1 : l + strlen(l);
	}
	if (top < lo + (8UL << 20))
		setup_failed("finding the stack above the window");
	top -= 4UL << 20; /* above mmap_base, below the stack's guard */
	for (char *l = maps_buf;; ) {
		unsigned long a = top, b = top;
		char *nl = strchr(l, '\n');
		if (*l && sscanf(l, "%lx-%lx", &a, &b) != 2)
			setup_failed("parsing /proc/self/maps");
		if (!*l || (b > cur && a < top)) {
			unsigned long e = a < top ? a : top;
			if (e > cur && n < 256) {
				if (mmap((void *)cur, e - cur, PROT_NONE, MAP_PRIVATE | MAP_NORESERVE | MAP_FIXED_NOREPLACE, fill_fd, 0) != (void *)cur)
					setup_failed("filling above the window");
				fill_at[n][0] = cur;
				fill_at[n][1] = e;
				n++;
			}
			if (b > cur)
				cur = b;
		}
		if (!*l)
			break;
		l = nl ? nl + 1 : l + strlen(l);
	}
	long r = syscall(SYS_mremap, addr, old_pages * PAGE, new_pages * PAGE, 1 /* MREMAP_MAYMOVE */ | flags, 0UL);
	int e = errno;
	for (int i = 0; i < n; i++)
		munmap((void *)fill_at[i][0], fill_at[i][1] - fill_at[i][0]);
	if (r == -1) {
		put_err(out, e);
		return;
	}
	if ((unsigned long)r < window_base - WINDOW_PAGES * PAGE || (unsigned long)r + new_pages * PAGE > lo) {
		errno = ERANGE;
		setup_failed("the kernel placed the range outside the window and the pages below it");
	}
	if ((unsigned long)r < window_base)
		munmap((void *)r, new_pages * PAGE);
	put(out, "at=%ld", ((long)r - (long)window_base) / PAGE);
}

/* vma_errno is the errno of a call that returned r, else 0. */
RT void put_result(char *out, long r, int e)
{
	if (r < 0)
		put_err(out, e);
	else
		put(out, "ok");
}

/* touch makes the kernel access the page for us: a fault the process
 * would get a signal for is EFAULT. A write is a read from the pipe into
 * the page, a read a write from the page into the pipe. */
RT void touch(char *out, unsigned long addr, int write_)
{
	char c = 'x';
	ssize_t r;
	int e = 0;
	if (write_) {
		if (write(touch_pipe[1], &c, 1) != 1)
			setup_failed("touch: pipe");
		r = read(touch_pipe[0], (void *)addr, 1);
		e = errno;
		if (r != 1 && read(touch_pipe[0], &c, 1) != 1)
			setup_failed("touch: pipe");
	} else {
		r = write(touch_pipe[1], (void *)addr, 1);
		e = errno;
		if (r == 1 && read(touch_pipe[0], &c, 1) != 1)
			setup_failed("touch: pipe");
	}
	put_result(out, r == 1 ? 0 : -1, e);
}

/* file_open binds handle h: a new memfd (of < 0), a new open file
 * description of of's file (reopen) or dup(of). */
RT void file_open(char *out, int h, int of, int dup_, int readonly)
{
	int fd;
	if (of < 0) {
		fd = memfd_create("ipcfuzz-vma", 0);
		if (fd < 0 || ftruncate(fd, FILE_PAGES * PAGE) < 0)
			setup_failed("memfd_create");
		if (readonly) {
			char path[64];
			snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
			int ro = open(path, O_RDONLY);
			if (ro < 0)
				setup_failed("reopening a memfd read-only");
			close(fd);
			fd = ro;
		}
	} else if (of < 1 || of > MAX_FILES || file_fd[of] < 0) {
		put_err(out, EBADF);
		return;
	} else if (dup_) {
		fd = dup(file_fd[of]);
	} else {
		char path[64];
		snprintf(path, sizeof path, "/proc/self/fd/%d", file_fd[of]);
		fd = open(path, readonly ? O_RDONLY : O_RDWR);
	}
	if (fd < 0) {
		put_err(out, errno);
		return;
	}
	file_fd[h] = fd;
	if (of < 0) {
		struct stat st;
		if (fstat(fd, &st) < 0 || nfiles == MAX_FILES)
			setup_failed("fstat of a new file");
		file_ino[++nfiles] = st.st_ino;
		file_of[h] = nfiles;
	} else {
		file_of[h] = file_of[of];
	}
	put(out, "ok");
}

/* put_vma writes one VMA of smaps (its header line, then its VmFlags and
 * ProtectionKey lines) as ipcfuzz does: the region and pages, maps'
 * permissions, what backs it (fN+off: the n-th file the script opened;
 * zN+off: a shmem object, numbered in order of appearance; anon), [heap],
 * the protection key, the VmFlags not shown by the permissions. */
RT void put_vma(char *out, const char *head, const char *vmflags, int pkey, unsigned long *shm, int *nshm)
{
	unsigned long a, b, off, ino;
	char perms[8] = "", path[256] = "";
	if (sscanf(head, "%lx-%lx %7s %lx %*s %lu %255[^\n]", &a, &b, perms, &off, &ino, path) < 5)
		setup_failed("parsing /proc/self/smaps");
	int heap = a >= start_brk && b <= start_brk + HEAP_PAGES * PAGE && !(a >= window_base && b <= window_base + WINDOW_PAGES * PAGE);
	int thp = a >= thp_base && b <= thp_base + THP_PAGES * PAGE;
	unsigned long base = heap ? start_brk : thp ? thp_base : window_base;
	put(out, "%s:%lu-%lu %s ", heap ? "h" : thp ? "t" : "w", (a - base) / PAGE, (b - base) / PAGE, perms);
	int file = 0, z = 0;
	if (ino) {
		for (int i = 1; i <= nfiles; i++)
			if (file_ino[i] == ino)
				file = i;
		if (!file && !strncmp(path, "/dev/zero", 9)) {
			for (int i = 0; i < *nshm; i++)
				if (shm[i] == ino)
					z = i + 1;
			if (!z && *nshm < 64) {
				shm[(*nshm)++] = ino;
				z = *nshm;
			}
		}
	}
	if (file && z)
		put(out, "f%d/z%d+%lu", file, z, off / PAGE);
	else if (file)
		put(out, "f%d+%lu", file, off / PAGE);
	else if (z)
		put(out, "z%d+%lu", z, off / PAGE);
	else if (ino && off / PAGE)
		put(out, "anon+%lu", off / PAGE);
	else
		put(out, "anon");
	if (!strcmp(path, "[heap]"))
		put(out, " [heap]");
	if (pkey)
		put(out, " pkey=%d", pkey);
	int any = 0;
	for (int i = 0; vma_flag_names[i]; i++) {
		char word[8];
		snprintf(word, sizeof word, " %s", vma_flag_names[i]);
		const char *p = vmflags;
		size_t n = strlen(word);
		for (; (p = strstr(p, word)); p += n)
			if (p[n] == ' ' || p[n] == '\n' || p[n] == 0)
				break;
		if (p) {
			put(out, "%s%s", any ? "," : " ", vma_flag_names[i]);
			any = 1;
		}
	}
	if (!any)
		put(out, " -");
}

/* layout writes the VMAs of the window, then of the heap area, then of the
 * THP area, and the break: "[VMA | VMA ...] brk=N". */
RT void layout(char *out)
{
	static char smaps[1 << 20];
	if (read_file("/proc/self/smaps", smaps, sizeof smaps) < 0)
		setup_failed("reading /proc/self/smaps");
	static char parts[3][OUT];
	parts[0][0] = parts[1][0] = parts[2][0] = 0;
	unsigned long shm[64];
	int nshm = 0;
	for (int pass = 0; pass < 3; pass++) { /* the window's VMAs, the heap area's, the THP area's */
		char *l = smaps;
		while (*l) {
			char *nl = strchr(l, '\n');
			unsigned long a, b;
			if (sscanf(l, "%lx-%lx ", &a, &b) == 2 && strchr(l, ' ') < (nl ? nl : l + strlen(l)) && l[strspn(l, "0123456789abcdef")] == '-') {
				int win = a >= window_base && b <= window_base + WINDOW_PAGES * PAGE;
				int hp = a >= start_brk && b <= start_brk + HEAP_PAGES * PAGE;
				int th = a >= thp_base && b <= thp_base + THP_PAGES * PAGE;
				char *head = l, *flags = "", *next = nl ? nl + 1 : l + strlen(l);
				int pkey = 0;
				/* its attribute lines, up to the next header */
				for (char *q = next; *q; ) {
					char *qn = strchr(q, '\n');
					if (!strncmp(q, "VmFlags:", 8))
						flags = q + 8;
					else if (!strncmp(q, "ProtectionKey:", 14))
						pkey = atoi(q + 14);
					else if (q[strspn(q, "0123456789abcdef")] == '-')
						break;
					q = qn ? qn + 1 : q + strlen(q);
					next = q;
				}
				if ((pass == 0 && win) || (pass == 1 && hp && !win) || (pass == 2 && th)) {
					char *dst = parts[pass];
					if (*dst)
						put(dst, " | ");
					char vmflags[512];
					snprintf(vmflags, sizeof vmflags, " %.*s", (int)strcspn(flags, "\n"), flags);
					put_vma(dst, head, vmflags, pkey, shm, &nshm);
				}
				l = next;
				continue;
			}
			l = nl ? nl + 1 : l + strlen(l);
		}
	}
	long above = (long)((unsigned long)syscall(SYS_brk, 0) - start_brk);
	put(out, "[%s%s%s%s%s] brk=%ld", parts[0], *parts[0] && *parts[1] ? " | " : "", parts[1],
	    (*parts[0] || *parts[1]) && *parts[2] ? " | " : "", parts[2], above / (long)PAGE);
	if (above % (long)PAGE) /* a break inside a page: "+bytes" */
		put(out, "+%ld", above % (long)PAGE);
}
#else
/*
 * IPC scripts: each task's shm window (SHM_WINDOW_PAGES pages at
 * shm_window, as the ipcfuzz kernel side's task processes have it) with a
 * PROT_NONE page on each side, mapped here and inherited by the tasks, so
 * that an attachment that would reach past the window overlaps a mapping.
 */
enum { PAGE = 4096 };
static const unsigned long shm_window = SHM_WINDOW_BASE;

RT void vma_setup(void)
{
	void *lo = (void *)(shm_window - PAGE);
	void *r = mmap(lo, (SHM_WINDOW_PAGES + 2) * PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
	if (r != lo)
		setup_failed("the shm window is not free");
	if (munmap((void *)shm_window, SHM_WINDOW_PAGES * PAGE) < 0)
		setup_failed("clearing the shm window");
}

/* shm_addr is the address a step names: attachment att's (its window
 * address in every task; where the kernel put it in a task mapping it, the
 * shmat's or a fork's copy;
 * else page 1), or window page page (win), or the absolute off; plus off. */
RT unsigned long shm_addr(int att, int win, long page, long off)
{
	if (att) {
		if (sh->att_win[att])
			return shm_window + (sh->att_win[att] - 1) * PAGE + off;
		if (sh->att[att] && (sh->att_tasks[att] >> self_task & 1))
			return sh->att[att] + off;
		return 0x1000UL + off;
	}
	if (win)
		return shm_window + page * PAGE + off;
	return off;
}

/* shm_at writes where a shmat landed: at=w:P in the window, else ok. */
RT void shm_at(char *out, unsigned long r)
{
	if (r >= shm_window && r < shm_window + SHM_WINDOW_PAGES * PAGE)
		put(out, "at=w:%lu", (r - shm_window) / PAGE);
	else
		put(out, "ok");
}

static sigjmp_buf touch_jmp;

static void touch_segv(int sig)
{
	(void)sig;
	siglongjmp(touch_jmp, 1);
}

/* shm_touch reads or writes one byte at addr: val=N or ok, or fault when
 * the access takes SIGSEGV. */
RT void shm_touch(char *out, unsigned long addr, int write, int val)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = touch_segv;
	if (sigaction(SIGSEGV, &sa, &old) < 0)
		setup_failed("installing a SIGSEGV handler");
	if (sigsetjmp(touch_jmp, 1)) {
		sigaction(SIGSEGV, &old, 0);
		put(out, "fault");
		return;
	}
	volatile unsigned char *p = (volatile unsigned char *)addr;
	if (write) {
		*p = (unsigned char)val;
		put(out, "ok");
	} else {
		put(out, "val=%d", *p);
	}
	sigaction(SIGSEGV, &old, 0);
}
#endif

/* vma_fork: the vma fork. The reproducer carries on in the child, whose
 * address space is the copy; the parent waits for it and exits with its
 * status. */
RT void vma_fork(char *out)
{
	fflush(stdout);
	fflush(stderr);
	pid_t c = fork();
	if (c < 0)
		setup_failed("fork");
	if (c > 0) {
		int st = 0;
		while (waitpid(c, &st, 0) < 0)
			if (errno != EINTR)
				_exit(2);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 2);
	}
	put(out, "ok");
}

/* vma_memlock: a memlock. RLIMIT_MEMLOCK becomes pages pages (the hard
 * limit raised to it where it is lower), and CAP_IPC_LOCK leaves the
 * effective capabilities (capget and capset by number: no libcap). */
RT void vma_memlock(char *out, long pages)
{
	struct {
		unsigned version;
		int pid;
	} h = {0x20080522, 0}; /* _LINUX_CAPABILITY_VERSION_3 */
	struct {
		unsigned effective, permitted, inheritable;
	} c[2];
	struct rlimit r;
	if (getrlimit(RLIMIT_MEMLOCK, &r) < 0)
		setup_failed("getrlimit");
	r.rlim_cur = (rlim_t)pages * PAGE;
	if (r.rlim_max < r.rlim_cur)
		r.rlim_max = r.rlim_cur;
	if (setrlimit(RLIMIT_MEMLOCK, &r) < 0)
		setup_failed("setrlimit");
	if (syscall(SYS_capget, &h, c) < 0)
		setup_failed("capget");
	c[0].effective &= ~(1u << 14); /* CAP_IPC_LOCK */
	if (syscall(SYS_capset, &h, c) < 0)
		setup_failed("capset");
	put(out, "ok");
}

/* detached: this task's mapping of attachment i is gone. */
RT void detached(int i)
{
	sh->att_tasks[i] &= ~(1u << self_task);
	if (!sh->att_tasks[i])
		sh->att[i] = 0;
}

/* fork_child_step is a fork_task's step, in the parent task: it forks with
 * CLONE_PARENT (the child is the reproducer's, as the other tasks are) and
 * the child opens the pipes the main process made for its slot (through
 * /proc), then serves as that task. */
RT void fork_child_step(char *out)
{
	int s[2];
	if (pipe(s) < 0)
		setup_failed("pipe");
	fflush(stdout);
	long pid = syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0);
	if (pid < 0)
		setup_failed("clone");
	if (pid == 0) {
		int me = sh->fork_child; /* read before the parent is told: the next fork changes it */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		char p[64];
		snprintf(p, sizeof p, "/proc/%d/fd/%d", sh->fork_main, sh->fork_fd[0]);
		int in = open(p, O_RDONLY | O_CLOEXEC);
		snprintf(p, sizeof p, "/proc/%d/fd/%d", sh->fork_main, sh->fork_fd[1]);
		int o = open(p, O_WRONLY | O_CLOEXEC);
		if (in < 0 || o < 0)
			_exit(3);
		close(my_in);
		close(my_out);
		close(s[0]);
		sh->fork_pid = getpid();
		char c = 1;
		while (write(s[1], &c, 1) < 0 && errno == EINTR)
			;
		close(s[1]);
		task_main(me, in, o);
	}
	close(s[1]);
	char c;
	ssize_t r;
	while ((r = read(s[0], &c, 1)) < 0 && errno == EINTR)
		;
	close(s[0]);
	if (r != 1)
		setup_failed("the forked task did not start");
	put(out, "ok");
}

/* fork_task forks task t into slot c (EBUSY if the slot was used since the
 * start or its last exit, or if t sleeps in a call): the main process
 * makes c's pipes, t forks, the child takes them. */
RT void fork_task(int t, int c, int step, int used, char *out)
{
	if (used || pending[t]) {
		put(out, "EBUSY");
		return;
	}
	int a[2], b[2];
	if (pipe2(a, O_CLOEXEC) < 0 || pipe2(b, O_CLOEXEC) < 0)
		setup_failed("pipe");
	sh->fork_fd[0] = a[0];
	sh->fork_fd[1] = b[1];
	sh->fork_main = getpid();
	sh->fork_child = c;
	issue(t, step, 0, out);
	close(a[0]);
	close(b[1]);
	if (strcmp(out, "ok") != 0) {
		close(a[1]);
		close(b[0]);
		return;
	}
	req_fd[c] = a[1];
	resp_fd[c] = b[0];
	tpid[c] = sh->fork_pid;
	add_pid(tpid[c], c, gen[c]);
	for (int i = 1; i <= NATTS; i++)
		if (sh->att_tasks[i] >> t & 1)
			sh->att_tasks[i] |= 1u << c;
}

/* unshare_ns is an unshare step, in its task: unshare(CLONE_NEWIPC), which
 * applies the task's semaphore adjustments and orphans the segments it
 * created in the namespace it leaves (kernel/fork.c ksys_unshare). */
RT void unshare_ns(char *out)
{
	if (unshare(CLONE_NEWIPC) < 0) {
		put_err(out, errno);
		return;
	}
	put(out, "ok");
}

/* enter_ns is a setns step, in its task: setns into the IPC namespace of
 * process sh->ns_pid (exit_sem runs in kernel/nsproxy.c commit_nsset). */
RT void enter_ns(char *out)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/ns/ipc", sh->ns_pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		setup_failed("opening the IPC namespace a setns enters");
	int r = setns(fd, CLONE_NEWIPC);
	int e = errno;
	close(fd);
	if (r < 0) {
		put_err(out, e);
		return;
	}
	put(out, "ok");
}

/* setns_task runs task t's setns into task m's IPC namespace, the one m's
 * process is in. t0's namespace, and that of a task not running since its
 * start or its last exit (it is not started for this), is the program's:
 * this process's, which never leaves it (a setns here would run exit_sem on
 * t0's undo list). */
RT void setns_task(int t, int m, int step, char *out)
{
	sh->ns_pid = m > 0 && tpid[m] ? tpid[m] : getpid();
	issue(t, step, 0, out);
}
