package tracer

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// ptRead forwards a ptrace request whose data points to len(b) bytes the
// kernel writes (registers, siginfo, a peeked word) to traced thread tid.
func ptRead(req, tid int, addr uintptr, b []byte) error {
	return ptracePtr(req, tid, addr, unsafe.Pointer(&b[0]))
}

// ptWrite forwards a ptrace request whose data points to len(b) bytes the
// kernel reads.
func ptWrite(req, tid int, addr uintptr, b []byte) error {
	return ptracePtr(req, tid, addr, unsafe.Pointer(&b[0]))
}

// ptRegsetReal makes PTRACE_GETREGSET or SETREGSET of register set nt on
// tid with buffer b and returns the length the kernel left in the iovec.
func ptRegsetReal(req, tid, nt int, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, unix.EINVAL
	}
	iov := unix.Iovec{Base: &b[0], Len: uint64(len(b))}
	err := ptracePtr(req, tid, uintptr(nt), unsafe.Pointer(&iov))
	return int(iov.Len), err
}
