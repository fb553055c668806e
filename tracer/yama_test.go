package tracer

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/ident"
)

// yamaTracer returns a tracer whose Yama has ptrace_scope scope (-1: no
// Yama), whose processes descend as parents says, and in which the
// tasks of caps have CAP_SYS_PTRACE.
func yamaTracer(t *testing.T, scope int, parents map[int]int, caps ...int) *Tracer {
	file := filepath.Join(t.TempDir(), "ptrace_scope")
	if scope >= 0 {
		if err := os.WriteFile(file, []byte{byte('0' + scope), '\n'}, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tr := &Tracer{cfg: Config{YamaFile: file}, threads: map[int]*Thread{}}
	tr.pt.parentOf = func(pid int) int { return parents[pid] }
	tr.pt.capPtrace = func(pid int) bool {
		for _, c := range caps {
			if c == pid {
				return true
			}
		}
		return false
	}
	return tr
}

// TestYamaMayAttach: yama_ptrace_access_check's answers for each scope,
// with and without PR_SET_PTRACER exceptions and CAP_SYS_PTRACE. The tree:
// 10 has children 11 and 12; 11 has 13; 20 is elsewhere.
func TestYamaMayAttach(t *testing.T) {
	parents := map[int]int{11: 10, 12: 10, 13: 11, 10: 1, 20: 1}
	type ex = map[int]ptracer
	tests := []struct {
		name           string
		scope          int
		ptracers       ex
		caps           []int
		tracer, tracee int
		want           bool
	}{
		{"no Yama", -1, nil, nil, 12, 11, true},
		{"scope 0", 0, nil, nil, 12, 11, true},
		{"scope 1, child", 1, nil, nil, 10, 11, true},
		{"scope 1, grandchild", 1, nil, nil, 10, 13, true},
		{"scope 1, parent", 1, nil, nil, 11, 10, false},
		{"scope 1, sibling", 1, nil, nil, 12, 11, false},
		{"scope 1, parent named by the child", 1, ex{11: {tid: 10, pid: 10}}, nil, 10, 11, true},
		{"scope 1, sibling named", 1, ex{11: {tid: 12, pid: 12}}, nil, 12, 11, true},
		{"scope 1, a descendant of the one named", 1, ex{10: {tid: 11, pid: 11}}, nil, 13, 10, true},
		{"scope 1, the parent of the one named", 1, ex{11: {tid: 12, pid: 12}}, nil, 10, 11, true}, // 11 is 10's child anyway
		{"scope 1, another one named", 1, ex{10: {tid: 12, pid: 12}}, nil, 20, 10, false},
		{"scope 1, the exception is the tracee's", 1, ex{12: {tid: 20, pid: 20}}, nil, 20, 10, false},
		{"scope 1, any", 1, ex{10: {tid: ptracerAny, pid: ptracerAny}}, nil, 20, 10, true},
		{"scope 1, CAP_SYS_PTRACE", 1, nil, []int{20}, 20, 10, true},
		{"scope 2, child", 2, nil, nil, 10, 11, false},
		{"scope 2, any", 2, ex{11: {tid: ptracerAny, pid: ptracerAny}}, nil, 10, 11, false},
		{"scope 2, CAP_SYS_PTRACE", 2, nil, []int{10}, 10, 11, true},
		{"scope 3, CAP_SYS_PTRACE", 3, nil, []int{10}, 10, 11, false},
	}
	for _, tc := range tests {
		tr := yamaTracer(t, tc.scope, parents, tc.caps...)
		tr.pt.ptracers = tc.ptracers
		if got := tr.yamaMayAttach(tc.tracer, tc.tracer, tc.tracee); got != tc.want {
			t.Errorf("%s: %d may attach to %d: %v, want %v", tc.name, tc.tracer, tc.tracee, got, tc.want)
		}
	}
}

// TestYamaMayTraceme: yama_ptrace_traceme: scope 2 needs the parent's
// CAP_SYS_PTRACE, scope 3 refuses.
func TestYamaMayTraceme(t *testing.T) {
	for _, tc := range []struct {
		scope int
		cap   bool
		want  bool
	}{{-1, false, true}, {0, false, true}, {1, false, true}, {2, false, false}, {2, true, true}, {3, true, false}} {
		var caps []int
		if tc.cap {
			caps = []int{10}
		}
		if got := yamaTracer(t, tc.scope, nil, caps...).yamaMayTraceme(10); got != tc.want {
			t.Errorf("scope %d, parent's CAP_SYS_PTRACE %v: %v, want %v", tc.scope, tc.cap, got, tc.want)
		}
	}
}

// TestPtracersExited: an exception ends when the process that declared it
// exits (its leader) or when the task it names does.
func TestPtracersExited(t *testing.T) {
	tr := yamaTracer(t, 1, nil)
	tr.pt.ptracers = map[int]ptracer{10: {tid: 21, pid: 20}, 11: {tid: ptracerAny, pid: ptracerAny}, 12: {tid: 30, pid: 30}}
	tr.ptracersExited(21) // a thread of 20, the one 10 named
	tr.ptracersExited(11)
	tr.ptracersExited(31) // nobody's
	if _, ok := tr.pt.ptracers[12]; len(tr.pt.ptracers) != 1 || !ok {
		t.Errorf("left %v, want 12's only", tr.pt.ptracers)
	}
}

// TestDescendant: the walk follows real parents, a process descends from
// itself, and a loop in the answers ends.
func TestDescendant(t *testing.T) {
	tr := yamaTracer(t, 1, map[int]int{3: 2, 2: 1, 7: 8, 8: 7})
	for _, tc := range []struct {
		pid, anc int
		want     bool
	}{{3, 1, true}, {3, 3, true}, {1, 3, false}, {7, 1, false}} {
		if got := tr.descendant(tc.pid, tc.anc); got != tc.want {
			t.Errorf("descendant(%d, %d) = %v", tc.pid, tc.anc, got)
		}
	}
}

// TestProcStatus: the real readers of /proc this file uses, on ourselves.
func TestProcStatus(t *testing.T) {
	tr := &Tracer{threads: map[int]*Thread{}}
	if p := tr.parentOf(os.Getpid()); p != os.Getppid() {
		t.Errorf("parentOf(self) = %d, want %d", p, os.Getppid())
	}
	if g := tr.tgidOf(os.Getpid()); g != os.Getpid() {
		t.Errorf("tgidOf(self) = %d", g)
	}
	if g := tr.tgidOf(0x3ffffff0); g != 0 {
		t.Errorf("tgidOf(nobody) = %d", g)
	}
	tr.capPtrace(os.Getpid()) // parses; the answer depends on who runs the test
}

// TestCapPtraceEmulated: with emulated credentials, CAP_SYS_PTRACE is the
// calling thread's emulated one, not droidroot's.
func TestCapPtraceEmulated(t *testing.T) {
	tr := &Tracer{cfg: Config{Creds: &ident.Creds{}}, threads: map[int]*Thread{}}
	th := &Thread{Tid: 5}
	tr.threads[5] = th
	if tr.capPtrace(5) {
		t.Error("no capabilities: capable")
	}
	th.creds.CapEff = 1 << unix.CAP_SYS_PTRACE
	if !tr.capPtrace(5) {
		t.Error("CAP_SYS_PTRACE: not capable")
	}
}
