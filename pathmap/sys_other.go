//go:build !(linux && (amd64 || arm64 || riscv64))

package pathmap

import "golang.org/x/sys/unix"

// Portable fallbacks of the direct system calls of sys_fast.go; they
// allocate a string per call.

// sysLstat returns the S_IFMT bits of path, which must end with a NUL byte.
func sysLstat(path []byte) (uint32, error) {
	return hostFS{}.Lstat(string(path[:len(path)-1]))
}

// sysReadlink reads the target of path (NUL-terminated) into buf.
func sysReadlink(path, buf []byte) (int, error) {
	s, err := hostFS{}.Readlink(string(path[:len(path)-1]))
	if err != nil {
		return 0, err
	}
	return copy(buf, s), nil
}

// sysSearch checks that the caller may search directory path (X_OK),
// which must end with a NUL byte.
func sysSearch(path []byte) error {
	return toErrno(unix.Access(string(path[:len(path)-1]), unix.X_OK))
}
