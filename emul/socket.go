package emul

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/pathmap"
	"github.com/droidroot/droidroot/tmpdir"
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
	aliases map[string]string // host directory or socket -> short symlink to it
	dir     string            // the directory of the aliases, made on first use
	tmpDir  string            // where dir is made ("": os.TempDir())
	seq     int               // temporary bind names made so far
	// creds maps SCM_CREDENTIALS under emulated ids (sockcreds.go); nil
	// without them.
	creds *sockCreds
}

// newSockets returns an empty sockets whose aliases go into a directory
// made in tmpDir (Config.SessionDir; "" means os.TempDir()).
func newSockets(tmpDir string) *sockets {
	return &sockets{names: map[string]string{}, aliases: map[string]string{}, tmpDir: tmpDir}
}

// sunAddr is the host sun_path chosen for a guest AF_UNIX address. A bind
// whose host path has no short form with its own basename binds a short
// temporary name in the same directory (path) that Exit renames to rename.
type sunAddr struct {
	path   string // what the kernel is given
	rename string // for a bind through a temporary name: the host path it becomes
}

// shortPath returns a sun_path that reaches host: host itself when it fits
// (108 bytes without a NUL, as the kernel takes), else the path relative to
// the caller's current directory, else a path through a short symlink to its
// directory (the kernel follows symlinks in every component but the last,
// for bind as for connect). When the basename itself is too long for that,
// connect goes through a short symlink to the socket itself (the kernel
// follows the last component too), and bind binds a temporary short name in
// the same directory, renamed at exit (bindExit).
func (s *sockets) shortPath(c *tracer.Call, host string, bind bool) (sunAddr, unix.Errno) {
	if len(host) <= sunPathMax {
		return sunAddr{path: host}, 0
	}
	if cwdHost, err := c.Mapper().Resolve(c.PathProc(), "/", guestCwd(c), true); err == nil {
		if rel, err := filepath.Rel(cwdHost, host); err == nil && len(rel) <= sunPathMax {
			return sunAddr{path: rel}, 0
		}
	}
	dir, base := filepath.Split(host)
	alias, errno := s.alias(dir)
	if errno != 0 {
		return sunAddr{}, errno
	}
	if short := alias + "/" + base; len(short) <= sunPathMax {
		return sunAddr{path: short}, 0
	}
	if !bind {
		// connect and sendto follow a symlink in the last component.
		file, errno := s.alias(host)
		if errno != 0 || len(file) > sunPathMax {
			return sunAddr{}, unix.ENAMETOOLONG
		}
		return sunAddr{path: file}, 0
	}
	s.seq++
	tmp := alias + "/.drsock-" + strconv.Itoa(os.Getpid()) + "-" + strconv.Itoa(s.seq)
	if len(tmp) > sunPathMax {
		return sunAddr{}, unix.ENAMETOOLONG
	}
	return sunAddr{path: tmp, rename: host}, 0
}

// removeAliases removes the aliases directory and forgets its aliases.
func (s *sockets) removeAliases() {
	if s.dir != "" {
		tmpdir.Remove(s.dir)
		s.dir = ""
		s.aliases = map[string]string{}
	}
}

// alias returns a short symlink to target in the aliases directory, made on
// first use.
func (s *sockets) alias(target string) (string, unix.Errno) {
	if a, ok := s.aliases[target]; ok {
		return a, 0
	}
	if s.dir == "" {
		d, err := tmpdir.Make(s.tmpDir, "drs")
		if err != nil {
			return "", unix.ENAMETOOLONG
		}
		s.dir = d
	}
	a := filepath.Join(s.dir, strconv.Itoa(len(s.aliases)))
	if err := os.Symlink(target, a); err != nil {
		return "", unix.ENAMETOOLONG
	}
	s.aliases[target] = a
	return a, 0
}

// translateAddr translates the AF_UNIX sockaddr of n bytes at addr. It
// returns the address and length of a host sockaddr pushed onto the guest
// stack (0, 0 when nothing needs changing), the rename a bind through a
// temporary name needs at exit (nil: none), or the errno the call fails
// with.
func (s *sockets) translateAddr(c *tracer.Call, addr uint64, n int, flags pathmap.Flags) (uint64, int, *bindRename, unix.Errno) {
	if addr == 0 || n <= 2 || n > 2+sunPathMax {
		return 0, 0, nil, 0
	}
	sa := make([]byte, n)
	if err := c.ReadMem(addr, sa); err != nil {
		return 0, 0, nil, 0 // the kernel reports EFAULT itself
	}
	if binary.LittleEndian.Uint16(sa) != unix.AF_UNIX || sa[2] == 0 {
		return 0, 0, nil, 0 // another family, or an abstract socket
	}
	path := sa[2:]
	if i := bytes.IndexByte(path, 0); i >= 0 {
		path = path[:i]
	}
	res, errno := lookupAt(c, -1, string(path), flags)
	if errno != 0 {
		return 0, 0, nil, errno
	}
	bind := flags&pathmap.Entry != 0
	host, errno := s.shortPath(c, res.Host, bind)
	if errno != 0 {
		return 0, 0, nil, errno
	}
	if host.rename != "" {
		if _, err := os.Lstat(host.rename); err == nil {
			return 0, 0, nil, unix.EADDRINUSE // the kernel's answer when the name exists
		}
	}
	if bind {
		// Not where a name is there already: the kernel's bind then
		// fails (EADDRINUSE), and the name stays the socket's that has it.
		if _, err := os.Lstat(res.Host); err != nil {
			s.names[host.path] = string(path)
			s.names[res.Host] = string(path)
		}
	}
	if host.path == string(path) {
		return 0, 0, nil, 0
	}
	nsa := sockaddrUnBytes(host.path)
	a, err := c.PushInput(nsa)
	if err != nil {
		return 0, 0, nil, unix.EFAULT
	}
	if host.rename == "" {
		return a, len(nsa), nil, 0
	}
	return a, len(nsa), &bindRename{tmp: filepath.Join(filepath.Dir(host.rename), filepath.Base(host.path)), final: host.rename}, 0
}

// sockaddrUnBytes is a struct sockaddr_un naming path, NUL-terminated when
// there is room (a sun_path of the full 108 bytes has none, as the kernel
// allows).
func sockaddrUnBytes(path string) []byte {
	n := 2 + len(path) + 1
	if len(path) >= sunPathMax {
		n = 2 + sunPathMax
	}
	b := make([]byte, n)
	binary.LittleEndian.PutUint16(b, unix.AF_UNIX)
	copy(b[2:], path)
	return b
}

// bindRename is what a bind through a temporary name leaves for its exit.
type bindRename struct{ tmp, final string }

// bindExit renames the socket a bind made under a temporary short name to
// the name the guest asked for; when that name appeared meanwhile the call
// fails with EADDRINUSE, as the kernel's bind.
func bindExit(c *tracer.Call) {
	r, ok := c.Data.(bindRename)
	if !ok || c.Ret() < 0 {
		return
	}
	err := unix.Renameat2(unix.AT_FDCWD, r.tmp, unix.AT_FDCWD, r.final, unix.RENAME_NOREPLACE)
	if err == unix.EINVAL { // a file system without RENAME_NOREPLACE
		if _, lerr := os.Lstat(r.final); lerr == nil {
			err = unix.EEXIST
		} else {
			err = unix.Rename(r.tmp, r.final)
		}
	}
	if err != nil {
		unix.Unlink(r.tmp)
		if err == unix.EEXIST {
			err = unix.EADDRINUSE
		}
		c.Fail(err.(unix.Errno))
	}
}

// unixAddrHandler translates the AF_UNIX path in the sockaddr at argument
// addrArg (length in lenArg) for bind, connect and sendto. Only a bind
// through a temporary name (shortPath) stops at exit.
func (s *sockets) unixAddrHandler(addrArg, lenArg int, flags pathmap.Flags) tracer.Handler {
	h := tracer.Handler{Enter: func(c *tracer.Call) {
		a, n, rename, errno := s.translateAddr(c, c.Arg(addrArg), int(int32(c.Arg(lenArg))), flags)
		switch {
		case errno != 0:
			c.Fail(errno)
			return
		case a != 0:
			c.SetArg(addrArg, a)
			c.SetArg(lenArg, uint64(n))
		}
		if rename == nil {
			c.NoExit()
			return
		}
		c.Data = *rename
	}}
	if flags&pathmap.Entry != 0 {
		h.Exit = bindExit
	}
	// Only an address of 3 to 2+sunPathMax bytes can be an AF_UNIX path
	// (translateAddr): every other length is let through by the filter, so
	// that send() (sendto with no address, length 0) on any socket costs no
	// stop. The length is an int, whole in the low 32 bits the rule checks.
	h.TraceIf = &tracer.ArgMask{Arg: lenArg, Min: 3, Max: 2 + sunPathMax}
	return h
}

// msghdrSize is sizeof(struct msghdr) on 64-bit ABIs; msg_name is its
// first field and msg_namelen (a u32) its second.
const msghdrSize = 56

// sendmsgHandler translates msg_name of sendmsg(fd, msg, flags), and under
// emulated ids its SCM_CREDENTIALS (sockCreds.sendControl): a copy of the
// msghdr pointing at the host address and the copied control data replaces
// the guest's.
func (s *sockets) sendmsgHandler() tracer.Handler {
	return tracer.Handler{Enter: func(c *tracer.Call) {
		var hdr [msghdrSize]byte
		if c.Arg(1) == 0 || c.ReadMem(c.Arg(1), hdr[:]) != nil {
			return
		}
		changed := false
		name, n := binary.LittleEndian.Uint64(hdr[0:]), int(binary.LittleEndian.Uint32(hdr[8:]))
		a, nn, _, errno := s.translateAddr(c, name, n, pathmap.Follow)
		switch {
		case errno != 0:
			c.Fail(errno)
			return
		case a != 0:
			binary.LittleEndian.PutUint64(hdr[0:], a)
			binary.LittleEndian.PutUint32(hdr[8:], uint32(nn))
			changed = true
		}
		if s.creds != nil {
			ctl, errno := s.creds.sendControl(c, hdr[:])
			switch {
			case errno != 0:
				c.Fail(errno)
				return
			case ctl != 0:
				binary.LittleEndian.PutUint64(hdr[msgControlOff:], ctl)
				changed = true
			}
		}
		if changed {
			h, err := c.Push(hdr[:])
			if err != nil {
				c.Fail(unix.EFAULT)
				return
			}
			c.SetArg(1, h)
		}
	}}
}

// recvfromHandler maps the AF_UNIX name recvfrom reports for a datagram's
// sender (the sun_path the sender bound, which the kernel keeps as it was
// given: the host path droidroot gave it) back to the name the sender
// gave, as a chroot's kernel reports it, so that a reply sent to that name
// reaches the sender (Go's and musl's programs, and every static one: the
// fast path library maps the names its own recvfrom and recvmsg receive,
// docs/fastpath.md). The filter stops only the calls that ask for the
// sender's name (a src_addr whose low 32 bits are not all zero), so that
// recv() and recvfrom without an address cost no stop; the library makes
// its recvfrom through the trampoline. recvmsg's name sits in guest memory,
// where the filter cannot see it: recvmsg is not stopped (docs/architecture.md).
func (s *sockets) recvfromHandler() tracer.Handler {
	h := s.sockNameHandler(4, 5)
	h.TraceIf = &tracer.ArgMask{Arg: 4, Mask: 0xffffffff}
	return h
}

// sockNameHandler maps an AF_UNIX address the kernel returns (getsockname,
// getpeername, accept, recvfrom) back to the guest path. The kernel writes
// as much of the address as the guest's buffer holds and reports its whole
// length; a buffer too short for the longest address (below
// sockNameFull) would hold only part of the host path, which cannot be
// mapped: the kernel is then given a buffer of that size on the guest's
// stack, and the exit writes the guest path's part that fits into the
// guest's buffer, with the guest path's whole length, as the kernel would.
func (s *sockets) sockNameHandler(addrArg, lenPtrArg int) tracer.Handler {
	return tracer.Handler{
		Enter: func(c *tracer.Call) {
			var lb [4]byte
			if c.Arg(addrArg) == 0 || c.Arg(lenPtrArg) == 0 || c.ReadMem(c.Arg(lenPtrArg), lb[:]) != nil {
				c.NoExit()
				return
			}
			n := int(int32(binary.LittleEndian.Uint32(lb[:])))
			nc := sockNameCall{addr: c.Arg(addrArg), lenp: c.Arg(lenPtrArg), size: n}
			if n >= 0 && n < sockNameFull {
				// The kernel's buffer and length on the stack (one push:
				// the length word after the buffer).
				b := make([]byte, sockNameFull+4)
				binary.LittleEndian.PutUint32(b[sockNameFull:], sockNameFull)
				addr, err := c.Push(b)
				if err != nil {
					c.NoExit()
					return
				}
				c.SetArg(addrArg, addr)
				c.SetArg(lenPtrArg, addr+sockNameFull)
				nc.kaddr, nc.klenp = addr, addr+sockNameFull
			} else {
				nc.kaddr, nc.klenp = nc.addr, nc.lenp
			}
			c.Data = nc
		},
		Exit: func(c *tracer.Call) {
			nc := c.Data.(sockNameCall)
			if c.Ret() < 0 {
				return
			}
			var lb [4]byte
			if c.ReadMem(nc.klenp, lb[:]) != nil {
				return
			}
			full := int(binary.LittleEndian.Uint32(lb[:]))
			n := min(full, sockNameFull)
			if nc.kaddr == nc.addr {
				n = min(n, nc.size)
			}
			sa := make([]byte, n)
			if c.ReadMem(nc.kaddr, sa) != nil {
				return
			}
			out := s.guestSockName(c, sa, full)
			if nc.kaddr == nc.addr && out == nil {
				return // the kernel's own answer, in the guest's buffer
			}
			if out != nil {
				full = len(out)
			} else {
				out = sa
			}
			// Write what fits the guest's buffer; report the whole length,
			// as the kernel does.
			w := out[:min(len(out), max(nc.size, 0))]
			if len(w) > 0 && c.WriteMem(nc.addr, w) != nil {
				c.Fail(unix.EFAULT)
				return
			}
			binary.LittleEndian.PutUint32(lb[:], uint32(full))
			if c.WriteMem(nc.lenp, lb[:]) != nil {
				c.Fail(unix.EFAULT)
			}
		},
	}
}

// sockNameFull is the buffer that holds every AF_UNIX address the kernel
// reports: the family, a sun_path of 108 bytes and the NUL the kernel
// counts past it.
const sockNameFull = 2 + sunPathMax + 1

// sockNameCall is what sockNameHandler's Enter leaves its Exit: the guest's
// buffer, length word and buffer size, and the buffer and length word the
// kernel was given (the guest's own, or ones on its stack).
type sockNameCall struct {
	addr, lenp   uint64
	size         int
	kaddr, klenp uint64
}

// guestSockName returns the guest's form of the address sa (of whole
// length full, as the kernel reported it) for an AF_UNIX path, the NUL
// counted, or nil for an address to report as it is.
func (s *sockets) guestSockName(c *tracer.Call, sa []byte, full int) []byte {
	if full <= 2 || full > sockNameFull || len(sa) < full || binary.LittleEndian.Uint16(sa) != unix.AF_UNIX || sa[2] == 0 {
		return nil
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
		return nil
	}
	nsa := make([]byte, 2+len(g)+1) // the kernel counts the NUL, even past sun_path
	binary.LittleEndian.PutUint16(nsa, unix.AF_UNIX)
	copy(nsa[2:], g)
	return nsa
}
