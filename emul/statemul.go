package emul

import (
	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/tracer"
)

// Stat calls the tracer answers itself, where a layer patches their result:
// -0's owner fix-up, -l's link count and -L's symlink size, each of which
// otherwise needs the call's exit stop. Once the lookup has pinned a stat
// call's path (issue 18: the file's own descriptor for a call that follows
// the last component, pathmap's PinnedFile; the name below its pinned
// parent for one that does not, PinnedName), the tracer holds the
// descriptor: it makes the stat itself, on it or the name below it, with
// the guest's flags, writes the result into the guest's buffer and skips
// the call; the handler's Exit then runs at once on that answer
// (tracer.Call.ExitNow). A descriptor's own stat (fstat, an empty path with
// AT_EMPTY_PATH) goes through /proc/<tid>/fd/N. One stop where there were
// two: a stat under -0 66 to 50 us on this VM (docs/performance.md,
// session 14). The result is staged (tracer.Call.StageMem): the patches
// change the tracer's copy, and one write puts it in the guest's buffer,
// where each field's patch was a read and a write of guest memory (a
// descriptor's stat under -0 37 to 29 us, session 15). Without a patch the kernel
// makes the call as before: the tracer's own stat, the buffer's write and
// the skip cost more than the kernel's walk of the magic link (25.5 to
// 30 us).
//
// The answer is the kernel's for the same inode: the same stat, and the
// permission checks the walk to it made are the lookup's and the pin's,
// as when the kernel walks the magic link (pinning happens only while the
// thread's ids are the tracer's: pincreds.go). Flags and masks the kernel
// may refuse are left to it.

// baseStat is a stat call's base handler: pathHandler's, answered in the
// tracer where a layer patches the result and the path was pinned
// (emulStat) or is a descriptor's own (emulFdStat).
func baseStat(_ *Emulation, d decl) tracer.Handler {
	return pathHandlerAnswering(func(c *tracer.Call, ts []translated) bool {
		return statInTracer(c, d.args[0], ts[0], d.stat)
	}, d.args...)
}

// statInTracer answers stat call c, whose path argument a translated to t,
// in the tracer where it can, and reports whether it did: a descriptor's
// own stat (an empty path with AT_EMPTY_PATH) through emulFdStat, a pinned
// path through emulStat.
func statInTracer(c *tracer.Call, a pathArg, t translated, sd *statDecl) bool {
	if t.skip && a.dirfd >= 0 {
		return emulFdStat(c, int(int32(c.Arg(a.dirfd))), sd)
	}
	return emulStat(c, t, sd)
}

// fstatEnter is fstat's entry where a layer patches its result (-0's
// owner, which traces fstat for that alone): answered in the tracer.
func fstatEnter(c *tracer.Call) {
	emulFdStat(c, int(int32(c.Arg(0))), fstatDecl)
}

// fstatDecl is fstat's result.
var fstatDecl = &statDecl{bufArg: 1, kind: kindStat, noFollow: alwaysFalse, flagsArg: -1}

// emulFdStat answers a stat of descriptor fd itself (fstat, or an empty
// path with AT_EMPTY_PATH) in the tracer, through /proc/<tid>/fd/<fd>,
// whose walk ends at the descriptor's file, as fstat's answer does (a
// symlink's O_PATH descriptor is the symlink, followed no further). Only
// where the handler has an Exit (a layer's patch, which then needs no exit
// stop: launchers' -0 traces every fstat for it); a descriptor that is not
// open (EBADF), any other error, and flags the kernel may refuse are left
// to it.
func emulFdStat(c *tracer.Call, fd int, sd *statDecl) bool {
	if fd < 0 || !c.HasExit() {
		return false
	}
	flags, ok := statFlags(c, sd)
	if !ok {
		return false
	}
	path := procFd(c.Tid(), fd)
	var b []byte
	var errno unix.Errno
	if sd.kind == kindStatx {
		b, errno = statxBytes(unix.AT_FDCWD, path, flags&^(unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW), uint32(c.Arg(3)))
	} else {
		b, errno = statBytes(unix.AT_FDCWD, path, 0)
	}
	if errno != 0 {
		// Not open (ENOENT: the kernel's EBADF), or /proc refused the
		// tracer: the kernel's answer, with its exit stop.
		return false
	}
	answerStat(c, sd, b, 0)
	return true
}

// statFlags is the flags of stat call c (AT_SYMLINK_NOFOLLOW added for
// lstat); ok is false for flags (or a statx mask) the kernel may refuse,
// which are its to answer: it checks them for a path, and not all of them
// for an empty one (Linux 6.18's fstatat), which the tracer's call would be.
func statFlags(c *tracer.Call, sd *statDecl) (flags int, ok bool) {
	if sd.flagsArg >= 0 {
		flags = int(int32(c.Arg(sd.flagsArg)))
	}
	const known = unix.AT_SYMLINK_NOFOLLOW | unix.AT_NO_AUTOMOUNT | unix.AT_EMPTY_PATH
	const syncType = unix.AT_STATX_FORCE_SYNC | unix.AT_STATX_DONT_SYNC
	if sd.kind == kindStatx {
		ok = flags&^(known|syncType) == 0 && flags&syncType != syncType && uint32(c.Arg(3))&unix.STATX__RESERVED == 0
	} else {
		ok = flags&^known == 0
	}
	if sd.noFollow(c) {
		flags |= unix.AT_SYMLINK_NOFOLLOW
	}
	return flags, ok
}

// answerStat answers stat call c with result b (or errno), staged for the
// guest's buffer (tracer.Call.StageMem: the layers' patches change the
// held copy, one write puts it there, EFAULT where that fails), and runs
// the handler's Exit at once.
func answerStat(c *tracer.Call, sd *statDecl, b []byte, errno unix.Errno) {
	if errno != 0 {
		c.Fail(errno)
	} else {
		c.StageMem(c.Arg(sd.bufArg), b)
		c.Return(0)
	}
	c.ExitNow()
}

// emulStat answers stat call c (declared by sd), whose path argument
// translated to t, with the tracer's own stat of the pinned file, and
// reports whether it did. It does not where the handler has no Exit, or
// where t was not pinned (a path handed to the kernel as it is) or was
// pinned as missing.
func emulStat(c *tracer.Call, t translated, sd *statDecl) bool {
	if !c.HasExit() || t.pinned == "" || t.pinnedHost != t.host || t.missing {
		return false
	}
	fd, name, ok := c.Mapper().PinnedFd(t.pinned)
	if !ok {
		return false
	}
	flags, ok := statFlags(c, sd)
	if !ok {
		return false
	}
	switch {
	case name == "" && t.follows:
		flags |= unix.AT_EMPTY_PATH // the file itself (PinnedFile)
	case name != "" && !t.follows:
		// The name below its parent, not followed (PinnedName).
	default:
		return false
	}
	var b []byte
	var errno unix.Errno
	if sd.kind == kindStatx {
		b, errno = statxBytes(fd, name, flags, uint32(c.Arg(3)))
	} else {
		b, errno = statBytes(fd, name, flags)
	}
	answerStat(c, sd, b, errno)
	return true
}
