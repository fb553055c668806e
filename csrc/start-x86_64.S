/*
 * x86_64 entry code of droidroot's freestanding programs (loader/csrc, bench/csrc).
 *
 * A plain program (the default, drbench): _start calls dr_main(sp) with sp at argc
 * (selftest_main in the loader's DR_SELFTEST builds); dr_thread is a raw clone of a
 * thread that runs fn(arg) on its own stack and exits, dr_restorer the sigreturn
 * trampoline of SA_RESTORER handlers.
 *
 * The loader (DR_LOADER): at entry the kernel has set every general register to 0 and
 * rsp to argc; the tracer has since put the load script's address in rdi. The C code
 * runs on a stack just below the script, so it never touches the script or the original
 * stack. dr_jump starts the loaded program.
 */
#ifdef DR_SELFTEST
#define DR_MAIN selftest_main
#else
#define DR_MAIN dr_main
#endif

	.text

	.globl	_start
	.type	_start, @function
_start:
#if defined(DR_LOADER) && !defined(DR_SELFTEST)
	test	%rdi, %rdi
	jnz	1f
	mov	%rsp, %rdi	/* no script: stage2_main(the kernel's stack) */
	and	$-16, %rsp
	xor	%ebp, %ebp
	call	stage2_main
	ud2
1:	mov	%rdi, %rsp
	and	$-16, %rsp
	xor	%ebp, %ebp
	call	loader_main
#else
	mov	%rsp, %rdi
	and	$-16, %rsp
	xor	%ebp, %ebp
	call	DR_MAIN
#endif
	ud2
	.size	_start, . - _start

#ifdef DR_LOADER
/*
 * void dr_jump(uint64_t entry, uint64_t sp): start the program as the kernel would.
 * rsp = sp, every other general register 0 (rdx is the atexit pointer the ABI
 * passes to _start; 0 means none), flags 0, rip = entry. The entry address is
 * pushed just below sp, in memory the program owns anyway, and popped by ret.
 */
	.globl	dr_jump
	.type	dr_jump, @function
dr_jump:
	mov	%rsi, %rsp
	push	%rdi
	xor	%eax, %eax
	xor	%ebx, %ebx
	xor	%ecx, %ecx
	xor	%edx, %edx
	xor	%esi, %esi
	xor	%edi, %edi
	xor	%ebp, %ebp
	xor	%r8d, %r8d
	xor	%r9d, %r9d
	xor	%r10d, %r10d
	xor	%r11d, %r11d
	xor	%r12d, %r12d
	xor	%r13d, %r13d
	xor	%r14d, %r14d
	xor	%r15d, %r15d
	push	%rax
	popfq
	ret
	.size	dr_jump, . - dr_jump
#else
/* long dr_thread(long flags, void *stack_top, int *ptid, int *ctid, long (*fn)(void *), void *arg) */
	.globl	dr_thread
	.type	dr_thread, @function
dr_thread:
	sub	$16, %rsi
	mov	%r8, 0(%rsi)
	mov	%r9, 8(%rsi)
	mov	%rcx, %r10
	xor	%r8d, %r8d
	mov	$56, %eax	/* clone(flags, stack, ptid, ctid, tls) */
	syscall
	test	%rax, %rax
	jnz	1f
	pop	%rax
	pop	%rdi
	xor	%ebp, %ebp
	call	*%rax
	mov	%eax, %edi
	mov	$60, %eax	/* exit: this thread only */
	syscall
	ud2
1:	ret
	.size	dr_thread, . - dr_thread

	.globl	dr_restorer
	.type	dr_restorer, @function
dr_restorer:
	mov	$15, %eax	/* rt_sigreturn */
	syscall
	ud2
	.size	dr_restorer, . - dr_restorer
#endif

	.section .note.GNU-stack, "", @progbits
