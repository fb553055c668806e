package pathmap

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestAppendRel: the relative form of a host path from a host directory.
func TestAppendRel(t *testing.T) {
	long := "/" + strings.Repeat("x", 250)
	deep := strings.Repeat(long, 17) // 4267 bytes
	tests := []struct {
		base, target string
		want         string // "" when !ok
	}{
		{"/a/b", "/a/b/c", "c"},
		{"/a/b", "/a/b/c/d/", "c/d/"},
		{"/a/b", "/a/c", "../c"},
		{"/a/b", "/a/c/", "../c/"},
		{"/a/bc", "/a/b/x", "../b/x"}, // "b" is not a prefix of "bc"
		{"/a/b", "/a/bc/x", "../bc/x"},
		{"/a/b/c", "/x/y", "../../../x/y"},
		{"/a", "/", ""},                // "/" has no name
		{"/a/b", "/a/b", "../b"},       // the directory itself, by its name
		{"/a/b", "/a/b/", "../b/"},     //
		{"/a/b/c", "/a", "../../../a"}, // an ancestor, by its name
		{"/a/b", "/a/b/.", "."},        // LAST_DOT stays what it was
		{"/a/b", "/a/b/..", ".."},      // LAST_DOTDOT too
		{"/a/b/c", "/a/b/x/..", "../x/.."},
		{"/", "/a/b", "a/b"},
		{"/proc/12/cwd", "/proc/12/cwd/x", ""}, // ".." does not climb out of a magic link
		{"a/b", "/a/b/c", ""},                  // not absolute
		{"/a/b", "c", ""},
		{"", "/a", ""},
		{deep, deep + "/f", "f"},
		{deep + "/d", deep + long + "/f", "../" + long[1:] + "/f"},
		{deep, deep[:len(deep)-len(long)], "../../" + long[1:]},
		{"/elsewhere", deep + "/f", ""},               // too long as well
		{"/", "/" + strings.Repeat("y", PathMax), ""}, // a relative path of PathMax bytes
		{"/", "/" + strings.Repeat("y", PathMax-1), strings.Repeat("y", PathMax-1)}, // one less
	}
	for _, tc := range tests {
		got, ok := appendRel([]byte("pre:"), []byte(tc.base), []byte(tc.target))
		want := tc.want
		if want != "" {
			want = "pre:" + want
		} else if string(got) != "pre:" {
			t.Errorf("appendRel(%.40q, %.40q) changed dst to %.60q though it failed", tc.base, tc.target, got)
		}
		if ok != (tc.want != "") || (ok && string(got) != want) {
			t.Errorf("appendRel(%.40q, %.40q) = %.60q, %v; want %.60q", tc.base, tc.target, got, ok, want)
		}
	}
}

// TestCommonDir: the longest common ancestor, component by component.
func TestCommonDir(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"/", "/", 0},
		{"/", "/a", 0},
		{"/a", "/a", 2},
		{"/a", "/ab", 0},
		{"/a/b", "/a/c", 2},
		{"/a/b", "/a/b/c", 4},
		{"/a/b/c", "/a/b", 4},
		{"/ab/c", "/a/b", 0},
	} {
		if got := commonDir([]byte(tc.a), []byte(tc.b)); got != tc.want {
			t.Errorf("commonDir(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestDeepRel: below a cwd deeper than PATH_MAX, a relative path that the
// walk rewrites (through a symlink, "..", a mount point) gets a relative
// host form (Result.Rel) that the kernel resolves from that cwd, or from a
// dirfd (Proc.Dir); a mount whose source lies elsewhere still has none.
func TestDeepRel(t *testing.T) {
	root, other := t.TempDir(), t.TempDir()
	back, err := unix.Open(".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(back)
	defer unix.Fchdir(back) // the cwd is the whole process's
	d, e, g := strings.Repeat("d", 200), strings.Repeat("e", 200), strings.Repeat("g", 200)
	// /D: components of d, 3800 to 4000 bytes of host path; the cwd is
	// /D/e/e, beyond PATH_MAX on the host; /D/mp is a binding of /D/src,
	// /D/far one of a directory elsewhere (3700 to 3900 bytes).
	D, farHost := "", other
	for len(root)+len(D) < 3800 {
		D += "/" + d
	}
	for len(farHost) < 3700 {
		farHost += "/" + d
	}
	cwd := D + "/" + e + "/" + e
	n255, w255 := strings.Repeat("n", 255), strings.Repeat("w", 255)
	for _, dir := range []string{root + cwd + "/sub", root + D + "/src/" + g, root + D + "/mp", root + D + "/far", farHost + "/" + g} {
		if err := mkdirAllDeep(dir); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Chdir(root + cwd[:len(D)+1+len(e)]); err != nil {
		t.Fatal(err)
	}
	dirfd, err := unix.Open(".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dirfd)
	if err := unix.Chdir(e); err != nil {
		t.Fatal(err)
	}
	if err := unix.Symlink("sub", "link"); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"sub/f", "../../src/" + g + "/" + n255} {
		if err := os.WriteFile(name, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	binds := []Binding{{Host: root + D + "/src", Guest: D + "/mp"}, {Host: farHost, Guest: D + "/far"}}
	pid := os.Getpid()
	kernelCwd := Proc{Pid: pid, KernelCwd: true}
	atDir := Proc{Pid: pid, Dir: root + cwd[:len(D)+1+len(e)], DirFd: dirfd}
	anchored := "/proc/" + strconv.Itoa(pid) + "/fd/" // Rel through an anchor (anchor.go)
	tests := []struct {
		pr       Proc
		cwd, p   string
		flags    Flags
		rel, err string // Result.Rel, the error
	}{
		{kernelCwd, cwd, "link/f", Follow, "sub/f", ""},
		{kernelCwd, cwd, "link/", Follow, "sub/", ""},
		{kernelCwd, cwd, "sub/../link/f", Follow, "sub/f", ""},
		{kernelCwd, cwd, "../" + e + "/sub", Entry, "sub", ""},
		{kernelCwd, cwd, "../" + e, Entry, "../" + e, ""}, // the cwd itself, by its name
		{kernelCwd, cwd, "../../mp/" + g + "/" + n255, Follow, "../../src/" + g + "/" + n255, ""},
		{kernelCwd, cwd, "../../mp/" + g + "/" + w255, Entry, "../../src/" + g + "/" + w255, ""},
		{kernelCwd, cwd, "../../far/" + g + "/" + n255, 0, anchored, ""},      // too long from here too: an anchor
		{kernelCwd, cwd, "../../far/" + g + "/" + n255, Follow, anchored, ""}, // and its lookup goes through one
		{kernelCwd, cwd, "sub/f", Follow, "", ""},                             // Literal: no Rel needed
		{kernelCwd, cwd, "../..", Follow, "", ""},                             // short enough as it is
		{Proc{Pid: pid}, cwd, "link/f", Follow, anchored, ""},                 // not the kernel's cwd
		{atDir, cwd[:len(D)+1+len(e)], e + "/link/f", Follow, e + "/sub/f", ""},
		{atDir, D, e + "/" + e + "/link/f", Follow, anchored, ""}, // Dir is not cwd's host path
	}
	for _, opts := range [][]Option{nil, {WithCache()}} {
		m, err := New(root, binds, nil, opts...)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range tests {
			r, err := m.Lookup(tc.pr, tc.cwd, tc.p, tc.flags)
			if errString(err) != tc.err || r.Rel != tc.rel && !(tc.rel == anchored && strings.HasPrefix(r.Rel, anchored)) {
				t.Errorf("Lookup(%.30q..., %.50q) = Rel %.50q, %v; want %.50q, %s", tc.cwd, tc.p, r.Rel, err, tc.rel, tc.err)
				continue
			}
			if r.Rel == "" || tc.flags&Entry != 0 {
				continue
			}
			// The kernel finds Host from the directory the walk started at.
			at := unix.AT_FDCWD
			if tc.pr.Dir != "" {
				at = dirfd
			}
			var st, want unix.Stat_t
			werr := unix.Fstatat(unix.AT_FDCWD, strings.TrimPrefix(tc.p, e+"/"), &want, 0)
			if err := unix.Fstatat(at, r.Rel, &st, 0); err != nil && !(err == unix.ENOENT && werr == unix.ENOENT) {
				t.Errorf("stat of Rel %.50q: %v", r.Rel, err)
			} else if err == nil && werr == nil && (st.Ino != want.Ino || st.Dev != want.Dev) {
				t.Errorf("Rel %.50q is not %.50q", r.Rel, tc.p)
			}
		}
		m.Close()
	}
}

// mkdirAllDeep is os.MkdirAll for paths of any length, one relative
// component at a time.
func mkdirAllDeep(path string) error {
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	for _, c := range strings.Split(strings.Trim(path, "/"), "/") {
		if err := unix.Mkdirat(fd, c, 0o755); err != nil && err != unix.EEXIST {
			unix.Close(fd)
			return err
		}
		next, err := unix.Openat(fd, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return err
		}
		fd = next
	}
	return unix.Close(fd)
}

// errString names an errno ("" for nil).
func errString(err error) string {
	if err == nil {
		return ""
	}
	if e, ok := err.(syscall.Errno); ok {
		return unix.ErrnoName(e)
	}
	return err.Error()
}
