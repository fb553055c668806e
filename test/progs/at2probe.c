/*
 * at2probe - the calls Android's app policy blocks that droidroot answers itself with
 * DROIDROOT_EMULATE_AT2=1 (or under an Android policy): faccessat2, fchmodat2, openat2's
 * struct checks and close_range. It prints one line per call with the result or the errno
 * name; the transcript of the kernel (a chroot) and of droidroot must be identical.
 *
 * usage: at2probe DIR     (DIR: an empty writable directory; needs root for the id phase)
 *
 * Phase 1 runs as root; phase 2 switches to real uid/gid 1000 and effective (and fs)
 * uid/gid 65534, so faccessat2 with and without AT_EACCESS checks different ids.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/close_range.h>
#include <linux/openat2.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif

static const char *errname(int e)
{
	switch (e) {
#define E(x) case x: return #x;
	E(EPERM) E(ENOENT) E(EBADF) E(EACCES) E(EFAULT) E(EEXIST) E(ENOTDIR) E(EISDIR) E(EINVAL)
	E(EROFS) E(ELOOP) E(ENAMETOOLONG) E(ENOSYS) E(EOPNOTSUPP) E(E2BIG) E(EAGAIN) E(EXDEV)
#undef E
	}
	static char buf[32];
	snprintf(buf, sizeof buf, "errno%d", e);
	return buf;
}

static void result(const char *what, long r)
{
	if (r < 0)
		printf("%s -> %s\n", what, errname(errno));
	else
		printf("%s -> %ld\n", what, r);
}

static long faccessat2(int dirfd, const char *p, int mode, int flags)
{
	return syscall(SYS_faccessat2, dirfd, p, mode, flags);
}

static void access_matrix(const char *dir)
{
	static const char *files[] = {"f", "x", "ro", "mine", "grp", "l", "dl", "d", "missing", "f/", "l/"};
	static const struct {
		int flags;
		const char *name;
	} fl[] = {{0, "0"}, {AT_EACCESS, "eaccess"}, {AT_SYMLINK_NOFOLLOW, "nofollow"},
		  {AT_EACCESS | AT_SYMLINK_NOFOLLOW, "eaccess,nofollow"}};
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	char what[256];
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
		for (int mode = 0; mode <= 7; mode++)
			for (size_t k = 0; k < sizeof fl / sizeof fl[0]; k++) {
				snprintf(what, sizeof what, "faccessat2 %s %d %s", files[i], mode, fl[k].name);
				result(what, faccessat2(dfd, files[i], mode, fl[k].flags));
			}
	close(dfd);
}

static void access_cases(const char *dir)
{
	char p[512];
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	int ffd;
	snprintf(p, sizeof p, "%s/f", dir);
	ffd = open(p, O_RDONLY);
	result("faccessat2 mode 8", faccessat2(dfd, "f", 8, 0));
	result("faccessat2 flags 1", faccessat2(dfd, "f", 0, 1));
	result("faccessat2 flags AT_REMOVEDIR", faccessat2(dfd, "f", 0, AT_REMOVEDIR));
	result("faccessat2 empty path", faccessat2(dfd, "", R_OK, 0));
	result("faccessat2 empty path AT_EMPTY_PATH dirfd", faccessat2(dfd, "", W_OK, AT_EMPTY_PATH));
	result("faccessat2 empty path AT_EMPTY_PATH filefd r", faccessat2(ffd, "", R_OK, AT_EMPTY_PATH));
	result("faccessat2 empty path AT_EMPTY_PATH filefd x", faccessat2(ffd, "", X_OK, AT_EMPTY_PATH));
	result("faccessat2 empty path AT_EMPTY_PATH cwd", faccessat2(AT_FDCWD, "", R_OK, AT_EMPTY_PATH));
	result("faccessat2 bad fd", faccessat2(99, "f", R_OK, 0));
	result("faccessat2 file as dirfd", faccessat2(ffd, "x", R_OK, 0));
	result("faccessat2 bad pointer", faccessat2(dfd, (const char *)8, R_OK, 0));
	result("faccessat2 absolute", faccessat2(99, p, R_OK | W_OK, AT_EACCESS));
	result("faccessat2 /proc/self/exe x", faccessat2(AT_FDCWD, "/proc/self/exe", X_OK, 0));
	close(ffd);
	close(dfd);
}

static void chmod_cases(const char *dir)
{
	char p[512], what[128];
	struct stat st;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY), ffd;
	snprintf(p, sizeof p, "%s/c", dir);
	ffd = open(p, O_RDONLY);
#define SHOW(name)                                                                                 \
	do {                                                                                       \
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)                             \
			printf("  mode of %s: 0%o\n", name, (unsigned)st.st_mode & 07777);           \
	} while (0)
	result("fchmodat2 c 0600", syscall(SYS_fchmodat2, dfd, "c", 0600, 0));
	SHOW("c");
	result("fchmodat2 c 04755 nofollow", syscall(SYS_fchmodat2, dfd, "c", 04755, AT_SYMLINK_NOFOLLOW));
	SHOW("c");
	result("fchmodat2 cl 0640 nofollow", syscall(SYS_fchmodat2, dfd, "cl", 0640, AT_SYMLINK_NOFOLLOW));
	SHOW("c");
	result("fchmodat2 cl 0641", syscall(SYS_fchmodat2, dfd, "cl", 0641, 0));
	SHOW("c");
	result("fchmodat2 empty AT_EMPTY_PATH", syscall(SYS_fchmodat2, ffd, "", 0604, AT_EMPTY_PATH));
	SHOW("c");
	result("fchmodat2 empty", syscall(SYS_fchmodat2, ffd, "", 0604, 0));
	result("fchmodat2 flags 1", syscall(SYS_fchmodat2, dfd, "c", 0600, 1));
	result("fchmodat2 flags AT_EACCESS", syscall(SYS_fchmodat2, dfd, "c", 0600, AT_EACCESS));
	result("fchmodat2 missing", syscall(SYS_fchmodat2, dfd, "missing", 0600, 0));
	result("fchmodat2 dangling nofollow", syscall(SYS_fchmodat2, dfd, "dl", 0600, AT_SYMLINK_NOFOLLOW));
	result("fchmodat2 dangling", syscall(SYS_fchmodat2, dfd, "dl", 0600, 0));
	result("fchmodat2 bad fd", syscall(SYS_fchmodat2, 99, "c", 0600, 0));
	result("fchmodat2 bad pointer", syscall(SYS_fchmodat2, dfd, (const char *)8, 0600, 0));
	snprintf(what, sizeof what, "fchmodat2 absolute");
	result(what, syscall(SYS_fchmodat2, 99, p, 0644, 0));
	SHOW("c");
#undef SHOW
	close(ffd);
	close(dfd);
}

static void openat2_cases(const char *dir)
{
	static char page[8192] __attribute__((aligned(16)));
	struct open_how *how = (struct open_how *)page;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY);
	long fd;
	size_t sizes[] = {0, 8, 23, 24, 32, 4096, 4097};
	char what[128];
	memset(page, 0, sizeof page);
	how->flags = O_RDONLY;
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		snprintf(what, sizeof what, "openat2 size %zu", sizes[i]);
		fd = syscall(SYS_openat2, dfd, "f", how, sizes[i]);
		result(what, fd < 0 ? fd : 0);
		if (fd >= 0)
			close(fd);
	}
	page[40] = 1;
	fd = syscall(SYS_openat2, dfd, "f", how, (size_t)48);
	result("openat2 size 48 non-zero tail", fd < 0 ? fd : 0);
	fd = syscall(SYS_openat2, dfd, "f", how, (size_t)40);
	result("openat2 size 40 zero tail", fd < 0 ? fd : 0);
	if (fd >= 0)
		close(fd);
	page[40] = 0;
	result("openat2 bad how", syscall(SYS_openat2, dfd, "f", (void *)8, sizeof *how));
	result("openat2 bad path", syscall(SYS_openat2, dfd, (const char *)8, how, sizeof *how));
	how->flags = 1ULL << 40;
	result("openat2 flags bit 40", syscall(SYS_openat2, dfd, "f", how, sizeof *how));
	how->flags = O_RDONLY;
	how->resolve = 0x40;
	result("openat2 resolve 0x40", syscall(SYS_openat2, dfd, "f", how, sizeof *how));
	how->resolve = RESOLVE_CACHED;
	how->flags = O_RDWR | O_TRUNC;
	result("openat2 cached trunc", syscall(SYS_openat2, dfd, "f", how, sizeof *how));
	how->resolve = 0;
	how->flags = O_PATH | O_RDWR;
	result("openat2 path rdwr", syscall(SYS_openat2, dfd, "f", how, sizeof *how));
	how->flags = O_PATH | O_APPEND;
	result("openat2 path append", syscall(SYS_openat2, dfd, "f", how, sizeof *how));
	how->flags = O_RDONLY | O_CREAT;
	how->mode = 0644;
	fd = syscall(SYS_openat2, dfd, "new", how, sizeof *how);
	result("openat2 creat", fd < 0 ? fd : 0);
	if (fd >= 0)
		close(fd);
	how->flags = O_WRONLY | O_CREAT | O_EXCL;
	result("openat2 creat excl existing", syscall(SYS_openat2, dfd, "new", how, sizeof *how));
	how->flags = O_RDONLY | O_NOFOLLOW;
	how->mode = 0;
	result("openat2 nofollow symlink", syscall(SYS_openat2, dfd, "l", how, sizeof *how));
	how->flags = O_RDONLY;
	how->resolve = RESOLVE_BENEATH;
	result("openat2 beneath dotdot", syscall(SYS_openat2, dfd, "../x", how, sizeof *how));
	result("openat2 beneath bad fd", syscall(SYS_openat2, 99, "x", how, sizeof *how));
	close(dfd);
}

/* close_range_raw makes the call with inline assembly and reports whether the argument
 * registers the ABI preserves came back unchanged. */
static long close_range_raw(unsigned first, unsigned last, unsigned flags, int *preserved)
{
	long ret;
#if defined(__x86_64__)
	register long rdi __asm__("rdi") = first;
	register long rsi __asm__("rsi") = last;
	register long rdx __asm__("rdx") = flags;
	__asm__ volatile("syscall"
			 : "=a"(ret), "+r"(rdi), "+r"(rsi), "+r"(rdx)
			 : "0"((long)SYS_close_range)
			 : "rcx", "r11", "memory");
	*preserved = rdi == (long)first && rsi == (long)last && rdx == (long)flags;
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = SYS_close_range;
	register long x0 __asm__("x0") = first;
	register long x1 __asm__("x1") = last;
	register long x2 __asm__("x2") = flags;
	__asm__ volatile("svc #0" : "+r"(x0), "+r"(x1), "+r"(x2), "+r"(x8) : : "memory");
	ret = x0;
	*preserved = x1 == (long)last && x2 == (long)flags && x8 == SYS_close_range;
#else
#error "unsupported architecture"
#endif
	if (ret < 0) {
		errno = (int)-ret;
		return -1;
	}
	return ret;
}

static void fd_state(void)
{
	printf("  fds:");
	for (int fd = 10; fd <= 24; fd++) {
		int f = fcntl(fd, F_GETFD);
		if (f >= 0)
			printf(" %d%s", fd, f & FD_CLOEXEC ? "c" : "");
	}
	printf("\n");
}

static void close_range_cases(void)
{
	static const struct {
		unsigned first, last, flags;
		const char *name;
	} cases[] = {
		{12, 14, 0, "12..14"},
		{16, 18, CLOSE_RANGE_CLOEXEC, "16..18 cloexec"},
		{14, 12, 0, "14..12"},
		{10, 11, 8, "flags 8"},
		{30, 40, 0, "30..40 (none open)"},
		{10, 11, CLOSE_RANGE_UNSHARE, "10..11 unshare"},
		{17, 17, 0, "17..17"},
		{21, ~0U, CLOSE_RANGE_CLOEXEC | CLOSE_RANGE_UNSHARE, "21..max cloexec,unshare"},
		{22, ~0U, 0, "22..max"},
	};
	int null = open("/dev/null", O_RDONLY);
	for (int fd = 10; fd <= 24; fd++)
		dup2(null, fd);
	close(null);
	fd_state();
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int preserved = 0;
		char what[128];
		long r = close_range_raw(cases[i].first, cases[i].last, cases[i].flags, &preserved);
		snprintf(what, sizeof what, "close_range %s", cases[i].name);
		result(what, r);
		printf("  registers %s\n", preserved ? "preserved" : "CHANGED");
		fd_state();
	}
}

static void setup(const char *dir)
{
	char p[512];
#define MK(name, mode)                                                                             \
	do {                                                                                       \
		snprintf(p, sizeof p, "%s/%s", dir, name);                                          \
		close(open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600));                                \
		chmod(p, mode);                                                                    \
	} while (0)
	MK("f", 0640);
	MK("x", 0755);
	MK("ro", 0444);
	MK("mine", 0600);
	snprintf(p, sizeof p, "%s/mine", dir);
	(void)!chown(p, 1000, 1000);
	MK("grp", 0060);
	snprintf(p, sizeof p, "%s/grp", dir);
	(void)!chown(p, 0, 65534);
	MK("c", 0644);
	snprintf(p, sizeof p, "%s/d", dir);
	mkdir(p, 0700);
	snprintf(p, sizeof p, "%s/l", dir);
	(void)!symlink("f", p);
	snprintf(p, sizeof p, "%s/cl", dir);
	(void)!symlink("c", p);
	snprintf(p, sizeof p, "%s/dl", dir);
	(void)!symlink("nowhere", p);
	chmod(dir, 0755);
#undef MK
}

int main(int argc, char **argv)
{
	gid_t none[1] = {0};
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 2) {
		fprintf(stderr, "usage: at2probe DIR\n");
		return 2;
	}
	if (chdir(argv[1]) < 0) {
		perror("at2probe: chdir");
		return 2;
	}
	setup(argv[1]);
	printf("== phase 1: root\n");
	access_matrix(argv[1]);
	access_cases(argv[1]);
	chmod_cases(argv[1]);
	openat2_cases(argv[1]);
	close_range_cases();
	printf("== phase 2: uid 1000/65534 gid 1000/65534\n");
	if (setgroups(0, none) < 0 || setresgid(1000, 65534, 0) < 0 || setresuid(1000, 65534, 0) < 0) {
		printf("set*id: %s\n", errname(errno));
		return 1;
	}
	access_matrix(argv[1]);
	access_cases(argv[1]);
	chmod_cases(argv[1]);
	return 0;
}
