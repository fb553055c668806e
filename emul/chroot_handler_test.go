package emul

import (
	"testing"

	"golang.org/x/sys/unix"

	tt "github.com/droidroot/droidroot/tracer/tracertest"
)

// TestChrootPrivilege: chroot to the guest's own root succeeds only with CAP_SYS_CHROOT, the
// emulated one under -0/-i (proot's test-82ba4ba1: `-i 123:456 chroot /` is EPERM, as for the
// kernel's unprivileged caller); a missing directory and a file are the lookup's errors first.
func TestChrootPrivilege(t *testing.T) {
	steps := []tt.Step{
		tt.Call("chroot", tt.Str("/")),
		tt.Call("chroot", tt.Str("/missing")),
		tt.Call("chroot", tt.Str("/etc/passwd")),
		tt.Call("chroot", tt.Str("/tmp")),
	}
	for _, tc := range []struct {
		name string
		id   Identity
		want []unix.Errno
	}{
		{"-0", Identity{UID: 0, GID: 0}, []unix.Errno{0, unix.ENOENT, unix.ENOTDIR, unix.EPERM}},
		{"-i 123:456", Identity{UID: 123, GID: 456}, []unix.Errno{unix.EPERM, unix.ENOENT, unix.ENOTDIR, unix.EPERM}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Identity: &tc.id}
			em := New(cfg)
			r := tt.Run(t, tt.Options{Table: em.Table, State: em, Creds: InitialCreds(cfg)}, steps...)
			for i, want := range tc.want {
				if got := r.Steps[i].Errno(); got != want {
					t.Errorf("step %d (chroot %q): %v, want %v", i, r.Steps[i].CString(0), got, want)
				}
			}
		})
	}
}
