/*
 * Raw system calls and syscall numbers for arm64 (include/uapi/asm-generic/unistd.h),
 * shared by droidroot's C programs (loader/csrc, bench/csrc, fastpath/csrc). A program
 * includes "arch-x86_64.h" or "arch-aarch64.h" by its architecture, with -Icsrc.
 */
#ifndef DROIDROOT_ARCH_H
#define DROIDROOT_ARCH_H

#define DR_EM_MACHINE 183 /* EM_AARCH64 */
#define DR_AUDIT_ARCH 0xc00000b7u /* AUDIT_ARCH_AARCH64 */

#define SYS_getcwd 17
#define SYS_mkdirat 34
#define SYS_unlinkat 35
#define SYS_symlinkat 36
#define SYS_faccessat 48
#define SYS_chdir 49
#define SYS_openat 56
#define SYS_close 57
#define SYS_read 63
#define SYS_write 64
#define SYS_writev 66
#define SYS_pread64 67
#define SYS_readlinkat 78
#define SYS_newfstatat 79
#define SYS_exit 93
#define SYS_exit_group 94
#define SYS_futex 98
#define SYS_clock_gettime 113
#define SYS_clock_nanosleep 115
#define SYS_sched_setaffinity 122
#define SYS_rt_sigaction 134
#define SYS_rt_sigreturn 139
#define SYS_uname 160
#define SYS_sethostname 161
#define SYS_prctl 167
#define SYS_getppid 173
#define SYS_sendto 206
#define SYS_recvfrom 207
#define SYS_sendmsg 211
#define SYS_recvmsg 212
#define SYS_munmap 215
#define SYS_clone 220
#define SYS_execve 221
#define SYS_mmap 222
#define SYS_mprotect 226
#define SYS_madvise 233
#define SYS_wait4 260
#define SYS_renameat2 276
#define SYS_seccomp 277
#define SYS_getrandom 278
#define SYS_prlimit64 261
/* Also used by the fast path library (fastpath/csrc) and drbench's waitv call. */
#define SYS_dup 23
#define SYS_dup3 24
#define SYS_fcntl 25
#define SYS_mknodat 33
#define SYS_linkat 37
#define SYS_truncate 45
#define SYS_ftruncate 46
#define SYS_fchmodat 53
#define SYS_fchownat 54
#define SYS_fstat 80
#define SYS_utimensat 88
#define SYS_tgkill 131
#define SYS_rt_sigprocmask 135
#define SYS_getpid 172
#define SYS_gettid 178
#define SYS_mremap 216
#define SYS_statx 291
#define SYS_openat2 437
#define SYS_faccessat2 439
#define SYS_futex_waitv 449
#define SYS_getdents64 61
#define SYS_lseek 62
#define SYS_sched_yield 124
#define SYS_fchmodat2 452
/* eaccess without faccessat2 (the fast path library): the ids and capabilities it depends on. */
#define SYS_getresuid 148
#define SYS_getresgid 150
#define SYS_capget 90
/* connect and bind of addresses droidroot leaves as they are (the fast path library). */
#define SYS_connect 203
#define SYS_bind 200
#define SYS_getsockname 204
#define SYS_getpeername 205
/* The get*id family the fast path library answers under emulated ids. */
#define SYS_getuid 174
#define SYS_geteuid 175
#define SYS_getgid 176
#define SYS_getegid 177
/* The path forms of the xattr calls (the fast path library: Wine's DOS attributes). */
#define SYS_setxattr 5
#define SYS_getxattr 8
#define SYS_listxattr 11
#define SYS_removexattr 14
#define SYS_statfs 43
#define SYS_fstatfs 44
/* calls that make a descriptor (the fast path's shed) */
#define SYS_socket 198
#define SYS_socketpair 199
#define SYS_accept 202
#define SYS_accept4 242
#define SYS_pipe2 59
#define SYS_eventfd2 19
#define SYS_signalfd4 74
#define SYS_timerfd_create 85
#define SYS_epoll_create1 20
#define SYS_inotify_init1 26
#define SYS_inotify_add_watch 27
#define SYS_memfd_create 279

static inline long dr_syscall6(long n, long a, long b, long c, long d, long e, long f)
{
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;

	/*
	 * x1-x5 are outputs too: a tracer may rewrite argument registers (droidroot points a path
	 * argument at its translation) and leaves them so after the call, so the compiler must not
	 * reuse them afterwards as the values it put there.
	 */
	__asm__ volatile("svc #0"
			 : "+r"(x0), "+r"(x1), "+r"(x2), "+r"(x3), "+r"(x4), "+r"(x5)
			 : "r"(x8)
			 : "memory");
	return x0;
}

/* struct stat of arm64 (asm-generic) is 128 bytes. */
#define DR_STAT_SIZE 128
/* The kernel returns from arm64 signal handlers through the vDSO's trampoline. */
#define DR_NEED_RESTORER 0

#endif
