package emul

import (
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	tt "github.com/droidroot/droidroot/tracer/tracertest"
)

func chdir(path string) tt.Step { return tt.Call("chdir", tt.Str(path)) }

func getcwdStep() kcase {
	return kcase{name: "getcwd", step: tt.Call("getcwd", tt.Out(512), tt.Int(512)), mem: []int{0}}
}

// TestCwdHandlersKernel: chdir, fchdir and getcwd keep the guest's cwd as
// the kernel does in a chroot: through symlinks, into and out of a bind,
// failures leaving it unchanged.
func TestCwdHandlersKernel(t *testing.T) {
	cases := []kcase{
		{name: "chdir dir", step: chdir("/dir")},
		getcwdStep(),
		{name: "relative access", step: access("file")},
		{name: "chdir relative", step: chdir("sub")},
		getcwdStep(),
		{name: "chdir through symlink", step: chdir("../../link")},
		getcwdStep(),
		{name: "chdir bind", step: chdir("/mnt")},
		getcwdStep(),
		{name: "relative in bind", step: access("inside")},
		{name: "chdir out of bind", step: chdir("..")},
		getcwdStep(),
		{name: "chdir above root", step: chdir("/..")},
		getcwdStep(),
		{name: "chdir missing", step: chdir("/missing")},
		{name: "chdir file", step: chdir("/etc/hostname")},
		{name: "chdir empty", step: chdir("")},
		{name: "chdir dangling", step: chdir("/dangling")},
		getcwdStep(),
		{name: "open dir", step: openat(cwdFD, "/mnt/../dir/sub", unix.O_RDONLY|unix.O_DIRECTORY), how: cmpSign}, // 19
		{name: "fchdir", step: tt.Call("fchdir", tt.Ret(19))},
		getcwdStep(),
		{name: "relative after fchdir", step: access("../file")},
		{name: "close", step: closeStep(19)},
		{name: "fchdir bad fd", step: tt.Call("fchdir", tt.Int(999))},
		getcwdStep(),
		{name: "open bind", step: openat(cwdFD, "/mnt", unix.O_RDONLY|unix.O_DIRECTORY), how: cmpSign}, // 26
		{name: "fchdir bind", step: tt.Call("fchdir", tt.Ret(26))},
		getcwdStep(),
		{name: "readlink proc cwd", step: tt.Call("readlinkat", cwdFD, tt.Str("/proc/self/cwd"), tt.Out(256), tt.Int(256)), mem: []int{2}},
		{name: "open file", step: openat(cwdFD, "/etc/hostname", unix.O_RDONLY), how: cmpSign}, // 30
		{name: "fchdir file", step: tt.Call("fchdir", tt.Ret(30))},
		getcwdStep(),
		{name: "getcwd small", step: tt.Call("getcwd", tt.Out(4), tt.Int(4))},
		{name: "getcwd exact", step: tt.Call("getcwd", tt.Out(5), tt.Int(5)), mem: []int{0}},
		{name: "getcwd bad buffer", step: tt.Call("getcwd", tt.Int(8), tt.Int(64))},
	}
	againstKernel(t, Config{}, "/", cases)
}

// TestCwdDeep: a cwd deeper than PATH_MAX (reached by relative chdirs):
// getcwd fails as the kernel's does, and the way back up works.
func TestCwdDeep(t *testing.T) {
	name := strings.Repeat("d", 200)
	depth := 24 // 24 * 201 > PATH_MAX
	var cases []kcase
	for i := 0; i < depth; i++ {
		cases = append(cases,
			kcase{name: "mkdir", step: tt.Call("mkdirat", cwdFD, tt.Str(name), tt.Int(0o755))},
			kcase{name: "chdir down", step: chdir(name)})
	}
	cases = append(cases,
		kcase{name: "getcwd deep", step: tt.Call("getcwd", tt.Out(8192), tt.Int(8192))},
		kcase{name: "access deep", step: access(".")},
		kcase{name: "create deep", step: openat(cwdFD, "f", unix.O_CREAT|unix.O_WRONLY), how: cmpSign})
	for i := 0; i < depth; i++ {
		cases = append(cases, kcase{name: "chdir up", step: chdir("..")})
	}
	cases = append(cases, getcwdStep())
	againstKernel(t, Config{}, "/tmp", cases)
}

// TestCwdRenamedOrRemoved: the guest cwd follows a rename of the directory or of an
// ancestor (getcwd and relative paths, as the kernel's), and getcwd in a removed directory
// fails with ENOENT, as the kernel's does.
func TestCwdRenamedOrRemoved(t *testing.T) {
	cases := []kcase{
		{name: "mkdir", step: tt.Call("mkdirat", cwdFD, tt.Str("/tmp/ra"), tt.Int(0o755))},
		{name: "mkdir sub", step: tt.Call("mkdirat", cwdFD, tt.Str("/tmp/ra/sub"), tt.Int(0o755))},
		{name: "chdir sub", step: chdir("/tmp/ra/sub")},
		getcwdStep(),
		{name: "rename the parent", step: tt.Call("renameat", cwdFD, tt.Str("/tmp/ra"), cwdFD, tt.Str("/tmp/rb"))},
		getcwdStep(),
		{name: "relative through the new name", step: access("../sub")},
		{name: "relative through the old name", step: access("/tmp/ra/sub")},
		{name: "rename it again", step: tt.Call("renameat", cwdFD, tt.Str("/tmp/rb"), cwdFD, tt.Str("/tmp/rc"))},
		getcwdStep(),
		{name: "remove the cwd", step: tt.Call("unlinkat", cwdFD, tt.Str("/tmp/rc/sub"), tt.Int(unix.AT_REMOVEDIR))},
		{name: "getcwd removed", step: tt.Call("getcwd", tt.Out(512), tt.Int(512))},
		{name: "chdir back", step: chdir("/")},
		getcwdStep(),
	}
	againstKernel(t, Config{}, "/", cases)
}

// TestCwdFailedChangeAfterChdir: a chdir into a directory with two guest paths (a bind of a
// rootfs directory), then a chdir or fchdir that fails: the cwd stays where the first one went,
// under the name it was given there (found by e2e's TestOracleRandom: the failing fchdir took
// the place of the chdir's pending change, and the cwd came back under the rootfs name).
func TestCwdFailedChangeAfterChdir(t *testing.T) {
	alias := func(g *guestFS) { g.addBind(t, filepath.Join(g.root, "dir"), "/alias") }
	cases := []kcase{
		{name: "chdir alias", step: chdir("/alias")},
		{name: "fchdir bad", step: tt.Call("fchdir", tt.Int(999))},
		getcwdStep(),
		{name: "chdir alias again", step: chdir("/alias")},
		{name: "chdir missing", step: chdir("/missing")},
		getcwdStep(),
		{name: "chdir alias sub", step: chdir("/alias/sub")},
		{name: "chdir a file", step: chdir("/dir/file")},
		getcwdStep(),
		{name: "relative dotdot", step: fstatat(cwdFD, "../file", 0), stat: []int{2}},
	}
	againstKernelIn(t, Config{}, "/", alias, cases)
}

// TestCwdRemovedRenameAcrossBinds: a rename of a name in a removed cwd into a bind is the
// kernel's EXDEV (its parent is the cwd the kernel holds), not ENOENT (found by e2e's
// TestOracleRandom: the parents' check looked the removed cwd's path up).
func TestCwdRemovedRenameAcrossBinds(t *testing.T) {
	cases := []kcase{
		{name: "mkdir", step: tt.Call("mkdirat", cwdFD, tt.Str("/tmp/gone"), tt.Int(0o755))},
		{name: "chdir", step: chdir("/tmp/gone")},
		{name: "rmdir", step: tt.Call("unlinkat", cwdFD, tt.Str("/tmp/gone"), tt.Int(unix.AT_REMOVEDIR))},
		{name: "rename into a bind", step: tt.Call("renameat", cwdFD, tt.Str("a"), cwdFD, tt.Str("/mnt/x"))},
		{name: "rename from a bind", step: tt.Call("renameat", cwdFD, tt.Str("/mnt/inside"), cwdFD, tt.Str("a"))},
		{name: "link into a bind", step: tt.Call("linkat", cwdFD, tt.Str("/dir/file"), cwdFD, tt.Str("/mnt/x"), tt.Int(0))},
		{name: "link from a bind", step: tt.Call("linkat", cwdFD, tt.Str("/mnt/inside"), cwdFD, tt.Str("a"), tt.Int(0))},
	}
	againstKernel(t, Config{}, "/", cases)
}
