/*
 * The trampoline page (x86_64): long dr_tramp(long nr, long a0, ..., long a5).
 * The library maps this page of its own file at the address droidroot chose for
 * the session; droidroot's filter lets the fast path's calls through from there
 * only. The page is alone in its 64 KiB-aligned block of the file (so it maps on
 * 4, 16 and 64 KiB page kernels) and holds nothing else: the rest is int3.
 */
	.section .text.dr_tramp,"ax",@progbits
	.balign 65536
	.globl dr_tramp_page
	.hidden dr_tramp_page
	.type dr_tramp_page,@function
dr_tramp_page:
	mov %rdi,%rax
	mov %rsi,%rdi
	mov %rdx,%rsi
	mov %rcx,%rdx
	mov %r8,%r10
	mov %r9,%r8
	mov 8(%rsp),%r9
	syscall
	ret
	.size dr_tramp_page,.-dr_tramp_page
	.fill 4096-(.-dr_tramp_page),1,0xcc
	.section .note.GNU-stack,"",@progbits
