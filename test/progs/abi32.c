/*
 * abi32: make a syscall through a non-native ABI of the host and print what
 * came back. On x86_64 that is x32 (the syscall number with bit 30 set; the
 * i386 ABI through int 0x80 may be disabled in the kernel). droidroot does
 * not translate these ABIs yet, so its filter must send such calls to the
 * tracer, which answers ENOSYS and says so: nothing runs untranslated.
 */
#include <stdio.h>

int main(void)
{
#if defined(__x86_64__)
	for (int i = 0; i < 2; i++) {
		long ret;
		/* x32 getpid: __X32_SYSCALL_BIT | 39. */
		__asm__ volatile("syscall" : "=a"(ret) : "a"(0x40000000L | 39) : "rcx", "r11", "memory");
		printf("x32 getpid -> %ld\n", ret);
	}
#else
	printf("no compat ABI test on this architecture\n");
#endif
	return 0;
}
