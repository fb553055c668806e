package tracer

import (
	"bytes"

	"golang.org/x/sys/unix"
)

// PathMax is the kernel's PATH_MAX, including the terminating NUL.
const PathMax = 4096

// readString reads a NUL-terminated string of at most max bytes (NUL
// included) from tracee memory. It returns ENAMETOOLONG when no NUL is
// found within max bytes and EFAULT when addr is not readable, like the
// kernel's strncpy_from_user.
func readString(pid int, addr uint64, max int, buf []byte) (string, error) {
	if addr == 0 {
		return "", unix.EFAULT
	}
	if cap(buf) < max {
		buf = make([]byte, max)
	}
	buf = buf[:max]
	got := 0
	for got < max {
		// Read up to the end of the current page so an unmapped next
		// page does not fail the whole read.
		chunk := toPageEnd(addr + uint64(got))
		if chunk > max-got {
			chunk = max - got
		}
		n, err := readMem(pid, addr+uint64(got), buf[got:got+chunk])
		if n > 0 {
			if i := bytes.IndexByte(buf[got:got+n], 0); i >= 0 {
				return string(buf[:got+i]), nil
			}
			got += n
		}
		if err != nil || n < chunk {
			return "", unix.EFAULT
		}
	}
	return "", unix.ENAMETOOLONG
}

// toPageEnd is the number of bytes from addr to the end of its 4 KiB page:
// a read that stops there does not fail for an unmapped next page.
func toPageEnd(addr uint64) int { return int(4096 - addr%4096) }
