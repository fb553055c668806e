package emul

import (
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	tt "github.com/droidroot/droidroot/tracer/tracertest"
)

// at-family steps with AT_FDCWD.
func access(path string) tt.Step {
	return tt.Call("faccessat", tt.Int(unix.AT_FDCWD), tt.Str(path), tt.Int(unix.F_OK), tt.Int(0))
}

func fstatat(dirfd tt.Arg, path string, flags int64) tt.Step {
	return tt.Call(fstatatName(), dirfd, tt.Str(path), tt.Out(statBufSize), tt.Int(flags))
}

// fstatatName is the native name of fstatat(2): newfstatat, or arm64's fstatat.
func fstatatName() string {
	if tt.Has("newfstatat") {
		return "newfstatat"
	}
	return "fstatat"
}

func openat(dirfd tt.Arg, path string, flags int64) tt.Step {
	return tt.Call("openat", dirfd, tt.Str(path), tt.Int(flags|unix.O_CLOEXEC), tt.Int(0o644))
}

func closeStep(k int) tt.Step { return tt.Call("close", tt.Ret(k)) }

var cwdFD = tt.Int(unix.AT_FDCWD)

// TestPathHandlersKernel: path calls through the rootfs, its symlinks and
// a bind, absolute and relative, answer as the kernel does in a chroot
// with the same bind mounted.
func TestPathHandlersKernel(t *testing.T) {
	cases := []kcase{
		{name: "file", step: access("/etc/hostname")},
		{name: "missing", step: access("/missing")},
		{name: "missing dir", step: access("/missing/file")},
		{name: "not a dir", step: access("/etc/hostname/x")},
		{name: "abs symlink dir", step: access("/link/file")},
		{name: "rel symlink", step: access("/rel")},
		{name: "escaping symlink", step: access("/escape")},
		{name: "dangling", step: access("/dangling")},
		{name: "loop", step: access("/loop")},
		{name: "dotdot at root", step: access("/../../etc/hostname")},
		{name: "bind", step: access("/mnt/inside")},
		{name: "bind up", step: access("/mnt/up")},
		{name: "bind dotdot", step: access("/mnt/../etc/hostname")},
		{name: "relative", step: access("dir/file")},
		{name: "relative dotdot", step: access("dir/../etc/hostname")},
		{name: "empty", step: access("")},
		{name: "trailing slash on file", step: access("/etc/hostname/")},
		{name: "stat", step: fstatat(cwdFD, "/dir/file", 0), stat: []int{2}},
		{name: "stat dir", step: fstatat(cwdFD, "/dir", 0), stat: []int{2}},
		{name: "stat follows", step: fstatat(cwdFD, "/rel", 0), stat: []int{2}},
		{name: "lstat symlink", step: fstatat(cwdFD, "/rel", unix.AT_SYMLINK_NOFOLLOW), stat: []int{2}},
		{name: "lstat dangling", step: fstatat(cwdFD, "/dangling", unix.AT_SYMLINK_NOFOLLOW), stat: []int{2}},
		{name: "stat dangling", step: fstatat(cwdFD, "/dangling", 0)},
		{name: "stat bind file", step: fstatat(cwdFD, "/mnt/inside", 0), stat: []int{2}},
		{name: "stat empty path", step: fstatat(cwdFD, "", 0)},
		// dirfd-relative calls on an fd the guest opened.
		{name: "open dir", step: openat(cwdFD, "/dir", unix.O_RDONLY|unix.O_DIRECTORY), how: cmpSign}, // 23
		{name: "dirfd file", step: tt.Call("faccessat", tt.Ret(25), tt.Str("file"), tt.Int(0), tt.Int(0))},
		{name: "dirfd dotdot", step: tt.Call("faccessat", tt.Ret(25), tt.Str("../etc/hostname"), tt.Int(0), tt.Int(0))},
		{name: "dirfd absolute", step: tt.Call("faccessat", tt.Ret(25), tt.Str("/mnt/inside"), tt.Int(0), tt.Int(0))},
		{name: "dirfd missing", step: tt.Call("faccessat", tt.Ret(25), tt.Str("nofile"), tt.Int(0), tt.Int(0))},
		{name: "dirfd stat", step: fstatat(tt.Ret(25), "sub", 0), stat: []int{2}},
		{name: "dirfd empty path", step: fstatat(tt.Ret(25), "", unix.AT_EMPTY_PATH), stat: []int{2}},
		{name: "bad dirfd", step: tt.Call("faccessat", tt.Int(999), tt.Str("file"), tt.Int(0), tt.Int(0))},
		{name: "close dir", step: closeStep(25)},
		{name: "open bind dir", step: openat(cwdFD, "/mnt", unix.O_RDONLY|unix.O_DIRECTORY), how: cmpSign}, // 34
		{name: "bind dirfd dotdot", step: tt.Call("faccessat", tt.Ret(34), tt.Str("../dir/file"), tt.Int(0), tt.Int(0))},
		{name: "close bind dir", step: closeStep(34)},
		// open
		{name: "open file", step: openat(cwdFD, "/etc/hostname", unix.O_RDONLY), how: cmpSign}, // 37
		{name: "read it", step: tt.Call("read", tt.Ret(37), tt.Out(16), tt.Int(16)), mem: []int{1}},
		{name: "close it", step: closeStep(37)},
		{name: "open nofollow", step: openat(cwdFD, "/rel", unix.O_RDONLY|unix.O_NOFOLLOW)},
		{name: "open missing", step: openat(cwdFD, "/missing", unix.O_RDONLY)},
		{name: "open dir as file", step: openat(cwdFD, "/etc/hostname", unix.O_RDONLY|unix.O_DIRECTORY)},
		{name: "create", step: openat(cwdFD, "/tmp/new", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL), how: cmpSign}, // 43
		{name: "write", step: tt.Call("write", tt.Ret(43), tt.Str("abc"), tt.Int(3))},
		{name: "close new", step: closeStep(43)},
		{name: "create exists", step: openat(cwdFD, "/tmp/new", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL)},
		{name: "stat new", step: fstatat(cwdFD, "/tmp/new", 0), stat: []int{2}},
		{name: "create through dangling", step: openat(cwdFD, "/dangling", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL)},
		{name: "create in bind", step: openat(cwdFD, "/mnt/made", unix.O_WRONLY|unix.O_CREAT), how: cmpSign}, // 49
		{name: "close made", step: closeStep(49)},
		{name: "truncate new", step: tt.Call("ftruncate", tt.Int(999), tt.Int(0))},
		// directories, links, renames
		{name: "mkdir", step: tt.Call("mkdirat", cwdFD, tt.Str("/tmp/d"), tt.Int(0o755))},
		{name: "mkdir again", step: tt.Call("mkdirat", cwdFD, tt.Str("/tmp/d"), tt.Int(0o755))},
		{name: "mkdir in missing", step: tt.Call("mkdirat", cwdFD, tt.Str("/missing/d"), tt.Int(0o755))},
		{name: "symlink", step: tt.Call("symlinkat", tt.Str("/dir/file"), cwdFD, tt.Str("/tmp/sl"))},
		{name: "symlink exists", step: tt.Call("symlinkat", tt.Str("x"), cwdFD, tt.Str("/tmp/sl"))},
		{name: "through new symlink", step: access("/tmp/sl")},
		{name: "readlink", step: tt.Call("readlinkat", cwdFD, tt.Str("/tmp/sl"), tt.Out(64), tt.Int(64)), mem: []int{2}},
		{name: "readlink abs", step: tt.Call("readlinkat", cwdFD, tt.Str("/link"), tt.Out(64), tt.Int(64)), mem: []int{2}},
		{name: "readlink in bind", step: tt.Call("readlinkat", cwdFD, tt.Str("/mnt/up"), tt.Out(64), tt.Int(64)), mem: []int{2}},
		{name: "readlink short buffer", step: tt.Call("readlinkat", cwdFD, tt.Str("/link"), tt.Out(64), tt.Int(2)), mem: []int{2}},
		{name: "readlink not a link", step: tt.Call("readlinkat", cwdFD, tt.Str("/etc/hostname"), tt.Out(64), tt.Int(64))},
		{name: "readlink missing", step: tt.Call("readlinkat", cwdFD, tt.Str("/missing"), tt.Out(64), tt.Int(64))},
		{name: "readlink zero size", step: tt.Call("readlinkat", cwdFD, tt.Str("/link"), tt.Out(64), tt.Int(0))},
		{name: "readlink proc cwd", step: tt.Call("readlinkat", cwdFD, tt.Str("/proc/self/cwd"), tt.Out(256), tt.Int(256)), mem: []int{2}},
		{name: "readlink proc root", step: tt.Call("readlinkat", cwdFD, tt.Str("/proc/self/root"), tt.Out(256), tt.Int(256)), mem: []int{2}},
		{name: "link", step: tt.Call("linkat", cwdFD, tt.Str("/tmp/new"), cwdFD, tt.Str("/tmp/hard"), tt.Int(0))},
		{name: "link across bind", step: tt.Call("linkat", cwdFD, tt.Str("/tmp/new"), cwdFD, tt.Str("/mnt/hard"), tt.Int(0))},
		{name: "link follow", step: tt.Call("linkat", cwdFD, tt.Str("/tmp/sl"), cwdFD, tt.Str("/tmp/hard2"), tt.Int(unix.AT_SYMLINK_FOLLOW))},
		{name: "stat hard", step: fstatat(cwdFD, "/tmp/hard2", unix.AT_SYMLINK_NOFOLLOW), stat: []int{2}},
		{name: "rename", step: tt.Call("renameat2", cwdFD, tt.Str("/tmp/hard"), cwdFD, tt.Str("/tmp/moved"), tt.Int(0))},
		{name: "rename noreplace", step: tt.Call("renameat2", cwdFD, tt.Str("/tmp/moved"), cwdFD, tt.Str("/tmp/new"), tt.Int(unix.RENAME_NOREPLACE))},
		{name: "rename across bind", step: tt.Call("renameat2", cwdFD, tt.Str("/tmp/moved"), cwdFD, tt.Str("/mnt/moved"), tt.Int(0))},
		{name: "unlink", step: tt.Call("unlinkat", cwdFD, tt.Str("/tmp/moved"), tt.Int(0))},
		{name: "unlink again", step: tt.Call("unlinkat", cwdFD, tt.Str("/tmp/moved"), tt.Int(0))},
		{name: "unlink dir", step: tt.Call("unlinkat", cwdFD, tt.Str("/tmp/d"), tt.Int(0))},
		{name: "rmdir", step: tt.Call("unlinkat", cwdFD, tt.Str("/tmp/d"), tt.Int(unix.AT_REMOVEDIR))},
		{name: "unlink symlink itself", step: tt.Call("unlinkat", cwdFD, tt.Str("/tmp/sl"), tt.Int(0))},
		{name: "unlink mount point", step: tt.Call("unlinkat", cwdFD, tt.Str("/mnt"), tt.Int(unix.AT_REMOVEDIR))},
		{name: "mknod fifo", step: tt.Call("mknodat", cwdFD, tt.Str("/tmp/fifo"), tt.Int(unix.S_IFIFO|0o600), tt.Int(0))},
		{name: "stat fifo", step: fstatat(cwdFD, "/tmp/fifo", 0), stat: []int{2}},
		{name: "chmod", step: tt.Call("fchmodat", cwdFD, tt.Str("/tmp/new"), tt.Int(0o600), tt.Int(0))},
		{name: "stat chmod", step: fstatat(cwdFD, "/tmp/new", 0), stat: []int{2}},
		{name: "chown to self", step: tt.Call("fchownat", cwdFD, tt.Str("/tmp/new"), tt.Int(-1), tt.Int(-1), tt.Int(0))},
		{name: "utimensat", step: tt.Call("utimensat", cwdFD, tt.Str("/tmp/new"), tt.Int(0), tt.Int(0))},
		{name: "utimensat missing", step: tt.Call("utimensat", cwdFD, tt.Str("/missing"), tt.Int(0), tt.Int(0))},
		{name: "getxattr", step: tt.Call("getxattr", tt.Str("/tmp/new"), tt.Str("user.none"), tt.Out(16), tt.Int(16))},
		{name: "listxattr missing", step: tt.Call("listxattr", tt.Str("/missing"), tt.Out(16), tt.Int(16))},
		{name: "statfs missing", step: tt.Call("statfs", tt.Str("/missing"), tt.Out(256))},
		{name: "truncate", step: tt.Call("truncate", tt.Str("/tmp/new"), tt.Int(1))},
		{name: "stat truncated", step: fstatat(cwdFD, "/tmp/new", 0), stat: []int{2}},
		{name: "chroot same root", step: tt.Call("chroot", tt.Str("/"))},
		{name: "inotify bad fd", step: tt.Call("inotify_add_watch", tt.Int(999), tt.Str("/tmp/new"), tt.Int(unix.IN_ALL_EVENTS))},
		// NULL with AT_EMPTY_PATH names the dirfd from Linux 6.11 (EFAULT before): the
		// running kernel's answer, whichever it is.
		{name: "stat NULL empty path", step: tt.Call(fstatatName(), cwdFD, tt.Int(0), tt.Out(statBufSize), tt.Int(unix.AT_EMPTY_PATH)), stat: []int{2}},
		{name: "statx NULL empty path", step: tt.Call("statx", cwdFD, tt.Int(0), tt.Int(unix.AT_EMPTY_PATH), tt.Int(unix.STATX_BASIC_STATS), tt.Out(256))},
		{name: "stat NULL", step: tt.Call(fstatatName(), cwdFD, tt.Int(0), tt.Out(statBufSize), tt.Int(0))},
		// inotify_add_watch checks the fd before it reads the path.
		{name: "inotify not inotify, bad path", step: tt.Call("inotify_add_watch", tt.Int(0), tt.Int(1), tt.Int(unix.IN_ALL_EVENTS))},
		{name: "inotify bad fd, bad path", step: tt.Call("inotify_add_watch", tt.Int(999), tt.Int(1), tt.Int(unix.IN_ALL_EVENTS))},
		// ... and its mask, before or after the fd as the running kernel does.
		{name: "inotify bad fd, no event bit", step: tt.Call("inotify_add_watch", tt.Int(999), tt.Int(1), tt.Int(0))},
		{name: "inotify bad fd, add and create", step: tt.Call("inotify_add_watch", tt.Int(999), tt.Int(1), tt.Int(unix.IN_MASK_ADD|unix.IN_MASK_CREATE|unix.IN_ACCESS))},
		{name: "inotify not inotify, unknown bit", step: tt.Call("inotify_add_watch", tt.Int(0), tt.Int(1), tt.Int(0x10001))},
		// Entry calls on a bind point (/mnt), in the kernel's order: for rename the
		// parents' mounts (EXDEV), the source (ENOENT), then EBUSY; for link the source,
		// then EEXIST.
		{name: "rename missing onto a bind point", step: tt.Call("renameat", cwdFD, tt.Str("/missing"), cwdFD, tt.Str("/mnt"))},
		{name: "rename onto a bind point", step: tt.Call("renameat", cwdFD, tt.Str("/dir/sub"), cwdFD, tt.Str("/mnt"))},
		{name: "rename a bind point", step: tt.Call("renameat", cwdFD, tt.Str("/mnt"), cwdFD, tt.Str("/tmp/m2"))},
		{name: "rename missing into a bind", step: tt.Call("renameat", cwdFD, tt.Str("/missing"), cwdFD, tt.Str("/mnt/x"))},
		{name: "link missing onto a bind point", step: tt.Call("linkat", cwdFD, tt.Str("/missing"), cwdFD, tt.Str("/mnt"), tt.Int(0))},
		{name: "link onto a bind point", step: tt.Call("linkat", cwdFD, tt.Str("/dir/file"), cwdFD, tt.Str("/mnt"), tt.Int(0))},
		{name: "unlink a bind point", step: tt.Call("unlinkat", cwdFD, tt.Str("/mnt"), tt.Int(unix.AT_REMOVEDIR))},
		// What the kernel checks before it refuses a link or rename across mounts, or an
		// entry that is a mount point (found by TestOracleRandom): the link's source, the
		// new name's parent and the new name; both parents of a rename; may_delete's
		// EISDIR and ENOTDIR before EBUSY; a rename of a file onto itself.
		{name: "link missing into a bind", step: tt.Call("linkat", cwdFD, tt.Str("/missing"), cwdFD, tt.Str("/mnt/x"), tt.Int(0))},
		{name: "link onto a name in a bind", step: tt.Call("linkat", cwdFD, tt.Str("/dir/file"), cwdFD, tt.Str("/mnt/inside"), tt.Int(0))},
		{name: "link into a missing directory of a bind", step: tt.Call("linkat", cwdFD, tt.Str("/dir/file"), cwdFD, tt.Str("/mnt/nodir/x"), tt.Int(0))},
		{name: "link below a file in a bind", step: tt.Call("linkat", cwdFD, tt.Str("/dir/file"), cwdFD, tt.Str("/mnt/inside/x"), tt.Int(0))},
		{name: "link into a bind with a trailing slash", step: tt.Call("linkat", cwdFD, tt.Str("/dir/file"), cwdFD, tt.Str("/mnt/x/"), tt.Int(0))},
		{name: "link onto a file in a bind with a trailing slash", step: tt.Call("linkat", cwdFD, tt.Str("/dir/file"), cwdFD, tt.Str("/mnt/inside/"), tt.Int(0))},
		{name: "link from a bind onto the root", step: tt.Call("linkat", cwdFD, tt.Str("/mnt/inside"), cwdFD, tt.Str("/"), tt.Int(0))},
		{name: "rename a file onto a bind point with a slash", step: tt.Call("renameat", cwdFD, tt.Str("/dir/file"), cwdFD, tt.Str("/mnt/"))},
		{name: "link missing below a file", step: tt.Call("linkat", cwdFD, tt.Str("/missing"), cwdFD, tt.Str("/dir/file/x"), tt.Int(0))},
		{name: "rename from a missing directory into a bind", step: tt.Call("renameat", cwdFD, tt.Str("/nodir/a"), cwdFD, tt.Str("/mnt/x"))},
		{name: "rename into a missing directory of a bind", step: tt.Call("renameat", cwdFD, tt.Str("/dir/file"), cwdFD, tt.Str("/mnt/nodir/x"))},
		{name: "rename a bind point onto itself", step: tt.Call("renameat", cwdFD, tt.Str("/mnt"), cwdFD, tt.Str("/mnt"))},
		{name: "rename a bind point onto a file", step: tt.Call("renameat", cwdFD, tt.Str("/mnt"), cwdFD, tt.Str("/dir/file"))},
		{name: "rename a file onto a bind point", step: tt.Call("renameat", cwdFD, tt.Str("/dir/file"), cwdFD, tt.Str("/mnt"))},
		{name: "unlink a bind point, not rmdir", step: tt.Call("unlinkat", cwdFD, tt.Str("/mnt"), tt.Int(0))},
	}
	againstKernel(t, Config{}, "/", cases)
}

// TestPathHandlersBelowNewFile: a name looked up below a file made a moment
// before, where the cache knew nothing (found by TestOracleRandom): the
// kernel's ENOTDIR for calls that do not follow the last name as for those
// that do, with the lookup cache's pins as without them.
func TestPathHandlersBelowNewFile(t *testing.T) {
	cases := []kcase{
		{name: "create", step: openat(cwdFD, "/tmp/f", unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC), how: cmpSign},
		{name: "mkdir below it", step: tt.Call("mkdirat", cwdFD, tt.Str("/tmp/f/d"), tt.Int(0o755))},
		{name: "unlink below it", step: tt.Call("unlinkat", cwdFD, tt.Str("/tmp/f/d"), tt.Int(0))},
		{name: "lstat below it", step: fstatat(cwdFD, "/tmp/f/d", unix.AT_SYMLINK_NOFOLLOW)},
		{name: "stat below it", step: fstatat(cwdFD, "/tmp/f/d", 0)},
		{name: "create in a bind", step: openat(cwdFD, "/mnt/g", unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC), how: cmpSign},
		{name: "mkdir below it in a bind", step: tt.Call("mkdirat", cwdFD, tt.Str("/mnt/g/d"), tt.Int(0o755))},
		{name: "below a missing one", step: tt.Call("mkdirat", cwdFD, tt.Str("/tmp/none/d"), tt.Int(0o755))},
		// O_CREAT through a symlink to "file/": the kernel's EISDIR for the trailing slash
		// it reaches, before what is there; without O_CREAT, ENOTDIR.
		{name: "link to a file and a slash", step: tt.Call("symlinkat", tt.Str("/dir/file/"), cwdFD, tt.Str("/tmp/ts"))},
		{name: "create through it", step: openat(cwdFD, "/tmp/ts", unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC)},
		{name: "open through it", step: openat(cwdFD, "/tmp/ts", unix.O_RDONLY|unix.O_CLOEXEC)},
		{name: "relative link", step: tt.Call("symlinkat", tt.Str("file/"), cwdFD, tt.Str("/dir/ts2"))},
		{name: "create through the relative one", step: openat(cwdFD, "/dir/ts2", unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC)},
		{name: "a link to the link", step: tt.Call("symlinkat", tt.Str("ts"), cwdFD, tt.Str("/tmp/ts3"))},
		{name: "create through both", step: openat(cwdFD, "/tmp/ts3", unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC)},
		{name: "a link to a file below a file and a slash", step: tt.Call("symlinkat", tt.Str("/dir/file/x/"), cwdFD, tt.Str("/tmp/ts4"))},
		{name: "create through that", step: openat(cwdFD, "/tmp/ts4", unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC)},
		// ... the name with the slash is not followed: a dangling link there, or the link
		// itself (a loop), is EISDIR too.
		{name: "a dangling link", step: tt.Call("symlinkat", tt.Str("none/x"), cwdFD, tt.Str("/tmp/dl"))},
		{name: "a link to it and a slash", step: tt.Call("symlinkat", tt.Str("dl/"), cwdFD, tt.Str("/tmp/ts5"))},
		{name: "create through the dangling one", step: openat(cwdFD, "/tmp/ts5", unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC)},
		{name: "a link to itself and a slash", step: tt.Call("symlinkat", tt.Str("ts6/"), cwdFD, tt.Str("/tmp/ts6"))},
		{name: "create through the loop", step: openat(cwdFD, "/tmp/ts6", unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC)},
		{name: "open through the loop", step: openat(cwdFD, "/tmp/ts6", unix.O_RDONLY|unix.O_CLOEXEC)},
		// A dirfd open on a file that was removed since: ENOTDIR for a name below it.
		{name: "a file", step: openat(cwdFD, "/tmp/gone", unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC), how: cmpSign}, // 23
		{name: "removed", step: tt.Call("unlinkat", cwdFD, tt.Str("/tmp/gone"), tt.Int(0))},
		{name: "below its descriptor", step: fstatat(tt.Ret(23), "x", 0)},
		{name: "below it, not followed", step: fstatat(tt.Ret(23), "x/y", unix.AT_SYMLINK_NOFOLLOW)},
	}
	t.Run("uncached", func(t *testing.T) { againstKernel(t, Config{}, "/", cases) })
	t.Run("cached", func(t *testing.T) { againstKernelCached(t, Config{}, "/", cases) })
}

// TestPathHandlersDirfdMoved: a dirfd whose directory is renamed, and a
// new directory made at its old path, resolve ".." from where each
// directory is now, as in the kernel: the tracer keeps the guest path of
// a dirfd's host directory (dirGuestIn), and must never answer with the
// path of the directory that was there before.
func TestPathHandlersDirfdMoved(t *testing.T) {
	mv := func(from, to string) tt.Step {
		return tt.Call("renameat", cwdFD, tt.Str(from), cwdFD, tt.Str(to))
	}
	mkdir := func(p string) tt.Step { return tt.Call("mkdirat", cwdFD, tt.Str(p), tt.Int(0o755)) }
	dir := unix.O_RDONLY | unix.O_DIRECTORY
	cases := []kcase{
		{name: "open sub", step: openat(cwdFD, "/dir/sub", int64(dir)), how: cmpSign}, // 0
		{name: "dotdot", step: fstatat(tt.Ret(0), "../file", 0), stat: []int{2}},
		{name: "dotdot again", step: fstatat(tt.Ret(0), "../file", 0), stat: []int{2}},
		{name: "move its parent", step: mv("/dir", "/moved")},
		{name: "dotdot moved", step: fstatat(tt.Ret(0), "../file", 0), stat: []int{2}},
		{name: "dotdot dotdot moved", step: tt.Call("faccessat", tt.Ret(0), tt.Str("../../moved/file"), tt.Int(0), tt.Int(0))},
		{name: "old path again", step: mkdir("/dir")},
		{name: "old path sub", step: mkdir("/dir/sub")},
		{name: "open new sub", step: openat(cwdFD, "/dir/sub", int64(dir)), how: cmpSign}, // 8
		{name: "new dotdot", step: fstatat(tt.Ret(8), "../file", 0)},
		{name: "first still moved", step: fstatat(tt.Ret(0), "../file", 0), stat: []int{2}},
		{name: "move it into the new", step: mv("/moved/sub", "/dir/sub/in")},
		{name: "dotdot inside", step: fstatat(tt.Ret(0), "../../file", 0)},
		{name: "dotdot inside dir", step: fstatat(tt.Ret(0), "..", 0), stat: []int{2}},
		{name: "swap back", step: mv("/dir/sub/in", "/moved/sub")},
		{name: "dotdot back", step: fstatat(tt.Ret(0), "../file", 0), stat: []int{2}},
		{name: "close", step: closeStep(0)},
		{name: "close new", step: closeStep(8)},
	}
	t.Run("uncached", func(t *testing.T) { againstKernel(t, Config{}, "/", cases) })
	t.Run("cached", func(t *testing.T) { againstKernelCached(t, Config{}, "/", cases) })
}

// TestPathHandlersLegacy: the calls arm64 lacks, against the kernel.
func TestPathHandlersLegacy(t *testing.T) {
	if !tt.Has("stat") {
		t.Skip("no legacy path calls on this architecture")
	}
	cases := []kcase{
		{name: "access", step: tt.Call("access", tt.Str("/rel"), tt.Int(0))},
		{name: "stat", step: tt.Call("stat", tt.Str("/link/file"), tt.Out(statBufSize)), stat: []int{1}},
		{name: "lstat", step: tt.Call("lstat", tt.Str("/link"), tt.Out(statBufSize)), stat: []int{1}},
		{name: "open", step: tt.Call("open", tt.Str("/mnt/inside"), tt.Int(unix.O_RDONLY|unix.O_CLOEXEC)), how: cmpSign},
		{name: "close", step: closeStep(3)},
		{name: "creat", step: tt.Call("creat", tt.Str("/tmp/c"), tt.Int(0o600)), how: cmpSign},
		{name: "close creat", step: closeStep(5)},
		{name: "readlink", step: tt.Call("readlink", tt.Str("/escape"), tt.Out(64), tt.Int(64)), mem: []int{1}},
		{name: "mkdir", step: tt.Call("mkdir", tt.Str("/tmp/d"), tt.Int(0o700))},
		{name: "rmdir", step: tt.Call("rmdir", tt.Str("/tmp/d"))},
		{name: "rmdir missing", step: tt.Call("rmdir", tt.Str("/tmp/d"))},
		{name: "symlink", step: tt.Call("symlink", tt.Str("c"), tt.Str("/tmp/s"))},
		{name: "link", step: tt.Call("link", tt.Str("/tmp/c"), tt.Str("/tmp/h"))},
		{name: "rename", step: tt.Call("rename", tt.Str("/tmp/h"), tt.Str("/tmp/h2"))},
		{name: "unlink", step: tt.Call("unlink", tt.Str("/tmp/h2"))},
		{name: "chmod", step: tt.Call("chmod", tt.Str("/tmp/s"), tt.Int(0o640))},
		{name: "lchown", step: tt.Call("lchown", tt.Str("/tmp/s"), tt.Int(-1), tt.Int(-1))},
		{name: "chown missing", step: tt.Call("chown", tt.Str("/missing"), tt.Int(-1), tt.Int(-1))},
		{name: "utimes", step: tt.Call("utimes", tt.Str("/tmp/c"), tt.Int(0))},
		{name: "mknod", step: tt.Call("mknod", tt.Str("/tmp/f"), tt.Int(unix.S_IFIFO|0o600), tt.Int(0))},
		{name: "lstat fifo", step: tt.Call("lstat", tt.Str("/tmp/f"), tt.Out(statBufSize)), stat: []int{1}},
	}
	againstKernel(t, Config{}, "/", cases)
}

// TestPathHandlersRelativeCwd: relative paths from a guest cwd in a
// subdirectory and in the bind.
func TestPathHandlersRelativeCwd(t *testing.T) {
	for _, cwd := range []string{"/dir", "/mnt", "/dir/sub"} {
		t.Run(cwd, func(t *testing.T) {
			cases := []kcase{
				{name: "dot", step: access(".")},
				{name: "file", step: access("file")},
				{name: "inside", step: access("inside")},
				{name: "up", step: access("../etc/hostname")},
				{name: "up up", step: access("../../etc/hostname")},
				{name: "up symlink", step: access("up")},
				{name: "readlink cwd", step: tt.Call("readlinkat", cwdFD, tt.Str("/proc/self/cwd"), tt.Out(256), tt.Int(256)), mem: []int{2}},
				{name: "getcwd", step: tt.Call("getcwd", tt.Out(256), tt.Int(256)), mem: []int{0}},
			}
			againstKernel(t, Config{}, cwd, cases)
		})
	}
}

// TestOnlyDots: the relative paths that name their starting directory
// itself ("." components and slashes only), which pinnable leaves to the
// kernel.
func TestOnlyDots(t *testing.T) {
	for p, want := range map[string]bool{
		"": true, ".": true, "./": true, "./.": true, ".//./": true, "/.": true,
		"..": false, "./..": false, "../.": false, "...": false, "a": false, ".a": false, "./.x": false, "a/.": false,
	} {
		if got := onlyDots(p); got != want {
			t.Errorf("onlyDots(%q) = %v, want %v", p, got, want)
		}
	}
}

// TestPathHandlersFileBindPoint: rmdir of a file's bind point is ENOTDIR and unlink of it
// EBUSY, in the kernel's order (may_delete before the mount point's EBUSY).
func TestPathHandlersFileBindPoint(t *testing.T) {
	fileBind := func(g *guestFS) {
		src := filepath.Join(filepath.Dir(g.root), "bound-file")
		mustWrite(t, src, "f")
		g.addBind(t, src, "/mf")
	}
	cases := []kcase{
		{name: "rmdir a file bind point", step: tt.Call("unlinkat", cwdFD, tt.Str("/mf"), tt.Int(unix.AT_REMOVEDIR))},
		{name: "unlink a file bind point", step: tt.Call("unlinkat", cwdFD, tt.Str("/mf"), tt.Int(0))},
		{name: "rename onto it", step: tt.Call("renameat", cwdFD, tt.Str("/dir/file"), cwdFD, tt.Str("/mf"))},
		{name: "rename a directory onto it", step: tt.Call("renameat", cwdFD, tt.Str("/dir/sub"), cwdFD, tt.Str("/mf"))},
		{name: "stat it", step: fstatat(cwdFD, "/mf", 0), stat: []int{2}},
	}
	againstKernelIn(t, Config{}, "/", fileBind, cases)
}
