package emul

import (
	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/tracer"
)

// mapFileInto maps host file path into c's process with injected calls:
// openat(path, oflags), mmap(addr, size, prot, flags, fd, 0), close(fd).
// done gets openat's result when it failed (then mapped is 0), else 0 and
// mmap's result (an address or a negative errno). A path that cannot be
// pushed fails the call with ENOMEM.
func mapFileInto(c *tracer.Call, path string, oflags, addr, size, prot, flags uint64, done func(c *tracer.Call, openErr, mapped int64)) {
	p, err := c.PushString(path)
	if err != nil {
		c.Fail(unix.ENOMEM)
		return
	}
	openat, _ := nativeNr("openat")
	mmap, _ := nativeNr("mmap")
	closeNr, _ := nativeNr("close")
	c.Run(openat, [6]uint64{atFDCWDReg, p, oflags}, func(c *tracer.Call, fd int64) {
		if fd < 0 {
			done(c, fd, 0)
			return
		}
		c.Run(mmap, [6]uint64{addr, size, prot, flags, uint64(fd), 0}, func(c *tracer.Call, mapped int64) {
			c.Run(closeNr, [6]uint64{uint64(fd)}, func(c *tracer.Call, _ int64) { done(c, 0, mapped) })
		})
	})
}
