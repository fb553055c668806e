package pathmap

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestAnchorCut: the cut is at a slash at or after need, the last one up
// to need rounded up to anchorStep, else the first one past it.
func TestAnchorCut(t *testing.T) {
	p := []byte("/" + strings.Repeat("a", 999) + "/" + strings.Repeat("b", 999) + "/" + strings.Repeat("c", 999) + "/d")
	for _, tc := range []struct {
		name string
		need int
		want int
	}{
		{"the last slash before the step", 10, 1000},
		{"exactly at a slash", 1000, 1000},
		{"the next step", 1001, 2000},
		{"past every slash but the last", 3000, 3000},
		{"beyond the last slash", 3001, 0},
		{"need below 1", -5, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := anchorCut(p, tc.need); got != tc.want {
				t.Errorf("anchorCut(need %d) = %d, want %d", tc.need, got, tc.want)
			}
		})
	}
}

// deepTree makes dir/<n components of 200 bytes>/file, the file's path
// longer than PathMax, through relative mkdirs, and returns that path.
func deepTree(t *testing.T, dir string, n int) string {
	t.Helper()
	name := strings.Repeat("D", 200)
	cwd, _ := os.Getwd()
	defer os.Chdir(cwd)
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := unix.Mkdir(name, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Chdir(name); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile("file", []byte("deep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir + strings.Repeat("/"+name, n) + "/file"
}

// TestAnchorName: a host path longer than PathMax (and longer than two)
// gets a name shorter than PathMax that reaches it; a renamed anchor is not
// followed; a path with no slash to cut at fails.
func TestAnchorName(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a := newAnchors()
	for _, n := range []int{25, 45} {
		long := deepTree(t, dir, n)
		if len(long) < PathMax {
			t.Fatalf("%d bytes: not long enough", len(long))
		}
		name, ok := a.appendName(nil, []byte(long))
		if !ok || len(name) >= PathMax {
			t.Fatalf("appendName(%d bytes) = %d bytes, %v", len(long), len(name), ok)
		}
		b, err := os.ReadFile(string(name))
		if err != nil || string(b) != "deep\n" {
			t.Fatalf("%d components: read %q: %q, %v", n, name, b, err)
		}
		if err := os.Rename(dir+"/"+strings.Repeat("D", 200), dir+"/moved"); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(long[:PathMax-100]); err == nil {
			t.Fatal("the test renamed nothing")
		}
		if name, ok := a.appendName(nil, []byte(long)); ok {
			if _, err := os.ReadFile(string(name)); err == nil {
				t.Errorf("%d components: the renamed tree is still reached through %q", n, name)
			}
		}
		os.RemoveAll(dir + "/moved")
	}
	if _, ok := a.appendName(nil, []byte("/"+strings.Repeat("x", PathMax))); ok {
		t.Error("a path with no slash to cut at got a name")
	}
}

// TestLookupBeyondPathMaxAbsolute: an absolute guest path shorter than
// PathMax in a bind whose host source is long resolves, and its Rel (an
// anchor's name) reaches the file, with the cache or without.
func TestLookupBeyondPathMaxAbsolute(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, strings.Repeat("S", 250), strings.Repeat("S", 250))
	root := filepath.Join(dir, "root")
	for _, d := range []string{src, root + "/mnt"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	long := deepTree(t, src, 18)
	guest := "/mnt" + strings.TrimPrefix(long, src)
	if len(guest) >= PathMax || len(long) < PathMax {
		t.Fatalf("guest %d bytes, host %d", len(guest), len(long))
	}
	for _, opts := range [][]Option{nil, {WithCache()}} {
		m, err := New(root, []Binding{{Host: src, Guest: "/mnt"}}, nil, opts...)
		if err != nil {
			t.Fatal(err)
		}
		for _, flags := range []Flags{0, Follow} {
			r, err := m.Lookup(Proc{Pid: os.Getpid()}, "/", guest, flags)
			if err != nil || r.Host != long || !strings.HasPrefix(r.Rel, "/proc/") {
				t.Fatalf("Lookup(flags %d) = host %d bytes, rel %.40q, %v", flags, len(r.Host), r.Rel, err)
			}
			if b, err := os.ReadFile(r.Rel); err != nil || string(b) != "deep\n" {
				t.Errorf("read through %.60q: %q, %v", r.Rel, b, err)
			}
		}
		// LongHost finds the file by device and inode (what readlink of
		// its /proc/<pid>/fd link needs), and not once it is gone.
		var st unix.Stat_t
		if err := unix.Stat(m.anchorName(t, long), &st); err != nil {
			t.Fatal(err)
		}
		if h, ok := m.LongHost(st.Dev, st.Ino); !ok || h != long {
			t.Errorf("LongHost = %d bytes, %v; want the file's host path", len(h), ok)
		}
		if _, ok := m.LongHost(st.Dev, st.Ino+1<<40); ok {
			t.Error("LongHost found a file that is not there")
		}
		m.Close()
	}
}

// anchorName is a name of long (a host path of PathMax or more) that
// reaches it, through m's anchors.
func (m *Mapper) anchorName(t *testing.T, long string) string {
	t.Helper()
	b, ok := m.anch.appendName(nil, []byte(long))
	if !ok {
		t.Fatalf("no anchor name for %d bytes", len(long))
	}
	return string(b)
}
