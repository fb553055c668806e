package e2e

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFutexWaitv runs test/progs/waitvprobe.c's conformance transcript (every
// errno case, timeouts on both clocks, woken indexes up to 128 words, wakes
// across two processes mapping one file at different addresses, wake counts,
// a waiter killed mid-wait) and its stress (ping-pong between two processes,
// eight contending threads) with the kernel's futex_waitv (the chroot) and
// with the fast path library's emulation, forced on a PC and under Android
// 16's policy, which blocks the kernel's: the same transcript. Under the
// policy the static and static-pie builds (no library: the tracer answers
// their futex_waitv against the same registry, and the loader's filter
// brings their FUTEX_WAKE calls to it) give the same transcript too, and so
// do waits and wakes between a process with the library and one without.
func TestFutexWaitv(t *testing.T) {
	needRoot(t)
	g := busyboxGuest(t)
	want := viaChroot(t, g, "", "/progs/waitvprobe.dyn")
	if want.Code != 0 || len(want.Stdout) < 200 {
		t.Fatalf("the kernel's run: %s", want)
	}
	wantMixed := viaChroot(t, g, "", "/progs/waitvprobe.dyn", "mixed", "/progs/waitvprobe")
	if wantMixed.Code != 0 || !strings.Contains(wantMixed.Stdout, "woken at index 1") {
		t.Fatalf("the kernel's mixed run: %s", wantMixed)
	}
	wantSignals := viaChroot(t, g, "", "/progs/waitvprobe", "signals")
	if wantSignals.Code != 0 || strings.Count(wantSignals.Stdout, "\n") != 4 {
		t.Fatalf("the kernel's signals run: %s", wantSignals)
	}
	// 500k ping-pong round trips where the library answers: each has two
	// wakes that may race the other side's registration, a million in
	// all (the 100k round trips and million races); the tracer's
	// answers (static builds) cost a stop per wait and wake, so fewer.
	rounds, tracerRounds := "500000", "20000"
	if testing.Short() {
		rounds, tracerRounds = "5000", "300" // tracer: about 50 ms a round in the arm64 VM (TCG)
	}
	for _, mode := range []struct{ name, policy, env string }{
		{"emulated", "", "DROIDROOT_FUTEX_WAITV=emulate"},
		{"android-16", "16", ""},
	} {
		t.Run(mode.name, func(t *testing.T) {
			progs := []string{"/progs/waitvprobe.dyn"}
			if mode.policy != "" {
				progs = append(progs, "/progs/waitvprobe", "/progs/waitvprobe.pie")
			}
			var runs [][]string
			for _, p := range progs {
				r := rounds
				if p != "/progs/waitvprobe.dyn" {
					r = tracerRounds
				}
				runs = append(runs, []string{p}, []string{p, "stress", r})
			}
			if mode.policy != "" {
				// Waits a signal interrupts: EINTR, or a restart after an
				// SA_RESTART handler. The tracer's answers only: the library's
				// timed waits are EINTR after any handler (docs/android.md).
				runs = append(runs, []string{"/progs/waitvprobe", "signals"}, []string{"/progs/waitvprobe.pie", "signals"})
				// A process with the library and one without, each way.
				runs = append(runs, []string{"/progs/waitvprobe.dyn", "mixed", "/progs/waitvprobe"},
					[]string{"/progs/waitvprobe", "mixed", "/progs/waitvprobe.dyn"})
			}
			for _, args := range runs {
				argv := droidrootArgs(droidrootBin(t), g, args...)
				if mode.policy != "" {
					argv = append(argv[:2], append([]string{"--android-policy=" + mode.policy}, argv[2:]...)...)
				}
				env := []string{"env", "DROIDROOT_FASTPATH=1"}
				if mode.env != "" {
					env = append(env, mode.env)
				}
				got := run(t, "", append(env, argv...)...)
				if len(args) == 2 && args[1] == "signals" {
					if diff := cmp.Diff(wantSignals.Stdout, got.Stdout); diff != "" || got.Code != 0 {
						t.Errorf("%s signals: differs from the kernel's (-kernel +droidroot), %s:\n%s", args[0], got, diff)
					}
				} else if len(args) == 3 && args[1] == "mixed" {
					if diff := cmp.Diff(wantMixed.Stdout, got.Stdout); diff != "" || got.Code != 0 {
						t.Errorf("%s mixed %s: differs from the kernel's (-kernel +droidroot), %s:\n%s", args[0], args[2], got, diff)
					}
				} else if len(args) == 1 {
					if diff := cmp.Diff(want.Stdout, got.Stdout); diff != "" || got.Code != 0 {
						t.Errorf("%s: transcript differs from the kernel's (-kernel +droidroot), %s:\n%s", args[0], got, diff)
					}
				} else if got.Code != 0 || got.Stdout != "stress ok\n" {
					t.Errorf("%s stress: %s", args[0], got)
				}
			}
		})
	}
}
