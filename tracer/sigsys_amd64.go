package tracer

// answerAt makes the thread resume after its syscall instruction (at
// callAddr) with the return value already in rax. orig_rax = -1 keeps the
// kernel's signal code from treating rax as a syscall result to restart.
func (r *Regs) answerAt(callAddr uint64) {
	r.r.Orig_rax = ^uint64(0)
	r.r.Rip = callAddr
}

// restartAt makes the thread execute the syscall instruction that ends at
// callAddr again, as syscall nr: rax = nr, rip = callAddr - 2. At a
// syscall-entry stop orig_rax = -1 skips the current call first.
func (r *Regs) restartAt(nr int, callAddr uint64) {
	r.r.Rax = uint64(int64(nr))
	r.r.Orig_rax = ^uint64(0)
	r.r.Rip = callAddr - SyscallInsnLen
}

// forceNr makes putRegs write the syscall number too (a no-op on x86_64,
// where it is part of the register set).
func (r *Regs) forceNr() {}

// insnNr returns the number the syscall instruction will read (rax).
func (r *Regs) insnNr() int { return int(int64(r.r.Rax)) }
