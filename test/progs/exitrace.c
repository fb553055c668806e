/*
 * exitrace - a thread group that dies of SIGPIPE while another thread is creating threads.
 *
 * One thread creates threads in a loop (each returns at once); the main thread writes to a pipe
 * whose reader is closed, with SIGPIPE's default action: the group exits. A thread created in
 * that moment may reach its exit before its creator's clone event reaches a tracer (the kernel
 * kills the creator in its clone), which left droidroot waiting for that event for good.
 * Exit: killed by SIGPIPE (a shell shows 141).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static void *nothing(void *arg) { return arg; }

static void *spawner(void *arg)
{
	for (;;) {
		pthread_t t;
		if (pthread_create(&t, NULL, nothing, NULL) == 0)
			pthread_detach(t);
	}
	return arg;
}

int main(void)
{
	int p[2];
	pthread_t t;
	struct timespec ts = {0, 2000000};
	signal(SIGPIPE, SIG_DFL);
	if (pipe(p) < 0 || close(p[0]) < 0)
		return 2;
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t, NULL, spawner, NULL) != 0)
			return 2;
	nanosleep(&ts, NULL);
	write(p[1], "x", 1);
	return 3; /* not reached: SIGPIPE */
}
