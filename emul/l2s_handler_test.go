package emul

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/tracer"
	tt "github.com/droidroot/droidroot/tracer/tracertest"
)

// statNlink returns st_nlink of a native struct stat.
func statNlink(b []byte) uint64 {
	if tracer.StatNlinkSize == 8 {
		return binary.LittleEndian.Uint64(b[tracer.StatNlinkOff:])
	}
	return uint64(binary.LittleEndian.Uint32(b[tracer.StatNlinkOff:]))
}

// sameNlink compares st_nlink of stat buffer argument i.
func sameNlink(i int) func(t *testing.T, g, w tt.StepResult) {
	return func(t *testing.T, g, w tt.StepResult) {
		if g.Ret == 0 && statNlink(g.Mem[i]) != statNlink(w.Mem[i]) {
			t.Errorf("st_nlink %d, kernel %d", statNlink(g.Mem[i]), statNlink(w.Mem[i]))
		}
	}
}

// TestLink2SymlinkKernel: with -l and every real link refused (FailLink,
// as on Android app storage), hard links are emulated: the results, link
// counts and contents the guest sees are those of real hard links.
func TestLink2SymlinkKernel(t *testing.T) {
	link := func(from, to string) tt.Step {
		return tt.Call("linkat", cwdFD, tt.Str(from), cwdFD, tt.Str(to), tt.Int(0))
	}
	read := func(k int) kcase {
		return kcase{name: "read", step: tt.Call("read", tt.Ret(k), tt.Out(8), tt.Int(8)), mem: []int{1}}
	}
	stat := func(p string) kcase {
		return kcase{name: "stat " + p, step: fstatat(cwdFD, p, 0), stat: []int{2}, check: sameNlink(2)}
	}
	cases := []kcase{
		{name: "create", step: openat(cwdFD, "/tmp/a", unix.O_CREAT|unix.O_WRONLY), how: cmpSign}, // 0
		{name: "write", step: tt.Call("write", tt.Ret(0), tt.Str("xyz"), tt.Int(3))},
		{name: "close", step: closeStep(0)},
		{name: "link", step: link("/tmp/a", "/tmp/b")},
		stat("/tmp/a"),
		stat("/tmp/b"),
		{name: "link again", step: link("/tmp/a", "/tmp/b")},
		{name: "link third", step: link("/tmp/b", "/tmp/c")},
		stat("/tmp/c"),
		{name: "open b", step: openat(cwdFD, "/tmp/b", unix.O_RDONLY), how: cmpSign}, // 9
		read(9),
		{name: "close b", step: closeStep(9)},
		{name: "unlink a", step: tt.Call("unlinkat", cwdFD, tt.Str("/tmp/a"), tt.Int(0))},
		{name: "a gone", step: access("/tmp/a")},
		stat("/tmp/b"),
		{name: "rename b", step: tt.Call("renameat2", cwdFD, tt.Str("/tmp/b"), cwdFD, tt.Str("/tmp/d"), tt.Int(0))},
		stat("/tmp/d"),
		{name: "open d", step: openat(cwdFD, "/tmp/d", unix.O_RDONLY), how: cmpSign}, // 17
		read(17),
		{name: "close d", step: closeStep(17)},
		{name: "rename over", step: tt.Call("renameat2", cwdFD, tt.Str("/tmp/d"), cwdFD, tt.Str("/tmp/c"), tt.Int(0))},
		stat("/tmp/c"),
		{name: "link missing", step: link("/missing", "/tmp/e")},
		{name: "link dir", step: link("/dir", "/tmp/e")},
		{name: "link into missing dir", step: link("/tmp/c", "/missing/e")},
		{name: "unlink c", step: tt.Call("unlinkat", cwdFD, tt.Str("/tmp/c"), tt.Int(0))},
		{name: "c gone", step: access("/tmp/c")},
		{name: "unlink missing", step: tt.Call("unlinkat", cwdFD, tt.Str("/tmp/c"), tt.Int(0))},
		// A symlink's other name resolves from its own directory, as a
		// kernel's hard link of a symlink does (tar's hard link of one).
		{name: "target", step: openat(cwdFD, "/tmp/t1", unix.O_CREAT|unix.O_WRONLY), how: cmpSign}, // 28
		{name: "close target", step: closeStep(28)},
		{name: "symlink", step: tt.Call("symlinkat", tt.Str("t1"), cwdFD, tt.Str("/tmp/sl"))},
		{name: "link symlink", step: link("/tmp/sl", "/tmp/sl2")},
		stat("/tmp/sl2"),
		{name: "readlink", step: tt.Call("readlinkat", cwdFD, tt.Str("/tmp/sl2"), tt.Out(64), tt.Int(64)), mem: []int{2}},
		{name: "link symlink elsewhere", step: link("/tmp/sl", "/dir/sl3")},
		{name: "stat elsewhere", step: fstatat(cwdFD, "/dir/sl3", 0)},
		{name: "lstat elsewhere", step: fstatat(cwdFD, "/dir/sl3", unix.AT_SYMLINK_NOFOLLOW), how: cmpSign},
		{name: "unlink symlink", step: tt.Call("unlinkat", cwdFD, tt.Str("/tmp/sl"), tt.Int(0))},
		stat("/tmp/sl2"),
		// A file's first link that fails for the new name (made as the
		// new name's symlink, the file moved back): the file is as it was.
		{name: "fresh", step: openat(cwdFD, "/tmp/f1", unix.O_CREAT|unix.O_WRONLY), how: cmpSign}, // 39
		{name: "write fresh", step: tt.Call("write", tt.Ret(39), tt.Str("abc"), tt.Int(3))},
		{name: "close fresh", step: closeStep(39)},
		{name: "link fresh onto a file", step: link("/tmp/f1", "/tmp/t1")},
		{name: "link fresh into a missing dir", step: link("/tmp/f1", "/tmp/nodir/x")},
		{name: "link fresh into a file", step: link("/tmp/f1", "/tmp/t1/x")},
		{name: "link fresh to itself", step: link("/tmp/f1", "/tmp/f1")},
		stat("/tmp/f1"),
		{name: "lstat fresh", step: fstatat(cwdFD, "/tmp/f1", unix.AT_SYMLINK_NOFOLLOW), stat: []int{2}, check: sameNlink(2)},
		{name: "open fresh", step: openat(cwdFD, "/tmp/f1", unix.O_RDONLY), how: cmpSign}, // 48
		read(48),
		{name: "close fresh again", step: closeStep(48)},
	}
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("faillink=%v", fail), func(t *testing.T) {
			againstKernel(t, Config{Link2Symlink: true, FailLink: fail, L2SDir: ""}, "/", cases)
		})
	}
}

// TestFailLink: without -l, FailLink makes every real link fail with
// EPERM, as Android's app storage does.
func TestFailLink(t *testing.T) {
	g := newGuestFS(t)
	r := g.run(t, Config{FailLink: true}, "/",
		tt.Call("linkat", cwdFD, tt.Str("/dir/file"), cwdFD, tt.Str("/tmp/h"), tt.Int(0)),
		access("/tmp/h"))
	if r.Steps[0].Errno() != unix.EPERM || r.Steps[1].Errno() != unix.ENOENT {
		t.Errorf("link with FailLink: %d, then access %d: want EPERM and ENOENT", r.Steps[0].Ret, r.Steps[1].Ret)
	}
}

// TestLstatLinkSize: -L makes lstat of a symlink report the length of
// what readlink returns to the guest (the kernel says 0 for /proc's links).
func TestLstatLinkSize(t *testing.T) {
	g := newGuestFS(t)
	statx := tt.Call("statx", cwdFD, tt.Str("/proc/self/cwd"), tt.Int(unix.AT_SYMLINK_NOFOLLOW), tt.Int(unix.STATX_BASIC_STATS), tt.Out(256))
	steps := []tt.Step{
		fstatat(cwdFD, "/proc/self/cwd", unix.AT_SYMLINK_NOFOLLOW),
		fstatat(cwdFD, "/link", unix.AT_SYMLINK_NOFOLLOW),
		fstatat(cwdFD, "/proc/self/cwd", 0),
		statx,
	}
	const statxSize = 40 // stx_size in struct statx
	for k, on := range []bool{false, true, false, true} {
		// Then with the lookup cache, where the tracer answers the pinned
		// stats itself and patches the size at once (emulStat).
		run := g.run
		if k >= 2 {
			run = g.runCached
		}
		r := run(t, Config{LstatLinkSize: on}, "/dir/sub", steps...)
		size := func(k int) uint64 { return statModeSize(r.Steps[k].Mem[2])[1] }
		want := uint64(len("/dir/sub"))
		if !on {
			want = 0
		}
		if size(0) != want {
			t.Errorf("-L %v: lstat /proc/self/cwd size %d, want %d", on, size(0), want)
		}
		if x := binary.LittleEndian.Uint64(r.Steps[3].Mem[4][statxSize:]); r.Steps[3].Ret != 0 || x != want {
			t.Errorf("-L %v: statx /proc/self/cwd: %d, size %d, want %d", on, r.Steps[3].Ret, x, want)
		}
		if size(1) != uint64(len("/dir")) {
			t.Errorf("-L %v: lstat /link size %d, want 4", on, size(1))
		}
		if m := statModeSize(r.Steps[2].Mem[2])[0]; m&unix.S_IFMT != unix.S_IFDIR {
			t.Errorf("-L %v: stat /proc/self/cwd mode %o, want a directory", on, m)
		}
	}
}

// TestL2SCount: a link's count is a symlink beside its data, made at once
// where there was none and replaced in one rename; one name is no count; a
// temporary left by an interrupted update is no obstacle, and nothing else
// is left beside the data.
func TestL2SCount(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, ".l2s.f.0001")
	mustWrite(t, data, "x")
	for _, tc := range []struct {
		name  string
		stale bool
		n     int
	}{{"first", false, 1}, {"again", false, 2}, {"stale temporary", true, 3}, {"down", false, 2},
		{"one name", false, 1}, {"two again", false, 2}} {
		if tc.stale {
			if err := os.Symlink("7", data+l2sCountSuffix+".tmp"); err != nil {
				t.Fatal(err)
			}
		}
		if err := setL2SCount(data, tc.n); err != nil {
			t.Fatalf("%s: setL2SCount(%d): %v", tc.name, tc.n, err)
		}
		if got := l2sCount(data); got != tc.n {
			t.Errorf("%s: count %d, want %d", tc.name, got, tc.n)
		}
		ents, _ := os.ReadDir(dir)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		want := []string{".l2s.f.0001", ".l2s.f.0001.n"}
		if tc.n == 1 {
			want = want[:1]
		}
		if !cmp.Equal(names, want) {
			t.Errorf("%s: directory %v, want %v", tc.name, names, want)
		}
	}
}
