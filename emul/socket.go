package emul

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/pathmap"
	"github.com/droidroot/droidroot/tracer"
)

// sunPathMax is the size of sockaddr_un.sun_path.
const sunPathMax = 108

// sockets remembers the names guests gave AF_UNIX sockets, so that
// getsockname and getpeername answer the name as it was bound (relative or
// not normalised, like the kernel), and the short aliases used for host
// paths too long for sun_path.
type sockets struct {
	names   map[string]string // host sun_path bound -> guest sun_path given
	aliases map[string]string // host directory -> short symlink to it
	dir     string            // the directory of the aliases, made on first use
	tmpDir  string            // where dir is made ("": os.TempDir())
}

// newSockets returns an empty sockets whose aliases go into a directory
// made in tmpDir (Config.TmpDir; "" means os.TempDir()).
func newSockets(tmpDir string) *sockets {
	return &sockets{names: map[string]string{}, aliases: map[string]string{}, tmpDir: tmpDir}
}

// shortPath returns a sun_path that reaches host: host itself when it fits,
// else the path relative to the caller's current directory, else a path
// through a short symlink to its directory (the kernel follows symlinks in
// every component but the last, for bind as for connect).
func (s *sockets) shortPath(c *tracer.Call, host string) (string, unix.Errno) {
	if len(host) < sunPathMax {
		return host, 0
	}
	if cwdHost, err := c.Mapper().Resolve(c.PathProc(), "/", guestCwd(c), true); err == nil {
		if rel, err := filepath.Rel(cwdHost, host); err == nil && len(rel) < sunPathMax {
			return rel, 0
		}
	}
	dir, base := filepath.Split(host)
	alias, ok := s.aliases[dir]
	if !ok {
		if s.dir == "" {
			tmp := s.tmpDir
			if tmp == "" {
				tmp = os.TempDir()
			}
			d, err := os.MkdirTemp(tmp, "drs")
			if err != nil {
				return "", unix.ENAMETOOLONG
			}
			s.dir = d
		}
		alias = filepath.Join(s.dir, strconv.Itoa(len(s.aliases)))
		if err := os.Symlink(dir, alias); err != nil {
			return "", unix.ENAMETOOLONG
		}
		s.aliases[dir] = alias
	}
	short := alias + "/" + base
	if len(short) >= sunPathMax {
		return "", unix.ENAMETOOLONG
	}
	return short, 0
}

// translateAddr translates the AF_UNIX sockaddr of n bytes at addr. It
// returns the address and length of a host sockaddr pushed onto the guest
// stack (0, 0 when nothing needs changing), or the errno the call fails with.
func (s *sockets) translateAddr(c *tracer.Call, addr uint64, n int, flags pathmap.Flags) (uint64, int, unix.Errno) {
	if addr == 0 || n <= 2 || n > 2+sunPathMax {
		return 0, 0, 0
	}
	sa := make([]byte, n)
	if err := c.ReadMem(addr, sa); err != nil {
		return 0, 0, 0 // the kernel reports EFAULT itself
	}
	if binary.LittleEndian.Uint16(sa) != unix.AF_UNIX || sa[2] == 0 {
		return 0, 0, 0 // another family, or an abstract socket
	}
	path := sa[2:]
	if i := bytes.IndexByte(path, 0); i >= 0 {
		path = path[:i]
	}
	res, errno := lookupAt(c, -1, string(path), flags)
	if errno != 0 {
		return 0, 0, errno
	}
	host, errno := s.shortPath(c, res.Host)
	if errno != 0 {
		return 0, 0, errno
	}
	if flags&pathmap.Entry != 0 {
		s.names[host] = string(path)
		s.names[res.Host] = string(path)
	}
	if host == string(path) {
		return 0, 0, 0
	}
	nsa := make([]byte, 2+len(host)+1)
	binary.LittleEndian.PutUint16(nsa, unix.AF_UNIX)
	copy(nsa[2:], host)
	a, err := c.Push(nsa)
	if err != nil {
		return 0, 0, unix.EFAULT
	}
	return a, len(nsa), 0
}

// unixAddrHandler translates the AF_UNIX path in the sockaddr at argument
// addrArg (length in lenArg) for bind, connect and sendto.
func (s *sockets) unixAddrHandler(addrArg, lenArg int, flags pathmap.Flags) tracer.Handler {
	return tracer.Handler{Enter: func(c *tracer.Call) {
		a, n, errno := s.translateAddr(c, c.Arg(addrArg), int(int32(c.Arg(lenArg))), flags)
		switch {
		case errno != 0:
			c.Fail(errno)
		case a != 0:
			c.SetArg(addrArg, a)
			c.SetArg(lenArg, uint64(n))
		}
	}}
}

// msghdrSize is sizeof(struct msghdr) on 64-bit ABIs; msg_name is its
// first field and msg_namelen (a u32) its second.
const msghdrSize = 56

// sendmsgHandler translates msg_name of sendmsg(fd, msg, flags): a copy of
// the msghdr pointing at the host address replaces the guest's.
func (s *sockets) sendmsgHandler() tracer.Handler {
	return tracer.Handler{Enter: func(c *tracer.Call) {
		var hdr [msghdrSize]byte
		if c.Arg(1) == 0 || c.ReadMem(c.Arg(1), hdr[:]) != nil {
			return
		}
		name, n := binary.LittleEndian.Uint64(hdr[0:]), int(binary.LittleEndian.Uint32(hdr[8:]))
		a, nn, errno := s.translateAddr(c, name, n, pathmap.Follow)
		switch {
		case errno != 0:
			c.Fail(errno)
		case a != 0:
			binary.LittleEndian.PutUint64(hdr[0:], a)
			binary.LittleEndian.PutUint32(hdr[8:], uint32(nn))
			h, err := c.Push(hdr[:])
			if err != nil {
				c.Fail(unix.EFAULT)
				return
			}
			c.SetArg(1, h)
		}
	}}
}

// sockNameHandler maps an AF_UNIX address the kernel returns (getsockname,
// getpeername, accept) back to the guest path.
func (s *sockets) sockNameHandler(addrArg, lenPtrArg int) tracer.Handler {
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
			g, ok := s.names[string(path)]
			if !ok && !filepath.IsAbs(string(path)) {
				// Bound through a relative alias: the kernel reports that.
				if cwdHost, err := c.Mapper().Resolve(c.PathProc(), "/", guestCwd(c), true); err == nil {
					g, ok = s.names[filepath.Join(cwdHost, string(path))]
				}
			}
			if !ok {
				g, ok = toGuest(c, string(path))
			}
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
