/*
 * androidprobe - calls each system call droidroot answers for the Android app seccomp policy
 * (rewritten, emulated or refused; docs/android.md) and prints results and errnos, one line per
 * check, so that the output under --android-policy can be compared with the output without it.
 *
 * usage: androidprobe DIR     (DIR: an empty writable directory)
 *        androidprobe sigsys  (a guest's own SIGSYS filter is passed through untouched)
 *        androidprobe rseq    (prints rseq's errno: ENOSYS under a policy, EINVAL without)
 *
 * Calls whose answer the policy changes on purpose (rseq, clone3, futex_waitv, io_uring_setup,
 * ... are ENOSYS under it) are made but their results are not printed. The x86_64 legacy calls
 * are made with syscall(2), so the legacy numbers are used whatever glibc's wrappers do.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

static char dir[512];

static const char *path(const char *name)
{
	static char buf[4][600];
	static int i;
	i = (i + 1) % 4;
	snprintf(buf[i], sizeof buf[i], "%s/%s", dir, name);
	return buf[i];
}

/* show prints "what = ret" or "what = -1 ENAME". */
/* libc's epoll_wait (sys/epoll.h's struct epoll_event is declared packed below, by hand). */
int epoll_wait(int epfd, void *events, int maxevents, int timeout);

static void show(const char *what, long r)
{
	if (r < 0)
		printf("%s = -1 %s\n", what, strerrorname_np(errno));
	else
		printf("%s = %ld\n", what, r);
	fflush(stdout);
}

static __attribute__((unused)) long mtime_of(const char *p)
{
	struct stat st;
	if (stat(p, &st) < 0)
		return -1;
	return (long)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
}

static volatile int alarms;

static __attribute__((unused)) void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

static void legacy(void)
{
#ifdef SYS_access
	struct stat st;
	show("access file", syscall(SYS_access, path("f"), R_OK | W_OK));
	show("access missing", syscall(SYS_access, path("missing"), F_OK));
	show("access notdir", syscall(SYS_access, path("f/x"), F_OK));
	show("stat symlink", syscall(SYS_stat, path("l"), &st));
	printf("  mode %o size %ld\n", st.st_mode & S_IFMT, (long)st.st_size);
	show("lstat symlink", syscall(SYS_lstat, path("l"), &st));
	printf("  mode %o size %ld\n", st.st_mode & S_IFMT, (long)st.st_size);
	show("lstat missing", syscall(SYS_lstat, path("missing"), &st));
	show("lstat efault", syscall(SYS_lstat, (char *)1, &st));
	show("mkdir", syscall(SYS_mkdir, path("d"), 0750));
	show("mkdir again", syscall(SYS_mkdir, path("d"), 0750));
	stat(path("d"), &st);
	printf("  mode %o\n", st.st_mode & 07777);
	show("creat", syscall(SYS_creat, path("d/c"), 0600));
	show("rmdir notempty", syscall(SYS_rmdir, path("d")));
	show("rmdir notdir", syscall(SYS_rmdir, path("f")));
	show("rename", syscall(SYS_rename, path("d/c"), path("d/c2")));
	show("rename missing", syscall(SYS_rename, path("d/nope"), path("d/c3")));
	show("link", syscall(SYS_link, path("d/c2"), path("d/c4")));
	show("link exists", syscall(SYS_link, path("d/c2"), path("d/c4")));
	stat(path("d/c2"), &st);
	printf("  nlink %ld\n", (long)st.st_nlink);
	show("symlink", syscall(SYS_symlink, "c2", path("d/s")));
	char buf[64] = "";
	show("readlink", syscall(SYS_readlink, path("d/s"), buf, sizeof buf - 1));
	printf("  -> %s\n", buf);
	show("chmod", syscall(SYS_chmod, path("d/c2"), 0641));
	stat(path("d/c2"), &st);
	printf("  mode %o\n", st.st_mode & 07777);
	show("chown", syscall(SYS_chown, path("d/s"), 12, 34));
	stat(path("d/c2"), &st);
	printf("  owner %d:%d\n", (int)st.st_uid, (int)st.st_gid);
	show("lchown", syscall(SYS_lchown, path("d/s"), 56, 78));
	lstat(path("d/s"), &st);
	printf("  owner %d:%d\n", (int)st.st_uid, (int)st.st_gid);
	show("mknod fifo", syscall(SYS_mknod, path("d/p"), S_IFIFO | 0600, 0));
	stat(path("d/p"), &st);
	printf("  type %o\n", st.st_mode & S_IFMT);
	struct utimbuf ub = {.actime = 1000, .modtime = 2000};
	show("utime", syscall(SYS_utime, path("d/c2"), &ub));
	printf("  mtime %ld\n", mtime_of(path("d/c2")));
	struct timeval tv[2] = {{3000, 5000}, {4000, 250000}};
	show("utimes", syscall(SYS_utimes, path("d/c2"), tv));
	printf("  mtime %ld\n", mtime_of(path("d/c2")));
	tv[1].tv_usec = 1000000;
	show("utimes einval", syscall(SYS_utimes, path("d/c2"), tv));
	tv[1].tv_usec = 7000;
	int dfd = open(path("d"), O_RDONLY | O_DIRECTORY);
	show("futimesat", syscall(SYS_futimesat, dfd, "c2", tv));
	printf("  mtime %ld\n", mtime_of(path("d/c2")));
	close(dfd);
	show("unlink", syscall(SYS_unlink, path("d/c4")));
	show("unlink missing", syscall(SYS_unlink, path("d/c4")));
	show("unlink dir", syscall(SYS_unlink, path("d")));

	int p[2];
	show("pipe", syscall(SYS_pipe, p) == 0 ? 0 : -1);
	write(p[1], "x", 1);
	show("dup2 same open", syscall(SYS_dup2, p[0], p[0]) == p[0] ? 0 : -1);
	show("dup2 same closed", syscall(SYS_dup2, 1000, 1000));
	show("dup2 other", syscall(SYS_dup2, p[0], 200));
	show("dup2 bad", syscall(SYS_dup2, 1001, 200));
	/* libc's dup2 makes the dup2 number here too: the library makes dup3 (FlagLegacy). */
	show("libc dup2 same open", dup2(p[0], p[0]) == p[0] ? 0 : -1);
	show("libc dup2 same closed", dup2(1000, 1000));
	show("libc dup2 other", dup2(p[0], 201) == 201 ? 0 : -1);
	show("libc dup2 over", dup2(p[1], 201) == 201 ? 0 : -1);
	show("libc dup2 bad", dup2(1001, 201));
	show("libc dup2 range", dup2(p[0], 1 << 30));
	show("close 201", close(201));
	struct pollfd pf = {.fd = 200, .events = POLLIN};
	show("poll ready", syscall(SYS_poll, &pf, 1, 1000));
	printf("  revents %x\n", pf.revents);
	pf.fd = p[1];
	pf.events = POLLIN;
	show("poll timeout", syscall(SYS_poll, &pf, 1, 10));
	fd_set rs;
	FD_ZERO(&rs);
	FD_SET(p[0], &rs);
	struct timeval to = {1, 0};
	show("select ready", syscall(SYS_select, p[0] + 1, &rs, NULL, NULL, &to));
	printf("  isset %d left>0 %d\n", FD_ISSET(p[0], &rs), to.tv_sec > 0 || to.tv_usec > 0);
	to.tv_sec = 0;
	to.tv_usec = 20000;
	FD_ZERO(&rs);
	FD_SET(p[1], &rs);
	show("select timeout", syscall(SYS_select, p[1] + 1, &rs, NULL, NULL, &to));
	printf("  left %ld.%06ld\n", (long)to.tv_sec, (long)to.tv_usec);
	to.tv_sec = -1;
	show("select einval", syscall(SYS_select, 1, NULL, NULL, NULL, &to));
	to.tv_sec = 0;
	to.tv_usec = 1500000; /* more than a second is accepted */
	show("select usec>1s", syscall(SYS_select, 0, NULL, NULL, NULL, &(struct timeval){0, 1000}));
	show("epoll_create 0", syscall(SYS_epoll_create, 0));
	long ep = syscall(SYS_epoll_create, 1);
	show("epoll_create 1", ep >= 0 ? 0 : -1);
	struct epoll_event { uint32_t events; uint64_t data; } __attribute__((packed)) ev[2];
	show("epoll_wait", syscall(SYS_epoll_wait, ep, ev, 2, 0));
	show("epoll_wait einval", syscall(SYS_epoll_wait, ep, ev, 0, 0));
	/* libc's own poll and epoll_wait make the legacy numbers here: the fast path library
	 * makes ppoll and epoll_pwait in-process where the policy blocks them (FlagLegacy). */
	struct { uint32_t events; uint64_t data; } __attribute__((packed)) add = {POLLIN, 42};
	show("epoll_ctl add", syscall(SYS_epoll_ctl, ep, 1 /* EPOLL_CTL_ADD */, 200, &add));
	show("libc epoll_wait ready", epoll_wait((int)ep, ev, 2, 1000));
	printf("  events %x data %llu\n", ev[0].events, (unsigned long long)ev[0].data);
	show("libc epoll_wait einval", epoll_wait((int)ep, ev, 0, 0));
	show("libc epoll_wait ebadf", epoll_wait(1002, ev, 2, 0));
	show("libc epoll_wait efault", epoll_wait((int)ep, (void *)8, 2, 0));
	pf.fd = 200;
	pf.events = POLLIN;
	pf.revents = 0;
	show("libc poll ready", poll(&pf, 1, -1));
	printf("  revents %x\n", pf.revents);
	pf.fd = p[1];
	show("libc poll timeout", poll(&pf, 1, 10));
	struct pollfd *volatile unmapped = (void *)8; /* hidden from the compiler's bounds checks */
	volatile nfds_t too_many = 1u << 30;
	show("libc poll efault", poll(unmapped, 1, 0));
	show("libc poll einval", poll(&pf, too_many, 0));
	long in = syscall(SYS_inotify_init);
	show("inotify_init", in >= 0 ? 0 : -1);
	long efd = syscall(SYS_eventfd, 5);
	uint64_t val = 0;
	read(efd, &val, 8);
	show("eventfd", efd >= 0 ? (long)val : -1);
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR2);
	long sfd = syscall(SYS_signalfd, -1, &mask, 8);
	show("signalfd", sfd >= 0 ? 0 : -1);
	show("signalfd bad size", syscall(SYS_signalfd, -1, &mask, 3));
	time_t tt = 0;
	long now = syscall(SYS_time, &tt);
	show("time", now == tt && now > 1600000000 ? 0 : -1);
	show("time efault", syscall(SYS_time, (time_t *)1));
	show("alarm set", syscall(SYS_alarm, 10));
	show("alarm clear", syscall(SYS_alarm, 0));
	show("getpgrp", syscall(SYS_getpgrp) == getpgid(0) ? 0 : -1);
	struct sigaction alrm = {.sa_handler = on_alarm};
	sigaction(SIGALRM, &alrm, NULL);
	setitimer(ITIMER_REAL, &(struct itimerval){.it_value = {0, 50000}}, NULL);
	show("pause", syscall(SYS_pause));
	printf("  alarms %d\n", alarms);
	long pid = syscall(SYS_fork);
	if (pid == 0)
		_exit(7);
	int status = 0;
	waitpid(pid, &status, 0);
	show("fork", pid > 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	syscall(SYS_unlink, path("d/p"));
	syscall(SYS_unlink, path("d/s"));
	syscall(SYS_unlink, path("d/c2"));
	show("rmdir", syscall(SYS_rmdir, path("d")));
#endif
}

static void portable(void)
{
	/* accept -> accept4(..., 0): the AF_UNIX name mapping still applies. */
	int ls = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path("sock"));
	bind(ls, (struct sockaddr *)&sa, sizeof sa);
	listen(ls, 1);
	fcntl(ls, F_SETFL, O_NONBLOCK);
	show("accept empty", syscall(SYS_accept, ls, NULL, NULL));
	int cs = socket(AF_UNIX, SOCK_STREAM, 0);
	show("connect", connect(cs, (struct sockaddr *)&sa, sizeof sa));
	struct sockaddr_un peer;
	socklen_t len = sizeof peer;
	long as = syscall(SYS_accept, ls, &peer, &len);
	show("accept", as >= 0 ? 0 : -1);
	printf("  family %d len %d\n", peer.sun_family, (int)len);
	show("accept notsock", syscall(SYS_accept, 0 + 1000, NULL, NULL));
	len = sizeof sa;
	memset(&sa, 0, sizeof sa);
	getsockname(ls, (struct sockaddr *)&sa, &len);
	printf("  bound %s\n", strcmp(sa.sun_path, path("sock")) == 0 ? "same" : sa.sun_path);
	unlink(path("sock"));

	/* Answers the policy changes on purpose: made, not printed. */
	syscall(SYS_rseq, NULL, 0, 0, 0);
#ifdef SYS_clone3
	errno = 0;
	syscall(SYS_clone3, NULL, 0);
#endif
#ifdef SYS_futex_waitv
	syscall(SYS_futex_waitv, NULL, 0, 0, NULL, 0);
#endif
#ifdef SYS_io_uring_setup
	syscall(SYS_io_uring_setup, 0, NULL);
#endif
#ifdef SYS_landlock_create_ruleset
	syscall(SYS_landlock_create_ruleset, NULL, 0, 1);
#endif
#ifdef SYS_pkey_alloc
	syscall(SYS_pkey_alloc, 0, 0);
#endif
	/* Privileged calls: EPERM both ways (the probe runs as root under
	 * droidroot only when the caller is root: skip those). */
	show("syscall(-1)", syscall(-1));
	show("setfsuid query", syscall(SYS_setfsuid, -1) == (long)geteuid() ? 0 : -1);
	show("setfsgid query", syscall(SYS_setfsgid, -1) == (long)getegid() ? 0 : -1);
}

static volatile int got_nr = -1, got_errno = -1, got_code = -1;

static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	got_nr = si->si_syscall;
	got_errno = si->si_errno;
	got_code = si->si_code;
}

/* A guest's own seccomp filter that traps getppid (RET_DATA 0, a call Android allows) and accept
 * (RET_DATA 42, a call Android blocks): both SIGSYS reach the guest untouched. */
static int own_sigsys(void)
{
	struct sigaction act = {.sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO};
	sigaction(SIGSYS, &act, NULL);
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_accept, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP | 42),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof f / sizeof f[0], .filter = f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0) {
		perror("seccomp");
		return 1;
	}
	syscall(SYS_getppid);
	printf("getppid: sigsys nr %s errno %d code %d\n", got_nr == SYS_getppid ? "getppid" : "other", got_errno, got_code);
	got_nr = -1;
	syscall(SYS_accept, -1, NULL, NULL);
	printf("accept: sigsys nr %s errno %d code %d\n", got_nr == SYS_accept ? "accept" : "other", got_errno, got_code);
	printf("getpid still works: %d\n", getpid() > 0);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: androidprobe DIR | sigsys\n");
		return 2;
	}
	if (strcmp(argv[1], "sigsys") == 0)
		return own_sigsys();
	if (strcmp(argv[1], "rseq") == 0) {
		show("rseq", syscall(SYS_rseq, NULL, 0, 0, 0));
		return 0;
	}
	snprintf(dir, sizeof dir, "%s", argv[1]);
	int fd = open(path("f"), O_CREAT | O_WRONLY, 0644);
	close(fd);
	symlink("f", path("l"));
	legacy();
	portable();
	unlink(path("l"));
	unlink(path("f"));
	printf("done\n");
	return 0;
}
