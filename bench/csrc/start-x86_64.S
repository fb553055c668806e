/*
 * x86_64 entry of drbench: main(sp) with sp at argc; plus dr_thread (a raw clone of a
 * thread that runs fn(arg) on its own stack and exits) and the SIGSYS sigreturn trampoline.
 */
	.text

	.globl	_start
	.type	_start, @function
_start:
	mov	%rsp, %rdi
	and	$-16, %rsp
	xor	%ebp, %ebp
	call	dr_main
	ud2
	.size	_start, . - _start

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

	.section .note.GNU-stack, "", @progbits
