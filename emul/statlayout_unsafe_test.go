package emul

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestStatLayout checks the offsets the stat patches write at against the
// kernel structures as x/sys/unix declares them for this architecture.
func TestStatLayout(t *testing.T) {
	var st unix.Stat_t
	var sx unix.Statx_t
	var sf unix.Statfs_t
	checks := []struct {
		name      string
		got, want uintptr
	}{
		{"stat.st_nlink", statNlinkOff, unsafe.Offsetof(st.Nlink)},
		{"sizeof st_nlink", statNlinkSize, unsafe.Sizeof(st.Nlink)},
		{"stat.st_mode", statModeOff, unsafe.Offsetof(st.Mode)},
		{"stat.st_size", statSizeOff, unsafe.Offsetof(st.Size)},
		{"statx.stx_nlink", statxNlinkOff, unsafe.Offsetof(sx.Nlink)},
		{"statx.stx_mode", statxModeOff, unsafe.Offsetof(sx.Mode)},
		{"statx.stx_size", statxSizeOff, unsafe.Offsetof(sx.Size)},
		{"statfs.f_type", 0, unsafe.Offsetof(sf.Type)},
		{"sizeof f_type", 8, unsafe.Sizeof(sf.Type)},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: droidroot uses %d, the kernel's is %d", c.name, c.got, c.want)
		}
	}
}
