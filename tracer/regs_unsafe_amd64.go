package tracer

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// getRegs reads the registers of stopped thread tid.
func getRegs(tid int, r *Regs) error {
	return ptrace(unix.PTRACE_GETREGS, tid, 0, uintptr(unsafe.Pointer(&r.r)))
}

// putRegs writes back the registers of stopped thread tid.
func putRegs(tid int, r *Regs) error {
	return ptrace(unix.PTRACE_SETREGS, tid, 0, uintptr(unsafe.Pointer(&r.r)))
}
