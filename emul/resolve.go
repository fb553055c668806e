package emul

import (
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/pathmap"
	"github.com/droidroot/droidroot/tracer"
)

// scopedResult is what resolveScoped found: the host path to hand to the
// kernel, and whether the kernel may still have a link to follow (a procfs
// magic link in the last component): otherwise every link was resolved.
type scopedResult struct {
	host          string
	kernelFollows bool
}

// mountKey names the mount a guest path lies on: droidroot's binding
// (each is a mount in the guest) and the host mount below it (the host's
// own mounts inside the rootfs or a bind source, such as /dev/pts).
type mountKey struct {
	bind string
	mnt  uint64
}

// scopeWalk is the state of one resolveScoped walk, in canonical guest
// paths: the guest view (rootfs plus binds) is walked component by
// component the way the kernel's path walk does, with the checks
// RESOLVE_* flags add.
type scopeWalk struct {
	c       *tracer.Call
	resolve uint64
	root    string // "/" or, for RESOLVE_BENEATH / RESOLVE_IN_ROOT, the dirfd's directory
	cur     string // canonical guest path of the current directory
	isDir   bool
	links   int
	// rootSet mirrors the kernel's nd->root being taken: for scoped
	// lookups, absolute paths and after the first "..". Until then an
	// absolute symlink under RESOLVE_NO_XDEV is EXDEV whatever the mounts
	// (nd_jump_root compares the current mount with a root not yet set).
	rootSet bool
	// pendingAfterLink: the components left after a followed link.
	pendingAfterLink []string
	// curKey is the mount of cur, when curKeyOK.
	curKey   mountKey
	curKeyOK bool
}

// setCur moves to canonical guest path g, whose mount is k if known.
func (w *scopeWalk) setCur(g string, isDir bool, k mountKey, known bool) {
	w.cur, w.isDir, w.curKey, w.curKeyOK = g, isDir, k, known
}

// keyCur returns the mount of the current directory.
func (w *scopeWalk) keyCur() (mountKey, unix.Errno) {
	if w.curKeyOK {
		return w.curKey, 0
	}
	k, errno := w.key(w.cur, false)
	if errno == 0 {
		w.curKey, w.curKeyOK = k, true
	}
	return k, errno
}

// resolveScoped resolves guest path p relative to the dirfd in argument
// dirfdArg as openat2 with resolve flags would in a real chroot with the
// same bind mounts:
//   - RESOLVE_BENEATH: EXDEV for an absolute path or symlink, a ".." above
//     the dirfd, or any magic link;
//   - RESOLVE_IN_ROOT: the dirfd is "/": absolute paths and symlinks start
//     there and ".." stops there; magic links give EXDEV;
//   - RESOLVE_NO_SYMLINKS: ELOOP for any symlink followed (magic ones too);
//   - RESOLVE_NO_MAGICLINKS: ELOOP for a followed /proc/PID/{fd/N,exe,cwd,root,...};
//   - RESOLVE_NO_XDEV: EXDEV when the walk enters or leaves a mount (a
//     droidroot bind, or a host mount under the rootfs or a bind source),
//     by a component, "..", an absolute symlink or a magic link.
//
// followLast tells whether a symlink in the last component is followed.
func resolveScoped(c *tracer.Call, dirfdArg int, p string, resolve uint64, followLast bool) (scopedResult, unix.Errno) {
	abs := strings.HasPrefix(p, "/")
	if abs && resolve&resolveBeneath != 0 {
		return scopedResult{}, unix.EXDEV
	}
	start := "/"
	if !abs || resolve&resolveInRoot != 0 {
		start = guestCwd(c)
		if fd := int32(c.Arg(dirfdArg)); fd != unix.AT_FDCWD {
			dir, errno := fdGuestPath(c, int(fd))
			if errno != 0 {
				return scopedResult{}, errno
			}
			start = dir
		}
	}
	w := &scopeWalk{c: c, resolve: resolve, root: "/", cur: start, isDir: true, rootSet: abs}
	if resolve&(resolveBeneath|resolveInRoot) != 0 {
		w.root, w.rootSet = start, true
	}
	trailing := strings.HasSuffix(p, "/")
	if trailing {
		followLast = true
	}
	pending := strings.Split(p, "/")
	for len(pending) > 0 {
		name := pending[0]
		pending = pending[1:]
		last := true
		for _, rest := range pending {
			if rest != "" {
				last = false
				break
			}
		}
		if name == "" || name == "." {
			if !w.isDir {
				return scopedResult{}, unix.ENOTDIR
			}
			continue
		}
		if !w.isDir {
			return scopedResult{}, unix.ENOTDIR
		}
		if name == ".." {
			if errno := w.dotdot(); errno != 0 {
				return scopedResult{}, errno
			}
			continue
		}
		next := path.Join(w.cur, name)
		host, errno := w.host(next)
		if errno != 0 {
			return scopedResult{}, errno
		}
		var st unix.Stat_t
		if err := unix.Lstat(host, &st); err != nil {
			if err == unix.ENOENT && last {
				// A missing last component: the kernel creates it or
				// says ENOENT itself.
				return w.result(host, trailing), 0
			}
			return scopedResult{}, err.(unix.Errno)
		}
		mode := st.Mode & unix.S_IFMT
		if mode == unix.S_IFLNK && (!last || followLast) {
			done, res, errno := w.link(host, pending, last)
			if errno != 0 || done {
				return res, errno
			}
			pending = w.pendingAfterLink
			continue
		}
		var nextKey mountKey
		if w.resolve&resolveNoXdev != 0 {
			a, errno := w.keyCur()
			if errno != 0 {
				return scopedResult{}, errno
			}
			nextKey = mountKey{bind: mountOf(w.c.Mapper(), next), mnt: hostMount(host, false)}
			if a != nextKey {
				return scopedResult{}, unix.EXDEV
			}
		}
		w.setCur(next, mode == unix.S_IFDIR, nextKey, w.resolve&resolveNoXdev != 0)
	}
	host, errno := w.host(w.cur)
	if errno != 0 {
		return scopedResult{}, errno
	}
	return w.result(host, trailing), 0
}

func (w *scopeWalk) result(host string, trailing bool) scopedResult {
	if trailing && !strings.HasSuffix(host, "/") {
		host += "/"
	}
	return scopedResult{host: unameRedirect(w.c, host)}
}

// host returns the host path of canonical guest path g, the last
// component not followed.
func (w *scopeWalk) host(g string) (string, unix.Errno) {
	r, err := w.c.Mapper().Lookup(w.c.PathProc(), "/", g, 0)
	if err != nil {
		if e, ok := err.(unix.Errno); ok {
			return "", e
		}
		return "", unix.EINVAL
	}
	return r.Host, 0
}

// key returns the mount of canonical guest path g (following a last
// magic link when follow is set).
func (w *scopeWalk) key(g string, follow bool) (mountKey, unix.Errno) {
	host, errno := w.host(g)
	if errno != 0 {
		return mountKey{}, errno
	}
	return mountKey{bind: mountOf(w.c.Mapper(), g), mnt: hostMount(host, follow)}, 0
}

// hostMount identifies the host mount of host path: its mount id, or
// its device where statx has no STATX_MNT_ID (kernels before 5.8).
func hostMount(host string, follow bool) uint64 {
	flags := unix.AT_SYMLINK_NOFOLLOW
	if follow {
		flags = 0
	}
	var sx unix.Statx_t
	if unix.Statx(unix.AT_FDCWD, host, flags, unix.STATX_MNT_ID, &sx) != nil {
		return 0
	}
	if sx.Mask&unix.STATX_MNT_ID != 0 {
		return sx.Mnt_id
	}
	return uint64(sx.Dev_major)<<32 | uint64(sx.Dev_minor)
}

// dotdot moves to the parent directory: it stays at the root (EXDEV
// under RESOLVE_BENEATH) and leaving a mount is EXDEV under
// RESOLVE_NO_XDEV.
func (w *scopeWalk) dotdot() unix.Errno {
	w.rootSet = true
	if w.cur == w.root || w.cur == "/" {
		if w.resolve&resolveBeneath != 0 {
			return unix.EXDEV
		}
		return 0
	}
	parent := path.Dir(w.cur)
	var b mountKey
	if w.resolve&resolveNoXdev != 0 {
		a, errno := w.keyCur()
		if errno != 0 {
			return errno
		}
		if b, errno = w.key(parent, false); errno != 0 {
			return errno
		}
		if a != b {
			return unix.EXDEV
		}
	}
	w.setCur(parent, true, b, w.resolve&resolveNoXdev != 0)
	return 0
}

// link follows the symlink at host (the component after w.cur). It
// either ends the walk (done: a magic link in the last component, which
// the kernel follows itself, or an error) or sets w.pendingAfterLink to
// the components left to walk.
func (w *scopeWalk) link(host string, pending []string, last bool) (done bool, res scopedResult, errno unix.Errno) {
	if w.resolve&resolveNoSymlinks != 0 {
		return true, res, unix.ELOOP
	}
	w.links++
	if w.links > pathmap.MaxSymlinks {
		return true, res, unix.ELOOP
	}
	var body string
	switch {
	case host == "/proc/self":
		body = strconv.Itoa(w.c.Pid())
	case host == "/proc/thread-self":
		body = strconv.Itoa(w.c.Pid()) + "/task/" + strconv.Itoa(w.c.Tid())
	case pathmap.IsProcMagic(host):
		return w.magic(host, pending, last)
	default:
		b, err := readlinkHost(host)
		if err != nil {
			return true, res, err.(unix.Errno)
		}
		body = b
	}
	if body == "" {
		return true, res, unix.ENOENT
	}
	if strings.HasPrefix(body, "/") {
		if w.resolve&resolveBeneath != 0 {
			return true, res, unix.EXDEV
		}
		if w.resolve&resolveNoXdev != 0 {
			if !w.rootSet {
				return true, res, unix.EXDEV
			}
			a, errno := w.keyCur()
			if errno != 0 {
				return true, res, errno
			}
			b, errno := w.key(w.root, false)
			if errno != 0 {
				return true, res, errno
			}
			if a != b {
				return true, res, unix.EXDEV
			}
		}
		w.setCur(w.root, true, mountKey{}, false)
		w.rootSet = true
	}
	w.pendingAfterLink = append(strings.Split(body, "/"), pending...)
	return false, res, 0
}

// magic handles a procfs magic link the walk must follow: as the path
// walk does (magicLinks), a last component the kernel may jump through is
// left to it, any other link is followed by its guest path.
func (w *scopeWalk) magic(host string, pending []string, last bool) (bool, scopedResult, unix.Errno) {
	if w.resolve&resolveNoMagiclinks != 0 {
		return true, scopedResult{}, unix.ELOOP
	}
	t, terrno := w.magicTarget(host)
	if w.resolve&resolveNoXdev != 0 {
		a, errno := w.keyCur()
		if errno != 0 {
			return true, scopedResult{}, errno
		}
		b := mountKey{bind: "?", mnt: hostMount(procExe(w.c, host), true)}
		switch {
		case terrno == 0 && t.Guest != "" && !t.Jump:
			if b, errno = w.key(path.Clean(t.Guest), true); errno != 0 {
				return true, scopedResult{}, errno
			}
		case terrno == 0 && t.Guest != "":
			b.bind = mountOf(w.c.Mapper(), t.Guest)
		}
		if a != b {
			return true, scopedResult{}, unix.EXDEV
		}
	}
	if w.resolve&(resolveBeneath|resolveInRoot) != 0 {
		return true, scopedResult{}, unix.EXDEV
	}
	if last && (terrno != 0 || t.Jump) {
		return true, scopedResult{host: procExe(w.c, host), kernelFollows: true}, 0
	}
	switch {
	case terrno != 0:
		return true, scopedResult{}, terrno
	case t.Guest == "" && last:
		return true, scopedResult{}, unix.ENOENT
	case t.Guest == "":
		return true, scopedResult{}, unix.ENOTDIR // a pipe, socket, anon inode...
	}
	w.setCur(path.Clean(t.Guest), false, mountKey{}, false)
	var st unix.Stat_t
	h, errno := w.host(w.cur)
	if errno != 0 {
		return true, scopedResult{}, errno
	}
	if err := unix.Stat(h, &st); err != nil {
		return true, scopedResult{}, err.(unix.Errno)
	}
	w.isDir = st.Mode&unix.S_IFMT == unix.S_IFDIR
	w.pendingAfterLink = pending
	return false, scopedResult{}, 0
}

// magicTarget is what magic link host stands for (magicLinks), or the
// errno of reading it. A link pathmap does not parse is the kernel's to
// jump through, as before magicLinks.
func (w *scopeWalk) magicTarget(host string) (pathmap.MagicTarget, unix.Errno) {
	l, ok := pathmap.ParseMagicLink(host)
	if !ok {
		target, errno := readlinkGuest(w.c, host)
		if !strings.HasPrefix(target, "/") {
			target = ""
		}
		return pathmap.MagicTarget{Guest: target, Jump: true}, errno
	}
	t, err := magicLinks{w.c}.Follow(l)
	if err != nil {
		if e, ok := err.(unix.Errno); ok {
			return t, e
		}
		return t, unix.EINVAL
	}
	return t, 0
}
