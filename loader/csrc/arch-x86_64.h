/* Raw system calls and syscall numbers for x86_64 (arch/x86/entry/syscalls/syscall_64.tbl). */
#ifndef DROIDROOT_LOADER_ARCH_H
#define DROIDROOT_LOADER_ARCH_H

#define DR_EM_MACHINE 62 /* EM_X86_64 */

#define SYS_read 0
#define SYS_write 1
#define SYS_close 3
#define SYS_mmap 9
#define SYS_mprotect 10
#define SYS_munmap 11
#define SYS_pread64 17
#define SYS_writev 20
#define SYS_exit_group 231
#define SYS_prctl 157
#define SYS_execve 59
#define SYS_seccomp 317
#define SYS_openat 257

static inline long dr_syscall6(long n, long a, long b, long c, long d, long e, long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

#endif
