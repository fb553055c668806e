package emul

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// statBytes is fstatat(dirfd, name, flags) as the kernel writes its struct
// stat (golang.org/x/sys's Stat_t is the native ABI's layout).
func statBytes(dirfd int, name string, flags int) ([]byte, unix.Errno) {
	st := new(unix.Stat_t)
	if err := unix.Fstatat(dirfd, name, st, flags); err != nil {
		return nil, err.(unix.Errno)
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(st)), unsafe.Sizeof(*st)), 0
}

// statxBytes is statx(dirfd, name, flags, mask) as the kernel writes its
// struct statx.
func statxBytes(dirfd int, name string, flags int, mask uint32) ([]byte, unix.Errno) {
	sx := new(unix.Statx_t)
	if err := unix.Statx(dirfd, name, flags, int(mask), sx); err != nil {
		return nil, err.(unix.Errno)
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(sx)), unsafe.Sizeof(*sx)), 0
}

// statfsBytes is statfs(path) as the kernel writes its struct statfs.
func statfsBytes(path string) ([]byte, unix.Errno) {
	sf := new(unix.Statfs_t)
	if err := unix.Statfs(path, sf); err != nil {
		return nil, err.(unix.Errno)
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(sf)), unsafe.Sizeof(*sf)), 0
}
