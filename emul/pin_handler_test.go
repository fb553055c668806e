package emul

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
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
// guest's, as do magic links left to the kernel. The answers are the kernel's, also with -l,
// whose stat patch makes the tracer answer the pinned stats itself (emulStat), with the host
// file's own stat. (The child here is not
// started by the loader: its paths go below the stack pointer; TestScratchSlots and the e2e
// TestRaces cover the scratch area.)
func TestPinnedPaths(t *testing.T) {
	pinned := "/proc/" + strconv.Itoa(os.Getpid()) + "/fd/"
	cases := []struct {
		kcase
		// want: the suffix of the pinned name, "" for the guest's own path, "=" and the
		// guest's name for a copy of it, "#" for the file itself, "-" for anything not pinned.
		want string
		// host, for a stat where a layer patches the result (-l here), answered by the
		// tracer on the pinned file (emulStat): the guest path whose host file's own stat
		// the answer is, byte for byte ("-": answered, the result checked otherwise).
		host string
	}{
		{kcase{name: "absolute", step: access("/etc/hostname")}, "#", ""},
		{kcase{name: "relative", step: access("dir/file")}, "#", ""},
		{kcase{name: "one name", step: access("etc")}, "#", ""},
		{kcase{name: "one name, not followed", step: fstatat(cwdFD, "etc", unix.AT_SYMLINK_NOFOLLOW), stat: []int{2}}, "=etc", ""},
		{kcase{name: "through a symlink", step: access("/link/file")}, "#", ""},
		{kcase{name: "bind", step: access("/mnt/inside")}, "#", ""},
		{kcase{name: "missing", step: access("/dir/nofile")}, "/nofile", ""},
		{kcase{name: "open", step: openat(cwdFD, "/dir/file", unix.O_RDONLY)}, "#", ""},
		{kcase{name: "open O_NOFOLLOW", step: openat(cwdFD, "/dir/file", unix.O_RDONLY|unix.O_NOFOLLOW)}, "/file", ""},
		{kcase{name: "lstat", step: fstatat(cwdFD, "/dir/file", unix.AT_SYMLINK_NOFOLLOW), stat: []int{2}}, "/file", "/dir/file"},
		{kcase{name: "lstat of a symlink", step: fstatat(cwdFD, "/link", unix.AT_SYMLINK_NOFOLLOW), stat: []int{2}}, "/link", "/link"},
		{kcase{name: "stat", step: fstatat(cwdFD, "/link/file", 0), stat: []int{2}}, "#", "/dir/file"},
		{kcase{name: "stat of a directory", step: fstatat(cwdFD, "/dir/sub", 0), stat: []int{2}}, "#", "/dir/sub"},
		{kcase{name: "trailing slash", step: fstatat(cwdFD, "/dir/sub/", 0), stat: []int{2}}, "#", "/dir/sub"},
		{kcase{name: "stat, bad flags", step: fstatat(cwdFD, "/dir/file", 0x40000000)}, "#", ""},
		{kcase{name: "stat, no buffer", step: tt.Call(fstatatName(), cwdFD, tt.Str("/dir/file"), tt.Int(0), tt.Int(0))}, "#", "-"},
		{kcase{name: "statx", step: tt.Call("statx", cwdFD, tt.Str("/dir/file"), tt.Int(0), tt.Int(unix.STATX_BASIC_STATS), tt.Out(256))}, "#", "-"},
		{kcase{name: "statx, both sync flags", step: tt.Call("statx", cwdFD, tt.Str("/dir/file"), tt.Int(unix.AT_STATX_FORCE_SYNC|unix.AT_STATX_DONT_SYNC), tt.Int(unix.STATX_BASIC_STATS), tt.Out(256))}, "#", ""},
		{kcase{name: "statx, reserved mask", step: tt.Call("statx", cwdFD, tt.Str("/dir/file"), tt.Int(0), tt.Int(0x80000000), tt.Out(256))}, "#", ""},
		{kcase{name: "statx, forced sync", step: tt.Call("statx", cwdFD, tt.Str("/dir/file"), tt.Int(unix.AT_STATX_FORCE_SYNC), tt.Int(unix.STATX_ALL), tt.Out(256))}, "#", "-"},
		{kcase{name: "stat of a missing file", step: fstatat(cwdFD, "/dir/nofile", 0)}, "/nofile", ""},
		{kcase{name: "trailing slash on a file", step: fstatat(cwdFD, "/dir/file/", 0), stat: []int{2}}, "", ""},
		{kcase{name: "dot", step: fstatat(cwdFD, ".", 0), stat: []int{2}}, "", ""},
		{kcase{name: "proc", step: access("/proc/self/status")}, "-", ""},
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
	want := gk.oracle(t, "/", steps...)
	// With -l the stat calls are answered by the tracer: the answers are still the kernel's.
	em := New(Config{Link2Symlink: true})
	got := tt.Run(t, tt.Options{Table: em.Table, State: em, Mapper: m, Cwd: "/"}, steps...)
	for k, c := range cases {
		g, w := got.Steps[k], want[k]
		if g.Ret != w.Ret {
			t.Errorf("-l: %s: droidroot %d (%v), kernel %d (%v)", c.name, g.Ret, g.Errno(), w.Ret, w.Errno())
		}
		answered := false
		for _, s := range got.StopsOf(k) {
			answered = answered || s.Answered
		}
		if c.host != "" && !answered {
			t.Errorf("-l: %s: not answered by the tracer", c.name)
		}
		if c.host != "" && c.host != "-" && g.Ret == 0 {
			hb, errno := statBytes(unix.AT_FDCWD, gt.root+c.host, unix.AT_SYMLINK_NOFOLLOW)
			if errno != 0 || !bytes.Equal(g.Mem[2][:len(hb)], hb) {
				t.Errorf("-l: %s: the tracer's answer is not the host file's stat (%v)", c.name, errno)
			}
		}
		if strings.HasPrefix(c.name, "statx") && g.Ret == 0 {
			mode, size := binary.LittleEndian.Uint16(g.Mem[4][statxModeOff:]), binary.LittleEndian.Uint64(g.Mem[4][statxSizeOff:])
			if wm, ws := binary.LittleEndian.Uint16(w.Mem[4][statxModeOff:]), binary.LittleEndian.Uint64(w.Mem[4][statxSizeOff:]); mode != wm || size != ws {
				t.Errorf("-l: %s: mode %o size %d, kernel %o %d", c.name, mode, size, wm, ws)
			}
		}
	}

	addrs := map[int]uint64{}
	em = New(Config{})
	var held []int
	got = tt.Run(t, tt.Options{Table: em.Table, State: em, Mapper: m, Cwd: "/", Observe: func(_ *tracer.Call, s *tt.Stop) {
		if !s.Exit && s.Regs.Arg(1) != s.Entry.Arg(1) {
			addrs[s.Step] = s.Regs.Arg(1)
		}
	}}, steps...)
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
	// The file pins are given back by the thread's next call (and the last by its end): the
	// mapper keeps those its cache entries hold, and none is in use.
	if st := m.CacheStats(); st.FilePinUses != 0 || st.FilePins == 0 || len(held) == 0 {
		t.Errorf("file pins after the run: %d open, %d in use; %d handed out", st.FilePins, st.FilePinUses, len(held))
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

// TestExclCreate: an open with O_CREAT (without O_EXCL) of a name the lookup found missing
// reaches the kernel with O_EXCL added, so that a symlink created there before the kernel's
// walk is never followed (with the host's root: a host file created); the guest's flags are
// given back at the exit stop. When the name appears meanwhile (the kernel's EEXIST), the call
// runs again, translated again: a file that appeared is opened, a symlink that appeared is
// followed the guest's way (the file it names created in the rootfs, none on the host). With
// O_EXCL of its own, or a name that exists, nothing changes.
func TestExclCreate(t *testing.T) {
	g := newGuestFS(t)
	m, err := pathmap.New(g.root, g.binds, nil, pathmap.WithCache())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	host := t.TempDir()                       // outside the rootfs: a symlink's absolute target names it on the host
	mustMkdir(t, filepath.Join(g.root, host)) // and in the guest, where it is created
	const creat = unix.O_CREAT | unix.O_WRONLY
	steps := []tt.Step{
		openat(cwdFD, "/dir/new", creat),                  // 0: missing, created
		openat(cwdFD, "/dir/appears", creat),              // 1: a file appears before the kernel's walk
		openat(cwdFD, "/dir/lnk", creat),                  // 2: a symlink to host/x appears
		openat(cwdFD, "/dir/file", creat),                 // 3: exists: not changed
		openat(cwdFD, "/dir/excl", creat|unix.O_EXCL),     // 4: the guest's own O_EXCL
		openat(cwdFD, "/dir/new", creat|unix.O_EXCL),      // 5: EEXIST, the guest's
		tt.Call("fcntl", tt.Ret(1), tt.Int(unix.F_GETFL)), // 6: no O_EXCL kept
	}
	entries := map[int]int{}
	flagsAt := map[int]uint64{}
	em := New(Config{})
	got := tt.Run(t, tt.Options{Table: em.Table, State: em, Mapper: m, Cwd: "/", Observe: func(c *tracer.Call, s *tt.Stop) {
		if s.Name != "openat" || s.Exit {
			return
		}
		entries[s.Step]++
		if entries[s.Step] == 1 {
			flagsAt[s.Step] = s.Regs.Arg(2)
		}
		switch {
		case s.Step == 1 && entries[1] == 1:
			mustWrite(t, filepath.Join(g.root, "dir/appears"), "there")
		case s.Step == 2 && entries[2] == 1:
			if err := os.Symlink(filepath.Join(host, "x"), filepath.Join(g.root, "dir/lnk")); err != nil {
				t.Error(err)
			}
		}
	}}, steps...)
	for k, want := range map[int]bool{0: true, 1: true, 2: true, 3: false, 4: true} {
		if excl := flagsAt[k]&unix.O_EXCL != 0; excl != want {
			t.Errorf("step %d: the kernel's flags %#o, O_EXCL %v, want %v", k, flagsAt[k], excl, want)
		}
	}
	for k := 0; k <= 4; k++ {
		if got.Steps[k].Ret < 0 {
			t.Errorf("step %d: %v", k, got.Steps[k].Errno())
		}
	}
	if entries[1] != 2 || entries[2] != 2 {
		t.Errorf("entries of the raced opens: %d, %d; want 2 each (run again after EEXIST)", entries[1], entries[2])
	}
	if _, err := os.Lstat(filepath.Join(host, "x")); err == nil {
		t.Errorf("the symlink's target was created on the host")
	}
	if _, err := os.Stat(filepath.Join(g.root, host, "x")); err != nil {
		t.Errorf("the symlink's target in the rootfs: %v", err)
	}
	if r := got.Steps[5].Ret; r != -int64(unix.EEXIST) {
		t.Errorf("O_CREAT|O_EXCL of an existing name: %d, want EEXIST", r)
	}
	if fl := got.Steps[6].Ret; fl < 0 || fl&unix.O_EXCL != 0 {
		t.Errorf("F_GETFL of the raced open: %#o", fl)
	}
}

// TestCreatMissing: creat (x86_64) of a missing name runs again as openat, which adds O_EXCL
// (TestExclCreate); of an existing name it is translated as it is.
func TestCreatMissing(t *testing.T) {
	if !tt.Has("creat") {
		t.Skip("no creat on this ABI")
	}
	g := newGuestFS(t)
	m, err := pathmap.New(g.root, g.binds, nil, pathmap.WithCache())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	steps := []tt.Step{
		tt.Call("creat", tt.Str("/dir/made"), tt.Int(0o600)),
		tt.Call("creat", tt.Str("/dir/file"), tt.Int(0o600)),
	}
	names := map[int][]string{}
	em := New(Config{})
	got := tt.Run(t, tt.Options{Table: em.Table, State: em, Mapper: m, Cwd: "/", Observe: func(c *tracer.Call, s *tt.Stop) {
		if !s.Exit {
			names[s.Step] = append(names[s.Step], s.Name)
		}
	}}, steps...)
	for k := range steps {
		if got.Steps[k].Ret < 0 {
			t.Errorf("step %d: %v", k, got.Steps[k].Errno())
		}
	}
	if strings.Join(names[0], ",") != "creat,openat" || strings.Join(names[1], ",") != "creat" {
		t.Errorf("stops: %v, want creat then openat for the missing name, creat alone for the existing", names)
	}
	if st, err := os.Stat(filepath.Join(g.root, "dir/made")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("dir/made: %v, %v", st, err)
	}
}
