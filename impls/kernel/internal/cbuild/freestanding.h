/*
 * freestanding.h: the runtime of ipcfuzz's freestanding C programs (the
 * kernel task server, the VMA helper), for x86-64 Linux: no libc, no
 * loader, no allocation; raw syscalls and static buffers. Package cbuild
 * puts it beside every program it builds.
 */
#ifndef IPCFUZZ_FREESTANDING_H
#define IPCFUZZ_FREESTANDING_H

#if !defined(__x86_64__)
#error "ipcfuzz's freestanding programs support x86-64 only"
#endif

typedef unsigned long u64;
typedef long i64;
typedef unsigned int u32;
typedef int i32;

/* The syscalls the runtime itself makes (x86-64 numbers). */
enum { SYS_read = 0, SYS_write = 1, SYS_exit_group = 231 };

enum { EINTR = 4 };

static inline i64 sys6(i64 n, i64 a, i64 b, i64 c, i64 d, i64 e, i64 f)
{
	i64 r;
	register i64 r10 __asm__("r10") = d;
	register i64 r8 __asm__("r8") = e;
	register i64 r9 __asm__("r9") = f;
	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return r;
}
#define sys0(n) sys6(n, 0, 0, 0, 0, 0, 0)
#define sys1(n, a) sys6(n, (i64)(a), 0, 0, 0, 0, 0)
#define sys2(n, a, b) sys6(n, (i64)(a), (i64)(b), 0, 0, 0, 0)
#define sys3(n, a, b, c) sys6(n, (i64)(a), (i64)(b), (i64)(c), 0, 0, 0)
#define sys4(n, a, b, c, d) sys6(n, (i64)(a), (i64)(b), (i64)(c), (i64)(d), 0, 0)
#define sys5(n, a, b, c, d, e) sys6(n, (i64)(a), (i64)(b), (i64)(c), (i64)(d), (i64)(e), 0)

/* The compiler may emit calls to these for copies and zeroing. */
void *memset(void *d, int c, u64 n)
{
	unsigned char *p = d;
	while (n--)
		*p++ = (unsigned char)c;
	return d;
}

void *memcpy(void *d, const void *s, u64 n)
{
	unsigned char *p = d;
	const unsigned char *q = s;
	while (n--)
		*p++ = *q++;
	return d;
}

static inline u64 slen(const char *s)
{
	u64 n = 0;
	while (s[n])
		n++;
	return n;
}

static inline int mem_eq(const void *a, const void *b, u64 n)
{
	const unsigned char *x = a, *y = b;
	for (u64 i = 0; i < n; i++)
		if (x[i] != y[i])
			return 0;
	return 1;
}

/* die ends the process with code. */
static inline __attribute__((noreturn)) void die(int code)
{
	for (;;)
		sys1(SYS_exit_group, code);
}

/* die_msg writes "<prefix><msg>\n" to stderr and ends the process. */
static inline __attribute__((noreturn)) void die_msg(int code, const char *prefix, const char *msg)
{
	sys3(SYS_write, 2, prefix, slen(prefix));
	sys3(SYS_write, 2, msg, slen(msg));
	sys3(SYS_write, 2, "\n", 1);
	die(code);
}

/*
 * read_all reads n bytes from fd (a blocking pipe), again after EINTR: 1
 * when it has them all, 0 at the end of the file before any byte, -1 on an
 * error, -2 at the end of the file part-way.
 */
static inline int read_all(int fd, void *buf, u64 n)
{
	char *p = buf;
	for (u64 got = 0; got < n;) {
		i64 r = sys3(SYS_read, fd, p + got, n - got);
		if (r == -EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			return got == 0 ? 0 : -2;
		got += (u64)r;
	}
	return 1;
}

/* write_all writes n bytes to fd, again after EINTR: 0, or -1 on an error. */
static inline int write_all(int fd, const void *buf, u64 n)
{
	const char *p = buf;
	while (n > 0) {
		i64 r = sys3(SYS_write, fd, p, n);
		if (r == -EINTR)
			continue;
		if (r < 0)
			return -1;
		p += r;
		n -= (u64)r;
	}
	return 0;
}

#endif /* IPCFUZZ_FREESTANDING_H */
