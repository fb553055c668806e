/*
 * drbench: the guest side of `droidroot bench`. A freestanding static program (no libc)
 * that makes system calls in timed loops and prints what they cost. It runs natively,
 * under droidroot and under any proot-like tracer, and as the tracee of the Go side's
 * mechanism measurements (ptrace, user notification), so it must not depend on anything
 * but the kernel.
 *
 * usage:
 *   drbench calls DIR US NAME[,NAME...]  time each call for about US microseconds on the
 *                                       tree in DIR (made by the Go side, see bench/tree.go);
 *                                       prints "NAME ITERATIONS NANOSECONDS" per call, or
 *                                       "NAME failed ERRNO" (then the next call; exit 1)
 *   drbench par DIR US N                N threads doing stat for US microseconds;
 *                                       prints "par N OPERATIONS NANOSECONDS"
 *   drbench mech KIND CPU US            getppid under mechanism KIND (native, allow,
 *                                       nocache, trap, trace, notify), pinned to CPU
 *                                       (-1: not pinned); prints "KIND ITERATIONS NANOSECONDS";
 *                                       KIND fault times a page fault instead (op_fault)
 *   drbench exit                        exit 0 (fork+exec runs argv[0] with it: start
 *                                       drbench by a path, not a name)
 *   drbench spawn ROOT N PROG ARGS...   run PROG N times in turn (fork, execve, its standard
 *                                       output drained through a pipe, wait4), after
 *                                       chroot(ROOT) unless ROOT is "-"; prints "run NANOSECONDS"
 *                                       per run (a whole program's cost inside a running session)
 *
 * Errors print "drbench: ..." on stderr and exit 1. Timing uses clock_gettime
 * (CLOCK_MONOTONIC) as a raw syscall: its cost is spread over a batch of calls.
 *
 * Built with -DDR_LIBC (bench/bin/drbench-libc-*), the same program is a dynamically
 * linked glibc program whose calls go through libc's syscall(), as FEX's and Wine's do:
 * there droidroot's fast path library can answer them in-process ("calls" only; the
 * waitv call, a futex_waitv ping-pong with a second process, is meant for it).
 */
#if defined(__x86_64__)
#include "arch-x86_64.h"
#elif defined(__aarch64__)
#include "arch-aarch64.h"
#else
#error "unsupported architecture"
#endif

typedef unsigned long u64;
typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned char u8;

#define AT_FDCWD -100
#define AT_SYMLINK_NOFOLLOW 0x100
#define AT_REMOVEDIR 0x200
#define O_RDONLY 0
#define O_DIRECTORY 0200000
#define O_PATH 010000000
#define O_CLOEXEC 02000000
#define R_OK 4
#define ENOENT 2
#define EINTR 4
#define EINVAL 22
#define ENOSYS 38
#define SIGCHLD 17
#define SIGSYS 31
#define CLOCK_MONOTONIC 1
#define FUTEX_WAIT 0
#define PROT_RW 3
#define MAP_PRIVATE_ANON 0x22
#define PR_SET_NO_NEW_PRIVS 38
#define SECCOMP_SET_MODE_FILTER 1
#define SECCOMP_FILTER_FLAG_NEW_LISTENER 8
#define SA_SIGINFO 4
#define SA_RESTORER 0x04000000
#define SOL_SOCKET 1
#define SCM_RIGHTS 1

#define CLONE_THREAD_FLAGS                                                            \
	(0x100 /* VM */ | 0x200 /* FS */ | 0x400 /* FILES */ | 0x800 /* SIGHAND */ |  \
	 0x10000 /* THREAD */ | 0x40000 /* SYSVSEM */ | 0x100000 /* PARENT_SETTID */ | \
	 0x200000 /* CHILD_CLEARTID */)

#ifdef DR_LIBC
/* Through libc's syscall(), with the kernel's -errno convention kept. */
long syscall(long, ...);
int *__errno_location(void);
void *mmap(void *, unsigned long, int, int, int, long);
static long dr_sys(long n, long a, long b, long c, long d, long e, long f)
{
	long r = syscall(n, a, b, c, d, e, f);
	return r == -1 ? -(long)*__errno_location() : r;
}
#else
#define dr_sys dr_syscall6
#endif
#define sys0(n) dr_sys((n), 0, 0, 0, 0, 0, 0)
#define sys1(n, a) dr_sys((n), (long)(a), 0, 0, 0, 0, 0)
#define sys2(n, a, b) dr_sys((n), (long)(a), (long)(b), 0, 0, 0, 0)
#define sys3(n, a, b, c) dr_sys((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define sys4(n, a, b, c, d) dr_sys((n), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)
#define sys5(n, a, b, c, d, e) dr_sys((n), (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), 0)

#ifdef DR_LIBC
/* The libc build makes "calls" and "par" (threads from libc's
 * pthread_create, which clear *ctid and wake it at their end as
 * CLONE_CHILD_CLEARTID would), no mechanism rows. */
int pthread_create(unsigned long *thread, const void *attr, void *(*start)(void *), void *arg);
struct dr_pt {
	long (*fn)(void *);
	void *arg;
	int *ctid;
};
static struct dr_pt dr_pts[256];
static int dr_npts;
static void *dr_pt_start(void *p)
{
	struct dr_pt *t = p;
	t->fn(t->arg);
	__atomic_store_n(t->ctid, 0, __ATOMIC_SEQ_CST);
	syscall(SYS_futex, t->ctid, 1 /* FUTEX_WAKE */, 1);
	return 0;
}
static long dr_thread(long flags, void *stack_top, int *ptid, int *ctid, long (*fn)(void *), void *arg)
{
	(void)flags, (void)stack_top;
	if (dr_npts >= 256)
		return -11; /* EAGAIN */
	struct dr_pt *t = &dr_pts[dr_npts++];
	t->fn = fn, t->arg = arg, t->ctid = ctid;
	*ptid = 1;
	unsigned long th;
	int r = pthread_create(&th, 0, dr_pt_start, t);
	return r ? -r : 1;
}
#undef DR_NEED_RESTORER
#define DR_NEED_RESTORER 0
#else
long dr_thread(long flags, void *stack_top, int *ptid, int *ctid, long (*fn)(void *), void *arg);
#if DR_NEED_RESTORER
void dr_restorer(void);
#endif
#endif

/* ---- small helpers ---- */

#ifndef DR_LIBC
/* gcc may emit calls to these for struct copies and zeroing, even freestanding. */
void *memset(void *p, int c, unsigned long n);
void *memcpy(void *d, const void *s, unsigned long n);
void *memset(void *p, int c, unsigned long n)
{
	volatile u8 *b = p;
	while (n--)
		*b++ = (u8)c;
	return p;
}
void *memcpy(void *d, const void *s, unsigned long n)
{
	volatile u8 *o = d;
	const u8 *i = s;
	while (n--)
		*o++ = *i++;
	return d;
}
#endif

static u64 dr_strlen(const char *s)
{
	u64 n = 0;
	while (s[n])
		n++;
	return n;
}

static int dr_streq(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

static char *dr_cat(char *dst, const char *src)
{
	while (*src)
		*dst++ = *src++;
	*dst = 0;
	return dst;
}

static void dr_memset(void *p, int c, u64 n)
{
	volatile u8 *b = p;
	while (n--)
		*b++ = (u8)c;
}

static long dr_atol(const char *s)
{
	long v = 0, neg = 0;
	if (*s == '-')
		neg = 1, s++;
	while (*s >= '0' && *s <= '9')
		v = v * 10 + (*s++ - '0');
	return neg ? -v : v;
}

static char *dr_utoa(char *p, u64 v)
{
	char tmp[24];
	int n = 0;
	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	while (n)
		*p++ = tmp[--n];
	*p = 0;
	return p;
}

static void dr_write_all(int fd, const char *s, u64 n)
{
	while (n) {
		long w = sys3(SYS_write, fd, s, n);
		if (w == -EINTR)
			continue;
		if (w <= 0)
			return;
		s += w, n -= (u64)w;
	}
}

static void dr_puts(int fd, const char *s) { dr_write_all(fd, s, dr_strlen(s)); }

static __attribute__((noreturn)) void dr_exit(int code)
{
	for (;;)
		sys1(SYS_exit_group, code);
}

static __attribute__((noreturn)) void die(const char *what, const char *arg, long err)
{
	char buf[512], *p = buf;
	p = dr_cat(p, "drbench: ");
	p = dr_cat(p, what);
	if (arg) {
		p = dr_cat(p, " ");
		p = dr_cat(p, arg);
	}
	if (err) {
		p = dr_cat(p, ": errno ");
		p = dr_utoa(p, (u64)(err < 0 ? -err : err));
	}
	p = dr_cat(p, "\n");
	dr_write_all(2, buf, (u64)(p - buf));
	dr_exit(1);
}

struct dr_timespec {
	long sec, nsec;
};

static u64 now_ns(void)
{
	struct dr_timespec t;
	sys2(SYS_clock_gettime, CLOCK_MONOTONIC, &t);
	return (u64)t.sec * 1000000000ul + (u64)t.nsec;
}

static void report(const char *name, u64 a, u64 b, u64 c)
{
	char buf[160], *p = buf;
	p = dr_cat(p, name);
	p = dr_cat(p, " ");
	p = dr_utoa(p, a);
	p = dr_cat(p, " ");
	p = dr_utoa(p, b);
	if (c != (u64)-1) {
		p = dr_cat(p, " ");
		p = dr_utoa(p, c);
	}
	p = dr_cat(p, "\n");
	dr_write_all(1, buf, (u64)(p - buf));
}

static void pin(long cpu)
{
	u64 mask[16];
	if (cpu < 0)
		return;
	if (cpu >= 1024)
		die("cpu out of range", 0, 0);
	dr_memset(mask, 0, sizeof mask);
	mask[cpu / 64] = 1ul << (cpu % 64);
	long r = sys3(SYS_sched_setaffinity, 0, sizeof mask, mask);
	if (r < 0)
		die("sched_setaffinity", 0, r);
}

static void *map_pages(u64 size)
{
	long p = dr_syscall6(SYS_mmap, 0, (long)size, PROT_RW, MAP_PRIVATE_ANON, -1, 0);
	if (p < 0 && p > -4096)
		die("mmap", 0, p);
	return (void *)p;
}

/* ---- the tree the calls work on (made by the Go side) ---- */

static char dir_path[256];   /* DIR */
static char deep_dir[320];   /* DIR/d/e/e/p/dir */
static char deep_file[352];  /* DIR/d/e/e/p/dir/file */
static char deep_link[352];  /* DIR/d/e/e/p/dir/link -> file */
static char deep_miss[352];  /* DIR/d/e/e/p/dir/missing */
static char scratch_a[352];  /* DIR/scratch/a */
static char scratch_b[352];  /* DIR/scratch/b */
static const char *self_path; /* argv[0]: how we were started (fork+exec runs it again) */
static int deep_fd = -1;
static u8 statbuf[256];
static char buf[4096];
static char **envp_g;
static int rename_flip;

static void setup_paths(const char *dir)
{
	if (dr_strlen(dir) > 200)
		die("directory path too long:", dir, 0);
	dr_cat(dir_path, dir);
	dr_cat(dr_cat(deep_dir, dir), "/d/e/e/p/dir");
	dr_cat(dr_cat(deep_file, deep_dir), "/file");
	dr_cat(dr_cat(deep_link, deep_dir), "/link");
	dr_cat(dr_cat(deep_miss, deep_dir), "/missing");
	dr_cat(dr_cat(scratch_a, dir), "/scratch/a");
	dr_cat(dr_cat(scratch_b, dir), "/scratch/b");
}

/* ---- one operation per call row; < 0 is an error ---- */

static long op_stat(void) { return sys4(SYS_newfstatat, AT_FDCWD, deep_file, statbuf, 0); }
static long op_lstat(void)
{
	return sys4(SYS_newfstatat, AT_FDCWD, deep_link, statbuf, AT_SYMLINK_NOFOLLOW);
}
static long op_open(void)
{
	long fd = sys4(SYS_openat, AT_FDCWD, deep_file, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return fd;
	return sys1(SYS_close, fd);
}
static long op_access(void) { return sys3(SYS_faccessat, AT_FDCWD, deep_file, R_OK); }
static long op_fstatat(void) { return sys4(SYS_newfstatat, deep_fd, "file", statbuf, 0); }
static long op_utime(void) { return sys4(SYS_utimensat, AT_FDCWD, deep_file, 0, 0); }
static long op_missing(void)
{
	long r = sys4(SYS_newfstatat, AT_FDCWD, deep_miss, statbuf, 0);
	return r == -ENOENT ? 0 : (r == 0 ? -1 : r);
}
static long op_readlink(void) { return sys4(SYS_readlinkat, AT_FDCWD, "/proc/self/exe", buf, sizeof buf); }
static long op_getcwd(void) { return sys2(SYS_getcwd, buf, sizeof buf); }
static long op_uname(void) { return sys1(SYS_uname, buf); }
static long op_chdir(void)
{
	long r = sys1(SYS_chdir, deep_dir);
	if (r < 0)
		return r;
	return sys1(SYS_chdir, dir_path);
}
static long op_mkdir(void)
{
	long r = sys3(SYS_mkdirat, AT_FDCWD, scratch_a, 0755);
	if (r < 0)
		return r;
	return sys3(SYS_unlinkat, AT_FDCWD, scratch_a, AT_REMOVEDIR);
}
static long op_rename(void)
{
	rename_flip ^= 1;
	if (rename_flip)
		return sys5(SYS_renameat2, AT_FDCWD, scratch_a, AT_FDCWD, scratch_b, 0);
	return sys5(SYS_renameat2, AT_FDCWD, scratch_b, AT_FDCWD, scratch_a, 0);
}
static long op_symlink(void)
{
	long r = sys3(SYS_symlinkat, "file", AT_FDCWD, scratch_a);
	if (r < 0)
		return r;
	return sys3(SYS_unlinkat, AT_FDCWD, scratch_a, 0);
}

static void *thread_stack;
static volatile int thread_tid;

static long thread_noop(void *arg)
{
	(void)arg;
	return 0;
}

/* Wait until the kernel clears *tid (CLONE_CHILD_CLEARTID) when the thread has exited. */
static void join(volatile int *tid)
{
	for (;;) {
		int v = *tid;
		if (v == 0)
			return;
		sys4(SYS_futex, tid, FUTEX_WAIT, v, 0);
	}
}

static long op_thread(void)
{
	if (!thread_stack)
		thread_stack = map_pages(65536);
	long r = dr_thread(CLONE_THREAD_FLAGS, (char *)thread_stack + 65536, (int *)&thread_tid,
			   (int *)&thread_tid, thread_noop, 0);
	if (r < 0)
		return r;
	join(&thread_tid);
	return 0;
}

static long op_forkexec(void)
{
	long pid = sys2(SYS_clone, SIGCHLD, 0);
	if (pid < 0)
		return pid;
	if (pid == 0) {
		char *argv[] = {(char *)self_path, "exit", 0};
		sys3(SYS_execve, self_path, argv, envp_g);
		sys1(SYS_exit_group, 127);
	}
	int status = 0;
	long r;
	do
		r = sys4(SYS_wait4, pid, &status, 0, 0);
	while (r == -EINTR);
	if (r < 0)
		return r;
	return status == 0 ? 0 : -1000 - status;
}

static long op_getppid(void) { return sys0(SYS_getppid); }

#if defined(__x86_64__)
#define SYS_chroot_ 161
#define SYS_dup3_ 292
#define SYS_pipe2_ 293
#elif defined(__aarch64__)
#define SYS_chroot_ 51
#define SYS_dup3_ 24
#define SYS_pipe2_ 59
#endif

/* spawn: run a program N times, each run timed from fork to its reaping, its standard
 * output read to the end (as `| cat` would: tar -f - to a file it can see is /dev/null
 * skips reading the files). A non-zero exit fails the measurement. */
static int cmd_spawn(long argc, char **argv)
{
	long n = dr_atol(argv[3]);
	if (n < 1 || n > 100000)
		die("run count out of range:", argv[3], 0);
	if (!dr_streq(argv[2], "-")) {
		long r = sys1(SYS_chroot_, argv[2]);
		if (r < 0)
			die("chroot", argv[2], r);
		if ((r = sys1(SYS_chdir, "/")) < 0)
			die("chdir /", 0, r);
	}
	char **prog = argv + 4;
	(void)argc;
	static char sink[65536];
	for (long i = 0; i < n; i++) {
		int fds[2];
		long r = sys2(SYS_pipe2_, fds, O_CLOEXEC);
		if (r < 0)
			die("pipe2", 0, r);
		u64 t0 = now_ns();
		long pid = sys2(SYS_clone, SIGCHLD, 0);
		if (pid < 0)
			die("fork", 0, pid);
		if (pid == 0) {
			sys3(SYS_dup3_, fds[1], 1, 0);
			r = sys3(SYS_execve, prog[0], prog, envp_g);
			die("execve", prog[0], r);
		}
		sys1(SYS_close, fds[1]);
		while ((r = sys3(SYS_read, fds[0], sink, sizeof sink)) != 0)
			if (r < 0 && r != -EINTR)
				die("read", 0, r);
		int status = 0;
		do
			r = sys4(SYS_wait4, pid, &status, 0, 0);
		while (r == -EINTR);
		u64 el = now_ns() - t0;
		sys1(SYS_close, fds[0]);
		if (r < 0)
			die("wait4", 0, r);
		if (status != 0) {
			char num[24];
			*dr_utoa(num, (u64)status) = 0;
			die("the program failed, wait status", num, 0);
		}
		report("run", 1, el, (u64)-1);
	}
	return 0;
}

/* waitv: one round trip with a partner process through two-word futex_waitv
 * waits on a shared file mapping (Proton fsync's pattern): w[1] is the ping,
 * w[2] the pong, w[3] a second word nobody sets, w[0] tells the partner to stop. */
struct dr_waitv {
	u64 val, uaddr;
	u32 flags, reserved;
};
static volatile u32 *ww;
static long waitv_partner;

static long waitv_until(volatile u32 *word, u32 want)
{
	for (;;) {
		u32 v = __atomic_load_n(word, __ATOMIC_SEQ_CST);
		if (v == want || __atomic_load_n(&ww[0], __ATOMIC_SEQ_CST))
			return 0;
		struct dr_waitv w[2] = {{v, (u64)word, 2 /* FUTEX_32 */, 0}, {0, (u64)&ww[3], 2, 0}};
		long r = sys5(SYS_futex_waitv, w, 2, 0, 0, 0);
		if (r < 0 && r != -11 /* EAGAIN */ && r != -EINTR)
			return r;
	}
}

static long waitv_setup(void)
{
	char path[400];
	dr_cat(dr_cat(path, dir_path), "/scratch/waitv");
	long fd = sys4(SYS_openat, AT_FDCWD, path, 02 | 0100 | O_CLOEXEC /* O_RDWR|O_CREAT */, 0600);
	if (fd < 0)
		return fd;
	long r = sys2(SYS_ftruncate, fd, 4096);
	if (r < 0)
		return r;
#ifdef DR_LIBC
	long p = (long)mmap(0, 4096, PROT_RW, 1 /* MAP_SHARED */, (int)fd, 0);
	if (p == -1)
		return -(long)*__errno_location();
#else
	long p = dr_syscall6(SYS_mmap, 0, 4096, PROT_RW, 1 /* MAP_SHARED */, fd, 0);
	if (p < 0 && p > -4096)
		return p;
#endif
	sys1(SYS_close, fd);
	sys3(SYS_unlinkat, AT_FDCWD, path, 0);
	ww = (volatile u32 *)p;
	/* Probe first: ENOSYS fails the row here rather than in the partner. */
	struct dr_waitv probe[2] = {{1, (u64)&ww[3], 2, 0}, {1, (u64)&ww[3], 2, 0}};
	r = sys5(SYS_futex_waitv, probe, 2, 0, 0, 0);
	if (r != -11)
		return r < 0 ? r : -1000;
	long pid = sys2(SYS_clone, SIGCHLD, 0);
	if (pid < 0)
		return pid;
	if (pid == 0) {
		for (u32 i = 1;; i++) {
			if (waitv_until(&ww[1], i) < 0 || __atomic_load_n(&ww[0], __ATOMIC_SEQ_CST))
				sys1(SYS_exit_group, 0);
			__atomic_store_n(&ww[2], i, __ATOMIC_SEQ_CST);
			sys3(SYS_futex, &ww[2], 1 /* FUTEX_WAKE */, 1);
		}
	}
	waitv_partner = pid;
	return 0;
}

static long op_waitv(void)
{
	if (!ww) {
		long r = waitv_setup();
		if (r < 0)
			return r;
	}
	u32 i = __atomic_load_n(&ww[1], __ATOMIC_SEQ_CST) + 1;
	__atomic_store_n(&ww[1], i, __ATOMIC_SEQ_CST);
	sys3(SYS_futex, &ww[1], 1 /* FUTEX_WAKE */, 1);
	return waitv_until(&ww[2], i);
}

static void waitv_stop(void)
{
	if (!waitv_partner)
		return;
	__atomic_store_n(&ww[0], 1, __ATOMIC_SEQ_CST);
	sys3(SYS_futex, &ww[1], 1, 1);
	int status;
	sys4(SYS_wait4, waitv_partner, &status, 0, 0);
	waitv_partner = 0;
}

struct call {
	const char *name;
	long (*op)(void);
};

static const struct call calls[] = {
	{"stat", op_stat},	     {"lstat", op_lstat},	{"open", op_open},
	{"access", op_access},	     {"fstatat", op_fstatat},	{"missing", op_missing},
	{"readlink", op_readlink},   {"getcwd", op_getcwd},	{"uname", op_uname},
	{"chdir", op_chdir},	     {"mkdir", op_mkdir},	{"rename", op_rename},
	{"symlink", op_symlink},     {"thread", op_thread},	{"forkexec", op_forkexec},
	{"getppid", op_getppid},  {"waitv", op_waitv},	{"utime", op_utime},
};

/*
 * Run op for about target_ns: batches sized from the rate so far, the clock read once per
 * batch. Reports "NAME ITERATIONS NANOSECONDS", or "NAME failed ERRNO" (stdout, and a line
 * on stderr) when a call fails, and returns -1: the calls after it still run.
 */
static int timed(const char *name, long (*op)(void), u64 target_ns)
{
	long r = 0;
	u64 n = 0, batch = 1, t0 = 0, el = 0;
	for (int i = 0; i < 2 && r >= 0; i++) /* warm-up: caches, first-time faults */
		r = op();
	if (r >= 0)
		t0 = now_ns();
	while (r >= 0) {
		for (u64 i = 0; i < batch && r >= 0; i++)
			r = op();
		if (r < 0)
			break;
		n += batch;
		el = now_ns() - t0;
		if (el >= target_ns)
			break;
		/* Aim at half the remaining time, at most doubling. */
		u64 per = el / n + 1;
		u64 want = (target_ns - el) / per / 2 + 1;
		batch = want > 2 * n ? 2 * n : want;
	}
	if (r < 0) {
		char buf[96], *p = buf;
		p = dr_cat(p, name);
		p = dr_cat(p, " failed ");
		p = dr_utoa(p, (u64)-r); /* an errno, or 1000 + a child's wait status */
		p = dr_cat(p, "\n");
		dr_write_all(1, buf, (u64)(p - buf));
		dr_puts(2, "drbench: call failed: ");
		dr_puts(2, name);
		dr_puts(2, "\n");
		return -1;
	}
	report(name, n, el, (u64)-1);
	return 0;
}

/* rename's file could not be made: the row fails with that error. */
static long create_err;
static long op_create_failed(void) { return create_err; }

static int cmd_calls(char **argv)
{
	setup_paths(argv[2]);
	u64 target = (u64)dr_atol(argv[3]) * 1000;
	deep_fd = (int)sys4(SYS_openat, AT_FDCWD, deep_dir, O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
	if (deep_fd < 0)
		die("open", deep_dir, deep_fd);
	/* Start from a clean scratch directory: a and b absent (rename makes a first). */
	sys3(SYS_unlinkat, AT_FDCWD, scratch_a, AT_REMOVEDIR);
	sys3(SYS_unlinkat, AT_FDCWD, scratch_a, 0);
	sys3(SYS_unlinkat, AT_FDCWD, scratch_b, 0);
	long r = sys1(SYS_chdir, dir_path);
	if (r < 0)
		die("chdir", dir_path, r);
	const char *p = argv[4];
	int failed = 0;
	while (*p) {
		char name[32];
		int n = 0;
		while (*p && *p != ',' && n < 31)
			name[n++] = *p++;
		name[n] = 0;
		if (*p == ',')
			p++;
		const struct call *c = 0;
		for (u64 i = 0; i < sizeof calls / sizeof calls[0]; i++)
			if (dr_streq(calls[i].name, name))
				c = &calls[i];
		if (!c)
			die("unknown call", name, 0);
		long (*op)(void) = c->op;
		if (op == op_rename) {
			long fd = sys4(SYS_openat, AT_FDCWD, scratch_a, 0101 /* O_WRONLY|O_CREAT */, 0644);
			if (fd < 0) {
				create_err = fd;
				op = op_create_failed;
			} else {
				sys1(SYS_close, fd);
			}
			rename_flip = 0;
		}
		if (timed(c->name, op, target) < 0)
			failed = 1;
		if (c->op == op_rename) {
			sys3(SYS_unlinkat, AT_FDCWD, scratch_a, 0);
			sys3(SYS_unlinkat, AT_FDCWD, scratch_b, 0);
		}
		if (c->op == op_waitv)
			waitv_stop();
	}
	return failed;
}

/* ---- throughput: N threads doing stat ---- */

#define MAX_THREADS 256

struct worker {
	volatile u64 count;
	volatile int tid;
	char pad[64 - sizeof(u64) - sizeof(int)];
};

static struct worker *workers;
static volatile int stop_flag;
static volatile int started;

static long worker_main(void *arg)
{
	struct worker *w = arg;
	__atomic_add_fetch(&started, 1, __ATOMIC_SEQ_CST);
	while (!stop_flag) {
		if (op_stat() < 0)
			return 1;
		w->count++;
	}
	return 0;
}

static int cmd_par(char **argv)
{
	setup_paths(argv[2]);
	u64 target = (u64)dr_atol(argv[3]) * 1000;
	long n = dr_atol(argv[4]);
	if (n < 1 || n > MAX_THREADS)
		die("thread count out of range:", argv[4], 0);
	workers = map_pages(sizeof(struct worker) * MAX_THREADS);
	char *stacks = map_pages((u64)n * 65536);
	for (long i = 0; i < n; i++) {
		long r = dr_thread(CLONE_THREAD_FLAGS, stacks + (i + 1) * 65536, (int *)&workers[i].tid,
				   (int *)&workers[i].tid, worker_main, &workers[i]);
		if (r < 0)
			die("clone", 0, r);
	}
	while (started < n) {
		struct dr_timespec d = {0, 100000};
		sys4(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &d, 0);
	}
	u64 c0 = 0;
	for (long i = 0; i < n; i++)
		c0 += workers[i].count;
	u64 t0 = now_ns();
	struct dr_timespec d = {(long)(target / 1000000000ul), (long)(target % 1000000000ul)};
	while (sys4(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &d, &d) == -EINTR)
		;
	u64 c1 = 0;
	for (long i = 0; i < n; i++)
		c1 += workers[i].count;
	u64 el = now_ns() - t0;
	stop_flag = 1;
	for (long i = 0; i < n; i++)
		join(&workers[i].tid);
	report("par", (u64)n, c1 - c0, el);
	return 0;
}

/* ---- mechanisms: getppid under a seccomp filter ---- */

struct sock_filter {
	u16 code;
	u8 jt, jf;
	u32 k;
};
struct sock_fprog {
	u16 len;
	struct sock_filter *filter;
};

#define BPF_LD_W_ABS 0x20
#define BPF_JEQ_K 0x15
#define BPF_RET_K 0x06
#define RET_ALLOW 0x7fff0000u
#define RET_TRACE 0x7ff00000u
#define RET_TRAP 0x00030000u
#define RET_USER_NOTIF 0x7fc00000u
#define RET_KILL 0x80000000u

struct k_sigaction {
	void (*handler)(int, void *, void *);
	unsigned long flags;
	void (*restorer)(void);
	u64 mask;
};

static volatile u64 sigsys_count;

static void on_sigsys(int sig, void *info, void *uc)
{
	(void)sig, (void)info, (void)uc;
	sigsys_count++;
}

/* A unix socket on fd 3 (from the Go side) takes the listener fd. */
static void send_fd(int fd)
{
	struct {
		u64 len;
		int level, type;
		int fd;
		int pad;
	} cmsg = {sizeof(u64) + 2 * sizeof(int) + sizeof(int), SOL_SOCKET, SCM_RIGHTS, fd, 0};
	char byte = 'n';
	struct {
		void *base;
		u64 len;
	} iov = {&byte, 1};
	struct {
		void *name;
		int namelen;
		void *iov;
		u64 iovlen;
		void *control;
		u64 controllen;
		int flags;
	} msg = {0, 0, &iov, 1, &cmsg, sizeof cmsg, 0};
	long r = sys3(SYS_sendmsg, 3, &msg, 0);
	if (r < 0)
		die("sendmsg of the listener fd", 0, r);
}

/* A page fault, the other trap that decides what a process's start costs (ld.so, a
 * preloaded library and droidroot's loader each fault pages in; a paravirtualized VM's
 * fault can cost as much as a ptrace stop, a phone's about a microsecond): each call
 * writes the first byte of a fresh anonymous page of a 1 MiB area, and every
 * FAULT_PAGES calls the area's pages are dropped again (MADV_DONTNEED, timed with
 * them), so the process's memory stays bounded however fast faults are. Huge pages are
 * refused for the area (MADV_NOHUGEPAGE): one fault would map 512 pages. */
#define FAULT_PAGES 256
#define MADV_DONTNEED_ 4
#define MADV_NOHUGEPAGE_ 15
static char *fault_area;
static u64 fault_next;

static long op_fault(void)
{
	long r;
	if (!fault_area) {
		fault_area = map_pages(FAULT_PAGES * 4096ul);
		r = sys3(SYS_madvise, fault_area, FAULT_PAGES * 4096ul, MADV_NOHUGEPAGE_);
		if (r < 0 && r != -EINVAL) /* EINVAL: a kernel without transparent huge pages */
			return r;
	}
	if (fault_next == FAULT_PAGES) {
		r = sys3(SYS_madvise, fault_area, FAULT_PAGES * 4096ul, MADV_DONTNEED_);
		if (r < 0)
			return r;
		fault_next = 0;
	}
	((volatile char *)fault_area)[fault_next++ * 4096ul] = 1;
	return 0;
}

static int cmd_mech(char **argv)
{
	const char *kind = argv[2];
	long cpu = dr_atol(argv[3]);
	u64 target = (u64)dr_atol(argv[4]) * 1000;
	pin(cpu);

	u32 action = 0, nocache = 0, flags = 0;
	if (dr_streq(kind, "fault"))
		return timed(kind, op_fault, target) < 0;
	if (dr_streq(kind, "native"))
		action = 0;
	else if (dr_streq(kind, "allow"))
		action = RET_ALLOW;
	else if (dr_streq(kind, "nocache"))
		action = RET_ALLOW, nocache = 1;
	else if (dr_streq(kind, "trap"))
		action = RET_TRAP;
	else if (dr_streq(kind, "trace"))
		action = RET_TRACE;
	else if (dr_streq(kind, "notify"))
		action = RET_USER_NOTIF, flags = SECCOMP_FILTER_FLAG_NEW_LISTENER;
	else
		die("unknown mechanism", kind, 0);

	if (action == RET_TRAP) {
		struct k_sigaction sa;
		dr_memset(&sa, 0, sizeof sa);
		sa.handler = on_sigsys;
		sa.flags = SA_SIGINFO;
#if DR_NEED_RESTORER
		sa.flags |= SA_RESTORER;
		sa.restorer = dr_restorer;
#endif
		long r = sys4(SYS_rt_sigaction, SIGSYS, &sa, 0, 8);
		if (r < 0)
			die("rt_sigaction", 0, r);
	}
	if (action) {
		/*
		 * arch check; then either the number (a constant decision per number, which
		 * kernels >= 5.11 cache) or, for nocache, a load of an argument first, which
		 * makes every decision non-constant so the filter runs on every call.
		 */
		struct sock_filter f[] = {
			{BPF_LD_W_ABS, 0, 0, 4},		 /* arch */
			{BPF_JEQ_K, 1, 0, DR_AUDIT_ARCH},
			{BPF_RET_K, 0, 0, RET_KILL},
			{BPF_LD_W_ABS, 0, 0, nocache ? 16 : 0}, /* args[0] low word, or nr */
			{BPF_LD_W_ABS, 0, 0, 0},		 /* nr */
			{BPF_JEQ_K, 0, 1, SYS_getppid},
			{BPF_RET_K, 0, 0, action},
			{BPF_RET_K, 0, 0, RET_ALLOW},
		};
		struct sock_fprog prog = {sizeof f / sizeof f[0], f};
		long r = sys5(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
		if (r < 0)
			die("prctl(PR_SET_NO_NEW_PRIVS)", 0, r);
		r = sys3(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
		if (r < 0)
			die("seccomp(SET_MODE_FILTER)", kind, r);
		if (action == RET_USER_NOTIF) {
			send_fd((int)r);
			sys1(SYS_close, r);
		}
	}
	if (action == RET_TRACE) {
		/* Untraced, RET_TRACE answers ENOSYS at once: that would time nothing. */
		if (sys0(SYS_getppid) == -ENOSYS)
			die("mechanism trace: not traced (RET_TRACE gave ENOSYS)", 0, 0);
	}
	if (timed(kind, op_getppid, target) < 0)
		return 1;
	if (action == RET_TRAP && sigsys_count == 0)
		die("mechanism trap: no SIGSYS arrived", 0, 0);
	if (action == RET_USER_NOTIF)
		sys1(SYS_getppid, 1); /* arg0 = 1: tells the supervisor this was the last one */
	return 0;
}

static int drbench_main(long argc, char **argv, char **envp)
{
	envp_g = envp;
	self_path = argc > 0 ? argv[0] : "";
	if (argc >= 2 && dr_streq(argv[1], "exit"))
		dr_exit(0);
	if (argc == 5 && dr_streq(argv[1], "calls"))
		dr_exit(cmd_calls(argv));
	if (argc == 5 && dr_streq(argv[1], "par"))
		dr_exit(cmd_par(argv));
	if (argc == 5 && dr_streq(argv[1], "mech"))
		dr_exit(cmd_mech(argv));
	if (argc >= 5 && dr_streq(argv[1], "spawn"))
		dr_exit(cmd_spawn(argc, argv));
	dr_puts(2, "usage: drbench calls DIR US NAMES | par DIR US N | mech KIND CPU US | spawn ROOT N PROG ARGS... | exit\n");
	dr_exit(2);
}

#ifdef DR_LIBC
int main(int argc, char **argv, char **envp) { return drbench_main(argc, argv, envp); }
#else
int dr_main(long *sp)
{
	long argc = sp[0];
	char **argv = (char **)(sp + 1);
	return drbench_main(argc, argv, argv + argc + 1);
}
#endif
