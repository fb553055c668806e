/*
 * cwdprobe - the current directory across threads, fork and failed changes, for the tracer's
 * chdir/fchdir handling (which does not wait for their results).
 *
 * usage: cwdprobe DIR   (DIR: an existing directory with subdirectories a and b and a file f)
 *
 * Prints one line per step; the transcript must be the same under a real chroot.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *dir;
static int ready[2], resume[2];

static void show(const char *what)
{
	char buf[4096], link[4096];
	ssize_t n;
	struct stat st;
	const char *cwd = getcwd(buf, sizeof buf) ? buf : strerror(errno);
	n = readlink("/proc/self/cwd", link, sizeof link - 1);
	link[n < 0 ? 0 : n] = 0;
	printf("%s: getcwd %s, /proc/self/cwd %s, stat f %s", what, cwd, n < 0 ? strerror(errno) : link,
	       stat("f", &st) == 0 ? "ok" : strerror(errno));
	printf(", stat a/f %s\n", stat("a/f", &st) == 0 ? "ok" : strerror(errno));
}

/* A thread of its own cwd (cloned without CLONE_FS): changes it, says what a relative path
 * of two names finds from there, and waits in read (no traced call) until main is done. */
static char own_stack[256 << 10];
static int own_ready[2], own_resume[2];
static int own_cwd(void *arg)
{
	char line[256], c;
	struct stat st;
	int r = chdir(arg), e = errno;
	int n = snprintf(line, sizeof line, "own-cwd thread: chdir a -> %s, stat a/f %s, stat f %s\n",
			 r == 0 ? "ok" : strerror(e), stat("a/f", &st) == 0 ? "ok" : strerror(errno),
			 stat("f", &st) == 0 ? "ok" : strerror(errno));
	if (write(1, line, (size_t)n) != n || write(own_ready[1], "x", 1) != 1)
		return 1;
	while (read(own_resume[0], &c, 1) != 1)
		;
	return 0;
}

static void say(const char *what, int r)
{
	printf("%s -> %s\n", what, r == 0 ? "ok" : strerror(errno));
}

static void *chdir_a(void *arg)
{
	(void)arg;
	say("thread: chdir a", chdir("a"));
	return NULL;
}

static void *fchdir_b(void *arg)
{
	int fd = open(arg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	say("thread: fchdir b", fchdir(fd));
	close(fd);
	return NULL;
}

/* Changes directory, then stays alive blocked in read (no traced call) while main looks. */
static void *chdir_stay(void *arg)
{
	char c;
	say("thread: chdir DIR/a (stays)", chdir(arg));
	fflush(stdout);
	if (write(ready[1], "x", 1) != 1 || read(resume[0], &c, 1) != 1)
		return NULL;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	char path[4096];
	int fd;
	pid_t pid;
	int st;
	char c;

	if (argc != 2)
		return 2;
	setvbuf(stdout, NULL, _IONBF, 0);
	dir = argv[1];
	say("chdir DIR", chdir(dir));
	show("start");

	pthread_create(&t, NULL, chdir_a, NULL);
	pthread_join(t, NULL);
	show("after a thread's chdir");

	say("chdir ..", chdir(".."));
	snprintf(path, sizeof path, "%s/b", dir);
	pthread_create(&t, NULL, fchdir_b, path);
	pthread_join(t, NULL);
	show("after a thread's fchdir");

	if (pipe(ready) || pipe(resume))
		return 1;
	say("chdir DIR", chdir(dir));
	snprintf(path, sizeof path, "%s/a", dir);
	pthread_create(&t, NULL, chdir_stay, path);
	if (read(ready[0], &c, 1) != 1)
		return 1;
	show("while the thread that changed it runs");
	if (write(resume[1], "x", 1) != 1)
		return 1;
	pthread_join(t, NULL);

	say("chdir DIR", chdir(dir));
	show("before a thread of its own cwd");
	if (pipe(own_ready) || pipe(own_resume))
		return 1;
	if (clone(own_cwd, own_stack + sizeof own_stack, CLONE_VM | CLONE_THREAD | CLONE_SIGHAND | CLONE_SYSVSEM,
		  (void *)"a") < 0)
		return 1;
	if (read(own_ready[0], &c, 1) != 1)
		return 1;
	show("after a thread of its own cwd changed it");
	say("chdir a", chdir("a"));

	say("chdir f (a file)", chdir("../f"));
	show("after a failed chdir");
	say("chdir missing", chdir("missing"));
	show("after a failed chdir");
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	say("fchdir a file", fchdir(fd));
	close(fd);
	show("after a failed fchdir");

	say("chdir ../b", chdir("../b"));
	pid = fork();
	if (pid == 0) {
		show("child after fork");
		say("child: chdir ../a", chdir("../a"));
		show("child");
		_exit(0);
	}
	waitpid(pid, &st, 0);
	show("parent after the child's chdir");

	say("chdir DIR/a", chdir(path));
	fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	say("chdir /", chdir("/"));
	say("fchdir back", fchdir(fd));
	say("chdir ../b then fchdir back", chdir("../b") || fchdir(fd));
	show("end");
	return 0;
}
