/*
 * sysvipc - System V semaphores and shared memory across processes, with the kernel's errnos.
 *
 * usage: sysvipc          run every check
 *        sysvipc where    print "kernel" if the kernel holds this process's semaphore set
 *                         (it is in /proc/sysvipc/sem), "tracer" if not (emulated)
 *
 * Message queues too: errnos, type selection, a receiver blocked until a send, a sender blocked
 * on a full queue, IPC_RMID waking a receiver with EIDRM.
 *
 * Prints one line per check; the output is deterministic (no ids, pids or times), so a run under
 * droidroot --sysvipc must print exactly what a native run prints. Exits 0 unless a call that
 * must work fails.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/sem.h>
#include <sys/shm.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

union semun {
	int val;
	struct semid_ds *buf;
	unsigned short *array;
	struct seminfo *__buf;
};

static key_t key(int n) { return 0x44520000 | ((getpid() & 0xfff) << 4) | n; }

static const char *err(long r)
{
	static char b[64];
	if (r >= 0) {
		snprintf(b, sizeof b, "ok");
		return b;
	}
	snprintf(b, sizeof b, "%s", strerrorname_np(errno));
	return b;
}

#define SHOW(what, call) do { long r_ = (long)(call); printf("%s: %s\n", what, err(r_)); } while (0)
#define MUST(call) do { if ((long)(call) < 0) { printf("FAILED %s: %s\n", #call, strerror(errno)); exit(1); } } while (0)

static int semval(int id, int n) { return semctl(id, n, GETVAL); }

static void waitncnt(int id, int n, int cmd, int want)
{
	for (int i = 0; i < 10000 && semctl(id, n, cmd) != want; i++)
		usleep(1000);
	printf("%s %d\n", cmd == GETNCNT ? "ncnt" : "zcnt", semctl(id, n, cmd));
}

static int op(int id, int num, int delta, int flg)
{
	struct sembuf sb = {num, delta, flg};
	return semop(id, &sb, 1);
}

static int reap(pid_t pid)
{
	int st;
	if (waitpid(pid, &st, 0) < 0)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void errnos(void)
{
	union semun a;
	struct sembuf big[501];
	memset(big, 0, sizeof big);
	SHOW("semget private 0", semget(IPC_PRIVATE, 0, 0600));
	SHOW("semget missing key", semget(key(1), 1, 0600));
	SHOW("semget too many", semget(IPC_PRIVATE, 32001, 0600));
	int id = semget(key(1), 2, IPC_CREAT | 0600);
	MUST(id);
	SHOW("semget same key", semget(key(1), 2, 0) == id ? 0 : -1);
	SHOW("semget excl", semget(key(1), 2, IPC_CREAT | IPC_EXCL | 0600));
	SHOW("semget more sems", semget(key(1), 3, 0));
	SHOW("semop none", semop(id, big, 0));
	SHOW("semop too many", semop(id, big, 501));
	SHOW("semop bad id", semop(-1, big, 1));
	SHOW("semop bad num", op(id, 2, 1, 0));
	SHOW("semop nowait", op(id, 0, -1, IPC_NOWAIT));
	SHOW("semop zero", op(id, 0, 0, 0));
	SHOW("semop bad pointer", semop(id, (struct sembuf *)8, 1));
	SHOW("semop range", op(id, 0, 32767, 0) < 0 ? -1 : op(id, 0, 1, 0));
	printf("value %d\n", semval(id, 0));
	a.val = 0;
	SHOW("setval", semctl(id, 0, SETVAL, a));
	a.val = -1;
	SHOW("setval -1", semctl(id, 0, SETVAL, a));
	a.val = 32768;
	SHOW("setval 32768", semctl(id, 0, SETVAL, a));
	SHOW("getval num 2", semctl(id, 2, GETVAL));
	SHOW("bad cmd", semctl(id, 0, 1234));
	SHOW("negative id", semctl(-5, 0, GETVAL));
	unsigned short vals[2] = {7, 9}, got[2] = {0, 0};
	a.array = vals;
	SHOW("setall", semctl(id, 0, SETALL, a));
	a.array = got;
	SHOW("getall", semctl(id, 0, GETALL, a));
	printf("getall %d %d\n", got[0], got[1]);
	struct semid_ds ds;
	a.buf = &ds;
	SHOW("ipc_stat", semctl(id, 0, IPC_STAT, a));
	printf("stat nsems %lu mode %o key ok %d uid ok %d otime %d ctime %d\n", (unsigned long)ds.sem_nsems,
	       ds.sem_perm.mode, ds.sem_perm.__key == key(1), ds.sem_perm.uid == geteuid(), ds.sem_otime != 0,
	       ds.sem_ctime != 0);
	SHOW("semop", op(id, 1, -2, 0));
	semctl(id, 0, IPC_STAT, a);
	printf("otime set %d value %d pid ok %d\n", ds.sem_otime != 0, semval(id, 1), semctl(id, 1, GETPID) == getpid());
	ds.sem_perm.mode = 0640;
	SHOW("ipc_set", semctl(id, 0, IPC_SET, a));
	semctl(id, 0, IPC_STAT, a);
	printf("mode now %o\n", ds.sem_perm.mode);
	struct timespec ts = {0, 50 * 1000 * 1000};
	struct sembuf sb = {0, -100, 0};
	SHOW("semtimedop timeout", semtimedop(id, &sb, 1, &ts));
	ts.tv_nsec = 1000000000;
	SHOW("semtimedop bad timeout", semtimedop(id, &sb, 1, &ts));
	ts.tv_nsec = 0;
	SHOW("semtimedop zero timeout", semtimedop(id, &sb, 1, &ts));
	struct seminfo si;
	a.__buf = &si;
	SHOW("ipc_info", semctl(id, 0, IPC_INFO, a) >= 0 ? 0 : -1);
	printf("info semmsl %d semopm %d semvmx %d\n", si.semmsl, si.semopm, si.semvmx);
	SHOW("rmid", semctl(id, 0, IPC_RMID));
	SHOW("getval removed", semctl(id, 0, GETVAL));
	SHOW("semop removed", op(id, 0, 1, 0));
}

/* A producer and a consumer share a ring of 4 ints in shared memory, with the classic
 * empty/full semaphores; the consumer sums what it gets. */
static void prodcons(void)
{
	int sem = semget(IPC_PRIVATE, 3, 0600);
	int shm = shmget(IPC_PRIVATE, 4096, 0600);
	MUST(sem);
	MUST(shm);
	int *ring = shmat(shm, NULL, 0);
	MUST(ring == (void *)-1 ? -1 : 0);
	union semun a = {.val = 4};
	MUST(semctl(sem, 0, SETVAL, a)); /* empty slots */
	pid_t c = fork();
	if (c == 0) {
		long sum = 0;
		for (int i = 0; i < 200; i++) {
			MUST(op(sem, 1, -1, 0)); /* wait full */
			sum += ring[i % 4];
			MUST(op(sem, 0, 1, 0)); /* post empty */
		}
		printf("consumer sum %ld\n", sum);
		fflush(stdout);
		_exit(0);
	}
	for (int i = 0; i < 200; i++) {
		MUST(op(sem, 0, -1, 0));
		ring[i % 4] = i;
		MUST(op(sem, 1, 1, 0));
	}
	printf("consumer exit %d\n", reap(c));
	printf("empty %d full %d\n", semval(sem, 0), semval(sem, 1));
	MUST(shmdt(ring));
	MUST(shmctl(shm, IPC_RMID, NULL));
	MUST(semctl(sem, 0, IPC_RMID));
}

static void undo(void)
{
	int id = semget(IPC_PRIVATE, 1, 0600);
	union semun a = {.val = 1};
	MUST(semctl(id, 0, SETVAL, a));
	pid_t c = fork();
	if (c == 0) {
		MUST(op(id, 0, -1, SEM_UNDO)); /* take the lock and die holding it */
		usleep(100000);
		_exit(0);
	}
	while (semval(id, 0) != 0)
		usleep(1000);
	printf("locked by child: %d\n", semval(id, 0));
	SHOW("blocking take after owner exit", op(id, 0, -1, 0));
	printf("child exit %d value %d\n", reap(c), semval(id, 0));
	/* A child adds 3 with SEM_UNDO: exit takes them back. */
	c = fork();
	if (c == 0) {
		MUST(op(id, 0, 3, SEM_UNDO));
		_exit(0);
	}
	reap(c);
	printf("after undo of +3: %d\n", semval(id, 0));
	MUST(semctl(id, 0, IPC_RMID));
}

static void on_alarm(int s) { (void)s; }

static void rmid_and_eintr(void)
{
	int id = semget(IPC_PRIVATE, 2, 0600);
	pid_t c = fork();
	if (c == 0) {
		int r = op(id, 0, -1, 0);
		_exit(r < 0 ? errno : 0);
	}
	waitncnt(id, 0, GETNCNT, 1);
	MUST(semctl(id, 0, IPC_RMID));
	printf("sleeper after rmid: %s\n", strerrorname_np(reap(c)));

	id = semget(IPC_PRIVATE, 1, 0600);
	c = fork();
	if (c == 0) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_alarm;
		sigaction(SIGALRM, &sa, NULL);
		int r = op(id, 0, 0, 0); /* the value is 0: returns at once */
		if (r == 0)
			r = op(id, 0, -1, 0);
		_exit(r < 0 ? errno : 0);
	}
	waitncnt(id, 0, GETNCNT, 1);
	kill(c, SIGALRM);
	printf("sleeper after signal: %s\n", strerrorname_np(reap(c)));
	/* A signal without a handler (SIGCHLD's default is to ignore it) does not end the wait. */
	c = fork();
	if (c == 0) {
		if (fork() == 0)
			_exit(0); /* a SIGCHLD for the sleeper */
		int r = op(id, 0, -1, 0);
		_exit(r < 0 ? errno : 0);
	}
	waitncnt(id, 0, GETNCNT, 1);
	usleep(100000);
	MUST(op(id, 0, 1, 0));
	printf("sleeper after ignored SIGCHLD and post: %d\n", reap(c));

	/* A sleeper stopped and continued fails with EINTR (signal(7): semop is interrupted by
	 * stop signals), SIGTSTP at its default action as SIGSTOP. */
	for (int k = 0; k < 2; k++) {
		c = fork();
		if (c == 0) {
			int r = op(id, 0, -1, 0);
			_exit(r < 0 ? errno : 0);
		}
		waitncnt(id, 0, GETNCNT, 1);
		kill(c, k ? SIGTSTP : SIGSTOP);
		int st;
		MUST(waitpid(c, &st, WUNTRACED) == c ? 0 : -1);
		kill(c, SIGCONT);
		printf("sleeper after %s and SIGCONT (stopped %d): %s\n", k ? "SIGTSTP" : "SIGSTOP", WIFSTOPPED(st),
		       strerrorname_np(reap(c)));
	}
	printf("waiters left: %d\n", semctl(id, 0, GETNCNT));

	/* A sleeper killed by SIGKILL leaves the queue. */
	c = fork();
	if (c == 0) {
		op(id, 0, -1, 0);
		_exit(0);
	}
	waitncnt(id, 0, GETNCNT, 1);
	kill(c, SIGKILL);
	printf("killed sleeper: %d\n", reap(c));
	waitncnt(id, 0, GETNCNT, 0);
	MUST(op(id, 0, 1, 0));
	printf("value after post %d\n", semval(id, 0));
	MUST(semctl(id, 0, IPC_RMID));
}

static int tsem;
static void *sleeper(void *arg)
{
	(void)arg;
	int r = op(tsem, 0, -2, SEM_UNDO);
	return (void *)(long)(r < 0 ? errno : 0);
}

/* Threads of one process: one sleeps, another posts; SEM_UNDO belongs to the process. */
static void threads(void)
{
	tsem = semget(IPC_PRIVATE, 1, 0600);
	pid_t c = fork();
	if (c == 0) {
		pthread_t t[3];
		void *r[3];
		for (int i = 0; i < 3; i++)
			pthread_create(&t[i], NULL, sleeper, NULL);
		waitncnt(tsem, 0, GETNCNT, 3);
		MUST(op(tsem, 0, 6, 0));
		for (int i = 0; i < 3; i++)
			pthread_join(t[i], &r[i]);
		printf("threads woke: %ld %ld %ld, value %d\n", (long)r[0], (long)r[1], (long)r[2], semval(tsem, 0));
		_exit(0);
	}
	reap(c);
	printf("after the process exited (undo of 3 x -2): %d\n", semval(tsem, 0));
	MUST(semctl(tsem, 0, IPC_RMID));
}

static void shm(void)
{
	SHOW("shmget 0", shmget(IPC_PRIVATE, 0, 0600));
	SHOW("shmget missing", shmget(key(2), 10, 0600));
	int id = shmget(key(2), 10000, IPC_CREAT | 0600);
	MUST(id);
	SHOW("shmget bigger", shmget(key(2), 10001, 0));
	SHOW("shmget excl", shmget(key(2), 10, IPC_CREAT | IPC_EXCL));
	SHOW("shmat bad id", (long)shmat(-1, NULL, 0));
	SHOW("shmat unaligned", (long)shmat(id, (void *)0x1001, 0));
	char *p = shmat(id, NULL, 0);
	MUST(p == (void *)-1 ? -1 : 0);
	SHOW("shmat over it", (long)shmat(id, p, 0));
	struct shmid_ds ds;
	MUST(shmctl(id, IPC_STAT, &ds));
	printf("segsz %lu nattch %lu cpid ok %d mode %o atime %d\n", (unsigned long)ds.shm_segsz,
	       (unsigned long)ds.shm_nattch, ds.shm_cpid == getpid(), ds.shm_perm.mode, ds.shm_atime != 0);
	pid_t c = fork();
	if (c == 0) {
		struct shmid_ds d;
		shmctl(id, IPC_STAT, &d);
		strcpy(p, "written by the child");
		strcpy(p + 9000, "and at 9000");
		_exit(d.shm_nattch == 2 ? 0 : 1);
	}
	printf("child saw nattch 2: %d\n", reap(c) == 0);
	printf("parent reads: %s / %s\n", p, p + 9000);
	MUST(shmctl(id, IPC_STAT, &ds));
	printf("nattch after child exit %lu\n", (unsigned long)ds.shm_nattch);
	char *q = shmat(id, NULL, SHM_RDONLY);
	MUST(q == (void *)-1 ? -1 : 0);
	printf("second attach reads: %s\n", q);
	MUST(shmctl(id, IPC_RMID, NULL));
	MUST(shmctl(id, IPC_STAT, &ds));
	printf("after rmid: nattch %lu key %d dest %d\n", (unsigned long)ds.shm_nattch, ds.shm_perm.__key,
	       (ds.shm_perm.mode & 01000) != 0);
	SHOW("shmget removed key", shmget(key(2), 10, 0));
	SHOW("shmdt", shmdt(q));
	SHOW("shmdt again", shmdt(q));
	SHOW("shmdt unaligned", shmdt(p + 1));
	MUST(shmctl(id, IPC_STAT, &ds));
	printf("nattch %lu\n", (unsigned long)ds.shm_nattch);
	SHOW("shmdt last", shmdt(p));
	SHOW("stat destroyed", shmctl(id, IPC_STAT, &ds));
	SHOW("shmctl bad cmd", shmctl(0, 1234, &ds));
}

static void where(void)
{
	int id = semget(key(3), 1, IPC_CREAT | 0600);
	MUST(id);
	FILE *f = fopen("/proc/sysvipc/sem", "r");
	char line[512];
	int found = 0;
	while (f && fgets(line, sizeof line, f)) {
		int k, i;
		if (sscanf(line, "%d %d", &k, &i) == 2 && k == key(3) && i == id)
			found = 1;
	}
	printf("%s\n", found ? "kernel" : "tracer");
	semctl(id, 0, IPC_RMID);
}

struct m {
	long type;
	char text[64];
};

static void rcvshow(const char *what, int id, size_t size, long type, int flg)
{
	struct m m;
	memset(&m, 0, sizeof m);
	long n = msgrcv(id, &m, size, type, flg);
	if (n < 0)
		printf("%s: %s\n", what, strerrorname_np(errno));
	else
		printf("%s: type %ld %ld bytes \"%.*s\"\n", what, m.type, n, (int)n, m.text);
}

static int snd(int id, long type, const char *text, int flg)
{
	struct m m = {type, ""};
	strncpy(m.text, text, sizeof m.text - 1);
	return msgsnd(id, &m, strlen(text), flg);
}

static void msg(void)
{
	struct m big;
	memset(&big, 0, sizeof big);
	SHOW("msgget missing", msgget(key(4), 0600));
	int id = msgget(key(4), IPC_CREAT | 0600);
	MUST(id);
	SHOW("msgget excl", msgget(key(4), IPC_CREAT | IPC_EXCL | 0600));
	SHOW("msgsnd type 0", snd(id, 0, "x", 0));
	SHOW("msgsnd too big", msgsnd(id, &big, 8193, 0));
	SHOW("msgsnd bad pointer", msgsnd(id, (void *)8, 1, 0));
	SHOW("msgsnd bad id", snd(-1, 1, "x", 0));
	MUST(snd(id, 1, "one", 0));
	MUST(snd(id, 2, "two", 0));
	MUST(snd(id, 3, "three", 0));
	struct msqid_ds ds;
	MUST(msgctl(id, IPC_STAT, &ds));
	printf("qnum %lu cbytes %lu qbytes %lu lspid ok %d\n", (unsigned long)ds.msg_qnum,
	       (unsigned long)ds.__msg_cbytes, (unsigned long)ds.msg_qbytes, ds.msg_lspid == getpid());
	rcvshow("small buffer", id, 2, 1, 0);
	rcvshow("type <= 3", id, 64, -3, 0);
	rcvshow("except 2", id, 64, 2, MSG_EXCEPT);
	rcvshow("noerror", id, 2, 0, MSG_NOERROR);
	rcvshow("empty nowait", id, 64, 0, IPC_NOWAIT);
	SHOW("msgrcv bad id", msgrcv(-1, &big, 10, 0, 0));

	pid_t c = fork();
	if (c == 0) {
		rcvshow("child got", id, 64, 7, 0);
		_exit(0);
	}
	usleep(200000);
	MUST(snd(id, 5, "not for the child", 0));
	MUST(snd(id, 7, "for the child", 0));
	printf("child exit %d\n", reap(c));
	rcvshow("left", id, 64, 0, 0);

	MUST(msgctl(id, IPC_STAT, &ds));
	ds.msg_qbytes = 16;
	MUST(msgctl(id, IPC_SET, &ds));
	SHOW("full nowait", snd(id, 1, "0123456789abcdefg", IPC_NOWAIT));
	c = fork();
	if (c == 0) {
		for (int i = 0; i < 3; i++)
			MUST(snd(id, 1 + i, "12345678", 0));
		_exit(0);
	}
	usleep(200000);
	MUST(msgctl(id, IPC_STAT, &ds));
	printf("full: qnum %lu\n", (unsigned long)ds.msg_qnum);
	for (int i = 0; i < 3; i++)
		rcvshow("drain", id, 64, 0, 0);
	printf("sender exit %d\n", reap(c));

	/* A receiver stopped and continued sleeps on (msgrcv is restarted after a stop). */
	c = fork();
	if (c == 0) {
		struct m m;
		long r = msgrcv(id, &m, sizeof m.text, 0, 0);
		_exit(r < 0 ? 100 + errno : (int)r);
	}
	usleep(200000);
	kill(c, SIGSTOP);
	int st;
	MUST(waitpid(c, &st, WUNTRACED) == c ? 0 : -1);
	kill(c, SIGCONT);
	usleep(100000);
	MUST(snd(id, 5, "abc", 0));
	printf("receiver after SIGSTOP, SIGCONT and a send (stopped %d): %d\n", WIFSTOPPED(st), reap(c));

	c = fork();
	if (c == 0) {
		struct m m;
		int r = msgrcv(id, &m, sizeof m.text, 0, 0);
		_exit(r < 0 ? errno : 0);
	}
	usleep(200000);
	MUST(msgctl(id, IPC_RMID, NULL));
	printf("receiver after rmid: %s\n", strerrorname_np(reap(c)));
	SHOW("msgsnd removed", snd(id, 1, "x", 0));
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && strcmp(argv[1], "where") == 0) {
		where();
		return 0;
	}
	errnos();
	prodcons();
	undo();
	rmid_and_eintr();
	threads();
	shm();
	msg();
	return 0;
}
