/*
 * Raw system calls and syscall numbers for x86_64 (arch/x86/entry/syscalls/syscall_64.tbl),
 * shared by droidroot's C programs (loader/csrc, bench/csrc, fastpath/csrc). A program
 * includes "arch-x86_64.h" or "arch-aarch64.h" by its architecture, with -Icsrc.
 */
#ifndef DROIDROOT_ARCH_H
#define DROIDROOT_ARCH_H

#define DR_EM_MACHINE 62 /* EM_X86_64 */
#define DR_AUDIT_ARCH 0xc000003eu /* AUDIT_ARCH_X86_64 */

#define SYS_read 0
#define SYS_write 1
#define SYS_close 3
#define SYS_mmap 9
#define SYS_mprotect 10
#define SYS_munmap 11
#define SYS_rt_sigaction 13
#define SYS_rt_sigreturn 15
#define SYS_pread64 17
#define SYS_writev 20
#define SYS_madvise 28
#define SYS_sendto 44
#define SYS_recvfrom 45
#define SYS_sendmsg 46
#define SYS_recvmsg 47
#define SYS_clone 56
#define SYS_execve 59
#define SYS_exit 60
#define SYS_wait4 61
#define SYS_uname 63
#define SYS_getcwd 79
#define SYS_chdir 80
#define SYS_getppid 110
#define SYS_prctl 157
#define SYS_sethostname 170
#define SYS_futex 202
#define SYS_sched_setaffinity 203
#define SYS_clock_gettime 228
#define SYS_clock_nanosleep 230
#define SYS_exit_group 231
#define SYS_openat 257
#define SYS_mkdirat 258
#define SYS_newfstatat 262
#define SYS_unlinkat 263
#define SYS_symlinkat 266
#define SYS_readlinkat 267
#define SYS_faccessat 269
#define SYS_renameat2 316
#define SYS_seccomp 317
#define SYS_getrandom 318
#define SYS_prlimit64 302
/* Also used by the fast path library (fastpath/csrc) and drbench's waitv call; the x86_64-only
 * legacy path calls are the ones the library answers through syscall(). */
#define SYS_open 2
#define SYS_stat 4
#define SYS_fstat 5
#define SYS_lstat 6
#define SYS_rt_sigprocmask 14
#define SYS_access 21
#define SYS_mremap 25
#define SYS_dup 32
#define SYS_dup2 33
#define SYS_getpid 39
#define SYS_fcntl 72
#define SYS_truncate 76
#define SYS_ftruncate 77
#define SYS_creat 85
#define SYS_readlink 89
#define SYS_gettid 186
#define SYS_tgkill 234
#define SYS_mknodat 259
#define SYS_fchownat 260
#define SYS_linkat 265
#define SYS_fchmodat 268
#define SYS_utimensat 280
/* x86_64's legacy poll and epoll_wait, which Android's policy blocks, and their newer forms
 * (the fast path library's FlagLegacy). */
#define SYS_poll 7
#define SYS_epoll_wait 232
#define SYS_ppoll 271
#define SYS_epoll_pwait 281
#define SYS_dup3 292
#define SYS_statx 332
#define SYS_openat2 437
#define SYS_faccessat2 439
#define SYS_futex_waitv 449
#define SYS_lseek 8
#define SYS_sched_yield 24
#define SYS_getdents64 217
#define SYS_fchmodat2 452
/* eaccess without faccessat2 (the fast path library): the ids and capabilities it depends on. */
#define SYS_getresuid 118
#define SYS_getresgid 120
#define SYS_capget 125
/* connect and bind of addresses droidroot leaves as they are (the fast path library). */
#define SYS_connect 42
#define SYS_bind 49
#define SYS_getsockname 51
#define SYS_getpeername 52
/* The get*id family the fast path library answers under emulated ids. */
#define SYS_getuid 102
#define SYS_geteuid 107
#define SYS_getgid 104
#define SYS_getegid 108
/* The path forms of the xattr calls (the fast path library: Wine's DOS attributes). */
#define SYS_setxattr 188
#define SYS_getxattr 191
#define SYS_listxattr 194
#define SYS_removexattr 197
#define SYS_statfs 137
#define SYS_fstatfs 138
/* calls that make a descriptor (the fast path's shed) */
#define SYS_socket 41
#define SYS_socketpair 53
#define SYS_accept 43
#define SYS_accept4 288
#define SYS_pipe 22
#define SYS_pipe2 293
#define SYS_eventfd 284
#define SYS_eventfd2 290
#define SYS_signalfd 282
#define SYS_signalfd4 289
#define SYS_timerfd_create 283
#define SYS_epoll_create 213
#define SYS_epoll_create1 291
#define SYS_inotify_init 253
#define SYS_inotify_init1 294
#define SYS_inotify_add_watch 254
#define SYS_memfd_create 319

static inline long dr_syscall6(long n, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;

	/*
	 * The argument registers are outputs too: a tracer may rewrite them (droidroot points a
	 * path argument at its translation) and leaves them so after the call, so the compiler
	 * must not reuse them afterwards as the values it put there.
	 */
	__asm__ volatile("syscall"
			 : "=a"(ret), "+D"(a), "+S"(b), "+d"(c), "+r"(r10), "+r"(r8), "+r"(r9)
			 : "a"(n)
			 : "rcx", "r11", "memory");
	return ret;
}

/* struct stat of x86_64 is 144 bytes. */
#define DR_STAT_SIZE 144
/* x86_64 needs an explicit sigreturn trampoline (SA_RESTORER). */
#define DR_NEED_RESTORER 1

#endif
