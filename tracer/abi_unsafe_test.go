package tracer

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestStatLayout checks the struct stat offsets handlers patch at against
// the kernel structure as x/sys/unix declares it for this architecture.
func TestStatLayout(t *testing.T) {
	var st unix.Stat_t
	checks := []struct {
		name      string
		got, want uintptr
	}{
		{"stat.st_nlink", StatNlinkOff, unsafe.Offsetof(st.Nlink)},
		{"sizeof st_nlink", StatNlinkSize, unsafe.Sizeof(st.Nlink)},
		{"stat.st_mode", StatModeOff, unsafe.Offsetof(st.Mode)},
		{"stat.st_uid", StatUIDOff, unsafe.Offsetof(st.Uid)},
		{"stat.st_gid", StatUIDOff + 4, unsafe.Offsetof(st.Gid)},
		{"stat.st_size", StatSizeOff, unsafe.Offsetof(st.Size)},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: droidroot uses %d, the kernel's is %d", c.name, c.got, c.want)
		}
	}
}
