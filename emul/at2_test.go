package emul

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestAccessByMode checks the computed access rules against files of known modes.
func TestAccessByMode(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string, mode uint32, uid, gid int) (string, *unix.Stat_t) {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, os.FileMode(mode))
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			t.Fatal(err)
		}
		st.Uid, st.Gid, st.Mode = uint32(uid), uint32(gid), unix.S_IFREG|mode
		return p, &st
	}
	p640, st640 := mk("f640", 0o640, 0, 0)
	p755, st755 := mk("f755", 0o755, 0, 0)
	p060, st060 := mk("f060", 0o060, 0, 65534)
	user := accessCreds{uid: 1000, gid: 1000}
	other := accessCreds{uid: 65534, gid: 65534}
	root := accessCreds{caps: 1<<capDacOverride | 1<<capDacReadSearch}
	for _, tc := range []struct {
		name string
		p    string
		st   *unix.Stat_t
		mode uint32
		a    accessCreds
		want unix.Errno
	}{
		{"exists", p640, st640, 0, user, 0},
		{"other read 640", p640, st640, unix.R_OK, user, unix.EACCES},
		{"other read 755", p755, st755, unix.R_OK | unix.X_OK, user, 0},
		{"other write 755", p755, st755, unix.W_OK, user, unix.EACCES},
		{"group 060", p060, st060, unix.R_OK | unix.W_OK, other, 0},
		{"group 060 exec", p060, st060, unix.X_OK, other, unix.EACCES},
		{"supplementary group", p060, st060, unix.R_OK, accessCreds{uid: 1, gid: 1, groups: []uint32{65534}}, 0},
		{"owner without owner bits", p060, st060, unix.R_OK, accessCreds{uid: 0, gid: 5}, unix.EACCES},
		{"root rw", p060, st060, unix.R_OK | unix.W_OK, root, 0},
		{"root exec without x bits", p640, st640, unix.X_OK, root, unix.EACCES},
		{"root exec with x bits", p755, st755, unix.X_OK, root, 0},
		{"read-search only", p640, st640, unix.R_OK, accessCreds{uid: 7, gid: 7, caps: 1 << capDacReadSearch}, 0},
		{"read-search write", p640, st640, unix.W_OK, accessCreds{uid: 7, gid: 7, caps: 1 << capDacReadSearch}, unix.EACCES},
	} {
		if got := accessByMode(tc.p, tc.st, tc.mode, tc.a); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestReadCreds parses droidroot's own /proc status.
func TestReadCreds(t *testing.T) {
	cr, err := readCreds("self")
	if err != nil {
		t.Fatal(err)
	}
	if cr.uid != uint32(os.Getuid()) || cr.gid != uint32(os.Getgid()) || cr.euid != uint32(os.Geteuid()) {
		t.Errorf("creds %+v, want uid %d gid %d", cr, os.Getuid(), os.Getgid())
	}
	if !cr.forAccess(false).equal(cr.forAccess(false)) {
		t.Error("creds not equal to themselves")
	}
}
