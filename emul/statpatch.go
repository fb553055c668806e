package emul

import (
	"encoding/binary"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/tracer"
)

// Results of the stat family patched at exit: st_nlink of an emulated
// hard link (-l) and st_size of a symlink (-L).

// statx field offsets (include/uapi/linux/stat.h).
const (
	statxNlinkOff = 16
	statxModeOff  = 28
	statxSizeOff  = 40
)

// statKind says which structure a stat call fills.
type statKind int

const (
	kindStat  statKind = iota // struct stat
	kindStatx                 // struct statx
)

// statPatch is what the exit of one stat call must fix.
type statPatch struct {
	kind   statKind
	buf    uint64
	host   string // the host path the kernel looked at
	nlink  int    // > 0: st_nlink to report
	lsize  bool   // a symlink's st_size becomes its guest readlink length
	noFoll bool
}

// statPatcher builds the patching stat handlers.
type statPatcher struct {
	l2s   bool
	lsize bool
}

// handler is a stat call with path argument a (a.path < 0: fstat on the
// fd in argument 0) and result sd; a pinned path is answered in the tracer
// (emulStat), the patches made at once.
func (s statPatcher) handler(a pathArg, sd *statDecl) tracer.Handler {
	bufArg, kind, noFollow := sd.bufArg, sd.kind, sd.noFollow
	return tracer.Handler{
		Enter: func(c *tracer.Call) {
			var host string
			var t translated
			if a.path < 0 {
				h, errno := fdHostPath(c, int(int32(c.Arg(0))))
				if errno != 0 {
					c.NoExit()
					return // the kernel says EBADF
				}
				host = strings.TrimSuffix(h, " (deleted)")
			} else {
				var errno unix.Errno
				if t, errno = translate(c, a, 0); errno != 0 {
					c.Fail(errno)
					return
				}
				host = t.host
				if t.skip {
					if h, errno := fdHostPath(c, int(int32(c.Arg(a.dirfd)))); errno == 0 {
						host = strings.TrimSuffix(h, " (deleted)")
					}
				}
			}
			p := &statPatch{kind: kind, buf: c.Arg(bufArg), host: host}
			if s.l2s && isL2SData(filepath.Base(host)) {
				// One name needs no patch: the data file's own
				// st_nlink is 1 (links are refused where it exists).
				if n := l2sCount(host); n > 1 {
					p.nlink = n
				}
			}
			if s.lsize && noFollow(c) && strings.HasPrefix(host, "/") {
				// Only symlinks need the exit stop: one lstat here is
				// cheaper than a stop for every lstat.
				var st unix.Stat_t
				p.lsize = unix.Fstatat(unix.AT_FDCWD, host, &st, unix.AT_SYMLINK_NOFOLLOW) == nil &&
					st.Mode&unix.S_IFMT == unix.S_IFLNK
			}
			if p.nlink == 0 && !p.lsize {
				c.NoExit()
			} else {
				c.Data = p
			}
			switch {
			case a.path < 0:
				emulFdStat(c, int(int32(c.Arg(0))), sd)
			case !statInTracer(c, a, t, sd):
				writeArgs(c, []pathArg{a}, []translated{t})
			}
		},
		Exit: func(c *tracer.Call) {
			p, _ := c.Data.(*statPatch)
			if p == nil || c.Ret() != 0 {
				return
			}
			p.apply(c)
		},
	}
}

// apply patches the structure the kernel filled.
func (p *statPatch) apply(c *tracer.Call) {
	nlinkOff, nlinkSize, modeOff, modeSize, sizeOff := tracer.StatNlinkOff, tracer.StatNlinkSize, tracer.StatModeOff, 4, tracer.StatSizeOff
	if p.kind == kindStatx {
		nlinkOff, nlinkSize, modeOff, modeSize, sizeOff = statxNlinkOff, 4, statxModeOff, 2, statxSizeOff
	}
	if p.nlink > 0 {
		b := make([]byte, nlinkSize)
		if nlinkSize == 8 {
			binary.LittleEndian.PutUint64(b, uint64(p.nlink))
		} else {
			binary.LittleEndian.PutUint32(b, uint32(p.nlink))
		}
		c.WriteMem(p.buf+uint64(nlinkOff), b)
	}
	if p.lsize {
		m := make([]byte, modeSize)
		if c.ReadMem(p.buf+uint64(modeOff), m) != nil {
			return
		}
		mode := uint32(m[0]) | uint32(m[1])<<8
		if mode&unix.S_IFMT != unix.S_IFLNK {
			return
		}
		target, errno := readlinkGuest(c, p.host)
		if errno != 0 {
			return
		}
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(len(target)))
		c.WriteMem(p.buf+uint64(sizeOff), b[:])
	}
}

// flagSet reports whether flag is set in argument i.
func flagSet(i int, flag uint64) func(c *tracer.Call) bool {
	return func(c *tracer.Call) bool { return c.Arg(i)&flag != 0 }
}

// alwaysTrue and alwaysFalse are the noFollow of calls that always act on
// a final symlink itself (lstat) and of calls that never do (stat).
func alwaysTrue(*tracer.Call) bool  { return true }
func alwaysFalse(*tracer.Call) bool { return false }
