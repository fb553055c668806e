/*
 * stackprobe - path calls on small stacks: the fast path library's frames live on its caller's
 * stack, which may be a thread's made with a small stack (PTHREAD_STACK_MIN is 16 KiB on
 * x86_64) or a signal handler's alternate stack. The same calls (through symlinks on the way and
 * as the last component, an absolute symlink, trailing slashes, "..", missing directories,
 * creates, renames, removes, realpath, fopen, opendir, statx, syscall()) are made on the main
 * thread, on a thread with a 16 KiB stack (or PTHREAD_STACK_MIN where that is more) and in a
 * signal handler on a 16 KiB alternate stack, and their results printed, one line per call:
 *
 *   MODE N CALL = RESULT
 *
 * Every mode's lines must be the same, and a real chroot's. A frame past the small stack's end
 * is a SIGSEGV (the stack's guard page).
 *
 * usage: stackprobe DIR   (an empty directory, made into a small tree first)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SMALL
#define SMALL 16384
#endif
#define NRES 64

/* A result: the call's return and errno, and what it read (a size, a type, a link, a count). */
struct res {
	const char *call;
	long ret;
	int err;
	char what[96];
};

static char base[1024];
static struct res results[NRES];
static int nres;

static void path(char *buf, const char *rel) { snprintf(buf, PATH_MAX, "%s/%s", base, rel); }

static struct res *rec(const char *call, long ret)
{
	struct res *r = &results[nres++];
	r->call = call;
	r->ret = ret;
	r->err = ret < 0 ? errno : 0;
	r->what[0] = 0;
	return r;
}

static const char *kind(mode_t m)
{
	return S_ISREG(m) ? "file" : S_ISDIR(m) ? "dir" : S_ISLNK(m) ? "link" : "other";
}

/* calls makes every call once. Its own frames are small: the paths live in static buffers. */
static void calls(void)
{
	static char p[PATH_MAX], q[PATH_MAX], buf[PATH_MAX];
	struct stat st;
	struct res *r;
	nres = 0;

	path(p, "link/dir/flink");
	r = rec("stat link/dir/flink", stat(p, &st));
	if (r->ret == 0)
		snprintf(r->what, sizeof r->what, "%s %lld", kind(st.st_mode), (long long)st.st_size);
	r = rec("lstat link/dir/flink", lstat(p, &st));
	if (r->ret == 0)
		snprintf(r->what, sizeof r->what, "%s", kind(st.st_mode));
	rec("access link/dir/flink R_OK", access(p, R_OK));
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	r = rec("open link/dir/flink", fd < 0 ? -1 : 0);
	if (fd >= 0) {
		long n = read(fd, buf, 64);
		snprintf(r->what, sizeof r->what, "read %ld", n);
		close(fd);
	}
	fd = (int)syscall(SYS_openat, AT_FDCWD, p, O_RDONLY | O_CLOEXEC);
	rec("syscall openat link/dir/flink", fd < 0 ? -1 : 0);
	if (fd >= 0)
		close(fd);
	FILE *f = fopen(p, "re");
	r = rec("fopen link/dir/flink", f ? 0 : -1);
	if (f) {
		r->what[0] = (char)fgetc(f);
		r->what[1] = 0;
		fclose(f);
	}
	long n = readlink(p, buf, sizeof buf - 1);
	r = rec("readlink link/dir/flink", n);
	if (n >= 0)
		snprintf(r->what, sizeof r->what, "%.*s", (int)n, buf);
	struct statx sx;
	r = rec("statx link/dir/flink", statx(AT_FDCWD, p, 0, STATX_BASIC_STATS, &sx));
	if (r->ret == 0)
		snprintf(r->what, sizeof r->what, "%lld", (long long)sx.stx_size);
	char *rp = realpath(p, NULL);
	r = rec("realpath link/dir/flink", rp ? 0 : -1);
	if (rp) {
		snprintf(r->what, sizeof r->what, "%s", rp + strlen(base));
		free(rp);
	}

	path(p, "abs/dir/file");
	r = rec("stat abs/dir/file", stat(p, &st));
	if (r->ret == 0)
		snprintf(r->what, sizeof r->what, "%s %lld", kind(st.st_mode), (long long)st.st_size);

	path(p, "link/dir/");
	DIR *d = opendir(p);
	r = rec("opendir link/dir/", d ? 0 : -1);
	if (d) {
		int k = 0;
		while (readdir(d))
			k++;
		snprintf(r->what, sizeof r->what, "%d entries", k);
		closedir(d);
	}

	path(p, "link/new/");
	rec("mkdir link/new/", mkdir(p, 0755));
	path(p, "link/new");
	path(q, "link/new2");
	rec("rename link/new link/new2", rename(p, q));
	rec("rmdir link/new2", rmdir(q));
	path(p, "link/dir/made");
	fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	rec("creat link/dir/made", fd < 0 ? -1 : 0);
	if (fd >= 0)
		close(fd);
	rec("unlink link/dir/made", unlink(p));

	path(p, "link/missing/deeper/x");
	rec("stat link/missing/deeper/x", stat(p, &st));

	/* Relative to the cwd (the tree's real/dir, set by main). */
	r = rec("stat ../dir/flink", stat("../dir/flink", &st));
	if (r->ret == 0)
		snprintf(r->what, sizeof r->what, "%s %lld", kind(st.st_mode), (long long)st.st_size);
	rec("access ./file", access("./file", F_OK));
	fd = open("../../link/dir/file", O_RDONLY | O_CLOEXEC);
	rec("open ../../link/dir/file", fd < 0 ? -1 : 0);
	if (fd >= 0)
		close(fd);
	int dfd = open("..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	r = rec("fstatat .. dir/file", dfd < 0 ? -1 : fstatat(dfd, "dir/file", &st, AT_SYMLINK_NOFOLLOW));
	if (r->ret == 0)
		snprintf(r->what, sizeof r->what, "%s", kind(st.st_mode));
	if (dfd >= 0)
		close(dfd);
}

static void print(const char *mode)
{
	for (int i = 0; i < nres; i++) {
		struct res *r = &results[i];
		if (r->ret < 0)
			printf("%s %d %s = %s\n", mode, i, r->call, strerrorname_np(r->err));
		else
			printf("%s %d %s = ok %s\n", mode, i, r->call, r->what);
	}
	fflush(stdout);
}

static void *thread(void *arg)
{
	(void)arg;
	calls();
	return NULL;
}

static void handler(int sig)
{
	(void)sig;
	calls();
}

static void must(int ok, const char *what)
{
	if (!ok) {
		perror(what);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	if (argc != 2 || strlen(argv[1]) >= sizeof base) {
		fprintf(stderr, "usage: stackprobe DIR\n");
		return 2;
	}
	snprintf(base, sizeof base, "%s", argv[1]);
	char p[PATH_MAX], q[PATH_MAX];
	path(p, "real");
	must(mkdir(p, 0755) == 0, "mkdir real");
	path(p, "real/dir");
	must(mkdir(p, 0755) == 0, "mkdir real/dir");
	path(p, "real/dir/file");
	FILE *f = fopen(p, "w");
	must(f && fputs("hello\n", f) >= 0 && fclose(f) == 0, "write real/dir/file");
	path(p, "real/dir/flink");
	must(symlink("file", p) == 0, "symlink flink");
	path(p, "link");
	must(symlink("real", p) == 0, "symlink link");
	path(p, "abs");
	path(q, "real");
	must(symlink(q, p) == 0, "symlink abs");
	path(p, "real/dir");
	must(chdir(p) == 0, "chdir real/dir");

	calls();
	print("main");

	pthread_attr_t a;
	size_t size = SMALL;
	if ((size_t)PTHREAD_STACK_MIN > size)
		size = PTHREAD_STACK_MIN;
	must(pthread_attr_init(&a) == 0, "pthread_attr_init");
	errno = pthread_attr_setstacksize(&a, size);
	must(errno == 0, "pthread_attr_setstacksize");
	pthread_t th;
	errno = pthread_create(&th, &a, thread, NULL);
	must(errno == 0, "pthread_create");
	must(pthread_join(th, NULL) == 0, "pthread_join");
	print("thread");

	/* The alternate stack, with a guard page below it. */
	long pg = sysconf(_SC_PAGESIZE);
	size_t alt = SMALL > (size_t)pg ? SMALL : (size_t)pg;
	char *m = mmap(NULL, alt + (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	must(m != MAP_FAILED, "mmap");
	must(mprotect(m, (size_t)pg, PROT_NONE) == 0, "mprotect");
	stack_t ss = {.ss_sp = m + pg, .ss_size = alt};
	must(sigaltstack(&ss, NULL) == 0, "sigaltstack");
	struct sigaction sa = {.sa_handler = handler, .sa_flags = SA_ONSTACK};
	sigemptyset(&sa.sa_mask);
	must(sigaction(SIGUSR1, &sa, NULL) == 0, "sigaction");
	must(raise(SIGUSR1) == 0, "raise");
	print("sigaltstack");
	return 0;
}
