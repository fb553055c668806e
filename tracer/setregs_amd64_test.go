package tracer

// invalidRegs makes r registers the kernel refuses to set (a null code
// segment: PTRACE_SETREGS and SETREGSET answer EIO).
func invalidRegs(r *Regs) { r.r.Cs = 0 }
