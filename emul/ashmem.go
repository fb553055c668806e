package emul

import (
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/tracer"
)

// --ashmem-memfd: /dev/ashmem backed by memfd. Apps targeting recent
// Android may not open /dev/ashmem (and desktop kernels have none), so an
// open of the guest's /dev/ashmem becomes memfd_create("droidroot-ashmem")
// and the ashmem ioctls on such an fd are answered by the tracer:
// ASHMEM_SET_SIZE becomes ftruncate, ASHMEM_GET_SIZE reports the memfd's
// size, names and protection masks are accepted (GET_NAME answers
// "dev/ashmem", GET_PROT_MASK read|write|exec), pinning always succeeds
// and nothing is ever purged. mmap, fork and fd passing then share the
// memory as with ashmem.
//
// termux proot's --ashmem-memfd works the other way round: on devices
// without memfd it turns memfd_create into an open of /dev/ashmem (and
// ftruncate/fstat of such fds into ashmem ioctls). droidroot does not do
// that direction: memfd_create is allowed by every Android app policy
// droidroot targets (12 and later).

// ashmemName is the memfd name that marks droidroot's ashmem fds.
const ashmemName = "droidroot-ashmem"

// ashmem ioctl numbers (__ASHMEM_IOC 0x77, include/uapi/linux/ashmem.h).
const (
	ashmemIoc            = 0x77
	ashmemSetName        = 1
	ashmemGetName        = 2
	ashmemSetSize        = 3
	ashmemGetSize        = 4
	ashmemSetProtMask    = 5
	ashmemGetProtMask    = 6
	ashmemPin            = 7
	ashmemUnpin          = 8
	ashmemGetPinStatus   = 9
	ashmemPurgeAllCaches = 10
	ashmemIsPinned       = 1
)

// isAshmemOpen reports whether an open of guest path g (host path h) is
// an open of /dev/ashmem.
func isAshmemOpen(g, h string) bool {
	return filepath.Clean(g) == "/dev/ashmem" || h == "/dev/ashmem"
}

// ashmemOpen turns the current open into memfd_create; flags are open's.
func ashmemOpen(c *tracer.Call, flags uint64) {
	nr, ok := nativeNr("memfd_create")
	if !ok {
		c.Fail(unix.ENOSYS)
		return
	}
	name, err := c.PushString(ashmemName)
	if err != nil {
		c.Fail(unix.EFAULT)
		return
	}
	var mfd uint64
	if flags&unix.O_CLOEXEC != 0 {
		mfd = unix.MFD_CLOEXEC
	}
	c.SetNr(nr)
	c.SetArg(0, name)
	c.SetArg(1, mfd)
}

// isAshmemFd reports whether fd of the caller is one of droidroot's
// ashmem memfds.
func isAshmemFd(c *tracer.Call, fd int) bool {
	h, errno := fdHostPath(c, fd)
	return errno == 0 && h == "/memfd:"+ashmemName+" (deleted)"
}

// ashmemIoctl answers the ashmem ioctls on droidroot's ashmem fds.
var ashmemIoctl = tracer.Handler{Enter: func(c *tracer.Call) {
	cmd := c.Arg(1)
	if (cmd>>8)&0xff != ashmemIoc {
		return
	}
	fd := int(int32(c.Arg(0)))
	if !isAshmemFd(c, fd) {
		return
	}
	switch cmd & 0xff {
	case ashmemSetName, ashmemSetProtMask, ashmemPurgeAllCaches, ashmemPin, ashmemUnpin:
		c.Return(0)
	case ashmemGetName:
		if err := c.WriteMem(c.Arg(2), []byte("dev/ashmem\x00")); err != nil {
			c.Fail(unix.EFAULT)
			return
		}
		c.Return(0)
	case ashmemSetSize:
		nr, _ := nativeNr("ftruncate")
		c.SetNr(nr)
		c.SetArg(1, c.Arg(2))
	case ashmemGetSize:
		var st unix.Stat_t
		if err := unix.Fstatat(unix.AT_FDCWD, procFd(c.Tid(), fd), &st, 0); err != nil {
			c.Fail(err.(unix.Errno))
			return
		}
		c.Return(st.Size)
	case ashmemGetProtMask:
		c.Return(unix.PROT_READ | unix.PROT_WRITE | unix.PROT_EXEC)
	case ashmemGetPinStatus:
		c.Return(ashmemIsPinned)
	default:
		c.Fail(unix.ENOTTY)
	}
}}
