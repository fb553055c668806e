package tracer

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// getRegs reads the registers of stopped thread tid.
func getRegs(tid int, r *Regs) error {
	return ptracePtr(unix.PTRACE_GETREGS, tid, 0, unsafe.Pointer(&r.r))
}

// putRegs writes back the registers of stopped thread tid.
func putRegs(tid int, r *Regs) error {
	return ptracePtr(unix.PTRACE_SETREGS, tid, 0, unsafe.Pointer(&r.r))
}
