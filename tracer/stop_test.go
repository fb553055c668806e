package tracer

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestStopStatus: the wait status waitAwaiting makes of a stop's siginfo is
// the one wait4 reports for that stop.
func TestStopStatus(t *testing.T) {
	trap := int32(unix.SIGTRAP)
	tests := []struct {
		name    string
		si      Siginfo
		sig     unix.Signal
		event   int
		initial bool
	}{
		{"initial stop", Siginfo{Signo: trap, Code: trap | unix.PTRACE_EVENT_STOP<<8}, unix.SIGTRAP, unix.PTRACE_EVENT_STOP, true},
		{"group stop", Siginfo{Signo: int32(unix.SIGSTOP), Code: int32(unix.SIGSTOP) | unix.PTRACE_EVENT_STOP<<8}, unix.SIGSTOP, unix.PTRACE_EVENT_STOP, true},
		{"seccomp stop", Siginfo{Signo: trap, Code: trap | unix.PTRACE_EVENT_SECCOMP<<8}, unix.SIGTRAP, unix.PTRACE_EVENT_SECCOMP, false},
		{"syscall stop", Siginfo{Signo: trap, Code: trap | 0x80}, unix.SIGTRAP | 0x80, 0, false},
		{"SIGSEGV", Siginfo{Signo: int32(unix.SIGSEGV), Code: 1}, unix.SIGSEGV, 0, false},
		{"SIGTRAP from int3", Siginfo{Signo: trap, Code: 1}, unix.SIGTRAP, 0, false},
		{"tgkill", Siginfo{Signo: int32(unix.SIGUSR1), Code: -6}, unix.SIGUSR1, 0, false},
	}
	for _, tc := range tests {
		ws := stopStatus(&tc.si)
		if !ws.Stopped() || ws.StopSignal() != tc.sig || int(ws)>>16&0xff != tc.event || initialStop(ws) != tc.initial {
			t.Errorf("%s: status %#x: stopped %v signal %v event %d initial %v; want signal %v event %d initial %v",
				tc.name, int(ws), ws.Stopped(), ws.StopSignal(), int(ws)>>16&0xff, initialStop(ws), tc.sig, tc.event, tc.initial)
		}
	}
}

// TestStaleInitialReport: an EVENT_STOP report of a task resumed from its
// initial stop is dropped only when the task is in no such stop now; a new
// one (SIGCONT's trap, an interrupt) is handled.
func TestStaleInitialReport(t *testing.T) {
	trap := int32(unix.SIGTRAP)
	report := unix.WaitStatus(0x7f | (int(unix.SIGTRAP)|unix.PTRACE_EVENT_STOP<<8)<<8)
	tests := []struct {
		name  string
		cur   *Siginfo
		stale bool
	}{
		{"running", nil, true},
		{"in SIGCONT's trap", &Siginfo{Signo: trap, Code: trap | unix.PTRACE_EVENT_STOP<<8}, false},
		{"at a seccomp stop", &Siginfo{Signo: trap, Code: trap | unix.PTRACE_EVENT_SECCOMP<<8}, true},
		{"at a syscall stop", &Siginfo{Signo: trap, Code: trap | 0x80}, true},
		{"in a group stop", &Siginfo{Signo: int32(unix.SIGSTOP), Code: int32(unix.SIGSTOP) | unix.PTRACE_EVENT_STOP<<8}, true},
		{"at a signal", &Siginfo{Signo: int32(unix.SIGSTOP)}, true},
	}
	for _, tc := range tests {
		if got := staleInitialReport(report, tc.cur); got != tc.stale {
			t.Errorf("%s: stale %v, want %v", tc.name, got, tc.stale)
		}
	}
}
