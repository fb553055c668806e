/*
 * arm64 entry code of droidroot's freestanding programs (loader/csrc, bench/csrc).
 *
 * A plain program (the default, drbench): _start calls dr_main(sp) with sp at argc
 * (selftest_main in the loader's DR_SELFTEST builds); dr_thread is a raw clone of a
 * thread that runs fn(arg) on its own stack and exits. Signal handlers return through
 * the vDSO's trampoline, so there is no dr_restorer here.
 *
 * The loader (DR_LOADER): at entry the kernel has set every general register to 0 and
 * sp to argc; the tracer has since put the load script's address in x1 (not x0:
 * execve's return value 0 lands in x0 after the tracer's PTRACE_EVENT_EXEC stop). The C
 * code runs on a stack just below the script, so it never touches the script or the
 * original stack. dr_jump starts the loaded program.
 */
#ifdef DR_SELFTEST
#define DR_MAIN selftest_main
#else
#define DR_MAIN dr_main
#endif

	.text

	.globl	_start
	.type	_start, %function
_start:
#if defined(DR_LOADER) && !defined(DR_SELFTEST)
	cbnz	x1, 1f
	mov	x0, sp		/* no script: stage2_main(the kernel's stack) */
	mov	x29, #0
	mov	x30, #0
	bl	stage2_main
	brk	#0
1:	mov	x0, x1		/* loader_main(script) */
	and	x1, x0, #~15
	mov	sp, x1
	mov	x29, #0
	mov	x30, #0
	bl	loader_main
#else
	mov	x0, sp
	mov	x29, #0
	mov	x30, #0
	bl	DR_MAIN
#endif
	brk	#0
	.size	_start, . - _start

#ifdef DR_LOADER
/*
 * void dr_jump(uint64_t entry, uint64_t sp): start the program as the kernel would.
 * sp = sp, every general register 0 except x17, which carries the entry address
 * (x0 is the atexit pointer the ABI passes to _start; 0 means none), flags 0.
 * x17 (IP1) is the register BTI landing pads ("bti c") accept from br.
 */
	.globl	dr_jump
	.type	dr_jump, %function
dr_jump:
	mov	sp, x1
	mov	x17, x0
	mov	x0, #0
	mov	x1, #0
	mov	x2, #0
	mov	x3, #0
	mov	x4, #0
	mov	x5, #0
	mov	x6, #0
	mov	x7, #0
	mov	x8, #0
	mov	x9, #0
	mov	x10, #0
	mov	x11, #0
	mov	x12, #0
	mov	x13, #0
	mov	x14, #0
	mov	x15, #0
	mov	x16, #0
	mov	x18, #0
	mov	x19, #0
	mov	x20, #0
	mov	x21, #0
	mov	x22, #0
	mov	x23, #0
	mov	x24, #0
	mov	x25, #0
	mov	x26, #0
	mov	x27, #0
	mov	x28, #0
	mov	x29, #0
	mov	x30, #0
	msr	nzcv, xzr
	br	x17
	.size	dr_jump, . - dr_jump
#else
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
#endif

	.section .note.GNU-stack, "", %progbits
