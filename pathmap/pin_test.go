//go:build linux

package pathmap

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pinnedTree makes root/{d/f ("in d"), e/f ("in e")} and a host directory outside
// root with f ("host"), and a cached Mapper of root with host bound at /b.
func pinnedTree(t *testing.T) (root, outside string, m *Mapper) {
	t.Helper()
	dir := t.TempDir()
	root, outside = filepath.Join(dir, "root"), filepath.Join(dir, "outside")
	for p, s := range map[string]string{"root/d/f": "in d", "root/e/f": "in e", "outside/f": "host", "bound/g": "g"} {
		p = filepath.Join(dir, p)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(s), 0o644))
	}
	must(t, os.MkdirAll(filepath.Join(root, "b"), 0o755))
	return root, outside, newCached(t, root, []Binding{{Host: filepath.Join(dir, "bound"), Guest: "/b"}})
}

// readPinned looks guest path p up and reads the file through its pinned name.
func readPinned(t *testing.T, m *Mapper, p string) string {
	t.Helper()
	r, err := m.Lookup(Proc{}, "/", p, Follow)
	if err != nil {
		t.Fatalf("Lookup(%s): %v", p, err)
	}
	name, pin, e := m.PinnedName(r.Host)
	if pin != Pinned {
		t.Fatalf("PinnedName(%s) = %v (%v), want Pinned", r.Host, pin, e)
	}
	if want := "/proc/" + strconv.Itoa(os.Getpid()) + "/fd/"; !strings.HasPrefix(name, want) || !strings.HasSuffix(name, "/"+filepath.Base(r.Host)) {
		t.Fatalf("PinnedName(%s) = %q, want %s<N>/%s", r.Host, name, want, filepath.Base(r.Host))
	}
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatalf("reading %s (%s): %v", name, r.Host, err)
	}
	return string(b)
}

// TestPinnedName: a pinned name reaches the file below the directory the lookup found, in the
// rootfs and in a binding; once that directory is swapped with a symlink to a host directory
// (what a racing guest thread does between droidroot's lookup and the kernel's walk), a name
// pinned before still reaches the directory that was looked up (the kernel never follows the
// symlink), PinnedName of the old host path is Stale until the change is seen, and the next
// lookup follows the symlink in the guest's terms.
func TestPinnedName(t *testing.T) {
	root, outside, m := pinnedTree(t)
	if got := readPinned(t, m, "/d/f"); got != "in d" {
		t.Fatalf("/d/f through its pinned name: %q", got)
	}
	if got := readPinned(t, m, "/b/g"); got != "g" {
		t.Fatalf("/b/g through its pinned name: %q", got)
	}
	r, err := m.Lookup(Proc{}, "/", "/d/f", Follow)
	must(t, err)
	name, _, _ := m.PinnedName(r.Host)
	// Swap d with a symlink to the host directory.
	must(t, os.Symlink(outside, filepath.Join(root, "s")))
	must(t, unix.Renameat2(unix.AT_FDCWD, filepath.Join(root, "d"), unix.AT_FDCWD, filepath.Join(root, "s"), unix.RENAME_EXCHANGE))
	if b, err := os.ReadFile(name); err != nil || string(b) != "in d" {
		t.Errorf("the name pinned before the swap reads %q, %v; want the looked-up directory's \"in d\"", b, err)
	}
	if b, _ := os.ReadFile(r.Host); string(b) != "host" {
		t.Fatalf("the unpinned host path should reach the host through the swapped symlink (the race); got %q", b)
	}
	// The cache has not seen the change yet: d's node is still there, its directory is not.
	m.cache.mu.Lock()
	for _, n := range m.cache.dirs {
		if n.path == filepath.Join(root, "d") && n.pin > 0 {
			m.cache.retire(n) // as if its descriptor had never been opened
		}
	}
	m.cache.mu.Unlock()
	if _, pin, e := m.PinnedName(r.Host); pin != Stale || e != unix.ENOTDIR {
		t.Errorf("PinnedName of the swapped directory's file: %v, %v; want Stale, ENOTDIR", pin, e)
	}
	// A new lookup sees the symlink and follows it in the guest: the rootfs's own
	// (missing) copy of the outside directory.
	if r, err := m.Lookup(Proc{}, "/", "/d/f", Follow); err == nil {
		if name, pin, _ := m.PinnedName(r.Host); pin == Pinned {
			if b, err := os.ReadFile(name); err == nil {
				t.Errorf("after the swap, /d/f reads %q through %s (%s)", b, name, r.Host)
			}
		}
	}
}

// TestPinnedNameUnpinned: paths whose parent is outside every mount top, on procfs, or whose
// last component is "." or "..", and every path of a Mapper without a cache, are left as they
// TestPinnedFile: for a call that follows the last component, PinnedFile names the file
// itself, an O_PATH descriptor ("/proc/<pid>/fd/<M>") that the name's cache entry keeps for
// the next calls and that each caller gives back (ReleaseFile): reading through it reaches the
// file the lookup found. Once that file is swapped with a symlink to a host file (the
// swap-last race), the name pinned before, and PinnedFile again before the change is seen,
// still read the file, never the host's; the next lookup sees the change, which drops the
// entry and closes its pin, and PinnedFile is then Stale (a symlink there, which the lookup
// must follow in the guest's terms). A directory the cache pins already is named by its own
// descriptor (nothing to give back); a missing name and a file with a trailing slash get
// PinnedName's answer, a missing one with ENOENT.
func TestPinnedFile(t *testing.T) {
	root, outside, m := pinnedTree(t)
	prefix := "/proc/" + strconv.Itoa(os.Getpid()) + "/fd/"
	lookup := func(p string) string {
		r, err := m.Lookup(Proc{}, "/", p, Follow)
		if err != nil {
			t.Fatalf("Lookup(%s): %v", p, err)
		}
		return r.Host
	}
	host := lookup("/d/f")
	name, fd, pin, e := m.PinnedFile(host)
	if pin != Pinned || fd < 0 || name != prefix+strconv.Itoa(fd) {
		t.Fatalf("PinnedFile(%s) = %q, %d, %v (%v); want %s<M>, M", host, name, fd, pin, e, prefix)
	}
	m.ReleaseFile(fd)
	if st := m.CacheStats(); st.FilePins != 1 || st.FilePinUses != 0 {
		t.Errorf("after its release: %d pins, %d uses; want the entry's 1, 0", st.FilePins, st.FilePinUses)
	}
	must(t, os.Symlink(filepath.Join(outside, "f"), filepath.Join(root, "d", "s")))
	must(t, unix.Renameat2(unix.AT_FDCWD, host, unix.AT_FDCWD, filepath.Join(root, "d", "s"), unix.RENAME_EXCHANGE))
	if b, err := os.ReadFile(name); err != nil || string(b) != "in d" {
		t.Errorf("the file pinned before the swap reads %q, %v; want the looked-up file's \"in d\"", b, err)
	}
	if b, _ := os.ReadFile(host); string(b) != "host" {
		t.Fatalf("the host path should reach the host file through the swapped symlink (the race); got %q", b)
	}
	if again, fd2, pin, _ := m.PinnedFile(host); pin != Pinned || fd2 != fd || again != name {
		t.Errorf("PinnedFile before the change is seen = %q, %d, %v; want the kept %q", again, fd2, pin, name)
	} else {
		m.ReleaseFile(fd2)
	}
	if _, err := m.Lookup(Proc{}, "/", "/d/f", Follow); err == nil {
		t.Errorf("Lookup of /d/f through the swapped-in symlink to a host path: no error")
	}
	if st := m.CacheStats(); st.FilePins != 0 {
		t.Errorf("after the change: %d pins open, want 0", st.FilePins)
	}
	if name, fd, pin, _ := m.PinnedFile(host); pin != Stale || fd != -1 {
		t.Errorf("PinnedFile after the swap = %q, %d, %v; want Stale", name, fd, pin)
	}

	// A directory the cache holds: its own descriptor, nothing to give back.
	dir := lookup("/e")
	lookup("/e/f") // makes e's node
	if _, p, _ := m.PinnedName(filepath.Join(dir, "f")); p != Pinned {
		t.Fatalf("PinnedName(%s/f) = %v", dir, p)
	}
	if name, fd, pin, _ := m.PinnedFile(dir); pin != Pinned || fd != -1 || !strings.HasPrefix(name, prefix) || strings.Contains(strings.TrimPrefix(name, prefix), "/") {
		t.Errorf("PinnedFile(%s) = %q, %d, %v; want the node's own %s<N>, -1", dir, name, fd, pin, prefix)
	} else if st, err := os.Stat(name); err != nil || !st.IsDir() {
		t.Errorf("%s: %v, %v; want the directory", name, st, err)
	}
	// A missing name is given below a removed directory: a symlink to the host's file that
	// appears at its path before the kernel's walk is not followed, and nothing is created.
	missing := filepath.Join(root, "e", "later")
	name, fd, pin, e = m.PinnedFile(missing)
	if pin != Pinned || fd != -1 || e != unix.ENOENT {
		t.Fatalf("PinnedFile(%s) = %q, %d, %v, %v; want ENOENT", missing, name, fd, pin, e)
	}
	must(t, os.Symlink(filepath.Join(outside, "f"), missing))
	if b, err := os.ReadFile(name); err == nil || !os.IsNotExist(err) {
		t.Errorf("reading %s after a symlink appeared: %q, %v; want ENOENT", name, b, err)
	}
	if f, err := os.OpenFile(name, os.O_CREATE|os.O_WRONLY, 0o644); err == nil || !os.IsNotExist(err) {
		t.Errorf("creating %s: %v; want ENOENT", name, err)
		f.Close()
	}
	must(t, os.Remove(missing))
	// Missing, and a file named with a trailing slash: the kernel's answer.
	for _, c := range []struct {
		path  string
		errno unix.Errno
	}{{filepath.Join(root, "e", "missing"), unix.ENOENT}, {filepath.Join(root, "e", "f") + "/", 0}} {
		name, fd, pin, e := m.PinnedFile(c.path)
		want := strings.TrimPrefix(c.path, filepath.Join(root, "e"))
		if pin != Pinned || fd != -1 || e != c.errno || !strings.HasPrefix(name, prefix) || !strings.HasSuffix(name, want) {
			t.Errorf("PinnedFile(%s) = %q, %d, %v, %v; want %s<N>%s, -1, %v", c.path, name, fd, pin, e, prefix, want, c.errno)
		}
	}
}

// are.
func TestPinnedNameUnpinned(t *testing.T) {
	root, outside, m := pinnedTree(t)
	for _, host := range []string{
		filepath.Join(outside, "f"),
		filepath.Dir(root),
		"/proc/self/status",
		root + "/d/.",
		root + "/d/..",
		"relative/path",
	} {
		if name, pin, _ := m.PinnedName(host); pin != Unpinned {
			t.Errorf("PinnedName(%s) = %q, %v; want Unpinned", host, name, pin)
		}
	}
	plain, err := New(root, nil, nil)
	must(t, err)
	if _, pin, _ := plain.PinnedName(filepath.Join(root, "d", "f")); pin != Unpinned {
		t.Errorf("without a cache: %v, want Unpinned", pin)
	}
	// A trailing slash is kept.
	if name, pin, _ := m.PinnedName(filepath.Join(root, "d") + "/"); pin != Pinned || !strings.HasSuffix(name, "/d/") {
		t.Errorf("PinnedName(d/) = %q, %v", name, pin)
	}
}

// TestPinnedNameOutOfDate: a directory that is a symlink when the cache
// first watches it (swapped in since the lookup that found it) cannot be
// pinned: the lookup is out of date (Stale, looked up again), never
// Unpinned, whose host path the kernel would walk through whatever is
// swapped in next, with the host's root. Once it is a directory again it
// is pinned (before: its failed watch was remembered, and the directory
// left unpinned for good).
func TestPinnedNameOutOfDate(t *testing.T) {
	root, outside, m := pinnedTree(t)
	d, s := filepath.Join(root, "n"), filepath.Join(root, "s")
	must(t, os.MkdirAll(d, 0o755))
	must(t, os.WriteFile(filepath.Join(d, "f"), []byte("in n"), 0o644))
	must(t, os.Symlink(outside, s))
	host := filepath.Join(d, "f")
	must(t, unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, s, unix.RENAME_EXCHANGE))
	for _, call := range []struct {
		name string
		pin  func() Pin
	}{
		{"PinnedName", func() Pin { _, p, _ := m.PinnedName(host); return p }},
		{"PinnedFile", func() Pin {
			_, fd, p, _ := m.PinnedFile(host)
			if fd >= 0 {
				m.ReleaseFile(fd)
			}
			return p
		}},
	} {
		if p := call.pin(); p != Stale {
			t.Errorf("%s(%s) while n is a symlink to a host directory: %v, want Stale", call.name, host, p)
		}
	}
	must(t, unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, s, unix.RENAME_EXCHANGE))
	name, pin, e := m.PinnedName(host)
	if pin != Pinned {
		t.Fatalf("PinnedName(%s) with n a directory again: %v (%v), want Pinned", host, pin, e)
	}
	if b, err := os.ReadFile(name); err != nil || string(b) != "in n" {
		t.Errorf("read through %s: %q, %v; want \"in n\"", name, b, err)
	}
}

// TestPinnedNameRetired: a dropped node's descriptor stays open for pinGrace (a tracee
// resumed with its number may not have walked it yet) and is closed after; Close closes them
// all.
func TestPinnedNameRetired(t *testing.T) {
	root, _, m := pinnedTree(t)
	readPinned(t, m, "/d/f")
	c := m.cache
	c.mu.Lock()
	var fd int
	for _, n := range c.dirs {
		if n.path == filepath.Join(root, "d") {
			fd = n.pin
		}
	}
	c.mu.Unlock()
	if fd <= 0 {
		t.Fatal("no descriptor for d")
	}
	must(t, os.Rename(filepath.Join(root, "d"), filepath.Join(root, "d2")))
	c.mu.Lock()
	c.sync() // what the next lookup does first: d's node is dropped
	c.mu.Unlock()
	open := func() bool { _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); return err == nil }
	c.mu.Lock()
	n := len(c.grave)
	c.mu.Unlock()
	if n == 0 || !open() {
		t.Fatalf("after the rename: %d retired, descriptor open %v; want it retired and open", n, open())
	}
	c.mu.Lock()
	for i := range c.grave {
		c.grave[i].at = c.grave[i].at.Add(-pinGrace - time.Second)
	}
	c.reap(false) // what the next PinnedName does first
	closed, left := !open(), len(c.grave)
	c.mu.Unlock()
	if !closed || left != 0 {
		t.Errorf("after pinGrace: descriptor closed %v, %d retired left", closed, left)
	}
	readPinned(t, m, "/d2/f")
	m.Close()
	c.mu.Lock()
	n = len(c.grave)
	c.mu.Unlock()
	if n != 0 {
		t.Errorf("%d retired descriptors left after Close", n)
	}
}

// TestPinnedNameLimit: past the bound on held descriptors, all are retired and the next ones
// opened again: the count never passes it.
func TestPinnedNameLimit(t *testing.T) {
	root, _, m := pinnedTree(t)
	for i := 0; i < 20; i++ {
		must(t, os.MkdirAll(filepath.Join(root, "many", strconv.Itoa(i)), 0o755))
	}
	m.cache.mu.Lock()
	m.cache.maxPins = 5
	m.cache.mu.Unlock()
	for i := 0; i < 20; i++ {
		p := "/many/" + strconv.Itoa(i) + "/x"
		r, err := m.Lookup(Proc{}, "/", p, 0)
		must(t, err)
		if _, pin, _ := m.PinnedName(r.Host); pin != Pinned {
			t.Fatalf("%s: %v", p, pin)
		}
		m.cache.mu.Lock()
		n := m.cache.npins
		m.cache.mu.Unlock()
		if n > 5 {
			t.Fatalf("after %s: %d descriptors held, bound 5", p, n)
		}
	}
}

// TestPinnedFileLimit: the file pins entries keep are bounded as the directories' are
// (maxPins): past it they are let go, closed at once where no caller uses them, at their
// release where one does; every pin is gone once released and dropped.
func TestPinnedFileLimit(t *testing.T) {
	root, _, m := pinnedTree(t)
	for i := 0; i < 20; i++ {
		must(t, os.WriteFile(filepath.Join(root, "d", "f"+strconv.Itoa(i)), nil, 0o644))
	}
	m.cache.mu.Lock()
	m.cache.maxPins = 5
	m.cache.mu.Unlock()
	var used []int
	for i := 0; i < 20; i++ {
		p := "/d/f" + strconv.Itoa(i)
		r, err := m.Lookup(Proc{}, "/", p, Follow)
		must(t, err)
		_, fd, pin, _ := m.PinnedFile(r.Host)
		if pin != Pinned || fd < 0 {
			t.Fatalf("%s: %v, %d", p, pin, fd)
		}
		if i%4 == 0 {
			used = append(used, fd) // still in use
		} else {
			m.ReleaseFile(fd)
		}
		m.cache.mu.Lock()
		n := m.cache.nfile
		m.cache.mu.Unlock()
		if st := m.CacheStats(); n > 5 || st.FilePins > 5+len(used) {
			t.Fatalf("after %s: %d kept, %d open (%d in use); bound 5", p, n, st.FilePins, len(used))
		}
	}
	for _, fd := range used {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
			t.Errorf("pin %d in use was closed: %v", fd, err)
		}
		m.ReleaseFile(fd)
	}
	must(t, os.RemoveAll(filepath.Join(root, "d")))
	m.Lookup(Proc{}, "/", "/d", Follow) // sees the removal
	if st := m.CacheStats(); st.FilePins != 0 || st.FilePinUses != 0 {
		t.Errorf("after the release and the removal: %d pins open, %d in use", st.FilePins, st.FilePinUses)
	}
}

// TestDirToken: a directory's token stays good until a name on its path changes (the directory
// renamed, or an ancestor), and is never good without the cache.
func TestDirToken(t *testing.T) {
	root, _, m := pinnedTree(t)
	dir := filepath.Join(root, "d")
	tok := m.DirToken(dir)
	if tok == nil {
		t.Fatal("no token for a watched directory")
	}
	if !m.DirUnchanged(dir, tok, nil) {
		t.Fatal("the token is not good right after it was taken")
	}
	must(t, os.WriteFile(filepath.Join(dir, "new"), nil, 0o644)) // a change inside: not on the path
	if !m.DirUnchanged(dir, tok, &Batch{}) {
		t.Error("a file created inside the directory made its token stale")
	}
	must(t, os.Rename(dir, filepath.Join(root, "d2")))
	must(t, os.Mkdir(dir, 0o755))
	if m.DirUnchanged(dir, tok, nil) {
		t.Error("the token is still good after the directory was renamed and replaced")
	}
	tok = m.DirToken(dir)
	must(t, os.Rename(root, root+"-moved"))
	if m.DirUnchanged(dir, tok, nil) {
		t.Error("the token is still good after an ancestor was renamed")
	}
	plain, err := New(root+"-moved", nil, nil)
	must(t, err)
	if tok := plain.DirToken(root + "-moved/d"); tok != nil || plain.DirUnchanged(root+"-moved/d", tok, nil) {
		t.Error("a token without the cache")
	}
}

// TestPinnedNameFileBinding: the host file of a file binding is left as it is (its
// directory is not the guest's, and watching it can be costly), while a file in a bound
// directory and in the rootfs is pinned.
func TestPinnedNameFileBinding(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	must(t, os.MkdirAll(filepath.Join(root, "d"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "d", "f"), []byte("in d"), 0o644))
	libDir := filepath.Join(dir, "tmp")
	lib := filepath.Join(libDir, "lib.so")
	must(t, os.MkdirAll(libDir, 0o755))
	must(t, os.WriteFile(lib, []byte("lib"), 0o644))
	m := newCached(t, root, []Binding{{Host: lib, Guest: "/x/lib.so"}})
	r, err := m.Lookup(Proc{}, "/", "/x/lib.so", Follow)
	must(t, err)
	if name, pin, e := m.PinnedName(r.Host); pin != Unpinned || name != "" || e != 0 {
		t.Errorf("PinnedName(%s) = %q, %v, %v; want Unpinned", r.Host, name, pin, e)
	}
	m.cache.mu.Lock()
	for _, n := range m.cache.dirs {
		if n.path == libDir {
			t.Errorf("the file binding's directory %s has a cache node", libDir)
		}
	}
	m.cache.mu.Unlock()
	if got := readPinned(t, m, "/d/f"); got != "in d" {
		t.Fatalf("/d/f through its pinned name: %q", got)
	}
}

// TestHostView: the guest's view is the host's own only with the host's "/" as root and
// bindings that show a directory at its own path or cover a path missing on the host; a
// rootfs, a binding elsewhere over an existing host path, and a symbolic one hide host files.
func TestHostView(t *testing.T) {
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "src"), 0o755))
	must(t, os.MkdirAll(filepath.Join(dir, "dst"), 0o755))
	missing := filepath.Join(dir, "missing")
	cases := []struct {
		name  string
		root  string
		binds []Binding
		want  bool
	}{
		{"root", "/", nil, true},
		{"rootfs", dir, nil, false},
		{"same path", "/", []Binding{{Host: "/proc", Guest: "/proc"}, {Host: dir, Guest: dir}}, true},
		{"over a missing path", "/", []Binding{{Host: filepath.Join(dir, "src"), Guest: missing}}, true},
		{"over a host directory", "/", []Binding{{Host: filepath.Join(dir, "src"), Guest: filepath.Join(dir, "dst")}}, false},
		{"symbolic", "/", []Binding{{Host: "/proc/self/fd", Guest: missing}}, false},
		{"root replaced", "/", []Binding{{Host: dir, Guest: "/"}}, false},
	}
	for _, c := range cases {
		m, err := New(c.root, c.binds, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := m.HostView(); got != c.want {
			t.Errorf("%s: HostView() = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestCleanAbsString: PinnedName's one-pass check agrees with cleanAbs.
func TestCleanAbsString(t *testing.T) {
	paths := []string{"", "/", "//", "a", "a/b", "/a", "/a/", "/a//b", "/a/./b", "/a/../b", "/.", "/..", "/a/.",
		"/a/..", "/...", "/a/...", "/.a", "/a/.b/..c", "/a/b.", "/a/b..", "/./", "/a/b/c/d", "/a/b/.."}
	for _, p := range paths {
		if got, want := cleanAbsString(p), cleanAbs([]byte(p)); got != want {
			t.Errorf("cleanAbsString(%q) = %v, cleanAbs %v", p, got, want)
		}
	}
	// Every path of up to 6 bytes over {'/', '.', 'a'}.
	var gen func(string)
	gen = func(p string) {
		if got, want := cleanAbsString(p), cleanAbs([]byte(p)); got != want {
			t.Errorf("cleanAbsString(%q) = %v, cleanAbs %v", p, got, want)
		}
		if len(p) < 6 {
			for _, c := range "/.a" {
				gen(p + string(c))
			}
		}
	}
	gen("")
}

// TestPinnedFd: the names PinnedName and PinnedFile return split into the
// descriptor and the name below it, which name the same file; any other
// path is no pinned name.
func TestPinnedFd(t *testing.T) {
	root, _, m := pinnedTree(t)
	d := filepath.Join(root, "n")
	must(t, os.MkdirAll(d, 0o755))
	must(t, os.WriteFile(filepath.Join(d, "f"), []byte("in n"), 0o644))
	host := filepath.Join(d, "f")
	var want unix.Stat_t
	must(t, unix.Stat(host, &want))
	name, pin, _ := m.PinnedName(host)
	file, fd, pin2, _ := m.PinnedFile(host)
	if pin != Pinned || pin2 != Pinned {
		t.Fatalf("PinnedName %v, PinnedFile %v: want both Pinned", pin, pin2)
	}
	if fd >= 0 {
		defer m.ReleaseFile(fd)
	}
	for _, n := range []string{name, file} {
		dfd, rest, ok := m.PinnedFd(n)
		if !ok {
			t.Fatalf("PinnedFd(%s): not a pinned name", n)
		}
		flags := 0
		if rest == "" {
			flags = unix.AT_EMPTY_PATH
		}
		var st unix.Stat_t
		if err := unix.Fstatat(dfd, rest, &st, flags|unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Ino != want.Ino || st.Dev != want.Dev {
			t.Errorf("PinnedFd(%s) = %d, %q: stat %v, ino %d, want %d", n, dfd, rest, err, st.Ino, want.Ino)
		}
	}
	pid := strconv.Itoa(os.Getpid())
	for _, bad := range []string{"", host, "/proc/self/fd/3", "/proc/1/fd/3", "/proc/" + pid + "/fd/", "/proc/" + pid + "/fd/x",
		"/proc/" + pid + "/fd/03", "/proc/" + pid + "/fd/-1", "/proc/" + pid + "/fd/3/a/b", "/proc/" + pid + "/fd/3/",
		"/proc/" + pid + "/fd/3/..", "/proc/" + pid + "/fdinfo/3", "proc/" + pid + "/fd/3"} {
		if fd, rest, ok := m.PinnedFd(bad); ok {
			t.Errorf("PinnedFd(%q) = %d, %q: want no pinned name", bad, fd, rest)
		}
	}
}

// TestPinnedNameBelowNewFile: a name below a file that appeared where the lookup checked
// nothing (it checks no name before the last) is Stale with the kernel's ENOTDIR, and ENOENT
// below nothing, the first time as every later time: the parent's node is made then, and its
// watch fails (found by e2e's TestOracleRandom: mkdir, unlink and lstat answered ENOENT once).
func TestPinnedNameBelowNewFile(t *testing.T) {
	root, _, m := pinnedTree(t)
	for k, c := range []struct {
		make  func(p string)
		errno unix.Errno
	}{
		{func(p string) { must(t, os.WriteFile(p, []byte("x"), 0o644)) }, unix.ENOTDIR},
		{func(p string) { must(t, os.Symlink("f", p)) }, unix.ENOTDIR}, // a symlink to d/f: a file
		{func(string) {}, unix.ENOENT},
	} {
		for i := 0; i < 2; i++ {
			name := "new" + strconv.Itoa(k) + "x" + strconv.Itoa(i)
			r, err := m.Lookup(Proc{}, "/", "/d/"+name, Follow)
			if err != nil {
				t.Fatal(err)
			}
			if _, fd, _, _ := m.PinnedFile(r.Host); fd >= 0 {
				m.ReleaseFile(fd)
			}
			c.make(filepath.Join(root, "d", name))
			for try := 0; try < 2; try++ {
				r, err := m.Lookup(Proc{}, "/", "/d/"+name+"/c", 0)
				if err != nil {
					if err != c.errno {
						t.Errorf("Lookup(/d/%s/c) try %d: %v, want %v or a host path", name, try, err, c.errno)
					}
					continue // the lookup knew (the cache's answer for a missing name)
				}
				if _, pin, e := m.PinnedName(r.Host); pin != Stale || e != c.errno {
					t.Errorf("PinnedName(%s) try %d = %v, %v; want Stale, %v", r.Host, try, pin, e, c.errno)
				}
			}
		}
	}
}
