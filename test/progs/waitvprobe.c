/*
 * waitvprobe: futex_waitv(2) conformance and stress, through libc's syscall()
 * as Wine calls it. Prints one line per case; the kernel's run and droidroot's
 * emulated one must print the same (e2e TestFutexWaitv).
 *
 *   waitvprobe            the conformance transcript
 *   waitvprobe stress N   N ping-pong round trips between two processes over a
 *                         shared file (two words each way), 8 threads contending
 *                         on one counter, and wakes racing registration; prints
 *                         "stress ok" or what went wrong
 *   waitvprobe mixed PROG waits woken by, and wakes waiting in, a process running
 *                         PROG (another build of this probe: static, dynamic) over a
 *                         shared file, both ways; prints the counts and indexes
 *   waitvprobe signals    waits interrupted by a signal whose handler has SA_RESTART
 *                         or not, on one word and two (EINTR, or the wait restarts)
 *   (waitvprobe waker FD, waitvprobe waiter FD: PROG's side of mixed)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif
#ifndef FUTEX_32
#define FUTEX_32 2
#endif
#ifndef FUTEX2_PRIVATE
#define FUTEX2_PRIVATE 128
#endif

struct waitv {
	uint64_t val, uaddr;
	uint32_t flags, reserved;
};

static long waitv(struct waitv *w, unsigned n, unsigned flags, struct timespec *to, int clk)
{
	long r = syscall(SYS_futex_waitv, w, n, flags, to, clk);
	return r < 0 ? -errno : r;
}

static long wake(uint32_t *addr, int n, int private)
{
	long r = syscall(SYS_futex, addr, FUTEX_WAKE | (private ? FUTEX_PRIVATE_FLAG : 0), n, NULL, NULL, 0);
	return r < 0 ? -errno : r;
}

static const char *res(long r)
{
	static char bufs[4][32];
	static int next;
	char *buf = bufs[next++ % 4];
	switch (r) {
	case -EINVAL: return "EINVAL";
	case -EFAULT: return "EFAULT";
	case -EAGAIN: return "EAGAIN";
	case -ETIMEDOUT: return "ETIMEDOUT";
	case -EINTR: return "EINTR";
	case -ENOSYS: return "ENOSYS";
	case -ENOMEM: return "ENOMEM";
	}
	snprintf(buf, 32, "%ld", r);
	return buf;
}

static struct timespec after(int clk, long ms)
{
	struct timespec t;
	clock_gettime(clk, &t);
	t.tv_nsec += (ms % 1000) * 1000000;
	t.tv_sec += ms / 1000 + t.tv_nsec / 1000000000;
	t.tv_nsec %= 1000000000;
	return t;
}

static void set(struct waitv *w, uint32_t *addr, uint64_t val, uint32_t flags)
{
	memset(w, 0, sizeof *w);
	w->uaddr = (uintptr_t)addr;
	w->val = val;
	w->flags = flags;
}

static uint32_t words[200] __attribute__((aligned(64)));

struct waker {
	uint32_t *word;
	int delay_ms, n, private;
	long ret;
};

static void *waker(void *p)
{
	struct waker *k = p;
	usleep(k->delay_ms * 1000);
	__atomic_store_n(k->word, 1, __ATOMIC_SEQ_CST);
	k->ret = wake(k->word, k->n, k->private);
	return NULL;
}

/* A wait on words[0..n) woken through words[idx] by another thread. */
static long woken(unsigned n, unsigned idx, uint32_t flags)
{
	struct waitv w[128];
	memset(words, 0, sizeof words);
	for (unsigned i = 0; i < n; i++)
		set(&w[i], &words[i], 0, flags);
	struct waker k = {&words[idx], 50, 1, !!(flags & FUTEX2_PRIVATE), 0};
	pthread_t t;
	pthread_create(&t, NULL, waker, &k);
	struct timespec to = after(CLOCK_MONOTONIC, 10000);
	long r = waitv(w, n, 0, &to, CLOCK_MONOTONIC);
	pthread_join(t, NULL);
	return r;
}

/* waitv10 waits at most 10 s: a lost wake shows as ETIMEDOUT, not a hang. */
static long waitv10(struct waitv *w, unsigned n)
{
	struct timespec to = after(CLOCK_MONOTONIC, 10000);
	return waitv(w, n, 0, &to, CLOCK_MONOTONIC);
}

/* ERR calls futex_waitv where every kernel that has it should refuse the call,
 * with a timeout, so that a kernel that checks less (argument checks changed
 * across versions) shows up as a difference, never as a hang. */
static long err_case(struct waitv *w, unsigned n, unsigned flags)
{
	struct timespec ts = after(CLOCK_MONOTONIC, 200);
	return waitv(w, n, flags, &ts, CLOCK_MONOTONIC);
}

/* ---- a signal during a wait ---- */

static void on_usr1(int sig)
{
	(void)sig;
}

struct poker {
	pthread_t target;
	int ready;
};

static void *poke(void *p)
{
	struct poker *k = p;
	__atomic_store_n(&k->ready, 1, __ATOMIC_RELEASE);
	usleep(50000);
	pthread_kill(k->target, SIGUSR1);
	return NULL;
}

/* A wait on n words (nobody wakes them) with a 1 s timeout, interrupted
 * 50 ms after the poking thread runs by a signal whose handler has
 * SA_RESTART or not: the kernel answers EINTR without it, and with it
 * restarts the wait (the timeout is absolute), which then times out. The
 * thread's start is not counted in the timeout (a loaded machine, a TCG
 * VM: starting a traced thread takes long there). */
static long interrupted(unsigned n, int restart)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sa.sa_flags = restart ? SA_RESTART : 0;
	sigaction(SIGUSR1, &sa, NULL);
	struct waitv w[4];
	memset(words, 0, sizeof words);
	for (unsigned i = 0; i < n; i++)
		set(&w[i], &words[i], 0, FUTEX_32);
	struct poker k = {pthread_self(), 0};
	pthread_t t;
	pthread_create(&t, NULL, poke, &k);
	while (!__atomic_load_n(&k.ready, __ATOMIC_ACQUIRE))
		usleep(1000);
	struct timespec to = after(CLOCK_MONOTONIC, 1000);
	long r = waitv(w, n, 0, &to, CLOCK_MONOTONIC);
	pthread_join(t, NULL);
	signal(SIGUSR1, SIG_DFL);
	return r;
}

static void conformance(void)
{
	struct waitv w[130];
	struct timespec ts;
	memset(words, 0, sizeof words);
	for (int i = 0; i < 130; i++)
		set(&w[i], &words[i % 100], 0, FUTEX_32);
	printf("probe (NULL, 0, 0, NULL, 0) = %s\n", res(waitv(NULL, 0, 0, NULL, 0)));
	printf("flags 1 = %s\n", res(err_case(w, 2, 1)));
	printf("nr 0 = %s\n", res(err_case(w, 0, 0)));
	printf("nr 129 = %s\n", res(err_case(w, 129, 0)));
	printf("NULL waiters, nr 1 = %s\n", res(err_case(NULL, 1, 0)));
	ts = after(CLOCK_MONOTONIC, 10);
	printf("bad clock = %s\n", res(waitv(w, 2, 0, &ts, CLOCK_BOOTTIME)));
	printf("timeout EFAULT = %s\n", res(waitv(w, 2, 0, (struct timespec *)16, CLOCK_MONOTONIC)));
	printf("waiters EFAULT = %s\n", res(err_case((struct waitv *)16, 2, 0)));
	set(&w[1], &words[1], 0, 0);
	printf("waiter without FUTEX_32 = %s\n", res(err_case(w, 2, 0)));
	set(&w[1], &words[1], 0, FUTEX_32 | 0x1000);
	printf("waiter unknown flag = %s\n", res(err_case(w, 2, 0)));
	set(&w[1], &words[1], 0, FUTEX_32);
	w[1].reserved = 1;
	printf("waiter reserved = %s\n", res(err_case(w, 2, 0)));
	/* (A value above 32 bits is EINVAL from Linux 6.7, and compared
	 * truncated before: not part of the transcript.) */
	set(&w[1], (uint32_t *)((char *)&words[1] + 1), 0, FUTEX_32);
	printf("unaligned word = %s\n", res(err_case(w, 2, 0)));
	set(&w[1], (uint32_t *)32, 0, FUTEX_32);
	printf("word EFAULT = %s\n", res(err_case(w, 2, 0)));
	set(&w[1], &words[1], 0, FUTEX_32);

	words[1] = 5;
	printf("value differs (2 words) = %s\n", res(err_case(w, 2, 0)));
	printf("value differs (1 word) = %s\n", res(err_case(&w[1], 1, 0)));
	words[1] = 0;
	ts = after(CLOCK_MONOTONIC, 20);
	printf("timeout monotonic (2 words) = %s\n", res(waitv(w, 2, 0, &ts, CLOCK_MONOTONIC)));
	ts = after(CLOCK_REALTIME, 20);
	printf("timeout realtime (2 words) = %s\n", res(waitv(w, 2, 0, &ts, CLOCK_REALTIME)));
	ts = after(CLOCK_MONOTONIC, 20);
	printf("timeout monotonic (1 word) = %s\n", res(waitv(w, 1, 0, &ts, CLOCK_MONOTONIC)));
	ts = after(CLOCK_MONOTONIC, -1000);
	printf("timeout in the past = %s\n", res(waitv(w, 2, 0, &ts, CLOCK_MONOTONIC)));

	printf("woken index (3 words, third) = %s\n", res(woken(3, 2, FUTEX_32)));
	printf("woken index (3 words, first, private) = %s\n", res(woken(3, 0, FUTEX_32 | FUTEX2_PRIVATE)));
	printf("woken index (128 words, last) = %s\n", res(woken(128, 127, FUTEX_32)));
	printf("woken index (1 word) = %s\n", res(woken(1, 0, FUTEX_32)));
	printf("wake without waiters = %s\n", res(wake(&words[5], 1, 0)));
}

/* waitvprobe signals: waits interrupted by a signal (see interrupted). */
static void signals(void)
{
	printf("signal without SA_RESTART (2 words) = %s\n", res(interrupted(2, 0)));
	printf("signal with SA_RESTART (2 words) = %s\n", res(interrupted(2, 1)));
	printf("signal without SA_RESTART (1 word) = %s\n", res(interrupted(1, 0)));
	printf("signal with SA_RESTART (1 word) = %s\n", res(interrupted(1, 1)));
}

/* ---- across processes: one file mapped at different addresses ---- */

static uint32_t *map_shared(int fd, int shift)
{
	/* A different address in each process: reserve a little first. */
	void *pad = shift ? mmap(NULL, 4096 * (size_t)shift, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : NULL;
	(void)pad;
	uint32_t *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	return p;
}

static int shm_file(void)
{
	char path[] = "/tmp/waitvprobe-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0 || ftruncate(fd, 4096) < 0) {
		perror("shm file");
		exit(2);
	}
	unlink(path);
	return fd;
}

static void cross_process(void)
{
	int fd = shm_file();
	uint32_t *a = map_shared(fd, 0);
	pid_t pid = fork();
	if (pid == 0) {
		uint32_t *b = map_shared(fd, 7);
		struct waitv w[2];
		set(&w[0], &b[1], 0, FUTEX_32);
		set(&w[1], &b[2], 0, FUTEX_32);
		__atomic_store_n(&b[0], 1, __ATOMIC_SEQ_CST); /* ready */
		long r = waitv10(w, 2);
		_exit(r == 1 ? 0 : 10 + (int)(r < 0 ? -r : r));
	}
	while (!__atomic_load_n(&a[0], __ATOMIC_SEQ_CST))
		usleep(1000);
	usleep(50000); /* let the child sleep */
	__atomic_store_n(&a[2], 1, __ATOMIC_SEQ_CST);
	long k = wake(&a[2], INT_MAX, 0);
	int st;
	waitpid(pid, &st, 0);
	printf("cross-process wake = %s, child %s\n", res(k), WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "woken at index 1" : "wrong");

	/* Wake counts: three waiting processes, wake 2 then 2 more. */
	memset(a, 0, 4096);
	pid_t kids[3];
	for (int i = 0; i < 3; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			struct waitv w[2];
			set(&w[0], &a[10 + i], 0, FUTEX_32);
			set(&w[1], &a[20], 0, FUTEX_32);
			__atomic_fetch_add(&a[0], 1, __ATOMIC_SEQ_CST);
			long r = waitv10(w, 2);
			_exit(r == 1 ? 0 : 1);
		}
	}
	while (__atomic_load_n(&a[0], __ATOMIC_SEQ_CST) < 3)
		usleep(1000);
	usleep(100000);
	__atomic_store_n(&a[20], 1, __ATOMIC_SEQ_CST);
	long k1 = wake(&a[20], 2, 0);
	usleep(50000);
	long k2 = wake(&a[20], 2, 0);
	int ok = 0;
	for (int i = 0; i < 3; i++) {
		waitpid(kids[i], &st, 0);
		ok += WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	printf("wake 2 of 3 = %s, then %s more; %d woken\n", res(k1), res(k2), ok);

	/* A waiter killed mid-wait does not absorb a wake-one. */
	memset(a, 0, 4096);
	pid_t victim = fork();
	if (victim == 0) {
		struct waitv w[2];
		set(&w[0], &a[30], 0, FUTEX_32);
		set(&w[1], &a[31], 0, FUTEX_32);
		__atomic_store_n(&a[0], 1, __ATOMIC_SEQ_CST);
		waitv10(w, 2);
		_exit(3);
	}
	while (!__atomic_load_n(&a[0], __ATOMIC_SEQ_CST))
		usleep(1000);
	usleep(50000);
	kill(victim, SIGKILL);
	waitpid(victim, &st, 0);
	pid_t live = fork();
	if (live == 0) {
		struct waitv w[2];
		set(&w[0], &a[32], 0, FUTEX_32);
		set(&w[1], &a[31], 0, FUTEX_32);
		__atomic_store_n(&a[1], 1, __ATOMIC_SEQ_CST);
		long r = waitv10(w, 2);
		_exit(r == 1 ? 0 : 1);
	}
	while (!__atomic_load_n(&a[1], __ATOMIC_SEQ_CST))
		usleep(1000);
	usleep(50000);
	__atomic_store_n(&a[31], 1, __ATOMIC_SEQ_CST);
	long k3 = wake(&a[31], 1, 0);
	waitpid(live, &st, 0);
	printf("after a killed waiter, wake one = %s, live waiter %s\n", res(k3),
	       WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "woken" : "not woken");
}

/* ---- stress ---- */

static uint32_t counter, lockword;
static int stress_n;

static void *contender(void *p)
{
	(void)p;
	struct waitv w[2];
	static uint32_t never;
	for (int i = 0; i < stress_n / 8; i++) {
		/* lock: 0 free, 1 taken */
		while (__atomic_exchange_n(&lockword, 1, __ATOMIC_ACQUIRE)) {
			set(&w[0], &lockword, 1, FUTEX_32 | FUTEX2_PRIVATE);
			set(&w[1], &never, 0, FUTEX_32 | FUTEX2_PRIVATE);
			long r = waitv10(w, 2);
			if (r != 0 && r != -EAGAIN) {
				printf("contender wait = %s\n", res(r));
				exit(1);
			}
		}
		counter++;
		__atomic_store_n(&lockword, 0, __ATOMIC_RELEASE);
		wake(&lockword, 1, 1);
	}
	return NULL;
}

static int stress(int n)
{
	stress_n = n;
	int fd = shm_file();
	uint32_t *a = map_shared(fd, 0);
	pid_t pid = fork();
	if (pid == 0) {
		/* ping-pong: the child waits for a[1] == i+1 (or a never-set a[3]), then sets a[2]. */
		uint32_t *b = map_shared(fd, 5);
		struct waitv w[2];
		for (int i = 0; i < n; i++) {
			for (;;) {
				uint32_t v = __atomic_load_n(&b[1], __ATOMIC_SEQ_CST);
				if (v == (uint32_t)i + 1)
					break;
				set(&w[0], &b[1], v, FUTEX_32);
				set(&w[1], &b[3], 0, FUTEX_32);
				long r = waitv10(w, 2);
				if (r != 0 && r != -EAGAIN)
					_exit(5);
			}
			__atomic_store_n(&b[2], (uint32_t)i + 1, __ATOMIC_SEQ_CST);
			wake(&b[2], 1, 0);
		}
		_exit(0);
	}
	struct waitv w[2];
	for (int i = 0; i < n; i++) {
		__atomic_store_n(&a[1], (uint32_t)i + 1, __ATOMIC_SEQ_CST);
		wake(&a[1], 1, 0);
		for (;;) {
			uint32_t v = __atomic_load_n(&a[2], __ATOMIC_SEQ_CST);
			if (v == (uint32_t)i + 1)
				break;
			set(&w[0], &a[2], v, FUTEX_32);
			set(&w[1], &a[3], 0, FUTEX_32);
			struct timespec to = after(CLOCK_MONOTONIC, 10000);
			long r = waitv(w, 2, 0, &to, CLOCK_MONOTONIC);
			if (r == -ETIMEDOUT) {
				printf("ping-pong: lost wake at round %d\n", i);
				kill(pid, SIGKILL);
				return 1;
			}
		}
	}
	int st;
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		printf("ping-pong child failed\n");
		return 1;
	}
	pthread_t t[8];
	for (int i = 0; i < 8; i++)
		pthread_create(&t[i], NULL, contender, NULL);
	for (int i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	if (counter != (uint32_t)(n / 8) * 8) {
		printf("contention: counter %u, want %d\n", counter, n / 8 * 8);
		return 1;
	}
	printf("stress ok\n");
	return 0;
}

/* ---- across programs: a process of another build (static, dynamic) ---- */

/* The other side of mixed, in the exec'd program: fd is the shared file. */
static int other_side(int waiter, int fd)
{
	uint32_t *b = map_shared(fd, 3);
	if (waiter) {
		struct waitv w[2];
		set(&w[0], &b[11], 0, FUTEX_32);
		set(&w[1], &b[12], 0, FUTEX_32);
		__atomic_store_n(&b[10], 1, __ATOMIC_SEQ_CST);
		long r = waitv10(w, 2);
		return r == 1 ? 0 : 10 + (int)(r < 0 ? -r : r);
	}
	while (!__atomic_load_n(&b[0], __ATOMIC_SEQ_CST))
		usleep(1000);
	usleep(50000);
	__atomic_store_n(&b[2], 1, __ATOMIC_SEQ_CST);
	long k = wake(&b[2], INT_MAX, 0);
	return k == 1 ? 0 : 20 + (int)(k < 0 ? -k : k);
}

static pid_t spawn(const char *prog, const char *role, int fd)
{
	char fds[16];
	snprintf(fds, sizeof fds, "%d", fd);
	pid_t pid = fork();
	if (pid == 0) {
		execl(prog, prog, role, fds, (char *)NULL);
		_exit(99);
	}
	return pid;
}

static void mixed(const char *prog)
{
	int fd = shm_file();
	uint32_t *a = map_shared(fd, 0);
	int st;
	/* This process waits, the other program wakes. */
	pid_t pid = spawn(prog, "waker", fd);
	struct waitv w[2];
	set(&w[0], &a[1], 0, FUTEX_32);
	set(&w[1], &a[2], 0, FUTEX_32);
	__atomic_store_n(&a[0], 1, __ATOMIC_SEQ_CST);
	long r = waitv10(w, 2);
	waitpid(pid, &st, 0);
	printf("woken by another program: index %s, its wake %s\n", res(r),
	       WIFEXITED(st) ? (WEXITSTATUS(st) == 0 ? "counted 1" : "wrong") : "killed");
	/* The other program waits, this process wakes. */
	pid = spawn(prog, "waiter", fd);
	while (!__atomic_load_n(&a[10], __ATOMIC_SEQ_CST))
		usleep(1000);
	usleep(50000);
	__atomic_store_n(&a[12], 1, __ATOMIC_SEQ_CST);
	long k = wake(&a[12], INT_MAX, 0);
	waitpid(pid, &st, 0);
	printf("waking another program: wake %s, it was %s\n", res(k),
	       WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "woken at index 1" : "not woken");
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 && !strcmp(argv[1], "signals")) {
		signals();
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "mixed")) {
		mixed(argv[2]);
		return 0;
	}
	if (argc == 3 && (!strcmp(argv[1], "waker") || !strcmp(argv[1], "waiter")))
		return other_side(!strcmp(argv[1], "waiter"), atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "stress"))
		return stress(atoi(argv[2]));
	conformance();
	cross_process();
	return 0;
}
