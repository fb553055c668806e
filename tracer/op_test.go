package tracer

import (
	"os"
	"os/signal"
	"syscall"
	"testing"
)

func TestIsRestart(t *testing.T) {
	for _, tc := range []struct {
		ret  int64
		want bool
	}{{-512, true}, {-514, true}, {-516, true}, {-511, false}, {-517, false}, {-4, false}, {0, false}} {
		if got := isRestart(tc.ret); got != tc.want {
			t.Errorf("isRestart(%d) = %v, want %v", tc.ret, got, tc.want)
		}
	}
}

// TestHandlerRuns reads this process's SigCgt: the Go runtime catches SIGURG, and nobody can
// catch SIGKILL.
func TestHandlerRuns(t *testing.T) {
	if !handlerRuns(os.Getpid(), syscall.SIGURG) {
		t.Error("SIGURG: the Go runtime's handler not seen")
	}
	if handlerRuns(os.Getpid(), syscall.SIGKILL) {
		t.Error("SIGKILL reported as caught")
	}
}

// TestSigDisposition reads this process's SigIgn and SigCgt: SIGTTOU
// ignored here, SIGURG caught by the Go runtime, SIGKILL neither.
func TestSigDisposition(t *testing.T) {
	signal.Ignore(syscall.SIGTTOU)
	defer signal.Reset(syscall.SIGTTOU)
	for _, tc := range []struct {
		sig             syscall.Signal
		caught, ignored bool
	}{{syscall.SIGTTOU, false, true}, {syscall.SIGURG, true, false}, {syscall.SIGKILL, false, false}} {
		if c, i := sigDisposition(os.Getpid(), tc.sig); c != tc.caught || i != tc.ignored {
			t.Errorf("%v: caught %v ignored %v, want %v %v", tc.sig, c, i, tc.caught, tc.ignored)
		}
	}
	if c, _ := sigDisposition(-1, syscall.SIGINT); !c {
		t.Error("an unreadable status must count as a handler (the parked call ends)")
	}
}

// TestStopsThread: which signals stop a thread that neither catches them nor (ignored) ignores
// them.
func TestStopsThread(t *testing.T) {
	for _, tc := range []struct {
		sig     syscall.Signal
		ignored bool
		want    bool
	}{
		{syscall.SIGSTOP, false, true}, {syscall.SIGSTOP, true, true},
		{syscall.SIGTSTP, false, true}, {syscall.SIGTSTP, true, false},
		{syscall.SIGTTIN, false, true}, {syscall.SIGTTOU, true, false},
		{syscall.SIGCONT, false, false}, {syscall.SIGCHLD, false, false}, {syscall.SIGTERM, false, false},
	} {
		if got := stopsThread(tc.sig, tc.ignored); got != tc.want {
			t.Errorf("stopsThread(%v, ignored %v) = %v, want %v", tc.sig, tc.ignored, got, tc.want)
		}
	}
}
