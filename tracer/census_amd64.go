package tracer

import "encoding/binary"

// callerOf guesses where the call thread tid stopped in returns to: the
// word at the stack pointer, a leaf syscall wrapper's return address (a
// wrapper that saved registers first has something else there).
func callerOf(tid int, r *Regs) uint64 {
	var b [8]byte
	if n, err := readMem(tid, r.SP(), b[:]); err != nil || n != len(b) {
		return 0
	}
	return binary.LittleEndian.Uint64(b[:])
}
