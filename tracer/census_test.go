package tracer

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/seccomp"
)

// TestCensus: the stops' counts by kind and call, most frequent first,
// calls named by the ABI's table (droidroot's own numbers included), ties
// by kind and name.
func TestCensus(t *testing.T) {
	abi := seccomp.X86_64
	var c census
	for _, s := range []struct {
		kind string
		nr   int
		n    int
	}{
		{stopSeccomp, 257, 3}, // openat
		{stopSigsys, 334, 2},  // rseq
		{stopLoader, 257, 2},
		{"exec", -1, 1},
		{stopSeccomp, 25714, 1}, // droidroot_fastpath
		{stopSeccomp, 4000, 1},  // no such call
	} {
		for i := 0; i < s.n; i++ {
			c.count(s.kind, s.nr)
		}
	}
	var b strings.Builder
	c.report(&b, abi)
	want := `droidroot: 10 stops (DROIDROOT_STOPS=1), by kind and call:
       3  seccomp   openat
       2  loader    openat
       2  sigsys    rseq
       1  exec
       1  seccomp   #4000
       1  seccomp   droidroot_fastpath
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
	var off *census
	off.count(stopSeccomp, 1) // a nil census counts nothing, and does not panic
}

// TestCountStop: events by name, signal-delivery stops as "signal", and
// neither calls (counted where decoded) nor SIGSYS (sigsysStop's).
func TestCountStop(t *testing.T) {
	tests := []struct {
		sig   unix.Signal
		event int
		want  map[censusKey]int
	}{
		{unix.SIGTRAP, unix.PTRACE_EVENT_FORK, map[censusKey]int{{"fork", -1}: 1}},
		{unix.SIGTRAP, unix.PTRACE_EVENT_CLONE, map[censusKey]int{{"clone", -1}: 1}},
		{unix.SIGTRAP, unix.PTRACE_EVENT_EXEC, map[censusKey]int{{"exec", -1}: 1}},
		{unix.SIGTRAP, unix.PTRACE_EVENT_EXIT, map[censusKey]int{{"exit", -1}: 1}},
		{unix.SIGSTOP, unix.PTRACE_EVENT_STOP, map[censusKey]int{{"group-stop", -1}: 1}},
		{unix.SIGCHLD, 0, map[censusKey]int{{"signal", -1}: 1}},
		{unix.SIGTRAP, unix.PTRACE_EVENT_SECCOMP, nil},
		{unix.SIGTRAP | 0x80, 0, nil},
		{unix.SIGSYS, 0, nil},
	}
	for _, tc := range tests {
		tr := &Tracer{census: &census{}}
		tr.countStop(tc.sig, tc.event)
		if diff := cmp.Diff(tc.want, tr.census.counts, cmp.AllowUnexported(censusKey{})); diff != "" {
			t.Errorf("sig %d event %d (-want +got):\n%s", tc.sig, tc.event, diff)
		}
	}
}
