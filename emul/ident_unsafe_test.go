package emul

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestStatOffsets checks the owner offsets the stat fix-ups write at against this
// architecture's struct stat and struct statx.
func TestStatOffsets(t *testing.T) {
	var st unix.Stat_t
	if unsafe.Offsetof(st.Uid) != statUIDOffset || unsafe.Offsetof(st.Gid) != statUIDOffset+4 {
		t.Errorf("struct stat: st_uid at %d, st_gid at %d; statUIDOffset is %d", unsafe.Offsetof(st.Uid), unsafe.Offsetof(st.Gid), statUIDOffset)
	}
	var sx unix.Statx_t
	if unsafe.Offsetof(sx.Uid) != statxUIDOffset || unsafe.Offsetof(sx.Gid) != statxGIDOffset || unsafe.Offsetof(sx.Mask) != 0 {
		t.Errorf("struct statx: stx_uid at %d, stx_gid at %d", unsafe.Offsetof(sx.Uid), unsafe.Offsetof(sx.Gid))
	}
	if unix.STATX_UID != statxUID || unix.STATX_GID != statxGID {
		t.Error("STATX_UID/STATX_GID differ from the constants used")
	}
}
