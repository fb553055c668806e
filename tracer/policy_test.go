package tracer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/seccomp"
)

// TestPolicyTraceIf: a handler with TraceIf becomes an argument rule with
// its entry or exit action, and its number keeps the action of its class
// (allowed when it has none), so that its other calls are not stopped.
func TestPolicyTraceIf(t *testing.T) {
	enter := func(*Call) {}
	untraced := &ArgMask{Arg: 0, Mask: unix.CLONE_UNTRACED}
	for _, goarch := range []string{"amd64", "arm64"} {
		abi := seccomp.NativeABI(goarch)
		nr := func(name string) int {
			n, ok := abi.Nr(name)
			if !ok {
				t.Fatalf("%s: no %s", goarch, name)
			}
			return n
		}
		for _, tc := range []struct {
			name      string
			table     Table
			classes   *Classes
			wantRules map[int]seccomp.Action
			wantArgs  map[int]seccomp.ArgRule
		}{
			{"harmless", Table{"clone": {Enter: enter, TraceIf: untraced}, "openat": {Enter: enter}},
				&Classes{Harmless: map[string]bool{"clone": true}},
				map[int]seccomp.Action{nr("clone"): seccomp.Allow, nr("openat"): seccomp.TraceEntry},
				map[int]seccomp.ArgRule{nr("clone"): {Arg: 0, Mask: unix.CLONE_UNTRACED, Action: seccomp.TraceEntry}}},
			{"no class", Table{"sendto": {Enter: enter, TraceIf: &ArgMask{Arg: 5, Min: 3, Max: 110}}},
				&Classes{Harmless: map[string]bool{"clone": true}},
				map[int]seccomp.Action{nr("clone"): seccomp.Allow, nr("sendto"): seccomp.Allow},
				map[int]seccomp.ArgRule{nr("sendto"): {Arg: 5, Min: 3, Max: 110, Action: seccomp.TraceEntry}}},
			{"no classes", Table{"clone": {Enter: enter, TraceIf: untraced}},
				nil,
				map[int]seccomp.Action{},
				map[int]seccomp.ArgRule{nr("clone"): {Arg: 0, Mask: unix.CLONE_UNTRACED, Action: seccomp.TraceEntry}}},
			{"exit", Table{"getpriority": {Enter: enter, Exit: enter, TraceIf: &ArgMask{Arg: 1, Mask: 4}}},
				&Classes{Refused: map[string]unix.Errno{"getpriority": unix.EPERM}},
				map[int]seccomp.Action{nr("getpriority"): seccomp.Errno(unix.EPERM)},
				map[int]seccomp.ArgRule{nr("getpriority"): {Arg: 1, Mask: 4, Action: seccomp.TraceExit}}},
			{"none", Table{"openat": {Enter: enter}}, nil,
				map[int]seccomp.Action{nr("openat"): seccomp.TraceEntry}, nil},
		} {
			p := Policy(goarch, tc.table, tc.classes)
			if diff := cmp.Diff(tc.wantRules, p.Rules[abi]); diff != "" {
				t.Errorf("%s %s: rules (-want +got):\n%s", goarch, tc.name, diff)
			}
			if diff := cmp.Diff(tc.wantArgs, p.ArgRules[abi]); diff != "" {
				t.Errorf("%s %s: argument rules (-want +got):\n%s", goarch, tc.name, diff)
			}
			if _, err := seccomp.Build(goarch, p); err != nil {
				t.Errorf("%s %s: Build: %v", goarch, tc.name, err)
			}
		}
	}
}
