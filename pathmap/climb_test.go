package pathmap

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// openDeep opens directory path (which may be longer than PathMax) one
// component at a time and returns the descriptor.
func openDeep(t *testing.T, path string) int {
	t.Helper()
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range strings.Split(strings.Trim(path, "/"), "/") {
		next, err := unix.Openat(fd, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			t.Fatalf("open %s of %.60q: %v", c, path, err)
		}
		fd = next
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// TestDirHost: the path of a directory deeper than PATH_MAX, which the
// kernel cannot print, is found by climbing (and then known to LongHost);
// a short one's too; a file, a removed directory and a bad link have none.
func TestDirHost(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	deep := filepath.Dir(deepTree(t, dir, 25))
	link := func(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }
	deepFd := openDeep(t, deep)
	if _, err := (hostFS{}).Readlink(link(deepFd)); err != unix.ENAMETOOLONG {
		t.Fatalf("the kernel printed the deep directory's path (%v): not deep enough", err)
	}
	if err := os.Mkdir(dir+"/gone", 0o755); err != nil {
		t.Fatal(err)
	}
	goneFd := openDeep(t, dir+"/gone")
	if err := os.Remove(dir + "/gone"); err != nil {
		t.Fatal(err)
	}
	fileFd, err := unix.Open(deepTree(t, t.TempDir(), 1), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fileFd)
	for _, tc := range []struct {
		name, link, want string
		ok               bool
	}{
		{"deep", link(deepFd), deep, true},
		{"deep again (LongHost)", link(deepFd), deep, true},
		{"short", link(openDeep(t, dir)), dir, true},
		{"a file", link(fileFd), "", false},
		{"removed", link(goneFd), "", false},
		{"no such descriptor", "/proc/self/fd/999999", "", false},
	} {
		got, ok := m.DirHost(tc.link)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: DirHost = %.80q (%d bytes), %v; want %.80q (%d bytes), %v",
				tc.name, got, len(got), ok, tc.want, len(tc.want), tc.ok)
		}
	}
	var st unix.Stat_t
	if err := unix.Fstat(deepFd, &st); err != nil {
		t.Fatal(err)
	}
	if h, ok := m.LongHost(st.Dev, st.Ino); !ok || h != deep {
		t.Errorf("LongHost after DirHost = %.80q, %v", h, ok)
	}
}

// TestEntryNaming: a directory is found in its parent's listing (read
// again from its start at each call); a file is not a directory's name.
func TestEntryNaming(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"a", "b", "c"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	pfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(pfd)
	for _, name := range []string{"a", "b", "c", "f"} {
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(dir, name), &st); err != nil {
			t.Fatal(err)
		}
		got, ok := entryNaming(pfd, st.Dev, st.Ino)
		if want := name != "f"; ok != want || (ok && got != name) {
			t.Errorf("%s: entryNaming = %q, %v", name, got, ok)
		}
	}
}
