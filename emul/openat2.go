package emul

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/pathmap"
	"github.com/droidroot/droidroot/tracer"
)

// openat2Handler translates openat2(dirfd, path, how, size). The final
// symlink rule comes from how->flags.
var openat2Handler = tracer.Handler{Enter: func(c *tracer.Call) {
	var how [24]byte
	if c.Arg(3) < 24 {
		c.Fail(unix.EINVAL)
		return
	}
	if err := c.ReadMem(c.Arg(2), how[:]); err != nil {
		c.Fail(unix.EFAULT)
		return
	}
	flags := binary.LittleEndian.Uint64(how[0:])
	t, errno := translate(c, at(0, 1, func(_ *tracer.Call, guest string) pathmap.Flags { return openFlags(flags, guest) }), 0)
	if errno != 0 {
		c.Fail(errno)
		return
	}
	if errno := rewrite(c, 1, t); errno != 0 {
		c.Fail(errno)
	}
}}
