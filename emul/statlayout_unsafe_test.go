package emul

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestStatxLayout checks the offsets the statx and statfs patches and the
// owner fix-ups write at against the kernel structures as x/sys/unix
// declares them (tracer's TestStatLayout checks struct stat's).
func TestStatxLayout(t *testing.T) {
	var sx unix.Statx_t
	var sf unix.Statfs_t
	checks := []struct {
		name      string
		got, want uintptr
	}{
		{"statx.stx_nlink", statxNlinkOff, unsafe.Offsetof(sx.Nlink)},
		{"statx.stx_mode", statxModeOff, unsafe.Offsetof(sx.Mode)},
		{"statx.stx_size", statxSizeOff, unsafe.Offsetof(sx.Size)},
		{"statx.stx_uid", statxUIDOffset, unsafe.Offsetof(sx.Uid)},
		{"statx.stx_gid", statxGIDOffset, unsafe.Offsetof(sx.Gid)},
		{"statx.stx_mask", 0, unsafe.Offsetof(sx.Mask)},
		{"statfs.f_type", 0, unsafe.Offsetof(sf.Type)},
		{"sizeof f_type", 8, unsafe.Sizeof(sf.Type)},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: droidroot uses %d, the kernel's is %d", c.name, c.got, c.want)
		}
	}
	if unix.STATX_UID != statxUID || unix.STATX_GID != statxGID {
		t.Error("STATX_UID/STATX_GID differ from the constants used")
	}
}
