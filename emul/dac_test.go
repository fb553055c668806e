package emul

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/tracer"
	tt "github.com/droidroot/droidroot/tracer/tracertest"
)

func TestKernelPath(t *testing.T) {
	for _, tc := range []struct {
		dirfd int32
		s     string
		want  string
	}{
		{unix.AT_FDCWD, "/abs/x", "/abs/x"},
		{5, "/abs/x", "/abs/x"},
		{unix.AT_FDCWD, "rel/x", "/proc/42/cwd/rel/x"},
		{7, "x", "/proc/42/fd/7/x"},
	} {
		if got := kernelPath(42, tc.dirfd, tc.s); got != tc.want {
			t.Errorf("kernelPath(42, %d, %q) = %q, want %q", tc.dirfd, tc.s, got, tc.want)
		}
	}
}

func TestParentPath(t *testing.T) {
	for p, want := range map[string]string{
		"/a/b/c":  "/a/b",
		"/a/b/":   "/a",
		"/a//":    "/",
		"/a":      "/",
		"/":       "",
		"/proc/9": "/proc",
	} {
		if got := parentPath(p); got != want {
			t.Errorf("parentPath(%q) = %q, want %q", p, got, want)
		}
	}
}

func TestOpenNeed(t *testing.T) {
	for _, tc := range []struct {
		flags   uint64
		bits    uint32
		creates bool
		ok      bool
	}{
		{unix.O_RDONLY, 0o400, false, true},
		{unix.O_WRONLY, 0o200, false, true},
		{unix.O_RDWR, 0o600, false, true},
		{unix.O_RDONLY | unix.O_TRUNC, 0o600, false, true},
		{unix.O_WRONLY | unix.O_CREAT | unix.O_APPEND, 0o200, true, true},
		{unix.O_PATH, 0, false, false},
		{3, 0, false, false}, // no access mode the kernel takes for a check
	} {
		bits, creates, ok := openNeed(tc.flags)
		if bits != tc.bits || creates != tc.creates || ok != tc.ok {
			t.Errorf("openNeed(%#o) = %#o, %v, %v; want %#o, %v, %v", tc.flags, bits, creates, ok, tc.bits, tc.creates, tc.ok)
		}
	}
}

func modeOf(t *testing.T, p string) uint32 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Mode & 0o7777
}

// TestDacRaise: the owner bits a call needs are raised once per file
// however many calls in flight need them, and put back when the last of
// those calls is done; a file that has them, a symlink, a file of another
// owner and a missing one are left alone.
func TestDacRaise(t *testing.T) {
	dir := t.TempDir()
	ro := filepath.Join(dir, "ro")
	mustWrite(t, ro, "x")
	sub := filepath.Join(dir, "sub")
	mustMkdir(t, sub)
	must(t, os.Chmod(ro, 0o444))
	must(t, os.Chmod(sub, 0o555))
	must(t, os.Symlink("ro", filepath.Join(dir, "link")))
	d := newDacOverride(uint32(os.Geteuid()))

	// Two threads' calls write ro; one more makes a name in sub.
	d.pending[1] = &dacPending{raised: []*dacRaised{d.raiseFor(1, unix.AT_FDCWD, ro, dacWrite, 0)}}
	d.pending[2] = &dacPending{raised: []*dacRaised{d.raiseFor(2, unix.AT_FDCWD, ro, dacOpen, unix.O_RDWR)}}
	d.pending[3] = &dacPending{raised: []*dacRaised{d.raiseFor(3, unix.AT_FDCWD, sub+"/new", dacOpen, unix.O_WRONLY|unix.O_CREAT)}}
	for tid := 1; tid <= 3; tid++ {
		if d.pending[tid].raised[0] == nil {
			t.Fatalf("thread %d's call raised nothing", tid)
		}
	}
	if m := modeOf(t, ro); m != 0o644 {
		t.Errorf("ro while written and read: mode %#o, want 0644", m)
	}
	if m := modeOf(t, sub); m != 0o755 {
		t.Errorf("sub while a name is made in it: mode %#o, want 0755", m)
	}
	if d.pending[1].raised[0] != d.pending[2].raised[0] || d.pending[2].raised[0].refs != 2 {
		t.Errorf("ro raised twice, or not counted twice")
	}
	d.done(1)
	if m := modeOf(t, ro); m != 0o644 {
		t.Errorf("ro after one of its calls: mode %#o, want 0644 still", m)
	}
	d.done(2)
	d.done(3)
	d.done(3) // nothing pending: no-op
	if m, s := modeOf(t, ro), modeOf(t, sub); m != 0o444 || s != 0o555 {
		t.Errorf("after the calls: ro %#o, sub %#o; want 0444, 0555", m, s)
	}
	if len(d.raised) != 0 || len(d.pending) != 0 {
		t.Errorf("state left: %d raised, %d pending", len(d.raised), len(d.pending))
	}

	// Nothing to raise.
	mustWrite(t, filepath.Join(dir, "rw"), "x")
	for _, tc := range []struct {
		name  string
		path  string
		need  dacNeed
		flags uint64
	}{
		{"has the bits", filepath.Join(dir, "rw"), dacOpen, unix.O_RDWR},
		{"read of a 0444 file", ro, dacOpen, unix.O_RDONLY},
		{"O_PATH", ro, dacOpen, unix.O_PATH | unix.O_WRONLY},
		{"O_EXCL of an existing name", ro, dacOpen, unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL},
		{"missing without O_CREAT", filepath.Join(dir, "none"), dacOpen, unix.O_WRONLY},
		{"a name in a writable directory", filepath.Join(dir, "x"), dacParent, 0},
		{"symlink not followed", filepath.Join(dir, "link"), dacOpen, unix.O_WRONLY | unix.O_NOFOLLOW},
		{"root's parent", "/", dacParent, 0},
	} {
		if r := d.raiseFor(1, unix.AT_FDCWD, tc.path, tc.need, tc.flags); r != nil {
			t.Errorf("%s: raised %+v", tc.name, *r)
			d.pending[1] = &dacPending{raised: []*dacRaised{r}}
			d.done(1)
		}
	}
	if os.Geteuid() == 0 {
		other := filepath.Join(dir, "other")
		mustWrite(t, other, "x")
		must(t, os.Chmod(other, 0o444))
		must(t, os.Chown(other, 4242, 4242))
		if r := d.raiseFor(1, unix.AT_FDCWD, other, dacWrite, 0); r != nil || modeOf(t, other) != 0o444 {
			t.Errorf("a file of another owner was raised")
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestDacHandlers: a fake root's calls through the handler table. A call
// that needs bits the modes lack stops at its exit, the bits raised while
// the kernel runs it (seen at its entry stop) and put back at its exit;
// one that needs none has no exit stop. (droidroot adds the override only
// when it runs as an ordinary user; as root the kernel grants these calls
// anyway, so the raise is seen from the handler's side.)
func TestDacHandlers(t *testing.T) {
	g := newGuestFS(t)
	ro := filepath.Join(g.root, "tmp/ro")
	mustWrite(t, ro, "x")
	must(t, os.Chmod(ro, 0o444))
	sealed := filepath.Join(g.root, "tmp/sealed")
	mustMkdir(t, sealed)
	mustWrite(t, filepath.Join(sealed, "f"), "x")
	must(t, os.Chmod(sealed, 0o555))
	cfg := Config{Identity: &Identity{}}
	em := New(cfg)
	b := &tableBuilder{t: em.Table, e: em, decls: declarations(), layer: "test"}
	addDacOverride(b, uint32(os.Geteuid()))
	seen := map[int]uint32{} // step -> mode of its file at the entry stop
	watch := map[int]string{1: ro, 2: ro, 3: sealed, 4: sealed, 7: ro}
	how := make([]byte, 24) // struct open_how: flags, mode, resolve
	binary.LittleEndian.PutUint64(how, unix.O_WRONLY|unix.O_CLOEXEC)
	observe := func(c *tracer.Call, s *tt.Stop) {
		if p, ok := watch[s.Step]; ok && !s.Exit {
			var st unix.Stat_t
			if unix.Stat(p, &st) == nil {
				seen[s.Step] = st.Mode & 0o7777
			}
		}
	}
	r := tt.Run(t, tt.Options{Table: em.Table, State: em, Mapper: g.m, Creds: InitialCreds(cfg), Observe: observe},
		openat(cwdFD, "/tmp/ro", unix.O_RDONLY),                                      // 0: needs nothing
		openat(cwdFD, "/tmp/ro", unix.O_WRONLY|unix.O_APPEND),                        // 1
		tt.Call("truncate", tt.Str("/tmp/ro"), tt.Int(0)),                            // 2 (x86_64)
		tt.Call("unlinkat", cwdFD, tt.Str("/tmp/sealed/f"), tt.Int(0)),               // 3
		tt.Call("mkdirat", cwdFD, tt.Str("/tmp/sealed/d"), tt.Int(0o755)),            // 4
		tt.Call("unlinkat", cwdFD, tt.Str("/tmp/sealed/none"), tt.Int(0)),            // 5: ENOENT, raised all the same
		tt.Call("renameat", cwdFD, tt.Str("/tmp/sealed/d"), cwdFD, tt.Str("/tmp/d")), // 6
		tt.Call("openat2", cwdFD, tt.Str("/tmp/ro"), tt.In(how), tt.Int(24)),         // 7
	)
	hasTruncate := tt.Has("truncate")
	for k, want := range []int64{0, 0, 0, 0, 0, -int64(unix.ENOENT), 0, 0} {
		if k == 2 && !hasTruncate {
			continue
		}
		if k == 0 || k == 1 || k == 7 {
			if (r.Steps[k].Ret < 0) != (want < 0) {
				t.Errorf("step %d: %d", k, r.Steps[k].Ret)
			}
			continue
		}
		if r.Steps[k].Ret != want {
			t.Errorf("step %d: %d, want %d", k, r.Steps[k].Ret, want)
		}
	}
	exits := func(k int) bool {
		for _, s := range r.StopsOf(k) {
			if s.Exit {
				return true
			}
		}
		return false
	}
	if exits(0) {
		t.Error("a read of a 0444 file stopped at its exit: nothing to raise")
	}
	for _, k := range []int{1, 3, 4, 5, 6, 7} {
		if !exits(k) {
			t.Errorf("step %d raised a mode but had no exit stop", k)
		}
	}
	want := map[int]uint32{1: 0o644, 3: 0o755, 4: 0o755, 7: 0o644}
	if hasTruncate {
		want[2] = 0o644
	}
	for k, m := range want {
		if seen[k] != m {
			t.Errorf("step %d: mode %#o while the kernel ran it, want %#o", k, seen[k], m)
		}
	}
	if m, s := modeOf(t, ro), modeOf(t, sealed); m != 0o444 || s != 0o555 {
		t.Errorf("after the calls: %#o and %#o, want 0444 and 0555", m, s)
	}
	if _, err := os.Stat(filepath.Join(g.root, "tmp/d")); err != nil {
		t.Errorf("the rename out of the sealed directory: %v", err)
	}
}

// TestDacAround: under -l with the links refused, the tracer makes an
// emulated link's names itself (link, and the rename and unlink of such a
// name); a fake root's override raises the directories for that work and
// puts them back before the call returns.
func TestDacAround(t *testing.T) {
	g := newGuestFS(t)
	sealed := filepath.Join(g.root, "tmp/sealed")
	mustMkdir(t, sealed)
	mustWrite(t, filepath.Join(g.root, "tmp/a"), "x")
	must(t, os.Chmod(sealed, 0o555))
	cfg := Config{Identity: &Identity{}, Link2Symlink: true, FailLink: true}
	em := New(cfg)
	b := &tableBuilder{t: em.Table, e: em, decls: declarations(), layer: "test"}
	addDacOverride(b, uint32(os.Geteuid()))
	var modes []uint32 // the modes set, in order
	chmod := em.dac.ops.chmod
	em.dac.ops.chmod = func(fd int, mode uint32) error {
		modes = append(modes, mode)
		return chmod(fd, mode)
	}
	at := func(name, old, new string) tt.Step {
		return tt.Call(name, cwdFD, tt.Str(old), cwdFD, tt.Str(new), tt.Int(0))
	}
	r := tt.Run(t, tt.Options{Table: em.Table, State: em, Mapper: g.m, Creds: InitialCreds(cfg)},
		at("linkat", "/tmp/a", "/tmp/sealed/b"),
		at("renameat2", "/tmp/sealed/b", "/tmp/sealed/c"),
		tt.Call("unlinkat", cwdFD, tt.Str("/tmp/sealed/c"), tt.Int(0)),
	)
	for k, s := range r.Steps {
		if s.Ret != 0 {
			t.Errorf("step %d: %d", k, s.Ret)
		}
	}
	// Each step raised the sealed directory once and put it back.
	want := []uint32{0o755, 0o555, 0o755, 0o555, 0o755, 0o555}
	if len(modes) != len(want) {
		t.Fatalf("modes set %#o, want %#o", modes, want)
	}
	for i := range want {
		if modes[i] != want[i] {
			t.Fatalf("modes set %#o, want %#o", modes, want)
		}
	}
	if m := modeOf(t, sealed); m != 0o555 {
		t.Errorf("the directory after the calls: %#o, want 0555", m)
	}
	if len(em.dac.raised) != 0 {
		t.Errorf("%d raises left", len(em.dac.raised))
	}

	// A thread that dies in a call that raised a mode puts it back when
	// it is reaped (its exit stop never comes).
	ev := em.Table["mkdirat"].Events
	if ev == nil {
		t.Fatal("no Events hook on mkdirat")
	}
	em.dac.pending[99] = &dacPending{raised: []*dacRaised{em.dac.raiseFor(99, unix.AT_FDCWD, sealed+"/x", dacParent, 0)}}
	if m := modeOf(t, sealed); m != 0o755 {
		t.Fatalf("raised: %#o", m)
	}
	ev(&tracer.Event{Kind: tracer.EventExec, Tid: 99, Pid: 99})
	if m := modeOf(t, sealed); m != 0o755 {
		t.Errorf("an exec put the mode back: %#o", m)
	}
	ev(&tracer.Event{Kind: tracer.EventThreadGone, Tid: 99, Pid: 99})
	if m := modeOf(t, sealed); m != 0o555 || len(em.dac.pending) != 0 {
		t.Errorf("after the thread is gone: %#o, %d pending", m, len(em.dac.pending))
	}
}

// TestDacSearch: the search override of a fake root's lookups (pathmap's
// Proc.Search, in the calls wrapSearch wraps). A directory the lookups ask
// about gets its owner's search bit while the kernel runs the call (seen
// at the entry stop) and has its mode back at the call's exit (seen at
// the next call); a call the handler answers itself puts it back at once;
// a thread whose credentials lack CAP_DAC_OVERRIDE gets no override.
func TestDacSearch(t *testing.T) {
	g := newGuestFS(t)
	u := filepath.Join(g.root, "tmp/u")
	mustMkdir(t, u)
	must(t, os.Chmod(u, 0o400))
	defer os.Chmod(u, 0o700)
	for _, tc := range []struct {
		name     string
		identity Identity
		answer   bool
		during   uint32 // u's mode while the kernel runs the call
		asked    bool
	}{
		{"root", Identity{}, false, 0o500, true},
		{"answered", Identity{}, true, 0o400, true},
		{"user", Identity{UID: 1000, GID: 1000}, false, 0o400, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Identity: &tc.identity}
			em := New(cfg)
			b := &tableBuilder{t: em.Table, e: em, decls: declarations(), layer: "test"}
			addDacOverride(b, uint32(os.Geteuid()))
			var asked []bool
			em.Table["getppid"] = em.dac.wrapSearch(tracer.Handler{Enter: func(c *tracer.Call) {
				s := pathProc(c).Search
				asked = append(asked, s != nil)
				if s != nil && len(asked) == 1 && !s.Search(u) {
					t.Errorf("Search(%s) refused", u)
				}
				if tc.answer {
					c.Return(0)
				}
			}})
			var modes []uint32
			observe := func(c *tracer.Call, s *tt.Stop) {
				if !s.Exit {
					modes = append(modes, modeOf(t, u))
				}
			}
			tt.Run(t, tt.Options{Table: em.Table, State: em, Mapper: g.m, Creds: InitialCreds(cfg), Observe: observe},
				tt.Call("getppid"), tt.Call("getppid"))
			if want := []uint32{tc.during, 0o400}; !slices.Equal(modes, want) {
				t.Errorf("u's modes at the two entries %#o, want %#o", modes, want)
			}
			if len(asked) != 2 || asked[0] != tc.asked {
				t.Errorf("the override given to the two calls: %v, want %v first", asked, tc.asked)
			}
			if len(em.dac.raised) != 0 || len(em.dac.pending) != 0 {
				t.Errorf("%d raises, %d calls pending left", len(em.dac.raised), len(em.dac.pending))
			}
		})
	}
}

// fchdirSearchEnv marks TestFchdirSearch's child, run as nobody.
const fchdirSearchEnv = "DROIDROOT_TEST_FCHDIR_SEARCH"

// TestFchdirSearch: a fake root's fchdir into a directory the real user owns
// but may not search (0400) succeeds, as root's does: the directory has its
// owner's search bit while the kernel runs the call and its mode back at
// the next call, and getcwd names it. Run as nobody: whether the real user
// may search is the tracer's own check, which root always passes.
func TestFchdirSearch(t *testing.T) {
	if os.Getenv(fchdirSearchEnv) != "" {
		fchdirSearchChild(t)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run the tracer as nobody")
	}
	top := t.TempDir()
	must(t, os.Chmod(top, 0o755))
	must(t, os.Chmod(filepath.Dir(top), 0o755))
	self, err := os.ReadFile(os.Args[0])
	must(t, err)
	bin := filepath.Join(top, "emul.test")
	must(t, os.WriteFile(bin, self, 0o755))
	cmd := exec.Command(bin, "-test.run=^TestFchdirSearch$", "-test.v")
	cmd.Env = append(os.Environ(), fchdirSearchEnv+"=1", "TMPDIR="+top)
	must(t, os.Chmod(top, 0o1777))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestFchdirSearch") {
		t.Fatalf("child as nobody: %v\n%s", err, out)
	}
}

func fchdirSearchChild(t *testing.T) {
	g := newGuestFS(t)
	u := filepath.Join(g.root, "tmp/u")
	mustMkdir(t, u)
	mustWrite(t, filepath.Join(u, "f"), "x")
	must(t, os.Chmod(u, 0o400))
	defer os.Chmod(u, 0o700)
	cfg := Config{Identity: &Identity{}}
	em := New(cfg)
	var modes []uint32
	observe := func(c *tracer.Call, s *tt.Stop) {
		if !s.Exit {
			modes = append(modes, modeOf(t, u))
		}
	}
	r := tt.Run(t, tt.Options{Table: em.Table, State: em, Mapper: g.m, Creds: InitialCreds(cfg), Observe: observe},
		openat(cwdFD, "/tmp/u", unix.O_RDONLY|unix.O_DIRECTORY), // 0
		tt.Call("fchdir", tt.Ret(0)),                            // 1
		tt.Call("getcwd", tt.Out(512), tt.Int(512)),             // 2
		tt.Call("fchdir", tt.Int(999)),                          // 3: EBADF, nothing raised
	)
	if r.Steps[0].Ret < 0 {
		t.Fatalf("open: %d", r.Steps[0].Ret)
	}
	if r.Steps[1].Ret != 0 {
		t.Errorf("fchdir: %d, want 0", r.Steps[1].Ret)
	}
	if got := string(r.Steps[2].Mem[0]); !strings.HasPrefix(got, "/tmp/u\x00") {
		t.Errorf("getcwd: %q, want /tmp/u", got)
	}
	if r.Steps[3].Ret != -int64(unix.EBADF) {
		t.Errorf("fchdir of a bad descriptor: %d, want EBADF", r.Steps[3].Ret)
	}
	// The open is the kernel's (a directory read, not searched); the
	// fchdir runs with the search bit; it is back by the getcwd.
	if want := []uint32{0o400, 0o500, 0o400, 0o400}; !slices.Equal(modes, want) {
		t.Errorf("u's modes at the entries %#o, want %#o", modes, want)
	}
	if len(em.dac.raised) != 0 || len(em.dac.pending) != 0 {
		t.Errorf("%d raises, %d calls pending left", len(em.dac.raised), len(em.dac.pending))
	}
}
