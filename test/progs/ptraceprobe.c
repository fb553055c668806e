/* ptraceprobe.c - a guest that traces its children with ptrace(2), for droidroot's guest ptrace
 * emulation (docs/ptrace.md). Each check prints one line; the e2e test compares them with the
 * same program run in a real chroot (the kernel's own ptrace).
 *
 *   traceme   PTRACE_TRACEME, the SIGSTOP stop, GETSIGINFO, SETOPTIONS, PTRACE_SYSCALL stops
 *             with GET_SYSCALL_INFO, GETREGSET, PEEKDATA/POKEDATA, process_vm_readv of a path
 *             argument at entry and exit (the guest's path), the exit event, EXITKILL, SIGCHLD
 *   fork      PTRACE_O_TRACEFORK: the fork event, GETEVENTMSG, the child's auto-attach stop
 *             and its exit, reported to the tracer, which is not its parent
 *   seize     PTRACE_SEIZE, INTERRUPT, a signal-delivery stop, a group stop, LISTEN, KILL
 *   attach    PTRACE_ATTACH to a running child, DETACH, waitid
 *   errors    the errors of requests on non-tracees, of attaching to oneself, of
 *             PR_SET_PTRACER naming no task (with or without Yama)
 *   kill      SIGKILL of a tracee held in a syscall stop: its exit event, then its death
 *   reporter  a crash-reporter-style child attaches to its parent (which allows it with
 *             PR_SET_PTRACER, as Yama's ptrace_scope 1 needs), waits for its stop, reads its
 *             registers (blocked in read), its memory (PEEKDATA, process_vm_readv, /proc/PID/mem)
 *             and /proc/PID/maps, changes a word (POKEDATA) and detaches
 *   seccomp   PTRACE_O_TRACESECCOMP with the tracee's own filter (RET_TRACE with data for
 *             getppid, uname, chdir; RET_ERRNO for getpid): the event stops, GETEVENTMSG,
 *             GET_SYSCALL_INFO's seccomp op, a call skipped with a result of the tracer's, a path
 *             call followed to its exit, faccessat2 (which Android's policy blocks), no stop for
 *             RET_ERRNO, and ENOSYS once the tracer drops the option
 *   waitfirst WNOHANG waits of the parent before and after its child's PTRACE_TRACEME: 0, then
 *             the child's stop (the fast path library's in-process waits end at the TRACEME)
 *   yama      Yama's ptrace_scope 1 (run only where it is 1, or droidroot's DROIDROOT_YAMA_FILE
 *             says so), CAP_SYS_PTRACE dropped: who may attach to the process as its
 *             PR_SET_PTRACER exception says (none, its child, any), a child to a sibling, the
 *             process to its child
 */
#define _GNU_SOURCE
#include <elf.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile long word = 0x1122334455667788L;
static volatile int sigchld;

static void on_chld(int sig) { (void)sig; sigchld++; }

static void die(const char *what) {
	printf("FAIL %s: %s\n", what, strerror(errno));
	exit(1);
}

static int waitfor(pid_t pid, int flags) {
	int st;
	for (;;) {
		pid_t r = waitpid(pid, &st, flags);
		if (r == pid || (pid == -1 && r > 0))
			return st;
		if (r < 0 && errno == EINTR)
			continue;
		die("waitpid");
	}
}

/* syscall_info reads the stop's syscall info: op, nr (entry) or rval (exit). */
static int syscall_info(pid_t pid, long *nr, long *rval, unsigned long *arg0) {
	struct __ptrace_syscall_info si;
	memset(&si, 0, sizeof si);
	if (ptrace(PTRACE_GET_SYSCALL_INFO, pid, (void *)sizeof si, &si) <= 0)
		die("GET_SYSCALL_INFO");
	if (si.op == PTRACE_SYSCALL_INFO_ENTRY) {
		*nr = si.entry.nr;
		*arg0 = si.entry.args[0];
	} else if (si.op == PTRACE_SYSCALL_INFO_EXIT) {
		*rval = si.exit.rval;
	}
	return si.op;
}

/* arg0 reads the first argument register from the NT_PRSTATUS register set. */
static unsigned long regs_arg0(pid_t pid, long *nr) {
	struct user_regs_struct r;
	struct iovec iov = {&r, sizeof r};
	if (ptrace(PTRACE_GETREGSET, pid, (void *)NT_PRSTATUS, &iov) < 0)
		die("GETREGSET");
#if defined(__x86_64__)
	*nr = r.orig_rax;
	return r.rdi;
#elif defined(__aarch64__)
	*nr = r.regs[8];
	return r.regs[0];
#endif
}

static void read_string(pid_t pid, unsigned long addr, char *buf, size_t n) {
	struct iovec local = {buf, n - 1}, remote = {(void *)addr, n - 1};
	memset(buf, 0, n);
	ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	if (got <= 0) { /* a page boundary: PEEKDATA word by word */
		for (size_t i = 0; i + 8 < n; i += 8) {
			errno = 0;
			long w = ptrace(PTRACE_PEEKDATA, pid, (void *)(addr + i), 0);
			if (errno)
				break;
			memcpy(buf + i, &w, 8);
			if (memchr(&w, 0, 8))
				break;
		}
	}
}

static void traceme(void) {
	pid_t pid = fork();
	if (pid == 0) {
		if (ptrace(PTRACE_TRACEME, 0, 0, 0) < 0)
			_exit(100);
		raise(SIGSTOP);
		syscall(SYS_getppid);
		if (chdir("/tmp") < 0)
			_exit(101);
		_exit((int)(word & 0x7f));
	}
	int st = waitfor(pid, 0);
	printf("traceme: first stop %s\n", WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP ? "SIGSTOP" : "other");
	siginfo_t si;
	if (ptrace(PTRACE_GETSIGINFO, pid, 0, &si) < 0)
		die("GETSIGINFO");
	printf("traceme: siginfo signo %s\n", si.si_signo == SIGSTOP ? "SIGSTOP" : "other");
	if (ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL) < 0)
		die("SETOPTIONS");
	int in_getppid = 0, in_chdir = 0, syscall_stops = 0, bad_status = 0;
	for (;;) {
		if (ptrace(PTRACE_SYSCALL, pid, 0, 0) < 0)
			die("PTRACE_SYSCALL");
		st = waitfor(pid, 0);
		if (WIFEXITED(st)) {
			printf("traceme: exited %d\n", WEXITSTATUS(st));
			break;
		}
		if (st >> 8 == (SIGTRAP | PTRACE_EVENT_EXIT << 8)) {
			unsigned long msg;
			ptrace(PTRACE_GETEVENTMSG, pid, 0, &msg);
			printf("traceme: exit event, status %lu\n", msg >> 8);
			continue;
		}
		if (!WIFSTOPPED(st) || WSTOPSIG(st) != (SIGTRAP | 0x80)) {
			bad_status++;
			continue;
		}
		syscall_stops++;
		long nr = -1, rval = 0, rnr = -1;
		unsigned long arg0 = 0;
		int op = syscall_info(pid, &nr, &rval, &arg0);
		char path[64];
		if (op == PTRACE_SYSCALL_INFO_ENTRY && nr == SYS_getppid) {
			in_getppid = 1;
			regs_arg0(pid, &rnr);
			printf("traceme: getppid entry, regset nr %s\n", rnr == SYS_getppid ? "ok" : "wrong");
			errno = 0;
			long w = ptrace(PTRACE_PEEKDATA, pid, (void *)&word, 0);
			printf("traceme: peekdata %s\n", w == 0x1122334455667788L && !errno ? "ok" : "wrong");
			if (ptrace(PTRACE_POKEDATA, pid, (void *)&word, (void *)0x1122334455667705L) < 0)
				die("POKEDATA");
		} else if (op == PTRACE_SYSCALL_INFO_EXIT && in_getppid) {
			in_getppid = 0;
			printf("traceme: getppid exit %s\n", rval == getpid() ? "= tracer" : "wrong");
		} else if (op == PTRACE_SYSCALL_INFO_ENTRY && nr == SYS_chdir) {
			in_chdir = 1;
			read_string(pid, arg0, path, sizeof path);
			printf("traceme: chdir entry %s\n", path);
		} else if (op == PTRACE_SYSCALL_INFO_EXIT && in_chdir) {
			in_chdir = 0;
			read_string(pid, regs_arg0(pid, &rnr), path, sizeof path);
			printf("traceme: chdir exit %ld, argument still %s\n", rval, path);
		}
	}
	printf("traceme: syscall stops %s, other stops %d, SIGCHLD %s\n", syscall_stops >= 5 ? "seen" : "too few",
		bad_status, sigchld > 0 ? "seen" : "missing");
}

static void fork_event(void) {
	pid_t pid = fork();
	if (pid == 0) {
		if (ptrace(PTRACE_TRACEME, 0, 0, 0) < 0)
			_exit(100);
		raise(SIGSTOP);
		pid_t g = fork();
		if (g == 0)
			_exit(3);
		int st;
		waitpid(g, &st, 0);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) + 10 : 99);
	}
	waitfor(pid, 0);
	if (ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACEFORK) < 0)
		die("SETOPTIONS");
	ptrace(PTRACE_CONT, pid, 0, 0);
	unsigned long msg = 0;
	pid_t grandchild = 0;
	int event = 0, gstop = 0, gexit = -1, cexit = -1;
	while (cexit < 0 || gexit < 0) {
		int st;
		pid_t w = waitpid(-1, &st, __WALL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			die("waitpid");
		}
		if (WIFEXITED(st)) {
			if (w == pid)
				cexit = WEXITSTATUS(st);
			else
				gexit = WEXITSTATUS(st);
			continue;
		}
		if (w == pid && st >> 8 == (SIGTRAP | PTRACE_EVENT_FORK << 8)) {
			ptrace(PTRACE_GETEVENTMSG, pid, 0, &msg);
			event = 1;
			grandchild = msg;
		} else if (w != pid && WSTOPSIG(st) == SIGSTOP) {
			gstop = 1;
		}
		ptrace(PTRACE_CONT, w, 0, 0);
	}
	printf("fork: event %d, message names the child %s, child stop %s, grandchild exit %d, child exit %d\n",
		event, grandchild > 0 ? "yes" : "no", gstop ? "SIGSTOP" : "none", gexit, cexit);
}

static void seize(void) {
	pid_t pid = fork();
	if (pid == 0) {
		for (;;)
			pause();
	}
	if (ptrace(PTRACE_SEIZE, pid, 0, PTRACE_O_TRACESYSGOOD) < 0)
		die("SEIZE");
	if (ptrace(PTRACE_INTERRUPT, pid, 0, 0) < 0)
		die("INTERRUPT");
	int st = waitfor(pid, 0);
	printf("seize: interrupt stop %s\n", st >> 16 == PTRACE_EVENT_STOP && WSTOPSIG(st) == SIGTRAP ? "PTRACE_EVENT_STOP" : "other");
	ptrace(PTRACE_CONT, pid, 0, 0);
	kill(pid, SIGSTOP);
	st = waitfor(pid, 0);
	printf("seize: signal stop %s\n", st >> 16 == 0 && WSTOPSIG(st) == SIGSTOP ? "SIGSTOP" : "other");
	ptrace(PTRACE_CONT, pid, 0, SIGSTOP);
	st = waitfor(pid, 0);
	printf("seize: group stop %s\n", st >> 16 == PTRACE_EVENT_STOP && WSTOPSIG(st) == SIGSTOP ? "PTRACE_EVENT_STOP SIGSTOP" : "other");
	printf("seize: listen %s\n", ptrace(PTRACE_LISTEN, pid, 0, 0) == 0 ? "ok" : strerror(errno));
	errno = 0;
	int r = waitpid(pid, &st, WNOHANG);
	printf("seize: listening, wait %s\n", r == 0 ? "has nothing" : "has a stop");
	if (ptrace(PTRACE_KILL, pid, 0, 0) < 0)
		kill(pid, SIGKILL);
	st = waitfor(pid, __WALL);
	while (WIFSTOPPED(st)) {
		ptrace(PTRACE_CONT, pid, 0, 0);
		st = waitfor(pid, __WALL);
	}
	printf("seize: killed %s\n", WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL ? "SIGKILL" : "other");
}

static void attach(void) {
	pid_t pid = fork();
	if (pid == 0) {
		for (;;)
			pause();
	}
	if (ptrace(PTRACE_ATTACH, pid, 0, 0) < 0)
		die("ATTACH");
	int st = waitfor(pid, 0);
	printf("attach: stop %s\n", WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP ? "SIGSTOP" : "other");
	printf("attach: detach %s\n", ptrace(PTRACE_DETACH, pid, 0, 0) == 0 ? "ok" : strerror(errno));
	errno = 0;
	printf("attach: after detach, peek %s\n", ptrace(PTRACE_PEEKDATA, pid, (void *)&word, 0) == -1 && errno == ESRCH ? "ESRCH" : "works");
	kill(pid, SIGTERM);
	siginfo_t si;
	memset(&si, 0, sizeof si);
	while (waitid(P_PID, pid, &si, WEXITED) < 0 && errno == EINTR)
		;
	printf("attach: waitid %s %s\n", si.si_code == CLD_KILLED ? "CLD_KILLED" : "other", si.si_status == SIGTERM ? "SIGTERM" : "other");
}

static void errors(void) {
	pid_t pid = fork();
	if (pid == 0) {
		for (;;)
			pause();
	}
	errno = 0;
	ptrace(PTRACE_CONT, pid, 0, 0);
	printf("errors: CONT of a non-tracee %s\n", strerror(errno));
	errno = 0;
	ptrace(PTRACE_ATTACH, getpid(), 0, 0);
	printf("errors: ATTACH to itself %s\n", strerror(errno));
	errno = 0;
	ptrace(PTRACE_SEIZE, getpid(), (void *)8, 0);
	printf("errors: SEIZE of itself with an address %s\n", strerror(errno));
	errno = 0;
	prctl(PR_SET_PTRACER, 0x3ffffff0, 0, 0, 0);
	printf("errors: PR_SET_PTRACER of no task %s\n", strerror(errno));
	kill(pid, SIGKILL);
	waitfor(pid, 0);
	errno = 0;
	int st;
	waitpid(-1, &st, WNOHANG);
	printf("errors: wait with no children %s\n", strerror(errno));
}

static void kill_held(void) {
	pid_t pid = fork();
	if (pid == 0) {
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		raise(SIGSTOP);
		for (;;)
			syscall(SYS_getppid);
	}
	waitfor(pid, 0);
	ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEEXIT);
	ptrace(PTRACE_SYSCALL, pid, 0, 0);
	int st = waitfor(pid, 0);
	printf("kill: held in %s\n", WSTOPSIG(st) == (SIGTRAP | 0x80) ? "a syscall stop" : "another stop");
	kill(pid, SIGKILL);
	for (;;) {
		st = waitfor(pid, __WALL);
		if (!WIFSTOPPED(st))
			break;
		printf("kill: %s\n", st >> 8 == (SIGTRAP | PTRACE_EVENT_EXIT << 8) ? "exit event" : "other stop");
		ptrace(PTRACE_CONT, pid, 0, 0);
	}
	printf("kill: %s\n", WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL ? "killed" : "other end");
}

/* proc_state returns the state letter of process pid (/proc/PID/stat's third field). */
static char proc_state(pid_t pid) {
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		die("open stat");
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		die("read stat");
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

static void reporter(void) {
	int p2c[2], c2p[2];
	if (pipe(p2c) < 0 || pipe(c2p) < 0)
		die("pipe");
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		char c;
		if (read(p2c[0], &c, 1) != 1)
			die("read");
		while (proc_state(parent) != 'S') /* until it sleeps in its read */
			usleep(1000);
		if (ptrace(PTRACE_ATTACH, parent, 0, 0) < 0)
			die("ATTACH to the parent");
		int st = waitfor(parent, 0);
		printf("reporter: parent stop %s\n", WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP ? "SIGSTOP" : "other");
		struct user_regs_struct r;
		struct iovec iov = {&r, sizeof r};
		if (ptrace(PTRACE_GETREGSET, parent, (void *)NT_PRSTATUS, &iov) < 0)
			die("GETREGSET");
#if defined(__x86_64__)
		long nr = r.orig_rax, ret = r.rax;
		unsigned long sp = r.rsp;
#elif defined(__aarch64__)
		long nr = r.regs[8], ret = r.regs[0];
		unsigned long sp = r.sp;
#endif
		printf("reporter: parent in read %s, result %ld, sp %s\n", nr == SYS_read ? "yes" : "no", ret,
		       sp > (unsigned long)&c - (1 << 20) && sp < (unsigned long)&c + (1 << 20) ? "near ours" : "elsewhere");
		errno = 0;
		long v = ptrace(PTRACE_PEEKDATA, parent, (void *)&word, 0);
		printf("reporter: peekdata %s\n", v == 0x1122334455667788L ? "ok" : strerror(errno));
		long w = 0;
		struct iovec local = {&w, sizeof w}, remote = {(void *)&word, sizeof w};
		printf("reporter: process_vm_readv %s\n", process_vm_readv(parent, &local, 1, &remote, 1, 0) == sizeof w && w == v ? "ok" : strerror(errno));
		char path[64];
		snprintf(path, sizeof path, "/proc/%d/mem", parent);
		int fd = open(path, O_RDONLY);
		w = 0;
		printf("reporter: /proc/PID/mem %s\n", fd >= 0 && pread(fd, &w, sizeof w, (off_t)(unsigned long)&word) == sizeof w && w == v ? "ok" : strerror(errno));
		if (fd >= 0)
			close(fd);
		snprintf(path, sizeof path, "/proc/%d/maps", parent);
		FILE *f = fopen(path, "r");
		char line[512];
		int exe = 0;
		while (f && fgets(line, sizeof line, f))
			if (strstr(line, "/ptraceprobe\n")) /* a host path under droidroot */
				exe++;
		if (f)
			fclose(f);
		printf("reporter: maps name the program %s\n", exe > 0 ? "yes" : "no");
		printf("reporter: pokedata %s\n", ptrace(PTRACE_POKEDATA, parent, (void *)&word, (void *)0x55L) == 0 ? "ok" : strerror(errno));
		printf("reporter: detach %s\n", ptrace(PTRACE_DETACH, parent, 0, 0) == 0 ? "ok" : strerror(errno));
		if (write(c2p[1], "x", 1) != 1)
			die("write");
		_exit(0);
	}
	prctl(PR_SET_PTRACER, pid, 0, 0, 0); /* EINVAL without Yama */
	char c;
	if (write(p2c[1], "x", 1) != 1)
		die("write");
	ssize_t n = read(c2p[0], &c, 1);
	printf("reporter: parent read %zd, word %#lx\n", n, word);
	int st = waitfor(pid, 0);
	printf("reporter: reporter exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	word = 0x1122334455667788L;
	close(p2c[0]), close(p2c[1]), close(c2p[0]), close(c2p[1]);
}

/* attach_to tries PTRACE_ATTACH of process target, waits for its stop and detaches. */
static const char *attach_to(pid_t target) {
	if (ptrace(PTRACE_ATTACH, target, 0, 0) < 0)
		return strerror(errno);
	int st = waitfor(target, 0);
	ptrace(PTRACE_DETACH, target, 0, 0);
	return WIFSTOPPED(st) ? "attached" : "no stop";
}

/* yama_case: after prctl(PR_SET_PTRACER, how: 0, the child's pid (1) or ANY (2)), a child
 * (or its own child, grandchild) attaches to this process, blocked in a read meanwhile. */
static void yama_case(const char *name, int how, int grandchild) {
	int p2c[2], c2p[2];
	if (pipe(p2c) < 0 || pipe(c2p) < 0)
		die("pipe");
	pid_t me = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		char c, res[64];
		if (read(p2c[0], &c, 1) != 1)
			die("read");
		pid_t g = grandchild ? fork() : 0;
		if (g == 0) {
			snprintf(res, sizeof res, "%s", attach_to(me));
			if (write(c2p[1], res, strlen(res)) < 0)
				die("write");
			_exit(0);
		}
		waitfor(g, 0);
		_exit(0);
	}
	long arg = how == 1 ? pid : how == 2 ? (long)PR_SET_PTRACER_ANY : 0;
	if (prctl(PR_SET_PTRACER, arg, 0, 0, 0) < 0)
		die("PR_SET_PTRACER");
	if (write(p2c[1], "x", 1) != 1)
		die("write");
	char buf[64] = {0};
	while (read(c2p[0], buf, sizeof buf - 1) < 0 && errno == EINTR)
		;
	printf("yama: %s: %s\n", name, buf);
	waitfor(pid, 0);
	prctl(PR_SET_PTRACER, 0, 0, 0, 0);
	close(p2c[0]), close(p2c[1]), close(c2p[0]), close(c2p[1]);
}

static void yama(void) {
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];
	if (syscall(SYS_capget, &h, d) < 0)
		die("capget");
	d[0].effective &= ~(1u << CAP_SYS_PTRACE);
	d[0].permitted &= ~(1u << CAP_SYS_PTRACE);
	if (syscall(SYS_capset, &h, d) < 0)
		die("capset");
	yama_case("a child, no exception", 0, 0);
	yama_case("the child named", 1, 0);
	yama_case("a grandchild, the child named", 1, 1);
	yama_case("a grandchild, no exception", 0, 1);
	yama_case("a grandchild, any", 2, 1);
	pid_t a = fork();
	if (a == 0) {
		for (;;)
			pause();
	}
	printf("yama: the parent to its child: %s\n", attach_to(a));
	pid_t b = fork();
	if (b == 0) {
		printf("yama: a child to its sibling: %s\n", attach_to(a));
		_exit(0);
	}
	waitfor(b, 0);
	kill(a, SIGKILL);
	waitfor(a, 0);
}

#if defined(__x86_64__)
#define PROBE_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define PROBE_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

/* skip_call makes the call pid is stopped at (a seccomp stop) not run and return ret. */
static void skip_call(pid_t pid, long ret) {
	struct user_regs_struct r;
	struct iovec iov = {&r, sizeof r};
	if (ptrace(PTRACE_GETREGSET, pid, (void *)NT_PRSTATUS, &iov) < 0)
		die("GETREGSET");
#if defined(__x86_64__)
	r.orig_rax = -1;
	r.rax = ret;
#elif defined(__aarch64__)
	int nr = -1;
	struct iovec niov = {&nr, sizeof nr};
	if (ptrace(PTRACE_SETREGSET, pid, (void *)NT_ARM_SYSTEM_CALL, &niov) < 0)
		die("SETREGSET NT_ARM_SYSTEM_CALL");
	r.regs[0] = ret;
#endif
	if (ptrace(PTRACE_SETREGSET, pid, (void *)NT_PRSTATUS, &iov) < 0)
		die("SETREGSET");
}

static void seccomp_stops(void) {
	pid_t pid = fork();
	if (pid == 0) {
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		raise(SIGSTOP);
		pid_t self = getpid(), parent = getppid(); /* the filter traces or refuses them */
		struct sock_filter f[] = {
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PROBE_AUDIT_ARCH, 1, 0),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE | 0x42),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_uname, 0, 1),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE | 0x43),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_chdir, 0, 1),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE | 0x44),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_faccessat2, 0, 1),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRACE | 0x45),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getpid, 0, 1),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		};
		struct sock_fprog prog = {sizeof f / sizeof f[0], f};
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
			die("seccomp");
		long a = syscall(SYS_getppid);
		struct utsname u;
		long b = syscall(SYS_uname, &u);
		long c = syscall(SYS_chdir, "/tmp");
		char cwd[64] = "";
		if (!getcwd(cwd, sizeof cwd))
			die("getcwd");
		long fa = syscall(SYS_faccessat2, AT_FDCWD, "/tmp", R_OK, 0); /* Android blocks it */
		errno = 0;
		long d = syscall(SYS_getpid);
		int derr = errno;
		syscall(SYS_tgkill, self, self, SIGSTOP); /* the tracer drops PTRACE_O_TRACESECCOMP */
		errno = 0;
		long e = syscall(SYS_getppid);
		int eerr = errno;
		errno = 0;
		long fb = syscall(SYS_faccessat2, AT_FDCWD, "/tmp", R_OK, 0);
		printf("seccomp: tracee: getppid %s, uname %ld, chdir %ld, cwd %s, faccessat2 %ld, getpid %ld %s\n",
		       a == parent ? "the parent" : "other", b, c, cwd, fa, d, strerror(derr));
		printf("seccomp: tracee: then getppid %ld %s, faccessat2 %ld %s\n", e, strerror(eerr), fb, strerror(errno));
		_exit(0);
	}
	waitfor(pid, 0);
	ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESECCOMP | PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL);
	ptrace(PTRACE_CONT, pid, 0, 0);
	for (;;) {
		int st = waitfor(pid, 0);
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			printf("seccomp: tracee exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
			break;
		}
		if (WSTOPSIG(st) == SIGSTOP) {
			printf("seccomp: tracee stops, options without TRACESECCOMP\n");
			ptrace(PTRACE_SETOPTIONS, pid, 0, PTRACE_O_TRACESYSGOOD | PTRACE_O_EXITKILL);
			ptrace(PTRACE_CONT, pid, 0, 0);
			continue;
		}
		if (st >> 8 != (SIGTRAP | PTRACE_EVENT_SECCOMP << 8)) {
			printf("seccomp: other stop %#x\n", st);
			ptrace(PTRACE_CONT, pid, 0, 0);
			continue;
		}
		unsigned long msg = 0;
		ptrace(PTRACE_GETEVENTMSG, pid, 0, &msg);
		struct __ptrace_syscall_info si;
		memset(&si, 0, sizeof si);
		long n = ptrace(PTRACE_GET_SYSCALL_INFO, pid, (void *)sizeof si, &si);
		printf("seccomp: event, message %#lx, info size %ld op %d, nr %s, ret_data %#x\n", msg, n, si.op,
		       si.seccomp.nr == SYS_getppid ? "getppid" : si.seccomp.nr == SYS_uname ? "uname" : si.seccomp.nr == SYS_chdir ? "chdir" : si.seccomp.nr == SYS_faccessat2 ? "faccessat2" : "other",
		       si.seccomp.ret_data);
		if (msg == 0x43) {
			skip_call(pid, 77);
		} else if (msg == 0x44) {
			char path[16];
			read_string(pid, si.seccomp.args[0], path, sizeof path);
			ptrace(PTRACE_SYSCALL, pid, 0, 0);
			st = waitfor(pid, 0);
			long nr = 0, rval = -1;
			unsigned long arg0;
			int op = WSTOPSIG(st) == (SIGTRAP | 0x80) ? syscall_info(pid, &nr, &rval, &arg0) : -1;
			printf("seccomp: chdir %s, then a syscall stop op %d rval %ld\n", path, op, rval);
		}
		ptrace(PTRACE_CONT, pid, 0, 0);
	}
}

/* waitfirst: the parent's WNOHANG waits before its child makes PTRACE_TRACEME (nothing to
 * report: 0), then until the child's SIGSTOP stop shows, which the parent, a tracer from the
 * TRACEME on, must see: under droidroot the first waits are the fast path library's, in-process,
 * and the later ones the tracer's (a wait made in-process would poll forever). */
static void waitfirst(void) {
	int go[2];
	if (pipe(go) != 0)
		die("pipe");
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		char c;
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		raise(SIGSTOP);
		_exit(7);
	}
	int st = 0;
	pid_t r = waitpid(pid, &st, WNOHANG);
	printf("waitfirst: before the TRACEME %d\n", (int)r);
	if (write(go[1], "x", 1) != 1)
		die("write");
	for (int polls = 0; (r = waitpid(pid, &st, WNOHANG)) == 0; polls++) {
		if (polls == 10000) { /* 10 s */
			printf("waitfirst: no stop seen\n");
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return;
		}
		usleep(1000);
	}
	printf("waitfirst: %s, %s\n", r == pid ? "the child" : "another", WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP ? "stopped SIGSTOP" : "not stopped");
	ptrace(PTRACE_CONT, pid, 0, 0);
	r = waitpid(pid, &st, 0);
	printf("waitfirst: exited %d\n", r == pid && WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	close(go[0]);
	close(go[1]);
}

int main(int argc, char **argv) {
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_chld;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGCHLD, &sa, 0);
	setvbuf(stdout, 0, _IONBF, 0);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "traceme"))
			traceme();
		else if (!strcmp(argv[i], "fork"))
			fork_event();
		else if (!strcmp(argv[i], "seize"))
			seize();
		else if (!strcmp(argv[i], "attach"))
			attach();
		else if (!strcmp(argv[i], "errors"))
			errors();
		else if (!strcmp(argv[i], "kill"))
			kill_held();
		else if (!strcmp(argv[i], "reporter"))
			reporter();
		else if (!strcmp(argv[i], "yama"))
			yama();
		else if (!strcmp(argv[i], "seccomp"))
			seccomp_stops();
		else if (!strcmp(argv[i], "waitfirst"))
			waitfirst();
	}
	return 0;
}
