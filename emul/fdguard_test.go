package emul

import (
	"encoding/binary"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/fastpath"
	"github.com/droidroot/droidroot/tracer"
	tt "github.com/droidroot/droidroot/tracer/tracertest"
)

// TestFDGuardWord: the guard word of each memory through forks, threads,
// vfork children, execs and exits: odd exactly while the memory's threads
// may see more than one descriptor table, a new value at every change.
func TestFDGuardWord(t *testing.T) {
	const addr = 0x7000
	fork := func(pid, parent int, flags uint64) func(s *fastPathState) {
		return func(s *fastPathState) {
			s.events(&tracer.Event{Kind: tracer.EventFork, Pid: pid, ParentPid: parent, Flags: flags})
		}
	}
	exec := func(pid int) func(s *fastPathState) {
		return func(s *fastPathState) { s.events(&tracer.Event{Kind: tracer.EventExec, Pid: pid}) }
	}
	gone := func(pid int) func(s *fastPathState) {
		return func(s *fastPathState) { s.events(&tracer.Event{Kind: tracer.EventProcessGone, Pid: pid}) }
	}
	closeIn := func(pid int) func(s *fastPathState) {
		return func(s *fastPathState) { s.fdChangeIn(pid, false, s.write) }
	}
	unshare := func(pid int) func(s *fastPathState) {
		return func(s *fastPathState) { s.fdChangeIn(pid, true, s.write) }
	}
	const thread = unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD
	const vfork = unix.CLONE_VM | unix.CLONE_VFORK
	for _, tc := range []struct {
		name string
		ops  []func(s *fastPathState)
		want map[int][]uint32 // the words written, per process
	}{
		{"closes", []func(*fastPathState){closeIn(7), closeIn(7)}, map[int][]uint32{7: {2, 4}}},
		{"thread", []func(*fastPathState){fork(7, 7, thread), closeIn(7)}, map[int][]uint32{7: {2}}},
		{"thread with its own table", []func(*fastPathState){fork(7, 7, thread&^unix.CLONE_FILES), closeIn(7)},
			map[int][]uint32{7: {3, 5}}},
		{"vfork then exec", []func(*fastPathState){fork(8, 7, vfork), closeIn(8), exec(8), closeIn(7)},
			map[int][]uint32{7: {3, 6, 8}, 8: {5}}}, // 8 writes in the memory it shares
		{"vfork then exit", []func(*fastPathState){fork(8, 7, vfork), gone(8)}, map[int][]uint32{7: {3, 4}}},
		{"two vforks", []func(*fastPathState){fork(8, 7, vfork), fork(9, 7, vfork), gone(8), exec(9)},
			map[int][]uint32{7: {3, 5, 7, 8}}},
		{"vfork sharing the table", []func(*fastPathState){fork(8, 7, vfork|unix.CLONE_FILES), closeIn(8)},
			map[int][]uint32{8: {2}}},
		{"fork", []func(*fastPathState){fork(8, 7, 0), closeIn(8), closeIn(7)},
			map[int][]uint32{8: {2, 4}, 7: {2}}},
		{"fork during a vfork", []func(*fastPathState){fork(8, 7, vfork), fork(9, 7, 0)},
			map[int][]uint32{7: {3}, 9: {4}}},
		{"one table, two memories", []func(*fastPathState){fork(8, 7, unix.CLONE_FILES), closeIn(7)},
			map[int][]uint32{8: {3}, 7: {3, 5}}},
		{"unshare", []func(*fastPathState){unshare(7), closeIn(7)}, map[int][]uint32{7: {3, 5}}},
		{"exec forgets the word", []func(*fastPathState){exec(7), closeIn(7)}, map[int][]uint32{}},
		// The parent execs (another thread of it) while its vfork child runs:
		// the child's exit must not write into the parent's new image.
		{"owner execs during a vfork", []func(*fastPathState){fork(8, 7, vfork), exec(7), closeIn(8), gone(8)},
			map[int][]uint32{7: {3}, 8: {5}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			em := New(Config{FastPath: &FastPath{Lib: fastpath.Config{Root: "/"}, Dir: t.TempDir()}})
			s := em.fastPath
			got := map[int][]uint32{}
			s.write = func(pid int, a uint64, b []byte) error {
				if a != addr || len(b) != 4 {
					t.Errorf("write of %d bytes at %#x in %d", len(b), a, pid)
				}
				got[pid] = append(got[pid], binary.LittleEndian.Uint32(b))
				return nil
			}
			s.procs[7] = &fastPathProc{guard: &fdGuard{pid: 7, addr: addr}} // after its handshake
			for _, op := range tc.ops {
				op(s)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("words written (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFDGuardHandlers: the filter stops exactly the calls that change a
// guarded descriptor (and every close_range), and each changes the word of
// the process that made its handshake.
func TestFDGuardHandlers(t *testing.T) {
	em := New(Config{FastPath: &FastPath{Lib: fastpath.Config{Root: "/"}, Dir: t.TempDir()}})
	want := map[string]*tracer.ArgMask{
		"close":       {Arg: 0, Min: fastpath.FDBase, Max: fastpath.FDEnd - 1},
		"dup3":        {Arg: 1, Min: fastpath.FDBase, Max: fastpath.FDEnd - 1},
		"close_range": nil,
		"unshare":     {Arg: 0, Mask: unix.CLONE_FILES},
	}
	if _, ok := nativeNr("dup2"); ok {
		want["dup2"] = &tracer.ArgMask{Arg: 1, Min: fastpath.FDBase, Max: fastpath.FDEnd - 1}
	}
	for name, m := range want {
		h, ok := em.Table[name]
		if !ok {
			t.Errorf("%s: no handler", name)
			continue
		}
		if diff := cmp.Diff(m, h.TraceIf); diff != "" {
			t.Errorf("%s: TraceIf (-want +got):\n%s", name, diff)
		}
	}
	if _, ok := New(Config{}).Table["close"]; ok {
		t.Errorf("close traced without the fast path")
	}

	// Through the tracer: a handshake naming a guard word, then the calls.
	g := newGuestFS(t)
	fp := &FastPath{Lib: fastpath.Config{Trampoline: 0x4_0000_0000, Root: g.root}, Dir: t.TempDir()}
	em = New(Config{FastPath: fp})
	steps := []tt.Step{
		tt.Call("droidroot_fastpath", tt.Out(65536), tt.Int(65536), tt.Out(4), tt.Int(0), tt.Int(0), tt.Out(4)),
		tt.Call("close", tt.Int(fastpath.FDBase+3)),                                           // 1
		tt.Call("close", tt.Int(5)),                                                           // not guarded
		tt.Call("dup3", tt.Int(1), tt.Int(fastpath.FDEnd-1), tt.Int(0)),                       // 2
		tt.Call("dup3", tt.Int(1), tt.Int(fastpath.FDEnd), tt.Int(0)),                         // not guarded
		tt.Call("close", tt.Int(fastpath.FDEnd-1)),                                            // 3
		tt.Call("close_range", tt.Int(fastpath.FDEnd), tt.Int(3000), tt.Int(0)),               // above the range
		tt.Call("close_range", tt.Int(fastpath.FDBase-1), tt.Int(fastpath.FDBase), tt.Int(0)), // 4
	}
	var got []uint32
	em.fastPath.write = func(_ int, _ uint64, b []byte) error {
		got = append(got, binary.LittleEndian.Uint32(b))
		return nil
	}
	r := tt.Run(t, tt.Options{Table: em.Table, State: em, Mapper: g.m, Cwd: "/"}, steps...)
	if r.Steps[0].Ret <= 0 {
		t.Fatalf("handshake: %d", r.Steps[0].Ret)
	}
	if diff := cmp.Diff([]uint32{2, 4, 6, 8}, got); diff != "" {
		t.Errorf("guard words written (-want +got):\n%s", diff)
	}
}

// TestChangeCounter: every rename and removal of a directory or symlink
// the tracer sees succeed adds one to the session's change counter, after
// the kernel made it; a failed one, or one of a regular file only, adds
// nothing.
func TestChangeCounter(t *testing.T) {
	g := newGuestFS(t)
	mustWrite(t, g.root+"/a", "a")
	mustWrite(t, g.root+"/b", "b")
	changes, err := fastpath.NewChanges(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fp := &FastPath{Lib: fastpath.Config{Trampoline: 0x4_0000_0000, Root: g.root, Changes: changes}, Dir: t.TempDir()}
	cfg := Config{FastPath: fp}
	steps := []tt.Step{
		tt.Call("renameat", cwdFD, tt.Str("/a"), cwdFD, tt.Str("/c")),       // a file
		tt.Call("renameat", cwdFD, tt.Str("/a"), cwdFD, tt.Str("/d")),       // ENOENT
		tt.Call("unlinkat", cwdFD, tt.Str("/b"), tt.Int(0)),                 // a file
		tt.Call("unlinkat", cwdFD, tt.Str("/b"), tt.Int(0)),                 // ENOENT
		tt.Call("mkdirat", cwdFD, tt.Str("/e"), tt.Int(0o755)),              // not counted
		tt.Call("renameat", cwdFD, tt.Str("/e"), cwdFD, tt.Str("/f")),       // 1
		tt.Call("symlinkat", tt.Str("c"), cwdFD, tt.Str("/l")),              // not counted
		tt.Call("renameat", cwdFD, tt.Str("/c"), cwdFD, tt.Str("/l")),       // 2: over a symlink
		tt.Call("unlinkat", cwdFD, tt.Str("/f"), tt.Int(unix.AT_REMOVEDIR)), // 3
		tt.Call("unlinkat", cwdFD, tt.Str("/f"), tt.Int(unix.AT_REMOVEDIR)), // ENOENT
	}
	r := g.run(t, cfg, "/", steps...)
	var errs []unix.Errno
	for _, s := range r.Steps {
		errs = append(errs, s.Errno())
	}
	if diff := cmp.Diff([]unix.Errno{0, unix.ENOENT, 0, unix.ENOENT, 0, 0, 0, 0, 0, unix.ENOENT}, errs); diff != "" {
		t.Fatalf("errnos (-want +got):\n%s", diff)
	}
	cc, err := mapChanges(changes)
	if err != nil {
		t.Fatal(err)
	}
	if n := cc.load(); n != 3 {
		t.Errorf("change counter: %d, want 3", n)
	}
}
