package emul

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/pathmap"
	"github.com/droidroot/droidroot/tracer"
	tt "github.com/droidroot/droidroot/tracer/tracertest"
)

// TestPinnedPaths: with the lookup cache (as droidroot runs), a translated path argument is
// handed to the kernel as its last component below the parent directory the lookup found,
// which the tracer holds open ("/proc/<tracer>/fd/N/last"), absolute or relative (a relative
// path the kernel would resolve by itself is no longer left in guest memory; one name in the
// cwd is a copy of the guest's, which the kernel resolves in the cwd it holds); where the
// kernel follows the last component, as the file itself, held open until the thread's next
// call ("/proc/<tracer>/fd/M", pathmap's PinnedFile), unless it is missing; "." stays the
// guest's, as do magic links left to the kernel. The answers are the kernel's. (The child here is not
// started by the loader: its paths go below the stack pointer; TestScratchSlots and the e2e
// TestRaces cover the scratch area.)
func TestPinnedPaths(t *testing.T) {
	pinned := "/proc/" + strconv.Itoa(os.Getpid()) + "/fd/"
	cases := []struct {
		kcase
		// want: the suffix of the pinned name, "" for the guest's own path, "=" and the
		// guest's name for a copy of it, "#" for the file itself, "-" for anything not pinned.
		want string
	}{
		{kcase{name: "absolute", step: access("/etc/hostname")}, "#"},
		{kcase{name: "relative", step: access("dir/file")}, "#"},
		{kcase{name: "one name", step: access("etc")}, "#"},
		{kcase{name: "one name, not followed", step: fstatat(cwdFD, "etc", unix.AT_SYMLINK_NOFOLLOW), stat: []int{2}}, "=etc"},
		{kcase{name: "through a symlink", step: access("/link/file")}, "#"},
		{kcase{name: "bind", step: access("/mnt/inside")}, "#"},
		{kcase{name: "missing", step: access("/dir/nofile")}, "/nofile"},
		{kcase{name: "open", step: openat(cwdFD, "/dir/file", unix.O_RDONLY)}, "#"},
		{kcase{name: "open O_NOFOLLOW", step: openat(cwdFD, "/dir/file", unix.O_RDONLY|unix.O_NOFOLLOW)}, "/file"},
		{kcase{name: "lstat", step: fstatat(cwdFD, "/dir/file", unix.AT_SYMLINK_NOFOLLOW), stat: []int{2}}, "/file"},
		{kcase{name: "stat of a directory", step: fstatat(cwdFD, "/dir/sub", 0), stat: []int{2}}, "#"},
		{kcase{name: "trailing slash", step: fstatat(cwdFD, "/dir/sub/", 0), stat: []int{2}}, "#"},
		{kcase{name: "trailing slash on a file", step: fstatat(cwdFD, "/dir/file/", 0), stat: []int{2}}, ""},
		{kcase{name: "dot", step: fstatat(cwdFD, ".", 0), stat: []int{2}}, ""},
		{kcase{name: "proc", step: access("/proc/self/status")}, "-"},
	}
	var steps []tt.Step
	for _, c := range cases {
		steps = append(steps, c.step)
	}
	gt, gk := newGuestFS(t), newGuestFS(t)
	m, err := pathmap.New(gt.root, gt.binds, nil, pathmap.WithCache())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	addrs := map[int]uint64{}
	em := New(Config{})
	var held []int
	got := tt.Run(t, tt.Options{Table: em.Table, State: em, Mapper: m, Cwd: "/", Observe: func(_ *tracer.Call, s *tt.Stop) {
		if !s.Exit && s.Regs.Arg(1) != s.Entry.Arg(1) {
			addrs[s.Step] = s.Regs.Arg(1)
		}
	}}, steps...)
	want := gk.oracle(t, "/", steps...)
	for k, c := range cases {
		g, w := got.Steps[k], want[k]
		if g.Ret != w.Ret {
			t.Errorf("%s: droidroot %d (%v), kernel %d (%v)", c.name, g.Ret, g.Errno(), w.Ret, w.Errno())
		}
		for _, i := range c.stat {
			if gm, wm := statModeSize(g.Mem[i]), statModeSize(w.Mem[i]); gm != wm {
				t.Errorf("%s: stat mode/size: droidroot %v, kernel %v", c.name, gm, wm)
			}
		}
		var path string
		for _, s := range got.StopsOf(k) {
			if p, ok := s.Paths[1]; ok && !s.Exit {
				path = p
			}
		}
		switch {
		case c.want == "" && path != "":
			t.Errorf("%s: the guest's path was replaced by %q", c.name, path)
		case c.want == "-" && strings.HasPrefix(path, pinned):
			t.Errorf("%s: pinned as %q", c.name, path)
		case strings.HasPrefix(c.want, "="):
			if path != c.want[1:] {
				t.Errorf("%s: the kernel was given %q, want a copy of the guest's %q", c.name, path, c.want[1:])
			}
		case c.want == "#":
			n, err := strconv.Atoi(strings.TrimPrefix(path, pinned))
			if !strings.HasPrefix(path, pinned) || err != nil {
				t.Errorf("%s: the kernel was given %q, want the file itself, %s<M>", c.name, path, pinned)
			} else {
				held = append(held, n)
			}
		case c.want != "" && c.want != "-" && (!strings.HasPrefix(path, pinned) || !strings.HasSuffix(path, c.want)):
			t.Errorf("%s: the kernel was given %q, want %s<N>...%s", c.name, path, pinned, c.want)
		}
	}
	// The file pins are closed by the thread's next call: none is open still, unless its
	// number now holds one of the mapper's directories (or a pin the last call held).
	for _, fd := range held {
		if l, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); err == nil {
			if st, err := os.Stat("/proc/self/fd/" + strconv.Itoa(fd)); err == nil && !st.IsDir() {
				t.Errorf("pin %d (%s) still open after the guest's next call", fd, l)
			}
		}
	}
	if len(addrs) == 0 {
		t.Error("no path was rewritten")
	}
}

// TestPinnedPathsHostView: with the host's "/" as rootfs and no binding that hides a host file
// (pathmap's HostView), nothing is pinned: the guest's absolute and relative paths are left as
// they are, as before pinning (a walk in the host's view reaches nothing the guest could not
// name), and the answers are the kernel's.
func TestPinnedPathsHostView(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/file", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := pathmap.New("/", nil, nil, pathmap.WithCache())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if !m.HostView() {
		t.Fatal("rootfs / without bindings: HostView() = false")
	}
	steps := []tt.Step{access(dir + "/file"), access(dir + "/missing"), openat(cwdFD, dir+"/file", unix.O_RDONLY), access("file")}
	em := New(Config{})
	got := tt.Run(t, tt.Options{Table: em.Table, State: em, Mapper: m, Cwd: dir}, steps...)
	for k := range steps {
		for _, s := range got.StopsOf(k) {
			if p, ok := s.Paths[1]; ok && !s.Exit {
				t.Errorf("step %d: the guest's path was replaced by %q", k, p)
			}
		}
	}
	if r := got.Steps[0].Ret; r != 0 {
		t.Errorf("access of a file: %d", r)
	}
	if r := got.Steps[1].Ret; r != -int64(unix.ENOENT) {
		t.Errorf("access of a missing file: %d, want ENOENT", r)
	}
}
