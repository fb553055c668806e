package tracer

// callerOf guesses where the call thread tid stopped in returns to: the
// link register, a leaf syscall wrapper's return address.
func callerOf(tid int, r *Regs) uint64 { return r.r.Regs[30] }
