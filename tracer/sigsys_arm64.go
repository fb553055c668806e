package tracer

// answerAt makes the thread resume after its svc (at callAddr) with the
// return value already in x0. The pc is always set: the kernel's signal
// code may have rewound it if the low bits of x0 looked like -ERESTART*.
func (r *Regs) answerAt(callAddr uint64) {
	r.r.Pc = callAddr
}

// restartAt makes the thread execute the svc that ends at callAddr again,
// as syscall nr: x8 = nr, pc = callAddr - 4. The kernel's syscall number is
// set to -1, which at a syscall-entry stop skips the current call.
func (r *Regs) restartAt(nr int, callAddr uint64) {
	r.r.Regs[8] = uint64(int64(nr))
	r.nr = -1
	r.nrDirty = true
	r.r.Pc = callAddr - SyscallInsnLen
}

// forceNr makes putRegs write the syscall number (NT_ARM_SYSTEM_CALL) too.
func (r *Regs) forceNr() { r.nrDirty = true }

// insnNr returns the number the svc instruction will read (x8).
func (r *Regs) insnNr() int { return int(int64(r.r.Regs[8])) }
