//go:build linux

package seccomp

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Install loads filter into the calling thread with
// seccomp(SECCOMP_SET_MODE_FILTER, flags, &prog), after setting
// no_new_privs. flags are SECCOMP_FILTER_FLAG_* values (0 or
// unix.SECCOMP_FILTER_FLAG_TSYNC are the useful ones; NEW_LISTENER is
// refused).
//
// Call it from a freshly started process (droidroot's stage 2) just before
// it execs the guest. Install locks the calling goroutine to its OS thread
// and leaves it locked: without TSYNC only that thread carries the filter,
// so the exec must happen from the same goroutine. With TSYNC every thread
// of the process gets the filter; a thread that cannot be synchronized is
// reported as an error.
//
// If the kernel has no seccomp filter support the error wraps
// ErrUnavailable.
func Install(filter []unix.SockFilter, flags uint) error {
	if len(filter) == 0 || len(filter) > bpfMaxInsns {
		return fmt.Errorf("seccomp: install: filter of %d instructions (want 1..%d)", len(filter), bpfMaxInsns)
	}
	if flags&unix.SECCOMP_FILTER_FLAG_NEW_LISTENER != 0 {
		return errors.New("seccomp: install: SECCOMP_FILTER_FLAG_NEW_LISTENER is not supported")
	}
	runtime.LockOSThread() // never unlocked, see above

	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		if err == unix.EINVAL { // Linux < 3.5
			return fmt.Errorf("%w: prctl(PR_SET_NO_NEW_PRIVS): %v", ErrUnavailable, err)
		}
		return fmt.Errorf("seccomp: install: prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}

	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, uintptr(flags), uintptr(unsafe.Pointer(&prog)))
	if errno == unix.ENOSYS && flags == 0 {
		// Linux 3.5 to 3.16 have filters but no seccomp(2).
		r, _, errno = unix.Syscall6(unix.SYS_PRCTL, unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, uintptr(unsafe.Pointer(&prog)), 0, 0, 0)
	}
	runtime.KeepAlive(&prog)
	runtime.KeepAlive(filter)

	switch {
	case errno == 0 && r == 0:
		return nil
	case errno == 0 && flags&unix.SECCOMP_FILTER_FLAG_TSYNC != 0:
		return fmt.Errorf("seccomp: install: thread %d could not be synchronized to the new filter (TSYNC)", r)
	case errno == 0:
		return fmt.Errorf("seccomp: install: seccomp(SECCOMP_SET_MODE_FILTER) returned %d", r)
	case errno == unix.ENOSYS:
		return fmt.Errorf("%w: seccomp(SECCOMP_SET_MODE_FILTER): %v", ErrUnavailable, errno)
	case errno == unix.EINVAL && !filterModeSupported():
		return fmt.Errorf("%w: seccomp(SECCOMP_SET_MODE_FILTER): %v", ErrUnavailable, errno)
	case errno == unix.EINVAL:
		return fmt.Errorf("seccomp: install: kernel rejected the filter or flags %#x: %w", flags, errno)
	}
	return fmt.Errorf("seccomp: install: seccomp(SECCOMP_SET_MODE_FILTER): %w", errno)
}

// Available reports whether the kernel can install seccomp filters that
// return SECCOMP_RET_TRACE. It installs nothing and changes nothing: it
// asks prctl(PR_GET_SECCOMP), then passes a NULL program to
// seccomp(SECCOMP_SET_MODE_FILTER) (or prctl(PR_SET_SECCOMP) on kernels
// without seccomp(2)), which fails with EFAULT when filters are supported
// and EINVAL when they are not, and finally asks
// seccomp(SECCOMP_GET_ACTION_AVAIL) about SECCOMP_RET_TRACE (Linux >= 4.14;
// older kernels with filters all have it).
func Available() bool {
	if _, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0); err != nil {
		return false // CONFIG_SECCOMP is off
	}
	if !filterModeSupported() {
		return false
	}
	action := uint32(retTrace)
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_GET_ACTION_AVAIL, 0, uintptr(unsafe.Pointer(&action)))
	runtime.KeepAlive(&action)
	return errno != unix.EOPNOTSUPP
}

// filterModeSupported probes SECCOMP_MODE_FILTER with a NULL program: the
// kernel reads the program before doing anything else, so EFAULT means
// "supported" and nothing is installed.
func filterModeSupported() bool {
	_, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, 0)
	if errno == unix.ENOSYS {
		_, _, errno = unix.Syscall6(unix.SYS_PRCTL, unix.PR_SET_SECCOMP, unix.SECCOMP_MODE_FILTER, 0, 0, 0, 0)
	}
	return errno == unix.EFAULT
}
