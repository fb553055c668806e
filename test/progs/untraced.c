/*
 * untraced - a guest process must never run untraced (issue 18): clone(CLONE_UNTRACED), through
 * glibc's clone() and as a raw fork-like syscall, must give a child droidroot traces.
 *
 * For each way, the child reads /etc/hostname (a translated path call: under droidroot an
 * untraced child gets ENOSYS from the filter's RET_TRACE with no tracer, or, without a filter,
 * the host's file) and its TracerPid (0, as in a chroot: droidroot's tracing is not shown, and
 * the guest parent has not seized it yet), then waits; the parent tries PTRACE_SEIZE on it (EPERM
 * when droidroot traces it and emulates no guest ptrace; a guest that could really seize it
 * would let its calls through; with droidroot's guest ptrace emulation the seize works and
 * droidroot stays its real tracer), then lets it exit, or kills it once seized. Under droidroot
 * every line reads (with DROIDROOT_GUEST_PTRACE=0: seize EPERM, exit 0):
 *
 *   WAY hostname droidroot-busybox
 *   WAY tracerpid 0
 *   WAY seize ok
 *   WAY signal 9
 *
 * usage: untraced
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int ready[2], go[2];
static const char *way;

/* errname is errno's name, or its number. */
static const char *errname(int e)
{
	static char buf[16];
	const char *n = strerrorname_np(e);
	if (n)
		return n;
	snprintf(buf, sizeof buf, "%d", e);
	return buf;
}

/* readall reads path into buf (NUL-terminated, at most size-1 bytes); -errno on failure. */
static int readall(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, buf, size - 1);
	int e = errno;
	close(fd);
	if (n < 0)
		return -e;
	buf[n] = 0;
	return 0;
}

/* child reports what a traced child sees, then waits for the parent's word. */
static int child(void *arg)
{
	(void)arg;
	char buf[4096];
	int r = readall("/etc/hostname", buf, sizeof buf);
	if (r < 0)
		dprintf(1, "%s hostname %s\n", way, errname(-r));
	else
		dprintf(1, "%s hostname %.*s\n", way, (int)strcspn(buf, "\n"), buf);
	r = readall("/proc/self/status", buf, sizeof buf);
	const char *tp = r < 0 ? NULL : strstr(buf, "\nTracerPid:");
	if (r < 0)
		dprintf(1, "%s tracerpid %s\n", way, errname(-r));
	else if (!tp)
		dprintf(1, "%s tracerpid unknown\n", way);
	else
		dprintf(1, "%s tracerpid %d\n", way, atoi(tp + 11));
	char c = 0;
	if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
		return 2;
	return 0;
}

/* parent seizes (or fails to seize) pid, lets it go and reports how it ended. */
static void parent(pid_t pid)
{
	char c;
	if (pid < 0) {
		dprintf(1, "%s clone %s\n", way, errname(errno));
		return;
	}
	if (read(ready[0], &c, 1) != 1) {
		dprintf(1, "%s ready: %s\n", way, errname(errno));
		return;
	}
	if (ptrace(PTRACE_SEIZE, pid, 0, 0) == 0) {
		dprintf(1, "%s seize ok\n", way);
		kill(pid, SIGKILL); /* a seized child cannot be detached unstopped */
	} else {
		dprintf(1, "%s seize %s\n", way, errname(errno));
		/* The word only for a child that reads it: left in the pipe, the next child would
		   take it and exit before its parent looks at it. */
		c = 0;
		if (write(go[1], &c, 1) != 1)
			dprintf(1, "%s go: %s\n", way, errname(errno));
	}
	int st;
	if (waitpid(pid, &st, __WALL) != pid)
		dprintf(1, "%s waitpid %s\n", way, errname(errno));
	else if (WIFEXITED(st))
		dprintf(1, "%s exit %d\n", way, WEXITSTATUS(st));
	else
		dprintf(1, "%s signal %d\n", way, WIFSIGNALED(st) ? WTERMSIG(st) : -1);
}

int main(void)
{
	static char stack[256 * 1024] __attribute__((aligned(16)));
	if (pipe(ready) || pipe(go)) {
		perror("pipe");
		return 1;
	}

	way = "glibc-clone";
	parent(clone(child, stack + sizeof stack, CLONE_UNTRACED | SIGCHLD, NULL));

	/* The raw call, fork-like (no new stack): flags are the first argument on every arch. */
	way = "raw-clone";
	long pid = syscall(SYS_clone, CLONE_UNTRACED | SIGCHLD, 0, 0, 0, 0);
	if (pid == 0)
		_exit(child(NULL));
	parent(pid);
	return 0;
}
