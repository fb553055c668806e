package tracer

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

const ntARMSystemCall = 0x404

// getRegs reads the registers of stopped thread tid, and its syscall number.
func getRegs(tid int, r *Regs) error {
	iov := unix.Iovec{Base: (*byte)(unsafe.Pointer(&r.r)), Len: uint64(unsafe.Sizeof(r.r))}
	if err := ptracePtr(unix.PTRACE_GETREGSET, tid, uintptr(unix.NT_PRSTATUS), unsafe.Pointer(&iov)); err != nil {
		return err
	}
	var nr int32
	iov = unix.Iovec{Base: (*byte)(unsafe.Pointer(&nr)), Len: 4}
	if err := ptracePtr(unix.PTRACE_GETREGSET, tid, ntARMSystemCall, unsafe.Pointer(&iov)); err != nil {
		return err
	}
	r.nr = int(nr)
	r.nrDirty = false
	return nil
}

// putRegs writes back the registers of stopped thread tid, and its syscall
// number when it was changed.
func putRegs(tid int, r *Regs) error {
	if r.nrDirty {
		nr := int32(r.nr)
		iov := unix.Iovec{Base: (*byte)(unsafe.Pointer(&nr)), Len: 4}
		if err := ptracePtr(unix.PTRACE_SETREGSET, tid, ntARMSystemCall, unsafe.Pointer(&iov)); err != nil {
			return err
		}
		r.nrDirty = false
	}
	iov := unix.Iovec{Base: (*byte)(unsafe.Pointer(&r.r)), Len: uint64(unsafe.Sizeof(r.r))}
	return ptracePtr(unix.PTRACE_SETREGSET, tid, uintptr(unix.NT_PRSTATUS), unsafe.Pointer(&iov))
}

// putChangedRegs is putRegs: arm64 has no single-register write (its
// PTRACE_POKEUSER does not reach the general registers).
func putChangedRegs(tid int, was, r *Regs) error { return putRegs(tid, r) }
