package emul

import (
	"bytes"
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/pathmap"
	"github.com/droidroot/droidroot/tracer"
)

// sunPathMax is the size of sockaddr_un.sun_path.
const sunPathMax = 108

// unixAddrHandler translates the AF_UNIX path in the sockaddr at argument
// addrArg (length in lenArg) for bind, connect and sendto.
func unixAddrHandler(addrArg, lenArg int, flags pathmap.Flags) tracer.Handler {
	return tracer.Handler{Enter: func(c *tracer.Call) {
		addr, n := c.Arg(addrArg), int(int32(c.Arg(lenArg)))
		if addr == 0 || n <= 2 || n > 2+sunPathMax {
			return
		}
		sa := make([]byte, n)
		if err := c.ReadMem(addr, sa); err != nil {
			return // the kernel reports EFAULT itself
		}
		if binary.LittleEndian.Uint16(sa) != unix.AF_UNIX || sa[2] == 0 {
			return // another family, or an abstract socket
		}
		path := sa[2:]
		if i := bytes.IndexByte(path, 0); i >= 0 {
			path = path[:i]
		}
		res, errno := lookupAt(c, -1, string(path), flags)
		host := res.Host
		if errno != 0 {
			c.Fail(errno)
			return
		}
		if host == string(path) {
			return
		}
		if len(host) >= sunPathMax {
			c.Fail(unix.ENAMETOOLONG)
			return
		}
		nsa := make([]byte, 2+len(host)+1)
		binary.LittleEndian.PutUint16(nsa, unix.AF_UNIX)
		copy(nsa[2:], host)
		a, err := c.Push(nsa)
		if err != nil {
			c.Fail(unix.EFAULT)
			return
		}
		c.SetArg(addrArg, a)
		c.SetArg(lenArg, uint64(len(nsa)))
	}}
}

// sockNameHandler maps an AF_UNIX address the kernel returns (getsockname,
// getpeername, accept) back to the guest path.
func sockNameHandler(addrArg, lenPtrArg int) tracer.Handler {
	return tracer.Handler{
		Enter: func(c *tracer.Call) {
			var lb [4]byte
			if c.Arg(addrArg) == 0 || c.Arg(lenPtrArg) == 0 || c.ReadMem(c.Arg(lenPtrArg), lb[:]) != nil {
				c.NoExit()
				return
			}
			c.Data = int(int32(binary.LittleEndian.Uint32(lb[:])))
		},
		Exit: func(c *tracer.Call) {
			if c.Ret() < 0 {
				return
			}
			addr, lenp := c.Arg(addrArg), c.Arg(lenPtrArg)
			var lb [4]byte
			if c.ReadMem(lenp, lb[:]) != nil {
				return
			}
			bufSize := c.Data.(int)
			full := int(binary.LittleEndian.Uint32(lb[:]))
			if full <= 2 || full > 2+sunPathMax || bufSize <= 2 {
				return
			}
			sa := make([]byte, min(full, bufSize))
			if c.ReadMem(addr, sa) != nil || binary.LittleEndian.Uint16(sa) != unix.AF_UNIX || sa[2] == 0 {
				return
			}
			path := sa[2:]
			if i := bytes.IndexByte(path, 0); i >= 0 {
				path = path[:i]
			}
			g, ok := c.Mapper().ToGuest(string(path))
			if !ok || g == string(path) {
				return
			}
			nsa := make([]byte, 2+len(g)+1)
			binary.LittleEndian.PutUint16(nsa, unix.AF_UNIX)
			copy(nsa[2:], g)
			// Write what fits the guest's buffer; report the real length
			// like the kernel.
			w := nsa
			if len(w) > bufSize {
				w = w[:bufSize]
			}
			c.WriteMem(addr, w)
			binary.LittleEndian.PutUint32(lb[:], uint32(len(nsa)))
			c.WriteMem(lenp, lb[:])
		},
	}
}
