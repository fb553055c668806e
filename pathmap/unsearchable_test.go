package pathmap

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// unsearchableEnv makes the test binary run TestWalkUnsearchableAncestor's
// part as a child (as nobody, where the kernel refuses a search).
const unsearchableEnv = "PATHMAP_UNSEARCHABLE_DIR"

// TestWalkUnsearchableAncestor: a relative walk from the kernel's cwd
// (Proc.KernelCwd) below a directory the caller may not search looks its
// names up through /proc/<tid>/cwd, as the kernel walks them from the cwd,
// where their host paths get EACCES, and gives a result it had to rewrite
// (a symlink followed) relative to the cwd; an absolute path there still
// gets EACCES.
// It runs as nobody (root searches anything): a child of the test binary.
func TestWalkUnsearchableAncestor(t *testing.T) {
	if dir := os.Getenv(unsearchableEnv); dir != "" {
		unsearchableChild(t, dir)
		return
	}
	runAsNobody(t, "TestWalkUnsearchableAncestor", func(dir string) {
		must(t, os.MkdirAll(filepath.Join(dir, "a", "b", "c"), 0o755))
		must(t, os.WriteFile(filepath.Join(dir, "a", "b", "c", "f"), []byte("f"), 0o644))
		must(t, os.Symlink("f", filepath.Join(dir, "a", "b", "c", "l")))
		must(t, os.Mkdir(filepath.Join(dir, "a", "b", "c", "r"), 0o755))
		must(t, os.Mkdir(filepath.Join(dir, "a", "b", "c", "s"), 0o755))
	})
}

// TestWalkSearchOverride: Proc.Search, as nobody (root searches anything;
// see searchOverrideChild).
func TestWalkSearchOverride(t *testing.T) {
	if dir := os.Getenv(unsearchableEnv); dir != "" {
		searchOverrideChild(t, dir)
		return
	}
	runAsNobody(t, "TestWalkSearchOverride", func(string) {})
}

// runAsNobody runs test name of the test binary as nobody, with the
// directory made by mk (then given to nobody) in unsearchableEnv.
func runAsNobody(t *testing.T, name string, mk func(dir string)) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run the walk as nobody")
	}
	top := t.TempDir()
	if err := os.Chmod(top, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(top, "root")
	must(t, os.Mkdir(dir, 0o755))
	mk(dir)
	must(t, filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 65534, 65534)
	}))
	must(t, os.Chmod(filepath.Dir(top), 0o755))
	// The test binary where nobody may run it.
	self, err := os.ReadFile(os.Args[0])
	must(t, err)
	bin := filepath.Join(top, "pathmap.test")
	must(t, os.WriteFile(bin, self, 0o755))
	cmd := exec.Command(bin, "-test.run=^"+name+"$", "-test.v")
	cmd.Env = append(os.Environ(), unsearchableEnv+"="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child as nobody: %v\n%s", err, out)
	}
}

// unsearchableChild is the child's part: cwd a/b/c, then a/b unsearchable.
func unsearchableChild(t *testing.T, dir string) {
	m, err := New(dir, nil, nil, WithCache())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cwd := filepath.Join(dir, "a", "b", "c")
	must(t, os.Chdir(cwd))
	must(t, os.Chmod(filepath.Join(cwd, "r"), 0o444))      // read only
	must(t, os.Chmod(filepath.Join(cwd, "s"), 0o111))      // search only
	must(t, os.Chmod(filepath.Join(dir, "a", "b"), 0o311)) // search only
	must(t, os.Chmod(filepath.Join(dir, "a"), 0o200))      // no search
	defer os.Chmod(filepath.Join(dir, "a"), 0o755)
	pr := Proc{Pid: os.Getpid(), KernelCwd: true}
	for _, tc := range []struct {
		path  string
		flags Flags
		host  string
		err   error
	}{
		{"f", 0, cwd + "/f", nil},
		{"new", 0, cwd + "/new", nil},
		{"l", Follow, cwd + "/f", nil},
		{"l", 0, cwd + "/l", nil},
		{"/a/b/c/f", 0, "", syscall.EACCES},
	} {
		r, err := m.Lookup(pr, "/a/b/c", tc.path, tc.flags)
		if err != tc.err || (err == nil && r.Host != tc.host) {
			t.Errorf("Lookup(%q, %v) = %q, %v; want %q, %v", tc.path, tc.flags, r.Host, err, tc.host, tc.err)
		}
		// What the kernel is given where the walk left the guest's path:
		// the result relative to the cwd, which it reaches from there.
		if err == nil && !r.Literal && r.Rel != filepath.Base(tc.host) {
			t.Errorf("Lookup(%q, %v).Rel = %q, want %q", tc.path, tc.flags, r.Rel, filepath.Base(tc.host))
		}
	}
	// "." and ".." are looked up in their directory, which the kernel
	// searches first: a directory the caller may read but not search
	// refuses them, though its own path needs no search of it. The cwd
	// itself is searchable: its unsearchable ancestors do not count.
	for _, tc := range []struct {
		path string
		host string
		err  error
	}{
		{"r/.", "", syscall.EACCES},
		{"r/./.", "", syscall.EACCES},
		{"r/..", "", syscall.EACCES},
		{"r/../f", "", syscall.EACCES},
		{"r", cwd + "/r", nil},
		{"r/", cwd + "/r/", nil},
		{"s/.", cwd + "/s", nil},
		{"s/..", cwd, nil},
		{"./f", cwd + "/f", nil},
		{"..", filepath.Dir(cwd), nil},
	} {
		r, err := m.Lookup(pr, "/a/b/c", tc.path, Follow)
		if err != tc.err || (err == nil && r.Host != tc.host) {
			t.Errorf("Lookup(%q) = %q, %v; want %q, %v", tc.path, r.Host, err, tc.host, tc.err)
		}
	}
}

// searchChmod is a SearchOverride for the test: it records the directories
// it is asked about, and gives each its owner's search bit when grant.
type searchChmod struct {
	grant bool
	asked []string
}

func (s *searchChmod) Search(dir string) bool {
	s.asked = append(s.asked, dir)
	return s.grant && os.Chmod(dir, 0o500) == nil
}

// searchOverrideChild is the child's part of TestWalkSearchOverride: with
// Proc.Search, a lookup that the host refused in a directory the caller
// may not search (0400) asks Search about that directory and looks again
// where Search made it searchable, and so does a last component left to
// the kernel; without it, or where Search refuses, the lookup is EACCES
// (and the kernel's lookup of the last component is left to refuse).
func searchOverrideChild(t *testing.T, dir string) {
	m, err := New(dir, nil, nil, WithCache())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for i, tc := range []struct {
		path  string
		flags Flags
		grant bool
		host  string // relative to the unsearchable directory u; "" for an error
		// kernel: the walk leaves the last component to the kernel,
		// which refuses it without Search: the same host path.
		kernel bool
	}{
		{"l", Follow, true, "f", false},   // readlink refused, then the target's readlink
		{"f", 0, true, "f", true},         // the kernel's lookup
		{"f", Follow, true, "f", false},   // readlink refused
		{"s/f", 0, true, "s/f", false},    // readlink of s refused
		{".", Follow, true, ".", false},   // the search of "."
		{"new", Entry, true, "new", true}, // the kernel's lookup of a name it makes
		{"l", Follow, false, "", false},   // refused
		{"f", 0, false, "f", true},        // left to the kernel to refuse
		{"s/f", 0, false, "", false},
		{".", Follow, false, "", false},
	} {
		for _, with := range []bool{true, false} {
			u := filepath.Join(dir, fmt.Sprintf("u%d%v", i, with))
			must(t, os.MkdirAll(filepath.Join(u, "s"), 0o755))
			must(t, os.WriteFile(filepath.Join(u, "f"), nil, 0o644))
			must(t, os.WriteFile(filepath.Join(u, "s", "f"), nil, 0o644))
			must(t, os.Symlink("f", filepath.Join(u, "l")))
			must(t, os.Chmod(u, 0o400))
			pr := Proc{Pid: os.Getpid()}
			s := &searchChmod{grant: tc.grant}
			if with {
				pr.Search = s
			}
			r, err := m.Lookup(pr, "/", "/"+filepath.Base(u)+"/"+tc.path, tc.flags)
			var wantErr error
			wantHost := filepath.Join(u, tc.host)
			if tc.host == "" || !with && !tc.kernel {
				wantErr, wantHost = syscall.EACCES, ""
			}
			if err != wantErr || r.Host != wantHost {
				t.Errorf("%s with Search %v (grant %v): Lookup = %q, %v; want %q, %v", tc.path, with, tc.grant, r.Host, err, wantHost, wantErr)
			}
			if asked := slices.Contains(s.asked, u); asked != with {
				t.Errorf("%s with Search %v: asked about %q, want %s asked: %v", tc.path, with, s.asked, u, with)
			}
			must(t, os.Chmod(u, 0o700))
		}
	}
}
