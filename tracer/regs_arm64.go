package tracer

import "golang.org/x/sys/unix"

// Regs holds a stopped thread's general-purpose registers (aarch64).
//
// The syscall number lives in x8 at entry; changing it needs the
// NT_ARM_SYSTEM_CALL register set, which putRegs writes when nrDirty is set.
type Regs struct {
	r       unix.PtraceRegs
	nr      int
	nrDirty bool
}

// RedZone is the number of bytes below the stack pointer left untouched.
// AAPCS64 has no red zone; keep a margin anyway.
const RedZone = 128

// Nr returns the syscall number of the current call.
func (r *Regs) Nr() int { return r.nr }

// SetNr changes the syscall number; -1 skips the call.
func (r *Regs) SetNr(nr int) { r.nr = nr; r.nrDirty = true }

// Arg returns syscall argument i (0-5).
func (r *Regs) Arg(i int) uint64 {
	if i < 0 || i > 5 {
		panic("tracer: bad syscall argument index")
	}
	return r.r.Regs[i]
}

// SetArg sets syscall argument i (0-5).
func (r *Regs) SetArg(i int, v uint64) {
	if i < 0 || i > 5 {
		panic("tracer: bad syscall argument index")
	}
	r.r.Regs[i] = v
}

// Ret returns the syscall return value (valid at a syscall-exit stop).
func (r *Regs) Ret() int64 { return int64(r.r.Regs[0]) }

// SetRet sets the syscall return value.
func (r *Regs) SetRet(v int64) { r.r.Regs[0] = uint64(v) }

// SP returns the stack pointer.
func (r *Regs) SP() uint64 { return r.r.Sp }

// PC returns the instruction pointer.
func (r *Regs) PC() uint64 { return r.r.Pc }

// SetPC sets the instruction pointer.
func (r *Regs) SetPC(v uint64) { r.r.Pc = v }

// SetEntryArg sets the register the loader reads its script address from
// at a fresh exec: x1, because execve's return value still lands in x0
// after the PTRACE_EVENT_EXEC stop.
func (r *Regs) SetEntryArg(v uint64) { r.r.Regs[1] = v }

// setRestartNr makes a kernel restart of the current call (after a
// signal) run nr: on arm64 a restart re-executes svc, which reads x8.
func (r *Regs) setRestartNr(nr int) { r.r.Regs[8] = uint64(int64(nr)) }

// setSyscallReg sets the register the syscall instruction takes the
// number from (x8), for a thread sent back to that instruction.
func (r *Regs) setSyscallReg(nr int) { r.r.Regs[8] = uint64(int64(nr)) }

// restoreSyscallReg restores x8, which the ops changed, from from.
func (r *Regs) restoreSyscallReg(from *Regs) { r.r.Regs[8] = from.r.Regs[8] }

// startAt makes r the registers a kernel exec leaves at a program's first
// instruction (start_thread): pc, sp, x0-x30 0 (x0: no atexit function),
// NZCV clear. The call the thread is stopped in is skipped (number -1);
// x0, its result, stays 0.
func (r *Regs) startAt(pc, sp uint64) {
	for i := range r.r.Regs {
		r.r.Regs[i] = 0
	}
	r.r.Pc, r.r.Sp = pc, sp
	r.r.Pstate &^= 0xf0000000
	r.SetNr(-1)
}

// execEventRet is the result register at an exec event: x0 is 0 (the
// kernel's start_thread cleared it).
const execEventRet int64 = 0
