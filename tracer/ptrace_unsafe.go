package tracer

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ptrace issues one ptrace request without going through the scheduler:
// every request here returns at once. addr and data are numbers; a request
// that passes a pointer uses ptracePtr.
func ptrace(req int, pid int, addr, data uintptr) error {
	_, _, e := unix.RawSyscall6(unix.SYS_PTRACE, uintptr(req), uintptr(pid), addr, data, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// ptracePtr issues a ptrace request whose data argument points to memory
// the kernel reads or writes (registers, siginfo, an event message, an
// iovec). The pointer becomes a uintptr only in the argument list of the
// assembly syscall stub, as unsafe.Pointer's rule 4 requires. Made any
// earlier and passed on through a Go function (as ptrace's data), the
// uintptr goes stale whenever the goroutine's stack is copied on the way
// (grown in a prologue, or shrunk by the GC): the kernel then reads and
// writes the old stack. In the arm64 test VM that read a stopped call's
// number as 0 about once in 600,000 calls, and the call ran untranslated.
func ptracePtr(req int, pid int, addr uintptr, data unsafe.Pointer) error {
	_, _, e := unix.RawSyscall6(unix.SYS_PTRACE, uintptr(req), uintptr(pid), addr, uintptr(data), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// seize attaches to pid with PTRACE_SEIZE and the given options.
func seize(pid int, options int) error {
	return ptrace(unix.PTRACE_SEIZE, pid, 0, uintptr(options))
}

// resume restarts a stopped thread with request req (CONT, SYSCALL, LISTEN)
// delivering signal sig (0 for none).
func resume(req, tid int, sig syscall.Signal) error {
	return ptrace(req, tid, 0, uintptr(sig))
}

// eventMsg returns PTRACE_GETEVENTMSG for tid.
func eventMsg(tid int) (uint64, error) {
	var msg uint64
	err := ptracePtr(unix.PTRACE_GETEVENTMSG, tid, 0, unsafe.Pointer(&msg))
	return msg, err
}

// Siginfo is the part of a siginfo_t the tracer reads.
type Siginfo struct {
	Signo, Errno, Code int32
	_                  int32
	// Fields of the union; for SIGSYS: call_addr (uint64), syscall (int32), arch (uint32).
	Union [112]byte
}

// getSiginfo reads the pending signal of a signal-delivery stop.
func getSiginfo(tid int, si *Siginfo) error {
	return ptracePtr(unix.PTRACE_GETSIGINFO, tid, 0, unsafe.Pointer(si))
}

// wait4 waits for any traced thread (WALL).
func wait4(status *unix.WaitStatus) (int, error) { return wait4Flags(status, 0) }

// wait4Flags is wait4 with extra flags (WNOHANG: 0 when nothing is ready).
func wait4Flags(status *unix.WaitStatus, flags int) (int, error) {
	for {
		pid, err := unix.Wait4(-1, status, unix.WALL|flags, nil)
		if err == unix.EINTR {
			continue
		}
		return pid, err
	}
}

// readMem copies tracee memory at addr into buf with process_vm_readv and
// returns how many bytes were read.
func readMem(pid int, addr uint64, buf []byte) (int, error) {
	if len(buf) == 0 {
		return 0, nil
	}
	local := unix.Iovec{Base: &buf[0], Len: uint64(len(buf))}
	remote := unix.RemoteIovec{Base: uintptr(addr), Len: len(buf)}
	n, _, e := unix.RawSyscall6(unix.SYS_PROCESS_VM_READV, uintptr(pid),
		uintptr(unsafe.Pointer(&local)), 1, uintptr(unsafe.Pointer(&remote)), 1, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// readMem2 reads tracee memory at a into ba and at b into bb with one
// process_vm_readv and returns how many bytes were read in all (the
// kernel stops at the first fault).
func readMem2(pid int, a uint64, ba []byte, b uint64, bb []byte) (int, error) {
	local := [2]unix.Iovec{{Base: &ba[0], Len: uint64(len(ba))}, {Base: &bb[0], Len: uint64(len(bb))}}
	remote := [2]unix.RemoteIovec{{Base: uintptr(a), Len: len(ba)}, {Base: uintptr(b), Len: len(bb)}}
	n, _, e := unix.RawSyscall6(unix.SYS_PROCESS_VM_READV, uintptr(pid),
		uintptr(unsafe.Pointer(&local[0])), 2, uintptr(unsafe.Pointer(&remote[0])), 2, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// writeMem copies buf into tracee memory at addr with process_vm_writev.
func writeMem(pid int, addr uint64, buf []byte) error {
	if len(buf) == 0 {
		return nil
	}
	local := unix.Iovec{Base: &buf[0], Len: uint64(len(buf))}
	remote := unix.RemoteIovec{Base: uintptr(addr), Len: len(buf)}
	n, _, e := unix.RawSyscall6(unix.SYS_PROCESS_VM_WRITEV, uintptr(pid),
		uintptr(unsafe.Pointer(&local)), 1, uintptr(unsafe.Pointer(&remote)), 1, 0)
	if e != 0 {
		return e
	}
	if int(n) != len(buf) {
		return unix.EFAULT
	}
	return nil
}

// ptraceGetSyscallInfo is PTRACE_GET_SYSCALL_INFO (Linux 5.3).
const ptraceGetSyscallInfo = 0x420e

// Values of ptrace_syscall_info.op.
const (
	syscallInfoNone    = 0
	syscallInfoEntry   = 1
	syscallInfoExit    = 2
	syscallInfoSeccomp = 3
)

// syscallInfoOp tells whether tid's syscall stop is an entry or an exit
// stop, or returns syscallInfoNone if the kernel cannot say.
func syscallInfoOp(tid int) int {
	var info [88]byte
	if err := ptracePtr(ptraceGetSyscallInfo, tid, uintptr(len(info)), unsafe.Pointer(&info[0])); err != nil {
		return syscallInfoNone
	}
	return int(info[0])
}
