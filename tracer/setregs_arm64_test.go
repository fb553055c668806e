package tracer

// invalidRegs makes r registers the kernel refuses to set (pstate in EL1h,
// not a user mode: SETREGSET answers EINVAL).
func invalidRegs(r *Regs) { r.r.Pstate = 0x5 }
