package emul

import (
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/pathmap"
	"github.com/droidroot/droidroot/tracer"
)

// atFDCWDReg is unix.AT_FDCWD as a 64-bit argument register holds it
// (sign-extended); compare a dirfd argument with int32(c.Arg(i)) ==
// unix.AT_FDCWD.
const atFDCWDReg uint64 = 1<<64 + unix.AT_FDCWD

// follow gives the pathmap lookup flags for a path argument's final
// component: Follow, nothing (act on a symlink itself) or Entry (act on the
// directory entry: never followed, mount points reported).
type follow func(c *tracer.Call, guest string) pathmap.Flags

func always(*tracer.Call, string) pathmap.Flags { return pathmap.Follow }
func never(*tracer.Call, string) pathmap.Flags  { return 0 }
func entry(*tracer.Call, string) pathmap.Flags  { return pathmap.Entry }

// unlessFlag follows unless flag is set in argument i (AT_SYMLINK_NOFOLLOW).
func unlessFlag(i int, flag uint64) follow {
	return func(c *tracer.Call, _ string) pathmap.Flags {
		if c.Arg(i)&flag == 0 {
			return pathmap.Follow
		}
		return 0
	}
}

// ifFlag follows only when flag is set in argument i (AT_SYMLINK_FOLLOW).
func ifFlag(i int, flag uint64) follow {
	return func(c *tracer.Call, _ string) pathmap.Flags {
		if c.Arg(i)&flag != 0 {
			return pathmap.Follow
		}
		return 0
	}
}

// openFlags is open(2)'s rule for the final component of guest.
func openFlags(fl uint64, guest string) pathmap.Flags {
	switch {
	case fl&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL,
		fl&unix.O_CREAT != 0 && strings.HasSuffix(guest, "/"):
		return pathmap.Entry
	case fl&unix.O_NOFOLLOW != 0:
		return 0
	}
	return pathmap.Follow
}

// openFollow applies openFlags to the flags in argument i.
func openFollow(i int) follow {
	return func(c *tracer.Call, guest string) pathmap.Flags { return openFlags(c.Arg(i), guest) }
}

// pathArg describes one path argument of a syscall.
type pathArg struct {
	dirfd  int // argument index of the directory fd, -1 for AT_FDCWD
	path   int // argument index of the path pointer
	follow follow
	// emptyFlag: argument index and flag (AT_EMPTY_PATH) under which an
	// empty path means the dirfd itself; -1 when not applicable.
	emptyArg  int
	emptyFlag uint64
	// nullOK: a NULL path means "operate on dirfd" (utimensat).
	nullOK bool
	// raw: an emulated hard link's name is not replaced by its data file
	// even when the call acts on the final component itself (link).
	raw bool
}

// pathArgAt is the path argument in argument path, resolved from the
// current directory, its last component followed as f says.
func pathArgAt(path int, f follow) pathArg {
	return pathArg{dirfd: -1, path: path, follow: f, emptyArg: -1}
}

// dirfdPathArg is the path argument in argument path, resolved from the
// directory fd in argument dirfd, its last component followed as f says.
func dirfdPathArg(dirfd, path int, f follow) pathArg {
	return pathArg{dirfd: dirfd, path: path, follow: f, emptyArg: -1}
}
func (a pathArg) empty(arg int, flag uint64) pathArg { a.emptyArg, a.emptyFlag = arg, flag; return a }
func (a pathArg) null() pathArg                      { a.nullOK = true; return a }
func (a pathArg) rawName() pathArg                   { a.raw = true; return a }

// emptyAlways marks a path argument whose empty value always means the
// dirfd itself (readlinkat).
const emptyAlways = -2

// translated is the outcome of translating one path argument.
type translated struct {
	guest string // the path as the guest gave it
	host  string // the host path handed to the kernel
	skip  bool   // left untouched (empty path with AT_EMPTY_PATH, NULL)
	// keep: a relative path the kernel resolves to res.Host by itself
	// from the directory the guest named (pathmap's Result.Literal): left
	// untouched unless a handler changes host, so no copy is made and a
	// directory deeper than PATH_MAX works as in the kernel.
	keep bool
	res  pathmap.Result
	// pinned is host's name below its pinned parent (kernelName), or
	// host itself pinned (pathmap's PinnedFile), when pinnedHost is host.
	pinned, pinnedHost string
	// follows: the kernel follows the last component (pathmap.Follow).
	follows bool
	// missing: the last component followed is not there (pathmap's
	// PinnedFile found none): the kernel may create it (open's O_CREAT).
	missing bool
}

// kernelPath is the path to hand to the kernel for t.host: its relative
// form from the directory the guest named (pathmap's Result.Rel) when
// t.host is the lookup's own and too long for the kernel, else t.host.
func (t translated) kernelPath() string {
	if t.res.Rel != "" && t.host == t.res.Host {
		return t.res.Rel
	}
	return t.host
}

// translate reads and translates path argument a. It returns an errno the
// call must fail with, or 0.
func translate(c *tracer.Call, a pathArg, extra pathmap.Flags) (translated, unix.Errno) {
	return translateIn(c, a, extra, &pathmap.Batch{})
}

// staleTries bounds the lookups of one path argument whose parent directory
// changed between the lookup and its pinning (pathmap.Stale).
const staleTries = 4

// translateIn is translate with its lookups in batch b: the path arguments
// of one call share one (see pathmap.Batch). It also pins the host path's
// parent directory (kernelName), and for a call that follows the last
// component the file itself (pathmap's PinnedFile, its descriptor held
// until the kernel has run the call: Call.HoldFd), looking the path up
// again when either changed since the lookup, which saw it before the
// change.
func translateIn(c *tracer.Call, a pathArg, extra pathmap.Flags, b *pathmap.Batch) (translated, unix.Errno) {
	for try := 1; ; try++ {
		t, errno := translateOnce(c, a, extra, b)
		if errno != 0 || !pinnable(c, t) {
			return t, errno
		}
		var name string
		var pin pathmap.Pin
		var e unix.Errno
		switch {
		case t.follows:
			// The last component too: a symlink swapped in for it after
			// the lookup must not be followed (issue 18).
			var fd int
			if name, fd, pin, e = c.Mapper().PinnedFile(t.host); fd >= 0 {
				c.HoldFd(fd)
			}
		case t.keep && t.host == t.res.Host && !strings.Contains(t.guest, "/"):
			// One name in the cwd or dirfd, which the kernel resolves in
			// the directory it holds (the one the lookup checked: the
			// cwd's path is watched, a dirfd's read back), with nothing
			// before it to swap, and not followed: a copy of the guest's
			// own, which no magic link makes dearer for the kernel.
			t.pinned, t.pinnedHost = t.guest, t.host
			return t, 0
		default:
			name, pin, e = c.Mapper().PinnedName(t.host)
		}
		switch {
		case pin == pathmap.Pinned:
			t.pinned, t.pinnedHost = name, t.host
			t.missing = t.follows && e == unix.ENOENT
		case pin == pathmap.Stale && try < staleTries:
			b = &pathmap.Batch{} // see the change
			continue
		case pin == pathmap.Stale && e != 0:
			return translated{}, e
		case pin == pathmap.Stale:
			return translated{}, unix.ENOENT // it changed back and forth all along
		}
		return t, 0
	}
}

// translateOnce looks path argument a up once.
func translateOnce(c *tracer.Call, a pathArg, extra pathmap.Flags, b *pathmap.Batch) (translated, unix.Errno) {
	addr := c.Arg(a.path)
	if addr == 0 && (a.nullOK || a.emptyArg >= 0 && c.Arg(a.emptyArg)&a.emptyFlag != 0) {
		// NULL, where allowed: as an empty path with AT_EMPTY_PATH it names
		// the dirfd (fstatat and statx from Linux 6.11; older kernels and
		// other calls answer EFAULT): the kernel decides.
		return translated{skip: true}, 0
	}
	guest, err := c.ReadPath(addr)
	if err != nil {
		return translated{}, err.(unix.Errno)
	}
	if guest == "" {
		if a.emptyArg == emptyAlways || (a.emptyArg >= 0 && c.Arg(a.emptyArg)&a.emptyFlag != 0) {
			return translated{guest: guest, skip: true}, 0
		}
		return translated{}, unix.ENOENT
	}
	flags := a.follow(c, guest) | extra
	res, errno := lookupIn(c, a.dirfd, guest, flags, b)
	l2s := emulationOf(c).l2s
	if errno == unix.ENOENT && l2s != nil && flags&pathmap.Follow != 0 {
		// A hard link termux proot made points at a host path.
		if r, e := lookupIn(c, a.dirfd, guest, flags&^pathmap.Follow, b); e == 0 {
			if d, ok := l2sName(c, r.Host); ok {
				res, errno = r, 0
				res.Host, res.Literal, res.Rel = d, false, ""
			}
		}
	}
	if errno != 0 {
		return translated{}, errno
	}
	if l2s != nil && !a.raw && flags&(pathmap.Follow|pathmap.Entry) == 0 {
		if h := l2s.substitute(c, res.Host); h != res.Host {
			res.Host, res.Literal, res.Rel = h, false, ""
		}
	}
	keep := res.Literal && guest[0] != '/'
	return translated{guest: guest, host: res.Host, keep: keep, res: res, follows: flags&pathmap.Follow != 0}, 0
}

// tracerPath is the path for the tracer's own system calls on what the
// kernel finds with t (argument a of the calling thread): t.host, or when
// that is too long, the relative path the kernel is given (the guest's own
// when t.keep, else pathmap's Result.Rel) below /proc/<tid>/cwd or the
// dirfd's /proc/<tid>/fd/<fd>, or Result.Rel itself when it is absolute
// (an anchor of the tracer's).
func tracerPath(c *tracer.Call, a pathArg, t translated) string {
	if len(t.host) < tracer.PathMax || t.host != t.res.Host {
		return t.host
	}
	rel := t.res.Rel
	if t.keep {
		rel = t.guest
	}
	if rel == "" {
		return t.host
	}
	if strings.HasPrefix(rel, "/") { // through an anchor: the tracer's own /proc/<pid>/fd/N
		return rel
	}
	return nearPath(c, a, rel)
}

// nearPath is the caller's relative path rel as the tracer names it from
// the caller's cwd, or from the dirfd of argument a: below /proc/<tid>/cwd
// or /proc/<tid>/fd/<fd>, which the kernel resolves without searching the
// directory's ancestors.
func nearPath(c *tracer.Call, a pathArg, rel string) string {
	dir := procCwd(c.Tid())
	if a.dirfd >= 0 && int32(c.Arg(a.dirfd)) != unix.AT_FDCWD {
		dir = procFd(c.Tid(), int(int32(c.Arg(a.dirfd))))
	}
	return dir + "/" + rel
}

// resolveAt translates guest path relative to dirfd argument index (-1:
// the cwd) for the calling thread.
func resolveAt(c *tracer.Call, dirfdArg int, guest string, fol bool) (string, unix.Errno) {
	var f pathmap.Flags
	if fol {
		f = pathmap.Follow
	}
	r, errno := lookupAt(c, dirfdArg, guest, f)
	return r.Host, errno
}

// lookupAt is resolveAt with pathmap flags and the full result.
func lookupAt(c *tracer.Call, dirfdArg int, guest string, flags pathmap.Flags) (pathmap.Result, unix.Errno) {
	return lookupIn(c, dirfdArg, guest, flags, &pathmap.Batch{})
}

// lookupIn is lookupAt with its lookups (the dirfd's guest name, the path)
// in batch b.
func lookupIn(c *tracer.Call, dirfdArg int, guest string, flags pathmap.Flags, b *pathmap.Batch) (pathmap.Result, unix.Errno) {
	pr := pathProc(c)
	pr.Batch = b
	var cwd, dirHost string
	dirExact := false
	dirfd := -1
	if dirfdArg >= 0 {
		dirfd = int(int32(c.Arg(dirfdArg)))
	}
	switch {
	case strings.HasPrefix(guest, "/"):
	case dirfdArg < 0 || int32(c.Arg(dirfdArg)) == unix.AT_FDCWD:
		cwd = guestCwdIn(c, b)
		pr.KernelCwd = !c.FS().Lost // the kernel's cwd is cwd's host directory
	default:
		var errno unix.Errno
		if dirHost, errno = fdDirHost(c, dirfd); errno != 0 {
			return pathmap.Result{}, errno
		}
		if strings.HasSuffix(dirHost, " (deleted)") {
			// Removed since it was opened: no walk, no pin reaches it,
			// but a file is the kernel's ENOTDIR all the same.
			if errno := isDir(c, dirfd, dirHost); errno != 0 {
				return pathmap.Result{}, errno
			}
		}
		cwd, dirExact = dirGuestIn(c, dirHost, b)
		if !dirExact {
			cwd = dirHost
		} else {
			// A long Host is then given relative to the dirfd.
			pr.Dir, pr.DirFd = dirHost, dirfd
		}
	}
	r, err := c.Mapper().Lookup(pr, cwd, guest, flags)
	if dirHost != "" && (err != nil || !r.Literal || !dirExact) {
		// The kernel's first check, which a path it resolves itself
		// from the dirfd (Literal) leaves to it.
		if errno := isDir(c, dirfd, dirHost); errno != 0 {
			return pathmap.Result{}, errno
		}
		r.Literal = r.Literal && dirExact
	}
	if err != nil {
		if e, ok := err.(unix.Errno); ok {
			return r, e
		}
		return r, unix.EINVAL
	}
	host := r.Host
	if flags&pathmap.Follow != 0 {
		r.Host = procExe(c, r.Host)
	}
	r.Host = unameRedirect(c, r.Host)
	if r.Host != host {
		r.Literal, r.Rel = false, ""
	}
	return r, 0
}

// dirGuests remembers toGuestIn's answers for the host directories of
// guest dirfds: a walk of the guest path per call otherwise. An answer is
// used again while no name on the directory's host path has changed since
// it was made (pathmap's DirToken, as for the cwd), so it is the walk's own
// answer: the bindings do not change, and every other name the walk reads
// is on that path. Directories whose names the lookup cache does not watch
// get no entry. Used by the tracer's one goroutine only.
type dirGuests struct {
	m map[string]dirGuest
}

// dirGuest is one of dirGuests' answers.
type dirGuest struct {
	guest string
	exact bool
	tok   any
}

// maxDirGuests bounds dirGuests: it starts again empty when full.
const maxDirGuests = 256

// dirGuestIn is toGuestIn for dirHost, the host directory of a guest dirfd
// as the kernel reads it back, kept in e.dirGuests.
func dirGuestIn(c *tracer.Call, dirHost string, b *pathmap.Batch) (string, bool) {
	e := emulationOf(c)
	if e == &noEmulation {
		return toGuestIn(c, dirHost, b)
	}
	m := c.Mapper()
	if d, ok := e.dirGuests.m[dirHost]; ok {
		if m.DirUnchanged(dirHost, d.tok, b) {
			return d.guest, d.exact
		}
		delete(e.dirGuests.m, dirHost)
	}
	// The token first: a change made during the walk is then reported.
	tok := m.DirToken(dirHost)
	guest, exact := toGuestIn(c, dirHost, b)
	if tok != nil {
		if e.dirGuests.m == nil || len(e.dirGuests.m) >= maxDirGuests {
			e.dirGuests.m = make(map[string]dirGuest)
		}
		e.dirGuests.m[dirHost] = dirGuest{guest, exact, tok}
	}
	return guest, exact
}

// fdGuestPath returns the guest path of the directory open as fd in the
// calling process, or the errno the kernel gives for a bad dirfd.
func fdGuestPath(c *tracer.Call, fd int) (string, unix.Errno) {
	host, errno := fdDirHost(c, fd)
	if errno == 0 {
		errno = isDir(c, fd, host)
	}
	if errno != 0 {
		return "", errno
	}
	return guestOrHost(c, host), 0
}

// fdDirHost is the host path of what fd of the caller is open on, with
// the kernel's EBADF, and ENOTDIR for what has no path (a pipe, socket,
// anon inode...); whether it is a directory is left to isDir.
func fdDirHost(c *tracer.Call, fd int) (string, unix.Errno) {
	host, errno := fdHostPath(c, fd)
	if errno == 0 && !strings.HasPrefix(host, "/") {
		return "", unix.ENOTDIR
	}
	return host, errno
}

// isDir gives ENOTDIR when the caller's descriptor fd, whose host path
// reads host, is not a directory (0 when it is, or when it cannot be told:
// the kernel says what it says). The host path is stat'ed, or, when that
// fails (a file removed since it was opened reads "... (deleted)"), the
// descriptor's /proc link, which leads to the open file itself.
func isDir(c *tracer.Call, fd int, host string) unix.Errno {
	var st unix.Stat_t
	err := unix.Stat(host, &st)
	if err != nil {
		err = unix.Stat(procFd(c.Tid(), fd), &st)
	}
	if err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return unix.ENOTDIR
	}
	return 0
}

// fdFilePath returns the guest path of the file open as fd.
func fdFilePath(c *tracer.Call, fd int) (string, unix.Errno) {
	host, errno := fdHostPath(c, fd)
	if errno != 0 {
		return "", errno
	}
	return guestOrHost(c, host), 0
}

// fdHostPath reads what /proc/<tid>/fd/<fd> of the caller points at.
func fdHostPath(c *tracer.Call, fd int) (string, unix.Errno) {
	if fd < 0 {
		return "", unix.EBADF
	}
	host, err := readlinkDir(c, procFd(c.Tid(), fd))
	if err != nil {
		return "", unix.EBADF
	}
	return host, 0
}

// guestOrHost is toGuest, or host unchanged when it lies outside the guest.
func guestOrHost(c *tracer.Call, host string) string {
	if g, ok := toGuest(c, host); ok {
		return g
	}
	return host
}

// readlinkHost reads a symlink on the host.
func readlinkHost(path string) (string, error) {
	var buf [unix.PathMax]byte
	n, err := unix.Readlink(path, buf[:])
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// procPid parses "/proc/<pid>/<rest>", returning pid and rest.
func procPid(host string) (int, string, bool) {
	s, ok := strings.CutPrefix(host, "/proc/")
	if !ok {
		return 0, "", false
	}
	num, rest, _ := strings.Cut(s, "/")
	pid, err := strconv.Atoi(num)
	if err != nil {
		return 0, "", false
	}
	return pid, rest, true
}

// procExe turns a host /proc/<pid>/exe of a traced process (which the
// kernel would resolve to the loader) into the program's host path.
func procExe(c *tracer.Call, host string) string {
	pid, rest, ok := procPid(host)
	if !ok || (rest != "exe" && !strings.HasPrefix(rest, "task/")) {
		return host
	}
	if strings.HasPrefix(rest, "task/") {
		_, after, _ := strings.Cut(rest[len("task/"):], "/")
		if after != "exe" {
			return host
		}
	}
	if pr := c.Tracer().Process(pid); pr != nil && pr.ExeHost != "" {
		return pr.ExeHost
	}
	return host
}

// rewrite makes argument i point at the name of t's host path the kernel
// is given (kernelName), unless the guest's own path is left to it.
func rewrite(c *tracer.Call, i int, t translated) unix.Errno {
	name, ok := kernelName(c, t)
	if !ok {
		return 0
	}
	addr, err := c.PushString(name)
	if err != nil {
		return unix.EFAULT
	}
	c.SetArg(i, addr)
	return 0
}

// pinnable tells whether t's host path may be pinned (kernelName): not a
// magic link left to the kernel, nor a path the kernel resolves by itself
// that names the directory it starts from ("." of a cwd that may have been
// removed: nothing on it can be swapped), nor any path of a thread that
// may have left the tracer's ids (pincreds.go), nor any path of a process
// whose loader could not open the tracer's scratch area through the
// tracer's /proc/<pid>/fd (Call.ScratchMissing): a pinned name would fail
// the same way; nor any path at all when the guest's view is the host's own
// (pathmap's HostView: rootfs "/" with no binding that hides a host file),
// where a walk in the host's view reaches nothing the guest could not name.
func pinnable(c *tracer.Call, t translated) bool {
	if emulationOf(c).cfg.NoPin || t.skip || t.res.Magic && t.host == t.res.Host || unpinned(c) || c.Mapper().HostView() || c.ScratchMissing() {
		return false
	}
	return !(t.keep && t.host == t.res.Host && onlyDots(t.guest))
}

// onlyDots tells whether relative path p names its starting directory
// itself: "." components and slashes only.
func onlyDots(p string) bool {
	for i := 0; i < len(p); i++ {
		// Every byte a slash or a dot, and no dot beside another.
		if p[i] != '/' && (p[i] != '.' || i > 0 && p[i-1] == '.') {
			return false
		}
	}
	return true
}

// kernelName is the path the kernel must be given for t instead of the
// guest's own (ok false: the guest's is left as it is). It is t's last
// component below its parent directory as the lookup found it, held open
// by the mapper (pathmap's PinnedName: "/proc/<tracer>/fd/N/last"), so
// that no directory on the path can be swapped with a symlink between the
// lookup and the kernel's walk (issue 18); the guest's own relative path
// is not left in its memory either, where another thread could change it
// before the kernel reads it again. Where the parent cannot be pinned (no
// lookup cache, procfs and other filesystems the cache does not watch, a
// magic link left to the kernel), it is t.kernelPath(), or nothing for a
// path the kernel resolves by itself (t.keep).
func kernelName(c *tracer.Call, t translated) (string, bool) {
	if t.skip {
		return "", false
	}
	if t.pinned != "" && t.pinnedHost == t.host {
		return t.pinned, true
	}
	if pinnable(c, t) {
		// A host path a handler changed after the lookup.
		if p, pin, _ := c.Mapper().PinnedName(t.host); pin == pathmap.Pinned {
			return p, true
		}
	}
	if t.keep && t.host == t.res.Host {
		return "", false
	}
	k := t.kernelPath()
	return k, k != t.guest
}

// pathHandler translates the given path arguments and lets the kernel run
// the call on the host paths.
func pathHandler(args ...pathArg) tracer.Handler { return pathHandlerAnswering(nil, args...) }

// pathHandlerAnswering is pathHandler where answer, if set, may answer the
// call in the tracer from its translated paths (and reports whether it
// did) instead of handing them to the kernel.
func pathHandlerAnswering(answer func(*tracer.Call, []translated) bool, args ...pathArg) tracer.Handler {
	return tracer.Handler{Enter: func(c *tracer.Call) {
		var ts [2]translated
		var b pathmap.Batch
		prefetch(c, args)
		for k, a := range args {
			t, errno := translateIn(c, a, 0, &b)
			if errno != 0 {
				c.Fail(errno)
				return
			}
			ts[k] = t
		}
		if answer != nil && answer(c, ts[:len(args)]) {
			return
		}
		writeArgs(c, args, ts[:len(args)])
	}}
}

// entryHandler is pathHandler for calls that remove, rename or link
// directory entries (unlink, rmdir, rename, link and their *at forms), with
// the kernel's answers for real bind mounts, in its order: removing a mount
// point is EBUSY; a rename checks its parents' mounts (EXDEV), then that the
// source exists (ENOENT), then that neither entry is a mount point (EBUSY);
// a link checks that the source exists, then that the new name does not
// (EEXIST: a mount point always does), then the mounts (EXDEV).
func entryHandler(args ...pathArg) tracer.Handler {
	return tracer.Handler{Enter: func(c *tracer.Call) {
		var ts [2]translated
		var b pathmap.Batch
		prefetch(c, args)
		for k, a := range args {
			t, errno := translateIn(c, a, pathmap.WantGuest, &b)
			if errno != 0 {
				if k == 1 && args[0].follow(c, ts[0].guest)&pathmap.Entry == 0 && !ts[0].skip {
					// link: the kernel looks the source up first
					// (its lookup here checks no last component).
					if e := linkSourceErrno(c, args[0], ts[0]); e != 0 {
						errno = e
					}
				}
				c.Fail(errno)
				return
			}
			ts[k] = t
		}
		if errno := entryErrno(c, args, ts[:len(args)]); errno != 0 {
			c.Fail(errno)
			return
		}
		noteEntries(c, ts[:len(args)])
		writeArgs(c, args, ts[:len(args)])
	}}
}

// entryErrno is what the kernel answers an entry call whose arguments
// translate to ts because of mount points (see entryHandler), or 0 when the
// call can go to the kernel. Where it answers EXDEV, EBUSY or EEXIST for a
// mount the host does not have, it first makes the checks the kernel makes
// before that one (do_renameat2, do_linkat): a missing or non-directory
// parent, a missing source, an existing new name.
func entryErrno(c *tracer.Call, args []pathArg, ts []translated) unix.Errno {
	mp := func(k int) bool { return ts[k].res.MountPoint && args[k].follow(c, ts[k].guest)&pathmap.Entry != 0 }
	path := func(k int) string { return tracerPath(c, args[k], ts[k]) }
	// The kernel's lookup of argument k's parent: none for one name in
	// the cwd or dirfd, which the kernel holds (a removed cwd too); a new
	// name (creates) cannot be made in a removed directory, though.
	parentErr := func(k int, creates bool) unix.Errno {
		if strings.Contains(strings.TrimRight(ts[k].guest, "/"), "/") {
			return parentErrno(path(k))
		}
		dir := procCwd(c.Tid())
		if a := args[k].dirfd; a >= 0 && int32(c.Arg(a)) != unix.AT_FDCWD {
			dir = procFd(c.Tid(), int(int32(c.Arg(a))))
		}
		var st unix.Stat_t
		if creates && unix.Stat(dir, &st) == nil && st.Nlink == 0 {
			return unix.ENOENT
		}
		return 0
	}
	if len(args) == 1 {
		if !mp(0) {
			return 0
		}
		// unlink of a directory is EISDIR, rmdir of a file ENOTDIR
		// (may_delete), before the mount point's EBUSY.
		var st unix.Stat_t
		dir := unix.Lstat(path(0), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
		nr := c.Nr()
		rmdir := nr == nrOf("rmdir") || nr == nrOf("unlinkat") && c.Arg(2)&unix.AT_REMOVEDIR != 0
		switch {
		case rmdir && !dir:
			return unix.ENOTDIR
		case !rmdir && dir:
			return unix.EISDIR
		}
		return unix.EBUSY
	}
	if ts[0].skip || ts[1].skip {
		return 0
	}
	m := c.Mapper()
	// The mount an entry's name is in: its parent's, for a mount point.
	parentMount := func(k int) string {
		if ts[k].res.MountPoint {
			return mountOf(m, filepath.Dir(ts[k].res.Guest))
		}
		return mountOf(m, ts[k].res.Guest)
	}
	if args[0].follow(c, ts[0].guest)&pathmap.Entry != 0 { // rename: the source is a name too
		cross := parentMount(0) != parentMount(1)
		if !cross && !mp(0) && !mp(1) {
			return 0
		}
		// Both parents are looked up first.
		if e := parentErr(0, false); e != 0 {
			return e
		}
		if e := parentErr(1, false); e != 0 {
			return e
		}
		if cross {
			return unix.EXDEV
		}
		// A mount point on either side: the source must be there, a
		// rename of a file onto itself does nothing, and a file and a
		// directory swap no places (vfs_rename's may_delete), before the
		// mount is refused.
		var from, to unix.Stat_t
		if err := unix.Lstat(path(0), &from); err != nil {
			return err.(unix.Errno)
		}
		dirSt := func(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFDIR }
		if !dirSt(&from) && strings.HasSuffix(ts[1].guest, "/") {
			return unix.ENOTDIR // a file renamed to a name with a trailing slash
		}
		if unix.Lstat(path(1), &to) == nil {
			if from.Dev == to.Dev && from.Ino == to.Ino {
				return 0 // one file: the kernel's rename does nothing, and succeeds
			}
			switch {
			case dirSt(&from) && !dirSt(&to):
				return unix.ENOTDIR
			case !dirSt(&from) && dirSt(&to):
				return unix.EISDIR
			}
		}
		return unix.EBUSY
	}
	// link: the source is a file, on its own mount. The kernel looks the
	// source up, then the new name's parent, then refuses an existing new
	// name, then a link across mounts.
	if !mp(1) && mountOf(m, ts[0].res.Guest) == parentMount(1) {
		return 0
	}
	if e := linkSourceErrno(c, args[0], ts[0]); e != 0 {
		return e
	}
	dst := path(1)
	if e := parentErr(1, true); e != 0 {
		return e
	}
	// The name itself, of whatever type (a trailing slash does not make
	// the lookup follow it or want a directory there).
	name := strings.TrimRight(dst, "/")
	if name == "" {
		name = "/" // the root: there, as "." and ".." always are
	}
	switch e := lstatErrno(name, false); {
	case e == 0 || mp(1):
		return unix.EEXIST
	case e == unix.ENOENT && strings.HasSuffix(ts[1].guest, "/"):
		return unix.ENOENT // a new name with a trailing slash asks for a directory
	}
	return unix.EXDEV
}

// linkSourceErrno is what the kernel's lookup of a link's source (argument
// a, translated to t) answers: the lookup here checks no last component.
func linkSourceErrno(c *tracer.Call, a pathArg, t translated) unix.Errno {
	return lstatErrno(tracerPath(c, a, t), a.follow(c, t.guest)&pathmap.Follow != 0)
}

// lstatErrno is the errno of an lstat of host path p (a stat with follow),
// 0 when there is a file.
func lstatErrno(p string, follow bool) unix.Errno {
	var st unix.Stat_t
	var err error
	if follow {
		err = unix.Stat(p, &st)
	} else {
		err = unix.Lstat(p, &st)
	}
	if e, ok := err.(unix.Errno); ok {
		return e
	}
	return 0
}

// parentErrno is what the kernel's lookup of host path p's parent answers
// (its last component and trailing slashes taken off): 0 for a directory.
func parentErrno(p string) unix.Errno {
	p = strings.TrimRight(p, "/")
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return 0 // relative to a directory the kernel holds (tracerPath's anchors are absolute)
	}
	dir := p[:i+1] // "/" or "a/b/": the trailing slash makes a file ENOTDIR
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		if e, ok := err.(unix.Errno); ok {
			return e
		}
	}
	return 0
}

// mountOf names the mount a canonical guest path lies on: the deepest
// binding whose guest path contains it, or "" for the rootfs.
func mountOf(m *pathmap.Mapper, guest string) string {
	best := ""
	for _, b := range m.Bindings() {
		if len(b.Guest) > len(best) && (guest == b.Guest || strings.HasPrefix(guest, b.Guest+"/") || b.Guest == "/") {
			best = b.Guest
		}
	}
	return best
}

// prefetch reads a call's two path arguments with one system call.
func prefetch(c *tracer.Call, args []pathArg) {
	if len(args) == 2 {
		c.PrefetchPaths(c.Arg(args[0].path), c.Arg(args[1].path))
	}
}

// writeArgs points each path argument at its translated host path, with
// one write for all of them.
func writeArgs(c *tracer.Call, args []pathArg, ts []translated) {
	var idxA [2]int
	var hostsA [2]string
	idx, hosts := idxA[:0], hostsA[:0]
	for k := range args {
		if name, ok := kernelName(c, ts[k]); ok {
			idx, hosts = append(idx, k), append(hosts, name)
		}
	}
	switch len(idx) {
	case 0:
	case 1:
		addr, err := c.PushString(hosts[0])
		if err != nil {
			c.Fail(unix.EFAULT)
			return
		}
		c.SetArg(args[idx[0]].path, addr)
	default:
		addrs, err := c.PushStrings(hosts...)
		if err != nil {
			c.Fail(unix.EFAULT)
			return
		}
		for i, k := range idx {
			c.SetArg(args[k].path, addrs[i])
		}
	}
}
