package emul

import (
	"sync"

	"github.com/droidroot/droidroot/pathmap"
	"github.com/droidroot/droidroot/tracer"
	"golang.org/x/sys/unix"
)

// decl declares one syscall once: its path arguments (how each is found
// and whether its last component is followed) and its base handler, the one
// it gets with every option off. The layers (layers.go) build their handlers
// from the same declaration, so an argument rule is written in one place.
type decl struct {
	// args are the path arguments, in order.
	args []pathArg
	// flagsArg is the index of the flags argument the layers read
	// (linkat's, unlinkat's, renameat2's), -1 for none.
	flagsArg int
	// stat describes a stat call's result, for the layers that patch it;
	// nil for other calls.
	stat *statDecl
	// base returns the base handler; nil when only a layer traces the
	// call (fstat, ioctl, getdents64).
	base func(e *Emulation, d decl) tracer.Handler
}

// statDecl is where a stat call leaves its result and whether it follows
// a symlink in the last component.
type statDecl struct {
	bufArg   int
	kind     statKind
	noFollow func(c *tracer.Call) bool
	// flagsArg is the index of the AT_* flags argument, -1 for none.
	flagsArg int
}

// Base handler constructors, from a declaration's arguments.
func basePath(_ *Emulation, d decl) tracer.Handler  { return pathHandler(d.args...) }
func baseEntry(_ *Emulation, d decl) tracer.Handler { return entryHandler(d.args...) }

// baseCreat is creat's (x86_64): a path handler, but for a name the
// lookup found missing, which the call creates: that is made as openat,
// restarted (creat has no flags to add O_EXCL to: see exclCreate).
func baseCreat(_ *Emulation, d decl) tracer.Handler {
	return tracer.Handler{Enter: func(c *tracer.Call) {
		t, errno := translate(c, d.args[0], 0)
		switch {
		case errno != 0:
			c.Fail(errno)
		case t.missing && nrOf("openat") >= 0:
			c.Restart(nrOf("openat"), atFDCWDReg, c.Arg(0), unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC, c.Arg(1))
		default:
			writeArgs(c, d.args, []translated{t})
		}
	}}
}

// baseReadlink is readlink's base handler: buffer and size arguments follow
// the path.
func baseReadlink(bufArg, sizeArg int) func(*Emulation, decl) tracer.Handler {
	return func(_ *Emulation, d decl) tracer.Handler { return readlinkHandler(d.args[0], bufArg, sizeArg) }
}

// baseOpen is open's and openat's: the guest's views of /proc mount tables
// and /dev/ashmem (--ashmem-memfd), then path translation.
func baseOpen(flagsArg int) func(*Emulation, decl) tracer.Handler {
	return func(e *Emulation, d decl) tracer.Handler { return e.views.openHandler(d.args[0], flagsArg) }
}

// baseHandler is a base handler that does not depend on the declaration.
func baseHandler(h tracer.Handler) func(*Emulation, decl) tracer.Handler {
	return func(*Emulation, decl) tracer.Handler { return h }
}

// baseExec is execve's (execveat's with at) handler; execve's also follows
// the run's events for the files both hold open (heldExec): once, since
// every handler's Events is a hook of its own.
func baseExec(at bool) func(*Emulation, decl) tracer.Handler {
	return func(e *Emulation, _ decl) tracer.Handler {
		h := execHandler(at)
		if !at {
			h.Events = e.execEvents
		}
		return h
	}
}

// baseSocket is a handler of the AF_UNIX emulation, which all socket calls
// of a run share.
func baseSocket(f func(s *sockets) tracer.Handler) func(*Emulation, decl) tracer.Handler {
	return func(e *Emulation, _ decl) tracer.Handler { return f(e.socks) }
}

// baseInotifyAddWatch is inotify_add_watch's. The kernel checks the mask
// and the fd before it reads the path, in an order that depends on its
// version (Linux 6.18: unknown or no event bits are EINVAL, then a bad or
// O_PATH fd EBADF, then IN_MASK_ADD with IN_MASK_CREATE or a fd that is not
// an inotify instance EINVAL). The tracer asks the running kernel about the
// mask with calls of its own that cannot reach a path (inotifyMaskErrno),
// and answers as it would before it reads the path. The call is never let
// through with the guest's path: its fd may become an inotify instance
// meanwhile.
func baseInotifyAddWatch(_ *Emulation, d decl) tracer.Handler {
	h := pathHandler(d.args...)
	enter := h.Enter
	h.Enter = func(c *tracer.Call) {
		fd := int(int32(c.Arg(0)))
		mask := uint32(c.Arg(2))
		target, err := readlinkHost(procFd(c.Tid(), fd))
		flags, _ := fdFlags(c, fd)
		switch {
		case fd < 0 || err != nil || flags&unix.O_PATH != 0:
			// EBADF, unless the mask is rejected before the fd.
			c.Fail(inotifyMaskErrno(-1, mask))
		case target != "anon_inode:inotify":
			// EINVAL: for the mask, IN_MASK_ADD with IN_MASK_CREATE, or the fd.
			c.Fail(unix.EINVAL)
		case inotifyMaskErrno(inotifyProbe(), mask) == unix.EINVAL:
			c.Fail(unix.EINVAL)
		default:
			enter(c)
		}
	}
	return h
}

// inotifyProbe is the tracer's own inotify instance, for inotifyMaskErrno
// (-1 if it could not be made).
var inotifyProbe = sync.OnceValue(func() int {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		return -1
	}
	return fd
})

// inotifyMaskErrno is the running kernel's answer to inotify_add_watch(fd,
// NULL, mask) in the tracer: with fd -1, EINVAL if it rejects the mask
// before it looks at the fd, else EBADF; with an inotify instance, EINVAL if
// it rejects the mask before it reads the path, else EFAULT. (Should the
// tracer have no inotify instance, the guest's is asked about as fd -1: its
// pre-fd answer only.)
func inotifyMaskErrno(fd int, mask uint32) unix.Errno {
	r, _, e := unix.Syscall(unix.SYS_INOTIFY_ADD_WATCH, uintptr(fd), 0, uintptr(mask))
	if e == 0 {
		// It cannot watch NULL; should it ever, the watch goes.
		unix.Syscall(unix.SYS_INOTIFY_RM_WATCH, uintptr(fd), r, 0)
		return unix.EFAULT
	}
	return e
}

// pathDecl and entryDecl declare a call whose handler translates args (the
// last component of an entry call is the name it acts on).
func pathDecl(args ...pathArg) decl {
	return decl{args: args, flagsArg: -1, base: basePath}
}

func entryDecl(flagsArg int, args ...pathArg) decl {
	return decl{args: args, flagsArg: flagsArg, base: baseEntry}
}

// statCall declares a stat call: its path argument, its flags argument
// (-1: none) and result. Its base handler answers in the tracer where it can
// (baseStat).
func statCall(a pathArg, bufArg, flagsArg int, kind statKind, noFollow func(*tracer.Call) bool) decl {
	return decl{args: []pathArg{a}, flagsArg: -1, base: baseStat,
		stat: &statDecl{bufArg: bufArg, kind: kind, noFollow: noFollow, flagsArg: flagsArg}}
}

// declarations returns every syscall droidroot can trace, by native name
// (names a host ABI lacks, open on arm64, are ignored there). Calls that
// the set*id, SysV IPC, robust-list, uname, at2 and Android layers add
// whole are declared by those layers.
func declarations() map[string]decl {
	newfstatat := statCall(dirfdPathArg(0, 1, unlessFlag(3, atSymlinkNofollow)).empty(3, atEmptyPath), 2, 3, kindStat, flagSet(3, atSymlinkNofollow))
	return map[string]decl{
		// open and friends
		"open":     {args: []pathArg{pathArgAt(0, openFollow(1))}, flagsArg: 1, base: baseOpen(1)},
		"creat":    {args: []pathArg{pathArgAt(0, always)}, flagsArg: -1, base: baseCreat},
		"openat":   {args: []pathArg{dirfdPathArg(0, 1, openFollow(2))}, flagsArg: 2, base: baseOpen(2)},
		"openat2":  {flagsArg: -1, base: func(e *Emulation, _ decl) tracer.Handler { return openat2Handler(e.cfg.EmulateAt2) }},
		"truncate": pathDecl(pathArgAt(0, always)),
		// stat family
		"stat":       statCall(pathArgAt(0, always), 1, -1, kindStat, alwaysFalse),
		"lstat":      statCall(pathArgAt(0, never), 1, -1, kindStat, alwaysTrue),
		"newfstatat": newfstatat,
		"fstatat":    newfstatat, // arm64's name for the same call
		"statx":      statCall(dirfdPathArg(0, 1, unlessFlag(2, atSymlinkNofollow)).empty(2, atEmptyPath), 4, 2, kindStatx, flagSet(2, atSymlinkNofollow)),
		"fstat":      {args: []pathArg{{dirfd: -1, path: -1}}, flagsArg: -1, stat: fstatDecl},
		"statfs":     {flagsArg: -1, base: baseHandler(statfsHandler(false))},
		"fstatfs":    {flagsArg: -1, base: baseHandler(statfsHandler(true))},
		// access
		"access":     pathDecl(pathArgAt(0, always)),
		"faccessat":  pathDecl(dirfdPathArg(0, 1, always)),
		"faccessat2": pathDecl(dirfdPathArg(0, 1, unlessFlag(3, atSymlinkNofollow)).empty(3, atEmptyPath)),
		// links
		"readlink":   {args: []pathArg{pathArgAt(0, never)}, flagsArg: -1, base: baseReadlink(1, 2)},
		"readlinkat": {args: []pathArg{dirfdPathArg(0, 1, never).empty(emptyAlways, 0)}, flagsArg: -1, base: baseReadlink(2, 3)},
		"symlink":    pathDecl(pathArgAt(1, entry)),
		"symlinkat":  pathDecl(dirfdPathArg(1, 2, entry)),
		"link":       entryDecl(-1, pathArgAt(0, never), pathArgAt(1, entry)),
		"linkat":     entryDecl(4, dirfdPathArg(0, 1, ifFlag(4, atSymlinkFollow)).empty(4, atEmptyPath), dirfdPathArg(2, 3, entry)),
		"unlink":     entryDecl(-1, pathArgAt(0, entry)),
		"unlinkat":   entryDecl(2, dirfdPathArg(0, 1, entry)),
		"rename":     entryDecl(-1, pathArgAt(0, entry), pathArgAt(1, entry)),
		"renameat":   entryDecl(-1, dirfdPathArg(0, 1, entry), dirfdPathArg(2, 3, entry)),
		"renameat2":  entryDecl(4, dirfdPathArg(0, 1, entry), dirfdPathArg(2, 3, entry)),
		// directories
		"mkdir":      pathDecl(pathArgAt(0, entry)),
		"mkdirat":    pathDecl(dirfdPathArg(0, 1, entry)),
		"rmdir":      entryDecl(-1, pathArgAt(0, entry)),
		"mknod":      pathDecl(pathArgAt(0, entry)),
		"mknodat":    pathDecl(dirfdPathArg(0, 1, entry)),
		"chdir":      {flagsArg: -1, base: baseHandler(chdirHandler)},
		"fchdir":     {flagsArg: -1, base: baseHandler(fchdirHandler)},
		"getcwd":     {flagsArg: -1, base: baseHandler(tracer.Handler{Enter: getcwd})},
		"chroot":     {flagsArg: -1, base: baseHandler(chrootHandler)},
		"getdents64": {flagsArg: -1},
		// attributes
		"chmod":     pathDecl(pathArgAt(0, always)),
		"fchmodat":  pathDecl(dirfdPathArg(0, 1, always)),
		"fchmodat2": pathDecl(dirfdPathArg(0, 1, unlessFlag(3, atSymlinkNofollow)).empty(3, atEmptyPath)),
		"chown":     pathDecl(pathArgAt(0, always)),
		"lchown":    pathDecl(pathArgAt(0, never)),
		"fchownat":  pathDecl(dirfdPathArg(0, 1, unlessFlag(4, atSymlinkNofollow)).empty(4, atEmptyPath)),
		"utime":     pathDecl(pathArgAt(0, always)),
		"utimes":    pathDecl(pathArgAt(0, always)),
		"futimesat": pathDecl(dirfdPathArg(0, 1, always)),
		"utimensat": pathDecl(dirfdPathArg(0, 1, unlessFlag(3, atSymlinkNofollow)).null()),
		// extended attributes
		"setxattr":     pathDecl(pathArgAt(0, always)),
		"lsetxattr":    pathDecl(pathArgAt(0, never)),
		"getxattr":     pathDecl(pathArgAt(0, always)),
		"lgetxattr":    pathDecl(pathArgAt(0, never)),
		"listxattr":    pathDecl(pathArgAt(0, always)),
		"llistxattr":   pathDecl(pathArgAt(0, never)),
		"removexattr":  pathDecl(pathArgAt(0, always)),
		"lremovexattr": pathDecl(pathArgAt(0, never)),
		// watches and handles
		"inotify_add_watch": {args: []pathArg{pathArgAt(1, unlessFlag(2, inDontFollow))}, flagsArg: -1, base: baseInotifyAddWatch},
		"fanotify_mark":     pathDecl(dirfdPathArg(3, 4, unlessFlag(1, fanMarkDontFollow)).null()),
		"name_to_handle_at": pathDecl(dirfdPathArg(0, 1, ifFlag(4, atSymlinkFollow)).empty(4, atEmptyPath)),
		// privileged
		"acct":    pathDecl(pathArgAt(0, always).null()),
		"swapon":  pathDecl(pathArgAt(0, always)),
		"swapoff": pathDecl(pathArgAt(0, always)),
		// exec
		"execve":   {flagsArg: -1, base: baseExec(false)},
		"execveat": {flagsArg: -1, base: baseExec(true)},
		// AF_UNIX sockets
		"bind":        {flagsArg: -1, base: baseSocket(func(s *sockets) tracer.Handler { return s.unixAddrHandler(1, 2, pathmap.Entry) })},
		"connect":     {flagsArg: -1, base: baseSocket(func(s *sockets) tracer.Handler { return s.unixAddrHandler(1, 2, pathmap.Follow) })},
		"sendto":      {flagsArg: -1, base: baseSocket(func(s *sockets) tracer.Handler { return s.unixAddrHandler(4, 5, pathmap.Follow) })},
		"sendmsg":     {flagsArg: -1, base: baseSocket(func(s *sockets) tracer.Handler { return s.sendmsgHandler() })},
		"getsockname": {flagsArg: -1, base: baseSocket(func(s *sockets) tracer.Handler { return s.sockNameHandler(1, 2) })},
		"getpeername": {flagsArg: -1, base: baseSocket(func(s *sockets) tracer.Handler { return s.sockNameHandler(1, 2) })},
		"accept":      {flagsArg: -1, base: baseSocket(func(s *sockets) tracer.Handler { return s.sockNameHandler(1, 2) })},
		"accept4":     {flagsArg: -1, base: baseSocket(func(s *sockets) tracer.Handler { return s.sockNameHandler(1, 2) })},
		"recvfrom":    {flagsArg: -1, base: baseSocket(func(s *sockets) tracer.Handler { return s.recvfromHandler() })},
		// devices
		"ioctl": {flagsArg: -1},
		// a guest's own seccomp filters
		"seccomp": {flagsArg: -1, base: baseHandler(seccompHandler)},
		// processes that would leave the tracer (only clone(CLONE_UNTRACED)
		// stops: Handler.TraceIf)
		"clone": {flagsArg: -1, base: baseHandler(cloneHandler)},
	}
}

// seccompHandler refuses a filter that asks for a user-notification
// listener (SECCOMP_FILTER_FLAG_NEW_LISTENER): the listener's answer
// SECCOMP_USER_NOTIF_FLAG_CONTINUE lets the call run as the guest made it,
// after droidroot's stop, so a path call would reach the host path the guest
// named. EBUSY is the kernel's answer when the filter tree has a listener
// already; the other filters, Chromium's sandbox among them, are installed as
// asked.
var seccompHandler = tracer.Handler{Enter: func(c *tracer.Call) {
	if c.Arg(0) == unix.SECCOMP_SET_MODE_FILTER && c.Arg(1)&unix.SECCOMP_FILTER_FLAG_NEW_LISTENER != 0 {
		c.Fail(unix.EBUSY)
	}
}}
