/*
 * robust - robust futex lists: set_robust_list/get_robust_list per thread, and robust mutexes
 * whose owner dies (killed, exiting, or a thread ending) while others wait.
 *
 * usage: robust
 *
 * Prints one line per check; the output is deterministic, so a run under droidroot with the
 * robust list emulation must print what a native run prints.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>

#define NTHREADS 8

static long getrl(int pid, void **head, size_t *len) { return syscall(SYS_get_robust_list, pid, head, len); }
static long setrl(void *head, size_t len) { return syscall(SYS_set_robust_list, head, len); }
static const char *en(long r) { return r < 0 ? strerrorname_np(errno) : "ok"; }

static pthread_barrier_t bar;
static pid_t tids[NTHREADS];
static void *heads[NTHREADS];
static int bad;

static void *listthread(void *arg)
{
	int i = (int)(long)arg;
	struct robust_list_head mine;
	void *orig, *h;
	size_t len = 0;
	tids[i] = gettid();
	if (getrl(0, &orig, &len) || len != sizeof mine || orig == NULL)
		bad++;
	mine.list.next = &mine.list;
	mine.futex_offset = 0;
	mine.list_op_pending = NULL;
	if (setrl(&mine, sizeof mine) || getrl(0, &h, &len) || h != &mine)
		bad++;
	if (setrl(&mine, sizeof mine - 1) != -1 || errno != EINVAL)
		bad++;
	if (getrl(gettid(), &h, &len) || h != &mine)
		bad++;
	heads[i] = &mine;
	pthread_barrier_wait(&bar); /* main reads every thread's head */
	pthread_barrier_wait(&bar);
	setrl(orig, sizeof mine);
	return NULL;
}

static void lists(void)
{
	pthread_t th[NTHREADS];
	pthread_barrier_init(&bar, NULL, NTHREADS + 1);
	for (int i = 0; i < NTHREADS; i++)
		pthread_create(&th[i], NULL, listthread, (void *)(long)i);
	pthread_barrier_wait(&bar);
	int same = 0;
	for (int i = 0; i < NTHREADS; i++) {
		void *h;
		size_t len;
		if (getrl(tids[i], &h, &len) == 0 && h == heads[i] && len == sizeof(struct robust_list_head))
			same++;
	}
	pthread_barrier_wait(&bar);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	printf("threads %d: own head ok %d, read from main %d\n", NTHREADS, bad == 0, same);
	void *h;
	size_t len;
	printf("get_robust_list(no such pid): %s\n", en(getrl(999999999, &h, &len)));
	printf("get_robust_list(bad len pointer): %s\n", en(getrl(0, &h, (size_t *)8)));
	printf("set_robust_list(bad len): %s\n", en(setrl(h, 1)));
}

/* Many short threads: each one's glibc-registered head is what get_robust_list returns. */
static int heads_ok;
static pthread_mutex_t count_mu = PTHREAD_MUTEX_INITIALIZER;

static void *shortthread(void *arg)
{
	(void)arg;
	void *h;
	size_t len;
	if (getrl(0, &h, &len) == 0 && h != NULL && len == sizeof(struct robust_list_head)) {
		pthread_mutex_lock(&count_mu);
		heads_ok++;
		pthread_mutex_unlock(&count_mu);
	}
	return NULL;
}

static void many(void)
{
	pthread_t th[50];
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < 50; i++)
			pthread_create(&th[i], NULL, shortthread, NULL);
		for (int i = 0; i < 50; i++)
			pthread_join(th[i], NULL);
	}
	printf("1000 threads: heads ok %d\n", heads_ok);
}

static pthread_mutex_t *shared_mutex(void)
{
	pthread_mutex_t *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(m, &a);
	return m;
}

static pid_t victim;
static void *killer(void *arg)
{
	(void)arg;
	usleep(300000); /* main is blocked in pthread_mutex_lock by now */
	kill(victim, SIGKILL);
	return NULL;
}

static int reap(pid_t pid)
{
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void lockcheck(const char *what, pthread_mutex_t *m)
{
	int r = pthread_mutex_lock(m);
	printf("%s: lock %s", what, r ? strerrorname_np(r) : "ok");
	if (r == EOWNERDEAD)
		printf(", consistent %s", pthread_mutex_consistent(m) ? "failed" : "ok");
	pthread_mutex_unlock(m);
	r = pthread_mutex_lock(m);
	printf(", relock %s\n", r ? strerrorname_np(r) : "ok");
	pthread_mutex_unlock(m);
}

static void *holder(void *arg)
{
	pthread_mutex_lock(arg);
	usleep(200000);
	return NULL; /* ends holding it */
}

static void mutexes(void)
{
	int p[2];
	char c;
	pthread_mutex_t *m = shared_mutex();
	/* The owner is killed while another process waits. */
	pipe(p);
	victim = fork();
	if (victim == 0) {
		pthread_mutex_lock(m);
		write(p[1], "x", 1);
		for (;;)
			pause();
	}
	read(p[0], &c, 1);
	pthread_t k;
	pthread_create(&k, NULL, killer, NULL);
	lockcheck("owner killed while waiting", m);
	pthread_join(k, NULL);
	printf("owner status %d\n", reap(victim));

	/* The owner exits holding it; nobody waits. */
	victim = fork();
	if (victim == 0) {
		pthread_mutex_lock(m);
		_exit(3);
	}
	printf("owner status %d\n", reap(victim));
	lockcheck("owner exited", m);

	/* Not made consistent: the mutex becomes unusable. */
	victim = fork();
	if (victim == 0) {
		pthread_mutex_lock(m);
		_exit(0);
	}
	reap(victim);
	int r = pthread_mutex_lock(m);
	pthread_mutex_unlock(m);
	int r2 = pthread_mutex_lock(m);
	printf("unrecovered: %s then %s\n", strerrorname_np(r), strerrorname_np(r2));

	/* A thread of this process ends holding a private robust mutex while main waits. */
	pthread_mutex_t pm;
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&pm, &a);
	pthread_t t;
	pthread_create(&t, NULL, holder, &pm);
	usleep(50000);
	lockcheck("thread ended holding it", &pm);
	pthread_join(t, NULL);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	lists();
	many();
	mutexes();
	return 0;
}
