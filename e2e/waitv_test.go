package e2e

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFutexWaitv runs test/progs/waitvprobe.c's conformance transcript (every
// errno case, timeouts on both clocks, woken indexes up to 128 words, wakes
// across two processes mapping one file at different addresses, wake counts,
// a waiter killed mid-wait) and its stress (ping-pong between two processes,
// eight contending threads) with the kernel's futex_waitv (the chroot) and
// with the fast path library's emulation, forced on a PC and under Android
// 16's policy, which blocks the kernel's: the same transcript.
func TestFutexWaitv(t *testing.T) {
	needRoot(t)
	g := busyboxGuest(t)
	want := viaChroot(t, g, "", "/progs/waitvprobe.dyn")
	if want.Code != 0 || len(want.Stdout) < 200 {
		t.Fatalf("the kernel's run: %s", want)
	}
	rounds := "20000"
	if testing.Short() {
		rounds = "5000"
	}
	for _, mode := range []struct{ name, policy, env string }{
		{"emulated", "", "DROIDROOT_FUTEX_WAITV=emulate"},
		{"android-16", "16", ""},
	} {
		t.Run(mode.name, func(t *testing.T) {
			for _, args := range [][]string{{"/progs/waitvprobe.dyn"}, {"/progs/waitvprobe.dyn", "stress", rounds}} {
				argv := droidrootArgs(droidrootBin(t), g, args...)
				if mode.policy != "" {
					argv = append(argv[:2], append([]string{"--android-policy=" + mode.policy}, argv[2:]...)...)
				}
				env := []string{"env", "DROIDROOT_FASTPATH=1"}
				if mode.env != "" {
					env = append(env, mode.env)
				}
				got := run(t, "", append(env, argv...)...)
				if len(args) == 1 {
					if diff := cmp.Diff(want.Stdout, got.Stdout); diff != "" || got.Code != 0 {
						t.Errorf("transcript differs from the kernel's (-kernel +droidroot), %s:\n%s", got, diff)
					}
				} else if got.Code != 0 || got.Stdout != "stress ok\n" {
					t.Errorf("stress: %s", got)
				}
			}
		})
	}
}
