/*
 * x86_64 entry and exit of the droidroot loader.
 *
 * At entry the kernel has set every general register to 0 and rsp to argc; the
 * tracer has since put the load script's address in rdi. The C code runs on a stack
 * just below the script, so it never touches the script or the original stack.
 */
	.text

	.globl	_start
	.type	_start, @function
_start:
#ifdef DR_SELFTEST
	/* Test build: no tracer; selftest_main builds the script from argv. */
	mov	%rsp, %rdi
	and	$-16, %rsp
	call	selftest_main
#else
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
#endif
	ud2
	.size	_start, . - _start

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

	.section .note.GNU-stack, "", @progbits
