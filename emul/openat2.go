package emul

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/tracer"
)

// openat2's struct open_how and its resolve flags (linux/openat2.h).
const (
	openHowSizeVer0 = 24   // OPEN_HOW_SIZE_VER0: flags, mode, resolve
	pageSize        = 4096 // openat2 refuses a larger struct with E2BIG

	resolveNoXdev       = 0x01
	resolveNoMagiclinks = 0x02
	resolveNoSymlinks   = 0x04
	resolveBeneath      = 0x08
	resolveInRoot       = 0x10
	resolveCached       = 0x20
	validResolveFlags   = 0x3f
)

// oTmpfileBit is __O_TMPFILE (O_TMPFILE without O_DIRECTORY).
const oTmpfileBit = unix.O_TMPFILE &^ unix.O_DIRECTORY

// validOpenFlags is the kernel's VALID_OPEN_FLAGS.
var validOpenFlags = uint64(unix.O_RDONLY|unix.O_WRONLY|unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|
	unix.O_NOCTTY|unix.O_TRUNC|unix.O_APPEND|unix.O_NONBLOCK|unix.O_SYNC|unix.O_DSYNC|
	unix.O_ASYNC|unix.O_DIRECT|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_NOATIME|
	unix.O_CLOEXEC|unix.O_PATH|unix.O_TMPFILE) | tracer.OLargefile

// openHow is a decoded struct open_how.
type openHow struct{ flags, mode, resolve uint64 }

// readOpenHow reads openat2's how argument of size usize as
// copy_struct_from_user does: EINVAL below version 0, E2BIG above a page or
// when bytes past the known struct are not zero, EFAULT on a bad pointer.
func readOpenHow(c *tracer.Call, addr, usize uint64) (openHow, unix.Errno) {
	if usize < openHowSizeVer0 {
		return openHow{}, unix.EINVAL
	}
	if usize > pageSize {
		return openHow{}, unix.E2BIG
	}
	b := make([]byte, usize)
	if err := c.ReadMem(addr, b); err != nil {
		return openHow{}, unix.EFAULT
	}
	for _, x := range b[openHowSizeVer0:] {
		if x != 0 {
			return openHow{}, unix.E2BIG
		}
	}
	return openHow{
		flags:   binary.LittleEndian.Uint64(b[0:]),
		mode:    binary.LittleEndian.Uint64(b[8:]),
		resolve: binary.LittleEndian.Uint64(b[16:]),
	}, 0
}

// check is the kernel's build_open_flags for openat2: every field is
// validated (the older open calls ignore unknown bits).
func (h openHow) check() unix.Errno {
	flags := h.flags &^ unix.O_CLOEXEC
	if flags&^validOpenFlags != 0 || h.resolve&^validResolveFlags != 0 {
		return unix.EINVAL
	}
	if h.resolve&resolveBeneath != 0 && h.resolve&resolveInRoot != 0 {
		return unix.EINVAL
	}
	if flags&(unix.O_CREAT|oTmpfileBit) != 0 {
		if h.mode&^0o7777 != 0 {
			return unix.EINVAL
		}
	} else if h.mode != 0 {
		return unix.EINVAL
	}
	if flags&(unix.O_DIRECTORY|unix.O_CREAT) == unix.O_DIRECTORY|unix.O_CREAT {
		return unix.EINVAL
	}
	if flags&oTmpfileBit != 0 {
		if flags&unix.O_DIRECTORY == 0 {
			return unix.EINVAL
		}
		if flags&unix.O_ACCMODE == unix.O_RDONLY {
			return unix.EINVAL // O_TMPFILE needs write access
		}
	}
	if flags&unix.O_PATH != 0 && flags&^uint64(unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_PATH) != 0 {
		return unix.EINVAL
	}
	if h.resolve&resolveCached != 0 && flags&(unix.O_TRUNC|unix.O_CREAT|oTmpfileBit) != 0 {
		return unix.EAGAIN
	}
	return 0
}

// openat2Handler translates openat2(dirfd, path, how, size) with the
// semantics of every RESOLVE_* flag over the guest's view (see
// resolveScoped). Without emulation the kernel runs openat2 on the host
// path, with RESOLVE_NO_SYMLINKS added when the tracer resolved every
// link, so that a symlink swapped in after the check is refused rather
// than followed. With emulate (Android blocks openat2) the call becomes
// openat(AT_FDCWD, host, flags, mode).
func openat2Handler(emulate bool) tracer.Handler {
	return tracer.Handler{Enter: func(c *tracer.Call) {
		how, errno := readOpenHow(c, c.Arg(2), c.Arg(3))
		if errno == 0 {
			errno = how.check()
		}
		if errno != 0 {
			c.Fail(errno)
			return
		}
		guest, err := c.ReadPath(c.Arg(1))
		if err != nil {
			c.Fail(err.(unix.Errno))
			return
		}
		if guest == "" {
			c.Fail(unix.ENOENT)
			return
		}
		flags := how.flags
		if guest[0] != '/' && onlyDots(guest) {
			// The directory the guest named itself, which the kernel
			// finds as it is (a removed cwd too) with every RESOLVE_*
			// rule kept: nothing is walked, so nothing to translate. A
			// copy of the path, which no other thread can change.
			addr, err := c.PushString(guest)
			if err != nil {
				c.Fail(unix.EFAULT)
				return
			}
			c.SetArg(1, addr)
			if emulate {
				asOpenat(c, how)
			}
			return
		}
		var res scopedResult
		if how.resolve&^resolveCached == 0 {
			// No scoping or link rule: openat's translation, with its cache.
			r, errno := lookupAt(c, 0, guest, openFlags(flags, guest))
			if errno != 0 {
				c.Fail(errno)
				return
			}
			res = scopedResult{host: r.Host, kernelFollows: true} // let the kernel follow as openat would
		} else {
			followLast := flags&unix.O_NOFOLLOW == 0 && flags&(unix.O_CREAT|unix.O_EXCL) != unix.O_CREAT|unix.O_EXCL
			res, errno = resolveScoped(c, 0, guest, how.resolve, followLast)
			if errno != 0 {
				c.Fail(errno)
				return
			}
		}
		addr, err := c.PushString(res.host)
		if err != nil {
			c.Fail(unix.EFAULT)
			return
		}
		c.SetArg(0, atFDCWDReg)
		c.SetArg(1, addr)
		if emulate {
			asOpenat(c, how)
			return
		}
		resolve := how.resolve & (resolveNoMagiclinks | resolveCached)
		if !res.kernelFollows {
			resolve |= resolveNoSymlinks
		}
		var b [openHowSizeVer0]byte
		binary.LittleEndian.PutUint64(b[0:], flags)
		binary.LittleEndian.PutUint64(b[8:], how.mode)
		binary.LittleEndian.PutUint64(b[16:], resolve)
		hp, err := c.Push(b[:])
		if err != nil {
			c.Fail(unix.EFAULT)
			return
		}
		c.SetArg(2, hp)
		c.SetArg(3, openHowSizeVer0)
	}}
}

// asOpenat makes the call, whose dirfd and path arguments are set, the
// openat with how's flags and mode (Android's policy blocks openat2).
func asOpenat(c *tracer.Call, how openHow) {
	nr, _ := nativeNr("openat")
	c.SetNr(nr)
	c.SetArg(2, how.flags)
	c.SetArg(3, how.mode)
}
