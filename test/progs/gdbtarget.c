/* gdbtarget: the inferior of e2e TestGdb (gdb inside the guest, issue 16).
 *
 *   gdbtarget [N]      computes through a few noinline calls, in a thread too, raises
 *                      SIGUSR1 (handled) and forks a child that calls child_main
 *   gdbtarget wait F   lets any process attach (PR_SET_PTRACER, for Yama's ptrace_scope 1),
 *                      creates file F and sleeps until killed (for gdb -p)
 *
 * Built with -g -O0 so that gdb's breakpoints, backtraces and locals are the same under the
 * kernel's ptrace and droidroot's emulation of it. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int counter;

__attribute__((noinline)) static int inner(int x)
{
	int y = x * 3;
	counter += y;
	return y + 1;
}

__attribute__((noinline)) static int outer(int n)
{
	int sum = 0;
	for (int i = 0; i < n; i++)
		sum += inner(i);
	return sum;
}

static void *worker(void *arg)
{
	int *n = arg;
	*n = outer(*n);
	return NULL;
}

static void on_usr1(int sig)
{
	counter += sig;
}

__attribute__((noinline)) static int child_main(int n)
{
	return outer(n);
}

__attribute__((noinline)) static void wait_here(void)
{
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	if (argc > 2 && strcmp(argv[1], "wait") == 0) {
		prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0); /* EINVAL without Yama */
		close(open(argv[2], O_WRONLY | O_CREAT, 0644));
		wait_here();
	}
	int n = argc > 1 ? atoi(argv[1]) : 3;
	signal(SIGUSR1, on_usr1);
	int r = outer(n);
	printf("outer(%d) = %d\n", n, r);
	pthread_t th;
	int tn = 2;
	pthread_create(&th, NULL, worker, &tn);
	pthread_join(th, NULL);
	printf("thread: %d\n", tn);
	raise(SIGUSR1);
	pid_t pid = fork();
	if (pid == 0)
		_exit(child_main(1));
	int st;
	waitpid(pid, &st, 0);
	printf("child: %d, counter %d\n", WEXITSTATUS(st), counter);
	fflush(stdout);
	return 0;
}
