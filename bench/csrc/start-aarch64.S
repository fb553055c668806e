/*
 * arm64 entry of drbench: main(sp) with sp at argc; plus dr_thread (a raw clone of a
 * thread that runs fn(arg) on its own stack and exits). Signal handlers return through
 * the vDSO's trampoline, so there is no dr_restorer here.
 */
	.text

	.globl	_start
	.type	_start, %function
_start:
	mov	x0, sp
	mov	x29, #0
	mov	x30, #0
	bl	dr_main
	brk	#0
	.size	_start, . - _start

/* long dr_thread(long flags, void *stack_top, int *ptid, int *ctid, long (*fn)(void *), void *arg) */
	.globl	dr_thread
	.type	dr_thread, %function
dr_thread:
	stp	x4, x5, [x1, #-16]!
	mov	x4, x3		/* clone(flags, stack, ptid, tls, ctid) */
	mov	x3, #0
	mov	x8, #220
	svc	#0
	cbnz	x0, 1f
	ldp	x4, x0, [sp], #16
	mov	x29, #0
	mov	x30, #0
	blr	x4
	mov	x8, #93		/* exit: this thread only */
	svc	#0
	brk	#0
1:	ret
	.size	dr_thread, . - dr_thread

	.section .note.GNU-stack, "", %progbits
