package tracer

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// saNoCldStop is SA_NOCLDSTOP (the same value on every Linux architecture
// droidroot supports).
const saNoCldStop = 1

// QuietStops sets SA_NOCLDSTOP on the Go runtime's own SIGCHLD handler, so
// that a tracee's ptrace stop no longer sends the tracer a SIGCHLD
// (kernel/signal.c do_notify_parent_cldstop: wait4 is still woken). Without
// it every stop delivers a signal that interrupts an idle runtime thread
// and runs a handler: several microseconds a stop on a busy machine. Exits
// still send SIGCHLD. The runtime installs its handlers once at start-up
// and never reads them back, so changing the flags in place is safe; the
// handler, its mask and its restorer are kept as they are.
func QuietStops() error {
	// struct kernel_sigaction on amd64 and arm64: handler, flags,
	// restorer, mask (8 bytes each).
	var act [4]uint64
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGCHLD), 0,
		uintptr(unsafe.Pointer(&act)), 8, 0, 0); e != 0 {
		return e
	}
	if act[1]&saNoCldStop != 0 {
		return nil
	}
	act[1] |= saNoCldStop
	if _, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGCHLD),
		uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0); e != 0 {
		return e
	}
	return nil
}
