package tracer_test

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/seccomp"
	"github.com/droidroot/droidroot/tracer"
	tt "github.com/droidroot/droidroot/tracer/tracertest"
)

// TestGuestPtraceHandlers: the guest ptrace handlers' answers to a process
// that traces nobody and whose parent is outside the guest (the harness's
// child): requests on non-tracees, attaching to itself or to a process
// outside the guest, PTRACE_TRACEME; and its waits, which go to the kernel
// untouched (one stop, not answered). The multi-process cases (stops, the
// emulated waits) are e2e's TestPtraceProbe and TestStrace.
func TestGuestPtraceHandlers(t *testing.T) {
	steps := []tt.Step{
		tt.Call("getpid"),
		tt.Call("ptrace", tt.Int(unix.PTRACE_TRACEME), tt.Int(0), tt.Int(0), tt.Int(0)),
		tt.Call("ptrace", tt.Int(unix.PTRACE_ATTACH), tt.Ret(0), tt.Int(0), tt.Int(0)),
		tt.Call("ptrace", tt.Int(unix.PTRACE_SEIZE), tt.Ret(0), tt.Int(0), tt.Int(unix.PTRACE_O_TRACESYSGOOD)),
		tt.Call("ptrace", tt.Int(unix.PTRACE_ATTACH), tt.Int(1), tt.Int(0), tt.Int(0)),
		tt.Call("ptrace", tt.Int(unix.PTRACE_ATTACH), tt.Int(0x3ffffff0), tt.Int(0), tt.Int(0)),
		tt.Call("ptrace", tt.Int(unix.PTRACE_CONT), tt.Ret(0), tt.Int(0), tt.Int(0)),
		tt.Call("ptrace", tt.Int(unix.PTRACE_PEEKDATA), tt.Ret(0), tt.Int(0), tt.Out(8)),
		tt.Call("ptrace", tt.Int(unix.PTRACE_INTERRUPT), tt.Ret(0), tt.Int(0), tt.Int(0)),
		tt.Call("wait4", tt.Int(-1), tt.Out(4), tt.Int(unix.WNOHANG), tt.Int(0)),
		tt.Call("waitid", tt.Int(unix.P_ALL), tt.Int(0), tt.Out(128), tt.Int(unix.WEXITED|unix.WNOHANG), tt.Int(0)),
	}
	want := []unix.Errno{0, unix.EPERM, unix.EPERM, unix.EPERM, unix.EPERM, unix.ESRCH, unix.ESRCH, unix.ESRCH, unix.ESRCH, unix.ECHILD, unix.ECHILD}
	android, err := seccomp.LoadAndroidPolicy("16")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		android *seccomp.AndroidPolicy
	}{{"linux", nil}, {"android 16", android}} {
		t.Run(tc.name, func(t *testing.T) {
			r := tt.Run(t, tt.Options{Table: tracer.GuestPtrace(), Android: tc.android}, steps...)
			if len(r.Steps) != len(steps) {
				t.Fatalf("the child made %d of %d steps: %s", len(r.Steps), len(steps), r.Stderr)
			}
			for k, w := range want {
				if got := r.Steps[k].Errno(); got != w {
					t.Errorf("step %d (%s): %v, want %v", k, steps[k].Name, got, w)
				}
			}
			for _, k := range []int{9, 10} {
				s, ok := r.EntryOf(k)
				if !ok || s.Answered {
					t.Errorf("step %d (%s): stopped %v, answered %v; want one stop, left to the kernel", k, steps[k].Name, ok, s.Answered)
				}
			}
			for k := 1; k <= 8; k++ {
				if s, ok := r.EntryOf(k); !ok || !s.Answered {
					t.Errorf("step %d (ptrace): stopped %v; want answered by the emulation", k, ok)
				}
			}
		})
	}
}
