/*
 * callbench: time one kind of syscall in a loop and print "MODE US_PER_OP".
 * usage: callbench MODE N
 * Built static, run natively (in a chroot), under proot and under droidroot
 * by test/bench/run.sh, inside the Debian test rootfs.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *deep = "/usr/share/doc/libc6/copyright";

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: callbench MODE N\n");
		return 2;
	}
	const char *mode = argv[1];
	int n = atoi(argv[2]);
	struct stat st;
	char buf[4096];
	double t0 = now();
	for (int i = 0; i < n; i++) {
		if (!strcmp(mode, "stat")) {
			if (stat(deep, &st))
				return 1;
		} else if (!strcmp(mode, "open")) {
			int fd = open(deep, O_RDONLY);
			if (fd < 0)
				return 1;
			close(fd);
		} else if (!strcmp(mode, "access")) {
			if (access(deep, R_OK))
				return 1;
		} else if (!strcmp(mode, "missing")) {
			if (!stat("/usr/share/doc/libc6/missing", &st))
				return 1;
		} else if (!strcmp(mode, "readlink")) {
			if (readlink("/proc/self/exe", buf, sizeof buf) < 0)
				return 1;
		} else if (!strcmp(mode, "getcwd")) {
			if (!getcwd(buf, sizeof buf))
				return 1;
		} else if (!strcmp(mode, "getppid")) {
			getppid();
		} else if (!strcmp(mode, "forkexec")) {
			pid_t p = fork();
			if (p == 0) {
				execl("/bin/true", "true", (char *)0);
				_exit(127);
			}
			int status;
			waitpid(p, &status, 0);
			if (!WIFEXITED(status) || WEXITSTATUS(status))
				return 1;
		} else {
			fprintf(stderr, "callbench: unknown mode %s\n", mode);
			return 2;
		}
	}
	printf("%s %.3f\n", mode, (now() - t0) / n);
	return 0;
}
