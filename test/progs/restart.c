/* restart.c - path syscalls restarted after a signal handler (SA_RESTART), and clone(CLONE_FS).
 *
 *   restart fifo DIR    mkfifo DIR/fifo; a child opens it for writing after 300 ms while the
 *                       parent's blocking open(O_RDONLY) is interrupted by SIGALRM handlers
 *                       (SA_RESTART, with a deep stack frame) every 20 ms; prints the open's
 *                       result and the number of handler runs (> 0 means it was restarted)
 *   restart clonefs DIR a child made with clone(CLONE_FS|SIGCHLD) chdirs into DIR; the parent,
 *                       sharing the fs struct, then prints getcwd()
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t handled;

static void onalarm(int sig) {
	/* A big frame below the interrupted call's stack pointer: it overwrites whatever a
	 * tracer put there. */
	volatile char big[16384];
	memset((char *)big, sig, sizeof big);
	handled++;
}

static int fifo(const char *dir) {
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/fifo", dir);
	unlink(path);
	if (mkfifo(path, 0600) != 0) {
		printf("mkfifo: %s\n", strerror(errno));
		return 1;
	}
	pid_t pid = fork();
	if (pid == 0) {
		usleep(300000);
		int fd = open(path, O_WRONLY);
		if (fd < 0)
			_exit(1);
		write(fd, "x", 1);
		_exit(0);
	}
	struct sigaction sa = {.sa_handler = onalarm, .sa_flags = SA_RESTART};
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = {{0, 20000}, {0, 20000}};
	setitimer(ITIMER_REAL, &it, NULL);
	int fd = open(path, O_RDONLY);
	int err = errno;
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	char c = 0;
	if (fd >= 0)
		read(fd, &c, 1);
	int st;
	waitpid(pid, &st, 0);
	printf("open=%s read=%c restarted=%s child=%d\n", fd >= 0 ? "ok" : strerror(err), c,
	       handled > 0 ? "yes" : "no", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	unlink(path);
	return fd >= 0 ? 0 : 1;
}

static char stack[65536] __attribute__((aligned(16)));

static int child(void *dir) { return chdir(dir) == 0 ? 0 : 1; }

static int clonefs(const char *dir) {
	pid_t pid = clone(child, stack + sizeof stack, CLONE_FS | SIGCHLD, (void *)dir);
	if (pid < 0) {
		printf("clone: %s\n", strerror(errno));
		return 1;
	}
	int st;
	waitpid(pid, &st, 0);
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof cwd)) {
		printf("getcwd: %s\n", strerror(errno));
		return 1;
	}
	struct stat a, b;
	int same = stat(".", &a) == 0 && stat(dir, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev;
	printf("child=%d cwd=%s same=%d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1, cwd, same);
	return 0;
}

int main(int argc, char **argv) {
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc == 3 && strcmp(argv[1], "fifo") == 0)
		return fifo(argv[2]);
	if (argc == 3 && strcmp(argv[1], "clonefs") == 0)
		return clonefs(argv[2]);
	fprintf(stderr, "usage: restart fifo DIR | restart clonefs DIR\n");
	return 2;
}
