package tracer

import (
	"os"
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
