/*
 * droidroot's fast path: a library ld.so preloads into every dynamically linked
 * glibc guest process (droidroot serves /etc/ld.so.preload with it added). It
 * answers the common path calls inside the process when it can prove the tracer
 * would give the same answer, and hands every other call to the tracer unchanged
 * by making the ordinary system call, which droidroot's seccomp filter traps.
 *
 * Start-up (the constructor): the droidroot_fastpath call (a number no kernel
 * has, which only droidroot's tracer answers) fills in the session's
 * configuration: the trampoline address, the rootfs and the binds, the options
 * that change answers. The library then maps the trampoline page of its own file
 * at that address (MAP_FIXED_NOREPLACE); its calls leave the process through that
 * page only, and the filter lets exactly those through untraced. Anything
 * failing on the way leaves the library off: every call goes to the tracer.
 *
 * An answer in-process needs an absolute guest path without "." or ".."
 * components or a trailing slash (relative paths: map_rel), outside /proc, whose host parent directory
 * opens (O_PATH) to exactly the expected host path as /proc/self/fd names it (so
 * no component on the way was a symlink, and the binds it crosses are the ones
 * the longest-prefix rule picked), and whose last component is not a symlink
 * the call would follow. Verified parents are cached as O_PATH descriptors,
 * checked by dev/ino before each use and verified again after ttl_ns.
 *
 * Only public libc.so.6 symbols no newer than GLIBC_2.17 are imported
 * (__errno_location, clock_gettime, fdopendir, dl_iterate_phdr, ...);
 * see Makefile's fastpath-check. libc's own functions the library wraps
 * (fopen, for the modes the library does not reproduce; fdopen) are found
 * in libc's symbol table (real_fopen, real_fdopen), not with dlsym
 * (GLIBC_2.34 in libc.so.6).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <utime.h>
#include <gnu/libc-version.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <sys/resource.h>
#include <string.h>

#if defined(__x86_64__)
#include "arch-x86_64.h"
#define FP_VA_BITS 47 /* 4-level paging's user space; 5-level needs a hint to go higher */
#elif defined(__aarch64__)
#include "arch-aarch64.h"
#define FP_VA_BITS 48 /* the largest arm64 user space without a hint (52-bit needs one) */
#else
#error "unsupported architecture"
#endif

/* user_ptr tells whether the library may read at p: not in the first 64 KiB
 * and canonical. A pointer the kernel would answer EFAULT for goes to the
 * tracer instead of faulting here (other unmapped addresses would fault, as
 * in most preloaded libraries). */
static inline int user_ptr(const void *p) { return (uintptr_t)p >= 65536 && !((uintptr_t)p >> FP_VA_BITS); }

#define EXPORT __attribute__((visibility("default")))
#ifndef AT_STATX_SYNC_TYPE
#define AT_STATX_SYNC_TYPE 0x6000
#endif

/* The handshake: droidroot_fastpath(buf, size, &fp_enabled, &cwdrec,
 * sizeof cwdrec, &fp_guard) -> bytes written or -errno. Keep in step with fastpath/config.go. */
#define DR_SYS_FASTPATH 25714
#define DR_FP_MAGIC 0x50465244u /* "DRFP" */
#define DR_FP_VERSION 2
enum {
	DR_FP_STATS = 1 << 0,      /* DROIDROOT_FASTPATH_STATS=1 */
	DR_FP_L2S = 1 << 1,        /* -l: link2symlink */
	DR_FP_LSTAT_SIZE = 1 << 2, /* -L */
	DR_FP_OWNER = 1 << 3,      /* -0/-i: stat owners real -> fake */
	DR_FP_ASHMEM = 1 << 4,     /* --ashmem-memfd */
	DR_FP_IDS = 1 << 5,        /* emulated credentials: access's EACCES, chmod, chown go to the tracer */
	DR_FP_NOLINK = 1 << 6,     /* link goes to the tracer (links refused on purpose) */
	DR_FP_WAITV = 1 << 7,      /* futex_waitv answered here (waitv.c) */
	DR_FP_FDGUARD = 1 << 8,    /* the filter traps changes to FP_FD_BASE..FP_FD_END-1 (fp_guard) */
	DR_FP_OPENAT2 = 1 << 9,    /* openat2 is neither blocked (Android) nor refused here */
	DR_FP_DIRS = 1 << 10,      /* not -H: directory streams may be made here (where fstat_stops, or -l's getdents64) */
	DR_FP_LEGACY = 1 << 11,    /* the app policy blocks x86_64's poll, epoll_wait, dup2: made as ppoll, epoll_pwait, dup3 */
	DR_FP_PORTSHIFT = 1 << 12, /* -p: the tracer shifts AF_INET ports, so addressed sends go to it */
	DR_FP_TRAMP_OPEN = 1 << 13, /* a test switch: map the trampoline page from an open of the file, as before Linux 5.13 */
	DR_FP_GETIDS = 1 << 14,    /* the tracer emulates the ids: get*id answered from cwdrec.ids while published */
};
struct dr_fp_hdr {
	uint32_t magic, version, size, flags;
	uint64_t trampoline, ttl_ns;
	uint32_t real_uid, real_gid, fake_uid, fake_gid;
	uint32_t nbinds, nparents;
	uint64_t proc_dev;
	/* then nparents {dev, ino} pairs (uint64_t each): the host directories
	 * that are a bind point's guest ancestors (relative names in them go to
	 * the tracer); then NUL-terminated strings: the library's guest path,
	 * the rootfs's host path, the futex_waitv registry's, the empty
	 * directory's ("" for none), the change counter's, and per bind its
	 * guest path and host path (the rootfs's and the binds' host paths as
	 * the kernel prints them, "" where they do not open: host_form);
	 * then, where the guest's /proc is the host's (bound at /proc), the
	 * process's program as the tracer answers readlink("/proc/self/exe")
	 * (its record of the program, not the loader the kernel names). */
};

#define FP_MAX_BINDS 256
#define FP_MAX_PARENTS 1024
#define FP_MAX_DIRFD 1024
#define FP_MAX_NAMES 512
#define FC_BUCKETS 16
#define FC_BLOOM 512
#define FP_PATH_MAX 4096
/* FP_HOST_MAX bounds the host paths the library answers for (a mapped path
 * with its name, a descriptor's /proc/self/fd name): its buffers live on the
 * caller's stack, which may be a small thread's (PTHREAD_STACK_MIN) or a
 * main thread's under a small RLIMIT_STACK, so the deepest call's frames
 * stay a few KiB. A longer path goes to the tracer, as W_LONG. */
#define FP_HOST_MAX 1024
#define FP_DEFER (-100000L) /* "go to the tracer" */

struct fp_bind {
	const char *guest, *host; /* host: as the kernel prints it, NULL if unusable */
	size_t glen, hlen;
};

/* FP_HOT places a small variable every process touches at start-up (the
 * constructor's, libc's functions found then) in .data: the page ld.so
 * already wrote (its zeroing of .bss's start shares it), where it costs no
 * page fault of its own. Scattered over .bss, each took one (about 15 us
 * each on a virtual machine whose faults are slow). */
#define FP_HOT __attribute__((section(".data")))

static struct {
	uint32_t flags;
	uint64_t ttl_ns;
	/* fresh_ns: the age, on the coarse clock (now_ns), below which an
	 * entry is still within ttl_ns: ttl_ns less the clock's tick, 0 (none
	 * is) when the TTL is no longer than a tick. */
	uint64_t fresh_ns;
	uint32_t real_uid, real_gid, fake_uid, fake_gid;
	const char *libguest;
	const char *root; /* kernel form */
	size_t rootlen;
	const uint64_t *parents; /* nparents {dev, ino} pairs */
	const char *empty;       /* droidroot's empty directory (host path), NULL for none */
	const char *exe;         /* readlink("/proc/self/exe")'s answer, NULL: the tracer's */
	size_t exelen;
	uint32_t nparents;
	uint64_t proc_dev;
	long (*tramp)(long, long, long, long, long, long, long);
	int nbinds;
	/* names: every component of every bind point's guest path (and
	 * "ashmem" under --ashmem-memfd), the names below which a directory's
	 * guest view may differ from its host; nnames < 0: too many to list. */
	int nnames;
	/* fcmask[k]: the binds (bit i: binds[i]) whose guest path's first
	 * component hashes to bucket k (fc_bucket), rootmask those whose guest
	 * path is "/"; namebloom: a bit per hash of each of names (bind_name).
	 * A path is compared only with the binds that can be it or lie on its
	 * way (launchers pass some 25). */
	uint64_t fcmask[FC_BUCKETS][FP_MAX_BINDS / 64];
	uint64_t rootmask[FP_MAX_BINDS / 64];
	uint64_t namebloom[FC_BLOOM / 64];
	/* The tables last, the fields above in their first page (one page
	 * fault at start-up, not one per field's page). */
	struct fp_bind binds[FP_MAX_BINDS];
	struct {
		const char *s;
		size_t len;
	} names[FP_MAX_NAMES];
} cfg;

/* Directories the guest holds open (by descriptor number) that droidroot
 * translated or the library opened: relative names are answered under them
 * while the descriptor still names the same directory (dev/ino). */
static struct {
	uint64_t dev, ino;
} dirfds[FP_MAX_DIRFD];

/* libc's own functions, for the calls the library leaves to libc whole
 * (found at start-up: libc_lookup is not async-signal-safe). */
static FP_HOT FILE *(*real_fopen)(const char *, const char *);
static FP_HOT FILE *(*real_fdopen)(int, const char *);
static FP_HOT int (*real_faccessat)(int, const char *, int, int);
static FP_HOT int (*real_fchmodat)(int, const char *, mode_t, int);
static void *libc_lookup(const char *name);
/* LIBC(var, name) is libc's function name, looked up into var on first
 * use (NULL if libc has none): the wrappers' way to libc's own. */
#define LIBC(var, name) ((var) ? (var) : ((var) = libc_lookup(name)))

/* The guest cwd the tracer answered this process's last trapped getcwd with,
 * and the host directory the kernel had as the cwd then (its d_path form).
 * The tracer writes it with seq last, seq 0 first (and alone when a chdir,
 * fchdir or chroot may change the answer), never the same seq twice; the
 * handshake tells it where. A getcwd is answered in-process when the kernel's
 * own getcwd names that same host directory (fp_getcwd). Keep in step with
 * emul/fastpath.go's cwdRecord. */
#define FP_CWD_MAX 4096
/* The calling process's emulated ids (DR_FP_GETIDS: -0, -i, or the set*id
 * emulation of Android's policy), as the tracer answers the get*id family:
 * uid, euid, suid, gid, egid, sgid. The tracer writes them at the handshake,
 * seq last, when every thread of the process has the same ones, and writes
 * seq 0 before any set*id call of a thread of the process (or of a process
 * sharing its memory) runs; the next exec's handshake writes them again.
 * In the cwd record's first page, which the handshake's publication of the
 * cwd writes anyway. Keep in step with emul/fastpath.go's publishIDs. */
struct fp_ids {
	uint32_t seq, id[6], pad;
};
static struct fp_cwd {
	uint32_t seq, waits, pad0[2];
	struct fp_ids ids;
	uint32_t hlen, glen, pad1[2];
	char host[FP_CWD_MAX], guest[FP_CWD_MAX];
} cwdrec;
/* fastpath.go's CwdIDsOff, CwdLenOff, CwdHostOff, CwdGuestOff, IDsSize and
 * CwdSize (TestFlagsMatchC reads these lines). */
_Static_assert(offsetof(struct fp_cwd, waits) == 4 && sizeof(struct fp_ids) == 32 && sizeof(struct fp_cwd) == 8256, "cwd record");
_Static_assert(offsetof(struct fp_cwd, ids) == 16 && sizeof(struct fp_ids) == 32 && sizeof(struct fp_cwd) == 8256, "cwd record");
_Static_assert(offsetof(struct fp_cwd, hlen) == 48 && sizeof(struct fp_ids) == 32 && sizeof(struct fp_cwd) == 8256, "cwd record");
_Static_assert(offsetof(struct fp_cwd, host) == 64 && sizeof(struct fp_ids) == 32 && sizeof(struct fp_cwd) == 8256, "cwd record");
_Static_assert(offsetof(struct fp_cwd, guest) == 4160 && sizeof(struct fp_ids) == 32 && sizeof(struct fp_cwd) == 8256, "cwd record");
static FP_HOT char *(*real_getcwd)(char *, size_t);

/* cwd_id: the kernel's cwd (dev/ino, a directory outside /proc) while the
 * cwd record's seq is cwd_id.seq: the tracer clears the record before any
 * thread of the process changes its cwd (chdir, fchdir, chroot), so a
 * relative path's base needs no stat of "." then. Written under cwd_lock
 * (odd while written; a writer that finds it odd gives up, a reader that
 * does makes the stat): neither ever waits, in a signal handler either.
 * cwd_misses counts the stats of "." made while no record was published,
 * cwd_ask the count at which the library asks the tracer for one (a trapped
 * getcwd, which the tracer answers and publishes), doubled at each ask that
 * published none. */
static struct {
	unsigned seq;
	uint64_t dev, ino;
} cwd_id;
static FP_HOT unsigned cwd_lock, cwd_misses;
static unsigned cwd_ask = 16;

/* Set to 1 once set up; the tracer writes 0 here when this process installs
 * its own seccomp filter (its traps could see the library's checks). */
static FP_HOT volatile int fp_enabled;
static FP_HOT unsigned *fp_changes; /* the session's change counter (cur_gen) */
static unsigned fp_guard = 1; /* the tracer's descriptor guard word (guard_now) */

/* The handshake's answer (at most FP_CFG_MAX bytes). */
#define FP_CFG_MAX (64 << 10)
static char cfgbuf[FP_CFG_MAX];

/* ---- small helpers (no libc calls: async-signal-safe) ---- */

static size_t fp_strlen(const char *s)
{
	size_t n = 0;
	while (s[n])
		n++;
	return n;
}

static int fp_streq(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

/* load8 reads the 8 bytes at p, aligned or not, in one load. */
static inline uint64_t load8(const char *p)
{
	uint64_t w;
	__builtin_memcpy(&w, p, 8);
	return w;
}

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "comp_end reads words as little-endian (x86_64 and arm64 are)"
#endif
#define ONES8 0x0101010101010101ull

/* zero_bytes has the high bit of the lowest zero byte of v set (and maybe
 * of higher bytes: a borrow; never of a lower one). */
static inline uint64_t zero_bytes(uint64_t v) { return (v - ONES8) & ~v & (ONES8 * 0x80); }

/* comp_end returns the first '/' or NUL at or after s, 8 bytes at a time.
 * It reads whole aligned words, which never cross a page boundary: only
 * pages that hold bytes of the string up to its NUL. */
static const char *comp_end(const char *s)
{
	uintptr_t a = (uintptr_t)s & ~(uintptr_t)7;
	unsigned off = (unsigned)((uintptr_t)s & 7);
	uint64_t w;
	__builtin_memcpy(&w, (const void *)a, 8);
	if (off)
		w |= ~0ull >> (64 - 8 * off); /* the bytes before s: 0xff, neither '/' nor NUL */
	for (;;) {
		uint64_t m = zero_bytes(w) | zero_bytes(w ^ (ONES8 * '/'));
		if (m)
			return (const char *)a + (__builtin_ctzll(m) >> 3);
		a += 8;
		__builtin_memcpy(&w, (const void *)a, 8);
	}
}

/* exact_zero has the high bit set in exactly the zero bytes of v (no
 * borrow from a lower byte, unlike zero_bytes). */
static inline uint64_t exact_zero(uint64_t v)
{
	const uint64_t l7 = ONES8 * 0x7f;
	return ~(((v & l7) + l7) | v | l7);
}

/* plain_len returns the length of path g (which starts with '/') when none
 * of its components is "", "." or ".." (no "//", "/./" or "/../", and no
 * "/", "/." or "/.." at its end), else -1. It reads whole aligned words, as
 * comp_end does, and looks byte by byte only after a '/' that a '/', a '.'
 * or the NUL follows (a name such as ".cache"), or that ends a word. */
static long plain_len(const char *g)
{
	uintptr_t a = (uintptr_t)g & ~(uintptr_t)7;
	unsigned off = (unsigned)((uintptr_t)g & 7);
	uint64_t w;
	__builtin_memcpy(&w, (const void *)a, 8);
	if (off)
		w |= ~0ull >> (64 - 8 * off); /* the bytes before g: 0xff, neither '/', '.' nor NUL */
	for (;;) {
		uint64_t nul = exact_zero(w), sl = exact_zero(w ^ (ONES8 * '/'));
		uint64_t next = nul | sl | exact_zero(w ^ (ONES8 * '.'));
		if (nul)
			sl &= ((nul & -nul) >> 7) - 1; /* the '/'s before the NUL */
		/* A '/' followed (within the word) by '/', '.' or NUL, or in
		 * the word's last byte: looked at. */
		for (uint64_t c = sl & ((next >> 8) | (1ull << 63)); c; c &= c - 1) {
			const char *q = (const char *)a + (__builtin_ctzll(c) >> 3);
			if (q[1] == '/' || q[1] == 0)
				return -1;
			if (q[1] == '.' && (q[2] == '/' || q[2] == 0 || (q[2] == '.' && (q[3] == '/' || q[3] == 0))))
				return -1;
		}
		if (nul)
			return (long)(a + (__builtin_ctzll(nul) >> 3) - (uintptr_t)g);
		a += 8;
		__builtin_memcpy(&w, (const void *)a, 8);
	}
}

/* fp_memeq, fp_memcpy and hash_of take 8 bytes at a time: the keys and
 * paths of every call are tens of bytes. */
static int fp_memeq(const char *a, const char *b, size_t n)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8)
		if (load8(a + i) != load8(b + i))
			return 0;
	for (; i < n; i++)
		if (a[i] != b[i])
			return 0;
	return 1;
}

/* under tells whether path p (n bytes) is path pre (pl bytes; "" for "/")
 * or lies below it. */
static int under(const char *p, size_t n, const char *pre, size_t pl)
{
	return n >= pl && fp_memeq(p, pre, pl) && (n == pl || p[pl] == '/');
}

static void fp_memcpy(char *d, const char *s, size_t n)
{
	size_t i = 0;
	if ((uintptr_t)d + n <= (uintptr_t)s || (uintptr_t)s + n <= (uintptr_t)d) /* apart: 8 bytes at a time; else forwards, byte by byte */
		for (; i + 8 <= n; i += 8) {
			uint64_t w = load8(s + i);
			__builtin_memcpy(d + i, &w, 8);
		}
	for (; i < n; i++)
		d[i] = s[i];
}

static long raw6(long n, long a, long b, long c, long d, long e, long f) { return dr_syscall6(n, a, b, c, d, e, f); }

static long tr(long n, long a, long b, long c, long d, long e, long f) { return cfg.tramp(n, a, b, c, d, e, f); }

/* names_l2s_data tells whether symlink target t (n bytes) names -l's link
 * data: its last component (trailing slashes aside) starts with ".l2s."
 * and is no count file (".n"), emul's isL2SData of the target's base, the
 * test by which the tracer takes a symlink for a name of a hard link. */
static int names_l2s_data(const char *t, long n)
{
	while (n > 1 && t[n - 1] == '/')
		n--;
	long i = n;
	while (i > 0 && t[i - 1] != '/')
		i--;
	size_t len = (size_t)(n - i);
	return len >= 5 && fp_memeq(t + i, ".l2s.", 5) && !fp_memeq(t + n - 2, ".n", 2);
}

static long fp_ret(long r)
{
	if (r < 0 && r > -4096) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

static int fmt_procfd(char *b, int fd)
{
	static const char pre[] = "/proc/self/fd/";
	char tmp[16];
	int n = 0, i = 0;
	fp_memcpy(b, pre, sizeof pre - 1);
	unsigned u = (unsigned)fd;
	do {
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	while (n)
		b[sizeof pre - 1 + i++] = tmp[--n];
	b[sizeof pre - 1 + i] = 0;
	return (int)(sizeof pre - 1 + i);
}

/* ---- statistics (DROIDROOT_FASTPATH_STATS=1) ---- */

enum fp_fn {
	F_STAT, F_LSTAT, F_FSTATAT, F_STATX, F_ACCESS, F_OPEN, F_READLINK,
	F_MKDIR, F_UNLINK, F_RENAME, F_SYMLINK, F_LINK, F_CHMOD, F_CHOWN, F_UTIME, F_TRUNCATE, F_MKNOD, F_OPENAT2,
	F_FSTAT, F_GETCWD, F_CWD, F_DIRS, F_READDIR, F_REALPATH, F_LEGACY, F_SENDMSG, F_SENDTO, F_FOLLOW, F_XATTR, F_FSTATFS, F_STDIO,
	F_PINS, F_RECV, F_GRANTS, F_STATFS, F_SHED, F_FDOPEN, F_IDS, F_SOCKET, F_WAIT, F_NFN
};
static const char *const fn_names[F_NFN] = {"stat", "lstat", "fstatat", "statx", "access", "open", "readlink",
					    "mkdir", "unlink", "rename", "symlink", "link", "chmod", "chown", "utimensat",
					    "truncate", "mknod", "openat2", "fstat", "getcwd", "cwd", "dirs", "readdir", "realpath", "legacy", "sendmsg", "sendto", "follow", "xattr", "fstatfs", "stdio",
					    "pins", "recv", "grants", "statfs", "shed", "fdopen", "ids", "socket", "wait"};
enum fp_why {
	W_ANSWERED, W_OFF, W_RELATIVE, W_DOTS, W_PROC, W_LONG, W_SYMLINK, W_UNVERIFIED, W_FLAGS, W_ERRNO,
	W_OPTION, W_NWHY
};
static const char *const why_names[W_NWHY] = {"answered", "off", "relative", "dots", "proc", "long",
					      "symlink", "unverified", "flags", "errno", "option"};
static unsigned long stats[F_NFN][W_NWHY];
/* A copy of stderr made at start-up: programs close fd 2 before exit
 * (coreutils' close_stdout). */
static int stats_fd = 2;

static void count(enum fp_fn f, enum fp_why w)
{
	if (cfg.flags & DR_FP_STATS)
		__atomic_fetch_add(&stats[f][w], 1, __ATOMIC_RELAXED);
}

static char *put_str(char *p, const char *s)
{
	while (*s)
		*p++ = *s++;
	return p;
}

static char *put_num(char *p, unsigned long v)
{
	char tmp[24];
	int n = 0;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	return p;
}

__attribute__((destructor)) static void fp_report(void)
{
	if (!(cfg.flags & DR_FP_STATS))
		return;
	char line[1024];
	long pid = raw6(SYS_getpid, 0, 0, 0, 0, 0, 0);
	for (int f = 0; f < F_NFN; f++) {
		unsigned long total = 0;
		for (int w = 0; w < W_NWHY; w++)
			total += stats[f][w];
		if (!total)
			continue;
		char *p = put_str(line, "droidroot-fastpath[");
		p = put_num(p, (unsigned long)pid);
		p = put_str(p, "]: ");
		p = put_str(p, fn_names[f]);
		for (int w = 0; w < W_NWHY; w++) {
			if (!stats[f][w])
				continue;
			*p++ = ' ';
			p = put_str(p, why_names[w]);
			*p++ = '=';
			p = put_num(p, stats[f][w]);
		}
		*p++ = '\n';
		raw6(SYS_write, stats_fd, (long)line, p - line, 0, 0, 0);
	}
}

/* ---- set-up ---- */

/* fd_link reads what /proc/self/fd names for fd into buf (FP_HOST_MAX
 * bytes): its length, or 0 for what is no absolute path of a live file
 * (an error, a pipe or socket, a directory removed: " (deleted)") or is
 * longer than the buffer. */
static size_t fd_link(long fd, char *buf)
{
	char proc[32];
	fmt_procfd(proc, (int)fd);
	long n = tr(SYS_readlinkat, AT_FDCWD, (long)proc, (long)buf, FP_HOST_MAX, 0, 0);
	if (n <= 0 || n >= FP_HOST_MAX || buf[0] != '/')
		return 0;
	if (n >= 10 && fp_memeq(buf + n - 10, " (deleted)", 10))
		return 0;
	return (size_t)n;
}

/* host_form takes host path h of the handshake's answer, which the tracer
 * sends as the kernel prints it (its O_PATH descriptor's /proc/self/fd
 * link: /data/user/0 is /data/data on Android), "" where it does not open:
 * NULL for that, else h, with "/" the empty prefix. Nothing to ask the
 * kernel here: a launcher's 25 binds were 75 system calls at every start. */
static const char *host_form(const char *h, size_t *len)
{
	size_t n = fp_strlen(h);
	if (n == 0 || h[0] != '/')
		return NULL;
	*len = n == 1 ? 0 : n;
	return h;
}

static const char *next_str(const char **p, const char *end)
{
	const char *s = *p;
	size_t n = 0;
	while (s + n < end && s[n])
		n++;
	if (s + n >= end)
		return NULL;
	*p = s + n + 1;
	return s;
}

#include "waitv.c"

static uint32_t hash_of(const char *s, size_t n);

/* fc_bucket is the bucket (cfg.fcmask) of clean absolute guest path g's
 * first component (n bytes), or -1 where it has none ("/", n 0 or 1). A
 * bind that is g or one of its ancestors, or lies below g, has either g's
 * first component or the guest path "/". */
static int fc_bucket(const char *g, size_t n)
{
	size_t l = 1;
	while (l < n && g[l] != '/')
		l++;
	if (n <= 1 || l == 1)
		return -1;
	return (int)(hash_of(g + 1, l - 1) % FC_BUCKETS);
}

/* index_bind adds cfg.binds[x] to the first components' index (bind_of). */
static void index_bind(int x)
{
	const struct fp_bind *b = &cfg.binds[x];
	int k = fc_bucket(b->guest, b->glen);
	uint64_t bit = 1ull << (x % 64);
	if (k < 0)
		cfg.rootmask[x / 64] |= bit;
	else
		cfg.fcmask[k][x / 64] |= bit;
}

/* bind_name reports whether name (n bytes) is a component of a bind
 * point's guest path (cfg.names), or may be (the table overflowed). */
static int bind_name(const char *name, size_t n)
{
	if (cfg.nnames < 0)
		return 1;
	if (cfg.nnames == 0)
		return 0;
	uint32_t h = hash_of(name, n) % FC_BLOOM;
	if (!(cfg.namebloom[h / 64] & (1ull << (h % 64))))
		return 0;
	for (int i = 0; i < cfg.nnames; i++)
		if (cfg.names[i].len == n && fp_memeq(cfg.names[i].s, name, n))
			return 1;
	return 0;
}

/* changes_setup maps the session's change counter (host path path, a
 * 4 KiB file: fastpath.Config.Changes) shared; -1 if it cannot. */
static int changes_setup(const char *path)
{
	long fd = tr(SYS_openat, AT_FDCWD, (long)path, O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0, 0, 0);
	if (fd < 0)
		return -1;
	long addr = raw6(SYS_mmap, 0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	tr(SYS_close, fd, 0, 0, 0, 0, 0);
	if (addr < 0 && addr > -4096)
		return -1;
	fp_changes = (unsigned *)addr;
	return 0;
}

/* add_names adds the components of guest path g (n bytes) to cfg.names,
 * once each; cfg.nnames -1 once the table is full. */
static void add_names(const char *g, size_t n)
{
	for (size_t i = 0; i < n && cfg.nnames >= 0;) {
		while (i < n && g[i] == '/')
			i++;
		size_t j = i;
		while (j < n && g[j] != '/')
			j++;
		if (j > i && !bind_name(g + i, j - i)) {
			if (cfg.nnames == FP_MAX_NAMES) {
				cfg.nnames = -1;
				return;
			}
			cfg.names[cfg.nnames].s = g + i;
			cfg.names[cfg.nnames++].len = j - i;
			uint32_t h = hash_of(g + i, j - i) % FC_BLOOM;
			cfg.namebloom[h / 64] |= 1ull << (h % 64);
		}
		i = j;
	}
}

extern char dr_tramp_page[];

static FP_HOT ssize_t (*real_sendmsg)(int, const struct msghdr *, int);
static FP_HOT ssize_t (*real_sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
static FP_HOT ssize_t (*real_recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
static FP_HOT ssize_t (*real_recvmsg)(int, struct msghdr *, int);

#if defined(SYS_poll) && defined(SYS_epoll_wait)
#define FP_LEGACY_CALLS 1
static FP_HOT int (*real_poll)(struct pollfd *, nfds_t, int);
static FP_HOT int (*real_epoll_wait)(int, void *, int, int);
static FP_HOT int (*real_poll_chk)(struct pollfd *, nfds_t, int, size_t);
#endif

#ifndef MREMAP_DONTUNMAP
#define MREMAP_DONTUNMAP 4
#endif

/* map_tramp_page remaps this library's trampoline page (dr_tramp_page,
 * mapped from its file by ld.so) at want, keeping the original: want, or
 * -1 where that cannot be done (a kernel before 5.13 refuses
 * MREMAP_DONTUNMAP for a file's mapping: EINVAL) and nothing was mapped.
 * A reservation at want (MAP_FIXED_NOREPLACE) comes first: MREMAP_FIXED
 * would replace whatever is there. */
static long map_tramp_page(uint64_t want)
{
	long r = raw6(SYS_mmap, (long)want, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (r != (long)want) {
		if (r > 0)
			raw6(SYS_munmap, r, 4096, 0, 0, 0, 0);
		return r == -EEXIST ? -EEXIST : -1;
	}
	r = raw6(SYS_mremap, (long)dr_tramp_page, 4096, 4096, MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, (long)want, 0);
	if (r == (long)want)
		return r;
	raw6(SYS_munmap, (long)want, 4096, 0, 0, 0, 0);
	return -1;
}

/* fp_setup sets the library up (the handshake, the trampoline, the
 * configuration), once: from its constructor, or from the first wrapper
 * called before that (fp_on). Async-signal-safe: system calls and the
 * handshake's answer only. */
static FP_HOT int fp_started;
static void fp_setup(void);

/* fp_on tells whether the library answers calls in this process. A wrapper
 * called before its constructor has run (from another library's constructor
 * that ld.so runs first: libselinux's statfs and access at the start of
 * every program linked with it, Debian's coreutils) sets it up then: its
 * calls are the library's from the first one. */
static int fp_on(void)
{
	if (!__atomic_load_n(&fp_started, __ATOMIC_ACQUIRE))
		fp_setup();
	return __atomic_load_n(&fp_enabled, __ATOMIC_ACQUIRE) && cfg.tramp;
}

static void fd_makers_init(void);

__attribute__((constructor)) static void fp_init(void)
{
	real_fopen = libc_lookup("fopen");
	real_fdopen = libc_lookup("fdopen");
	real_faccessat = libc_lookup("faccessat");
	real_fchmodat = libc_lookup("fchmodat");
	real_getcwd = libc_lookup("getcwd");
	real_sendmsg = libc_lookup("sendmsg");
	real_sendto = libc_lookup("sendto");
	real_recvfrom = libc_lookup("recvfrom");
	real_recvmsg = libc_lookup("recvmsg");
	fd_makers_init();
#ifdef FP_LEGACY_CALLS
	real_poll = libc_lookup("poll");
	real_epoll_wait = libc_lookup("epoll_wait");
	real_poll_chk = libc_lookup("__poll_chk");
#endif
	fp_setup();
}

static void fp_setup(void)
{
	/* Once: a thread (or a signal handler) that finds it started while it
	 * runs finds the library off until it is done, and calls the tracer. */
	if (__atomic_exchange_n(&fp_started, 1, __ATOMIC_ACQ_REL))
		return;
	long n = raw6(DR_SYS_FASTPATH, (long)cfgbuf, FP_CFG_MAX, (long)&fp_enabled, (long)&cwdrec, sizeof cwdrec, (long)&fp_guard);
	const struct dr_fp_hdr *h = (const void *)cfgbuf;
	if (n < (long)sizeof *h || h->magic != DR_FP_MAGIC || h->version != DR_FP_VERSION || h->size != (uint32_t)n)
		return;
	if (h->nbinds > FP_MAX_BINDS || h->nparents > FP_MAX_PARENTS || h->trampoline == 0 || h->trampoline % 65536)
		return;
	if (sizeof *h + (size_t)h->nparents * 16 > (size_t)n)
		return;
	const char *p = cfgbuf + sizeof *h + (size_t)h->nparents * 16, *end = cfgbuf + n;
	const char *lib = next_str(&p, end), *root = next_str(&p, end), *reg = next_str(&p, end);
	const char *empty = next_str(&p, end), *changes = next_str(&p, end);
	if (!lib || !root || !reg || !empty || !changes)
		return;

	/* The trampoline: this library's page of its own file, never an
	 * anonymous executable mapping. From Linux 5.13 the page ld.so mapped
	 * is remapped there, the original left in place (MREMAP_DONTUNMAP; a
	 * file's page faults in again from the file), into a reservation made
	 * first so that nothing mapped there is replaced: no system call
	 * leaves the process. Else the library's file is opened through its
	 * guest path (the tracer translates the ordinary call: a stop) and
	 * the page mapped from it. */
	long addr = (h->flags & DR_FP_TRAMP_OPEN) ? -1 : map_tramp_page(h->trampoline);
	int opened = addr == -1;
	if (opened) {
		long fd = raw6(SYS_openat, AT_FDCWD, (long)lib, O_RDONLY | O_CLOEXEC, 0, 0, 0);
		if (fd < 0)
			return;
		/* The page's file offset: the library's segments keep vaddr ==
		 * offset modulo 64 KiB, and the first one starts at offset 0;
		 * find the load bias from the ELF header mapped at the lowest
		 * address. */
		extern char __ehdr_start[] __attribute__((visibility("hidden")));
		long off = dr_tramp_page - __ehdr_start;
		addr = raw6(SYS_mmap, (long)h->trampoline, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, off);
		raw6(SYS_close, fd, 0, 0, 0, 0, 0);
	}
	if (addr != (long)h->trampoline) {
		if (addr > 0)
			raw6(SYS_munmap, addr, 4096, 0, 0, 0, 0);
		return;
	}
	cfg.tramp = (void *)addr;
	/* A mapping of the file opened must hold our trampoline (the file was
	 * the one we run). The page remapped is ours; reading its old place
	 * would only fault it in again there. */
	if (opened && !fp_memeq((const char *)addr, dr_tramp_page, 16)) {
		cfg.tramp = NULL;
		raw6(SYS_munmap, addr, 4096, 0, 0, 0, 0);
		return;
	}

	cfg.flags = h->flags;
	if (cfg.flags & DR_FP_STATS) {
		long d = raw6(SYS_fcntl, 2, F_DUPFD_CLOEXEC, 900, 0, 0, 0);
		if (d >= 0)
			stats_fd = (int)d;
	}
	cfg.ttl_ns = h->ttl_ns;
	struct timespec res;
	uint64_t tick = clock_getres(CLOCK_MONOTONIC_COARSE, &res) == 0 ? (uint64_t)res.tv_sec * 1000000000u + (uint64_t)res.tv_nsec
									: cfg.ttl_ns;
	cfg.fresh_ns = cfg.ttl_ns > tick ? cfg.ttl_ns - tick : 0;
	cfg.real_uid = h->real_uid;
	cfg.real_gid = h->real_gid;
	cfg.fake_uid = h->fake_uid;
	cfg.fake_gid = h->fake_gid;
	cfg.libguest = lib;
	cfg.empty = empty[0] ? empty : NULL;
	cfg.parents = (const uint64_t *)(cfgbuf + sizeof *h);
	cfg.nparents = h->nparents;
	cfg.proc_dev = h->proc_dev;
	cfg.root = host_form(root, &cfg.rootlen);
	if (!cfg.root)
		return;
	for (uint32_t i = 0; i < h->nbinds; i++) {
		const char *g = next_str(&p, end), *hh = next_str(&p, end);
		if (!g || !hh)
			return;
		struct fp_bind *b = &cfg.binds[cfg.nbinds++];
		b->guest = g;
		b->glen = fp_strlen(g);
		if (b->glen == 1)
			b->glen = 0; /* "/" */
		/* A bind whose host the tracer resolves per process (/proc/self/...)
		 * or that does not open here: every path under it goes to the tracer. */
		b->host = fp_memeq(hh, "/proc", 5) && (hh[5] == 0 || hh[5] == '/') ? NULL : host_form(hh, &b->hlen);
		add_names(b->guest, b->glen);
		index_bind(cfg.nbinds - 1);
	}
	const char *exe = p < end ? next_str(&p, end) : NULL;
	if (exe && exe[0]) {
		cfg.exe = exe;
		cfg.exelen = fp_strlen(exe);
	}
	if (cfg.flags & DR_FP_ASHMEM)
		add_names("ashmem", 6);
	/* The session's shared files are droidroot's user's alone: a process
	 * that changed its ids for real (apt's sandbox user under a droidroot
	 * run as root) cannot map them, and without them it would see other
	 * processes' renames late and miss their futex_waitv wakes. The
	 * library stays off there; the tracer answers everything. */
	if ((cfg.flags & DR_FP_WAITV) && reg[0] && fw_setup(reg) < 0)
		return;
	if (changes[0] && changes_setup(changes) < 0)
		return;
	if (cfg.flags & DR_FP_FDGUARD)
		__atomic_store_n(&fp_guard, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&fp_enabled, 1, __ATOMIC_RELEASE);
}

/* ---- the verified-parent cache ---- */

#define C_SLOTS 64
#define C_WAYS 4
#define C_KEY 512
#define FP_FD_BASE 768 /* below the usual soft RLIMIT_NOFILE of 1024 */
#define FP_FD_END 848  /* the guarded range's end (fastpath.FDEnd) */
/* A slot is shared by the threads that use its directory and changed by one
 * at a time: state counts the users (readers) and has S_BUSY set while one
 * thread refills it, which it may do only when nobody uses it. Nothing ever
 * waits (a signal handler may run the library inside an interrupted call):
 * a thread that cannot have the slot it wants verifies the directory
 * without the cache. */
#define S_BUSY 0x40000000u
struct slot {
	unsigned gen; /* cur_gen() when verified */
	unsigned guard; /* fp_guard when last known ours (odd: never) */
	int fd;   /* -1: empty */
	uint64_t dev, ino, stamp;
	int64_t ctime_sec, ctime_nsec; /* a rename of the directory itself changes it */
	uint32_t hash, len;
	char key[C_KEY];
};
/* slots[C_SLOTS], out of every lookup's ways, holds the empty directory
 * (empty_dir). */
static struct slot slots[C_SLOTS + 1];
/* The slots' state words, each on a cache line of its own: every call
 * writes one (a reader's reference), and its slot's fields, which calls
 * only read, then stay shared between the CPUs of threads using it. */
static struct {
	unsigned v;
} __attribute__((aligned(64))) slot_states[C_SLOTS + 1];
static unsigned *state_of(struct slot *s) { return &slot_states[s - slots].v; }

/* The pins access keeps (access_pinned): a file's O_PATH descriptor in the
 * guarded range, with the file's dev/ino and the parent directory and name
 * it was opened as; the same use/refill protocol as the slots' (state). */
#define P_SLOTS 8
#define P_NAME 64
struct pinslot {
	unsigned state;
	unsigned guard; /* fp_guard when last known ours (odd: never) */
	int fd;         /* -1 or 0: empty */
	uint64_t dev, ino, pdev, pino, stamp;
	/* The file's ctime when pinned, and whether its modes alone decide
	 * (pin_plain); granted: the modes (R_OK, X_OK) the kernel granted
	 * through the pin while the ctime was that one (access_granted). */
	int64_t ctime_sec, ctime_nsec;
	unsigned plain, granted;
	char name[P_NAME];
};
static struct pinslot pins[P_SLOTS];

/* fp_gen counts this process's renames and removals (through the library's
 * functions and syscall()), and the session's change counter (fp_changes, a
 * file every guest process maps shared; the tracer counts the calls it
 * traps) everyone's: a cached directory or resolution from before one is
 * verified again, so that a guest's change to a path (an ancestor renamed,
 * a symlink on the way replaced) shows on the next call of every process;
 * changes made outside the guest show within the TTL. */
static unsigned fp_gen;
static unsigned cur_gen(void)
{
	unsigned g = __atomic_load_n(&fp_gen, __ATOMIC_ACQUIRE);
	if (fp_changes)
		g += __atomic_load_n(fp_changes, __ATOMIC_ACQUIRE);
	return g;
}
static void changed(void)
{
	__atomic_add_fetch(&fp_gen, 1, __ATOMIC_RELEASE);
	if (fp_changes)
		__atomic_add_fetch(fp_changes, 1, __ATOMIC_RELEASE);
}

/* fp_watching: this process added an inotify watch, and its caches keep
 * no descriptor past a call ("inotify watches", below). */
static int fp_watching;
static int watching(void) { return __atomic_load_n(&fp_watching, __ATOMIC_RELAXED); }

/* fp_guard is the tracer's word for this memory's descriptors
 * (DR_FP_FDGUARD; odd until the handshake asks for it): even while the
 * filter traps every close, dup2 and dup3 onto FP_FD_BASE..FP_FD_END-1 (and
 * every close_range), at each of which the tracer changes it before the
 * kernel runs the call, and while the threads sharing this memory share one
 * descriptor table (no vfork child running in it, no CLONE_FILES
 * difference). A cached descriptor is known to be the directory verified as
 * long as the word is the even value it had then: its dev/ino check is
 * skipped, and the call is the only system call of an answer. */
static unsigned guard_now(void) { return __atomic_load_n(&fp_guard, __ATOMIC_ACQUIRE); }
static int guardable(int fd) { return fd >= FP_FD_BASE && fd < FP_FD_END; }

/* guard_for is the guard word to record for descriptor fd verified ours
 * under word g0 (read before the check): g0 while it is even, fd is in the
 * guarded range and the word has not changed since; else 1 (odd: checked
 * at every use). */
static unsigned guard_for(int fd, unsigned g0)
{
	return !(g0 & 1) && guardable(fd) && guard_now() == g0 ? g0 : 1;
}

/* use_state takes a reader's reference on a slot's state word, unless the
 * slot is being refilled. */
static int use_state(unsigned *state)
{
	unsigned st = __atomic_load_n(state, __ATOMIC_RELAXED);
	while (!(st & S_BUSY))
		if (__atomic_compare_exchange_n(state, &st, st + 1, 1, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return 1;
	return 0;
}
static void unuse_state(unsigned *state) { __atomic_fetch_sub(state, 1, __ATOMIC_RELEASE); }
/* refill_state makes the caller a slot's only writer, from `have`
 * references (0, or the caller's own 1). */
static int refill_state(unsigned *state, unsigned have)
{
	return __atomic_compare_exchange_n(state, &have, S_BUSY, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/* use takes a reader's reference on s, unless it is being refilled. */
static int use(struct slot *s) { return use_state(state_of(s)); }
static void unuse(struct slot *s) { unuse_state(state_of(s)); }
/* refill makes the caller s's only writer, from `have` references (0, or
 * the caller's own 1); done hands it back with the caller holding one. */
static int refill(struct slot *s, unsigned have) { return refill_state(state_of(s), have); }
static void done(struct slot *s) { __atomic_store_n(state_of(s), 1, __ATOMIC_RELEASE); }
static void cancel(struct slot *s) { __atomic_store_n(state_of(s), 0, __ATOMIC_RELEASE); }

/* now_ns is the coarse monotonic clock (the vDSO's last tick, no counter
 * read: a few ns where CLOCK_MONOTONIC costs tens), which lags the real
 * time by up to a tick: ages are compared with cfg.fresh_ns, the TTL less
 * a tick, so an entry is never used past its TTL. */
static uint64_t now_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint32_t hash_of(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull ^ n;
	size_t i = 0;
	for (; i + 8 <= n; i += 8)
		h = (h ^ load8(s + i)) * 0x100000001b3ull;
	for (; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	h ^= h >> 29; /* the high bits' mixing into the low ones */
	h *= 0xbf58476d1ce4e5b9ull;
	return (uint32_t)(h ^ (h >> 32));
}

/* verify opens host directory dir (len bytes, NUL-terminated) O_PATH and
 * checks that the kernel names it exactly dir; it returns the descriptor and
 * its dev/ino, or -1. */
static __attribute__((noinline)) int verify(const char *dir, size_t len, struct stat *st)
{
	char proc[32], buf[FP_HOST_MAX];
	if (len >= sizeof buf)
		return -1;
	long fd = tr(SYS_openat, AT_FDCWD, (long)(len ? dir : "/"), O_PATH | O_DIRECTORY | O_CLOEXEC, 0, 0, 0);
	if (fd < 0)
		return -1;
	fmt_procfd(proc, (int)fd);
	long n = tr(SYS_readlinkat, AT_FDCWD, (long)proc, (long)buf, (long)(len ? len + 1 : 2), 0, 0);
	int ok = len ? n == (long)len && fp_memeq(buf, dir, len) : n == 1 && buf[0] == '/';
	if (ok && tr(SYS_fstat, fd, (long)st, 0, 0, 0, 0) == 0)
		return (int)fd;
	tr(SYS_close, fd, 0, 0, 0, 0, 0);
	return -1;
}

/* A parent directory in use: its descriptor, and the slot to unlock after
 * the call (NULL: the descriptor is ours to close). */
struct parent {
	int fd;
	struct slot *slot; /* holding a reference */
	int borrowed; /* the guest's own descriptor (or AT_FDCWD): not ours to close */
};

static void release(struct parent *p)
{
	if (p->slot)
		unuse(p->slot);
	else if (!p->borrowed)
		tr(SYS_close, p->fd, 0, 0, 0, 0, 0);
}

static int bind_parent(uint64_t dev, uint64_t ino);

/* up_ok reports whether the kernel's ".." of directory fd is the tracer's:
 * the directory, as the kernel names it now, lies strictly below the rootfs
 * or a bind's host and is none of them (the guest's ".." of a mount's root
 * is the guest parent of its mount point, and of "/" is "/"; a directory
 * bound at a second guest path is such a root too). Anything else (outside
 * the guest, removed) goes to the tracer. */
static __attribute__((noinline)) int up_ok(long fd)
{
	char buf[FP_HOST_MAX];
	size_t len = fd_link(fd, buf);
	if (len <= 1)
		return 0;
	int below = len > cfg.rootlen && fp_memeq(buf, cfg.root, cfg.rootlen) && buf[cfg.rootlen] == '/';
	for (int i = 0; i < cfg.nbinds; i++) {
		const struct fp_bind *b = &cfg.binds[i];
		if (!b->host)
			continue;
		if (len == b->hlen && fp_memeq(buf, b->host, len))
			return 0;
		if (len > b->hlen && fp_memeq(buf, b->host, b->hlen) && buf[b->hlen] == '/')
			below = 1;
	}
	return below;
}

/* verify_rel opens the directories of rel (len bytes: names and "..",
 * without "" or ".") one by one under directory descriptor base, never
 * following a symlink; it returns the last one's descriptor and its dev/ino,
 * or -1. No directory may be in /proc; a name is looked up only in a
 * directory that is no bind point's guest ancestor (that name, or the next
 * one, could be a bind point), and ".." taken only where up_ok says the
 * kernel's parent is the guest's. */
static int verify_rel(int base, const char *rel, size_t len, struct stat *st)
{
	char comp[256];
	long fd = base;
	int own = 0;
	long r = fd == AT_FDCWD ? tr(SYS_newfstatat, AT_FDCWD, (long)".", (long)st, 0, 0, 0)
				: tr(SYS_fstat, fd, (long)st, 0, 0, 0, 0);
	if (r != 0)
		return -1;
	for (size_t i = 0; i <= len;) {
		size_t cl = 0;
		while (i + cl < len && rel[i + cl] != '/')
			cl++;
		int up = cl == 2 && rel[i] == '.' && rel[i + 1] == '.';
		/* A name (this one, or the call's own after the last) is looked
		 * up here: not in a bind point's ancestor. */
		if (!up && bind_parent(st->st_dev, st->st_ino))
			goto fail;
		if (i == len)
			break;
		if (cl == 0 || cl >= sizeof comp)
			goto fail;
		if (up && fd == AT_FDCWD) {
			fd = tr(SYS_openat, AT_FDCWD, (long)".", O_PATH | O_DIRECTORY | O_CLOEXEC, 0, 0, 0);
			if (fd < 0)
				return -1;
			own = 1;
		}
		if (up && !up_ok(fd))
			goto fail;
		fp_memcpy(comp, rel + i, cl);
		comp[cl] = 0;
		long nfd = tr(SYS_openat, fd, (long)comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0, 0, 0);
		if (own)
			tr(SYS_close, fd, 0, 0, 0, 0, 0);
		own = 0;
		if (nfd < 0)
			return -1;
		fd = nfd, own = 1;
		if (tr(SYS_fstat, fd, (long)st, 0, 0, 0, 0) != 0 || st->st_dev == cfg.proc_dev)
			goto fail;
		i += cl + 1;
		if (i > len)
			i = len;
	}
	if (own)
		return (int)fd;
fail:
	if (own)
		tr(SYS_close, fd, 0, 0, 0, 0, 0);
	return -1;
}

/* get_parent returns a verified descriptor of a parent directory: host
 * directory dir (len bytes) when base is -1, else directory path dir
 * relative to the guest's directory descriptor base. key (keylen bytes)
 * names it in the cache. */
static int get_parent(const char *key, size_t keylen, int base, const char *dir, size_t len, struct parent *out, int lookup_only)
{
	struct stat st;
	uint32_t h = hash_of(key, keylen);
	struct slot *victim = NULL; /* held with S_BUSY */
	uint64_t t = cfg.ttl_ns ? now_ns() : 0;
	unsigned g0 = guard_now(); /* before any check: a change after it shows as a new word */
	if (cfg.ttl_ns && keylen < C_KEY && !watching()) {
		int found = 0;
		for (int i = 0; i < C_WAYS && !found; i++) {
			struct slot *s = &slots[(h + (uint32_t)i) % C_SLOTS];
			if (!use(s))
				continue;
			if (!(s->fd > 0 && s->hash == h && s->len == keylen && fp_memeq(s->key, key, keylen))) {
				unuse(s);
				continue;
			}
			found = 1;
			unsigned gen = cur_gen();
			int fresh = t - s->stamp < cfg.fresh_ns && __atomic_load_n(&s->gen, __ATOMIC_RELAXED) == gen;
			if (fresh && !(g0 & 1) && __atomic_load_n(&s->guard, __ATOMIC_RELAXED) == g0) {
				/* Guarded: still the descriptor verified. */
				out->fd = s->fd, out->slot = s, out->borrowed = 0;
				count(F_DIRS, W_ANSWERED);
				return 0;
			}
			int ours = tr(SYS_fstat, s->fd, (long)&st, 0, 0, 0, 0) == 0 && st.st_dev == s->dev && st.st_ino == s->ino;
			if (ours && fresh && st.st_ctim.tv_sec == s->ctime_sec && st.st_ctim.tv_nsec == s->ctime_nsec) {
				/* Ours now: guarded from here while the word stays. */
				__atomic_store_n(&s->guard, guard_for(s->fd, g0), __ATOMIC_RELAXED);
				out->fd = s->fd, out->slot = s, out->borrowed = 0;
				count(F_DIRS, W_ANSWERED);
				return 0;
			}
			if (lookup_only) {
				unuse(s);
				return -1;
			}
			/* Expired (or its ctime changed): verify again; the same
			 * directory renews the entry for everyone using it. */
			struct stat nst;
			int fd = ours ? (base == -1 ? verify(dir, len, &nst) : verify_rel(base, dir, len, &nst)) : -1;
			if (ours)
				count(F_DIRS, W_UNVERIFIED);
			if (fd >= 0 && nst.st_dev == s->dev && nst.st_ino == s->ino) {
				tr(SYS_close, fd, 0, 0, 0, 0, 0);
				__atomic_store_n(&s->guard, guard_for(s->fd, g0), __ATOMIC_RELAXED);
				__atomic_store_n(&s->ctime_sec, nst.st_ctim.tv_sec, __ATOMIC_RELAXED);
				__atomic_store_n(&s->ctime_nsec, nst.st_ctim.tv_nsec, __ATOMIC_RELAXED);
				__atomic_store_n(&s->gen, gen, __ATOMIC_RELAXED);
				__atomic_store_n(&s->stamp, t, __ATOMIC_RELEASE);
				out->fd = s->fd, out->slot = s, out->borrowed = 0;
				return 0;
			}
			if (fd >= 0)
				tr(SYS_close, fd, 0, 0, 0, 0, 0);
			/* Another directory now, or no longer ours (the guest
			 * closed or reused the number: not ours to close):
			 * verify into this slot if nobody else uses it. */
			if (refill(s, 1)) {
				if (!ours)
					s->fd = -1;
				victim = s;
			} else {
				unuse(s);
			}
		}
		if (lookup_only)
			return -1;
		/* Not cached: an empty slot, else any that nobody uses. */
		for (int pass = 0; !found && !victim && pass < 2; pass++)
			for (int i = 0; i < C_WAYS && !victim; i++) {
				struct slot *s = &slots[(h + (uint32_t)i) % C_SLOTS];
				if ((pass || __atomic_load_n(&s->fd, __ATOMIC_RELAXED) <= 0) && refill(s, 0))
					victim = s;
			}
	}
	if (lookup_only)
		return -1;
	unsigned gen = cur_gen();
	int fd = base == -1 ? verify(dir, len, &st) : verify_rel(base, dir, len, &st);
	count(F_DIRS, W_UNVERIFIED);
	if (fd < 0) {
		if (victim)
			cancel(victim);
		return -1;
	}
	if (victim) {
		/* Cached descriptors live high, out of the numbers programs
		 * expect open() to return next. */
		long hi = raw6(SYS_fcntl, fd, F_DUPFD_CLOEXEC, FP_FD_BASE, 0, 0, 0);
		if (hi >= FP_FD_BASE) {
			tr(SYS_close, fd, 0, 0, 0, 0, 0);
			fd = (int)hi;
		} else {
			cancel(victim);
			victim = NULL;
		}
	}
	if (!victim) {
		out->fd = fd, out->slot = NULL, out->borrowed = 0;
		return 0;
	}
	if (victim->fd > 0)
		tr(SYS_close, victim->fd, 0, 0, 0, 0, 0);
	victim->fd = fd;
	victim->dev = st.st_dev;
	victim->ino = st.st_ino;
	victim->ctime_sec = st.st_ctim.tv_sec;
	victim->ctime_nsec = st.st_ctim.tv_nsec;
	victim->stamp = t;
	victim->gen = gen;
	victim->guard = guard_for(fd, g0);
	victim->hash = h;
	victim->len = (uint32_t)keylen;
	fp_memcpy(victim->key, key, keylen);
	done(victim);
	out->fd = fd, out->slot = victim, out->borrowed = 0;
	return 0;
}

/* ---- missing parents ---- */

/* droidroot's empty directory (cfg.empty, mode 0555: nothing is created in
 * it), opened O_PATH on first use and kept at a high number in a slot of
 * its own (slots[C_SLOTS]: a reference while a call uses it, so that shed
 * can give it back), checked by dev/ino before each use (guests close and
 * reuse numbers). A call whose parent directory is proven missing is made
 * under it as "<missing>/<name>": the kernel answers as for a missing
 * directory, with its own errors in its own order (flags, descriptors,
 * ENOENT), and walks nothing of the guest's (a name the guest creates
 * meanwhile is never followed). It takes a reference to it for *out
 * (release gives it back): 0, or -1 to defer. */
static uint64_t empty_dev, empty_ino; /* the first one opened: every later one must be it */

/* still_ours tells whether descriptor fd, recorded as file dev/ino with
 * guard word *guard (its holder held by the caller), is still that file:
 * the guard word unchanged since g0, or its fstat, after which the word is
 * renewed. The cache's slots (slot_ours) and access's pins (pin_ours). */
static int still_ours(unsigned *guard, int fd, uint64_t dev, uint64_t ino, unsigned g0)
{
	struct stat st;
	if (!(g0 & 1) && __atomic_load_n(guard, __ATOMIC_RELAXED) == g0)
		return 1;
	if (tr(SYS_fstat, fd, (long)&st, 0, 0, 0, 0) != 0 || st.st_dev != dev || st.st_ino != ino)
		return 0;
	__atomic_store_n(guard, guard_for(fd, g0), __ATOMIC_RELAXED);
	return 1;
}

/* slot_ours tells whether slot s's descriptor (s held by the caller) is
 * still the one recorded. */
static int slot_ours(struct slot *s, unsigned g0) { return still_ours(&s->guard, s->fd, s->dev, s->ino, g0); }

static int empty_dir(struct parent *out)
{
	struct stat st;
	struct slot *s = &slots[C_SLOTS];
	unsigned g0 = guard_now();
	if (use(s)) {
		if (s->fd > 0 && slot_ours(s, g0)) {
			out->fd = s->fd, out->slot = s, out->borrowed = 0;
			return 0;
		}
		unuse(s);
	}
	if (!cfg.empty || !refill(s, 0))
		return -1; /* in use by another thread, which will have it checked */
	long nfd = tr(SYS_openat, AT_FDCWD, (long)cfg.empty, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0, 0, 0);
	long hi = nfd < 0 ? -1 : raw6(SYS_fcntl, nfd, F_DUPFD_CLOEXEC, FP_FD_BASE, 0, 0, 0);
	if (nfd >= 0)
		tr(SYS_close, nfd, 0, 0, 0, 0, 0);
	if (hi >= 0 && (tr(SYS_fstat, hi, (long)&st, 0, 0, 0, 0) != 0 || !S_ISDIR(st.st_mode) ||
			(empty_ino && (st.st_dev != empty_dev || st.st_ino != empty_ino)))) {
		tr(SYS_close, hi, 0, 0, 0, 0, 0);
		hi = -1;
	}
	if (hi < 0) {
		cancel(s); /* the old descriptor, if any, is checked at the next use */
		return -1;
	}
	empty_dev = st.st_dev, empty_ino = st.st_ino;
	if (s->fd > 0 && tr(SYS_fstat, s->fd, (long)&st, 0, 0, 0, 0) == 0 && st.st_dev == empty_dev && st.st_ino == empty_ino)
		tr(SYS_close, s->fd, 0, 0, 0, 0, 0); /* still ours (not a number the guest reused) */
	s->fd = (int)hi;
	s->dev = empty_dev, s->ino = empty_ino;
	s->guard = guard_for((int)hi, g0);
	done(s); /* one reference: the caller's */
	out->fd = (int)hi, out->slot = s, out->borrowed = 0;
	return 0;
}

/* hidden_fd tells whether fd is one of the library's own descriptors: a
 * cached directory or the empty directory while the guard word says it still
 * is, or the counters' copy of stderr. A program that looks for its open
 * descriptors (fstat or fcntl of each number, a listing of /proc/self/fd) is
 * told EBADF for them or is not shown them, as without the library. Where
 * the word cannot say (odd), a descriptor is shown as it is. */
static int hidden_fd(long fd)
{
	if (fd == stats_fd && fd != 2)
		return 1; /* the counters' copy of stderr (DROIDROOT_FASTPATH_STATS) */
	if (!guardable((int)fd))
		return 0;
	unsigned g = guard_now();
	if (g & 1)
		return 0;
	for (int i = 0; i <= C_SLOTS; i++) /* the empty directory's too */
		if (__atomic_load_n(&slots[i].fd, __ATOMIC_RELAXED) == fd && __atomic_load_n(&slots[i].guard, __ATOMIC_RELAXED) == g)
			return 1;
	for (int i = 0; i < P_SLOTS; i++)
		if (__atomic_load_n(&pins[i].fd, __ATOMIC_RELAXED) == fd && __atomic_load_n(&pins[i].guard, __ATOMIC_RELAXED) == g)
			return 1;
	return 0;
}

/* under_empty looks directory name (len bytes) up in verified directory dir
 * (released here) without following it; when it is missing (ENOENT), so is
 * every path through it, and *out becomes the empty directory, for the call
 * to be made under it (the caller names it "<name>/<the call's name>"). 0,
 * or -1 to defer. */
static __attribute__((noinline)) int under_empty(struct parent *dir, const char *name, size_t len, struct parent *out)
{
	char comp[256];
	struct stat st;
	int missing = 0;
	if (len && len < sizeof comp && !(len == 2 && name[0] == '.' && name[1] == '.') && !(len == 1 && name[0] == '.')) {
		fp_memcpy(comp, name, len);
		comp[len] = 0;
		missing = tr(SYS_newfstatat, dir->fd, (long)comp, (long)&st, AT_SYMLINK_NOFOLLOW, 0, 0) == -ENOENT;
	}
	release(dir);
	return missing ? empty_dir(out) : -1;
}

/* ---- guest path -> host parent + name ---- */

struct target {
	char host[FP_HOST_MAX]; /* host parent directory, NUL-terminated; the name follows */
	size_t parentlen;
	const char *name;       /* last component (in host[]) */
	int ancestor;           /* the guest path is a strict ancestor of a bind point */
	int hops;               /* symlinks followed on the way to the parent (resolve_parent) */
	int bindpoint;          /* the guest path is a bind point */
	long mount;             /* which mount the path is in: 0 the rootfs, 1+i bind i, 1<<20 + dirfd a relative
	                         * path's (no bind point below a base the library accepts) */
	/* unchecked: parent is the guest's own dirfd (or AT_FDCWD), not checked
	 * by a call of its own (map_rel's direct form): the caller accepts only
	 * an answer no such check could change, and maps again with it
	 * otherwise (see direct_ok). */
	int unchecked;
	struct parent parent;
	/* pdev/pino: the parent's identity where it is the guest's cwd or
	 * dirfd, checked (map_rel); a cached parent's is its slot's. 0: none. */
	uint64_t pdev, pino;
};

/* ---- parents with symlinks on the way ---- */

/* A parent directory whose guest path has a symlink on it (Wine's
 * dosdevices/c:, /lib -> usr/lib) does not verify as it is: resolve_parent
 * gives its guest path without symlinks, and the resolution cache remembers
 * it for the TTL (as a change further up is seen within the TTL), keyed by
 * the guest path as given; a seqlock per slot (odd while written), so that
 * readers never wait and never write. The canonical path is a guest path:
 * a stale one still names a file of the guest. */
#define R_SLOTS 64
#define R_WAYS 4
#define R_LEN 512
struct rslot {
	unsigned seq, gen;
	uint32_t hash, klen, clen, hops;
	uint64_t stamp;
	char key[R_LEN], canon[R_LEN];
};
static struct rslot rslots[R_SLOTS];

/* rcache_get copies the canonical form of guest parent key (klen bytes) into
 * out (size bytes) and returns its length, or -1; *hops: the symlinks its
 * resolution followed. */
static long rcache_get(const char *key, size_t klen, char *out, size_t size, int *hops)
{
	uint32_t h = hash_of(key, klen);
	uint64_t t = now_ns();
	for (int i = 0; i < R_WAYS; i++) {
		struct rslot *s = &rslots[(h + (uint32_t)i) % R_SLOTS];
		unsigned q = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
		if (q & 1)
			continue;
		uint32_t cl = __atomic_load_n(&s->clen, __ATOMIC_RELAXED);
		uint64_t st = __atomic_load_n(&s->stamp, __ATOMIC_RELAXED);
		if (__atomic_load_n(&s->hash, __ATOMIC_RELAXED) != h || __atomic_load_n(&s->klen, __ATOMIC_RELAXED) != klen ||
		    cl >= size || t - st >= cfg.fresh_ns || __atomic_load_n(&s->gen, __ATOMIC_RELAXED) != cur_gen())
			continue;
		int same = fp_memeq(s->key, key, klen);
		fp_memcpy(out, s->canon, cl);
		*hops = (int)__atomic_load_n(&s->hops, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (same && __atomic_load_n(&s->seq, __ATOMIC_RELAXED) == q)
			return cl;
	}
	return -1;
}

/* rcache_put remembers canon (clen bytes) for key (klen bytes), in a way
 * nobody is writing; never waits. */
static void rcache_put(const char *key, size_t klen, const char *canon, size_t clen, int hops, unsigned gen)
{
	uint32_t h = hash_of(key, klen);
	struct rslot *v = NULL;
	for (int i = 0; i < R_WAYS; i++) {
		struct rslot *s = &rslots[(h + (uint32_t)i) % R_SLOTS];
		if (!v || __atomic_load_n(&s->stamp, __ATOMIC_RELAXED) < __atomic_load_n(&v->stamp, __ATOMIC_RELAXED))
			v = s;
		if (__atomic_load_n(&s->hash, __ATOMIC_RELAXED) == h && __atomic_load_n(&s->klen, __ATOMIC_RELAXED) == klen) {
			v = s;
			break;
		}
	}
	unsigned q = __atomic_load_n(&v->seq, __ATOMIC_RELAXED);
	if ((q & 1) || !__atomic_compare_exchange_n(&v->seq, &q, q + 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&v->hash, h, __ATOMIC_RELAXED);
	__atomic_store_n(&v->klen, (uint32_t)klen, __ATOMIC_RELAXED);
	__atomic_store_n(&v->clen, (uint32_t)clen, __ATOMIC_RELAXED);
	__atomic_store_n(&v->hops, (uint32_t)hops, __ATOMIC_RELAXED);
	fp_memcpy(v->key, key, klen);
	fp_memcpy(v->canon, canon, clen);
	__atomic_store_n(&v->gen, gen, __ATOMIC_RELAXED);
	__atomic_store_n(&v->stamp, now_ns(), __ATOMIC_RELAXED);
	__atomic_store_n(&v->seq, q + 2, __ATOMIC_RELEASE);
}

/* bind_of returns the binding whose guest path is the longest one that is
 * guest path g (n bytes, clean, absolute) or one of its ancestors (the last
 * given of equal ones), NULL for the rootfs; *ancestor (unless NULL) says
 * whether g is a strict ancestor of a bind point. */
static const struct fp_bind *bind_of(const char *g, size_t n, int *ancestor)
{
	const struct fp_bind *best = NULL;
	if (ancestor)
		*ancestor = 0;
	/* Only the binds of g's first component's bucket, and those of "/",
	 * can be g or an ancestor of it, or lie below it (fc_bucket); in the
	 * order given, as the last of equal ones wins. */
	int k = fc_bucket(g, n);
	for (int w = 0; w * 64 < cfg.nbinds; w++) {
		uint64_t bits = k < 0 ? ~0ull : cfg.fcmask[k][w] | cfg.rootmask[w];
		for (; bits; bits &= bits - 1) {
			int i = w * 64 + __builtin_ctzll(bits);
			if (i >= cfg.nbinds)
				break;
			const struct fp_bind *b = &cfg.binds[i];
			if (under(g, n, b->guest, b->glen)) {
				if (!best || b->glen >= best->glen)
					best = b;
			} else if (ancestor && under(b->guest, b->glen, g, n)) {
				*ancestor = 1;
			}
		}
	}
	return best;
}

/* guest_host writes the host path of clean absolute guest path g (n bytes;
 * "" for "/") into host (size bytes), NUL-terminated, as map_guest maps it;
 * -1 for what the tracer must decide (/proc, a bind of /proc/self/..., too
 * long). */
static long guest_host(const char *g, size_t n, char *host, size_t size)
{
	if (n == 0)
		g = "/", n = 1;
	if (fp_memeq(g, "/proc", 5) && (n == 5 || g[5] == '/'))
		return -1;
	const struct fp_bind *best = bind_of(g, n, NULL);
	const char *hp = cfg.root;
	size_t hl = cfg.rootlen, skip = 0;
	if (best) {
		if (!best->host)
			return -1;
		hp = best->host, hl = best->hlen, skip = best->glen;
	}
	if (hl + (n - skip) + 2 > size)
		return -1;
	fp_memcpy(host, hp, hl);
	fp_memcpy(host + hl, g + skip, n - skip);
	size_t total = hl + (n - skip);
	if (total == 0)
		host[total++] = '/';
	host[total] = 0;
	return (long)total;
}

/* resolve_parent writes guest directory g (gl bytes: "" for "/", else a
 * clean absolute path) without symlinks into out (size bytes; "" for "/")
 * and returns its length, or -1 when the tracer must decide (a component
 * missing or no directory, /proc, a loop, too long). Symlinks are followed
 * the guest's way: an absolute target from the guest's root, a relative
 * one from the directory holding it, ".." from a mount's root to its mount
 * point's parent (in a chroot with bind mounts, ".." of a guest path is its
 * guest parent), never above "/". *hopsp: how many symlinks it followed
 * (the kernel's ELOOP counts every one of a lookup's). */
static __attribute__((noinline)) long resolve_parent(const char *g, size_t gl, char *out, size_t size, int *hopsp)
{
	char rem[2 * R_LEN], link[R_LEN], host[FP_HOST_MAX];
	size_t rl = gl, pos = 0, ol = 0;
	int hops = 0;
	if (gl >= sizeof rem)
		return -1;
	fp_memcpy(rem, g, gl);
	while (pos < rl) {
		while (pos < rl && rem[pos] == '/')
			pos++;
		size_t c = pos;
		while (pos < rl && rem[pos] != '/')
			pos++;
		size_t cl = pos - c;
		if (cl == 0 || (cl == 1 && rem[c] == '.'))
			continue;
		if (cl == 2 && rem[c] == '.' && rem[c + 1] == '.') {
			while (ol > 0 && out[ol - 1] != '/')
				ol--;
			if (ol > 0)
				ol--;
			continue;
		}
		if (ol + 1 + cl >= size)
			return -1;
		size_t before = ol;
		out[ol++] = '/';
		fp_memcpy(out + ol, rem + c, cl);
		ol += cl;
		struct stat st;
		if (guest_host(out, ol, host, sizeof host) < 0 ||
		    tr(SYS_newfstatat, AT_FDCWD, (long)host, (long)&st, AT_SYMLINK_NOFOLLOW, 0, 0) != 0)
			return -1;
		if (S_ISDIR(st.st_mode))
			continue;
		if (!S_ISLNK(st.st_mode) || ++hops > 40)
			return -1; /* ENOTDIR, ELOOP: the tracer's */
		long n = tr(SYS_readlinkat, AT_FDCWD, (long)host, (long)link, sizeof link, 0, 0);
		if (n <= 0 || n >= (long)sizeof link)
			return -1;
		/* The target, then what was left after the link. */
		size_t left = rl - pos;
		if ((size_t)n + 1 + left > sizeof rem)
			return -1;
		/* rem[pos:pos+left] moves to rem[n+1:], then the target fills
		 * rem[0:n] (copied in the direction the overlap allows). */
		if ((size_t)n + 1 > pos)
			for (size_t i = left; i > 0; i--)
				rem[(size_t)n + i] = rem[pos + i - 1];
		else
			for (size_t i = 0; i < left; i++)
				rem[(size_t)n + 1 + i] = rem[pos + i];
		fp_memcpy(rem, link, (size_t)n);
		rem[n] = '/';
		rl = (size_t)n + 1 + left;
		pos = 0;
		ol = link[0] == '/' ? 0 : before;
	}
	*hopsp = hops;
	return (long)ol;
}

/* map_guest maps clean absolute guest path norm (n bytes) to its host path
 * in t->host, split into the parent (NUL-terminated, parentlen bytes) and the
 * last component t->name, with what t says about binds; W_ANSWERED when
 * mapped (the parent not yet verified). */
static enum fp_why map_guest(const char *norm, size_t n, struct target *t)
{
	const struct fp_bind *best = bind_of(norm, n, &t->ancestor);
	t->bindpoint = 0;
	t->mount = 0;
	const char *hp = cfg.root;
	size_t hl = cfg.rootlen, skip = 0;
	if (best) {
		if (!best->host)
			return W_PROC;
		hp = best->host, hl = best->hlen, skip = best->glen;
		t->bindpoint = best->glen == n;
		t->mount = 1 + (best - cfg.binds);
	}
	if (hl + (n - skip) + 1 > sizeof t->host)
		return W_LONG;
	fp_memcpy(t->host, hp, hl);
	fp_memcpy(t->host + hl, norm + skip, n - skip);
	size_t total = hl + (n - skip);
	t->host[total] = 0;
	if (total == 0)
		return W_DOTS; /* the host "/" itself */
	size_t slash = total;
	while (slash > 0 && t->host[slash - 1] != '/')
		slash--;
	if (slash == 0)
		return W_DOTS;
	/* host[slash-1] is the last '/': parent = host[0:slash-1] */
	t->parentlen = slash - 1;
	t->host[slash - 1] = 0;
	t->name = t->host + slash;
	return W_ANSWERED;
}

/* missing_parent: the host parent of t (map_guest's mapping of guest path
 * norm, whose parent is norm[0:gp]) did not verify. Perhaps it is missing,
 * or one of its ancestors is (fontconfig's cache in a fresh home:
 * ~/.cache/fontconfig/X where ~/.cache is not there yet): the nearest
 * ancestor that verifies, up to MISSING_LEVELS above the parent, is found,
 * and when the name below it on the way (its "child") is missing there and
 * that child is no bind point and no bind point's guest ancestor (a
 * directory that exists only for one), the kernel's lookup of the path
 * ends at the child with ENOENT whatever follows: the call is made under
 * the empty directory as "<child>/.../<name>", which ends the same way.
 * Each level that does not verify is checked as a child in turn; one that
 * exists in the ancestor above it (a symlink, a file) leaves the path to
 * the tracer. */
#define MISSING_LEVELS 8
static enum fp_why missing_parent(const char *norm, size_t gp, struct target *t)
{
	if (!cfg.empty)
		return W_UNVERIFIED;
	size_t gx = gp;              /* the child's guest path: norm[0:gx] */
	size_t end = t->parentlen;   /* the child's host path: host[0:end], its name from s */
	for (int level = 0; level < MISSING_LEVELS && gx > 0; level++) {
		int anc;
		const struct fp_bind *b = bind_of(norm, gx, &anc);
		if (anc || (b && b->glen == gx))
			return W_UNVERIFIED;
		size_t s = end;
		while (s > 0 && t->host[s - 1] != '/')
			s--;
		if (s == 0 || s - 1 < (b ? b->hlen : cfg.rootlen))
			return W_UNVERIFIED;
		struct parent up;
		t->host[s - 1] = 0;
		int ok = get_parent(t->host, s - 1, -1, t->host, s - 1, &up, 0) == 0;
		t->host[s - 1] = '/';
		if (ok) {
			if (under_empty(&up, t->host + s, end - s, &t->parent) < 0)
				return W_UNVERIFIED;
			t->name = t->host + s; /* "<child>/.../<name>": the host's '/'s are back */
			return W_ANSWERED;
		}
		/* The ancestor did not verify either: it is the next child. */
		end = s - 1;
		while (gx > 0 && norm[gx - 1] != '/')
			gx--;
		gx = gx ? gx - 1 : 0;
	}
	return W_UNVERIFIED;
}

/* How a path is mapped (map_at_how): M_DIRECT, map_rel's direct form for
 * one name below a base; M_DOT, for calls where a path ending in "/", "/."
 * or "/.." (or that is "." or "..") means the directory the whole path
 * resolves to, which the kernel's lookup of "." below that directory gives
 * too: the stat family, access, an open that creates nothing. Other calls
 * treat such a last component in ways of their own (mkdir("d/") makes d,
 * rmdir("d/.") is EINVAL) and leave it to the tracer. */
#define M_DIRECT 1
#define M_DOT 2

/* tail_ok tells whether a path's tail (M_DOT) may be answered: not where a
 * bind's guest path is "/", which bind_of does not take as a prefix. */
static int tail_ok(void)
{
	for (int i = 0; i < cfg.nbinds; i++)
		if (cfg.binds[i].glen <= 1)
			return 0;
	return 1;
}

/* map_path maps absolute guest path g to its host parent (verified) and last
 * component, or returns the reason it cannot (W_ANSWERED means done). A
 * parent with a symlink on its way is resolved in the guest's terms
 * (resolve_parent) and the resolution remembered for the TTL. */
static enum fp_why map_path(const char *g, struct target *t, int how)
{
	if (!fp_on())
		return W_OFF;
	if (!user_ptr(g)) /* the tracer's, where the kernel may answer EFAULT */
		return W_FLAGS;
	if (g[0] != '/')
		return W_RELATIVE;
	/* The path as given: a last component that is a name; "//", "." or
	 * ".." before it are resolved (resolve_parent) as symlinks are. A
	 * trailing slash, "." or ".." there (the tail) goes to the tracer but
	 * for M_DOT's calls, where "P/", "P/." and "P/.." are the directory
	 * the whole path resolves to: "." below it. */
	int dots = 0, dotdot = 0, tail = 0;
	const char *p = g; /* at a '/' (g[0] is one), then after each component */
	long pl = plain_len(g); /* the usual path: no component to look at */
	if (pl >= 0)
		p = g + pl;
	while (*p) {
		const char *c = p + 1;
		size_t cl = (size_t)(comp_end(c) - c);
		if (cl == 0 || (cl == 1 && c[0] == '.') || (cl == 2 && c[0] == '.' && c[1] == '.')) {
			if (c[cl] == 0 && !(how & M_DOT))
				return W_DOTS;
			tail = c[cl] == 0;
			dots = 1;
			dotdot |= cl == 2;
		}
		p = c + cl;
	}
	size_t n = (size_t)(p - g);
	if (n >= FP_PATH_MAX)
		return W_LONG;
	const char *norm = g;
	/* "//" and "." before a last name mean nothing once every directory
	 * on the way is verified as one (fontconfig's "<dir>//<file>"): the
	 * clean path is mapped as any other (a missing parent included). */
	char clean[R_LEN];
	if (dots && !dotdot && !tail && n < sizeof clean) {
		size_t o = 0;
		for (size_t i = 0; i < n;) {
			while (i < n && g[i] == '/')
				i++;
			size_t c = i;
			while (i < n && g[i] != '/')
				i++;
			if (i - c == 0 || (i - c == 1 && g[c] == '.'))
				continue;
			clean[o++] = '/';
			fp_memcpy(clean + o, g + c, i - c);
			o += i - c;
		}
		clean[o] = 0;
		norm = clean, n = o, dots = 0;
	}
	if (fp_memeq(norm, "/proc", 5) && (norm[5] == 0 || norm[5] == '/'))
		return W_PROC;
	if ((cfg.flags & DR_FP_ASHMEM) && fp_memeq(norm, "/dev/ashmem", 11))
		return W_OPTION;

	if (tail && !tail_ok())
		return W_DOTS;
	enum fp_why w = W_DOTS;
	if (!dots) {
		w = map_guest(norm, n, t);
		if (w != W_ANSWERED)
			return w;
		if (get_parent(t->host, t->parentlen, -1, t->host, t->parentlen, &t->parent, 1) == 0)
			return W_ANSWERED;
	}
	/* Not cached under its own name: a parent resolved before, else
	 * the parent as it is, else resolved now. */
	size_t gp = n;
	while (gp > 0 && norm[gp - 1] != '/')
		gp--;
	gp = gp ? gp - 1 : 0; /* norm[0:gp] is the guest parent ("" for "/") */
	const char *name = norm + gp + 1;
	size_t namelen = n - gp - 1;
	if (tail) /* the whole path is the directory, and "." its name there */
		gp = n, name = ".", namelen = 1;
	char g2[R_LEN + 256 + 2];
	long cl = -1;
	int resolved = 0, hops = 0;
	if (cfg.ttl_ns && gp < R_LEN && namelen < 256)
		cl = rcache_get(norm, gp, g2, R_LEN, &hops);
	unsigned gen = cur_gen();
	if (cl < 0) {
		if (!dots) {
			if (get_parent(t->host, t->parentlen, -1, t->host, t->parentlen, &t->parent, 0) == 0)
				return W_ANSWERED;
			t->host[t->parentlen] = '/';
		}
		if (!dots && missing_parent(norm, gp, t) == W_ANSWERED)
			return W_ANSWERED;
		/* Under -l too: a hard link's name is a symlink to a file, never
		 * a directory on the way, and the tracer follows it there as any
		 * guest symlink (as resolve_parent does: a file leaves the
		 * path to the tracer). */
		if (gp >= R_LEN || namelen >= 256)
			return dots ? W_DOTS : W_UNVERIFIED;
		if ((cl = resolve_parent(norm, gp, g2, R_LEN, &hops)) < 0 || (!dots && (size_t)cl == gp && fp_memeq(g2, norm, gp)))
			return W_UNVERIFIED;
		resolved = 1;
	}
	g2[cl] = '/';
	fp_memcpy(g2 + cl + 1, name, namelen);
	g2[cl + 1 + namelen] = 0;
	if ((cfg.flags & DR_FP_ASHMEM) && fp_memeq(g2, "/dev/ashmem", 11))
		return W_OPTION;
	w = map_guest(g2, (size_t)cl + 1 + namelen, t);
	if (w != W_ANSWERED)
		return w;
	if (get_parent(t->host, t->parentlen, -1, t->host, t->parentlen, &t->parent, 0) < 0) {
		t->host[t->parentlen] = '/';
		return W_UNVERIFIED;
	}
	if (resolved && cfg.ttl_ns)
		rcache_put(norm, gp, g2, (size_t)cl, hops, gen);
	t->hops = hops;
	return W_ANSWERED;
}

/* bind_parent reports whether host directory dev/ino is a guest ancestor of
 * a bind point (the tracer sends the list). */
static int bind_parent(uint64_t dev, uint64_t ino)
{
	for (uint32_t i = 0; i < cfg.nparents; i++)
		if (cfg.parents[2 * i] == dev && cfg.parents[2 * i + 1] == ino)
			return 1;
	return 0;
}

/* remember_dir records that descriptor fd is directory dev/ino of the guest's
 * view, or forgets fd (ino 0). */
/* FP_DIR_LAZY (with dev 0) marks a descriptor the library opened
 * read-only in one openat2 (open_nolink), which may be a directory: no
 * lstat told. Its first use as a directory descriptor checks it (dir_lazy),
 * then keeps its dev/ino as for any other. */
#define FP_DIR_LAZY (~(uint64_t)0)

/* dir_lazy reports whether directory descriptor fd, as /proc/self/fd names
 * it now, lies in the rootfs or a bind's host (or is one of them), outside
 * /proc: a directory whose relative names the tracer would translate to
 * the same host files. (The descriptor number may have been closed and
 * reused by calls the library does not see since it opened it.) */
static __attribute__((noinline)) int dir_lazy(int fd)
{
	char buf[FP_HOST_MAX];
	size_t len = fd_link(fd, buf);
	if (len == 0)
		return 0;
	if (len == 1)
		len = 0; /* "/": the empty prefix */
	if (under(buf, len, cfg.root, cfg.rootlen))
		return 1;
	for (int i = 0; i < cfg.nbinds; i++)
		if (cfg.binds[i].host && under(buf, len, cfg.binds[i].host, cfg.binds[i].hlen))
			return 1;
	return 0;
}

/* cwd_known fills st's dev, ino and mode from cwd_id when the record seq
 * (read by the caller before) is the one cwd_id was noted under. */
static int cwd_known(unsigned seq, struct stat *st)
{
	unsigned l = __atomic_load_n(&cwd_lock, __ATOMIC_ACQUIRE);
	if (!seq || (l & 1))
		return 0;
	unsigned s = __atomic_load_n(&cwd_id.seq, __ATOMIC_RELAXED);
	uint64_t dev = __atomic_load_n(&cwd_id.dev, __ATOMIC_RELAXED), ino = __atomic_load_n(&cwd_id.ino, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&cwd_lock, __ATOMIC_RELAXED) != l || s != seq)
		return 0;
	st->st_dev = dev, st->st_ino = ino, st->st_mode = S_IFDIR;
	return 1;
}

/* cwd_note keeps st, the stat of "." made while the record's seq was seq
 * (read before it), when the record still says seq; with no record, it
 * counts a miss and asks the tracer for one at cwd_ask misses. */
static void cwd_note(unsigned seq, const struct stat *st)
{
	if (!seq) {
		if (__atomic_add_fetch(&cwd_misses, 1, __ATOMIC_RELAXED) % __atomic_load_n(&cwd_ask, __ATOMIC_RELAXED))
			return;
		char buf[1024];
		raw6(SYS_getcwd, (long)buf, sizeof buf, 0, 0, 0, 0); /* trapped: the tracer publishes its answer */
		unsigned ask = __atomic_load_n(&cwd_ask, __ATOMIC_RELAXED);
		if (!__atomic_load_n(&cwdrec.seq, __ATOMIC_ACQUIRE) && ask < (1u << 20))
			__atomic_store_n(&cwd_ask, ask * 2, __ATOMIC_RELAXED);
		return;
	}
	if (!S_ISDIR(st->st_mode) || st->st_dev == cfg.proc_dev || __atomic_load_n(&cwdrec.seq, __ATOMIC_ACQUIRE) != seq)
		return;
	unsigned l = __atomic_load_n(&cwd_lock, __ATOMIC_RELAXED);
	if ((l & 1) || !__atomic_compare_exchange_n(&cwd_lock, &l, l + 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&cwd_id.seq, seq, __ATOMIC_RELAXED);
	__atomic_store_n(&cwd_id.dev, (uint64_t)st->st_dev, __ATOMIC_RELAXED);
	__atomic_store_n(&cwd_id.ino, (uint64_t)st->st_ino, __ATOMIC_RELAXED);
	__atomic_store_n(&cwd_lock, l + 2, __ATOMIC_RELEASE);
}

static void remember_dir(long fd, uint64_t dev, uint64_t ino)
{
	if (fd >= 0 && fd < FP_MAX_DIRFD) {
		__atomic_store_n(&dirfds[fd].ino, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&dirfds[fd].dev, dev, __ATOMIC_RELAXED);
		__atomic_store_n(&dirfds[fd].ino, ino, __ATOMIC_RELEASE);
	}
}

/* map_rel maps path relative to dirfd (AT_FDCWD: the kernel's cwd, which
 * droidroot keeps at the guest cwd's host directory) when the directory is
 * one droidroot translated or the library opened. Components "" and "."
 * before the last mean nothing once every directory on the way is opened
 * O_DIRECTORY, and are dropped; the others are walked (verify_rel: names and
 * ".." the kernel takes the tracer's way); the last one must be a name. */
static enum fp_why map_rel(int dirfd, const char *path, struct target *t, int how)
{
	/* The directories on the way (dir, dl bytes) are cached under the
	 * base's identity: key is that (17 bytes), then dir. */
	char key[C_KEY + 1];
	char *dir = key + 17;
	size_t dl = 0, n = 0, last = 0;
	int tail = 0;
	for (;; n++) {
		if (n >= FP_HOST_MAX)
			return W_LONG;
		if (path[n] != '/' && path[n] != 0)
			continue;
		size_t cl = n - last;
		const char *c = path + last;
		int dot = cl == 1 && c[0] == '.', dotdot = cl == 2 && c[0] == '.' && c[1] == '.';
		if (cl == 10 && fp_memeq(c, ".droidroot", 10))
			return W_OPTION; /* the library's own bind, which the tracer places */
		if (path[n] == 0 && (cl == 0 || dot || dotdot)) {
			/* A tail (M_DOT): the directory is "." below the
			 * directories on the way, ".." the last of them. */
			if (!(how & M_DOT) || n == 0 || !tail_ok())
				return W_DOTS;
			tail = 1;
		} else if (path[n] == 0) {
			break;
		}
		if (cl && !dot) {
			if (dl + 1 + cl > C_KEY - 17)
				return W_LONG;
			if (dl)
				dir[dl++] = '/';
			fp_memcpy(dir + dl, c, cl);
			dl += cl;
		}
		if (tail)
			break;
		last = n + 1;
	}
	const char *name = tail ? "." : path + last;
	if (!tail && n - last >= 256)
		return W_LONG;
	t->ancestor = 0;
	t->bindpoint = 0;
	t->mount = (1L << 20) + dirfd;
	t->name = name;
	/* The direct form: one name below the cwd or a directory descriptor the
	 * library has known as one of the guest's view, not checked first (see
	 * direct_ok). The descriptor may have been closed and its number reused
	 * since: by an open of the library's or the tracer's (a file of the
	 * guest's view), or by a descriptor that names no path; the answer is
	 * then the kernel's for what the number names now, as in a chroot. */
	if ((how & M_DIRECT) && !tail && dl == 0 && !bind_name(name, n - last) &&
	    (dirfd == AT_FDCWD ||
	     (dirfd >= 0 && dirfd < FP_MAX_DIRFD && __atomic_load_n(&dirfds[dirfd].ino, __ATOMIC_ACQUIRE)))) {
		t->parent.fd = dirfd, t->parent.slot = NULL, t->parent.borrowed = 1;
		t->unchecked = 1;
		return W_ANSWERED;
	}
	struct stat st;
	long r;
	if (dirfd == AT_FDCWD) {
		unsigned seq = __atomic_load_n(&cwdrec.seq, __ATOMIC_ACQUIRE);
		r = 0;
		/* "cwd" in the counters: the base's identity from the record
		 * (answered), or a stat of "." (unverified). */
		if (cwd_known(seq, &st)) {
			count(F_CWD, W_ANSWERED);
		} else {
			count(F_CWD, W_UNVERIFIED);
			if ((r = tr(SYS_newfstatat, AT_FDCWD, (long)".", (long)&st, 0, 0, 0)) == 0)
				cwd_note(seq, &st);
		}
	} else {
		if (dirfd < 0 || dirfd >= FP_MAX_DIRFD)
			return W_RELATIVE;
		uint64_t ino = __atomic_load_n(&dirfds[dirfd].ino, __ATOMIC_ACQUIRE);
		uint64_t dev = __atomic_load_n(&dirfds[dirfd].dev, __ATOMIC_RELAXED);
		if (!ino)
			return W_RELATIVE;
		r = tr(SYS_fstat, dirfd, (long)&st, 0, 0, 0, 0);
		if (r == 0 && ino == FP_DIR_LAZY && !dev) {
			if (!S_ISDIR(st.st_mode) || !dir_lazy(dirfd)) {
				remember_dir(dirfd, 0, 0);
				return W_UNVERIFIED;
			}
			remember_dir(dirfd, st.st_dev, st.st_ino);
		} else if (r == 0 && (st.st_dev != dev || st.st_ino != ino))
			return W_UNVERIFIED;
	}
	if (r != 0 || !S_ISDIR(st.st_mode))
		return W_UNVERIFIED;
	if (st.st_dev == cfg.proc_dev)
		return W_PROC;
	if (dl == 0) {
		/* Below a bind point's guest ancestor a name may be a bind
		 * point; "." is the base itself. */
		if (!tail && bind_parent(st.st_dev, st.st_ino))
			return W_OPTION;
		t->parent.fd = dirfd, t->parent.slot = NULL, t->parent.borrowed = 1;
		t->pdev = st.st_dev, t->pino = st.st_ino;
		return W_ANSWERED;
	}
	/* The directories on the way, cached under the base's identity. */
	size_t kl = 17 + dl;
	key[0] = 0;
	fp_memcpy(key + 1, (const char *)&st.st_dev, 8);
	fp_memcpy(key + 9, (const char *)&st.st_ino, 8);
	dir[dl] = 0;
	if (get_parent(key, kl, dirfd, dir, dl, &t->parent, 0) == 0)
		return W_ANSWERED;
	/* A missing last directory on the way (git's .git/objects/xx/ before its
	 * first object): its parent (the base, or cached under the base's
	 * identity) verified, and the name missing there. */
	size_t s = dl;
	while (s > 0 && dir[s - 1] != '/')
		s--;
	struct parent gpar;
	if (s == 0) {
		if (bind_parent(st.st_dev, st.st_ino))
			return W_UNVERIFIED;
		gpar.fd = dirfd, gpar.slot = NULL, gpar.borrowed = 1;
	} else {
		dir[s - 1] = 0;
		int ok = get_parent(key, 17 + s - 1, dirfd, dir, s - 1, &gpar, 0) == 0;
		dir[s - 1] = '/';
		if (!ok)
			return W_UNVERIFIED;
	}
	size_t ml = dl - s, nl = fp_strlen(name);
	if (ml + 1 + nl >= sizeof t->host) {
		release(&gpar);
		return W_UNVERIFIED;
	}
	if (under_empty(&gpar, dir + s, ml, &t->parent) < 0)
		return W_UNVERIFIED;
	fp_memcpy(t->host, dir + s, ml);
	t->host[ml] = '/';
	fp_memcpy(t->host + ml + 1, name, nl + 1);
	t->name = t->host;
	return W_ANSWERED;
}

/* map_at maps path relative to dirfd: an absolute path with map_path, a
 * relative one with map_rel. */
static enum fp_why map_at_how(int dirfd, const char *g, struct target *t, int how)
{
	t->unchecked = 0;
	t->hops = 0;
	t->pdev = t->pino = 0;
	if (!fp_on())
		return W_OFF;
	if (!user_ptr(g))
		return W_FLAGS;
	if (g[0] != '/')
		return map_rel(dirfd, g, t, how);
	return map_path(g, t, how);
}

static enum fp_why map_at(int dirfd, const char *g, struct target *t) { return map_at_how(dirfd, g, t, 0); }

/* direct_ok reports whether an answer of the direct form (t->unchecked:
 * the name looked up without following below the guest's own dirfd or
 * cwd) is the one the checked form would give: the name found (r 0), and
 * not in /proc (dev, the answer's device). Any other answer (a missing name,
 * an error: the base may be a directory that exists only for a bind point,
 * /proc, or no directory) is made again the checked way. The direct form
 * never names a component of a bind point's guest path (bind_name), under
 * which the guest's view and the host's part. */
static int direct_ok(const struct target *t, long r, uint64_t dev)
{
	return !t->unchecked || (r == 0 && dev != cfg.proc_dev);
}

/* The owner fix of -0/-i, as the tracer applies it to stat results. */
static void fix_owner(uint32_t *uid, uint32_t *gid)
{
	if (!(cfg.flags & DR_FP_OWNER))
		return;
	if (*uid == cfg.real_uid && cfg.real_uid != cfg.fake_uid)
		*uid = cfg.fake_uid;
	if (*gid == cfg.real_gid && cfg.real_gid != cfg.fake_gid)
		*gid = cfg.fake_gid;
}

static void fix_stat_owner(struct stat *st)
{
	uint32_t uid = st->st_uid, gid = st->st_gid;
	fix_owner(&uid, &gid);
	st->st_uid = uid, st->st_gid = gid;
}

static int is_l2s_name(const char *name) { return fp_memeq(name, ".l2s.", 5) || (fp_memeq(name, ".l2s", 4) && !name[4]); }

/* map_name maps path relative to dirfd for fn (map_at_how) and leaves the
 * names of -l's link data to the tracer: 0 with t mapped, or -1, counted,
 * for a call that goes to the tracer. */
/* map_root maps the guest's root itself ("/", or only slashes), which
 * map_path leaves to the tracer (no parent and name), as "." below the
 * verified rootfs: a stat's answer (python's imports stat the cwd, "/" when
 * that is the cwd, at every import). Not where a bind's guest path is "/". */
static enum fp_why map_root(struct target *t)
{
	t->unchecked = 0;
	t->pdev = t->pino = 0;
	t->hops = 0;
	if (!__atomic_load_n(&fp_enabled, __ATOMIC_ACQUIRE) || !cfg.tramp)
		return W_OFF;
	for (int i = 0; i < cfg.nbinds; i++)
		if (cfg.binds[i].glen <= 1)
			return W_DOTS;
	t->ancestor = cfg.nbinds > 0;
	t->bindpoint = 0;
	t->mount = 0;
	fp_memcpy(t->host, cfg.root, cfg.rootlen);
	t->host[cfg.rootlen] = 0;
	t->parentlen = cfg.rootlen;
	t->name = ".";
	if (get_parent(t->host, t->parentlen, -1, t->host, t->parentlen, &t->parent, 0) < 0)
		return W_UNVERIFIED;
	return W_ANSWERED;
}

/* only_slashes tells whether g is "/", "//", ...: the root. */
static int only_slashes(const char *g)
{
	if (!user_ptr(g) || *g != '/')
		return 0;
	while (*g == '/')
		g++;
	return *g == 0;
}

static int map_name(enum fp_fn fn, int dirfd, const char *path, struct target *t, int how)
{
	int root = fn <= F_STATX && only_slashes(path); /* the stat family */
	enum fp_why w = root ? map_root(t) : map_at_how(dirfd, path, t, how);
	if (w == W_ANSWERED && (cfg.flags & DR_FP_L2S) && is_l2s_name(t->name)) {
		release(&t->parent);
		w = W_OPTION;
	}
	if (w != W_ANSWERED) {
		count(fn, w);
		return -1;
	}
	return 0;
}

/* ---- a symlink as the last component ----
 *
 * A call that follows its last component (stat, statx, access) and finds a
 * symlink there follows it the guest's way, as resolve_parent follows a
 * parent's: the target read below the verified parent, an absolute one
 * looked up from the guest's root, a relative one in the name's place
 * (below the same directory descriptor), then mapped and verified as any
 * path (fontconfig's access of each /etc/fonts/conf.d link, Wine's stat of
 * dosdevices/z:, merged /usr's alternatives). The kernel's ELOOP counts
 * every symlink of a lookup, the parents' (target.hops) too: past 40, and
 * past FOLLOW_MAX links as last components, in /proc, under -l where a
 * target names link data, the tracer answers. The name finally reached is
 * used without following (lstat, a pin): a symlink swapped in there
 * meanwhile goes to the tracer. */
#define FOLLOW_MAX 16
#define FOLLOW_LEN 512

/* follow_last follows symlink t->name, the last component of path (relative
 * to dirfd; t mapped for it, its parent held) to the name it leads to:
 * W_ANSWERED with t mapped for that name (its parent held, t->name maybe in
 * bufs), *st its lstat and *res 0, or -ENOENT for a missing name; else the
 * reason the call goes to the tracer, t released. */
static enum fp_why follow_last(int dirfd, const char *path, struct target *t, char (*bufs)[FOLLOW_LEN],
			       struct stat *st, long *res)
{
	int total = t->hops;
	for (int i = 0;; i++) {
		char *out = bufs[i & 1];
		size_t pl = fp_strlen(path);
		while (pl > 0 && path[pl - 1] != '/')
			pl--; /* path[0:pl]: the directory part, up to its last '/' */
		long n = -1;
		if (i < FOLLOW_MAX && ++total <= 40 && pl + 2 < FOLLOW_LEN)
			n = tr(SYS_readlinkat, t->parent.fd, (long)t->name, (long)(out + pl), (long)(FOLLOW_LEN - pl - 1), 0, 0);
		release(&t->parent);
		if (n <= 0 || (size_t)n >= FOLLOW_LEN - pl - 1)
			return W_SYMLINK; /* too many, too long, or gone meanwhile */
		if ((cfg.flags & DR_FP_L2S) && names_l2s_data(out + pl, n))
			return W_OPTION; /* -l's hard link: the tracer's answer for its data */
		if (out[pl] == '/') {
			for (long k = 0; k < n; k++)
				out[k] = out[pl + (size_t)k];
			out[n] = 0;
		} else {
			fp_memcpy(out, path, pl);
			out[pl + (size_t)n] = 0;
		}
		path = out;
		enum fp_why w = map_at_how(dirfd, path, t, M_DOT);
		if (w == W_ANSWERED && (cfg.flags & DR_FP_L2S) && is_l2s_name(t->name)) {
			release(&t->parent);
			w = W_OPTION;
		}
		if (w != W_ANSWERED)
			return w;
		long r = tr(SYS_newfstatat, t->parent.fd, (long)t->name, (long)st, AT_SYMLINK_NOFOLLOW, 0, 0);
		if (r == 0 && S_ISLNK(st->st_mode)) {
			total += t->hops;
			continue;
		}
		if ((r == -ENOENT && t->ancestor) || (r != 0 && r != -ENOENT) || total + t->hops > 40) {
			release(&t->parent);
			return r == 0 || r == -ENOENT ? W_SYMLINK : W_ERRNO;
		}
		*res = r;
		count(F_FOLLOW, W_ANSWERED);
		return W_ANSWERED;
	}
}

/* stat_follow follows do_stat's name, a symlink (t mapped, its parent
 * held), off the hot path's stack: follow_last's reason, with *st and *r
 * the lstat of the name reached; t is released either way. */
static __attribute__((noinline)) enum fp_why stat_follow(int dirfd, const char *g, struct target *t, struct stat *st,
							  long *r)
{
	char bufs[2][FOLLOW_LEN];
	enum fp_why w = follow_last(dirfd, g, t, bufs, st, r);
	if (w == W_ANSWERED)
		release(&t->parent);
	return w;
}

/* ---- the calls ---- */

/* do_stat: stat (follow) or lstat of absolute guest path g into st; FP_DEFER
 * or the kernel's result. */
static long do_stat(enum fp_fn fn, int dirfd, const char *g, struct stat *st, int follow)
{
	struct target t;
	long r;
	for (int direct = 1;; direct = 0) {
		if (map_name(fn, dirfd, g, &t, direct | M_DOT) < 0)
			return FP_DEFER;
		r = tr(SYS_newfstatat, t.parent.fd, (long)t.name, (long)st, AT_SYMLINK_NOFOLLOW, 0, 0);
		if (direct_ok(&t, r, st->st_dev))
			break;
		release(&t.parent);
	}
	enum fp_why w = W_ANSWERED;
	if (r == 0 && S_ISLNK(st->st_mode) && follow)
		w = stat_follow(dirfd, g, &t, st, &r);
	else
		release(&t.parent);
	if (w != W_ANSWERED) {
		count(fn, w);
		return FP_DEFER;
	}
	if (r == 0 && S_ISLNK(st->st_mode) && (cfg.flags & (DR_FP_LSTAT_SIZE | DR_FP_L2S))) {
		count(fn, W_SYMLINK);
		return FP_DEFER;
	}
	if (r == -ENOENT && t.ancestor) {
		count(fn, W_ERRNO); /* a directory that exists only for a bind point */
		return FP_DEFER;
	}
	if (r != 0 && r != -ENOENT) {
		count(fn, W_ERRNO);
		return FP_DEFER;
	}
	if (r == 0)
		fix_stat_owner(st);
	count(fn, W_ANSWERED);
	return r;
}

static long k_fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	return raw6(SYS_newfstatat, dirfd, (long)path, (long)st, flags, 0, 0);
}

/* A descriptor's own stat (fstat, or an empty path with AT_EMPTY_PATH,
 * which glibc's fstat makes since 2.33): the kernel's answer is the
 * tracer's, but for -l's and -L's patches (their layers patch descriptor
 * stats too); -0/-i owners are fixed as the tracer fixes them. */
static int fd_stat_ok(enum fp_fn fn)
{
	if (!__atomic_load_n(&fp_enabled, __ATOMIC_ACQUIRE) || !cfg.tramp) {
		count(fn, W_OFF);
		return 0;
	}
	if (cfg.flags & (DR_FP_L2S | DR_FP_LSTAT_SIZE)) {
		count(fn, W_OPTION);
		return 0;
	}
	count(fn, W_ANSWERED);
	return 1;
}

/* fstat_ok is fd_stat_ok for fstat of descriptor fd, which -L does not
 * patch, and -l only for a link data file (its layer's fdHostPath and
 * isL2SData): under -l the descriptor's /proc/self/fd name is read, and a
 * file whose name starts with ".l2s" goes to the tracer. Python's open
 * makes an fstat of every file it opens, under launchers' -l. */
static int fstat_ok(int fd)
{
	if (!__atomic_load_n(&fp_enabled, __ATOMIC_ACQUIRE) || !cfg.tramp) {
		count(F_FSTAT, W_OFF);
		return 0;
	}
	if (cfg.flags & DR_FP_L2S) {
		char proc[32], buf[FP_HOST_MAX];
		fmt_procfd(proc, fd);
		long n = tr(SYS_readlinkat, AT_FDCWD, (long)proc, (long)buf, sizeof buf, 0, 0);
		const char *b = buf + (n > 0 ? n : 0);
		while (b > buf && b[-1] != '/')
			b--;
		if (n <= 0 || n >= (long)sizeof buf || (buf + n - b >= 4 && fp_memeq(b, ".l2s", 4))) {
			count(F_FSTAT, W_OPTION);
			return 0;
		}
	}
	count(F_FSTAT, W_ANSWERED);
	return 1;
}

/* is_empty: path is a readable "" (a pointer the kernel would fault on is
 * left to it). */
static int is_empty(const char *path)
{
	return user_ptr(path) && !path[0];
}

static long fp_fstatat(enum fp_fn fn, int dirfd, const char *path, struct stat *st, int flags)
{
	long r = FP_DEFER;
	int f = flags;
	if ((f & AT_EMPTY_PATH) && is_empty(path) && !(f & ~(AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT))) {
		if (hidden_fd(dirfd))
			r = -EBADF;
		else if (fd_stat_ok(fn) && (r = tr(SYS_newfstatat, dirfd, (long)"", (long)st, f, 0, 0)) == 0)
			fix_stat_owner(st);
	} else {
		if ((f & AT_EMPTY_PATH) && user_ptr(path))
			f &= ~AT_EMPTY_PATH; /* a path that is not empty: the flag changes nothing */
		if (f & ~(AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT))
			count(fn, W_FLAGS);
		else
			r = do_stat(fn, dirfd, path, st, !(f & AT_SYMLINK_NOFOLLOW));
	}
	if (r == FP_DEFER)
		r = k_fstatat(dirfd, path, st, flags);
	return fp_ret(r);
}

EXPORT int stat(const char *path, struct stat *st) { return (int)fp_fstatat(F_STAT, AT_FDCWD, path, st, 0); }

/* fstatfs: the tracer makes f_type TMPFS_MAGIC for a file in the guest's
 * /dev/shm (a launcher binds a directory of the app's there), and leaves
 * every other answer the kernel's (Wine asks at every file it opens). A
 * descriptor whose host path the guest may see in /dev/shm, or that is
 * there on the host (what the tracer tests where the guest cannot see it),
 * goes to the tracer; one with no path (a pipe, a socket) is the kernel's
 * too. */
static int shm_visible(const char *h, size_t n)
{
	static const char shm[] = "/dev/shm";
	const size_t sl = sizeof shm - 1;
	if (under(h, n, shm, sl))
		return 1;
	/* The guest paths of h: below the rootfs, and below each bind's host
	 * (its guest path followed by the rest of h: in /dev/shm where the
	 * bind's guest path is, or where it is one of /dev/shm's ancestors,
	 * "/dev" bound, and the rest leads into /dev/shm from there). The
	 * lengths of "/" are 0. */
	if (under(h, n, cfg.root, cfg.rootlen) && under(h + cfg.rootlen, n - cfg.rootlen, shm, sl))
		return 1;
	for (int i = 0; i < cfg.nbinds; i++) {
		const struct fp_bind *b = &cfg.binds[i];
		if (!b->host || !under(h, n, b->host, b->hlen))
			continue;
		if (under(b->guest, b->glen, shm, sl) ||
		    (under(shm, sl, b->guest, b->glen) && under(h + b->hlen, n - b->hlen, shm + b->glen, sl - b->glen)))
			return 1;
	}
	return 0;
}

/* proc_view tells whether host path h is a /proc file the tracer
 * generated for the guest (emul's procViews: its directory's name starts
 * with "droidroot-proc-"), whose fstatfs the tracer answers as /proc's. */
static int proc_view(const char *h, size_t n)
{
	static const char pv[] = "/droidroot-proc-";
	const size_t pl = sizeof pv - 1;
	size_t s = n;
	while (s > 0 && h[s - 1] != '/')
		s--; /* h[s]: the basename */
	if (s == 0)
		return 0;
	size_t d = s - 1; /* the slash before the basename */
	while (d > 0 && h[d - 1] != '/')
		d--; /* h[d]: the directory's name */
	return d > 0 && s - 1 - d >= pl - 1 && fp_memeq(h + d - 1, pv, pl);
}

static long fp_fstatfs(int fd, void *sf)
{
	if (!__atomic_load_n(&fp_enabled, __ATOMIC_ACQUIRE) || !cfg.tramp) {
		count(F_FSTATFS, W_OFF);
		return raw6(SYS_fstatfs, fd, (long)sf, 0, 0, 0, 0);
	}
	if (hidden_fd(fd))
		return -EBADF;
	char proc[32], h[FP_HOST_MAX];
	fmt_procfd(proc, fd);
	long n = fd >= 0 ? tr(SYS_readlinkat, AT_FDCWD, (long)proc, (long)h, sizeof h, 0, 0) : -EBADF;
	if (n > 0 && (size_t)n < sizeof h && h[0] == '/') {
		if (n >= 10 && fp_memeq(h + n - 10, " (deleted)", 10))
			n -= 10;
		if (shm_visible(h, (size_t)n) || proc_view(h, (size_t)n)) {
			count(F_FSTATFS, W_OPTION);
			return raw6(SYS_fstatfs, fd, (long)sf, 0, 0, 0, 0);
		}
	} else if (n > 0 && (size_t)n >= sizeof h) {
		count(F_FSTATFS, W_LONG);
		return raw6(SYS_fstatfs, fd, (long)sf, 0, 0, 0, 0);
	}
	count(F_FSTATFS, W_ANSWERED);
	return tr(SYS_fstatfs, fd, (long)sf, 0, 0, 0, 0);
}

EXPORT int fstatfs(int fd, struct statfs *sf) { return (int)fp_ret(fp_fstatfs(fd, sf)); }
EXPORT int fstatfs64(int fd, struct statfs64 *sf) { return (int)fp_ret(fp_fstatfs(fd, sf)); }

/* fstat: answered with the kernel's fstat through the trampoline; deferred,
 * it is glibc's own call (newfstatat with AT_EMPTY_PATH). */
EXPORT int fstat(int fd, struct stat *st)
{
	long r;
	if (hidden_fd(fd)) {
		r = -EBADF;
	} else if (fstat_ok(fd)) {
		if ((r = tr(SYS_fstat, fd, (long)st, 0, 0, 0, 0)) == 0)
			fix_stat_owner(st);
	} else {
		r = raw6(SYS_newfstatat, fd, (long)"", (long)st, AT_EMPTY_PATH, 0, 0);
	}
	return (int)fp_ret(r);
}
EXPORT int fstat64(int fd, struct stat64 *st) __attribute__((alias("fstat")));
EXPORT int __fxstat(int ver, int fd, struct stat *st)
{
	(void)ver;
	return fstat(fd, st);
}
EXPORT int __fxstat64(int ver, int fd, struct stat *st) __attribute__((alias("__fxstat")));
EXPORT int stat64(const char *path, struct stat64 *st) { return stat(path, (struct stat *)st); }
EXPORT int lstat(const char *path, struct stat *st)
{
	return (int)fp_fstatat(F_LSTAT, AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}
EXPORT int lstat64(const char *path, struct stat64 *st) { return lstat(path, (struct stat *)st); }
EXPORT int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	return (int)fp_fstatat(F_FSTATAT, dirfd, path, st, flags);
}
EXPORT int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags)
{
	return fstatat(dirfd, path, (struct stat *)st, flags);
}
/* glibc < 2.33 programs bind to these (the version argument is the kernel's
 * struct stat on both 64-bit ABIs). */
EXPORT int __xstat(int ver, const char *path, struct stat *st)
{
	(void)ver;
	return stat(path, st);
}
EXPORT int __xstat64(int ver, const char *path, struct stat *st) __attribute__((alias("__xstat")));
EXPORT int __lxstat(int ver, const char *path, struct stat *st)
{
	(void)ver;
	return lstat(path, st);
}
EXPORT int __lxstat64(int ver, const char *path, struct stat *st) __attribute__((alias("__lxstat")));
EXPORT int __fxstatat(int ver, int dirfd, const char *path, struct stat *st, int flags)
{
	(void)ver;
	return fstatat(dirfd, path, st, flags);
}
EXPORT int __fxstatat64(int ver, int dirfd, const char *path, struct stat *st, int flags)
	__attribute__((alias("__fxstatat")));

/* sx_dev is statx's device as stat's st_dev gives it (glibc's makedev). */
static uint64_t sx_dev(const struct statx *sx)
{
	uint64_t ma = sx->stx_dev_major, mi = sx->stx_dev_minor;
	return ((ma & 0xfffff000u) << 32) | ((ma & 0xfffu) << 8) | ((mi & 0xffffff00u) << 12) | (mi & 0xffu);
}

/* fix_statx_owner is fix_owner for a statx result that has both ids. */
static void fix_statx_owner(struct statx *sx)
{
	uint32_t uid = sx->stx_uid, gid = sx->stx_gid;
	if (sx->stx_mask & STATX_UID && sx->stx_mask & STATX_GID)
		fix_owner(&uid, &gid);
	sx->stx_uid = uid, sx->stx_gid = gid;
}

/* statx_follow follows fp_statx_k's name, a symlink (t mapped, its parent
 * held), and makes the statx of the name reached, not followed, into sx
 * (*r): follow_last's reason, or W_SYMLINK for a symlink swapped in
 * meanwhile; t is released either way. */
static __attribute__((noinline)) enum fp_why statx_follow(int dirfd, const char *path, int flags, unsigned mask,
							   struct statx *sx, struct target *t, long *r)
{
	char bufs[2][FOLLOW_LEN];
	struct stat st;
	enum fp_why w = follow_last(dirfd, path, t, bufs, &st, r);
	if (w != W_ANSWERED)
		return w;
	*r = tr(SYS_statx, t->parent.fd, (long)t->name, flags | AT_SYMLINK_NOFOLLOW, mask | STATX_TYPE, (long)sx, 0);
	release(&t->parent);
	return *r == 0 && S_ISLNK(sx->stx_mode) ? W_SYMLINK : W_ANSWERED;
}

/* statx */
static long fp_statx_k(int dirfd, const char *path, int flags, unsigned mask, struct statx *sx)
{
	long r = FP_DEFER;
	if ((flags & AT_EMPTY_PATH) && is_empty(path) &&
	    !(flags & ~(AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_STATX_SYNC_TYPE))) {
		if (hidden_fd(dirfd))
			return -EBADF;
		if (!fd_stat_ok(F_STATX))
			return FP_DEFER;
		r = tr(SYS_statx, dirfd, (long)"", flags, mask, (long)sx, 0);
		if (r == 0)
			fix_statx_owner(sx);
		return r;
	}
	if ((flags & AT_EMPTY_PATH) && user_ptr(path))
		flags &= ~AT_EMPTY_PATH; /* a path that is not empty: the flag changes nothing */
	if (flags & ~(AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | AT_STATX_SYNC_TYPE)) {
		count(F_STATX, W_FLAGS);
		return FP_DEFER;
	}
	struct target t;
	for (int direct = 1;; direct = 0) {
		if (map_name(F_STATX, dirfd, path, &t, direct | M_DOT) < 0)
			return FP_DEFER;
		r = tr(SYS_statx, t.parent.fd, (long)t.name, flags | AT_SYMLINK_NOFOLLOW, mask | STATX_TYPE, (long)sx, 0);
		if (direct_ok(&t, r, sx_dev(sx)))
			break;
		release(&t.parent);
	}
	enum fp_why w = W_ANSWERED;
	if (r == 0 && S_ISLNK(sx->stx_mode) && !(flags & AT_SYMLINK_NOFOLLOW))
		w = statx_follow(dirfd, path, flags, mask, sx, &t, &r);
	else
		release(&t.parent);
	if (w != W_ANSWERED) {
		count(F_STATX, w);
		return FP_DEFER;
	}
	if (r == 0 && S_ISLNK(sx->stx_mode) && (cfg.flags & (DR_FP_LSTAT_SIZE | DR_FP_L2S))) {
		count(F_STATX, W_SYMLINK);
		return FP_DEFER;
	}
	if ((r == -ENOENT && t.ancestor) || (r != 0 && r != -ENOENT)) {
		count(F_STATX, W_ERRNO);
		return FP_DEFER;
	}
	if (r == 0)
		fix_statx_owner(sx);
	count(F_STATX, W_ANSWERED);
	return r;
}

static long fp_statx(int dirfd, const char *path, int flags, unsigned mask, struct statx *sx)
{
	long r = fp_statx_k(dirfd, path, flags, mask, sx);
	if (r == FP_DEFER)
		r = raw6(SYS_statx, dirfd, (long)path, flags, mask, (long)sx, 0);
	return r;
}

EXPORT int statx(int dirfd, const char *path, int flags, unsigned mask, struct statx *sx)
{
	return (int)fp_ret(fp_statx(dirfd, path, flags, mask, sx));
}

/* access and faccessat; AT_EACCESS and AT_SYMLINK_NOFOLLOW are faccessat2's,
 * made in-process where the session's policy takes faccessat2 (as openat2:
 * DR_FP_OPENAT2), else left to libc (whose faccessat2 the tracer answers). */
#define FP_ACCESS_FLAGS (AT_EACCESS | AT_SYMLINK_NOFOLLOW)
static int fp_faccessat2_ok = 1; /* off for good after ENOSYS or EINVAL (Linux < 5.8) */
static long pin_follow(struct target *t, char proc[32], enum fp_why *w);

static int faccessat2_ok(void)
{
	return (cfg.flags & DR_FP_OPENAT2) && __atomic_load_n(&fp_faccessat2_ok, __ATOMIC_RELAXED);
}

/* access_on checks mode on pinned file m (proc: its /proc/self/fd name):
 * faccessat2 on the pin itself with AT_EMPTY_PATH, or faccessat of proc,
 * which follows nothing after the magic link; FP_DEFER where flags need
 * faccessat2 and it cannot be made. */
static long access_on(long m, const char *proc, int mode, int flags)
{
	long r = -ENOSYS;
	if (faccessat2_ok()) {
		r = tr(SYS_faccessat2, m, (long)"", mode, flags | AT_EMPTY_PATH, 0, 0);
		if (r == -ENOSYS || (r == -EINVAL && tr(SYS_faccessat, AT_FDCWD, (long)proc, mode, 0, 0, 0) != -EINVAL)) {
			__atomic_store_n(&fp_faccessat2_ok, 0, __ATOMIC_RELAXED);
			r = -ENOSYS;
		}
	}
	if (r == -ENOSYS)
		r = flags ? FP_DEFER : tr(SYS_faccessat, AT_FDCWD, (long)proc, mode, 0, 0, 0);
	return r;
}

/* ---- the pins access keeps ----
 *
 * An access with a mode is checked on the file's pin (access_pinned): its
 * open, the check and its close are three system calls where the kernel
 * makes one. A name accessed again (a program's checks of the same files,
 * bash's test -x, Wine's) is answered with two: an lstat of the name below
 * its verified parent, which finds there, no symlink, the file (dev/ino) a
 * pin kept from an earlier access of that name below that parent is of, and
 * the check on that pin. That is the answer the pin just opened would give:
 * the pin keeps its inode alive, so no other file has its dev/ino, and it was
 * opened through the same parent and name, so through the same mount (a
 * host's mount over the name changes what the lstat finds, or shows within
 * the TTL as the parents' cache's does). Its descriptor is in the guarded
 * range and trusted as the slots' are (the guard word, else an fstat). */

/* pin_seen remembers the names pinned lately (a hash each), so that a pin
 * is kept only at a name's second access: one access of many names (a
 * PATH search, find -perm) costs no more than without the cache. */
static uint32_t pin_seen[64];
static unsigned pin_next; /* the next slot to take when none is free */

static uint32_t pin_hash(uint64_t pdev, uint64_t pino, const char *name, size_t nl)
{
	uint64_t k[2] = {pdev, pino};
	uint32_t h = hash_of((const char *)k, sizeof k);
	for (size_t i = 0; i < nl; i++)
		h = (h ^ (unsigned char)name[i]) * 16777619u;
	return h | 1;
}

/* pin_ours tells whether p's descriptor is still the pin recorded (p held
 * by the caller). */
static int pin_ours(struct pinslot *p, unsigned g0) { return still_ours(&p->guard, p->fd, p->dev, p->ino, g0); }

/* pin_drop empties slot p, held by the caller, whose pin no longer names
 * what its name does (closed if still ours), unless others use it or the
 * guard word is odd (a vfork child sharing this memory has a descriptor
 * table of its own: emptying the slot there would lose the parent's
 * descriptor); the caller's reference is dropped either way. It tells
 * whether it closed the pin (shed counts them). */
static int pin_drop(struct pinslot *p, unsigned g0)
{
	if ((g0 & 1) || !refill_state(&p->state, 1)) {
		unuse_state(&p->state);
		return 0;
	}
	int closed = pin_ours(p, g0) && tr(SYS_close, p->fd, 0, 0, 0, 0, 0) == 0;
	__atomic_store_n(&p->fd, -1, __ATOMIC_RELAXED);
	__atomic_store_n(&p->state, 0, __ATOMIC_RELEASE);
	return closed;
}

/* pin_find returns the slot keeping a pin of name (nl bytes) below parent
 * pdev/pino, with a reader's reference, or NULL. */
static struct pinslot *pin_find(uint64_t pdev, uint64_t pino, const char *name, size_t nl)
{
	for (int i = 0; i < P_SLOTS; i++) {
		struct pinslot *p = &pins[i];
		if (__atomic_load_n(&p->fd, __ATOMIC_RELAXED) <= 0 || !use_state(&p->state))
			continue;
		if (p->fd > 0 && p->pdev == pdev && p->pino == pino && fp_memeq(p->name, name, nl + 1))
			return p;
		unuse_state(&p->state);
	}
	return NULL;
}

/* ---- granted answers ----
 *
 * A mode every class of the file's modes grants (owner, group and others:
 * 0644 for R_OK, 0755 for X_OK) is granted to any ids and capabilities
 * the caller may have: the kernel's answer does not depend on the caller's
 * credentials, only on the file (modes, ACL, security label: a change to
 * any of them changes its ctime) and its mount (noexec for X_OK, and the
 * security module's policy). So a pin remembers the modes the kernel
 * granted through it (R_OK and X_OK; never W_OK, whose EROFS a remount
 * changes), and a later access of the name whose lstat finds the pinned
 * file with the ctime it had when pinned is answered 0 with that lstat
 * alone: one system call, where the kernel's own access walks the whole
 * path. Only where the modes alone decide (pin_plain): no POSIX ACL (a
 * named user's entry may refuse what the modes grant) on a local
 * filesystem whose permission checks are the kernel's generic ones (not
 * FUSE, NFS or 9p, whose server may answer differently at any time). A
 * change in the same tick of the coarse clock as the pin keeps its ctime,
 * and a remount changes none: both show when the pin expires, within the
 * TTL, as a host's mount over a cached directory does. */

/* plain_fs: f_type of a filesystem whose permission checks are the
 * kernel's generic ones over the inode's modes and ACL. */
static int plain_fs(long type)
{
	switch ((unsigned long)type & 0xffffffffu) {
	case 0xEF53:     /* ext2/3/4 */
	case 0xF2F52010: /* f2fs (Android's /data) */
	case 0x58465342: /* xfs */
	case 0x9123683E: /* btrfs */
	case 0x01021994: /* tmpfs */
	case 0xE0F5E1E2: /* erofs (Android's system images) */
		return 1;
	}
	return 0;
}

/* pin_plain tells whether pinned file m's modes alone decide an access:
 * a plain_fs and no POSIX ACL (none there, or none supported). */
static int pin_plain(long m)
{
	struct statfs sf;
	char proc[32];
	if (tr(SYS_fstatfs, m, (long)&sf, 0, 0, 0, 0) != 0 || !plain_fs((long)sf.f_type))
		return 0;
	fmt_procfd(proc, (int)m);
	long r = tr(SYS_getxattr, (long)proc, (long)"system.posix_acl_access", 0, 0, 0, 0);
	return r == -ENODATA || r == -EOPNOTSUPP;
}

/* every_class is the modes of mode (R_OK, X_OK) that every class of file
 * mode st_mode grants. */
static unsigned every_class(unsigned st_mode, int mode)
{
	unsigned g = 0;
	if ((mode & R_OK) && (st_mode & (S_IRUSR | S_IRGRP | S_IROTH)) == (S_IRUSR | S_IRGRP | S_IROTH))
		g |= R_OK;
	if ((mode & X_OK) && (st_mode & (S_IXUSR | S_IXGRP | S_IXOTH)) == (S_IXUSR | S_IXGRP | S_IXOTH))
		g |= X_OK;
	return g;
}

/* grantable: mode (not 0) is one whose answer through pin p cannot depend
 * on who asks (see above): R_OK and X_OK only, each granted by all three
 * classes of the file's modes in st (the name's lstat), on a pin whose
 * file's modes alone decide (plain) and whose ctime is still the one the
 * pin was taken with. */
static int grantable(const struct pinslot *p, const struct stat *st, int mode)
{
	return mode && (unsigned)mode == every_class(st->st_mode, mode) && p->plain &&
	       (int64_t)st->st_ctim.tv_sec == p->ctime_sec && (int64_t)st->st_ctim.tv_nsec == p->ctime_nsec;
}

/* grant_note records that the kernel granted mode through pin p, whose
 * name's lstat before the check was st. */
static void grant_note(struct pinslot *p, const struct stat *st, int mode)
{
	if (grantable(p, st, mode))
		__atomic_fetch_or(&p->granted, (unsigned)mode, __ATOMIC_RELAXED);
}

/* access_granted: mode is one the kernel granted through p for the name's
 * lstat st. */
static int access_granted(struct pinslot *p, const struct stat *st, int mode)
{
	return grantable(p, st, mode) && (__atomic_load_n(&p->granted, __ATOMIC_RELAXED) & (unsigned)mode) == (unsigned)mode;
}

/* pin_keep keeps pin m of name below pdev/pino (taken under guard word g0)
 * in a slot, at the name's second access: 1 if it did (m is then the
 * slot's, moved into the guarded range), 0 if the caller closes m. granted
 * is the mode the kernel granted through m, 0 if none. */
static int pin_keep(uint64_t pdev, uint64_t pino, const char *name, size_t nl, long m, unsigned g0, int granted)
{
	if (watching())
		return 0; /* no descriptor kept (inotify watches) */
	uint32_t h = pin_hash(pdev, pino, name, nl);
	uint32_t *seen = &pin_seen[h % 64];
	if (__atomic_load_n(seen, __ATOMIC_RELAXED) != h) {
		__atomic_store_n(seen, h, __ATOMIC_RELAXED);
		return 0;
	}
	struct pinslot *v = NULL;
	for (int pass = 0; pass < 2 && !v; pass++)
		for (int i = 0; i < P_SLOTS && !v; i++) {
			struct pinslot *p = &pins[i];
			int fd = __atomic_load_n(&p->fd, __ATOMIC_RELAXED);
			int mine = fd > 0 && p->pdev == pdev && p->pino == pino && fp_memeq(p->name, name, nl + 1);
			if ((pass || fd <= 0 || mine) && refill_state(&p->state, 0))
				v = p;
		}
	if (!v) {
		struct pinslot *p = &pins[__atomic_fetch_add(&pin_next, 1, __ATOMIC_RELAXED) % P_SLOTS];
		if (!refill_state(&p->state, 0))
			return 0;
		v = p;
	}
	struct stat st;
	long hi = -1;
	if (tr(SYS_fstat, m, (long)&st, 0, 0, 0, 0) == 0)
		hi = raw6(SYS_fcntl, m, F_DUPFD_CLOEXEC, FP_FD_BASE, 0, 0, 0);
	if (hi >= 0 && !guardable((int)hi)) {
		tr(SYS_close, hi, 0, 0, 0, 0, 0);
		hi = -1;
	}
	if (hi < 0) {
		__atomic_store_n(&v->state, 0, __ATOMIC_RELEASE);
		return 0;
	}
	tr(SYS_close, m, 0, 0, 0, 0, 0);
	if (v->fd > 0 && pin_ours(v, g0))
		tr(SYS_close, v->fd, 0, 0, 0, 0, 0);
	v->dev = st.st_dev, v->ino = st.st_ino;
	v->pdev = pdev, v->pino = pino;
	v->ctime_sec = (int64_t)st.st_ctim.tv_sec, v->ctime_nsec = (int64_t)st.st_ctim.tv_nsec;
	v->plain = (unsigned)pin_plain(hi);
	v->granted = 0;
	grant_note(v, &st, granted);
	fp_memcpy(v->name, name, nl + 1);
	v->stamp = now_ns();
	v->guard = guard_for((int)hi, g0);
	__atomic_store_n(&v->fd, (int)hi, __ATOMIC_RELAXED);
	__atomic_store_n(&v->state, 0, __ATOMIC_RELEASE);
	return 1;
}

/* access_pinned checks mode on t's last component, which the call follows,
 * through its pin (pin_nolink or pin_last: a symlink there, or one swapped
 * in after any check, goes to the tracer and is never followed here with
 * the host's root), or a pin kept from an earlier access of the name (see
 * above). The kernel's checks through the pin are its checks through the
 * path (the same inode and mount). t's parent is released. */
static long access_pinned(struct target *t, int mode, int flags, enum fp_why *w)
{
	char proc[32];
	size_t nl = fp_strlen(t->name);
	unsigned g0 = guard_now();
	uint64_t pdev = t->pdev, pino = t->pino;
	if (t->parent.slot)
		pdev = t->parent.slot->dev, pino = t->parent.slot->ino;
	int cacheable = (pdev || pino) && nl < P_NAME && cfg.ttl_ns;
	if (cacheable) {
		struct pinslot *p = pin_find(pdev, pino, t->name, nl);
		if (p) {
			struct stat st;
			long r = tr(SYS_newfstatat, t->parent.fd, (long)t->name, (long)&st, AT_SYMLINK_NOFOLLOW, 0, 0);
			if (r == 0 && !S_ISLNK(st.st_mode) && st.st_dev == p->dev && st.st_ino == p->ino &&
			    now_ns() - p->stamp < cfg.fresh_ns && pin_ours(p, g0)) {
				release(&t->parent);
				if (access_granted(p, &st, mode)) {
					unuse_state(&p->state);
					count(F_GRANTS, W_ANSWERED);
					return 0;
				}
				fmt_procfd(proc, p->fd);
				r = access_on(p->fd, proc, mode, flags);
				if (r == 0)
					grant_note(p, &st, mode);
				unuse_state(&p->state);
				count(F_PINS, r == FP_DEFER ? W_FLAGS : W_ANSWERED);
				if (r == FP_DEFER)
					*w = W_FLAGS;
				return r;
			}
			count(F_PINS, W_UNVERIFIED);
			pin_drop(p, g0);
			if (r == 0 && S_ISLNK(st.st_mode)) {
				/* A symlink now: the caller follows it, as after
				 * the pin's refusal. */
				release(&t->parent);
				*w = W_SYMLINK;
				return FP_DEFER;
			}
		}
	}
	long m = pin_follow(t, proc, w), r;
	if (m < 0)
		return m;
	r = access_on(m, proc, mode, flags);
	if (r == FP_DEFER)
		*w = W_FLAGS;
	else if (cacheable && !(g0 & 1) && pin_keep(pdev, pino, t->name, nl, m, g0, r == 0 ? mode : 0))
		return r;
	tr(SYS_close, m, 0, 0, 0, 0, 0);
	return r;
}

/* eaccess_plain tells whether faccessat checks what faccessat2's AT_EACCESS
 * does for this thread (bash's test -r/-w/-x, eaccess, under Android's
 * policy): the kernel's faccessat checks with the real ids, and clears the
 * effective capabilities of a real uid other than 0 or raises them to the
 * permitted ones of uid 0; AT_EACCESS checks with the effective ids and
 * capabilities. The same where the real ids are the effective ones and the
 * capabilities are what faccessat would make them (an app's process has
 * none). Not under emulated ids, which the tracer keeps; the policy's
 * set*id emulation alone changes no id (an unprivileged process may only
 * set its own), so the kernel's ids, asked through the trampoline (the
 * filter traps these calls elsewhere), are the guest's. */
static int eaccess_plain(void)
{
	if (cfg.flags & DR_FP_IDS)
		return 0;
	unsigned ru, eu, su, rg, eg, sg;
	if (tr(SYS_getresuid, (long)&ru, (long)&eu, (long)&su, 0, 0, 0) != 0 ||
	    tr(SYS_getresgid, (long)&rg, (long)&eg, (long)&sg, 0, 0, 0) != 0 || ru != eu || rg != eg)
		return 0;
	struct {
		uint32_t version;
		int pid;
	} hdr = {0x20080522 /* _LINUX_CAPABILITY_VERSION_3 */, 0};
	struct {
		uint32_t effective, permitted, inheritable;
	} caps[2];
	if (tr(SYS_capget, (long)&hdr, (long)caps, 0, 0, 0, 0) != 0)
		return 0;
	for (int i = 0; i < 2; i++)
		if (caps[i].effective != (ru == 0 ? caps[i].permitted : 0))
			return 0;
	return 1;
}

/* access_follow finishes an access whose name is a symlink (t mapped, its
 * parent held): followed (follow_last), then the name reached as
 * fp_access_k checks any (an lstat for F_OK, else its pin); *w says how. */
static __attribute__((noinline)) long access_follow(int dirfd, const char *path, int mode, int flags,
						     struct target *t, enum fp_why *w)
{
	char bufs[2][FOLLOW_LEN];
	struct stat st;
	long r;
	*w = follow_last(dirfd, path, t, bufs, &st, &r);
	if (*w != W_ANSWERED)
		return FP_DEFER;
	if (mode == F_OK || r == -ENOENT) {
		release(&t->parent);
		return r;
	}
	return access_pinned(t, mode, flags, w);
}

/* ids_eacces tells whether answer r is an EACCES the kernel gave the real
 * user under emulated ids (DR_FP_IDS), which goes to the tracer, made
 * again as the ordinary call (a refusal changed nothing): access's answer
 * is the emulated ids' (ident.go's accessHandler), and a fake root's
 * CAP_DAC_OVERRIDE (emul/dac.go) may let the other calls through. */
static int ids_eacces(long r) { return r == -EACCES && (cfg.flags & DR_FP_IDS); }

/* Under emulated ids (DR_FP_IDS) the kernel checks the real ids, as it
 * does for the traced call, and the tracer changes only its EACCES (a fake
 * root's answer: ident.go's accessHandler): every other answer is the
 * kernel's, and is made here; an EACCES goes to the tracer. */
static long fp_access_k(int dirfd, const char *path, int mode, int flags)
{
	/* Without faccessat2 (Android's policy blocks it), AT_EACCESS is
	 * faccessat's own check where that makes the same one. */
	if (flags == AT_EACCESS && !faccessat2_ok() && eaccess_plain())
		flags = 0;
	/* F_OK's AT_EACCESS changes only which ids search the path: the
	 * effective ones, which the library's own lookup (an lstat below
	 * verified parents) uses anyway; an EACCES under emulated ids still
	 * goes to the tracer (below). glibc's realpath asks so of "dir/". */
	if (flags == AT_EACCESS && mode == F_OK)
		flags = 0;
	/* A bad mode or flag is the kernel's EINVAL before any lookup. */
	if ((mode & ~(R_OK | W_OK | X_OK)) || (flags & ~FP_ACCESS_FLAGS) || (flags && !faccessat2_ok())) {
		count(F_ACCESS, W_FLAGS);
		return FP_DEFER;
	}
	struct target t;
	enum fp_why w = map_at_how(dirfd, path, &t, M_DOT);
	if (w != W_ANSWERED) {
		count(F_ACCESS, w);
		return FP_DEFER;
	}
	long r;
	if (flags & AT_SYMLINK_NOFOLLOW) {
		/* The name itself, relative to its verified parent. */
		r = tr(SYS_faccessat2, t.parent.fd, (long)t.name, mode, flags, 0, 0);
		release(&t.parent);
	} else if (mode == F_OK) {
		/* Whether the name is there, which an lstat says (a symlink
		 * is followed: access_follow). */
		struct stat st;
		r = tr(SYS_newfstatat, t.parent.fd, (long)t.name, (long)&st, AT_SYMLINK_NOFOLLOW, 0, 0);
		if (r == 0 && S_ISLNK(st.st_mode))
			r = access_follow(dirfd, path, mode, flags, &t, &w);
		else
			release(&t.parent);
	} else {
		r = access_pinned(&t, mode, flags, &w);
		/* A symlink there (the pin refused it): mapped again and
		 * followed, if it still is one. */
		struct stat st;
		if (w == W_SYMLINK && map_at_how(dirfd, path, &t, M_DOT) == W_ANSWERED) {
			if (tr(SYS_newfstatat, t.parent.fd, (long)t.name, (long)&st, AT_SYMLINK_NOFOLLOW, 0, 0) == 0 &&
			    S_ISLNK(st.st_mode)) {
				r = access_follow(dirfd, path, mode, flags, &t, &w);
			} else {
				release(&t.parent);
			}
		}
	}
	if (w == W_ANSWERED && ((r == -ENOENT && t.ancestor) || (r < 0 && r != -ENOENT && r != -EACCES && r != -EROFS)))
		w = W_ERRNO;
	if (w == W_ANSWERED && ids_eacces(r))
		w = W_OPTION;
	count(F_ACCESS, w);
	return w == W_ANSWERED ? r : FP_DEFER;
}

static long fp_faccessat(int dirfd, const char *path, int mode, int flags)
{
	long r = fp_access_k(dirfd, path, mode, flags);
	if (r == FP_DEFER)
		r = raw6(flags ? SYS_faccessat2 : SYS_faccessat, dirfd, (long)path, mode, flags, 0, 0);
	return r;
}

EXPORT int access(const char *path, int mode) { return (int)fp_ret(fp_faccessat(AT_FDCWD, path, mode, 0)); }
static int faccessat_full(int dirfd, const char *path, int mode, int flags);
EXPORT int faccessat(int dirfd, const char *path, int mode, int flags) { return faccessat_full(dirfd, path, mode, flags); }
static int faccessat_full(int dirfd, const char *path, int mode, int flags)
{
	long r = fp_access_k(dirfd, path, mode, flags);
	if (r == FP_DEFER && flags) {
		/* faccessat2, with glibc's fallbacks: libc's own. */
		if (LIBC(real_faccessat, "faccessat"))
			return real_faccessat(dirfd, path, mode, flags);
	}
	if (r == FP_DEFER)
		r = raw6(flags ? SYS_faccessat2 : SYS_faccessat, dirfd, (long)path, mode, flags, 0, 0);
	return (int)fp_ret(r);
}
/* eaccess and euidaccess are libc's faccessat with AT_EACCESS (bash's test -r, -w, -x). */
EXPORT int euidaccess(const char *path, int mode) { return faccessat(AT_FDCWD, path, mode, AT_EACCESS); }
EXPORT int eaccess(const char *path, int mode) __attribute__((alias("euidaccess")));

/* openat2 through syscall(): with no RESOLVE_* flags, the struct's size
 * the kernel's own, and flags and mode the kernel takes (anything it would
 * refuse with EINVAL or E2BIG goes to the tracer), it opens as openat. */
struct fp_open_how {
	uint64_t flags, mode, resolve;
};
#if defined(__x86_64__)
#define FP_O_LARGEFILE 0100000
#else
#define FP_O_LARGEFILE 0400000
#endif
#define FP_OPENAT2_FLAGS                                                                                     \
	((uint64_t)(O_WRONLY | O_RDWR | O_CREAT | O_EXCL | O_NOCTTY | O_TRUNC | O_APPEND | O_NONBLOCK | O_DSYNC | \
		    O_SYNC | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NOATIME | O_DIRECT | FP_O_LARGEFILE))

/* pin_took finishes a pin of t's last component, m being the open's
 * result (pin_last, pin_nolink): -ENOENT of a name (not of a directory
 * that exists only for a bind point) is returned with t's parent still
 * held; otherwise the parent is released, a descriptor is formatted into
 * proc and returned, and an error is FP_DEFER with *w set (ELOOP: a symlink
 * that RESOLVE_NO_SYMLINKS refused; EACCES, ...). */
static long pin_took(struct target *t, long m, char proc[32], enum fp_why *w)
{
	if (m == -ENOENT && !t->ancestor)
		return m;
	release(&t->parent);
	if (m < 0) {
		*w = m == -ELOOP ? W_SYMLINK : W_ERRNO;
		return FP_DEFER;
	}
	fmt_procfd(proc, (int)m);
	return m;
}

/* pin_last opens the last component of t, for a call that follows it, with
 * O_PATH and O_NOFOLLOW below its verified parent: the call is then made on
 * proc, "/proc/self/fd/<M>", which names exactly that file (the kernel's
 * walk of the magic link follows nothing after it), so that a symlink
 * swapped in for the name after any check is never followed here with the
 * host's root (issue 18, "A last component swapped with a symlink"). The
 * kernel's checks on the file through that name are its checks through the
 * path: the same inode and mount, the parent searched by the openat. st,
 * if not NULL, gets M's fstat, and a symlink there is W_SYMLINK; without
 * it a symlink's M makes the call itself fail (open: ELOOP), which the
 * caller defers. Returns M (the caller closes it), -ENOENT for a missing
 * name (the call's own answer, or its creation's: t's parent is then still
 * held), or FP_DEFER with *w set; t's parent is released otherwise. */
static long pin_last(struct target *t, char proc[32], struct stat *st, enum fp_why *w)
{
	long m = pin_took(t, tr(SYS_openat, t->parent.fd, (long)t->name, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0, 0, 0), proc, w);
	if (m < 0 || !st)
		return m;
	if (tr(SYS_fstat, m, (long)st, 0, 0, 0, 0) != 0)
		*w = W_ERRNO;
	else if (S_ISLNK(st->st_mode))
		*w = W_SYMLINK;
	else
		return m;
	tr(SYS_close, m, 0, 0, 0, 0, 0);
	return FP_DEFER;
}

/* fp_openat2_ok: openat2 may be made (DR_FP_OPENAT2; off for good after an
 * ENOSYS from an older kernel). */
static int fp_openat2_ok = 1;

/* Cancellation. glibc's open family (open, openat, creat, their 64-bit and
 * fortified names) and fopen without "c" are cancellation points
 * (pthreads(7)): a cancel pending when the call starts ends the thread
 * there, and so does one sent while the open blocks (a FIFO's open waits
 * for its other end). The library's do the same with public calls only.
 * cancel_entry acts on a pending cancel before anything is taken: making
 * the thread's cancel type asynchronous does that at once (glibc, every
 * version). An open that may block (no O_NONBLOCK, no O_DIRECTORY) runs
 * its system call with the type asynchronous (cancel_sys), as glibc before
 * 2.34 ran every blocking call: a cancel sent meanwhile ends the thread in
 * the call, through glibc's own handler. The unwinder finds no frame
 * information for the trampoline page and so stops there, and glibc then
 * runs the thread's cleanup handlers from the innermost one registered with
 * pthread_cleanup_push (C's); C++ destructors in the frames between are
 * skipped. What the call held then stays held: a cached directory's
 * reference (that slot is never refilled again: its directory is verified
 * without the cache) or an uncached parent's descriptor; and a cancel
 * landing between the call's return and the type's restore leaks the new
 * descriptor, as glibc before 2.34 did. In a program without libpthread
 * (glibc before 2.34) libc's pthread_setcanceltype does nothing, and no
 * thread can be cancelled there either. */
static void cancel_entry(int cp)
{
	int old;
	if (cp && pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old) == 0 && old != PTHREAD_CANCEL_ASYNCHRONOUS)
		pthread_setcanceltype(old, NULL);
}

/* cancel_sys makes system call nr (through the trampoline, or trapped for
 * the tracer when trap) a cancellation point where block (see above): an
 * open that may block, poll, epoll_wait, sendmsg. */
static long cancel_sys6(int block, int trap, long nr, long a, long b, long c, long d, long e, long f)
{
	int old = PTHREAD_CANCEL_ASYNCHRONOUS;
	if (block && pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old) != 0)
		old = PTHREAD_CANCEL_ASYNCHRONOUS;
	long r = trap ? raw6(nr, a, b, c, d, e, f) : tr(nr, a, b, c, d, e, f);
	if (old != PTHREAD_CANCEL_ASYNCHRONOUS)
		pthread_setcanceltype(old, NULL);
	return r;
}
static long cancel_sys(int block, int trap, long nr, long a, long b, long c, long d)
{
	return cancel_sys6(block, trap, nr, a, b, c, d, 0, 0);
}

/* openat2_nolink is openat2(dir, name, {flags, mode, RESOLVE_NO_SYMLINKS})
 * where the session's policy and the kernel take openat2, else -ENOSYS
 * (and for good after the kernel's own ENOSYS). */
static long openat2_nolink(int dir, const char *name, unsigned flags, unsigned mode, int block)
{
	if (!(cfg.flags & DR_FP_OPENAT2) || !__atomic_load_n(&fp_openat2_ok, __ATOMIC_RELAXED))
		return -ENOSYS;
	struct fp_open_how how = {flags, mode, 0x04 /* RESOLVE_NO_SYMLINKS */};
	long r = cancel_sys(block, 0, SYS_openat2, dir, (long)name, (long)&how, sizeof how);
	if (r == -ENOSYS)
		__atomic_store_n(&fp_openat2_ok, 0, __ATOMIC_RELAXED);
	return r;
}

/* open_nolink opens name under verified directory dir (a name that is no
 * bind point's ancestor) in one system call where it can: openat2 with
 * RESOLVE_NO_SYMLINKS, which fails with ELOOP rather than follow a symlink
 * and, unlike O_NOFOLLOW, leaves no trace in the descriptor's flags. Flags
 * and a mode openat2 would refuse where openat takes them, and kernels or
 * policies without openat2 give -ENOSYS: the caller pins the last
 * component (pin_last). */
static long open_nolink(int dir, const char *name, int flags, unsigned mode, int block)
{
	if (((uint64_t)(unsigned)flags & ~FP_OPENAT2_FLAGS) || (flags & O_ACCMODE) == O_ACCMODE ||
	    ((flags & O_CREAT) && (mode & ~07777u)))
		return -ENOSYS;
	return openat2_nolink(dir, name, (unsigned)flags, (flags & O_CREAT) ? mode : 0, block);
}

/* open_answer counts open answer r of fn and returns it, or FP_DEFER for
 * an EACCES the tracer answers under emulated ids (ids_eacces). */
static long open_answer(enum fp_fn fn, long r)
{
	if (ids_eacces(r)) {
		count(fn, W_OPTION);
		return FP_DEFER;
	}
	count(fn, W_ANSWERED);
	return r;
}

/* open_pinned opens t's last component, which the open follows and may
 * create or truncate, where openat2 cannot: reopened through its O_PATH
 * descriptor (pin_last), whose magic link follows nothing, with the
 * guest's flags (no trace of the pin in them); a missing name is created
 * with O_EXCL added (which follows nothing either and leaves no trace in
 * the flags), and one that appeared meanwhile goes to the tracer. A directory's dev/ino is remembered (fstat
 * of the pin when O_DIRECTORY asks for one), a read-only descriptor that
 * may be one is checked at its first use (dir_lazy). */
static long open_pinned(enum fp_fn fn, struct target *t, int flags, unsigned mode, int block)
{
	char proc[32];
	struct stat st;
	enum fp_why w = W_ANSWERED;
	long m = pin_last(t, proc, (flags & O_DIRECTORY) ? &st : NULL, &w), r;
	if (m == -ENOENT) {
		r = -ENOENT;
		if (flags & O_CREAT) {
			r = cancel_sys(block, 0, SYS_openat, t->parent.fd, (long)t->name, flags | O_EXCL, mode);
			if (r == -EEXIST || r == -ELOOP || r == -EXDEV)
				w = W_ERRNO; /* the name appeared meanwhile */
		}
		release(&t->parent);
		if (r >= 0)
			remember_dir(r, 0, 0);
	} else if (m >= 0) {
		r = cancel_sys(block, 0, SYS_openat, AT_FDCWD, (long)proc, flags, mode);
		if (r == -ELOOP)
			w = W_SYMLINK; /* a symlink there: the tracer's */
		else if (r >= 0 && (flags & O_DIRECTORY))
			remember_dir(r, st.st_dev, st.st_ino);
		else if (r >= 0)
			remember_dir(r, 0, (flags & O_ACCMODE) == O_RDONLY ? FP_DIR_LAZY : 0);
		tr(SYS_close, m, 0, 0, 0, 0, 0);
	} else {
		r = m;
	}
	if (w == W_ANSWERED && ids_eacces(r))
		w = W_OPTION;
	count(fn, w);
	if (w != W_ANSWERED) {
		if (r >= 0)
			tr(SYS_close, r, 0, 0, 0, 0, 0);
		return FP_DEFER;
	}
	return r;
}

/* trimmed_len is the length of path without its trailing slashes when it
 * has any, is not all slashes and is shorter than FP_HOST_MAX; else 0 (a
 * longer one is left as it is, to the tracer). The caller's buffer for
 * trim_slashes is sized by it: a small stack's frames stay small. */
static size_t trimmed_len(const char *path)
{
	size_t n = user_ptr(path) ? fp_strlen(path) : 0;
	if (n < 2 || n >= FP_HOST_MAX || path[n - 1] != '/')
		return 0;
	while (n > 1 && path[n - 1] == '/')
		n--;
	return path[n - 1] == '/' ? 0 : n;
}

/* trim_slashes returns path's first n bytes (trimmed_len's), copied into
 * buf (n + 1 bytes) with a NUL, or path itself where n is 0. */
static const char *trim_slashes(const char *path, size_t n, char *buf)
{
	if (!n)
		return path;
	fp_memcpy(buf, path, n);
	buf[n] = 0;
	return buf;
}

static long open_mapped(enum fp_fn fn, int dirfd, const char *path, struct target *t, int flags, unsigned mode, int block,
			int followed);

/* open family: a followed last component is opened in one openat2 that
 * refuses a symlink (open_nolink), or through its pin (open_pinned); one
 * the open does not follow (O_NOFOLLOW, O_CREAT|O_EXCL) is opened relative
 * to the verified parent. A symlink is followed the guest's way where the
 * open creates nothing (open_follow); with O_CREAT it goes to the tracer.
 * O_PATH and O_TMPFILE go to the tracer. */
static long fp_open_k(enum fp_fn fn, int dirfd, const char *path, int flags, unsigned mode, int block)
{
	if ((flags & O_PATH) || (flags & O_TMPFILE) == O_TMPFILE) {
		count(fn, W_FLAGS);
		return FP_DEFER;
	}
	/* With O_DIRECTORY and without O_CREAT, "dir/" opens what "dir" does
	 * (both ask for a directory; a trailing symlink, which the slash
	 * follows even under O_NOFOLLOW, is the tracer's either way):
	 * opendir("dir/"). */
	size_t tl = (flags & O_DIRECTORY) && !(flags & O_CREAT) && !(flags & O_NOFOLLOW) ? trimmed_len(path) : 0;
	char trimmed[tl + 1];
	path = trim_slashes(path, tl, trimmed);
	struct target t;
	if (map_name(fn, dirfd, path, &t, (flags & O_CREAT) ? 0 : M_DOT) < 0)
		return FP_DEFER;
	return open_mapped(fn, dirfd, path, &t, flags, mode, block, 0);
}

/* can_follow tells whether an open with flags that finds a symlink as its
 * last component follows it here (open_follow): one that creates nothing
 * and does not refuse it. */
static int can_follow(int flags)
{
	return !(flags & (O_CREAT | O_NOFOLLOW));
}

static long open_follow(enum fp_fn fn, int dirfd, const char *path, struct target *t, int flags, unsigned mode, int block);

/* open_mapped opens t's name (path relative to dirfd, mapped into t, its
 * parent held; released here). A symlink there is followed the guest's way
 * (open_follow) unless t is already where one led (followed): a symlink
 * found there again was swapped in meanwhile, and the call goes to the
 * tracer. */
static long open_mapped(enum fp_fn fn, int dirfd, const char *path, struct target *t, int flags, unsigned mode, int block,
			int followed)
{
	long r;
	if (!t->ancestor && (r = open_nolink(t->parent.fd, t->name, flags, mode, block)) != -ENOSYS) {
		if (r == -ELOOP && !followed && can_follow(flags))
			return open_follow(fn, dirfd, path, t, flags, mode, block); /* a symlink there */
		release(&t->parent);
		if (r == -ELOOP || r == -EXDEV) {
			count(fn, r == -ELOOP ? W_SYMLINK : W_ERRNO); /* a symlink there (or O_NOFOLLOW's own ELOOP) */
			return FP_DEFER;
		}
		struct stat st;
		if (r >= 0 && (flags & O_DIRECTORY) && tr(SYS_fstat, r, (long)&st, 0, 0, 0, 0) == 0)
			remember_dir(r, st.st_dev, st.st_ino); /* a directory's descriptor, for its relative names */
		else if (r >= 0) /* a directory opens read-only: known as one at its first use (dir_lazy) */
			remember_dir(r, 0, (flags & O_ACCMODE) == O_RDONLY ? FP_DIR_LAZY : 0);
		return open_answer(fn, r);
	}
	int follows = !(flags & O_NOFOLLOW) && !((flags & O_CREAT) && (flags & O_EXCL));
	if (follows && (flags & (O_CREAT | O_TRUNC)))
		return open_pinned(fn, t, flags, mode, block);
	/* The lstat tells a symlink (followed, where the open follows it),
	 * what a directory is, and the ENOENT of a bind point's parent. An
	 * open that does not follow the name refuses a symlink itself (ELOOP,
	 * O_NOFOLLOW) or any existing name (EEXIST, O_CREAT|O_EXCL). One that
	 * follows it, which creates and truncates nothing here, is checked
	 * after: the descriptor must be the file the lstat saw (dev/ino), else
	 * a symlink was swapped in between and the open followed it, with the
	 * host's root: the descriptor is closed unseen and the call goes to
	 * the tracer. One syscall less than open_pinned's reopen. */
	struct stat st;
	r = tr(SYS_newfstatat, t->parent.fd, (long)t->name, (long)&st, AT_SYMLINK_NOFOLLOW, 0, 0);
	if (r == 0 && S_ISLNK(st.st_mode) && follows) {
		if (!followed && can_follow(flags))
			return open_follow(fn, dirfd, path, t, flags, mode, block);
		release(&t->parent);
		count(fn, W_SYMLINK);
		return FP_DEFER;
	}
	if (r == -ENOENT && (t->ancestor || !(flags & O_CREAT))) {
		release(&t->parent);
		if (t->ancestor) {
			count(fn, W_ERRNO); /* a directory that exists only for a bind point */
			return FP_DEFER;
		}
		count(fn, W_ANSWERED);
		return -ENOENT;
	}
	if (r != 0 && r != -ENOENT) {
		release(&t->parent);
		count(fn, W_ERRNO);
		return FP_DEFER;
	}
	int isdir = r == 0 && S_ISDIR(st.st_mode);
	r = cancel_sys(block, 0, SYS_openat, t->parent.fd, (long)t->name, flags, mode);
	release(&t->parent);
	if (r == -ELOOP || r == -EXDEV) {
		count(fn, W_ERRNO); /* O_NOFOLLOW's ELOOP: the tracer's answer */
		return FP_DEFER;
	}
	struct stat fst;
	if (r >= 0 && follows && (tr(SYS_fstat, r, (long)&fst, 0, 0, 0, 0) != 0 || fst.st_dev != st.st_dev || fst.st_ino != st.st_ino)) {
		tr(SYS_close, r, 0, 0, 0, 0, 0);
		count(fn, W_SYMLINK); /* not the file the lstat saw */
		return FP_DEFER;
	}
	if (r >= 0)
		remember_dir(r, isdir ? st.st_dev : 0, isdir ? st.st_ino : 0);
	return open_answer(fn, r);
}

/* open_follow follows the symlink at t's name (its parent held) as stat
 * does (follow_last: /etc/os-release, a link to ../usr/lib/os-release that
 * Steam, python's platform module and systemd's tools read; a library's
 * versioned names opened by a program itself), and opens the name it leads to (open_mapped,
 * which never follows a symlink there: RESOLVE_NO_SYMLINKS, or the lstat
 * and the descriptor's dev/ino), or answers ENOENT for a dangling one. */
static __attribute__((noinline)) long open_follow(enum fp_fn fn, int dirfd, const char *path, struct target *t, int flags,
						  unsigned mode, int block)
{
	char bufs[2][FOLLOW_LEN];
	struct stat st;
	long res = 0;
	enum fp_why w = follow_last(dirfd, path, t, bufs, &st, &res);
	if (w != W_ANSWERED) {
		count(fn, w);
		return FP_DEFER;
	}
	if (res == -ENOENT) {
		release(&t->parent);
		count(fn, W_ANSWERED);
		return -ENOENT;
	}
	return open_mapped(fn, dirfd, t->name, t, flags, mode, block, 1);
}

/* note_open records what a descriptor the tracer opened names: a directory
 * droidroot translated, under which relative names can be answered here (one
 * fstat, next to the trap just paid). */
static void note_open(long r)
{
	struct stat st;
	if (r >= 0 && r < FP_MAX_DIRFD && cfg.tramp && __atomic_load_n(&fp_enabled, __ATOMIC_ACQUIRE)) {
		if (tr(SYS_fstat, r, (long)&st, 0, 0, 0, 0) == 0 && S_ISDIR(st.st_mode))
			remember_dir(r, st.st_dev, st.st_ino);
		else
			remember_dir(r, 0, 0);
	}
}

/* ---- giving the cache's descriptors back ----
 *
 * The cached directories' and pins' descriptors are in the process's table
 * and count against its RLIMIT_NOFILE: a program that fills its table (a
 * server at its limit, python's test_selectors) would get EMFILE as many
 * descriptors early as the caches hold. A call that makes a descriptor and
 * fails with EMFILE gives every one of them nobody is using back (shed) and
 * is made once more, so that it gets as many as in a chroot: the library's
 * open family (fp_openat, fp_openat2), dup and fcntl's F_DUPFD, socket,
 * socketpair, accept, accept4, pipe, pipe2, eventfd, signalfd,
 * timerfd_create, epoll_create, epoll_create1, inotify_init, inotify_init1
 * (libc's, below), and syscall() of those. Making it again is safe: the
 * kernel takes the number first (EMFILE) and does nothing else. Not libc's
 * own opens (mkstemp, tmpfile, a locale's files), which no preloaded
 * library sees. */
static int shed(void)
{
	unsigned g0 = guard_now();
	int n = 0;
	if ((g0 & 1) || !__atomic_load_n(&fp_enabled, __ATOMIC_ACQUIRE) || !cfg.tramp)
		return 0; /* a vfork child's slots are its parent's (pin_drop) */
	for (int i = 0; i <= C_SLOTS; i++) { /* the empty directory's too */
		struct slot *s = &slots[i];
		if (__atomic_load_n(&s->fd, __ATOMIC_RELAXED) <= 0 || !refill(s, 0))
			continue; /* empty, or in use: kept */
		if (s->fd > 0 && slot_ours(s, g0) && tr(SYS_close, s->fd, 0, 0, 0, 0, 0) == 0)
			n++;
		__atomic_store_n(&s->fd, -1, __ATOMIC_RELAXED);
		cancel(s);
	}
	for (int i = 0; i < P_SLOTS; i++) {
		struct pinslot *p = &pins[i];
		if (__atomic_load_n(&p->fd, __ATOMIC_RELAXED) > 0 && use_state(&p->state))
			n += pin_drop(p, g0); /* kept while others use it */
	}
	count(F_SHED, n ? W_ANSWERED : W_ERRNO); /* "shed answered": descriptors given back */
	return n > 0;
}

/* ---- inotify watches ----
 *
 * The kernel reports a watched file's IN_DELETE_SELF (and the watch's
 * IN_IGNORED) when the last reference to it goes, and a descriptor the
 * caches keep is one (of the directory, and through it of its ancestors):
 * `tail -F` never heard that the directory of the file it followed was
 * removed, while the directory stayed in its cache. A process that adds a
 * watch (inotify_add_watch, or syscall() of it: the tracer translates the
 * path) is the one that can tell, so from then on its caches keep no
 * descriptor past the call that opened it (the parents are verified at
 * each call, the pins not kept), and those they kept are given back
 * (shed). Another process's cache still holds a directory it used until
 * its next call through that slot (docs/fastpath.md). */
/* watch_added marks this process as watching (r: the add's result). */
static long watch_added(long r)
{
	if (r >= 0 && !__atomic_exchange_n(&fp_watching, 1, __ATOMIC_ACQ_REL))
		shed();
	return r;
}

EXPORT int inotify_add_watch(int fd, const char *path, uint32_t mask)
{
	return (int)fp_ret(watch_added(raw6(SYS_inotify_add_watch, fd, (long)path, (long)mask, 0, 0, 0)));
}

/* fd_maker tells whether system call nr, made by syscall() and not one of
 * the open family's (those are fp_openat's), makes a descriptor (shed). */
static int fd_maker(long nr)
{
	switch (nr) {
	case SYS_dup: case SYS_fcntl: case SYS_socket: case SYS_socketpair: case SYS_accept: case SYS_accept4:
	case SYS_pipe2: case SYS_eventfd2: case SYS_signalfd4: case SYS_timerfd_create: case SYS_epoll_create1:
	case SYS_inotify_init1: case SYS_memfd_create:
#if defined(__x86_64__)
	case SYS_creat: case SYS_pipe: case SYS_eventfd: case SYS_signalfd: case SYS_epoll_create: case SYS_inotify_init:
#endif
		return 1;
	}
	return 0;
}

static long fp_openat_once(int dirfd, const char *path, int flags, unsigned mode, int cp);

/* fp_openat is openat; cp: as the cancellation point libc's open is. An
 * EMFILE gives the caches' descriptors back (shed) and makes the call once
 * more as the tracer answers it: the library's own checks may take two
 * numbers for a moment, the tracer's none of the process's. */
static long fp_openat(int dirfd, const char *path, int flags, unsigned mode, int cp)
{
	long r = fp_openat_once(dirfd, path, flags, mode, cp);
	if (r == -EMFILE) {
		shed();
		r = cancel_sys(cp && !(flags & (O_NONBLOCK | O_DIRECTORY | O_PATH)), 1, SYS_openat, dirfd, (long)path, flags, mode);
		note_open(r);
	}
	return r;
}

static long fp_openat_once(int dirfd, const char *path, int flags, unsigned mode, int cp)
{
	cancel_entry(cp);
	int block = cp && !(flags & (O_NONBLOCK | O_DIRECTORY | O_PATH));
	long r = fp_open_k(F_OPEN, dirfd, path, flags, mode, block);
	if (r == FP_DEFER) {
		r = cancel_sys(block, 1, SYS_openat, dirfd, (long)path, flags, mode);
		note_open(r);
	}
	return r;
}

static long fp_openat2_once(int dirfd, const char *path, const struct fp_open_how *how, size_t size);
static long fp_openat2(int dirfd, const char *path, const struct fp_open_how *how, size_t size)
{
	long r = fp_openat2_once(dirfd, path, how, size);
	if (r == -EMFILE) { /* as fp_openat's */
		shed();
		r = raw6(SYS_openat2, dirfd, (long)path, (long)how, (long)size, 0, 0);
		note_open(r);
	}
	return r;
}

static long fp_openat2_once(int dirfd, const char *path, const struct fp_open_how *how, size_t size)
{
	long r = FP_DEFER;
	if (!__atomic_load_n(&fp_enabled, __ATOMIC_ACQUIRE) || !cfg.tramp)
		count(F_OPENAT2, W_OFF);
	else if (size != sizeof *how || !user_ptr(how) || how->resolve ||
		 (how->flags & ~FP_OPENAT2_FLAGS) || (how->flags & O_ACCMODE) == O_ACCMODE ||
		 ((how->flags & O_CREAT) ? how->mode & ~(uint64_t)07777 : how->mode))
		count(F_OPENAT2, W_FLAGS);
	else
		r = fp_open_k(F_OPENAT2, dirfd, path, (int)how->flags, (unsigned)how->mode, 0);
	if (r == FP_DEFER) {
		r = raw6(SYS_openat2, dirfd, (long)path, (long)how, (long)size, 0, 0);
		note_open(r);
	}
	return r;
}

static unsigned mode_arg(int flags, va_list ap)
{
	if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE)
		return va_arg(ap, unsigned);
	return 0;
}

EXPORT int open(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	unsigned mode = mode_arg(flags, ap);
	va_end(ap);
	return (int)fp_ret(fp_openat(AT_FDCWD, path, flags, mode, 1));
}
EXPORT int open64(const char *path, int flags, ...) __attribute__((alias("open")));
EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	unsigned mode = mode_arg(flags, ap);
	va_end(ap);
	return (int)fp_ret(fp_openat(dirfd, path, flags, mode, 1));
}
EXPORT int openat64(int dirfd, const char *path, int flags, ...) __attribute__((alias("openat")));
EXPORT int __open_2(const char *path, int flags) { return (int)fp_ret(fp_openat(AT_FDCWD, path, flags, 0, 1)); }
EXPORT int __open64_2(const char *path, int flags) __attribute__((alias("__open_2")));
EXPORT int __openat_2(int dirfd, const char *path, int flags) { return (int)fp_ret(fp_openat(dirfd, path, flags, 0, 1)); }
EXPORT int __openat64_2(int dirfd, const char *path, int flags) __attribute__((alias("__openat_2")));
EXPORT int creat(const char *path, mode_t mode)
{
	return (int)fp_ret(fp_openat(AT_FDCWD, path, O_CREAT | O_WRONLY | O_TRUNC, mode, 1));
}
EXPORT int creat64(const char *path, mode_t mode) __attribute__((alias("creat")));

/* readlink_self answers readlink of the process's own /proc links where the
 * guest's /proc is the host's (cfg.exe set): "/proc", "/proc/self",
 * "/proc/thread-self" and "/proc/PID" (its own) as the kernel does (the
 * same paths: EINVAL, the pid, "pid/task/tid"), "/proc/self/exe",
 * "/proc/thread-self/exe" and "/proc/PID/exe" with the tracer's record of
 * the program (the kernel names droidroot's loader).
 * glibc's realpath of /proc/self/exe reads all of them: Wine, Chromium and
 * python find their files from it. Other spellings go to the tracer. The
 * caller's buffer is the kernel's to write first (getrandom of as many
 * bytes): a bad one is its EFAULT, as the tracer's write would be. */
static long readlink_self(const char *path, char *buf, size_t size)
{
	static const char *const kernel[] = {"/proc", "/proc/self", "/proc/thread-self"};
	for (unsigned i = 0; i < sizeof kernel / sizeof kernel[0]; i++)
		if (fp_streq(path, kernel[i]))
			return tr(SYS_readlinkat, AT_FDCWD, (long)path, (long)buf, (long)size, 0, 0);
	int exe = fp_streq(path, "/proc/self/exe") || fp_streq(path, "/proc/thread-self/exe");
	if (!exe && fp_memeq(path, "/proc/", 6) && path[6] >= '1' && path[6] <= '9') {
		/* The process's own number, as realpath has it after /proc/self:
		 * "/proc/PID" (a directory, the kernel's EINVAL) and its exe. */
		long pid = 0;
		const char *q = path + 6;
		while (*q >= '0' && *q <= '9' && pid < 1L << 40)
			pid = pid * 10 + (*q++ - '0');
		if (pid != raw6(SYS_getpid, 0, 0, 0, 0, 0, 0))
			return FP_DEFER;
		if (!*q)
			return tr(SYS_readlinkat, AT_FDCWD, (long)path, (long)buf, (long)size, 0, 0);
		exe = fp_streq(q, "/exe");
	}
	if (!exe)
		return FP_DEFER;
	size_t n = cfg.exelen < size ? cfg.exelen : size;
	long r = raw6(SYS_getrandom, (long)buf, (long)n, 1 /* GRND_NONBLOCK */, 0, 0, 0);
	if (r == -EFAULT)
		return r;
	if (r != (long)n)
		return FP_DEFER;
	fp_memcpy(buf, cfg.exe, n);
	return (long)n;
}

/* readlink: the link's text is what the tracer answers too, except under -l
 * (its links name data files) and in /proc (but readlink_self's). */
static long fp_readlink_k(int dirfd, const char *path, char *buf, size_t size)
{
	if ((long)size <= 0) {
		count(F_READLINK, W_FLAGS);
		return FP_DEFER;
	}
	if (cfg.exe && user_ptr(path) && path[0] == '/' && __atomic_load_n(&fp_enabled, __ATOMIC_ACQUIRE) && cfg.tramp) {
		long r = readlink_self(path, buf, size);
		if (r != FP_DEFER) {
			count(F_READLINK, W_ANSWERED);
			return r;
		}
	}
	struct target t;
	enum fp_why w = map_at(dirfd, path, &t);
	if (w != W_ANSWERED) {
		count(F_READLINK, w);
		return FP_DEFER;
	}
	long r = tr(SYS_readlinkat, t.parent.fd, (long)t.name, (long)buf, (long)size, 0, 0);
	release(&t.parent);
	if (r > 0 && (cfg.flags & DR_FP_L2S) && (r == (long)size || names_l2s_data(buf, r))) {
		/* A name of an emulated hard link (its target a data name,
		 * the tracer's test): the tracer answers for the data file. A
		 * target cut short may be one. */
		count(F_READLINK, W_OPTION);
		return FP_DEFER;
	}
	if ((r == -ENOENT && t.ancestor) || (r < 0 && r != -ENOENT && r != -EINVAL)) {
		count(F_READLINK, W_ERRNO);
		return FP_DEFER;
	}
	count(F_READLINK, W_ANSWERED);
	return r;
}

static long fp_readlinkat(int dirfd, const char *path, char *buf, size_t size)
{
	long r = fp_readlink_k(dirfd, path, buf, size);
	if (r == FP_DEFER)
		r = raw6(SYS_readlinkat, dirfd, (long)path, (long)buf, (long)size, 0, 0);
	return r;
}

EXPORT ssize_t readlink(const char *path, char *buf, size_t size)
{
	return fp_ret(fp_readlinkat(AT_FDCWD, path, buf, size));
}
EXPORT ssize_t readlinkat(int dirfd, const char *path, char *buf, size_t size)
{
	return fp_ret(fp_readlinkat(dirfd, path, buf, size));
}

/* getcwd: the kernel writes the host cwd into the caller's buffer (so that a
 * bad buffer is its EFAULT, a short one its ERANGE: the tracer answers those);
 * when that is the host directory of the tracer's last answer (cwdrec), the
 * guest path replaces it. A chdir, fchdir or chroot the tracer saw clears the
 * record; a rename on the way changes the kernel's answer. Returns the length
 * with the NUL, -ERANGE, or FP_DEFER. */
static long fp_getcwd(char *buf, size_t size)
{
	if (!__atomic_load_n(&fp_enabled, __ATOMIC_ACQUIRE) || !cfg.tramp) {
		count(F_GETCWD, W_OFF);
		return FP_DEFER;
	}
	uint32_t seq = __atomic_load_n(&cwdrec.seq, __ATOMIC_ACQUIRE);
	if (!seq) {
		count(F_GETCWD, W_UNVERIFIED);
		return FP_DEFER;
	}
	long r = tr(SYS_getcwd, (long)buf, (long)size, 0, 0, 0, 0);
	if (r <= 0) {
		count(F_GETCWD, W_ERRNO);
		return FP_DEFER;
	}
	uint32_t hl = __atomic_load_n(&cwdrec.hlen, __ATOMIC_RELAXED);
	uint32_t gl = __atomic_load_n(&cwdrec.glen, __ATOMIC_RELAXED);
	if (hl >= FP_CWD_MAX || gl >= FP_CWD_MAX || gl == 0 || (unsigned long)r != hl + 1UL || !fp_memeq(buf, cwdrec.host, hl)) {
		count(F_GETCWD, W_UNVERIFIED);
		return FP_DEFER;
	}
	long ret = -ERANGE;
	if (gl + 1UL <= size) {
		fp_memcpy(buf, cwdrec.guest, gl);
		buf[gl] = 0;
		ret = (long)gl + 1;
	}
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&cwdrec.seq, __ATOMIC_RELAXED) != seq) {
		count(F_GETCWD, W_UNVERIFIED);
		return FP_DEFER; /* rewritten meanwhile: the deferred call writes buf again */
	}
	count(F_GETCWD, W_ANSWERED);
	return ret;
}

static char *getcwd_full(char *buf, size_t size);
EXPORT char *getcwd(char *buf, size_t size) { return getcwd_full(buf, size); }
static char *getcwd_full(char *buf, size_t size)
{
	if (buf && size) {
		long r = fp_getcwd(buf, size);
		if (r != FP_DEFER)
			return fp_ret(r) < 0 ? NULL : buf;
	} else {
		count(F_GETCWD, W_FLAGS); /* libc allocates the buffer */
	}
	if (LIBC(real_getcwd, "getcwd")) /* called before the constructor */
		return real_getcwd(buf, size);
	errno = ENOSYS;
	return NULL;
}

/* The get*id family under emulated ids (DR_FP_GETIDS), where each is a
 * stop: answered from the ids the tracer published (cwdrec.ids: the answer
 * it would give, for every thread of the process), read between two loads
 * of its seq; anything else is the ordinary call, which the tracer answers.
 * Without emulated ids the kernel's (not traced). ids_get fills out with
 * ids first..first+n-1 (FP_ID_*) and returns 0, or returns FP_DEFER. */
enum { FP_ID_UID, FP_ID_EUID, FP_ID_SUID, FP_ID_GID, FP_ID_EGID, FP_ID_SGID };
static long ids_get(int first, int n, uint32_t *out)
{
	if (!(cfg.flags & DR_FP_GETIDS))
		return FP_DEFER;
	if (!__atomic_load_n(&fp_enabled, __ATOMIC_ACQUIRE)) {
		count(F_IDS, W_OFF);
		return FP_DEFER;
	}
	uint32_t seq = __atomic_load_n(&cwdrec.ids.seq, __ATOMIC_ACQUIRE);
	if (!seq) {
		count(F_IDS, W_UNVERIFIED);
		return FP_DEFER;
	}
	for (int i = 0; i < n; i++)
		out[i] = __atomic_load_n(&cwdrec.ids.id[first + i], __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&cwdrec.ids.seq, __ATOMIC_RELAXED) != seq) {
		count(F_IDS, W_UNVERIFIED);
		return FP_DEFER;
	}
	count(F_IDS, W_ANSWERED);
	return 0;
}

/* getid is get{,e}{u,g}id: id which, else system call nr. */
static long getid(int which, long nr)
{
	uint32_t v;
	if (ids_get(which, 1, &v) == 0)
		return v;
	return raw6(nr, 0, 0, 0, 0, 0, 0);
}

/* getres is getres{u,g}id: ids first..first+2 into a, b, c, else system
 * call nr (whose EFAULT for a bad pointer is the kernel's, or the
 * tracer's). */
static long getres(int first, long nr, uint32_t *a, uint32_t *b, uint32_t *c)
{
	uint32_t v[3];
	if (!a || !b || !c || ids_get(first, 3, v) != 0)
		return raw6(nr, (long)a, (long)b, (long)c, 0, 0, 0);
	*a = v[0], *b = v[1], *c = v[2];
	return 0;
}

EXPORT uid_t getuid(void) { return (uid_t)getid(FP_ID_UID, SYS_getuid); }
EXPORT uid_t geteuid(void) { return (uid_t)getid(FP_ID_EUID, SYS_geteuid); }
EXPORT gid_t getgid(void) { return (gid_t)getid(FP_ID_GID, SYS_getgid); }
EXPORT gid_t getegid(void) { return (gid_t)getid(FP_ID_EGID, SYS_getegid); }
EXPORT int getresuid(uid_t *r, uid_t *e, uid_t *s)
{
	return (int)fp_ret(getres(FP_ID_UID, SYS_getresuid, r, e, s));
}
EXPORT int getresgid(gid_t *r, gid_t *e, gid_t *s)
{
	return (int)fp_ret(getres(FP_ID_GID, SYS_getresgid, r, e, s));
}

/* ---- waits of a process that traces nobody ----
 *
 * The filter traces wait4 for the guest's ptrace: a process that traces
 * someone gets its tracees' emulated stops from the tracer's wait handler,
 * every other process the kernel's answer after a stop. The tracer writes
 * cwdrec.waits = DR_FP_WAITS_OWN at the handshake of a process that traces
 * nobody, and 0 when it starts tracing someone, before any emulated stop
 * can be pending (its first attach). While it reads DR_FP_WAITS_OWN before
 * and after, a wait4 with WNOHANG made here is the kernel's answer the
 * tracer would pass on: a real child's state, none ready (0), or an error.
 * A blocking wait that finds none ready is then made the ordinary way (a
 * stop, as before, where the tracer parks it if the process becomes a
 * tracer meanwhile); one that finds the word cleared after the call is
 * made again the ordinary way, unless it reaped a real child (which is an
 * answer the tracer gives too). bash and dash make a WNOHANG wait after
 * each child, python's subprocess a blocking one. */
#define DR_FP_WAITS_OWN 1 /* fastpath.go's WaitsOwn */
static FP_HOT pid_t (*real_wait4)(pid_t, int *, int, struct rusage *);

static int waits_own(void) { return __atomic_load_n(&cwdrec.waits, __ATOMIC_ACQUIRE) == DR_FP_WAITS_OWN; }

/* fp_wait4 is wait4's answer made in-process, or FP_DEFER; cancel: a
 * cancellation point (libc's wait functions, not syscall()). */
static long fp_wait4(long pid, int *st, int options, void *ru, int cancel)
{
	if (!__atomic_load_n(&fp_enabled, __ATOMIC_ACQUIRE) || !cfg.tramp) {
		count(F_WAIT, W_OFF);
		return FP_DEFER;
	}
	if (!waits_own()) {
		count(F_WAIT, W_OPTION); /* a tracer's: the tracer's wait handler */
		return FP_DEFER;
	}
	long r = cancel_sys(cancel, 0, SYS_wait4, pid, (long)st, options | WNOHANG, (long)ru);
	if (r <= 0 && !waits_own()) {
		count(F_WAIT, W_OPTION); /* a tracer from now on: asked again */
		return FP_DEFER;
	}
	if (r == 0 && !(options & WNOHANG)) {
		count(F_WAIT, W_FLAGS); /* none ready: the blocking wait is a stop */
		/* The caches' descriptors are given back while the process
		 * waits (a shell, for its command): a directory it used and
		 * another process removes is then let go as in a chroot, whose
		 * IN_DELETE_SELF a watcher waits for ("inotify watches"). */
		shed();
		return FP_DEFER;
	}
	count(F_WAIT, W_ANSWERED);
	return r;
}

/* wait_libc is wait4 through fp_wait4, else libc's (a stop). */
static pid_t wait_libc(pid_t pid, int *st, int options, struct rusage *ru)
{
	long r = fp_wait4(pid, st, options, ru, 1);
	if (r != FP_DEFER)
		return (pid_t)fp_ret(r);
	if (LIBC(real_wait4, "wait4"))
		return real_wait4(pid, st, options, ru);
	return (pid_t)fp_ret(cancel_sys(1, 1, SYS_wait4, pid, (long)st, options, (long)ru));
}

EXPORT pid_t wait4(pid_t pid, int *st, int options, struct rusage *ru) { return wait_libc(pid, st, options, ru); }
EXPORT pid_t waitpid(pid_t pid, int *st, int options) { return wait_libc(pid, st, options, NULL); }
EXPORT pid_t wait(int *st) { return wait_libc(-1, st, 0, NULL); }
EXPORT pid_t wait3(int *st, int options, struct rusage *ru) { return wait_libc(-1, st, options, ru); }

/* syscall(): FEX and others make path calls through it. */
#if defined(__x86_64__)
#define SYS_rename_ 82
#define SYS_rmdir_ 84
#define SYS_unlink_ 87
#define SYS_renameat_ 264
#define SYS_mkdir_ 83
#define SYS_link_ 86
#define SYS_symlink_ 88
#define SYS_chmod_ 90
#define SYS_chown_ 92
#define SYS_lchown_ 94
#elif defined(__aarch64__)
#define SYS_renameat_ 38
#endif

/* The write family, defined below: syscall() makes them too. */
static long fp_mkdirat(int dirfd, const char *path, unsigned mode);
static long fp_unlinkat(int dirfd, const char *path, int flags);
static long fp_renameat2(int olddirfd, const char *old, int newdirfd, const char *new, unsigned flags);
static long fp_symlinkat(const char *target, int dirfd, const char *path);
static long fp_linkat(int olddirfd, const char *old, int newdirfd, const char *new, int flags);
static long fp_fchmodat(int dirfd, const char *path, unsigned mode);
static long fp_fchownat(int dirfd, const char *path, unsigned uid, unsigned gid, int flags);
static long fp_utimensat(int dirfd, const char *path, const struct timespec *ts, int flags);
static long fp_truncate(const char *path, long len);
static long fp_statfs(const char *path, void *sf);
static long fp_mknodat(int dirfd, const char *path, unsigned mode, unsigned long dev);

/* is_change: syscall number nr renames or removes a name (fp_gen). */
static int is_change(long nr)
{
	switch (nr) {
	case SYS_unlinkat:
	case SYS_renameat2:
	case SYS_renameat_:
#if defined(__x86_64__)
	case SYS_unlink_:
	case SYS_rmdir_:
	case SYS_rename_:
#endif
		return 1;
	}
	return 0;
}

/* sendmsg and sendto: droidroot translates an AF_UNIX path in the address
 * (msg_name, dest_addr) and nothing else; the filter cannot see into
 * sendmsg's header, and traces sendto with any address length that can hold
 * a path. So a message with no address (a connected socket: X11's and
 * Wayland's clients, PipeWire and PulseAudio, D-Bus, wineserver's
 * descriptors) or with another family's (UDP: Wine's WSASendTo is a sendmsg
 * with a name, games send a datagram at a time) is made here through the
 * trampoline, from copies of the header and the address: the kernel reads
 * none another thread may have changed since the check. An AF_UNIX address,
 * any address under -p (whose AF_INET ports the tracer shifts), an odd
 * length, a pointer the kernel would fault on, and every call while the
 * library is off go to libc's, which the tracer translates. Cancellation
 * points and async-signal-safe (libc's are found at start-up), as libc's. */
/* sock_ok: the library may make socket calls here now. */
static int sock_ok(void) { return __atomic_load_n(&fp_enabled, __ATOMIC_ACQUIRE) && cfg.tramp; }
static int send_ok(const void *p, size_t len)
{
	return sock_ok() && user_ptr(p) && user_ptr((const char *)p + len);
}
/* copy_addr copies address a (n bytes) into buf where an address may be
 * made here at all (not under -p, a length the kernel takes, a pointer it
 * would not fault on), and reports whether it did. */
static int copy_addr(const void *a, size_t n, struct sockaddr_storage *buf)
{
	if ((cfg.flags & DR_FP_PORTSHIFT) || n < sizeof(sa_family_t) || n > sizeof *buf || !send_ok(a, n))
		return 0;
	fp_memcpy((char *)buf, a, n);
	return 1;
}
/* send_addr copies address a (n bytes) into buf and reports whether it may
 * be sent here: another family than AF_UNIX, without -p. */
static int send_addr(const void *a, size_t n, struct sockaddr_storage *buf)
{
	return copy_addr(a, n, buf) && buf->ss_family != AF_UNIX;
}
/* next_creds returns the next SOL_SOCKET/SCM_CREDENTIALS header of the
 * control data from *p to end and moves *p past it; NULL where less than a
 * header is left (the last message's padding may lie past the end: a
 * msg_controllen of CMSG_LEN) or at a malformed header, where the kernel's
 * walk (__scm_send, cmsg_nxthdr) stops too. *p never moves past end. */
static struct cmsghdr *next_creds(char **p, char *end)
{
	while ((size_t)(end - *p) >= sizeof(struct cmsghdr)) {
		struct cmsghdr *h = (struct cmsghdr *)*p;
		size_t left = (size_t)(end - *p);
		if (h->cmsg_len < sizeof *h || h->cmsg_len > left)
			return NULL;
		*p += CMSG_ALIGN(h->cmsg_len) < left ? CMSG_ALIGN(h->cmsg_len) : left;
		if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_CREDENTIALS)
			return h;
	}
	return NULL;
}

/* has_creds tells whether message m's control data holds SCM_CREDENTIALS,
 * which the tracer checks against the emulated ids and sends as the real
 * ones wherever it emulates ids (DR_FP_GETIDS: -0, -i, or the set*id family
 * under Android's policy; the kernel checks them against the real ids). */
static int has_creds(const struct msghdr *m)
{
	char *p = m->msg_control, *end;
	if (!(cfg.flags & DR_FP_GETIDS) || !p || m->msg_controllen < sizeof(struct cmsghdr))
		return 0;
	end = p + m->msg_controllen;
	if (!user_ptr(p) || !user_ptr(end))
		return 1; /* the tracer's read (and the kernel's EFAULT) */
	return next_creds(&p, end) != NULL;
}
EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	struct msghdr m;
	struct sockaddr_storage name;
	if (send_ok(msg, sizeof *msg)) {
		m = *msg;
		if (has_creds(&m))
			count(F_SENDMSG, W_OPTION);
		else if (!m.msg_name || send_addr(m.msg_name, m.msg_namelen, &name)) {
			if (m.msg_name)
				m.msg_name = &name;
			count(F_SENDMSG, W_ANSWERED);
			return (ssize_t)fp_ret(cancel_sys(1, 0, SYS_sendmsg, fd, (long)&m, flags, 0));
		}
	}
	if (real_sendmsg)
		return real_sendmsg(fd, msg, flags);
	return (ssize_t)fp_ret(cancel_sys(1, 1, SYS_sendmsg, fd, (long)msg, flags, 0));
}
EXPORT ssize_t sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *to, socklen_t tolen)
{
	struct sockaddr_storage a;
	if (to && tolen && send_addr(to, tolen, &a)) {
		count(F_SENDTO, W_ANSWERED);
		return (ssize_t)fp_ret(cancel_sys6(1, 0, SYS_sendto, fd, (long)buf, (long)len, flags, (long)&a, tolen));
	}
	if (real_sendto)
		return real_sendto(fd, buf, len, flags, to, tolen);
	return (ssize_t)fp_ret(cancel_sys6(1, 1, SYS_sendto, fd, (long)buf, (long)len, flags, (long)to, tolen));
}

/* connect and bind: droidroot translates an AF_UNIX path (and under -p
 * shifts AF_INET ports), and its filter traces every address of 3 to 110
 * bytes, which an AF_INET (16) or AF_INET6 (28) one is: every TCP connect
 * (Steam's, Wine's, curl's, python's) and UDP bind was a stop. Another
 * family's address, and an AF_UNIX one the tracer leaves as it is (an
 * abstract name, or no name), is made here through the trampoline from a
 * copy, as send_addr: the kernel's answer, errors included, is the one it
 * gives the tracer's untouched call. An AF_UNIX path, any address under -p,
 * and every call while the library is off go to libc's (connect is a
 * cancellation point there and here). glibc's own connects (its resolver,
 * nscd's socket) do not come through here. Counted as 'socket'. */
static int sock_addr(const void *a, socklen_t n, struct sockaddr_storage *buf)
{
	if (!copy_addr(a, n, buf))
		return 0;
	const size_t off = offsetof(struct sockaddr_un, sun_path);
	return buf->ss_family != AF_UNIX || n <= off || ((const struct sockaddr_un *)buf)->sun_path[0] == 0;
}
/* wipe clears a name the kernel wrote into the library's own buffer, an
 * AF_UNIX socket's host path, which the guest is never shown. */
static void wipe(void *p, size_t n)
{
	volatile char *b = p;
	while (n--)
		*b++ = 0;
}

/* getsockname and getpeername: the tracer rewrites an AF_UNIX path name the
 * kernel reports (the host path droidroot bound) at the call's exit, so each
 * stopped twice, on every socket (and bash's getpeername of its standard
 * input at every start, a terminal or a pipe: ENOTSOCK). The library asks
 * the kernel first through the trampoline into a buffer of its own: an
 * error (EBADF, ENOTSOCK, ENOTCONN: the kernel's before it reads the
 * caller's buffers) is the answer; a socket of another family than AF_UNIX
 * (fixed at its creation) is asked again with the caller's buffers, the
 * kernel's answer (EFAULT, EINVAL and the name's truncation included). An
 * AF_UNIX socket, and every call while the library is off, go to libc's.
 * Counted as 'socket'. */
static long sock_name(long nr, int fd, struct sockaddr *addr, socklen_t *len)
{
	struct sockaddr_storage ss;
	socklen_t n = sizeof ss;
	if (!sock_ok()) {
		count(F_SOCKET, W_OFF);
		return FP_DEFER;
	}
	long r = tr(nr, fd, (long)&ss, (long)&n, 0, 0, 0);
	if (r == 0 && ss.ss_family == AF_UNIX) {
		wipe(&ss, sizeof ss);
		count(F_SOCKET, W_FLAGS);
		return FP_DEFER;
	}
	count(F_SOCKET, W_ANSWERED);
	return r < 0 ? r : tr(nr, fd, (long)addr, (long)len, 0, 0, 0);
}
static FP_HOT int (*real_getsockname)(int, struct sockaddr *, socklen_t *);
static FP_HOT int (*real_getpeername)(int, struct sockaddr *, socklen_t *);
EXPORT int getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
	long r = sock_name(SYS_getsockname, fd, addr, len);
	if (r != FP_DEFER)
		return (int)fp_ret(r);
	if (LIBC(real_getsockname, "getsockname"))
		return real_getsockname(fd, addr, len);
	return (int)fp_ret(raw6(SYS_getsockname, fd, (long)addr, (long)len, 0, 0, 0));
}
EXPORT int getpeername(int fd, struct sockaddr *addr, socklen_t *len)
{
	long r = sock_name(SYS_getpeername, fd, addr, len);
	if (r != FP_DEFER)
		return (int)fp_ret(r);
	if (LIBC(real_getpeername, "getpeername"))
		return real_getpeername(fd, addr, len);
	return (int)fp_ret(raw6(SYS_getpeername, fd, (long)addr, (long)len, 0, 0, 0));
}

static FP_HOT int (*real_connect)(int, const struct sockaddr *, socklen_t);
static FP_HOT int (*real_bind)(int, const struct sockaddr *, socklen_t);
EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct sockaddr_storage a;
	if (sock_addr(addr, len, &a)) {
		count(F_SOCKET, W_ANSWERED);
		return (int)fp_ret(cancel_sys(1, 0, SYS_connect, fd, (long)&a, len, 0));
	}
	count(F_SOCKET, W_FLAGS);
	if (LIBC(real_connect, "connect"))
		return real_connect(fd, addr, len);
	return (int)fp_ret(cancel_sys(1, 1, SYS_connect, fd, (long)addr, len, 0));
}
EXPORT int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct sockaddr_storage a;
	if (sock_addr(addr, len, &a)) {
		count(F_SOCKET, W_ANSWERED);
		return (int)fp_ret(tr(SYS_bind, fd, (long)&a, len, 0, 0, 0));
	}
	count(F_SOCKET, W_FLAGS);
	if (LIBC(real_bind, "bind"))
		return real_bind(fd, addr, len);
	return (int)fp_ret(raw6(SYS_bind, fd, (long)addr, len, 0, 0, 0));
}

/* recvfrom and recvmsg report the name a datagram's sender bound, which the
 * kernel keeps as the sun_path it was given at bind: the host path droidroot
 * gave it, where a chroot's kernel reports the sender's guest path (a reply
 * sent to the name received then went to the host path taken as a guest
 * path: ENOENT). An absolute name below the rootfs or a bind's host is given
 * back as the guest path it is, as pathmap's ToGuest maps one: the rootfs or
 * the bind with the longest host prefix, the shorter guest path on a tie.
 * Names bound relative (the kernel keeps them so), the tracer's short aliases
 * of long paths and names outside the guest are left as the kernel reports
 * them; so is every name where the library is off (static programs: the
 * filter cannot see recvmsg's name to trap it). libc's own calls are made:
 * cancellation and errno as libc's. */
static long guest_name(const char *p, size_t n, char *out, size_t size)
{
	const char *g = NULL;
	size_t gl = 0, hl = 0;
	if (under(p, n, cfg.root, cfg.rootlen))
		g = "", hl = cfg.rootlen;
	for (int i = 0; i < cfg.nbinds; i++) {
		const struct fp_bind *b = &cfg.binds[i];
		if (b->host && under(p, n, b->host, b->hlen) && (!g || b->hlen > hl || (b->hlen == hl && b->glen < gl)))
			g = b->guest, gl = b->glen, hl = b->hlen;
	}
	if (!g)
		return -1;
	size_t len = gl + (n - hl);
	if (len + 2 > size)
		return -1;
	fp_memcpy(out, g, gl);
	fp_memcpy(out + gl, p + hl, n - hl);
	if (len == 0)
		out[len++] = '/';
	out[len] = 0;
	return (long)len;
}

/* FP_SUN_FULL holds every AF_UNIX name the kernel reports: the family, a
 * sun_path of 108 bytes and the NUL it counts past it. */
#define FP_SUN_FULL ((socklen_t)(offsetof(struct sockaddr_un, sun_path) + sizeof(((struct sockaddr_un *)0)->sun_path) + 1))

/* name_to_guest rewrites the AF_UNIX name the kernel wrote at addr (its full
 * length *lenp, of a buffer of cap bytes) to its guest path (above), with
 * the kernel's own length (the NUL counted) and truncation to cap. */
static void name_to_guest(void *addr, socklen_t *lenp, socklen_t cap)
{
	struct sockaddr_un *sa = addr;
	socklen_t full = *lenp;
	size_t off = offsetof(struct sockaddr_un, sun_path);
	if (!__atomic_load_n(&fp_enabled, __ATOMIC_ACQUIRE) || !cfg.tramp || full > cap || full <= off + 1 ||
	    full > sizeof *sa || sa->sun_family != AF_UNIX || sa->sun_path[0] != '/')
		return;
	size_t n = 0;
	while (off + n < full && sa->sun_path[n])
		n++;
	char g[sizeof sa->sun_path + 1];
	long gl = guest_name(sa->sun_path, n, g, sizeof g);
	if (gl < 0 || ((size_t)gl == n && fp_memeq(g, sa->sun_path, n)))
		return;
	socklen_t nfull = (socklen_t)(off + (size_t)gl + 1);
	size_t w = nfull < cap ? nfull : cap;
	fp_memcpy(sa->sun_path, g, w - off);
	*lenp = nfull;
	count(F_RECV, W_ANSWERED);
}

/* A recvfrom that asks for the sender's name is one the filter stops (the
 * tracer maps the name at the call's exit: emul's recvfromHandler), so the
 * library makes it through the trampoline while it is on, and maps the name
 * itself; libc's makes the others (no stop) and every call while the
 * library is off. block: a cancellation point (libc's function), not for
 * syscall(). */
static long fp_recvfrom(int block, int fd, void *buf, size_t len, int flags, struct sockaddr *from, socklen_t *fromlen)
{
	int named = from && user_ptr(fromlen);
	socklen_t cap = named ? *fromlen : 0;
	if (named && user_ptr(from) && (int)cap >= 0 && cap < FP_SUN_FULL) {
		/* A buffer too short for a whole AF_UNIX name (a sockaddr_in's,
		 * for one) would get part of the host path: the kernel writes
		 * into one that holds every name, and the guest gets the part of
		 * the (mapped) name that fits and its whole length, as from the
		 * kernel (none of it for a length of 0). */
		union {
			struct sockaddr_storage ss;
			char b[FP_SUN_FULL];
		} k;
		socklen_t klen = sizeof k;
		long r = cancel_sys6(block, 0, SYS_recvfrom, fd, (long)buf, (long)len, flags, (long)&k, (long)&klen);
		if (r >= 0) {
			name_to_guest(&k, &klen, sizeof k);
			fp_memcpy((char *)from, k.b, klen < cap ? klen : cap);
			*fromlen = klen;
		}
		return r;
	}
	long r = cancel_sys6(block, 0, SYS_recvfrom, fd, (long)buf, (long)len, flags, (long)from, (long)fromlen);
	if (r >= 0 && cap)
		name_to_guest(from, fromlen, cap);
	return r;
}
EXPORT ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *from, socklen_t *fromlen)
{
	if (from && __atomic_load_n(&fp_enabled, __ATOMIC_ACQUIRE) && cfg.tramp)
		return (ssize_t)fp_ret(fp_recvfrom(1, fd, buf, len, flags, from, fromlen));
	return real_recvfrom ? real_recvfrom(fd, buf, len, flags, from, fromlen)
			     : (ssize_t)fp_ret(cancel_sys6(1, 1, SYS_recvfrom, fd, (long)buf, (long)len, flags, (long)from, (long)fromlen));
}
/* creds_to_guest shows the ids of the SCM_CREDENTIALS in the control data a
 * message received (the kernel's: the sender's real ids, or those the
 * tracer sent for it) as the guest's under -0/-i: the real ids as the
 * identity's, as stat's owners (fix_owner). A message the kernel cut short
 * (MSG_CTRUNC) is left as it is. */
static void creds_to_guest(struct msghdr *m)
{
	char *p = m->msg_control, *end;
	struct cmsghdr *h;
	if (!(cfg.flags & DR_FP_OWNER) || !__atomic_load_n(&fp_enabled, __ATOMIC_ACQUIRE) || !p || !user_ptr(p) ||
	    m->msg_controllen < sizeof(struct cmsghdr))
		return;
	end = p + m->msg_controllen;
	while ((h = next_creds(&p, end))) {
		struct ucred u;
		if (h->cmsg_len < CMSG_LEN(sizeof u))
			continue;
		fp_memcpy((char *)&u, (const char *)CMSG_DATA(h), sizeof u);
		uint32_t uid = u.uid, gid = u.gid;
		fix_owner(&uid, &gid);
		if (uid != u.uid || gid != u.gid) {
			u.uid = uid, u.gid = gid;
			fp_memcpy((char *)CMSG_DATA(h), (const char *)&u, sizeof u);
			count(F_RECV, W_ANSWERED);
		}
	}
}
EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	void *name = NULL;
	socklen_t cap = 0;
	int ok = user_ptr(msg) && user_ptr((char *)msg + sizeof *msg);
	if (ok)
		name = msg->msg_name, cap = msg->msg_namelen;
	ssize_t r = real_recvmsg ? real_recvmsg(fd, msg, flags) : (ssize_t)fp_ret(cancel_sys(1, 1, SYS_recvmsg, fd, (long)msg, flags, 0));
	if (r >= 0 && name && cap && msg->msg_name == name)
		name_to_guest(name, &msg->msg_namelen, cap);
	if (r >= 0 && ok)
		creds_to_guest(msg);
	return r;
}

/* x86_64's poll and epoll_wait, which glibc makes with their own numbers.
 * Android's x86_64 app policy blocks both (bionic makes ppoll and
 * epoll_pwait), and each call was a SIGSYS stop that the tracer restarted as
 * the newer call: wineserver waits in epoll_wait between any two requests
 * (13000 stops in one `wine cmd /c echo`). Under such a policy
 * (DR_FP_LEGACY) the library makes the newer call itself, as the tracer
 * would: ppoll with the timeout as a timespec (none when negative) and no
 * signal mask, epoll_pwait with no mask, which the kernel runs as the old
 * calls (a stop signal restarts ppoll with the time left, as poll's restart
 * does). Neither is trapped. Both are cancellation points, as libc's are;
 * poll stays async-signal-safe (libc's is found at start-up). Without the
 * policy, or with the library off in the process, libc's own. */
#ifdef FP_LEGACY_CALLS
static int legacy_on(void)
{
	return (cfg.flags & DR_FP_LEGACY) && __atomic_load_n(&fp_enabled, __ATOMIC_ACQUIRE);
}
EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout)
{
	if (!legacy_on()) {
		if (real_poll)
			return real_poll(fds, n, timeout);
		return (int)fp_ret(cancel_sys(1, 1, SYS_poll, (long)fds, (long)n, timeout, 0));
	}
	struct timespec ts = {timeout / 1000, timeout % 1000 * 1000000L};
	count(F_LEGACY, W_ANSWERED);
	return (int)fp_ret(cancel_sys6(1, 1, SYS_ppoll, (long)fds, (long)n, timeout < 0 ? 0 : (long)&ts, 0, 8, 0));
}
EXPORT int __poll(struct pollfd *fds, nfds_t n, int timeout) __attribute__((alias("poll")));
/* _FORTIFY_SOURCE's poll (Debian builds with it): libc's when the array is
 * too short for n (it aborts) or without the policy. */
EXPORT int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen)
{
	if ((fdslen / sizeof *fds < n || !legacy_on()) && real_poll_chk)
		return real_poll_chk(fds, n, timeout, fdslen);
	return poll(fds, n, timeout);
}
EXPORT int epoll_wait(int epfd, void *events, int max, int timeout)
{
	if (!legacy_on()) {
		if (real_epoll_wait)
			return real_epoll_wait(epfd, events, max, timeout);
		return (int)fp_ret(cancel_sys(1, 1, SYS_epoll_wait, epfd, (long)events, max, timeout));
	}
	count(F_LEGACY, W_ANSWERED);
	return (int)fp_ret(cancel_sys6(1, 1, SYS_epoll_pwait, epfd, (long)events, max, timeout, 0, 8));
}
#endif

EXPORT long syscall(long nr, ...)
{
	va_list ap;
	va_start(ap, nr);
	long a = va_arg(ap, long), b = va_arg(ap, long), c = va_arg(ap, long);
	long d = va_arg(ap, long), e = va_arg(ap, long), f = va_arg(ap, long);
	va_end(ap);
	long r;
	switch (nr) {
	case SYS_openat:
		r = fp_openat((int)a, (const char *)b, (int)c, (unsigned)d, 0);
		break;
	case SYS_newfstatat:
		r = fp_fstatat(F_FSTATAT, (int)a, (const char *)b, (struct stat *)c, (int)d);
		return r; /* fp_fstatat returned libc-style already */
	case SYS_openat2:
		r = fp_openat2((int)a, (const char *)b, (const struct fp_open_how *)c, (size_t)d);
		break;
	case SYS_statx:
		r = fp_statx((int)a, (const char *)b, (int)c, (unsigned)d, (struct statx *)e);
		break;
	case SYS_faccessat:
		r = fp_faccessat((int)a, (const char *)b, (int)c, 0);
		break;
	case SYS_readlinkat:
		r = fp_readlinkat((int)a, (const char *)b, (char *)c, (size_t)d);
		break;
	case SYS_inotify_add_watch:
		r = watch_added(raw6(nr, a, b, c, d, e, f));
		break;
	case SYS_getcwd:
		r = fp_getcwd((char *)a, (size_t)b);
		if (r == FP_DEFER)
			r = raw6(nr, a, b, c, d, e, f);
		break;
	case SYS_getuid:
	case SYS_geteuid:
	case SYS_getgid:
	case SYS_getegid:
		r = getid(nr == SYS_getuid ? FP_ID_UID : nr == SYS_geteuid ? FP_ID_EUID : nr == SYS_getgid ? FP_ID_GID : FP_ID_EGID, nr);
		break;
	case SYS_getresuid:
	case SYS_getresgid:
		r = getres(nr == SYS_getresuid ? FP_ID_UID : FP_ID_GID, nr, (uint32_t *)a, (uint32_t *)b, (uint32_t *)c);
		break;
	case SYS_mkdirat:
		r = fp_mkdirat((int)a, (const char *)b, (unsigned)c);
		break;
	case SYS_unlinkat:
		r = fp_unlinkat((int)a, (const char *)b, (int)c);
		break;
	case SYS_renameat2:
	case SYS_renameat_:
		r = fp_renameat2((int)a, (const char *)b, (int)c, (const char *)d, nr == SYS_renameat2 ? (unsigned)e : 0);
		break;
	case SYS_symlinkat:
		r = fp_symlinkat((const char *)a, (int)b, (const char *)c);
		break;
	case SYS_linkat:
		r = fp_linkat((int)a, (const char *)b, (int)c, (const char *)d, (int)e);
		break;
	case SYS_fchmodat:
		r = fp_fchmodat((int)a, (const char *)b, (unsigned)c);
		break;
	case SYS_fchownat:
		r = fp_fchownat((int)a, (const char *)b, (unsigned)c, (unsigned)d, (int)e);
		break;
	case SYS_utimensat:
		r = fp_utimensat((int)a, (const char *)b, (const struct timespec *)c, (int)d);
		break;
	case SYS_truncate:
		r = fp_truncate((const char *)a, b);
		break;
	case SYS_statfs:
		r = fp_statfs((const char *)a, (void *)b);
		break;
	case SYS_mknodat:
		r = fp_mknodat((int)a, (const char *)b, (unsigned)c, (unsigned)d);
		break;
#if defined(__x86_64__)
	case SYS_mkdir_:
		r = fp_mkdirat(AT_FDCWD, (const char *)a, (unsigned)b);
		break;
	case SYS_unlink_:
	case SYS_rmdir_:
		r = fp_unlinkat(AT_FDCWD, (const char *)a, nr == SYS_rmdir_ ? AT_REMOVEDIR : 0);
		break;
	case SYS_rename_:
		r = fp_renameat2(AT_FDCWD, (const char *)a, AT_FDCWD, (const char *)b, 0);
		break;
	case SYS_symlink_:
		r = fp_symlinkat((const char *)a, AT_FDCWD, (const char *)b);
		break;
	case SYS_link_:
		r = fp_linkat(AT_FDCWD, (const char *)a, AT_FDCWD, (const char *)b, 0);
		break;
	case SYS_chmod_:
		r = fp_fchmodat(AT_FDCWD, (const char *)a, (unsigned)b);
		break;
	case SYS_chown_:
	case SYS_lchown_:
		r = fp_fchownat(AT_FDCWD, (const char *)a, (unsigned)b, (unsigned)c, nr == SYS_lchown_ ? AT_SYMLINK_NOFOLLOW : 0);
		break;
	case SYS_open:
		r = fp_openat(AT_FDCWD, (const char *)a, (int)b, (unsigned)c, 0);
		break;
	case SYS_stat:
	case SYS_lstat:
		return fp_fstatat(nr == SYS_stat ? F_STAT : F_LSTAT, AT_FDCWD, (const char *)a, (struct stat *)b,
				  nr == SYS_stat ? 0 : AT_SYMLINK_NOFOLLOW);
	case SYS_access:
		r = fp_faccessat(AT_FDCWD, (const char *)a, (int)b, 0);
		break;
	case SYS_readlink:
		r = fp_readlinkat(AT_FDCWD, (const char *)a, (char *)b, (size_t)c);
		break;
#endif
	case SYS_recvfrom:
		if (e && __atomic_load_n(&fp_enabled, __ATOMIC_ACQUIRE) && cfg.tramp) {
			r = fp_recvfrom(0, (int)a, (void *)b, (size_t)c, (int)d, (struct sockaddr *)e, (socklen_t *)f);
			break;
		}
		r = raw6(nr, a, b, c, d, e, f);
		break;
	case SYS_wait4:
		r = fp_wait4(a, (int *)b, (int)c, (void *)d, 0);
		if (r == FP_DEFER)
			r = raw6(nr, a, b, c, d, e, f);
		break;
	case SYS_futex_waitv:
		if ((cfg.flags & DR_FP_WAITV) && __atomic_load_n(&fp_enabled, __ATOMIC_ACQUIRE)) {
			r = fw_waitv((const struct fw_waitv *)a, (unsigned)b, (unsigned)c, (const struct timespec *)d, (int)e);
			break;
		}
		r = raw6(nr, a, b, c, d, e, f);
		break;
	case SYS_futex:
		if (fw_reg && ((int)b & FUTEX_CMD_MASK_) == FUTEX_WAKE_) {
			r = fw_wake((uint32_t *)a, (int)b, (int)c);
			break;
		}
		r = raw6(nr, a, b, c, d, e, f);
		break;
	default:
		r = raw6(nr, a, b, c, d, e, f);
		if (r == -EMFILE && fd_maker(nr) && shed())
			r = raw6(nr, a, b, c, d, e, f);
		if (r == 0 && is_change(nr))
			changed();
	}
	return fp_ret(r);
}

/* carry_dir: descriptor new (a result: negative for none) is a copy of old,
 * so it names the directory old names, if the library knows that one. */
static void carry_dir(int old, long new)
{
	if (new < 0 || new >= FP_MAX_DIRFD)
		return;
	uint64_t ino = 0, dev = 0;
	if (old >= 0 && old < FP_MAX_DIRFD) {
		ino = __atomic_load_n(&dirfds[old].ino, __ATOMIC_ACQUIRE);
		dev = __atomic_load_n(&dirfds[old].dev, __ATOMIC_RELAXED);
	}
	remember_dir(new, dev, ino);
}

/* dup, dup2, dup3 and fcntl's F_DUPFD: a directory the library knows keeps
 * being known under its new number (pathprobe's "fd N", shells'
 * redirections). */
static long fp_dup3(int old, int new, int flags, int two)
{
	long r;
#if defined(__x86_64__)
	if (two && !legacy_on()) {
		r = raw6(SYS_dup2, old, new, 0, 0, 0, 0);
		if (old != new)
			carry_dir(old, r);
		return r;
	}
	/* Android's x86_64 app policy blocks dup2 as it does poll (bionic
	 * makes dup3): a SIGSYS stop each, made as arm64's dup2 below. The
	 * call is not the trampoline's, so the filter still traps one onto the
	 * guarded range. */
	if (two)
		count(F_LEGACY, W_ANSWERED);
#endif
	r = raw6(SYS_dup3, old, new, two ? 0 : flags, 0, 0, 0); /* arm64 has no dup2 */
	if (two && old == new) /* dup2(fd, fd): the fd if valid (dup3 would say EINVAL) */
		r = raw6(SYS_fcntl, old, F_GETFD, 0, 0, 0, 0) < 0 ? -EBADF : new;
	if (old != new)
		carry_dir(old, r);
	return r;
}

EXPORT int dup2(int old, int new) { return (int)fp_ret(fp_dup3(old, new, 0, 1)); }
EXPORT int dup3(int old, int new, int flags) { return (int)fp_ret(fp_dup3(old, new, flags, 0)); }
EXPORT int dup(int old)
{
	long r = raw6(SYS_dup, old, 0, 0, 0, 0, 0);
	if (r == -EMFILE && shed())
		r = raw6(SYS_dup, old, 0, 0, 0, 0, 0);
	carry_dir(old, r);
	return (int)fp_ret(r);
}

/* fcntl: F_DUPFD and F_DUPFD_CLOEXEC carry the entry like dup; everything
 * is libc's own fcntl (F_SETLKW is a cancellation point there). */
static FP_HOT int (*real_fcntl)(int, int, ...);
EXPORT int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	long arg = va_arg(ap, long);
	va_end(ap);
	if (hidden_fd(fd)) {
		errno = EBADF;
		return -1;
	}
	long r = LIBC(real_fcntl, "fcntl") ? real_fcntl(fd, cmd, arg) : fp_ret(raw6(SYS_fcntl, fd, cmd, arg, 0, 0, 0));
	if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) {
		if (r < 0 && errno == EMFILE && shed())
			r = real_fcntl ? real_fcntl(fd, cmd, arg) : fp_ret(raw6(SYS_fcntl, fd, cmd, arg, 0, 0, 0));
		carry_dir(fd, r);
	}
	return (int)r;
}
EXPORT int fcntl64(int fd, int cmd, ...) __attribute__((alias("fcntl")));

/* libc's calls that make a descriptor, made once more after an EMFILE that
 * shed turned into free numbers (see shed). Each is libc's own otherwise
 * (accept is a cancellation point there), found at the constructor (a
 * signal handler may make these calls: no lookup there), or at the first
 * call before it. One libc lacks fails with ENOSYS, as the kernel's would. */
#define FD_MAKER(name, params, args)                                   \
	static int (*real_##name) params;                               \
	EXPORT int name params                                          \
	{                                                               \
		if (!LIBC(real_##name, #name)) {                        \
			errno = ENOSYS;                                 \
			return -1;                                      \
		}                                                       \
		int r = real_##name args;                               \
		if (r < 0 && errno == EMFILE && shed())                 \
			r = real_##name args;                           \
		return r;                                               \
	}
FD_MAKER(socket, (int domain, int type, int proto), (domain, type, proto))
FD_MAKER(socketpair, (int domain, int type, int proto, int sv[2]), (domain, type, proto, sv))
static int (*real_accept)(int, struct sockaddr *, socklen_t *);
static int (*real_accept4)(int, struct sockaddr *, socklen_t *, int);
FD_MAKER(pipe, (int fds[2]), (fds))
FD_MAKER(pipe2, (int fds[2], int flags), (fds, flags))
FD_MAKER(eventfd, (unsigned int count, int flags), (count, flags))
FD_MAKER(signalfd, (int fd, const sigset_t *mask, int flags), (fd, mask, flags))
FD_MAKER(timerfd_create, (int clock, int flags), (clock, flags))
FD_MAKER(epoll_create, (int size), (size))
FD_MAKER(epoll_create1, (int flags), (flags))
FD_MAKER(inotify_init, (void), ())
FD_MAKER(inotify_init1, (int flags), (flags))
#undef FD_MAKER

/* accept and accept4: the tracer rewrites an AF_UNIX path name the kernel
 * reports of the peer (sock_name), so both stop twice. On a socket of
 * another family (its own name asked first, through the trampoline), the
 * library makes accept4 itself through the trampoline, with the caller's
 * buffers: the kernel's answer, errors included. An AF_UNIX socket, any
 * error of that first ask, and every call while the library is off go to
 * libc's. Both are cancellation points, here as there; an EMFILE that shed
 * turns into free numbers makes the call once more. */
static long accept_here(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	struct sockaddr_storage ss;
	socklen_t n = sizeof ss;
	cancel_entry(1);
	if (!sock_ok() || tr(SYS_getsockname, fd, (long)&ss, (long)&n, 0, 0, 0) != 0 || ss.ss_family == AF_UNIX) {
		wipe(&ss, sizeof ss);
		count(F_SOCKET, W_FLAGS);
		return FP_DEFER;
	}
	count(F_SOCKET, W_ANSWERED);
	long r = cancel_sys(1, 0, SYS_accept4, fd, (long)addr, (long)len, flags);
	if (r == -EMFILE && shed())
		r = cancel_sys(1, 0, SYS_accept4, fd, (long)addr, (long)len, flags);
	return r;
}
EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	long r = accept_here(fd, addr, len, flags);
	if (r != FP_DEFER)
		return (int)fp_ret(r);
	if (!LIBC(real_accept4, "accept4")) {
		errno = ENOSYS;
		return -1;
	}
	int k = real_accept4(fd, addr, len, flags);
	if (k < 0 && errno == EMFILE && shed())
		k = real_accept4(fd, addr, len, flags);
	return k;
}
EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	long r = accept_here(fd, addr, len, 0);
	if (r != FP_DEFER)
		return (int)fp_ret(r);
	if (!LIBC(real_accept, "accept")) {
		errno = ENOSYS;
		return -1;
	}
	int k = real_accept(fd, addr, len);
	if (k < 0 && errno == EMFILE && shed())
		k = real_accept(fd, addr, len);
	return k;
}

/* fd_makers_init finds the functions above (the constructor). */
static void fd_makers_init(void)
{
	real_socket = libc_lookup("socket");
	real_socketpair = libc_lookup("socketpair");
	real_accept = libc_lookup("accept");
	real_accept4 = libc_lookup("accept4");
	real_pipe = libc_lookup("pipe");
	real_pipe2 = libc_lookup("pipe2");
	real_eventfd = libc_lookup("eventfd");
	real_signalfd = libc_lookup("signalfd");
	real_timerfd_create = libc_lookup("timerfd_create");
	real_epoll_create = libc_lookup("epoll_create");
	real_epoll_create1 = libc_lookup("epoll_create1");
	real_inotify_init = libc_lookup("inotify_init");
	real_inotify_init1 = libc_lookup("inotify_init1");
	real_fcntl = libc_lookup("fcntl");
}

/* mmap and munmap: shared file mappings are tracked while the futex_waitv
 * emulation is on (a word's key is its file's). */
EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	long r = raw6(SYS_mmap, (long)addr, (long)len, prot, flags, fd, off);
	if (r < 0 && r > -4096) {
		errno = (int)-r;
		return MAP_FAILED;
	}
	if (fw_reg)
		fw_note_mmap((uint64_t)r, len, flags, fd, (uint64_t)off);
	return (void *)r;
}
EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off) __attribute__((alias("mmap")));

EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	void *want = (flags & MREMAP_FIXED) ? va_arg(ap, void *) : NULL;
	va_end(ap);
	long r = raw6(SYS_mremap, (long)old, (long)old_len, (long)new_len, flags, (long)want, 0);
	if (r < 0 && r > -4096) {
		errno = (int)-r;
		return MAP_FAILED;
	}
	if (fw_reg)
		fw_note_mremap((uint64_t)old, old_len, (uint64_t)r, new_len);
	return (void *)r;
}

EXPORT int munmap(void *addr, size_t len)
{
	long r = raw6(SYS_munmap, (long)addr, (long)len, 0, 0, 0, 0);
	if (r == 0 && fw_reg)
		fw_note_munmap((uint64_t)addr, len);
	return (int)fp_ret(r);
}

/* ---- fopen and opendir: opened here, wrapped by libc ---- */

/* glibc_version is the running glibc's version as major * 100 + minor
 * (2.36: 236), read once. */
static int glibc_ver = -1;
static int glibc_version(void)
{
	int g = __atomic_load_n(&glibc_ver, __ATOMIC_RELAXED);
	if (g < 0) {
		const char *v = gnu_get_libc_version();
		unsigned major = 0, minor = 0;
		while (*v >= '0' && *v <= '9')
			major = major * 10 + (unsigned)(*v++ - '0');
		if (*v == '.')
			for (v++; *v >= '0' && *v <= '9'; v++)
				minor = minor * 10 + (unsigned)(*v - '0');
		g = (int)(major * 100 + (minor < 100 ? minor : 99));
		__atomic_store_n(&glibc_ver, g, __ATOMIC_RELAXED);
	}
	return g;
}

/* fstat_stops tells whether libc's own fstat of a descriptor (stdio's
 * buffer, opendir's and fdopendir's check), which the library cannot wrap,
 * stops in the tracer: droidroot traps fstat for -0/-i's owner fix-up and
 * -l's link data, and glibc 2.33 to 2.38 make fstat as newfstatat(fd, "",
 * AT_EMPTY_PATH), which the filter traps for its path. */
static int fstat_stops(void)
{
	if (cfg.flags & (DR_FP_OWNER | DR_FP_L2S))
		return 1;
	int g = glibc_version();
	return g >= 233 && g <= 238;
}

/* libc_lookup returns the address of libc.so.6's default definition of
 * name, found in its dynamic symbol table (DT_GNU_HASH), or NULL. libc's
 * tables are found once (one dl_iterate_phdr: the constructor makes some 25
 * lookups, each of which walked the link map and libc's dynamic section)
 * and kept in libc_tab, published by libc_tab_state: 0 not yet, 1 being
 * written by the thread that claimed it, 2 ready. A thread that finds them
 * being written finds its own copy. */
struct libc_tables {
	uintptr_t base;
	const ElfW(Sym) *symtab;
	const char *strtab;
	const uint32_t *gh;
	const ElfW(Half) *versym;
};
static struct libc_tables libc_tab;
static int libc_tab_state;

static uint32_t gnu_hash(const char *s)
{
	uint32_t h = 5381;
	for (; *s; s++)
		h = h * 33 + (unsigned char)*s;
	return h;
}

static int tables_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	struct libc_tables *t = data;
	const char *n = info->dlpi_name;
	size_t len = n ? fp_strlen(n) : 0;
	if (len < 9 || !fp_memeq(n + len - 9, "libc.so.6", 9) || (len > 9 && n[len - 10] != '/'))
		return 0;
	const ElfW(Dyn) *dyn = NULL;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const void *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	if (!dyn)
		return 1;
	t->base = info->dlpi_addr;
	for (; dyn->d_tag != DT_NULL; dyn++) {
		uintptr_t v = dyn->d_un.d_ptr;
		if (v < info->dlpi_addr)
			v += info->dlpi_addr; /* not relocated in place */
		switch (dyn->d_tag) {
		case DT_SYMTAB: t->symtab = (const void *)v; break;
		case DT_STRTAB: t->strtab = (const void *)v; break;
		case DT_GNU_HASH: t->gh = (const void *)v; break;
		case DT_VERSYM: t->versym = (const void *)v; break;
		}
	}
	return 1;
}

/* gnu_lookup finds name's default definition in tables t, or NULL. */
static void *gnu_lookup(const struct libc_tables *t, const char *name)
{
	if (!t->symtab || !t->strtab || !t->gh)
		return NULL;
	const uint32_t *gh = t->gh;
	uint32_t nbuckets = gh[0], symoffset = gh[1], bloom_size = gh[2];
	const uint32_t *buckets = gh + 4 + bloom_size * (sizeof(ElfW(Addr)) / 4);
	const uint32_t *chain = buckets + nbuckets;
	uint32_t h = gnu_hash(name);
	uint32_t i = buckets[h % nbuckets];
	if (i < symoffset)
		return NULL;
	size_t nl = fp_strlen(name);
	for (;; i++) {
		uint32_t ch = chain[i - symoffset];
		const ElfW(Sym) *sym = &t->symtab[i];
		if ((ch | 1) == (h | 1) && sym->st_shndx != SHN_UNDEF && (!t->versym || !(t->versym[i] & 0x8000)) &&
		    fp_memeq(t->strtab + sym->st_name, name, nl + 1))
			return (void *)(t->base + sym->st_value);
		if (ch & 1)
			return NULL;
	}
}

static void *libc_lookup(const char *name)
{
	if (__atomic_load_n(&libc_tab_state, __ATOMIC_ACQUIRE) == 2)
		return gnu_lookup(&libc_tab, name);
	struct libc_tables t = {0};
	dl_iterate_phdr(tables_cb, &t);
	int zero = 0;
	if (t.gh && __atomic_compare_exchange_n(&libc_tab_state, &zero, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
		libc_tab = t;
		__atomic_store_n(&libc_tab_state, 2, __ATOMIC_RELEASE);
	}
	return gnu_lookup(&t, name);
}

/* fopen_flags turns fopen's mode into open flags; it fails (-1) for a mode
 * the library leaves to libc (",ccs=" and anything it does not know). */
static int fopen_flags(const char *mode)
{
	int fl;
	switch (mode[0]) {
	case 'r': fl = O_RDONLY; break;
	case 'w': fl = O_WRONLY | O_CREAT | O_TRUNC; break;
	case 'a': fl = O_WRONLY | O_CREAT | O_APPEND; break;
	default: return -1;
	}
	for (const char *m = mode + 1; *m; m++) {
		switch (*m) {
		case '+': fl = (fl & ~O_ACCMODE) | O_RDWR; break;
		case 'x': fl |= O_EXCL; break;
		case 'e': fl |= O_CLOEXEC; break;
		case 'b': case 't': case 'm': case 'c': break;
		default: return -1;
		}
	}
	return fl;
}

/* ---- stdio buffers ----
 *
 * glibc gives a stream its buffer at the first read or write
 * (_IO_file_doallocate): an fstat of the descriptor, for st_blksize and
 * whether it is a terminal, that the library cannot wrap. Where that fstat
 * is a stop (fstat_stops), the library's fopen gives the stream the buffer
 * glibc would have (st_blksize bytes where that is below BUFSIZ, else
 * BUFSIZ, from malloc) at once, with setvbuf, from its own fstat through
 * the trampoline; a character device (a terminal: glibc makes it line
 * buffered) keeps glibc's way. A buffer given with setvbuf is the
 * caller's to free, so the library keeps it in a table (the stream's
 * address -> the buffer) and its fclose frees it after libc's. A stream
 * closed some other way (fcloseall, or libc's fclose called directly)
 * leaves its entry behind: the buffer is freed when a stream at the same
 * address is made or closed here (libc no longer uses it by then). */
#define SB_SLOTS 256
#define SB_PROBE 16
static struct sbuf {
	FILE *f;
	void *buf;
} sbufs[SB_SLOTS];

static unsigned sbuf_hash(FILE *f)
{
	return (unsigned)((((uintptr_t)f >> 4) * 2654435761u) >> 8) % SB_SLOTS;
}

/* sbuf_take removes f's entry and returns its buffer (NULL: none). */
static void *sbuf_take(FILE *f)
{
	unsigned h = sbuf_hash(f);
	for (unsigned i = 0; i < SB_PROBE; i++) {
		struct sbuf *e = &sbufs[(h + i) % SB_SLOTS];
		if (__atomic_load_n(&e->f, __ATOMIC_ACQUIRE) == f) {
			void *b = e->buf;
			e->buf = NULL;
			__atomic_store_n(&e->f, NULL, __ATOMIC_RELEASE);
			return b;
		}
	}
	return NULL;
}

/* sbuf_put records buf as f's; 0 when the table has no room. */
static int sbuf_put(FILE *f, void *buf)
{
	unsigned h = sbuf_hash(f);
	for (unsigned i = 0; i < SB_PROBE; i++) {
		struct sbuf *e = &sbufs[(h + i) % SB_SLOTS];
		FILE *none = NULL;
		if (__atomic_compare_exchange_n(&e->f, &none, f, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			e->buf = buf;
			return 1;
		}
	}
	return 0;
}

/* stdio_buffer gives stream f (on descriptor fd) its buffer, counted under
 * fn: F_STDIO for fopen's streams, F_FDOPEN for fdopen's. */
static void stdio_buffer(FILE *f, int fd, enum fp_fn fn)
{
	if (!fstat_stops() || !cfg.tramp)
		return;
	void *stale = sbuf_take(f); /* a stream at this address closed unseen */
	if (stale)
		free(stale);
	struct stat st;
	if (tr(SYS_fstat, fd, (long)&st, 0, 0, 0, 0) < 0 || S_ISCHR(st.st_mode)) {
		count(fn, W_FLAGS);
		return;
	}
	size_t size = st.st_blksize > 0 && st.st_blksize < BUFSIZ ? (size_t)st.st_blksize : BUFSIZ;
	int e = errno;
	void *buf = malloc(size);
	if (!buf || !sbuf_put(f, buf)) {
		free(buf);
		errno = e;
		count(fn, W_LONG);
		return;
	}
	if (setvbuf(f, buf, _IOFBF, size) != 0) {
		sbuf_take(f);
		free(buf);
		count(fn, W_ERRNO);
	} else {
		/* setvbuf points the read and write positions into the buffer,
		 * which a stream gets only at its first read or write: a fresh
		 * "r+" stream would then read as reading (__freading). Back to
		 * a fresh stream's, as glibc's own allocation leaves them
		 * (_IO_doallocbuf sets the buffer alone). */
		f->_IO_read_base = f->_IO_read_ptr = f->_IO_read_end = NULL;
		f->_IO_write_base = f->_IO_write_ptr = f->_IO_write_end = NULL;
		count(fn, W_ANSWERED);
	}
	errno = e;
}

EXPORT FILE *fopen(const char *path, const char *mode)
{
	int fl = (uintptr_t)mode < 65536 ? -1 : fopen_flags(mode);
	if (fl < 0 || !__atomic_load_n(&fp_enabled, __ATOMIC_ACQUIRE)) {
		if (LIBC(real_fopen, "fopen")) /* before our constructor ran */
			return real_fopen(path, mode);
		errno = EINVAL;
		return NULL;
	}
	int cp = 1; /* glibc's fopen is a cancellation point but with "c" */
	for (const char *m = mode; *m; m++)
		cp &= *m != 'c';
	long fd = fp_ret(fp_openat(AT_FDCWD, path, fl, 0666, cp));
	if (fd < 0)
		return NULL;
	FILE *f = LIBC(real_fdopen, "fdopen") ? real_fdopen((int)fd, mode) : (errno = ENOSYS, NULL);
	if (!f) {
		int e = errno;
		raw6(SYS_close, fd, 0, 0, 0, 0, 0);
		errno = e;
	} else {
		stdio_buffer(f, (int)fd, F_STDIO);
	}
	return f;
}
EXPORT FILE *fopen64(const char *path, const char *mode) __attribute__((alias("fopen")));

/* fdopen: libc's, and then the stream's buffer given as fopen's is, for a
 * program's own descriptor (git writes its lock files through fdopen): the
 * fstat glibc would make at the first read or write is made now, on the
 * descriptor the stream was made for. */
EXPORT FILE *fdopen(int fd, const char *mode)
{
	if (!LIBC(real_fdopen, "fdopen")) {
		errno = ENOSYS;
		return NULL;
	}
	FILE *f = real_fdopen(fd, mode);
	if (f && __atomic_load_n(&fp_enabled, __ATOMIC_ACQUIRE))
		stdio_buffer(f, fd, F_FDOPEN);
	return f;
}

/* fclose: libc's, and then the buffer stdio_buffer gave the stream freed
 * (taken from the table first: once libc's fclose has freed the stream,
 * another thread's fopen may have the same address). */
static FP_HOT int (*real_fclose)(FILE *);
EXPORT int fclose(FILE *f)
{
	void *buf = sbuf_take(f);
	int r = LIBC(real_fclose, "fclose") ? real_fclose(f) : (errno = ENOSYS, EOF);
	if (buf) {
		int e = errno;
		free(buf);
		errno = e;
	}
	return r;
}

/* Listings of this process's descriptors: opendir of /dev/fd or of fd or
 * fdinfo in /proc/self, /proc/thread-self or /proc/<its pid>, or in a task
 * directory below one (a slash at the end or not), whose readdir leaves out the library's own descriptors
 * (hidden_fd). FD_DIRS of them open at once are kept; more are shown whole. */
#define FD_DIRS 8
static DIR *fd_dirs[FD_DIRS];

static int fd_listing(const char *path)
{
	char buf[48], pid[24];
	size_t n = fp_strlen(path);
	while (n > 1 && path[n - 1] == '/')
		n--;
	if (n >= sizeof buf)
		return 0;
	fp_memcpy(buf, path, n);
	buf[n] = 0;
	if (fp_memeq(buf, "/dev/fd", 8))
		return 1;
	if (!fp_memeq(buf, "/proc/", 6))
		return 0;
	const char *p = buf + 6, *q = p;
	while (*q && *q != '/')
		q++;
	*put_num(pid, (unsigned long)raw6(SYS_getpid, 0, 0, 0, 0, 0, 0)) = 0;
	size_t k = (size_t)(q - p);
	if (!(k == 4 && fp_memeq(p, "self", 4)) && !(k == 11 && fp_memeq(p, "thread-self", 11)) &&
	    !(k == fp_strlen(pid) && fp_memeq(p, pid, k)))
		return 0;
	if (fp_memeq(q, "/task/", 6)) { /* a thread's, as /proc/self/fd names thread-self's */
		q += 6;
		if (*q < '0' || *q > '9')
			return 0;
		while (*q >= '0' && *q <= '9')
			q++;
	}
	return fp_memeq(q, "/fd", 4) || fp_memeq(q, "/fdinfo", 8);
}

/* fd_dirs_swap makes the entry that is old (NULL: a free one) new. */
static void fd_dirs_swap(DIR *old, DIR *new)
{
	for (int i = 0; i < FD_DIRS; i++) {
		DIR *o = old;
		if (__atomic_compare_exchange_n(&fd_dirs[i], &o, new, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
			return;
	}
}

static int fd_dirs_has(DIR *d)
{
	for (int i = 0; i < FD_DIRS; i++)
		if (__atomic_load_n(&fd_dirs[i], __ATOMIC_ACQUIRE) == d)
			return d != NULL;
	return 0;
}

/* hidden_name: an entry of a descriptor listing that names one of the
 * library's own descriptors. */
static int hidden_name(const char *name)
{
	long fd = 0;
	if (!*name)
		return 0;
	for (; *name; name++) {
		if (*name < '0' || *name > '9' || fd > 100000)
			return 0;
		fd = fd * 10 + (*name - '0');
	}
	return hidden_fd(fd);
}

/* fd_listing_fd tells whether directory descriptor fd lists this process's
 * descriptors (fd_listing of the name /proc/self/fd gives it: what fdopendir
 * of such a descriptor, fts's way, lists). */
static int fd_listing_fd(int fd)
{
	char buf[FP_HOST_MAX];
	size_t n = fd_link(fd, buf);
	if (n == 0)
		return 0;
	buf[n] = 0;
	return fd_listing(buf);
}

/* ---- directory streams (DR_FP_DIRS) ----
 *
 * glibc's opendir and fdopendir make an fstat of the descriptor that the
 * library cannot wrap, a stop wherever fstat_stops says so; under -l the
 * tracer also traps getdents64, to leave the link data out of listings and
 * to show a name of an emulated hard link as its data file
 * (emul/getdents.go): every listing cost one to three stops. There the
 * library's own directory streams are made instead (the fstat through the
 * trampoline) and read in-process: a batch is read through the trampoline,
 * and under -l the tracer is needed only where a symlink in it names link
 * data (its readlink, in-process, ends in a ".l2s." data name): the library
 * then seeks back to the batch's start and reads it through the trapped
 * call, which the tracer filters as before. The data names themselves
 * (".l2s.*", ".l2s") are left out under -l, as the tracer does. Everything
 * else is glibc's readdir: deleted entries (inode 0) skipped, the telldir
 * position the last entry's d_off, ENOENT of a removed directory the end,
 * the buffer st_blksize bounded to 32 KiB-1 MiB, fdopendir's checks and
 * FD_CLOEXEC. Not under -H (no DR_FP_DIRS), whose hiding is the tracer's.
 * A stream is the library's while the first word is FPD_MAGIC (no
 * descriptor number reaches it); any other DIR is libc's. */
#define FPD_MAGIC 0x44504644u
struct fp_dir {
	uint32_t magic;
	int fd;
	int lock;
	int listing; /* lists this process's descriptors: 1 yes, -1 no, 0 not known yet */
	int errcode; /* readdir_r's */
	size_t alloc, size, pos;
	long filepos;
	char buf[] __attribute__((aligned(8)));
};

static FP_HOT DIR *(*real_fdopendir)(int);
static FP_HOT struct dirent *(*real_readdir)(DIR *);
static FP_HOT int (*real_closedir)(DIR *);

static int dirs_on(void)
{
	return (cfg.flags & DR_FP_DIRS) && fstat_stops() && cfg.tramp && __atomic_load_n(&fp_enabled, __ATOMIC_ACQUIRE);
}

static struct fp_dir *our_dir(DIR *d)
{
	struct fp_dir *f = (struct fp_dir *)d;
	return f && f->magic == FPD_MAGIC ? f : NULL;
}

static void dir_lock(struct fp_dir *d)
{
	while (__atomic_exchange_n(&d->lock, 1, __ATOMIC_ACQUIRE))
		raw6(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
}
static void dir_unlock(struct fp_dir *d) { __atomic_store_n(&d->lock, 0, __ATOMIC_RELEASE); }

/* dir_alloc makes a stream of directory descriptor fd (glibc's
 * __alloc_dir); close_fd: opendir's own descriptor, closed on failure. */
static DIR *dir_alloc(int fd, int close_fd, const struct stat *st)
{
	long r = close_fd ? 0 : raw6(SYS_fcntl, fd, F_SETFD, FD_CLOEXEC, 0, 0, 0);
	if (r < 0) {
		errno = (int)-r;
		return NULL;
	}
	size_t alloc = (size_t)st->st_blksize;
	if (alloc < 32768)
		alloc = 32768;
	if (alloc > 1048576)
		alloc = 1048576;
	struct fp_dir *d = malloc(sizeof *d + alloc);
	if (!d) {
		alloc = 32768;
		d = malloc(sizeof *d + alloc);
	}
	if (!d) {
		if (close_fd)
			raw6(SYS_close, fd, 0, 0, 0, 0, 0);
		errno = ENOMEM;
		return NULL;
	}
	d->magic = FPD_MAGIC;
	d->fd = fd;
	d->lock = 0;
	d->listing = 0;
	d->errcode = 0;
	d->alloc = alloc;
	d->size = d->pos = 0;
	d->filepos = 0;
	return (DIR *)d;
}

/* dir_open makes a stream of fd as fdopendir (close_fd 0) or opendir
 * (close_fd 1: fd is its own, closed on failure) does. */
static DIR *dir_open(int fd, int close_fd)
{
	struct stat st;
	long r = tr(SYS_fstat, fd, (long)&st, 0, 0, 0, 0);
	if (r == 0 && !S_ISDIR(st.st_mode))
		r = -ENOTDIR;
	if (r == 0 && !close_fd) {
		long fl = raw6(SYS_fcntl, fd, F_GETFL, 0, 0, 0, 0);
		r = fl < 0 ? fl : (fl & O_ACCMODE) == O_WRONLY ? -EINVAL : 0;
	}
	if (r < 0) {
		if (close_fd)
			raw6(SYS_close, fd, 0, 0, 0, 0, 0);
		errno = (int)-r;
		return NULL;
	}
	return dir_alloc(fd, close_fd, &st);
}

/* l2s_batch_clean tells whether getdents64 batch b (n bytes) of directory
 * fd has no symlink that names link data (a readlink ending in a data
 * name: the tracer would show its data file there). */
static int l2s_batch_clean(int fd, const char *b, long n)
{
	for (long off = 0; off + 19 < n;) {
		const struct dirent64 *e = (const void *)(b + off);
		if (e->d_reclen < 19 || off + e->d_reclen > n)
			return 0;
		off += e->d_reclen;
		if (e->d_type != DT_LNK)
			continue;
		char t[FP_HOST_MAX];
		long k = tr(SYS_readlinkat, fd, (long)e->d_name, (long)t, sizeof t, 0, 0);
		if (k < 0)
			continue; /* the tracer's readlink fails as well (or the name is gone) */
		if (k >= (long)sizeof t)
			return 0; /* longer than the library reads: the tracer's */
		if (names_l2s_data(t, k))
			return 0;
	}
	return 1;
}

/* dir_fill reads d's next batch: in-process where the batch is clean,
 * else (and while the library is off) through the trapped call. */
static long dir_fill(struct fp_dir *d)
{
	/* Under -l, where the batch's start cannot be known (a directory that
	 * does not seek), it could not be read again: the tracer reads it.
	 * Without -l getdents64 is not trapped and there is nothing to filter. */
	int on = dirs_on(), l2s = cfg.flags & DR_FP_L2S;
	long at = on && l2s ? raw6(SYS_lseek, d->fd, 0, SEEK_CUR, 0, 0, 0) : 0;
	if (!on || at < 0) {
		count(F_READDIR, W_OFF);
		return raw6(SYS_getdents64, d->fd, (long)d->buf, (long)d->alloc, 0, 0, 0);
	}
	long n = tr(SYS_getdents64, d->fd, (long)d->buf, (long)d->alloc, 0, 0, 0);
	if (n <= 0 || !l2s || l2s_batch_clean(d->fd, d->buf, n)) {
		count(F_READDIR, W_ANSWERED);
		return n;
	}
	count(F_READDIR, W_SYMLINK);
	if (raw6(SYS_lseek, d->fd, at, SEEK_SET, 0, 0, 0) != at)
		return -EIO;
	return raw6(SYS_getdents64, d->fd, (long)d->buf, (long)d->alloc, 0, 0, 0);
}

/* dir_hidden: an entry the tracer leaves out (link data) or, in a
 * listing of this process's descriptors, one of the library's. */
static int dir_hidden(struct fp_dir *d, const char *name)
{
	if ((cfg.flags & DR_FP_L2S) && (fp_memeq(name, ".l2s.", 5) || fp_memeq(name, ".l2s", 5)))
		return 1;
	if (!hidden_name(name))
		return 0;
	if (!d->listing) {
		int err = errno;
		d->listing = dirs_on() && fd_listing_fd(d->fd) ? 1 : -1;
		errno = err;
	}
	return d->listing > 0;
}

/* dir_next is glibc's __readdir_unlocked for stream d: the next entry, or
 * NULL at the end (errno as it was) or on an error (errno set, and kept
 * for readdir_r). With r, an entry whose name is too long for a struct
 * dirent is skipped (ENAMETOOLONG for readdir_r). */
static struct dirent *dir_next(struct fp_dir *d, int r)
{
	int saved = errno;
	for (;;) {
		if (d->pos >= d->size) {
			long n = dir_fill(d);
			if (n <= 0) {
				if (n == -ENOENT || n == 0) {
					errno = saved;
				} else {
					errno = (int)-n;
					d->errcode = (int)-n;
				}
				return NULL;
			}
			d->size = (size_t)n;
			d->pos = 0;
		}
		struct dirent *e = (struct dirent *)(d->buf + d->pos);
		d->pos += e->d_reclen;
		d->filepos = e->d_off;
		if (e->d_ino == 0 || dir_hidden(d, e->d_name))
			continue;
		if (r && e->d_reclen > offsetof(struct dirent, d_name) + 256 && fp_strlen(e->d_name) > 255) {
			d->errcode = ENAMETOOLONG;
			continue;
		}
		return e;
	}
}

/* libc_fdopendir is libc's fdopendir (ENOSYS without one). */
static DIR *libc_fdopendir(int fd)
{
	if (!LIBC(real_fdopendir, "fdopendir")) {
		errno = ENOSYS;
		return NULL;
	}
	return real_fdopendir(fd);
}

EXPORT DIR *fdopendir(int fd) { return dirs_on() ? dir_open(fd, 0) : libc_fdopendir(fd); }

EXPORT DIR *opendir(const char *path)
{
	if ((uintptr_t)path >= 65536 && !path[0]) {
		errno = ENOENT; /* as glibc's opendir */
		return NULL;
	}
	long fd = fp_ret(fp_openat(AT_FDCWD, path, O_RDONLY | O_NONBLOCK | O_DIRECTORY | O_CLOEXEC, 0, 0));
	if (fd < 0)
		return NULL;
	if (dirs_on()) {
		DIR *d = dir_open((int)fd, 1);
		if (d && fd_listing(path))
			our_dir(d)->listing = 1;
		return d;
	}
	DIR *d = libc_fdopendir((int)fd);
	if (!d) {
		int e = errno;
		raw6(SYS_close, fd, 0, 0, 0, 0, 0);
		errno = e;
	} else if (fd_listing(path)) {
		fd_dirs_swap(NULL, d);
	}
	return d;
}

/* readdir and readdir64 (one function on 64-bit glibc): the library's
 * streams (above); libc's, without the library's own descriptors in a
 * listing of this process's descriptors. */
EXPORT struct dirent *readdir(DIR *dir)
{
	struct fp_dir *f = our_dir(dir);
	if (f) {
		dir_lock(f);
		struct dirent *e = dir_next(f, 0);
		dir_unlock(f);
		return e;
	}
	if (!LIBC(real_readdir, "readdir")) {
		errno = ENOSYS;
		return NULL;
	}
	struct dirent *e;
	int mine = fd_dirs_has(dir);
	for (;;) {
		e = real_readdir(dir);
		if (!e || !hidden_name(e->d_name))
			return e;
		if (!mine) {
			/* A listing the library did not open (fdopendir: fts,
			 * python's listdir of a descriptor) shows itself at the
			 * first of the library's numbers it lists. */
			int err = errno;
			mine = __atomic_load_n(&fp_enabled, __ATOMIC_ACQUIRE) && cfg.tramp && fd_listing_fd(dirfd(dir));
			errno = err;
			if (!mine)
				return e;
			fd_dirs_swap(NULL, dir);
		}
	}
}
EXPORT struct dirent64 *readdir64(DIR *d) __attribute__((alias("readdir")));

/* readdir_r, deprecated, still exported: glibc's for libc's streams. */
static FP_HOT int (*real_readdir_r)(DIR *, struct dirent *, struct dirent **);
EXPORT int readdir_r(DIR *dir, struct dirent *entry, struct dirent **result)
{
	struct fp_dir *f = our_dir(dir);
	if (!f) {
		return LIBC(real_readdir_r, "readdir_r") ? real_readdir_r(dir, entry, result) : ENOSYS;
	}
	dir_lock(f);
	struct dirent *e = dir_next(f, 1);
	int ret = 0;
	if (e) {
		size_t len = e->d_reclen;
		if (len > offsetof(struct dirent, d_name) + 256)
			len = offsetof(struct dirent, d_name) + fp_strlen(e->d_name) + 1;
		fp_memcpy((char *)entry, (const char *)e, len);
		entry->d_reclen = (unsigned short)len;
		*result = entry;
	} else {
		*result = NULL;
		ret = f->errcode;
	}
	dir_unlock(f);
	return ret;
}
EXPORT int readdir64_r(DIR *d, struct dirent64 *e, struct dirent64 **r) __attribute__((alias("readdir_r")));

static FP_HOT int (*real_dirfd)(DIR *);
EXPORT int dirfd(DIR *dir)
{
	struct fp_dir *f = our_dir(dir);
	if (f)
		return f->fd;
	if (!LIBC(real_dirfd, "dirfd")) {
		errno = ENOSYS;
		return -1;
	}
	return real_dirfd(dir);
}

/* dir_seek moves stream d (locked) to position pos: the kernel's offset,
 * an empty buffer, telldir's answer. */
static void dir_seek(struct fp_dir *d, long pos)
{
	raw6(SYS_lseek, d->fd, pos, SEEK_SET, 0, 0, 0);
	d->pos = d->size = 0;
	d->filepos = pos;
}

static FP_HOT void (*real_rewinddir)(DIR *);
EXPORT void rewinddir(DIR *dir)
{
	struct fp_dir *f = our_dir(dir);
	if (!f) {
		if (LIBC(real_rewinddir, "rewinddir"))
			real_rewinddir(dir);
		return;
	}
	dir_lock(f);
	dir_seek(f, 0);
	f->errcode = 0;
	dir_unlock(f);
}

static FP_HOT void (*real_seekdir)(DIR *, long);
EXPORT void seekdir(DIR *dir, long pos)
{
	struct fp_dir *f = our_dir(dir);
	if (!f) {
		if (LIBC(real_seekdir, "seekdir"))
			real_seekdir(dir, pos);
		return;
	}
	dir_lock(f);
	dir_seek(f, pos);
	dir_unlock(f);
}

static FP_HOT long (*real_telldir)(DIR *);
EXPORT long telldir(DIR *dir)
{
	struct fp_dir *f = our_dir(dir);
	if (!f) {
		if (!LIBC(real_telldir, "telldir")) {
			errno = ENOSYS;
			return -1;
		}
		return real_telldir(dir);
	}
	dir_lock(f);
	long pos = f->filepos;
	dir_unlock(f);
	return pos;
}

/* scandir and scandir64 (one function on 64-bit glibc): libc's, but a
 * listing of this process's descriptors, or any under DR_FP_DIRS, is read
 * through opendir and readdir above (libc's scandir reads with its
 * internal readdir, which the library cannot wrap). */
typedef int (*scan_sel)(const struct dirent *);
typedef int (*scan_cmp)(const struct dirent **, const struct dirent **);
static FP_HOT int (*real_scandir)(const char *, struct dirent ***, scan_sel, scan_cmp);
EXPORT int scandir(const char *path, struct dirent ***list, scan_sel sel, scan_cmp cmp)
{
	if ((uintptr_t)path < 65536 || (!dirs_on() && !fd_listing(path))) {
		if (!LIBC(real_scandir, "scandir")) {
			errno = ENOSYS;
			return -1;
		}
		return real_scandir(path, list, sel, cmp);
	}
	DIR *d = opendir(path);
	if (!d)
		return -1;
	int saved = errno;
	struct dirent **v = NULL, *e;
	size_t n = 0, cap = 0;
	for (;;) {
		errno = 0;
		if (!(e = readdir(d)))
			break;
		if (sel && !sel(e))
			continue;
		size_t size = offsetof(struct dirent, d_name) + fp_strlen(e->d_name) + 1;
		struct dirent *c = malloc(size < sizeof *c ? sizeof *c : size);
		if (c && n == cap) {
			struct dirent **w = realloc(v, (cap = cap ? 2 * cap : 16) * sizeof *v);
			if (!w) {
				free(c);
				c = NULL;
			} else {
				v = w;
			}
		}
		if (!c) {
			errno = ENOMEM;
			break;
		}
		fp_memcpy((char *)c, (const char *)e, size);
		v[n++] = c;
	}
	int err = errno;
	closedir(d);
	if (err) {
		while (n)
			free(v[--n]);
		free(v);
		errno = err;
		return -1;
	}
	if (cmp && n > 1)
		qsort(v, n, sizeof *v, (int (*)(const void *, const void *))cmp);
	*list = v;
	errno = saved;
	return (int)n;
}
EXPORT int scandir64(const char *path, struct dirent64 ***list, int (*sel)(const struct dirent64 *),
		     int (*cmp)(const struct dirent64 **, const struct dirent64 **)) __attribute__((alias("scandir")));

EXPORT int closedir(DIR *dir)
{
	struct fp_dir *f = our_dir(dir);
	if (f) {
		int fd = f->fd;
		f->magic = 0;
		free(f);
		return (int)fp_ret(raw6(SYS_close, fd, 0, 0, 0, 0, 0));
	}
	if (fd_dirs_has(dir))
		fd_dirs_swap(dir, NULL);
	if (!LIBC(real_closedir, "closedir")) {
		errno = ENOSYS;
		return -1;
	}
	return real_closedir(dir);
}

/* ---- realpath ----
 *
 * glibc's realpath reads each component with its internal readlink, which
 * no preloaded library sees: a path of n components was n stops (wineserver
 * resolves every file it opens: 3150 stops of one "wine cmd /c echo"). The
 * library runs glibc's own algorithm (2.33 and later, stdlib/canonicalize.c:
 * readlink of each component, symlinks spliced into the rest, 40 at most, a
 * faccessat of "dir/" where a trailing "/", "/." or "/.." asks for a
 * directory, the partial result in the caller's buffer for ENOENT and
 * EACCES) on the library's readlink, getcwd and faccessat, each answered
 * in-process or by the tracer as always: the result is the composition
 * glibc would make of the same answers. Older glibc (another algorithm),
 * the library off, and names longer than its buffers are libc's own. */
#define RP_MAX 8192
static FP_HOT char *(*real_realpath)(const char *, char *);
static FP_HOT char *(*real_realpath_chk)(const char *, char *, size_t);
static int rp_on(void)
{
	return glibc_version() >= 233 && cfg.tramp && __atomic_load_n(&fp_enabled, __ATOMIC_ACQUIRE);
}

/* rp_suffix_dir: END (empty or starting with a slash) asks for a
 * directory: a trailing "/", or "/." or "/.." anywhere. */
static int rp_suffix_dir(const char *end)
{
	while (*end == '/') {
		do
			end++;
		while (*end == '/');
		switch (*end++) {
		default:
			return 0;
		case '\0':
			return 1;
		case '.':
			break;
		}
		if (!*end || (*end == '.' && (!end[1] || end[1] == '/')))
			return 1;
	}
	return 0;
}

/* rp_up backs dest up to the start of the last component of rname (the
 * resolved part so far), never above the root: ".." or a relative
 * symlink's directory. */
static char *rp_up(char *rname, char *dest)
{
	if (dest > rname + 1)
		for (--dest; dest > rname && dest[-1] != '/'; --dest)
			;
	return dest;
}

/* rp_resolve is realpath_stk; *fallback is set where libc must do it
 * (a buffer too small), nothing having changed. */
static char *rp_resolve(const char *name, char *resolved, char *mem, int *fallback)
{
	char *rname = mem, *extra = mem + RP_MAX, *lbuf = mem + 2 * RP_MAX;
	char *dest;
	const char *start, *end;
	int num_links = 0, failed = 1;
	if (name[0] != '/') {
		if (!getcwd_full(rname, RP_MAX)) {
			if (errno == ERANGE) {
				*fallback = 1;
				return NULL;
			}
			dest = rname;
			goto error;
		}
		dest = rname + fp_strlen(rname);
	} else {
		dest = rname;
		*dest++ = '/';
	}
	for (start = name; *start; start = end) {
		while (*start == '/')
			++start;
		for (end = start; *end && *end != '/'; ++end)
			;
		size_t startlen = (size_t)(end - start);
		if (startlen == 0)
			break;
		if (startlen == 1 && start[0] == '.')
			continue;
		if (startlen == 2 && start[0] == '.' && start[1] == '.') {
			dest = rp_up(rname, dest);
			continue;
		}
		if (dest[-1] != '/')
			*dest++ = '/';
		if ((size_t)(rname + RP_MAX - dest) < startlen + 2) {
			*fallback = 1;
			return NULL;
		}
		fp_memcpy(dest, start, startlen);
		dest += startlen;
		*dest = '\0';
		long n = fp_ret(fp_readlinkat(AT_FDCWD, rname, lbuf, RP_MAX - 1));
		if (n >= RP_MAX - 1) {
			*fallback = 1;
			return NULL;
		}
		if (n >= 0) {
			if (++num_links > 40) {
				errno = ELOOP;
				goto error;
			}
			lbuf[n] = '\0';
			size_t len = fp_strlen(end);
			if (len + (size_t)n >= RP_MAX) {
				*fallback = 1;
				return NULL;
			}
			memmove(&extra[n], end, len + 1);
			fp_memcpy(extra, lbuf, (size_t)n);
			end = extra;
			if (lbuf[0] == '/') {
				dest = rname;
				*dest++ = '/';
			} else {
				dest = rp_up(rname, dest);
			}
		} else if (!(rp_suffix_dir(end) ? (dest[0] = '/', dest[1] = '\0', faccessat_full(AT_FDCWD, rname, F_OK, AT_EACCESS) == 0)
					   : errno == EINVAL)) {
			goto error;
		}
	}
	if (dest > rname + 1 && dest[-1] == '/')
		--dest;
	failed = 0;
error:
	*dest++ = '\0';
	if (resolved) {
		if ((!failed || errno == ENOENT || errno == EACCES) && dest - rname <= PATH_MAX) {
			fp_memcpy(resolved, rname, (size_t)(dest - rname));
			return failed ? NULL : resolved;
		}
		if (!failed)
			errno = ENAMETOOLONG;
		return NULL;
	}
	if (failed)
		return NULL;
	char *r = malloc((size_t)(dest - rname));
	if (r)
		fp_memcpy(r, rname, (size_t)(dest - rname));
	else
		errno = ENOMEM;
	return r;
}

EXPORT char *realpath(const char *name, char *resolved)
{
	if (name && name[0] && rp_on()) {
		char *mem = malloc(3 * RP_MAX);
		if (mem) {
			int fallback = 0;
			char *r = rp_resolve(name, resolved, mem, &fallback);
			int e = errno;
			free(mem);
			errno = e;
			count(F_REALPATH, fallback ? W_LONG : W_ANSWERED);
			if (!fallback)
				return r;
		}
	} else if (name && name[0]) {
		count(F_REALPATH, W_OFF);
	} else {
		errno = name ? ENOENT : EINVAL;
		return NULL;
	}
	if (!LIBC(real_realpath, "realpath")) {
		errno = ENOSYS;
		return NULL;
	}
	return real_realpath(name, resolved);
}
EXPORT char *canonicalize_file_name(const char *name) { return realpath(name, NULL); }

/* The fortified realpath (_FORTIFY_SOURCE): libc's for a buffer shorter
 * than PATH_MAX, which it refuses (__chk_fail). */
EXPORT char *__realpath_chk(const char *name, char *resolved, size_t resolvedlen)
{
	if (resolvedlen >= PATH_MAX)
		return realpath(name, resolved);
	if (!LIBC(real_realpath_chk, "__realpath_chk")) {
		errno = ENOSYS;
		return NULL;
	}
	return real_realpath_chk(name, resolved, resolvedlen);
}

/* ---- the write family ---- */


/* map_entry maps the name an entry call creates, removes or changes: the
 * last component is never followed, a bind point and the directories that
 * exist for bind points are the tracer's (EBUSY, EEXIST, its virtual
 * directories), and under -l so are link data names. */
static enum fp_why map_entry(int dirfd, const char *path, struct target *t)
{
	enum fp_why w = map_at(dirfd, path, t);
	if (w != W_ANSWERED)
		return w;
	if (t->ancestor || t->bindpoint || ((cfg.flags & DR_FP_L2S) && is_l2s_name(t->name))) {
		release(&t->parent);
		return W_OPTION;
	}
	return W_ANSWERED;
}

static long fp_mkdirat(int dirfd, const char *path, unsigned mode)
{
	/* mkdir takes a name with trailing slashes as the name (the kernel's
	 * filename_create with LOOKUP_DIRECTORY; git makes every directory so). */
	size_t tl = trimmed_len(path);
	char trimmed[tl + 1];
	struct target t;
	enum fp_why w = map_entry(dirfd, trim_slashes(path, tl, trimmed), &t);
	count(F_MKDIR, w);
	if (w != W_ANSWERED)
		return raw6(SYS_mkdirat, dirfd, (long)path, mode, 0, 0, 0);
	long r = tr(SYS_mkdirat, t.parent.fd, (long)t.name, mode, 0, 0, 0);
	release(&t.parent);
	return ids_eacces(r) ? raw6(SYS_mkdirat, dirfd, (long)path, mode, 0, 0, 0) : r;
}

/* l2s_link tells, under -l, whether name below dir (its lstat: r, st) is
 * a name of an emulated hard link: a symlink whose target names link data
 * (the tracer's l2sName), or one whose target a readlink cannot tell. The
 * tracer's unlink and rename of such a name keep the link's count; of any
 * other name they are the kernel's own calls, which the library makes
 * (rm -r of a tree, git's temporary objects: every unlink under the
 * launchers' -l was a stop). The tracer's test and the kernel's call are
 * apart there too: a link() made meanwhile by another process races both
 * alike. */
static int l2s_link(int dir, const char *name, long r, const struct stat *st)
{
	if (r != 0 || !S_ISLNK(st->st_mode))
		return 0;
	char buf[1024];
	long n = tr(SYS_readlinkat, dir, (long)name, (long)buf, sizeof buf, 0, 0);
	return n <= 0 || n >= (long)sizeof buf || names_l2s_data(buf, n);
}

/* moved tells whether a name (its lstat below its verified directory: r,
 * st) may be on a cached path's way: a directory or a symlink (or what an
 * lstat cannot tell). Removing or renaming anything else (a regular file:
 * git's objects, rm -r's files) changes no cached directory or resolution,
 * and counts no change, as the tracer's noteEntries does not for the calls
 * it sees; a name missing (a rename's new one) is none either. */
static int moved(long r, const struct stat *st)
{
	return r == 0 ? S_ISDIR(st->st_mode) || S_ISLNK(st->st_mode) : r != -ENOENT;
}

static long fp_unlinkat(int dirfd, const char *path, int flags)
{
	struct target t;
	enum fp_why w = (flags & ~AT_REMOVEDIR) ? W_FLAGS : map_entry(dirfd, path, &t);
	long r = 0;
	int moves = 1;
	if (w == W_ANSWERED) {
		struct stat st;
		long s = tr(SYS_newfstatat, t.parent.fd, (long)t.name, (long)&st, AT_SYMLINK_NOFOLLOW, 0, 0);
		if ((cfg.flags & DR_FP_L2S) && !(flags & AT_REMOVEDIR) && l2s_link(t.parent.fd, t.name, s, &st)) {
			release(&t.parent);
			w = W_OPTION;
		} else {
			moves = (flags & AT_REMOVEDIR) || moved(s, &st);
			r = tr(SYS_unlinkat, t.parent.fd, (long)t.name, flags, 0, 0, 0);
			release(&t.parent);
		}
	}
	count(F_UNLINK, w);
	if (w != W_ANSWERED || ids_eacces(r))
		r = raw6(SYS_unlinkat, dirfd, (long)path, flags, 0, 0, 0);
	if (r == 0 && moves)
		changed();
	return r;
}


/* map_second maps the second name of a rename or link, a being the first
 * (mapped, W_ANSWERED): both in the same mount, else the tracer's (EXDEV
 * across binds, whatever the host's mounts). On failure neither is held. */
static enum fp_why map_second(struct target *a, int dirfd, const char *path, struct target *b)
{
	enum fp_why w = map_entry(dirfd, path, b);
	if (w == W_ANSWERED && a->mount != b->mount) {
		release(&b->parent);
		w = W_OPTION;
	}
	if (w != W_ANSWERED)
		release(&a->parent);
	return w;
}

static long fp_renameat2(int olddirfd, const char *old, int newdirfd, const char *new, unsigned flags)
{
	struct target a, b;
	enum fp_why w = map_entry(olddirfd, old, &a);
	if (w == W_ANSWERED)
		w = map_second(&a, newdirfd, new, &b);
	long r = 0;
	int moves = 1;
	if (w == W_ANSWERED) {
		struct stat sa, sb;
		long ra = tr(SYS_newfstatat, a.parent.fd, (long)a.name, (long)&sa, AT_SYMLINK_NOFOLLOW, 0, 0);
		long rb = tr(SYS_newfstatat, b.parent.fd, (long)b.name, (long)&sb, AT_SYMLINK_NOFOLLOW, 0, 0);
		if ((cfg.flags & DR_FP_L2S) && (l2s_link(a.parent.fd, a.name, ra, &sa) || l2s_link(b.parent.fd, b.name, rb, &sb))) {
			w = W_OPTION; /* the tracer's renameHandler keeps the link's names */
		} else {
			moves = moved(ra, &sa) || moved(rb, &sb);
			r = tr(SYS_renameat2, a.parent.fd, (long)a.name, b.parent.fd, (long)b.name, flags, 0);
		}
		release(&b.parent);
		release(&a.parent);
	}
	count(F_RENAME, w);
	if (w != W_ANSWERED || ids_eacces(r))
		r = raw6(SYS_renameat2, olddirfd, (long)old, newdirfd, (long)new, flags, 0);
	if (r == 0 && moves)
		changed();
	return r;
}

static long fp_symlinkat(const char *target, int dirfd, const char *path)
{
	struct target t;
	enum fp_why w = map_entry(dirfd, path, &t);
	count(F_SYMLINK, w);
	if (w != W_ANSWERED)
		return raw6(SYS_symlinkat, (long)target, dirfd, (long)path, 0, 0, 0);
	long r = tr(SYS_symlinkat, (long)target, t.parent.fd, (long)t.name, 0, 0, 0);
	release(&t.parent);
	return ids_eacces(r) ? raw6(SYS_symlinkat, (long)target, dirfd, (long)path, 0, 0, 0) : r;
}

static long fp_linkat(int olddirfd, const char *old, int newdirfd, const char *new, int flags)
{
	struct target a, b;
	/* AT_SYMLINK_FOLLOW follows the old name's last component: the
	 * tracer's, which pins it (as pin_last does). */
	enum fp_why w = (cfg.flags & DR_FP_NOLINK) ? W_OPTION : flags ? W_FLAGS : map_entry(olddirfd, old, &a);
	if (w == W_ANSWERED)
		w = map_second(&a, newdirfd, new, &b);
	long r = 0;
	int held = w == W_ANSWERED;
	if (w == W_ANSWERED && (cfg.flags & DR_FP_L2S)) {
		/* -l: the tracer links a name of an emulated hard link itself
		 * (another symlink to its data, the count kept), and emulates
		 * a link the kernel refuses (Android's app storage: EPERM);
		 * any other link is the kernel's, which the tracer tries first
		 * (emul's link2symlink.link): made here, and a refusal it
		 * would emulate goes to it. */
		struct stat st;
		long s = tr(SYS_newfstatat, a.parent.fd, (long)a.name, (long)&st, AT_SYMLINK_NOFOLLOW, 0, 0);
		if (l2s_link(a.parent.fd, a.name, s, &st)) {
			w = W_OPTION;
		} else {
			r = tr(SYS_linkat, a.parent.fd, (long)a.name, b.parent.fd, (long)b.name, 0, 0);
			if (r == -EPERM || r == -EACCES || r == -EMLINK || r == -ENOTSUP)
				w = W_OPTION;
		}
	} else if (w == W_ANSWERED) {
		r = tr(SYS_linkat, a.parent.fd, (long)a.name, b.parent.fd, (long)b.name, flags, 0);
	}
	if (held) {
		release(&b.parent);
		release(&a.parent);
	}
	count(F_LINK, w);
	if (w != W_ANSWERED || ids_eacces(r))
		return raw6(SYS_linkat, olddirfd, (long)old, newdirfd, (long)new, flags, 0);
	return r;
}

/* chmod, chown, utimensat and truncate act on the file the path names
 * (following a last symlink unless told not to). */
static enum fp_why map_attr(int dirfd, const char *path, struct target *t)
{
	enum fp_why w = map_at(dirfd, path, t);
	if (w != W_ANSWERED)
		return w;
	if (t->ancestor || ((cfg.flags & DR_FP_L2S) && is_l2s_name(t->name))) {
		release(&t->parent);
		return W_OPTION;
	}
	return W_ANSWERED;
}

/* pin_nolink is pin_last in one system call where openat2 may be made:
 * O_PATH with RESOLVE_NO_SYMLINKS, which refuses a symlink (ELOOP: the
 * tracer's) where pin_last needs an fstat to tell one. The same returns
 * as pin_last's, and -ENOSYS (t untouched) where openat2 cannot be made:
 * the caller pins with pin_last. */
static long pin_nolink(struct target *t, char proc[32], enum fp_why *w)
{
	long m = openat2_nolink(t->parent.fd, t->name, O_PATH | O_CLOEXEC, 0, 0);
	return m == -ENOSYS ? m : pin_took(t, m, proc, w);
}

/* pin_follow pins t's last component for a call that follows it (attr_call,
 * access_pinned): pin_nolink, or where openat2 cannot be made pin_last,
 * checked to be no symlink. It returns M (the caller closes it), -ENOENT for
 * a missing name, or FP_DEFER with *w set; t's parent is released. */
static long pin_follow(struct target *t, char proc[32], enum fp_why *w)
{
	struct stat st;
	long m = pin_nolink(t, proc, w);
	if (m == -ENOSYS)
		m = pin_last(t, proc, &st, w);
	if (m == -ENOENT)
		release(&t->parent);
	return m;
}

/* fp_utime_empty_ok: utimensat takes AT_EMPTY_PATH (Linux 5.8); off for
 * good after an EINVAL its /proc/self/fd form does not give. */
static int fp_utime_empty_ok = 1;

/* attr_call makes call nr, which follows the last component, on t's
 * last component through its pin (pin_follow: a symlink there goes to
 * the tracer): fchownat and utimensat on the
 * pin itself with AT_EMPTY_PATH, which walks no path; the others as
 * nr(AT_FDCWD, "/proc/self/fd/<M>", a, b, 0), which follows nothing
 * after the magic link; truncate, which takes no directory, as
 * truncate(name, a). t's parent is released; FP_DEFER with *w set goes
 * to the tracer. */
static long attr_call(struct target *t, long nr, long a, long b, enum fp_why *w)
{
	char proc[32];
	long m = pin_follow(t, proc, w), r;
	if (m < 0)
		return m;
	if (nr == SYS_truncate) {
		r = tr(nr, (long)proc, a, 0, 0, 0, 0);
	} else if (nr == SYS_fchownat) {
		r = tr(nr, m, (long)"", a, b, AT_EMPTY_PATH, 0);
	} else if (nr == SYS_utimensat && __atomic_load_n(&fp_utime_empty_ok, __ATOMIC_RELAXED)) {
		r = tr(nr, m, (long)"", a, AT_EMPTY_PATH, 0, 0);
		if (r == -EINVAL && (r = tr(nr, AT_FDCWD, (long)proc, a, 0, 0, 0)) != -EINVAL)
			__atomic_store_n(&fp_utime_empty_ok, 0, __ATOMIC_RELAXED);
	} else {
		r = tr(nr, AT_FDCWD, (long)proc, a, b, 0, 0);
	}
	tr(SYS_close, m, 0, 0, 0, 0, 0);
	return r;
}

/* attr_nofollow makes call nr(parent, name, a, b, c) on t's last component
 * itself, relative to its verified parent; t's parent is released. */
static long attr_nofollow(struct target *t, long nr, long a, long b, long c)
{
	long r = tr(nr, t->parent.fd, (long)t->name, a, b, c, 0);
	release(&t->parent);
	return r;
}

static long fp_fchmodat(int dirfd, const char *path, unsigned mode)
{
	struct target t;
	enum fp_why w = (cfg.flags & DR_FP_IDS) ? W_OPTION : map_attr(dirfd, path, &t);
	long r = w == W_ANSWERED ? attr_call(&t, SYS_fchmodat, mode, 0, &w) : FP_DEFER;
	count(F_CHMOD, w);
	return r == FP_DEFER ? raw6(SYS_fchmodat, dirfd, (long)path, mode, 0, 0, 0) : r;
}

static long fp_fchownat(int dirfd, const char *path, unsigned uid, unsigned gid, int flags)
{
	struct target t;
	enum fp_why w = (cfg.flags & DR_FP_IDS) ? W_OPTION : (flags & ~AT_SYMLINK_NOFOLLOW) ? W_FLAGS
												: map_attr(dirfd, path, &t);
	long r = w != W_ANSWERED		   ? FP_DEFER
		 : (flags & AT_SYMLINK_NOFOLLOW) ? attr_nofollow(&t, SYS_fchownat, uid, gid, flags)
						   : attr_call(&t, SYS_fchownat, uid, gid, &w);
	count(F_CHOWN, w);
	return r == FP_DEFER ? raw6(SYS_fchownat, dirfd, (long)path, uid, gid, flags, 0) : r;
}

static long fp_utimensat(int dirfd, const char *path, const struct timespec *ts, int flags)
{
	struct target t;
	enum fp_why w = !path ? W_FLAGS : (flags & ~AT_SYMLINK_NOFOLLOW) ? W_FLAGS : map_attr(dirfd, path, &t);
	long r = w != W_ANSWERED		   ? FP_DEFER
		 : (flags & AT_SYMLINK_NOFOLLOW) ? attr_nofollow(&t, SYS_utimensat, (long)ts, flags, 0)
						   : attr_call(&t, SYS_utimensat, (long)ts, 0, &w);
	count(F_UTIME, w);
	return r == FP_DEFER ? raw6(SYS_utimensat, dirfd, (long)path, (long)ts, flags, 0, 0) : r;
}

/* truncate: through the pin too (attr_call); the kernel's checks (write
 * permission, EISDIR, EINVAL for what is not a regular file) are the same
 * as through its path. */
static long fp_truncate(const char *path, long len)
{
	struct target t;
	enum fp_why w = map_attr(AT_FDCWD, path, &t);
	long r = w == W_ANSWERED ? attr_call(&t, SYS_truncate, len, 0, &w) : FP_DEFER;
	count(F_TRUNCATE, w);
	return r == FP_DEFER || ids_eacces(r) ? raw6(SYS_truncate, (long)path, len, 0, 0, 0, 0) : r;
}

/* statfs: fstatfs of the name's pin (pin_follow), which walks no path: the
 * file system the path's lookup ends on. Where the guest may see the file
 * in /dev/shm (shm_visible), the tracer's answer (TMPFS_MAGIC, as for
 * fstatfs); a symlink there, a bind point's guest ancestor, -l's names and
 * /proc go to the tracer, and so does a relative path (its host path,
 * which shm_visible needs, is not at hand). libselinux asks at every
 * start of a program linked with it (Debian's coreutils), Wine for its
 * drives. */
static long fp_statfs(const char *path, void *sf)
{
	struct target t;
	enum fp_why w = user_ptr(path) && path[0] == '/' ? map_attr(AT_FDCWD, path, &t) : W_RELATIVE;
	long r = FP_DEFER;
	if (w == W_ANSWERED) {
		/* The file's host path: the parent's, its NUL back to '/'. */
		size_t n = t.parentlen + 1 + fp_strlen(t.name);
		t.host[t.parentlen] = '/';
		int shm = shm_visible(t.host, n);
		t.host[t.parentlen] = 0;
		if (shm) {
			release(&t.parent);
			w = W_OPTION;
		}
	}
	if (w == W_ANSWERED) {
		char proc[32];
		long m = pin_follow(&t, proc, &w);
		if (m == -ENOENT) {
			r = m;
		} else if (m >= 0) {
			r = tr(SYS_fstatfs, m, (long)sf, 0, 0, 0, 0);
			tr(SYS_close, m, 0, 0, 0, 0, 0);
		}
	}
	count(F_STATFS, w);
	return r == FP_DEFER ? raw6(SYS_statfs, (long)path, (long)sf, 0, 0, 0, 0) : r;
}

/* The path forms of the xattr calls that follow the last component
 * (getxattr, setxattr, listxattr, removexattr: Wine reads and writes its
 * DOS attributes as user.DOSATTRIB by path) are made on the name's pin,
 * as attr_call makes chmod: nr("/proc/self/fd/<M>", a, b, c, d), whose
 * lookup follows nothing after the magic link. The kernel's checks there
 * are its checks through the path (the same inode and mount). A symlink
 * there, a bind point's guest ancestor and -l's names go to the tracer, and
 * so do the l* forms: before Linux 6.13 no xattr call takes a directory
 * descriptor, to name a symlink itself below a verified parent. */
static long fp_xattr(long nr, const char *path, long a, long b, long c, long d)
{
	struct target t;
	enum fp_why w = map_attr(AT_FDCWD, path, &t);
	long r = FP_DEFER;
	if (w == W_ANSWERED) {
		char proc[32];
		long m = pin_follow(&t, proc, &w);
		if (m == -ENOENT) {
			r = m;
		} else if (m >= 0) {
			r = tr(nr, (long)proc, a, b, c, d, 0);
			tr(SYS_close, m, 0, 0, 0, 0, 0);
			/* Under emulated ids a fake root's setxattr of a trusted.
			 * or security. name succeeds (emul's privilegedXattr):
			 * the kernel's EPERM, which changed nothing, is the
			 * tracer's to answer. */
			if (r == -EPERM && nr == SYS_setxattr && (cfg.flags & DR_FP_IDS)) {
				r = FP_DEFER;
				w = W_OPTION;
			}
		}
	}
	count(F_XATTR, w);
	return r == FP_DEFER ? raw6(nr, (long)path, a, b, c, d, 0) : r;
}

EXPORT ssize_t getxattr(const char *path, const char *name, void *value, size_t size)
{
	return fp_ret(fp_xattr(SYS_getxattr, path, (long)name, (long)value, (long)size, 0));
}
EXPORT int setxattr(const char *path, const char *name, const void *value, size_t size, int flags)
{
	return (int)fp_ret(fp_xattr(SYS_setxattr, path, (long)name, (long)value, (long)size, flags));
}
EXPORT ssize_t listxattr(const char *path, char *list, size_t size)
{
	return fp_ret(fp_xattr(SYS_listxattr, path, (long)list, (long)size, 0, 0));
}
EXPORT int removexattr(const char *path, const char *name)
{
	return (int)fp_ret(fp_xattr(SYS_removexattr, path, (long)name, 0, 0, 0));
}

/* mknod of a FIFO or a regular file is an entry call like mkdir; devices
 * and sockets (a fake root's devices are the tracer's) and emulated ids go
 * to the tracer. */
static long fp_mknodat(int dirfd, const char *path, unsigned mode, unsigned long dev)
{
	struct target t;
	unsigned type = mode & S_IFMT;
	enum fp_why w = type && type != S_IFREG && type != S_IFIFO ? W_FLAGS
			: (cfg.flags & DR_FP_IDS)                 ? W_OPTION
								  : map_entry(dirfd, path, &t);
	count(F_MKNOD, w);
	if (w != W_ANSWERED)
		return raw6(SYS_mknodat, dirfd, (long)path, mode, (long)dev, 0, 0);
	long r = tr(SYS_mknodat, t.parent.fd, (long)t.name, mode, (long)dev, 0, 0);
	release(&t.parent);
	return r;
}

EXPORT int statfs(const char *path, struct statfs *sf) { return (int)fp_ret(fp_statfs(path, sf)); }
EXPORT int statfs64(const char *path, struct statfs64 *sf) { return (int)fp_ret(fp_statfs(path, sf)); }
EXPORT int truncate(const char *path, off_t len) { return (int)fp_ret(fp_truncate(path, len)); }
EXPORT int truncate64(const char *path, off_t len) __attribute__((alias("truncate")));
EXPORT int mknod(const char *path, mode_t mode, dev_t dev) { return (int)fp_ret(fp_mknodat(AT_FDCWD, path, mode, dev)); }
EXPORT int mknodat(int dirfd, const char *path, mode_t mode, dev_t dev)
{
	return (int)fp_ret(fp_mknodat(dirfd, path, mode, dev));
}
EXPORT int mkfifo(const char *path, mode_t mode) { return (int)fp_ret(fp_mknodat(AT_FDCWD, path, mode | S_IFIFO, 0)); }
EXPORT int mkfifoat(int dirfd, const char *path, mode_t mode)
{
	return (int)fp_ret(fp_mknodat(dirfd, path, mode | S_IFIFO, 0));
}
/* glibc < 2.33 programs bind to these (_MKNOD_VER is 0 on both ABIs). */
EXPORT int __xmknod(int ver, const char *path, mode_t mode, dev_t *dev)
{
	if (ver != 0) {
		errno = EINVAL;
		return -1;
	}
	return mknod(path, mode, *dev);
}
EXPORT int __xmknodat(int ver, int dirfd, const char *path, mode_t mode, dev_t *dev)
{
	if (ver != 0) {
		errno = EINVAL;
		return -1;
	}
	return mknodat(dirfd, path, mode, *dev);
}

/* utimes, lutimes and utime: glibc's convert to utimensat. */
EXPORT int utimes(const char *path, const struct timeval tv[2])
{
	struct timespec ts[2];
	if (tv)
		for (int i = 0; i < 2; i++)
			ts[i].tv_sec = tv[i].tv_sec, ts[i].tv_nsec = tv[i].tv_usec * 1000;
	return (int)fp_ret(fp_utimensat(AT_FDCWD, path, tv ? ts : NULL, 0));
}
EXPORT int lutimes(const char *path, const struct timeval tv[2])
{
	struct timespec ts[2];
	if (tv)
		for (int i = 0; i < 2; i++)
			ts[i].tv_sec = tv[i].tv_sec, ts[i].tv_nsec = tv[i].tv_usec * 1000;
	return (int)fp_ret(fp_utimensat(AT_FDCWD, path, tv ? ts : NULL, AT_SYMLINK_NOFOLLOW));
}
EXPORT int utime(const char *path, const struct utimbuf *times)
{
	struct timespec ts[2];
	if (times)
		ts[0].tv_sec = times->actime, ts[0].tv_nsec = 0, ts[1].tv_sec = times->modtime, ts[1].tv_nsec = 0;
	return (int)fp_ret(fp_utimensat(AT_FDCWD, path, times ? ts : NULL, 0));
}

EXPORT int mkdir(const char *path, mode_t mode) { return (int)fp_ret(fp_mkdirat(AT_FDCWD, path, mode)); }
EXPORT int mkdirat(int dirfd, const char *path, mode_t mode) { return (int)fp_ret(fp_mkdirat(dirfd, path, mode)); }
EXPORT int unlink(const char *path) { return (int)fp_ret(fp_unlinkat(AT_FDCWD, path, 0)); }
EXPORT int unlinkat(int dirfd, const char *path, int flags) { return (int)fp_ret(fp_unlinkat(dirfd, path, flags)); }
EXPORT int rmdir(const char *path) { return (int)fp_ret(fp_unlinkat(AT_FDCWD, path, AT_REMOVEDIR)); }
EXPORT int rename(const char *old, const char *new) { return (int)fp_ret(fp_renameat2(AT_FDCWD, old, AT_FDCWD, new, 0)); }
EXPORT int renameat(int od, const char *old, int nd, const char *new) { return (int)fp_ret(fp_renameat2(od, old, nd, new, 0)); }
EXPORT int renameat2(int od, const char *old, int nd, const char *new, unsigned flags)
{
	return (int)fp_ret(fp_renameat2(od, old, nd, new, flags));
}
EXPORT int symlink(const char *target, const char *path) { return (int)fp_ret(fp_symlinkat(target, AT_FDCWD, path)); }
EXPORT int symlinkat(const char *target, int dirfd, const char *path)
{
	return (int)fp_ret(fp_symlinkat(target, dirfd, path));
}
EXPORT int link(const char *old, const char *new) { return (int)fp_ret(fp_linkat(AT_FDCWD, old, AT_FDCWD, new, 0)); }
EXPORT int linkat(int od, const char *old, int nd, const char *new, int flags)
{
	return (int)fp_ret(fp_linkat(od, old, nd, new, flags));
}
EXPORT int chmod(const char *path, mode_t mode) { return (int)fp_ret(fp_fchmodat(AT_FDCWD, path, mode)); }
EXPORT int fchmodat(int dirfd, const char *path, mode_t mode, int flags)
{
	if (flags) {
		/* fchmodat2, or glibc's emulation through /proc: libc's own. */
		count(F_CHMOD, W_FLAGS);
		if (LIBC(real_fchmodat, "fchmodat"))
			return real_fchmodat(dirfd, path, mode, flags);
		return (int)fp_ret(raw6(SYS_fchmodat2, dirfd, (long)path, mode, flags, 0, 0));
	}
	return (int)fp_ret(fp_fchmodat(dirfd, path, mode));
}
EXPORT int chown(const char *path, uid_t uid, gid_t gid) { return (int)fp_ret(fp_fchownat(AT_FDCWD, path, uid, gid, 0)); }
EXPORT int lchown(const char *path, uid_t uid, gid_t gid)
{
	return (int)fp_ret(fp_fchownat(AT_FDCWD, path, uid, gid, AT_SYMLINK_NOFOLLOW));
}
EXPORT int fchownat(int dirfd, const char *path, uid_t uid, gid_t gid, int flags)
{
	return (int)fp_ret(fp_fchownat(dirfd, path, uid, gid, flags));
}
EXPORT int utimensat(int dirfd, const char *path, const struct timespec ts[2], int flags)
{
	return (int)fp_ret(fp_utimensat(dirfd, path, ts, flags));
}
