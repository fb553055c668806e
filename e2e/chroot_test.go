//go:build linux

package e2e

import "testing"

// TestChroot checks chroot inside the guest: to the guest root it is a
// no-op that succeeds; to anything else droidroot answers EPERM, as for an
// unprivileged process, and never lets the kernel chroot the tracee to a
// host path (which a root tracer would otherwise do).
func TestChroot(t *testing.T) {
	needRoot(t)
	g := busyboxGuest(t)
	res := viaDroidroot(t, g, "", "/bin/sh", "-c",
		`chroot / /bin/echo root-ok; chroot /fx /bin/true 2>/dev/null; echo "fx $?"; chroot /nonexistent /bin/true 2>/dev/null; echo "missing $?"; ls /fx/exec/script.sh`)
	want := "root-ok\nfx 1\nmissing 1\n/fx/exec/script.sh\n"
	if res.Stdout != want || res.Code != 0 {
		t.Errorf("got %s\nwant exit 0, stdout:\n%s", res, want)
	}
}
