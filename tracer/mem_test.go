package tracer

import (
	"os"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestReadString reads strings out of this process's own memory with
// process_vm_readv, as the tracer reads a tracee's path arguments.
func TestReadString(t *testing.T) {
	page := os.Getpagesize()
	// Two pages, the second inaccessible: a string that runs into it must
	// fail with EFAULT, one that ends before it must be read.
	mem, err := unix.Mmap(-1, 0, 2*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	if err := unix.Mprotect(mem[page:], unix.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	base := uint64(uintptr(unsafe.Pointer(&mem[0])))
	put := func(off int, s string) uint64 {
		copy(mem[off:], s)
		return base + uint64(off)
	}
	atEnd := put(page-16, "tail\x00")
	runsOff := put(page-4, "abcd") // no NUL before the protected page
	short := put(0, "/usr/bin/env\x00")
	long := put(100, strings.Repeat("p", 200)+"\x00")
	pid := os.Getpid()
	tests := []struct {
		name string
		addr uint64
		max  int
		want string
		err  error
	}{
		{"short", short, PathMax, "/usr/bin/env", nil},
		{"ends before the page end", atEnd, PathMax, "tail", nil},
		{"runs into an unmapped page", runsOff, PathMax, "", unix.EFAULT},
		{"null pointer", 0, PathMax, "", unix.EFAULT},
		{"exactly fits", long, 201, strings.Repeat("p", 200), nil},
		{"one byte too long", long, 200, "", unix.ENAMETOOLONG},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readString(pid, tt.addr, tt.max, nil)
			if got != tt.want || err != tt.err {
				t.Errorf("readString = %q, %v; want %q, %v", got, err, tt.want, tt.err)
			}
		})
	}
}
