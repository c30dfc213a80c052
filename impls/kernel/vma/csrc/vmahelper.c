/*
 * vmahelper: the process in which ipcfuzz runs VMA operations on the real
 * kernel. Its address space must hold nothing but what the operations put
 * there, so it is freestanding: no libc, no loader, no malloc, no stdio,
 * no threads; static buffers and raw syscalls only (freestanding.h). The
 * Go side (package impls/kernel/vma) builds it with the system's C
 * compiler and drives it over two pipes. See protocol.go for the protocol;
 * vma_proto.h carries its numbers, written from the Go tables.
 *
 * argv: vmahelper <window-base-hex> <window-pages> <heap-pages>
 *                 <file-pages> <measure-base-hex> <parent-pid>
 *                 <thp-base-hex> <thp-pages>
 * fd VMA_REQ_FD: requests in; fd VMA_RESP_FD: responses out; fd 2: one
 * line if it refuses.
 */
#include "freestanding.h"
#include "vma_proto.h"

#define PAGE 4096L

/* x86-64 syscall numbers */
enum {
	SYS_open = 2, SYS_close = 3, SYS_fstat = 5,
	SYS_rt_sigaction = 13, SYS_mmap = 9, SYS_mprotect = 10, SYS_munmap = 11, SYS_brk = 12,
	SYS_mremap = 25, SYS_madvise = 28, SYS_dup = 32, SYS_exit = 60,
	SYS_uname = 63, SYS_ftruncate = 77, SYS_getppid = 110, SYS_mlock = 149,
	SYS_munlock = 150, SYS_prctl = 157, SYS_clock_gettime = 228,
	SYS_pipe2 = 293, SYS_clone = 56, SYS_getpid = 39, SYS_wait4 = 61, SYS_memfd_create = 319,
	SYS_mlock2 = 325, SYS_mseal = 462, SYS_ioctl = 16,
	SYS_capget = 125, SYS_capset = 126, SYS_prlimit64 = 302, SYS_writev = 20,
};

enum {
	PROT_READ = 1, PROT_WRITE = 2, PROT_EXEC = 4,
	MAP_SHARED = 1, MAP_PRIVATE = 2, MAP_FIXED = 0x10, MAP_ANONYMOUS = 0x20,
	MAP_LOCKED = 0x2000, MAP_NORESERVE = 0x4000, MAP_POPULATE = 0x8000,
	MAP_STACK = 0x20000, MAP_FIXED_NOREPLACE = 0x100000,
	MREMAP_MAYMOVE = 1, MREMAP_FIXED = 2, MREMAP_DONTUNMAP = 4, LOCKED_LEFT = 131 /* ENOTRECOVERABLE */, MLOCK_ONFAULT = 1,
	O_RDONLY = 0, O_RDWR = 2, PR_SET_PDEATHSIG = 1, SIGKILL = 9, SIGCHLD = 17,
	CLONE_PARENT = 0x8000,
	CLOCK_MONOTONIC = 1, CLOCK_THREAD_CPUTIME_ID = 3,
	EPERM = 1, EBADF = 9, EFAULT = 14, EEXIST = 17, EINVAL = 22,
};

struct out {
	char *buf;
	u64 len, cap;
};

static void put(struct out *o, const char *s, u64 n)
{
	for (u64 i = 0; i < n && o->len < o->cap; i++)
		o->buf[o->len++] = s[i];
}

static void puts_(struct out *o, const char *s) { put(o, s, slen(s)); }

static void putnum(struct out *o, u64 v, int base)
{
	char tmp[24];
	int i = 0;
	do {
		tmp[i++] = "0123456789abcdef"[v % base];
		v /= base;
	} while (v);
	while (i > 0)
		put(o, &tmp[--i], 1);
}

static void putdec(struct out *o, i64 v)
{
	if (v < 0) {
		put(o, "-", 1);
		v = -v;
	}
	putnum(o, v, 10);
}

static int parsenum(const char *s, int base, u64 *v)
{
	u64 x = 0;
	if (!*s)
		return -1;
	for (; *s; s++) {
		int d;
		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else
			return -1;
		x = x * base + d;
	}
	*v = x;
	return 0;
}

static char errline[256];

/* refuse writes one line to stderr and exits. */
static __attribute__((noreturn)) void refuse(const char *what, u64 a, u64 b)
{
	struct out o = {errline, 0, sizeof errline - 1};
	puts_(&o, "vmahelper: ");
	puts_(&o, what);
	if (a || b) {
		puts_(&o, " (0x");
		putnum(&o, a, 16);
		puts_(&o, "-0x");
		putnum(&o, b, 16);
		puts_(&o, ")");
	}
	puts_(&o, "\n");
	write_all(2, errline, o.len);
	die(2);
}

/* The configuration and the state of the helper. */
enum { MAX_HANDLES = 8 };
static u64 window_base, window_pages, heap_pages, file_pages, measure_base, thp_base, thp_pages;
static u64 start_brk;
/* driver: the process that drives the helper (its parent, and a forked
 * child's parent by CLONE_PARENT). */
static u64 driver;
static int handle_fd[MAX_HANDLES + 1];
static int pipe_r, pipe_w;
static char scratch[8];

/* ---------------------------------------------------------------- */
/* /proc reading */

static char procbuf[1 << 20];

/* readfile reads a whole /proc file into procbuf; its length or -1. */
static i64 readfile(const char *path)
{
	i64 fd = sys2(SYS_open, path, O_RDONLY), n = 0;
	if (fd < 0)
		return -1;
	for (;;) {
		i64 r = sys3(SYS_read, fd, procbuf + n, sizeof procbuf - 1 - n);
		if (r < 0) {
			sys1(SYS_close, fd);
			return -1;
		}
		if (r == 0)
			break;
		n += r;
		if (n == sizeof procbuf - 1) {
			sys1(SYS_close, fd);
			return -1;
		}
	}
	sys1(SYS_close, fd);
	procbuf[n] = 0;
	return n;
}

/* stat_start_brk reads field 47 (start_brk) of /proc/self/stat. */
static u64 stat_start_brk(void)
{
	i64 n = readfile("/proc/self/stat");
	char *p = procbuf, *last = 0;
	if (n < 0)
		refuse("cannot read /proc/self/stat", 0, 0);
	for (i64 i = 0; i < n; i++)
		if (procbuf[i] == ')')
			last = procbuf + i;
	if (!last)
		refuse("cannot parse /proc/self/stat", 0, 0);
	p = last + 2; /* field 3 */
	for (int field = 3; field < 47; field++) {
		while (*p && *p != ' ')
			p++;
		if (*p)
			p++;
	}
	u64 v = 0;
	while (*p >= '0' && *p <= '9')
		v = v * 10 + (*p++ - '0');
	return v;
}

static u64 hexat(const char **pp)
{
	const char *p = *pp;
	u64 v = 0;
	for (;; p++) {
		if (*p >= '0' && *p <= '9')
			v = v * 16 + (*p - '0');
		else if (*p >= 'a' && *p <= 'f')
			v = v * 16 + (*p - 'a' + 10);
		else
			break;
	}
	*pp = p;
	return v;
}

/* is_header: an smaps line that starts a VMA ("start-end perms ..."). */
static int is_header(const char *l)
{
	for (; *l && *l != ' ' && *l != '\n'; l++)
		if (*l == ':')
			return 0;
	return 1;
}

static int starts(const char *l, const char *p)
{
	while (*p)
		if (*l++ != *p++)
			return 0;
	return 1;
}

/* The address ranges whose VMAs a snapshot shows. */
struct ranges {
	u64 a[3][2];
};

static int meets(const struct ranges *r, u64 s, u64 e)
{
	for (int i = 0; i < 3; i++)
		if (s < r->a[i][1] && e > r->a[i][0])
			return 1;
	return 0;
}

/*
 * smaps_select writes, for each VMA of /proc/self/smaps that meets one of
 * the ranges, its header line, its VmFlags line and its ProtectionKey line
 * (if any). Returns the length or -1.
 */
static i64 smaps_select(struct out *o, const struct ranges *r)
{
	i64 n = readfile("/proc/self/smaps");
	int keep = 0;
	if (n < 0)
		return -1;
	for (char *l = procbuf; *l;) {
		char *nl = l;
		while (*nl && *nl != '\n')
			nl++;
		if (is_header(l)) {
			const char *p = l;
			u64 s = hexat(&p);
			p++;
			u64 e = hexat(&p);
			keep = meets(r, s, e);
			if (keep)
				put(o, l, nl - l + 1);
		} else if (keep && (starts(l, "VmFlags:") || starts(l, "ProtectionKey:"))) {
			put(o, l, nl - l + 1);
		}
		l = *nl ? nl + 1 : nl;
	}
	return o->len < o->cap ? (i64)o->len : -1;
}

/* ---------------------------------------------------------------- */
/* The protocol (see protocol.go; the numbers are vma_proto.h's). */

struct req {
	u32 op, region;
	i64 start, pages;
	i64 a[4];
};

struct resp {
	i32 err;
	u32 n;
	i64 val;
	i64 ns, clocks;
};

_Static_assert(sizeof(struct req) == REQUEST_SIZE, "struct req");
_Static_assert(sizeof(struct resp) == RESPONSE_SIZE, "struct resp");

static char outbuf[1 << 20];

/* The timing of a request that asks for it (OP_TIMED): the thread's CPU
 * clock read once the request is read (timed_start) and again as its
 * response is written, less what two reads alone take (clock_cost, the
 * least of 4 pairs, measured at the first timed request); clock_reads
 * counts the reads, each a system call. */
static int timed;
static u64 timed_start, timed_reads, clock_reads, clock_cost = ~0ul;

static u64 cpu_ns(void)
{
	struct {
		i64 s, ns;
	} t = {0, 0};
	clock_reads++;
	if (sys2(SYS_clock_gettime, CLOCK_THREAD_CPUTIME_ID, &t) < 0)
		return 0;
	return (u64)t.s * 1000000000ul + (u64)t.ns;
}

static void time_request(void)
{
	timed_reads = clock_reads;
	if (clock_cost == ~0ul) {
		for (int i = 0; i < 4; i++) {
			u64 a = cpu_ns(), b = cpu_ns();
			if (b - a < clock_cost)
				clock_cost = b - a;
		}
	}
	timed = 1;
	timed_start = cpu_ns();
}

/* reply writes the header and the payload with one writev, so that the
 * driver reads both at once; what a pipe took only in part is written on. */
static void reply(i32 err, i64 val, const void *payload, u32 n)
{
	struct resp r = {err, n, val, 0, 0};
	if (timed) {
		u64 t = cpu_ns();
		if (t > timed_start + clock_cost)
			r.ns = (i64)(t - timed_start - clock_cost);
		r.clocks = (i64)(clock_reads - timed_reads);
		timed = 0;
	}
	struct {
		const void *base;
		u64 len;
	} iov[2] = {{&r, sizeof r}, {payload, n}};
	i64 w;
	do
		w = sys3(SYS_writev, VMA_RESP_FD, (i64)iov, n ? 2 : 1);
	while (w == -EINTR);
	if (w < 0)
		die(3);
	if ((u64)w < sizeof r) {
		if (write_all(VMA_RESP_FD, (const char *)&r + w, sizeof r - (u64)w) < 0 ||
		    (n && write_all(VMA_RESP_FD, payload, n) < 0))
			die(3);
	} else if ((u64)w < sizeof r + n && write_all(VMA_RESP_FD, (const char *)payload + (w - sizeof r), n - (w - sizeof r)) < 0)
		die(3);
}

static u64 region_base(u32 region)
{
	return region == REGION_HEAP ? start_brk : region == REGION_THP ? thp_base : window_base;
}

static i64 region_pages(u32 region)
{
	return region == REGION_HEAP ? heap_pages : region == REGION_THP ? thp_pages : window_pages;
}

/* range_ok: [start, start+pages) lies inside the region. */
static int range_ok(u32 region, i64 start, i64 pages)
{
	return (region == REGION_WINDOW || region == REGION_HEAP || region == REGION_THP) && start >= 0 &&
	       pages >= 0 && start + pages <= region_pages(region);
}

static u64 addr_of(const struct req *q, i64 page) { return region_base(q->region) + page * PAGE; }

static i64 neg(i64 r) { return r < 0 ? -r : 0; }

static int handle_ok(i64 h) { return h >= 1 && h <= MAX_HANDLES; }

static int fd_of(i64 h) { return handle_ok(h) ? handle_fd[h] : -1; }

static i64 op_map(const struct req *q)
{
	i64 prot = q->a[0], flags = q->a[1], h = q->a[2], off = q->a[3];
	i64 mflags = MAP_FIXED | ((flags & MAPF_SHARED) ? MAP_SHARED : MAP_PRIVATE);
	i64 fd = -1;
	if (flags & MAPF_NORESERVE)
		mflags |= MAP_NORESERVE;
	if (flags & MAPF_POPULATE)
		mflags |= MAP_POPULATE;
	if (flags & MAPF_LOCKED)
		mflags |= MAP_LOCKED;
	if (flags & MAPF_STACK)
		mflags |= MAP_STACK;
	if (h == 0)
		mflags |= MAP_ANONYMOUS;
	else if (handle_ok(h))
		fd = handle_fd[h];
	else
		return BAD_HANDLE;
	if (off < 0 || ((h != 0 || off != 0) && off + q->pages > 2 * (i64)file_pages))
		return BAD_RANGE;
	return neg(sys6(SYS_mmap, addr_of(q, q->start), q->pages * PAGE, prot, mflags, fd, off * PAGE));
}

/*
 * op_touch makes the kernel access the page for us (a uaccess fault is
 * handled like the process's own, but a fault it cannot take is EFAULT
 * instead of a signal): a write is a read from the pipe into the page, a
 * read a write from the page into the pipe.
 */
static i64 op_touch(const struct req *q)
{
	char *p = (char *)addr_of(q, q->start);
	i64 r;
	if (q->a[0]) {
		if (sys3(SYS_write, pipe_w, scratch, 1) != 1)
			return HELPER_FAILED;
		r = sys3(SYS_read, pipe_r, p, 1);
		if (r != 1 && sys3(SYS_read, pipe_r, scratch, 1) != 1)
			return HELPER_FAILED;
	} else {
		r = sys3(SYS_write, pipe_w, p, 1);
		if (r == 1 && sys3(SYS_read, pipe_r, scratch, 1) != 1)
			return HELPER_FAILED;
	}
	return r == 1 ? 0 : neg(r);
}

static int advice_ok(i64 a)
{
#define ADVICE(n) case n:
	switch (a) {
	MADV_LIST(ADVICE)
		return 1;
	}
	return 0;
}

/*
 * Room for a move the kernel places (mremap MREMAP_MAYMOVE without
 * MREMAP_FIXED): get_unmapped_area searches top-down below mmap_base, so
 * for the duration of the call every gap above the window, up to a little
 * below the stack (above mmap_base), is filled with a PROT_NONE mapping of
 * a file no script has (it merges with nothing). The highest gap that fits
 * is then in the window, or the one that goes on below it.
 */
enum { MAX_FILL = 256 };
static u64 fill_at[MAX_FILL][2];
static int fill_n, fill_fd = -1;

static void fill_range(u64 a, u64 b)
{
	if (a >= b || fill_n == MAX_FILL)
		return;
	if ((u64)sys6(SYS_mmap, a, b - a, 0, MAP_PRIVATE | MAP_NORESERVE | MAP_FIXED_NOREPLACE, fill_fd, 0) != a)
		return;
	fill_at[fill_n][0] = a;
	fill_at[fill_n][1] = b;
	fill_n++;
}

/* fill_above_window fills the gaps; -1 if it could not (the caller then
 * refuses the request rather than let the kernel place anywhere). */
static int fill_above_window(void)
{
	u64 lo = window_base + window_pages * PAGE, top = 0, cur = lo;
	if (readfile("/proc/self/maps") < 0)
		return -1;
	for (const char *l = procbuf; *l;) {
		const char *p = l;
		u64 s = hexat(&p);
		p++;
		u64 e = hexat(&p);
		const char *nl = l;
		while (*nl && *nl != '\n')
			nl++;
		for (const char *w = l; w + 7 <= nl; w++)
			if (starts(w, "[stack]"))
				top = s;
		l = *nl ? nl + 1 : nl;
		(void)e;
	}
	if (top < lo + (8L << 20))
		return -1;
	top -= 4L << 20; /* above mmap_base, below the stack's guard */
	fill_n = 0;
	for (const char *l = procbuf; *l;) {
		const char *p = l;
		u64 s = hexat(&p);
		p++;
		u64 e = hexat(&p);
		if (e > cur && s < top) {
			fill_range(cur, s < top ? s : top);
			cur = e > cur ? e : cur;
		}
		while (*l && *l != '\n')
			l++;
		if (*l)
			l++;
	}
	fill_range(cur, top);
	return 0;
}

static void unfill(void)
{
	for (int i = 0; i < fill_n; i++)
		sys2(SYS_munmap, fill_at[i][0], fill_at[i][1] - fill_at[i][0]);
	fill_n = 0;
}

/* op_remap_maymove: *at is the window page the range is at afterwards; a
 * range that landed below the window is unmapped. */
static i64 op_remap_maymove(const struct req *q, i64 *at)
{
	i64 newpages = q->a[0];
	if (q->region != REGION_WINDOW || !range_ok(q->region, q->start, newpages))
		return BAD_RANGE;
	if (fill_above_window() < 0) {
		unfill();
		return HELPER_FAILED;
	}
	i64 flags = MREMAP_MAYMOVE | (q->a[1] & REMAP_DONTUNMAP ? MREMAP_DONTUNMAP : 0);
	/* new_addr 0: no hint (MREMAP_DONTUNMAP goes through mremap_to, which
	 * reads it as one). */
	i64 r = sys5(SYS_mremap, addr_of(q, q->start), q->pages * PAGE, newpages * PAGE, flags, 0);
	unfill();
	if (r < 0 && r > -4096)
		return -r;
	u64 end = (u64)r + newpages * PAGE;
	if ((u64)r < window_base - window_pages * PAGE || end > window_base + window_pages * PAGE) {
		/* Outside what the helper watches: the search did not go as planned. */
		sys2(SYS_munmap, r, newpages * PAGE);
		return HELPER_FAILED;
	}
	if ((u64)r < window_base)
		sys2(SYS_munmap, r, newpages * PAGE);
	*at = ((i64)r - (i64)window_base) / PAGE;
	return 0;
}

/* op_remap: a[1] holds REMAP_FIXED (to the target a[2]) and
 * REMAP_DONTUNMAP; neither is a resize in place. */
static i64 op_remap(const struct req *q)
{
	i64 newpages = q->a[0], how = q->a[1], target = q->a[2];
	i64 flags = how & REMAP_DONTUNMAP ? MREMAP_DONTUNMAP : 0;
	if (!range_ok(q->region, q->start, newpages))
		return BAD_RANGE;
	if (how & REMAP_FIXED) {
		if (!range_ok(q->region, target, newpages))
			return BAD_RANGE;
		return neg(sys5(SYS_mremap, addr_of(q, q->start), q->pages * PAGE, newpages * PAGE,
				MREMAP_MAYMOVE | MREMAP_FIXED | flags, addr_of(q, target)));
	}
	return neg(sys5(SYS_mremap, addr_of(q, q->start), q->pages * PAGE, newpages * PAGE, flags, 0));
}

static i64 op_brk(const struct req *q)
{
	i64 b = q->a[0], bytes = q->a[1];
	if (b < -2 || b > (i64)heap_pages || bytes < 0 || bytes >= PAGE || (b == (i64)heap_pages && bytes))
		return BAD_RANGE;
	u64 want = start_brk + b * PAGE + bytes;
	return (u64)sys1(SYS_brk, want) == want ? 0 : 12; /* ENOMEM */
}

static i64 inode_of(int fd)
{
	u64 st[18]; /* struct stat is 144 bytes on x86-64; st_ino at 8 */
	if (sys2(SYS_fstat, fd, st) < 0)
		return -1;
	return (i64)st[1];
}

/* reopen_fd opens a new description of fd's file through /proc. */
static i64 reopen_fd(int fd, int readonly)
{
	char path[32];
	struct out o = {path, 0, sizeof path - 1};
	puts_(&o, "/proc/self/fd/");
	putdec(&o, fd);
	path[o.len] = 0;
	return sys2(SYS_open, path, readonly ? O_RDONLY : O_RDWR);
}

/* op_file binds a handle: open (a new memfd), reopen or dup. Returns the
 * errno; *ino is the inode. */
static i64 op_file(const struct req *q, i64 *ino)
{
	i64 h = q->a[0], of = q->a[1], readonly = q->a[2], fd;
	if (!handle_ok(h) || handle_fd[h] >= 0)
		return BAD_HANDLE;
	switch (q->op) {
	case OP_OPEN:
		fd = sys2(SYS_memfd_create, "ipcfuzz-vma", 0);
		if (fd < 0 || sys2(SYS_ftruncate, fd, file_pages * PAGE) < 0)
			return HELPER_FAILED;
		if (readonly) {
			i64 ro = reopen_fd(fd, 1);
			sys1(SYS_close, fd);
			if (ro < 0)
				return HELPER_FAILED;
			fd = ro;
		}
		break;
	case OP_REOPEN:
		if (fd_of(of) < 0)
			return EBADF;
		fd = reopen_fd(fd_of(of), readonly);
		break;
	default:
		if (fd_of(of) < 0)
			return EBADF;
		fd = sys1(SYS_dup, fd_of(of));
	}
	if (fd < 0)
		return neg(fd);
	handle_fd[h] = fd;
	*ino = inode_of(fd);
	return 0;
}

/* restore_brk puts the break back at start_brk and clears the heap area;
 * -EPERM if a sealed VMA is in the way, -1 if it fails otherwise. */
static int restore_brk(void)
{
	u64 cur = sys1(SYS_brk, 0);
	if (cur != start_brk && (u64)sys1(SYS_brk, start_brk) != start_brk) {
		/* The heap was unmapped under the break: give the shrink a page. */
		if (cur <= start_brk || cur > start_brk + heap_pages * PAGE)
			return -1;
		u64 below = (cur - 1) & ~(PAGE - 1);
		if (sys6(SYS_mmap, below, PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == -EPERM)
			return -EPERM;
		if ((u64)sys1(SYS_brk, start_brk) != start_brk)
			return -1;
	}
	if (sys2(SYS_munmap, start_brk, (heap_pages + 1) * PAGE) == -EPERM)
		return -EPERM;
	return 0;
}

/* op_reset empties the window, the heap area and the THP area and closes the files;
 * EPERM if a sealed VMA stays (only a new helper gets rid of it). */
/*
 * memlock: the limit of locked memory, and CAP_IPC_LOCK, as the helper had
 * them before a memlock (memlock_saved set), which its reset restores.
 */
enum { RLIMIT_MEMLOCK = 8, CAP_IPC_LOCK = 14, CAP_VERSION_3 = 0x20080522 };

struct cap_header {
	u32 version;
	int pid;
};

struct cap_data {
	u32 effective, permitted, inheritable;
};

static int memlock_saved;
static u64 memlock_limit[2];
static struct cap_data memlock_caps[2];

/* op_memlock sets RLIMIT_MEMLOCK to a[0] pages (the hard limit raised to
 * it where it is lower) and takes CAP_IPC_LOCK out of the effective set. */
static i64 op_memlock(const struct req *q)
{
	struct cap_header h = {CAP_VERSION_3, 0};
	struct cap_data c[2];
	u64 lim[2];
	if (q->a[0] < 0)
		return BAD_REQUEST;
	if (!memlock_saved) {
		if (sys4(SYS_prlimit64, 0, RLIMIT_MEMLOCK, 0, memlock_limit) < 0 ||
		    sys2(SYS_capget, &h, memlock_caps) < 0)
			return HELPER_FAILED;
		memlock_saved = 1;
	}
	lim[0] = (u64)q->a[0] * PAGE;
	lim[1] = memlock_limit[1] < lim[0] ? lim[0] : memlock_limit[1];
	if (sys4(SYS_prlimit64, 0, RLIMIT_MEMLOCK, lim, 0) < 0)
		return HELPER_FAILED;
	for (int i = 0; i < 2; i++)
		c[i] = memlock_caps[i];
	c[0].effective &= ~(1u << CAP_IPC_LOCK);
	h.version = CAP_VERSION_3;
	if (sys2(SYS_capset, &h, c) < 0)
		return HELPER_FAILED;
	return 0;
}

/* memlock_restore puts back what op_memlock changed. */
static int memlock_restore(void)
{
	struct cap_header h = {CAP_VERSION_3, 0};
	if (!memlock_saved)
		return 0;
	memlock_saved = 0;
	if (sys4(SYS_prlimit64, 0, RLIMIT_MEMLOCK, memlock_limit, 0) < 0 || sys2(SYS_capset, &h, memlock_caps) < 0)
		return -1;
	return 0;
}

/* locked_left: /proc/self/status still counts locked memory (VmLck) with
 * nothing of the script mapped: a kernel that leaked mm->locked_vm (6.16's
 * MREMAP_DONTUNMAP of a locked VMA), which only a new process undoes. */
static int locked_left(void)
{
	if (readfile("/proc/self/status") < 0)
		return 0;
	for (const char *l = procbuf; *l; l++)
		if ((l == procbuf || l[-1] == '\n') && starts(l, "VmLck:")) {
			l += slen("VmLck:");
			while (*l == ' ' || *l == '\t')
				l++;
			return *l != '0';
		}
	return 0;
}

static i64 op_reset(void)
{
	i64 sealed = sys2(SYS_munmap, window_base, window_pages * PAGE) == -EPERM;
	sealed |= sys2(SYS_munmap, thp_base, thp_pages * PAGE) == -EPERM;
	for (int h = 1; h <= MAX_HANDLES; h++) {
		if (handle_fd[h] >= 0)
			sys1(SYS_close, handle_fd[h]);
		handle_fd[h] = -1;
	}
	int r = restore_brk();
	if (memlock_restore() < 0)
		return HELPER_FAILED;
	if (sealed || r == -EPERM)
		return EPERM;
	if (r < 0)
		return HELPER_FAILED;
	return locked_left() ? LOCKED_LEFT : 0;
}

static i64 now_ns(void)
{
	i64 ts[2];
	sys2(SYS_clock_gettime, CLOCK_MONOTONIC, ts);
	return ts[0] * 1000000000L + ts[1];
}

static i64 measure_ns[1000];

/*
 * op_measure runs the brk-expand workload: n one-page VMAs (a free page
 * between any two) in the measure area, a one-page heap, then for each
 * repetition `rounds` rounds of a brk up by one page and back down, timed.
 */
static i64 op_measure(const struct req *q, u32 *reps_out)
{
	i64 n = q->a[0], reps = q->a[1], rounds = q->a[2];
	i64 err = 0;
	if (n < 0 || n > 60000 || reps < 1 || reps > 1000 || rounds < 1)
		return BAD_REQUEST;
	if (op_reset() < 0)
		return HELPER_FAILED;
	for (i64 i = 0; i < n && !err; i++) {
		u64 a = measure_base + 2 * i * PAGE;
		if ((u64)sys6(SYS_mmap, a, PAGE, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) != a)
			err = HELPER_FAILED;
	}
	u64 one = start_brk + PAGE, two = start_brk + 2 * PAGE;
	if (!err && (u64)sys1(SYS_brk, one) != one)
		err = HELPER_FAILED;
	for (i64 r = 0; r < reps && !err; r++) {
		i64 t0 = now_ns();
		for (i64 i = 0; i < rounds; i++) {
			if ((u64)sys1(SYS_brk, two) != two || (u64)sys1(SYS_brk, one) != one) {
				err = HELPER_FAILED;
				break;
			}
		}
		measure_ns[r] = now_ns() - t0;
	}
	sys2(SYS_munmap, measure_base, 2 * n * PAGE + PAGE);
	if (restore_brk() < 0)
		err = HELPER_FAILED;
	*reps_out = err ? 0 : reps;
	return err;
}

/*
 * KCOV (Documentation/dev-tools/kcov.rst): the kernel's program counters
 * of this process's syscalls, once the driver asks (OP_COVER 1). The
 * buffer is mapped where the kernel places it, outside the window and the
 * heap area; OP_COVER 0 answers with what the requests since the last
 * one collected, and empties it. KCOV is per task: a forked child enables
 * a buffer of its own.
 */
enum { KCOV_WORDS = 1 << 18, KCOV_INIT_TRACE = 0x80086301, KCOV_ENABLE = 0x6364, KCOV_TRACE_PC = 0 };
static u64 *kcov_area;
static i64 kcov_pid;

static i64 kcov_enable(void)
{
	i64 fd = sys2(SYS_open, "/sys/kernel/debug/kcov", O_RDWR);
	if (fd < 0)
		return neg(fd);
	i64 e = sys3(SYS_ioctl, fd, KCOV_INIT_TRACE, KCOV_WORDS);
	if (e < 0)
		goto fail;
	i64 a = sys6(SYS_mmap, 0, KCOV_WORDS * 8, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (a < 0 && a > -4096) {
		e = a;
		goto fail;
	}
	e = sys3(SYS_ioctl, fd, KCOV_ENABLE, KCOV_TRACE_PC);
	if (e < 0) {
		sys2(SYS_munmap, a, KCOV_WORDS * 8);
		goto fail;
	}
	kcov_area = (u64 *)a;
	kcov_pid = sys0(SYS_getpid);
	__atomic_store_n(&kcov_area[0], 0, __ATOMIC_RELAXED);
	return 0;
fail:
	sys1(SYS_close, fd);
	return neg(e);
}

static void op_cover(const struct req *q)
{
	if (q->a[0] == 1) {
		reply(kcov_area && kcov_pid == sys0(SYS_getpid) ? 0 : kcov_enable(), 0, 0, 0);
		return;
	}
	if (!kcov_area || kcov_pid != sys0(SYS_getpid)) {
		reply(0, 0, 0, 0);
		return;
	}
	u64 n = __atomic_load_n(&kcov_area[0], __ATOMIC_RELAXED);
	if (n > KCOV_WORDS - 1)
		n = KCOV_WORDS - 1;
	reply(0, n, kcov_area + 1, n * 8);
	__atomic_store_n(&kcov_area[0], 0, __ATOMIC_RELAXED);
}

/*
 * op_fork forks with CLONE_PARENT, so that the child is the driver's own
 * child (its parent-death signal then fires with the driver, and the
 * driver reaps it). The child answers with its pid and serves from then
 * on; the parent exits without a word. A fork that fails is answered by
 * the parent, which serves on.
 */
static void op_fork(void)
{
	i64 c = sys5(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0);
	if (c < 0) {
		reply(neg(c), 0, 0, 0);
		return;
	}
	if (c > 0)
		die(0);
	sys2(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL);
	if ((u64)sys0(SYS_getppid) != driver)
		die(4);
	if (kcov_area)
		kcov_enable(); /* the parent's buffer traces the parent */
	if (timed)
		timed_start = cpu_ns(); /* the child's clock starts at its birth */
	reply(0, sys0(SYS_getpid), 0, 0);
}

static void serve_one(const struct req *q)
{
	i64 e = 0, val = 0;
	u32 n = 0;
	struct out o = {outbuf, 0, sizeof outbuf};
	switch (q->op) {
	case OP_STATE: {
		/* The window, the heap area with the page above it, the THP area. */
		struct ranges r = {{{window_base, window_base + window_pages * PAGE},
				    {start_brk, start_brk + (heap_pages + 1) * PAGE},
				    {thp_base, thp_base + thp_pages * PAGE}}};
		e = smaps_select(&o, &r) < 0 ? HELPER_FAILED : 0;
		val = sys1(SYS_brk, 0);
		reply(e, val, outbuf, e ? 0 : o.len);
		return;
	}
	case OP_RESET:
		reply(op_reset(), 0, 0, 0);
		return;
	case OP_MEASURE:
		e = op_measure(q, &n);
		reply(e, 0, measure_ns, n * sizeof(i64));
		return;
	case OP_OPEN:
	case OP_REOPEN:
	case OP_DUP:
		e = op_file(q, &val);
		reply(e, val, 0, 0);
		return;
	case OP_BRK:
		reply(op_brk(q), 0, 0, 0);
		return;
	case OP_FORK:
		op_fork();
		return;
	case OP_COVER:
		op_cover(q);
		return;
	case OP_MEMLOCK:
		reply(op_memlock(q), 0, 0, 0);
		return;
	}
	if (!range_ok(q->region, q->start, q->pages)) {
		reply(BAD_RANGE, 0, 0, 0);
		return;
	}
	u64 addr = addr_of(q, q->start), len = q->pages * PAGE;
	switch (q->op) {
	case OP_MAP:
		e = op_map(q);
		break;
	case OP_UNMAP:
		e = neg(sys2(SYS_munmap, addr, len));
		break;
	case OP_PROTECT:
		e = neg(sys3(SYS_mprotect, addr, len, q->a[0]));
		break;
	case OP_TOUCH:
		e = q->pages == 1 ? op_touch(q) : BAD_RANGE;
		break;
	case OP_ADVISE:
		e = advice_ok(q->a[0]) ? neg(sys3(SYS_madvise, addr, len, q->a[0])) : BAD_REQUEST;
		break;
	case OP_LOCK:
		e = q->a[0] ? neg(sys3(SYS_mlock2, addr, len, MLOCK_ONFAULT)) : neg(sys2(SYS_mlock, addr, len));
		break;
	case OP_UNLOCK:
		e = neg(sys2(SYS_munlock, addr, len));
		break;
	case OP_REMAP:
		if (q->a[1] & REMAP_MAYMOVE) {
			e = op_remap_maymove(q, &val);
			reply(e, e ? 0 : val, 0, 0);
			return;
		}
		e = op_remap(q);
		break;
	case OP_SEAL:
		e = neg(sys3(SYS_mseal, addr, len, 0));
		break;
	default:
		e = BAD_REQUEST;
	}
	reply(e, 0, 0, 0);
}

/* ---------------------------------------------------------------- */
/* Start: checks, quirk probes, hello. */

/* region_free: nothing is mapped in [a, b) (checked by mapping it there
 * with MAP_FIXED_NOREPLACE, then unmapping it). */
static int region_free(u64 a, u64 b)
{
	i64 r = sys6(SYS_mmap, a, b - a, 0, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
	if ((u64)r != a) {
		if (r >= 0)
			sys2(SYS_munmap, r, b - a);
		return 0;
	}
	sys2(SYS_munmap, a, b - a);
	return 1;
}

static u64 W(i64 page) { return window_base + page * PAGE; }

static i64 map_anon(i64 page, i64 pages, i64 prot, i64 flags)
{
	return sys6(SYS_mmap, W(page), pages * PAGE, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | flags, -1, 0);
}

/* window_vmas counts the window's VMAs; *flags gets the VmFlags and
 * ProtectionKey lines of the first one. */
static int window_vmas(char *flags, u64 cap)
{
	struct out o = {outbuf, 0, sizeof outbuf - 1};
	struct ranges r = {{{window_base, window_base + window_pages * PAGE}, {0, 0}}};
	int count = 0;
	i64 n = smaps_select(&o, &r);
	if (n < 0)
		return -1;
	outbuf[n] = 0;
	struct out f = {flags, 0, cap - 1};
	for (char *l = outbuf; *l;) {
		char *nl = l;
		while (*nl && *nl != '\n')
			nl++;
		if (is_header(l))
			count++;
		else if (count == 1)
			put(&f, l, nl - l + 1);
		l = *nl ? nl + 1 : nl;
	}
	flags[f.len] = 0;
	return count;
}

static int has_word(const char *s, const char *w)
{
	for (; *s; s++)
		if ((s[0] == ' ') && starts(s + 1, w) && (s[1 + slen(w)] == ' ' || s[1 + slen(w)] == '\n' || !s[1 + slen(w)]))
			return 1;
	return 0;
}

static char probe_flags[1024];

static void clear_window(void) { sys2(SYS_munmap, window_base, window_pages * PAGE); }

/* between_two_touched maps pages 0 and 2 of the window, touches each
 * (written, or read), maps page 1 between them and returns how many VMAs
 * the window then has (their lines in outbuf). */
static i64 between_two_touched(i64 write)
{
	map_anon(0, 1, PROT_READ | PROT_WRITE, 0);
	map_anon(2, 1, PROT_READ | PROT_WRITE, 0);
	for (i64 p = 0; p <= 2; p += 2) {
		struct req t = {OP_TOUCH, REGION_WINDOW, p, 1, {write}};
		op_touch(&t);
	}
	map_anon(1, 1, PROT_READ | PROT_WRITE, 0);
	return window_vmas(probe_flags, sizeof probe_flags);
}

/* probe_quirks finds the version-dependent rules by trying them in the
 * window, which it leaves empty. */
static u64 probe_quirks(void)
{
	u64 q = 0;
	/* 879bca0a2c4f: a faulted VMA merges into an unfaulted neighbour. */
	map_anon(0, 2, PROT_READ | PROT_WRITE, 0);
	sys3(SYS_madvise, W(1), PAGE, MADV_DONTDUMP);
	{
		struct req t = {OP_TOUCH, REGION_WINDOW, 0, 1, {1}};
		op_touch(&t);
	}
	sys3(SYS_madvise, W(0), PAGE, MADV_DONTDUMP);
	if (window_vmas(probe_flags, sizeof probe_flags) == 1)
		q |= Q_ANON_MERGE_FIX;
	clear_window();
	/* Guard regions, gu, and merges that ignore and keep it. */
	map_anon(0, 2, PROT_READ | PROT_WRITE, 0);
	if (sys3(SYS_madvise, W(0), PAGE, MADV_GUARD_INSTALL) == 0) {
		q |= Q_GUARD_REGIONS;
		map_anon(2, 1, PROT_READ | PROT_WRITE, 0);
		if (window_vmas(probe_flags, sizeof probe_flags) == 1 && has_word(probe_flags, "gu"))
			q |= Q_STICKY_GUARD;
	}
	clear_window();
	/* mprotect drops VM_ACCOUNT from an unfaulted anonymous VMA. */
	map_anon(0, 1, PROT_READ | PROT_WRITE, 0);
	sys3(SYS_mprotect, W(0), PAGE, 0);
	if (window_vmas(probe_flags, sizeof probe_flags) == 1 && !has_word(probe_flags, "ac"))
		q |= Q_ACCOUNT_DROP;
	clear_window();
	/* MAP_STACK sets nh. */
	map_anon(0, 1, PROT_READ | PROT_WRITE, MAP_STACK);
	if (window_vmas(probe_flags, sizeof probe_flags) == 1 && has_word(probe_flags, "nh"))
		q |= Q_STACK_NOHUGE;
	clear_window();
	/* An execute-only mapping gets a protection key. */
	map_anon(0, 1, PROT_EXEC, 0);
	if (window_vmas(probe_flags, sizeof probe_flags) == 1) {
		const char *k = probe_flags;
		while (*k && !starts(k, "ProtectionKey:"))
			k++;
		if (*k) {
			k += slen("ProtectionKey:");
			while (*k == ' ')
				k++;
			if (*k >= '1' && *k <= '9')
				q |= Q_EXEC_ONLY_PKEY;
		}
	}
	clear_window();
	/* KSM and THP advices exist. */
	map_anon(0, 1, PROT_READ | PROT_WRITE, 0);
	if (sys3(SYS_madvise, W(0), PAGE, MADV_MERGEABLE) == 0)
		q |= Q_KSM;
	sys3(SYS_madvise, W(0), PAGE, MADV_UNMERGEABLE);
	if (sys3(SYS_madvise, W(0), PAGE, MADV_HUGEPAGE) == 0)
		q |= Q_THP;
	clear_window();
	/* A fixed move of a range over several VMAs. */
	map_anon(0, 1, PROT_READ | PROT_WRITE, 0);
	map_anon(2, 1, PROT_READ, 0);
	if (sys5(SYS_mremap, W(0), 3 * PAGE, 3 * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, W(8)) == (i64)W(8))
		q |= Q_MULTI_MOVE;
	clear_window();
	/* Configuration: every VMA shows sd (CONFIG_MEM_SOFT_DIRTY). */
	map_anon(0, 1, PROT_READ | PROT_WRITE, 0);
	if (window_vmas(probe_flags, sizeof probe_flags) == 1 && has_word(probe_flags, "sd"))
		q |= Q_SOFT_DIRTY;
	clear_window();
	/* An anonymous mapping at start_brk of an empty heap is [heap] where
	 * show_map_vma compares inclusively (6.1), not since
	 * vma_is_initial_heap(). */
	if ((u64)sys6(SYS_mmap, start_brk, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) ==
	    start_brk) {
		struct out o = {outbuf, 0, sizeof outbuf - 1};
		struct ranges r = {{{start_brk, start_brk + PAGE}, {0, 0}}};
		i64 n = smaps_select(&o, &r);
		if (n > 0) {
			outbuf[n] = 0;
			for (const char *l = outbuf; *l; l++)
				if (starts(l, "[heap]")) {
					q |= Q_HEAP_LABEL_INCLUSIVE;
					break;
				}
		}
		sys2(SYS_munmap, start_brk, PAGE);
	}
	/* 61f67c230a5e's follow-up: the mremap merge refuses a fork-child
	 * source. A page written before a fork is a fork child in the child
	 * process, which moves it next to an unwritten mapping and exits with
	 * 1 if the two stayed apart. */
	map_anon(0, 1, PROT_READ | PROT_WRITE, 0);
	{
		struct req t = {OP_TOUCH, REGION_WINDOW, 0, 1, {1}};
		op_touch(&t);
	}
	{
		i64 c = sys5(SYS_clone, SIGCHLD, 0, 0, 0, 0), status = 0;
		if (c == 0) {
			map_anon(2, 1, PROT_READ | PROT_WRITE, 0);
			sys5(SYS_mremap, W(0), PAGE, PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, W(1));
			die(window_vmas(probe_flags, sizeof probe_flags) == 2 ? 1 : 0);
		}
		if (c > 0 && sys4(SYS_wait4, c, &status, 0, 0) == c && (status & 0x7f) == 0 &&
		    ((status >> 8) & 0xff) == 1)
			q |= Q_FORK_CHILD_REMAP;
	}
	clear_window();
	/* The name of VM_LOCKONFAULT: "??" before "lf" existed. */
	map_anon(0, 1, PROT_READ | PROT_WRITE, 0);
	if (sys3(SYS_mlock2, W(0), PAGE, MLOCK_ONFAULT) == 0 &&
	    window_vmas(probe_flags, sizeof probe_flags) == 1 && has_word(probe_flags, "??"))
		q |= Q_LF_UNNAMED;
	clear_window();
	/* mseal exists: an empty range is a success that seals nothing; a
	 * kernel without it says ENOSYS. */
	if (sys3(SYS_mseal, window_base, 0, 0) == 0)
		q |= Q_MSEAL;
	/* A fixed mremap of an unmapped page onto itself: 6.1 looks the source
	 * up first (EFAULT), later kernels check the overlap first (EINVAL). */
	if (sys5(SYS_mremap, W(0), PAGE, PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, W(0)) == -EFAULT)
		q |= Q_REMAP_LOOKUP_FIRST;
	/* A new mapping between two pages written apart (two anon_vmas):
	 * where mmap tries next first and prev against next's anon_vma (6.1),
	 * next grows over it and the first VMA still ends at page 1; where it
	 * tries prev first (vma_merge_new_range), prev does. */
	if (between_two_touched(1) == 2) {
		const char *p = outbuf;
		hexat(&p);
		p++;
		if (hexat(&p) == W(1))
			q |= Q_MMAP_NEXT_FIRST;
	}
	clear_window();
	/* Configuration: MADV_WILLNEED on a private anonymous page is EBADF
	 * in a kernel without CONFIG_SWAP (madvise_willneed). */
	map_anon(0, 1, PROT_READ | PROT_WRITE, 0);
	if (sys3(SYS_madvise, W(0), PAGE, MADV_WILLNEED) == -EBADF)
		q |= Q_NO_SWAP;
	clear_window();
	/* An MREMAP_DONTUNMAP move of an unfaulted page pair to just after
	 * itself, before another unfaulted pair it could join: 6.1's copy_vma
	 * merges the copy with nothing (three VMAs), later kernels leave only
	 * the source out (two). */
	map_anon(0, 2, PROT_READ | PROT_WRITE, 0);
	map_anon(4, 2, PROT_READ | PROT_WRITE, 0);
	if (sys5(SYS_mremap, W(0), 2 * PAGE, 2 * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, W(2)) ==
	    (i64)W(2)) {
		/* ... and where the copy may join its own source (6.16's
		 * copy_vma), all three are one. */
		int n = window_vmas(probe_flags, sizeof probe_flags);
		if (n == 3)
			q |= Q_DONTUNMAP_APART;
		if (n == 1)
			q |= Q_DONTUNMAP_SELF_MERGE;
	}
	clear_window();
	/* A written pair moved away from where it was made keeps the pgoff of
	 * page 2; moved on whole with MREMAP_DONTUNMAP, what stays at page 10
	 * is unfaulted, and a pair mapped just below joins it where its pgoff
	 * became its address (Debian's 6.1 and 6.12), not where it kept it. */
	map_anon(2, 2, PROT_READ | PROT_WRITE, 0);
	{
		struct req t = {OP_TOUCH, REGION_WINDOW, 2, 1, {1}};
		op_touch(&t);
	}
	if (sys5(SYS_mremap, W(2), 2 * PAGE, 2 * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, W(10)) == (i64)W(10) &&
	    sys5(SYS_mremap, W(10), 2 * PAGE, 2 * PAGE, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, W(20)) ==
		    (i64)W(20)) {
		map_anon(8, 2, PROT_READ | PROT_WRITE, 0);
		if (window_vmas(probe_flags, sizeof probe_flags) == 3)
			q |= Q_DONTUNMAP_PGOFF_KEPT;
	}
	clear_window();
	/* MREMAP_DONTUNMAP of the middle page of a locked VMA: split around
	 * it first (three VMAs), or since 6.16 the whole VMA unlocked (one),
	 * its pages left counted in locked_vm for good: so in a child, which
	 * exits with 1 for one VMA. */
	{
		i64 c = sys5(SYS_clone, SIGCHLD, 0, 0, 0, 0), status = 0;
		if (c == 0) {
			map_anon(0, 3, PROT_READ | PROT_WRITE, 0);
			if (sys2(SYS_mlock, W(0), 3 * PAGE) != 0 ||
			    sys5(SYS_mremap, W(1), PAGE, PAGE, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, W(8)) !=
				    (i64)W(8))
				die(0);
			sys2(SYS_munmap, W(8), PAGE);
			die(window_vmas(probe_flags, sizeof probe_flags) == 1 ? 1 : 0);
		}
		if (c > 0 && sys4(SYS_wait4, c, &status, 0, 0) == c && (status & 0x7f) == 0 &&
		    ((status >> 8) & 0xff) == 1)
			q |= Q_DONTUNMAP_NO_SPLIT;
	}
	/* MADV_POPULATE_WRITE over a hole, then a read-only page: 6.1's walk
	 * steps over the hole and stops at the page (EINVAL), later kernels
	 * stop at the hole (ENOMEM). */
	map_anon(1, 1, PROT_READ, 0);
	if (sys3(SYS_madvise, W(1), PAGE, 22 /* MADV_POPULATE_READ: the advice exists (5.14) */) == 0 &&
	    sys3(SYS_madvise, W(0), 2 * PAGE, 23 /* MADV_POPULATE_WRITE */) == -EINVAL)
		q |= Q_POPULATE_IN_WALK;
	clear_window();
	/* Configuration: a read fault on private anonymous memory allocates a
	 * page (and an anon_vma) instead of mapping the zero page. Two pages
	 * read apart then have an anon_vma each, and a page mapped between
	 * them joins only one of them. */
	if (between_two_touched(0) == 2)
		q |= Q_NO_ZERO_PAGE;
	clear_window();
	return q;
}

static char release[80];

static void hello(u64 quirks)
{
	u64 uts[6 * 65 / 8 + 1];
	struct out o = {outbuf, 0, sizeof outbuf};
	const char *rel = (const char *)uts + 2 * 65;
	if (sys1(SYS_uname, uts) < 0)
		rel = "unknown";
	for (u64 i = 0; i < sizeof release - 1 && rel[i]; i++)
		release[i] = rel[i];
	puts_(&o, "vmahelper 1 start_brk=");
	putnum(&o, start_brk, 16);
	puts_(&o, " quirks=");
	putnum(&o, quirks, 16);
	puts_(&o, " release=");
	puts_(&o, release);
	reply(0, 0, outbuf, o.len);
}

static void start(u64 *sp)
{
	i64 argc = (i64)sp[0];
	char **argv = (char **)(sp + 1);
	u64 ppid;
	if (argc != 9 || parsenum(argv[1], 16, &window_base) || parsenum(argv[2], 10, &window_pages) ||
	    parsenum(argv[3], 10, &heap_pages) || parsenum(argv[4], 10, &file_pages) ||
	    parsenum(argv[5], 16, &measure_base) || parsenum(argv[6], 10, &ppid) ||
	    parsenum(argv[7], 16, &thp_base) || parsenum(argv[8], 10, &thp_pages))
		refuse("usage: vmahelper window-base-hex window-pages heap-pages file-pages measure-base-hex parent-pid "
		       "thp-base-hex thp-pages",
		       0, 0);
	/* Die with the process that drives us, even if it was already gone. */
	sys2(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL);
	if ((u64)sys0(SYS_getppid) != ppid)
		die(4);
	driver = ppid;
	/* The helper shares the process group of the process that started it:
	 * Ctrl-C, or timeout -s INT signalling the group, must not end it in the
	 * middle of a script; it ends with its driver (SIGKILL). */
	{
		static const int job_signals[] = {1, 2, 3, 13, 15}; /* HUP INT QUIT PIPE TERM */
		struct {
			i64 h;
			u64 flags;
			i64 r;
			u64 mask;
		} ign = {1 /* SIG_IGN */, 0, 0, 0};
		for (unsigned i = 0; i < sizeof job_signals / sizeof job_signals[0]; i++)
			if (sys6(SYS_rt_sigaction, job_signals[i], (i64)&ign, 0, 8, 0, 0) < 0)
				refuse("cannot ignore the job-control signals", job_signals[i], 0);
	}
	for (int h = 0; h <= MAX_HANDLES; h++)
		handle_fd[h] = -1;
	int fds[2];
	if (sys2(SYS_pipe2, fds, 0) < 0)
		refuse("cannot make a pipe", 0, 0);
	pipe_r = fds[0];
	pipe_w = fds[1];

	if (window_base % PAGE || window_base < 2 * PAGE)
		refuse("bad window base", window_base, 0);
	/* The window, a page above it and as much below it (where a range the
	 * kernel places may land) are free. */
	if (!region_free(window_base - window_pages * PAGE, window_base + (window_pages + 1) * PAGE))
		refuse("the window is taken", window_base - window_pages * PAGE, window_base + (window_pages + 1) * PAGE);
	/* The THP area is aligned to a PMD's 2 MiB, so that a mapping of it can
	 * hold a PMD-mapped huge page, and free. */
	if (thp_base % (2L << 20) || thp_base < window_base + (window_pages + 1) * PAGE)
		refuse("bad THP area base", thp_base, 0);
	if (!region_free(thp_base, thp_base + thp_pages * PAGE))
		refuse("the THP area is taken", thp_base, thp_base + thp_pages * PAGE);
	fill_fd = sys2(SYS_memfd_create, "ipcfuzz-vma-fill", 0);
	if (fill_fd < 0)
		refuse("cannot make the fill file", 0, 0);
	start_brk = stat_start_brk();
	if ((u64)sys1(SYS_brk, 0) != start_brk)
		refuse("the program break has moved from start_brk", start_brk, sys1(SYS_brk, 0));
	if (!region_free(start_brk - PAGE, start_brk + (heap_pages + 2) * PAGE))
		refuse("the heap area is not free (is address space randomization off?)", start_brk - PAGE,
		       start_brk + (heap_pages + 2) * PAGE);
	hello(probe_quirks());
}

void start_c(u64 *sp)
{
	static struct req q;
	start(sp);
	for (;;) {
		int r = read_all(VMA_REQ_FD, &q, sizeof q);
		if (r == 0)
			die(0);
		if (r < 0)
			die(3);
		if (q.op & OP_TIMED) {
			q.op &= ~(u32)OP_TIMED;
			time_request();
		}
		serve_one(&q);
	}
}

__asm__(".text\n"
	".globl _start\n"
	"_start:\n"
	"	xor %rbp, %rbp\n"
	"	mov %rsp, %rdi\n"
	"	and $-16, %rsp\n"
	"	call start_c\n"
	"	hlt\n");
