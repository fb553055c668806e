/* Raw system calls and syscall numbers for arm64 (include/uapi/asm-generic/unistd.h). */
#ifndef DROIDROOT_LOADER_ARCH_H
#define DROIDROOT_LOADER_ARCH_H

#define DR_EM_MACHINE 183 /* EM_AARCH64 */

#define SYS_prctl 167
#define SYS_execve 221
#define SYS_seccomp 277
#define SYS_openat 56
#define SYS_close 57
#define SYS_read 63
#define SYS_write 64
#define SYS_writev 66
#define SYS_pread64 67
#define SYS_exit_group 94
#define SYS_munmap 215
#define SYS_mmap 222
#define SYS_mprotect 226

static inline long dr_syscall6(long n, long a, long b, long c, long d, long e, long f)
{
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;

	__asm__ volatile("svc #0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory");
	return x0;
}

#endif
