package emul

import (
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/ident"
	"github.com/droidroot/droidroot/pathmap"
	"github.com/droidroot/droidroot/tracer"
)

// readlinkHandler answers readlink(at) in the tracer: symlink contents are
// already guest paths, but the kernel's magic links under /proc point at
// host objects and are mapped back.
func readlinkHandler(a pathArg, bufArg, sizeArg int) tracer.Handler {
	return tracer.Handler{Enter: func(c *tracer.Call) {
		size := int64(int32(c.Arg(sizeArg)))
		t, errno := translate(c, a, 0)
		if errno != 0 {
			c.Fail(errno)
			return
		}
		if t.skip {
			return // readlinkat(fd, ""): the kernel reads the link fd is open on
		}
		if size <= 0 {
			c.Fail(unix.EINVAL)
			return
		}
		target, errno := readlinkGuest(c, tracerPath(c, a, t))
		if errno == unix.EACCES && t.keep && t.host == t.res.Host && !strings.HasPrefix(t.host, "/proc/") {
			// A directory on the host path that the caller may not search
			// above its cwd (or dirfd), from which the kernel reads the
			// relative path without searching it: read it from there.
			var err error
			if target, err = readlinkHost(nearPath(c, a, t.guest)); err == nil {
				errno = 0
			} else {
				errno = err.(unix.Errno)
			}
		}
		if errno != 0 {
			c.Fail(errno)
			return
		}
		b := []byte(target)
		if int64(len(b)) > size {
			b = b[:size]
		}
		if err := c.WriteMem(c.Arg(bufArg), b); err != nil {
			c.Fail(unix.EFAULT)
			return
		}
		c.Return(int64(len(b)))
	}}
}

// readlinkGuest reads host symlink host and returns what the guest must see.
func readlinkGuest(c *tracer.Call, host string) (string, unix.Errno) {
	switch host {
	case "/proc/self":
		return strconv.Itoa(c.Pid()), 0
	case "/proc/thread-self":
		return strconv.Itoa(c.Pid()) + "/task/" + strconv.Itoa(c.Tid()), 0
	}
	pid, rest, isProc := procPid(host)
	if isProc {
		tid := pid
		if r, ok := strings.CutPrefix(rest, "task/"); ok {
			t, after, _ := strings.Cut(r, "/")
			if n, err := strconv.Atoi(t); err == nil {
				tid = n
			}
			rest = after
		}
		switch rest {
		case "exe":
			if pr := c.Tracer().Process(pid); pr != nil && pr.Exe != "" {
				return pr.Exe, 0
			}
		case "cwd":
			if fs := c.Tracer().ThreadFS(tid); fs != nil {
				cwd := settleCwd(c, tid, fs)
				if len(cwd) >= tracer.PathMax {
					return "", unix.ENAMETOOLONG // d_path's limit
				}
				return cwd, 0
			}
		case "root":
			// The guest's root, for every process: droidroot never
			// chroots a tracee, and a process outside the guest tree
			// (droidroot itself, the guest's first parent) shows the
			// guest's "/" too, as under proot, not the host's.
			if _, err := readlinkHost(host); err != nil {
				return "", err.(unix.Errno)
			}
			return "/", 0
		}
	}
	target, err := readlinkHost(host)
	if err == unix.ENAMETOOLONG && isProc && strings.HasPrefix(rest, "fd/") {
		// A file whose host path is PATH_MAX or longer (a bind with a
		// long host source): the kernel cannot print it, but its guest
		// path may be shorter. The file a recent long path named is it.
		var st unix.Stat_t
		if unix.Stat(host, &st) == nil {
			if h, ok := c.Mapper().LongHost(st.Dev, st.Ino); ok {
				if g, ok := toGuest(c, h); ok && len(g) < tracer.PathMax {
					return g, 0
				}
			}
		}
	}
	if err != nil {
		return "", err.(unix.Errno)
	}
	if isProc && strings.HasPrefix(target, "/") {
		if l2s := emulationOf(c).l2s; l2s != nil {
			if name, ok := l2s.nameOf(c, target); ok {
				return name, 0 // a file opened through a hard link's name
			}
		}
		if g, ok := toGuest(c, target); ok {
			return g, 0
		}
	}
	return target, 0
}

// getcwd answers getcwd(buf, size) with the guest's current directory,
// or ENOENT, as the kernel does, when that directory has been removed (a
// removed directory has no links left).
func getcwd(c *tracer.Call) {
	cwd := guestCwd(c)
	var st unix.Stat_t
	if unix.Stat(procCwd(c.Tid()), &st) == nil && st.Nlink == 0 {
		c.Fail(unix.ENOENT)
		return
	}
	if len(cwd)+1 > tracer.PathMax {
		c.Fail(unix.ENAMETOOLONG)
		return
	}
	size := c.Arg(1)
	if size < uint64(len(cwd)+1) {
		c.Fail(unix.ERANGE)
		return
	}
	if err := c.WriteMem(c.Arg(0), append([]byte(cwd), 0)); err != nil {
		c.Fail(unix.EFAULT)
		return
	}
	c.Return(int64(len(cwd) + 1))
}

// toGuest maps a host path the kernel reported back to a guest path. When
// the file is reachable both through the rootfs and through a binding of a
// rootfs directory, the rootfs path is preferred if it leads back to the
// same host path.
func toGuest(c *tracer.Call, host string) (string, bool) {
	return toGuestIn(c, host, nil)
}

// toGuestIn is toGuest with its lookup in batch b (see pathmap.Batch).
func toGuestIn(c *tracer.Call, host string, b *pathmap.Batch) (string, bool) {
	root := c.Mapper().Root()
	if rel, ok := strings.CutPrefix(host, root); ok && (root == "/" || rel == "" || rel[0] == '/') {
		g := "/" + strings.TrimPrefix(rel, "/")
		pr := c.PathProc()
		pr.Batch = b
		if h, err := c.Mapper().Resolve(pr, "/", g, false); err == nil && h == host {
			return g, true
		}
	}
	return c.Mapper().ToGuest(host)
}

// chrootHandler answers chroot: changing the guest's root to the directory
// it already has is a no-op success for a caller with CAP_SYS_CHROOT (the
// emulated one under -0/-i, else droidroot's own: root's); any other root
// would have to be emulated per process and is refused with EPERM, as for an
// unprivileged process (the kernel must never chroot a tracee to a host
// path). The kernel's order: the lookup's errors, ENOTDIR, then EPERM.
var chrootHandler = tracer.Handler{Enter: func(c *tracer.Call) {
	t, errno := translate(c, pathArgAt(0, always), pathmap.WantGuest)
	if errno != 0 {
		c.Fail(errno)
		return
	}
	var st unix.Stat_t
	if err := unix.Stat(t.host, &st); err != nil {
		c.Fail(err.(unix.Errno))
		return
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		c.Fail(unix.ENOTDIR)
		return
	}
	capable := unix.Geteuid() == 0
	if c.CredsEmulated() {
		capable = c.Creds().Capable(ident.CapSysChroot)
	}
	if t.res.Guest == "/" && capable {
		c.Return(0)
		return
	}
	c.Fail(unix.EPERM)
}}
