package loader

import "golang.org/x/sys/unix"

// rangeFree reports whether nothing is mapped in [lo, hi) in this process:
// a PROT_NONE reservation of the range with MAP_FIXED_NOREPLACE succeeds
// (EEXIST where anything overlaps it), and is given back at once. A kernel
// older than 4.17 takes the flag as a hint, which it honours only where the
// range is free: a reservation elsewhere says taken.
func rangeFree(lo, hi uint64) bool {
	n := uintptr(hi - lo)
	p, _, errno := unix.Syscall6(unix.SYS_MMAP, uintptr(lo), n, unix.PROT_NONE,
		unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE|unix.MAP_FIXED_NOREPLACE, ^uintptr(0), 0)
	if errno != 0 {
		return false
	}
	unix.Syscall(unix.SYS_MUNMAP, p, n, 0)
	return p == uintptr(lo)
}
