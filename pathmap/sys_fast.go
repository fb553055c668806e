//go:build linux && (amd64 || arm64 || riscv64)

package pathmap

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// These call newfstatat(2) and readlinkat(2) directly on a NUL-terminated
// byte slice, so that a walk does not allocate a C string per system call
// (unix.Lstat and unix.Readlink do). Both calls are in Android's seccomp
// allow list (bionic uses them).

// atFDCWD is unix.AT_FDCWD in a variable, which uintptr may convert (the
// negative constant it may not).
var atFDCWD = unix.AT_FDCWD

// sysLstat returns the S_IFMT bits of path, which must end with a NUL byte.
func sysLstat(path []byte) (uint32, error) {
	var st unix.Stat_t
	_, _, e := syscall.Syscall6(unix.SYS_NEWFSTATAT, uintptr(atFDCWD),
		uintptr(unsafe.Pointer(&path[0])), uintptr(unsafe.Pointer(&st)),
		unix.AT_SYMLINK_NOFOLLOW, 0, 0)
	if e != 0 {
		return 0, e
	}
	return st.Mode & syscall.S_IFMT, nil
}

// sysReadlink reads the target of path (NUL-terminated) into buf.
func sysReadlink(path, buf []byte) (int, error) {
	n, _, e := syscall.Syscall6(unix.SYS_READLINKAT, uintptr(atFDCWD),
		uintptr(unsafe.Pointer(&path[0])), uintptr(unsafe.Pointer(&buf[0])),
		uintptr(len(buf)), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// sysSearch checks that the caller may search directory path (X_OK, with
// its real ids: the tracer's are the same), NUL-terminated.
func sysSearch(path []byte) error {
	_, _, e := syscall.Syscall(unix.SYS_FACCESSAT, uintptr(atFDCWD),
		uintptr(unsafe.Pointer(&path[0])), unix.X_OK)
	if e != 0 {
		return e
	}
	return nil
}
