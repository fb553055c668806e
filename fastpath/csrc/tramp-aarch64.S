/*
 * The trampoline page (aarch64): long dr_tramp(long nr, long a0, ..., long a5).
 * See tramp-x86_64.S. The rest of the 64 KiB block is brk #0.
 */
	.section .text.dr_tramp,"ax",%progbits
	.balign 65536
	.globl dr_tramp_page
	.hidden dr_tramp_page
	.type dr_tramp_page,%function
dr_tramp_page:
	mov x8, x0
	mov x0, x1
	mov x1, x2
	mov x2, x3
	mov x3, x4
	mov x4, x5
	mov x5, x6
	svc #0
	ret
	.size dr_tramp_page,.-dr_tramp_page
	.fill (4096-(.-dr_tramp_page))/4,4,0xd4200000
	.section .note.GNU-stack,"",%progbits
