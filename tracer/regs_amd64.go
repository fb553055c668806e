package tracer

import "golang.org/x/sys/unix"

// Regs holds a stopped thread's general-purpose registers (x86_64).
type Regs struct {
	r unix.PtraceRegs
}

// RedZone is the number of bytes below the stack pointer the ABI lets a
// leaf function use; scratch data for a tracee goes below it.
const RedZone = 128

// Nr returns the syscall number of the current call.
func (r *Regs) Nr() int { return int(int64(r.r.Orig_rax)) }

// SetNr changes the syscall number; -1 skips the call.
func (r *Regs) SetNr(nr int) { r.r.Orig_rax = uint64(int64(nr)) }

// Arg returns syscall argument i (0-5).
func (r *Regs) Arg(i int) uint64 {
	switch i {
	case 0:
		return r.r.Rdi
	case 1:
		return r.r.Rsi
	case 2:
		return r.r.Rdx
	case 3:
		return r.r.R10
	case 4:
		return r.r.R8
	case 5:
		return r.r.R9
	}
	panic("tracer: bad syscall argument index")
}

// SetArg sets syscall argument i (0-5).
func (r *Regs) SetArg(i int, v uint64) {
	switch i {
	case 0:
		r.r.Rdi = v
	case 1:
		r.r.Rsi = v
	case 2:
		r.r.Rdx = v
	case 3:
		r.r.R10 = v
	case 4:
		r.r.R8 = v
	case 5:
		r.r.R9 = v
	default:
		panic("tracer: bad syscall argument index")
	}
}

// Ret returns the syscall return value (valid at a syscall-exit stop).
func (r *Regs) Ret() int64 { return int64(r.r.Rax) }

// SetRet sets the syscall return value.
func (r *Regs) SetRet(v int64) { r.r.Rax = uint64(v) }

// SP returns the stack pointer.
func (r *Regs) SP() uint64 { return r.r.Rsp }

// PC returns the instruction pointer.
func (r *Regs) PC() uint64 { return r.r.Rip }

// SetPC sets the instruction pointer.
func (r *Regs) SetPC(v uint64) { r.r.Rip = v }

// SetEntryArg sets the first-argument register the loader reads its
// script address from at a fresh exec.
func (r *Regs) SetEntryArg(v uint64) { r.r.Rdi = v }

// setRestartNr makes a kernel restart of the current call (after a
// signal) run nr: on x86_64 a restart reloads rax from orig_rax, which
// SetNr already sets.
func (r *Regs) setRestartNr(nr int) {}

// setSyscallReg sets the register the syscall instruction takes the
// number from (rax), for a thread sent back to that instruction.
func (r *Regs) setSyscallReg(nr int) { r.r.Rax = uint64(int64(nr)) }

// restoreSyscallReg restores the syscall-number register the ops changed:
// on x86_64 that is rax, which holds the result anyway.
func (r *Regs) restoreSyscallReg(from *Regs) {}

// startAt makes r the registers a kernel exec leaves at a program's first
// instruction (start_thread): pc, sp, flags IF, every other general
// register 0 (rdx: no atexit function); the segments and bases stay. The
// call the thread is stopped in is skipped (orig_rax -1).
func (r *Regs) startAt(pc, sp uint64) {
	g := &r.r
	g.R15, g.R14, g.R13, g.R12, g.Rbp, g.Rbx = 0, 0, 0, 0, 0, 0
	g.R11, g.R10, g.R9, g.R8, g.Rax, g.Rcx, g.Rdx, g.Rsi, g.Rdi = 0, 0, 0, 0, 0, 0, 0, 0, 0
	g.Orig_rax = ^uint64(0)
	g.Rip, g.Rsp = pc, sp
	g.Eflags = 0x200
}

// execEventRet is the result register at an exec event: execve has not
// returned yet, rax still holds the -ENOSYS of syscall entry.
const execEventRet = -int64(unix.ENOSYS)
