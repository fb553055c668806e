/*
 * execstop: the exec stop a tracer sees (issue 16). Run in the Debian rootfs by e2e
 * TestExecStop, under droidroot and in a real chroot; the lines must be the same.
 *
 *   execstop MODE TARGET   trace TARGET ("TARGET exit" runs the exit mode below)
 *   execstop exit          (the target) compare /proc/self/auxv with getauxval, exit 7
 *
 * MODE: "legacy" (PTRACE_TRACEME, exec, the post-exec SIGTRAP), "event" (PTRACE_O_TRACEEXEC)
 * or "syscall" (PTRACE_SYSCALL across the exec: execve entry, the exec event, execve's exit,
 * then the program's first call). At the exec stop: pc is AT_ENTRY (static) or ld.so's entry
 * (AT_BASE + its e_entry), sp points at argc, the other registers are 0, /proc/PID/auxv has
 * the program's AT_PHDR and AT_EXECFN (at a PTRACE_EVENT_EXEC stop, x86_64's rax is still
 * -ENOSYS: the event comes before execve returns). Then (legacy, event) a breakpoint at
 * AT_ENTRY is hit, and the program exits 7.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__x86_64__)
typedef struct user_regs_struct regs_t;
#define PC(r) ((r).rip)
#define SP(r) ((r).rsp)
#define BP_INSN 0xccULL
#define BP_MASK 0xffULL
#define BP_PC_AFTER 1
#elif defined(__aarch64__)
struct aregs {
	uint64_t x[31], sp, pc, pstate;
};
typedef struct aregs regs_t;
#define PC(r) ((r).pc)
#define SP(r) ((r).sp)
#define BP_INSN 0xd4200000ULL
#define BP_MASK 0xffffffffULL
#define BP_PC_AFTER 0
#else
#error unsupported architecture
#endif

static const char *mode;

static int getregs(pid_t pid, regs_t *r)
{
	struct iovec iov = {r, sizeof *r};
	return ptrace(PTRACE_GETREGSET, pid, (void *)NT_PRSTATUS, &iov) == 0 && iov.iov_len == sizeof *r ? 0 : -1;
}

static int setregs(pid_t pid, regs_t *r)
{
	struct iovec iov = {r, sizeof *r};
	return ptrace(PTRACE_SETREGSET, pid, (void *)NT_PRSTATUS, &iov);
}

/* The general registers other than pc, sp (and flags, segments) that are not 0. */
static int nonzero(const regs_t *r, char *names, size_t n)
{
	int count = 0;
	names[0] = 0;
#if defined(__x86_64__)
	struct {
		const char *name;
		unsigned long long v;
	} g[] = {{"rax", r->rax}, {"rbx", r->rbx}, {"rcx", r->rcx}, {"rdx", r->rdx}, {"rsi", r->rsi},
		 {"rdi", r->rdi}, {"rbp", r->rbp}, {"r8", r->r8}, {"r9", r->r9}, {"r10", r->r10},
		 {"r11", r->r11}, {"r12", r->r12}, {"r13", r->r13}, {"r14", r->r14}, {"r15", r->r15}};
	for (size_t i = 0; i < sizeof g / sizeof g[0]; i++)
		if (g[i].v) {
			snprintf(names + strlen(names), n - strlen(names), " %s", g[i].name);
			count++;
		}
#else
	for (int i = 0; i < 31; i++)
		if (r->x[i]) {
			snprintf(names + strlen(names), n - strlen(names), " x%d", i);
			count++;
		}
	if (r->pstate & 0xf0000000)
		snprintf(names + strlen(names), n - strlen(names), " nzcv"), count++;
#endif
	return count;
}

static uint64_t auxv_of(const char *file, uint64_t type, int *found)
{
	uint64_t a[2 * 64];
	int fd = open(file, O_RDONLY);
	ssize_t n;
	*found = 0;
	if (fd < 0)
		return 0;
	n = read(fd, a, sizeof a);
	close(fd);
	for (ssize_t i = 0; (i + 2) * 8 <= n; i += 2) {
		if (a[i] == type) {
			*found = 1;
			return a[i + 1];
		}
		if (a[i] == AT_NULL)
			break;
	}
	return 0;
}

static int peek(pid_t pid, uint64_t addr, uint64_t *v)
{
	errno = 0;
	long w = ptrace(PTRACE_PEEKDATA, pid, (void *)addr, 0);
	if (errno)
		return -1;
	*v = (uint64_t)w;
	return 0;
}

static void peekstr(pid_t pid, uint64_t addr, char *buf, size_t n)
{
	size_t i = 0;
	while (i + 8 < n) {
		uint64_t w;
		if (peek(pid, addr + i, &w) < 0)
			break;
		memcpy(buf + i, &w, 8);
		if (memchr(&w, 0, 8))
			return;
		i += 8;
	}
	buf[i] = 0;
}

static int wait_for(pid_t pid, int *st)
{
	int r;
	while ((r = waitpid(pid, st, __WALL)) < 0 && errno == EINTR)
		;
	return r;
}

static int self_exit(void)
{
	int fe, fb, fp;
	uint64_t e = auxv_of("/proc/self/auxv", AT_ENTRY, &fe);
	uint64_t b = auxv_of("/proc/self/auxv", AT_BASE, &fb);
	uint64_t p = auxv_of("/proc/self/auxv", AT_PHDR, &fp);
	printf("  target: /proc/self/auxv AT_ENTRY %s, AT_BASE %s, AT_PHDR %s getauxval\n",
	       fe && e == getauxval(AT_ENTRY) ? "==" : "!=", fb && b == getauxval(AT_BASE) ? "==" : "!=",
	       fp && p == getauxval(AT_PHDR) ? "==" : "!=");
	fflush(stdout);
	return 7;
}

static int trace(const char *target)
{
	int st;
	regs_t r;
	char file[64], names[256], execfn[256];
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		if (strcmp(mode, "legacy"))
			raise(SIGSTOP);
		execl(target, target, "exit", (char *)0);
		_exit(127);
	}
	if (strcmp(mode, "legacy")) {
		if (wait_for(pid, &st) < 0 || !WIFSTOPPED(st) || WSTOPSIG(st) != SIGSTOP) {
			printf("%s: first stop %#x\n", mode, st);
			return 1;
		}
		ptrace(PTRACE_SETOPTIONS, pid, 0, (void *)(long)(PTRACE_O_TRACEEXEC | PTRACE_O_TRACESYSGOOD));
		if (!strcmp(mode, "syscall")) {
			/* Up to execve's entry. */
			struct __ptrace_syscall_info si;
			for (;;) {
				ptrace(PTRACE_SYSCALL, pid, 0, 0);
				if (wait_for(pid, &st) < 0 || !WIFSTOPPED(st)) {
					printf("%s: lost the child %#x\n", mode, st);
					return 1;
				}
				if (WSTOPSIG(st) != (SIGTRAP | 0x80))
					continue;
				if (ptrace(PTRACE_GET_SYSCALL_INFO, pid, (void *)sizeof si, &si) > 0 &&
				    si.op == PTRACE_SYSCALL_INFO_ENTRY && si.entry.nr == __NR_execve)
					break;
			}
			printf("%s: execve entry\n", mode);
			ptrace(PTRACE_SYSCALL, pid, 0, 0);
		} else {
			ptrace(PTRACE_CONT, pid, 0, 0);
		}
	}
	if (wait_for(pid, &st) < 0 || !WIFSTOPPED(st) || WSTOPSIG(st) != SIGTRAP) {
		printf("%s: exec stop %#x\n", mode, st);
		return 1;
	}
	if (st >> 16 == PTRACE_EVENT_EXEC) {
		unsigned long msg = 0;
		siginfo_t si;
		ptrace(PTRACE_GETEVENTMSG, pid, 0, &msg);
		ptrace(PTRACE_GETSIGINFO, pid, 0, &si);
		printf("%s: exec stop PTRACE_EVENT_EXEC, message %s, siginfo code %#x\n", mode,
		       msg == (unsigned long)pid ? "the pid" : "not the pid", si.si_code);
	} else {
		printf("%s: exec stop SIGTRAP (event %d)\n", mode, st >> 16);
	}
	if (getregs(pid, &r) < 0) {
		printf("%s: GETREGSET failed\n", mode);
		return 1;
	}
	snprintf(file, sizeof file, "/proc/%d/auxv", pid);
	int fe, fb, fp, fx;
	uint64_t entry = auxv_of(file, AT_ENTRY, &fe), base = auxv_of(file, AT_BASE, &fb);
	uint64_t phdr = auxv_of(file, AT_PHDR, &fp), fn = auxv_of(file, AT_EXECFN, &fx);
	snprintf(file, sizeof file, "/proc/%d/task/%d/auxv", pid, pid);
	int te;
	uint64_t tentry = auxv_of(file, AT_ENTRY, &te);
	printf("%s: auxv AT_ENTRY %s, AT_BASE %s, task auxv %s\n", mode, fe ? "found" : "missing",
	       fb ? (base ? "ld.so" : "0") : "missing", te && tentry == entry ? "same" : "differs");
	if (!base) {
		printf("%s: pc %s AT_ENTRY\n", mode, PC(r) == entry ? "==" : "!=");
	} else {
		uint64_t e_entry = 0;
		peek(pid, base + 24, &e_entry);
		printf("%s: pc %s AT_BASE + ld.so's e_entry\n", mode, PC(r) == base + e_entry ? "==" : "!=");
	}
	uint64_t argc = 0;
	peek(pid, SP(r), &argc);
	printf("%s: sp at argc %llu\n", mode, (unsigned long long)argc);
	int nz = nonzero(&r, names, sizeof names);
	printf("%s: other registers %s%s\n", mode, nz ? "not 0:" : "0", names);
	uint64_t ph = 0;
	peek(pid, phdr, &ph);
	execfn[0] = 0;
	if (fx)
		peekstr(pid, fn, execfn, sizeof execfn);
	printf("%s: AT_PHDR's first type %u, AT_EXECFN %s\n", mode, (unsigned)(ph & 0xffffffff),
	       strcmp(execfn, target) ? "wrong" : "the path");

	if (!strcmp(mode, "syscall")) {
		struct __ptrace_syscall_info si;
		ptrace(PTRACE_SYSCALL, pid, 0, 0);
		wait_for(pid, &st);
		memset(&si, 0, sizeof si);
		ptrace(PTRACE_GET_SYSCALL_INFO, pid, (void *)sizeof si, &si);
		printf("%s: then %s, op %d, rval %lld\n", mode,
		       WIFSTOPPED(st) && WSTOPSIG(st) == (SIGTRAP | 0x80) ? "a syscall stop" : "another stop",
		       si.op, (long long)si.exit.rval);
		ptrace(PTRACE_SYSCALL, pid, 0, 0);
		wait_for(pid, &st);
		memset(&si, 0, sizeof si);
		ptrace(PTRACE_GET_SYSCALL_INFO, pid, (void *)sizeof si, &si);
		printf("%s: then op %d nr %lld, pc %s\n", mode, si.op, (long long)si.entry.nr,
		       getregs(pid, &r) == 0 && PC(r) >= 0x2000000000ULL && PC(r) < 0x2100000000ULL ? "in droidroot's loader" : "the program's");
		/* The program is past its entry: run it to its end. */
		ptrace(PTRACE_CONT, pid, 0, 0);
		while (wait_for(pid, &st) >= 0 && WIFSTOPPED(st))
			ptrace(PTRACE_CONT, pid, 0, (void *)(long)(WSTOPSIG(st) == SIGTRAP ? 0 : WSTOPSIG(st)));
		printf("%s: exited %d\n", mode, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		return 0;
	}

	/* A breakpoint at the program's entry. */
	uint64_t word = 0;
	if (peek(pid, entry, &word) < 0) {
		printf("%s: cannot read AT_ENTRY\n", mode);
		return 1;
	}
	if (ptrace(PTRACE_POKETEXT, pid, (void *)entry, (void *)((word & ~BP_MASK) | BP_INSN)) < 0) {
		printf("%s: POKETEXT: %s\n", mode, strerror(errno));
		return 1;
	}
	ptrace(PTRACE_CONT, pid, 0, 0);
	if (wait_for(pid, &st) < 0 || !WIFSTOPPED(st) || WSTOPSIG(st) != SIGTRAP || getregs(pid, &r) < 0) {
		printf("%s: breakpoint not hit (%#x)\n", mode, st);
		return 1;
	}
	printf("%s: breakpoint hit, pc %s\n", mode, PC(r) == entry + BP_PC_AFTER ? "at it" : "elsewhere");
	ptrace(PTRACE_POKETEXT, pid, (void *)entry, (void *)word);
	PC(r) = entry;
	setregs(pid, &r);
	ptrace(PTRACE_CONT, pid, 0, 0);
	while (wait_for(pid, &st) >= 0 && WIFSTOPPED(st))
		ptrace(PTRACE_CONT, pid, 0, (void *)(long)(WSTOPSIG(st) == SIGTRAP ? 0 : WSTOPSIG(st)));
	if (WIFEXITED(st))
		printf("%s: exited %d\n", mode, WEXITSTATUS(st));
	else
		printf("%s: status %#x\n", mode, st);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, 0, _IOLBF, 0);
	if (argc == 2 && !strcmp(argv[1], "exit"))
		return self_exit();
	if (argc < 3) {
		fprintf(stderr, "usage: execstop legacy|event|syscall TARGET...\n");
		return 2;
	}
	for (int i = 2; i < argc; i++) {
		mode = argv[1];
		printf("%s %s\n", mode, argv[i]);
		if (trace(argv[i]))
			return 1;
	}
	return 0;
}
