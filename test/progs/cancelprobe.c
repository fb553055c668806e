/*
 * cancelprobe - pthread cancellation at the path calls glibc makes cancellation points (the
 * open family, creat, fopen) and at those it does not (stat, access, readlink, mkdir, fopen
 * with "c", opendir): a cancel pending at the call, a thread blocked in the open of a FIFO and
 * cancelled there, cancellation disabled, and the caller's cancel type kept.
 *
 * usage: cancelprobe DIR   (DIR: a directory the probe may write in; it makes DIR/c*)
 *
 * Prints one line per case; the transcript must be the same natively (or under a real chroot).
 * A case whose thread neither ends nor is cancelled within 10 s prints "hung".
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *dir;
static char file[4096], fifo[4096], made[4096];

enum how { PENDING, BLOCKED, DISABLED, ASYNC_KEPT };

struct job {
	const char *name;
	int (*call)(void);
	enum how how;
	volatile int returned, cleaned, type_after;
};

static void cleanup(void *arg) { ((struct job *)arg)->cleaned = 1; }

/* Each call returns what it got (>= 0, or -errno); the probe only prints whether it returned.
 * What a call opens stays open: close and fclose are cancellation points themselves. */
static int fd_result(int fd) { return fd < 0 ? -errno : 0; }
static int c_open(void) { return fd_result(open(file, O_RDONLY | O_CLOEXEC)); }
static int c_open64(void) { return fd_result(open64(file, O_RDONLY)); }
static int c_openat(void) { return fd_result(openat(AT_FDCWD, file, O_RDONLY)); }
static int c_open_creat(void) { return fd_result(open(made, O_WRONLY | O_CREAT | O_TRUNC, 0644)); }
static int c_creat(void) { return fd_result(creat(made, 0644)); }
static int c_missing(void) { return fd_result(open("/nonexistent/cancelprobe", O_RDONLY)); }
static int c_fopen(void)
{
	return fopen(file, "r") ? 0 : -errno;
}
static int c_fopen_c(void)
{
	return fopen(file, "rc") ? 0 : -errno;
}
static int c_stat(void)
{
	struct stat st;
	return stat(file, &st) ? -errno : 0;
}
static int c_access(void) { return access(file, R_OK) ? -errno : 0; }
static int c_readlink(void)
{
	char buf[64];
	return readlink(file, buf, sizeof buf) < 0 ? -errno : 0;
}
static int c_mkdir(void)
{
	int r = mkdir(made, 0755) ? -errno : 0;
	rmdir(made);
	return r;
}
static int c_opendir(void)
{
	return opendir(dir) ? 0 : -errno;
}
static int c_fifo_rd(void) { return fd_result(open(fifo, O_RDONLY)); }
static int c_fifo_wr(void) { return fd_result(openat(AT_FDCWD, fifo, O_WRONLY)); }
static int c_fifo_fopen(void)
{
	return fopen(fifo, "r") ? 0 : -errno;
}

static void *run(void *arg)
{
	struct job *j = arg;
	int old;
	pthread_cleanup_push(cleanup, j);
	if (j->how == DISABLED)
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
	if (j->how == PENDING || j->how == DISABLED || j->how == ASYNC_KEPT)
		pthread_cancel(pthread_self());
	if (j->how == ASYNC_KEPT) {
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old);
		pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old);
	}
	j->call();
	j->returned = 1;
	if (j->how == ASYNC_KEPT) {
		pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &old);
		j->type_after = old;
	}
	if (j->how == DISABLED || j->how == ASYNC_KEPT)
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old);
	pthread_testcancel();
	pthread_cleanup_pop(0);
	return NULL;
}

static void one(const char *name, int (*call)(void), enum how how)
{
	static struct job jobs[64];
	static int njobs;
	struct job *j = &jobs[njobs++];
	j->name = name, j->call = call, j->how = how;
	pthread_t t;
	if (pthread_create(&t, NULL, run, j)) {
		printf("%s: pthread_create failed\n", name);
		return;
	}
	if (how == BLOCKED) {
		struct timespec d = {0, 200 * 1000 * 1000};
		nanosleep(&d, NULL);
		pthread_cancel(t);
	}
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 10;
	void *res;
	if (pthread_timedjoin_np(t, &res, &until)) {
		printf("%s: hung\n", name);
		fflush(stdout);
		return;
	}
	const char *hows[] = {"pending", "blocked", "disabled", "async kept"};
	printf("%s, %s: %s, call returned %s, cleanup %s", name, hows[how], res == PTHREAD_CANCELED ? "cancelled" : "ended",
	       j->returned ? "yes" : "no", j->cleaned ? "ran" : "not run");
	if (how == ASYNC_KEPT)
		printf(", type after %s", j->type_after == PTHREAD_CANCEL_ASYNCHRONOUS ? "async" : "deferred");
	printf("\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: cancelprobe DIR\n");
		return 2;
	}
	dir = argv[1];
	snprintf(file, sizeof file, "%s/cfile", dir);
	snprintf(fifo, sizeof fifo, "%s/cfifo", dir);
	snprintf(made, sizeof made, "%s/cmade", dir);
	unlink(fifo);
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || close(fd) || mkfifo(fifo, 0644)) {
		perror("cancelprobe: setup");
		return 1;
	}
	static const struct {
		const char *name;
		int (*call)(void);
	} pending[] = {
		{"open", c_open}, {"open64", c_open64}, {"openat", c_openat}, {"open O_CREAT", c_open_creat},
		{"creat", c_creat}, {"open of a missing file", c_missing}, {"fopen", c_fopen}, {"fopen rc", c_fopen_c},
		{"stat", c_stat}, {"access", c_access}, {"readlink", c_readlink}, {"mkdir", c_mkdir}, {"opendir", c_opendir},
	};
	for (size_t i = 0; i < sizeof pending / sizeof pending[0]; i++)
		one(pending[i].name, pending[i].call, PENDING);
	one("open", c_open, DISABLED);
	one("open", c_open, ASYNC_KEPT);
	one("open of a FIFO for reading", c_fifo_rd, BLOCKED);
	one("openat of a FIFO for writing", c_fifo_wr, BLOCKED);
	one("fopen of a FIFO", c_fifo_fopen, BLOCKED);
	unlink(fifo);
	unlink(file);
	unlink(made);
	return 0;
}
