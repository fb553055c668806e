package emul

import (
	"encoding/binary"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/ident"
	"github.com/droidroot/droidroot/pathmap"
	"github.com/droidroot/droidroot/tracer"
)

// A fake root's CAP_DAC_OVERRIDE. Under -0 droidroot runs as an ordinary
// user, so the kernel checks a file's modes against that user: a fake root
// could not write a 0444 file (echo >> /etc/sudoers), read a 0000 one, or
// create and remove names in a 0555 directory (rm -rf of Go's module
// cache), which real root and termux proot's -0 can. Where the real user
// owns the file or directory (on Android the app owns the whole rootfs),
// the tracer raises the owner's bits the call needs just before the kernel
// runs it and puts the mode back at its exit, as termux proot does around
// such calls. Other processes can see the raised mode meanwhile, and the
// ctime changes; a file the real user does not own stays refused.

// dacNeed is what a path argument of a call needs of the real user's
// modes.
type dacNeed int

const (
	// dacOpen: the file itself, read and/or write by the open flags
	// (flagsArg); the parent's write and search for a name O_CREAT makes.
	dacOpen dacNeed = iota
	// dacCreat: creat(2), an open for writing that creates.
	dacCreat
	// dacWrite: the file itself, written (truncate).
	dacWrite
	// dacParent: the directory holding the name, written and searched
	// (the name is made, removed or renamed).
	dacParent
)

// dacPath is one path argument of a call the override serves.
type dacPath struct {
	dirfd, path int // argument indices; dirfd -1 for AT_FDCWD
	need        dacNeed
}

// dacCall says what the path arguments of a call need.
type dacCall struct {
	paths    []dacPath
	flagsArg int // open's flags (dacOpen), -1 otherwise
	// how: flagsArg points to openat2's struct open_how, whose first
	// field is the flags (unless the handler made the call an openat).
	how bool
}

// dacCalls are the calls a fake root's override serves, by native name.
// access and faccessat answer a fake root's check themselves
// (accessHandler); chmod, chown and utimensat need ownership only.
func dacCalls() map[string]dacCall {
	parent := func(dirfd, path int) dacCall {
		return dacCall{paths: []dacPath{{dirfd, path, dacParent}}, flagsArg: -1}
	}
	two := func(d1, p1, d2, p2 int) dacCall {
		return dacCall{paths: []dacPath{{d1, p1, dacParent}, {d2, p2, dacParent}}, flagsArg: -1}
	}
	return map[string]dacCall{
		"open":      {paths: []dacPath{{-1, 0, dacOpen}}, flagsArg: 1},
		"openat":    {paths: []dacPath{{0, 1, dacOpen}}, flagsArg: 2},
		"openat2":   {paths: []dacPath{{0, 1, dacOpen}}, flagsArg: 2, how: true},
		"creat":     {paths: []dacPath{{-1, 0, dacCreat}}, flagsArg: -1},
		"truncate":  {paths: []dacPath{{-1, 0, dacWrite}}, flagsArg: -1},
		"unlink":    parent(-1, 0),
		"unlinkat":  parent(0, 1),
		"rmdir":     parent(-1, 0),
		"mkdir":     parent(-1, 0),
		"mkdirat":   parent(0, 1),
		"mknod":     parent(-1, 0),
		"mknodat":   parent(0, 1),
		"symlink":   parent(-1, 1),
		"symlinkat": parent(1, 2),
		"link":      parent(-1, 1),
		"linkat":    parent(2, 3),
		"rename":    two(-1, 0, -1, 1),
		"renameat":  two(0, 1, 2, 3),
		"renameat2": two(0, 1, 2, 3),
	}
}

// dacKey is a raised file's identity.
type dacKey struct{ dev, ino uint64 }

// dacRaised is a file or directory whose mode the override raised: held
// open (O_PATH) until the last call that needs it has run.
type dacRaised struct {
	key       dacKey
	fd        int
	orig, cur uint32 // permission bits before, and now
	refs      int
}

// dacPending is what one thread's call in flight raised.
type dacPending struct {
	raised   []*dacRaised
	prevExit bool // the wrapped handler wanted its own exit stop
}

// dacOverride is the tracer-wide state: the raised files, shared by calls
// of several threads that need the same one.
type dacOverride struct {
	uid     uint32 // the real user droidroot runs as
	raised  map[dacKey]*dacRaised
	pending map[int]*dacPending // by tid
	// call is the call whose entry handler runs with the search override
	// (pathmap.Proc.Search), nil when none; searched is what its lookups
	// raised so far.
	call     *tracer.Call
	searched []*dacRaised
	// ops are the file operations (the real ones; tests count them).
	ops dacOps
}

// dacOps are the host operations the override makes.
type dacOps struct {
	stat  func(path string, st *unix.Stat_t, follow bool) error
	open  func(path string, follow bool) (int, error)
	fstat func(fd int, st *unix.Stat_t) error
	chmod func(fd int, mode uint32) error
	close func(fd int) error
}

func realDacOps() dacOps {
	return dacOps{
		stat: func(p string, st *unix.Stat_t, follow bool) error {
			if follow {
				return unix.Stat(p, st)
			}
			return unix.Lstat(p, st)
		},
		open: func(p string, follow bool) (int, error) {
			flags := unix.O_PATH | unix.O_CLOEXEC
			if !follow {
				flags |= unix.O_NOFOLLOW
			}
			return unix.Open(p, flags, 0)
		},
		fstat: unix.Fstat,
		// An O_PATH descriptor takes no fchmod; its /proc/self/fd link
		// names the same inode.
		chmod: func(fd int, mode uint32) error {
			return unix.Fchmodat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), mode, 0)
		},
		close: unix.Close,
	}
}

func newDacOverride(uid uint32) *dacOverride {
	return &dacOverride{uid: uid, raised: map[dacKey]*dacRaised{}, pending: map[int]*dacPending{}, ops: realDacOps()}
}

// addDacOverride wraps the handlers of t's calls in dacCalls (those the
// host ABI has) with the override, for real user uid, and keeps it in the
// Emulation for the calls the tracer makes itself (dacAround).
func addDacOverride(t *tableBuilder, uid uint32) {
	d := newDacOverride(uid)
	t.e.dac = d
	calls := dacCalls()
	for name, dc := range calls {
		h, ok := t.get(name)
		if !ok || h.Enter == nil {
			continue
		}
		h = d.wrap(h, dc)
		if name == "mkdirat" { // one handler of both ABIs, which no later layer replaces
			// Modes a thread's call raised go back if it dies in the
			// call, its exit never seen.
			prev := h.Events
			h.Events = func(e *tracer.Event) {
				if prev != nil {
					prev(e)
				}
				if e.Kind == tracer.EventThreadGone {
					d.done(e.Tid)
				}
			}
		}
		t.set(name, h)
	}
	// The other calls that take a path search the directories on the way
	// too. Not an exec: its exit is the new program's (docs/identity.md).
	for name := range t.decls {
		h, ok := t.get(name)
		if _, done := calls[name]; done || !ok || h.Enter == nil || name == "execve" || name == "execveat" {
			continue
		}
		t.set(name, d.wrapSearch(h))
	}
}

// searcher returns the search override of call c's path lookups
// (pathmap.Proc.Search), or nil where there is none: c is not the call
// whose entry the override wraps.
func (d *dacOverride) searcher(c *tracer.Call) pathmap.SearchOverride {
	if d == nil || d.call != c {
		return nil
	}
	return dacSearch{d}
}

// dacSearch is a fake root's search of any directory (CAP_DAC_OVERRIDE
// and CAP_DAC_READ_SEARCH), for the path lookups of the call being entered.
type dacSearch struct{ d *dacOverride }

// Search implements pathmap.SearchOverride: directory dir gets its
// owner's search bit where the real user owns it, until the call's exit.
func (s dacSearch) Search(dir string) bool {
	r := s.d.raise(dir, true, 0o100, nil)
	if r == nil {
		return false
	}
	s.d.searched = append(s.d.searched, r)
	return true
}

// searchTarget gives directory host, the target of call c (chdir's or
// fchdir's), its owner's search bit where c has the search override and
// the host user may not search it: the kernel checks that search of the
// target itself, which no lookup of the walk makes.
func searchTarget(c *tracer.Call, host string) {
	s := emulationOf(c).dac.searcher(c)
	if s == nil || !strings.HasPrefix(host, "/") || len(host) >= tracer.PathMax {
		return
	}
	if c.Mapper().SearchDir(host) == unix.EACCES {
		s.Search(host)
	}
}

// enterSearching runs enter, a handler's entry, with the search override
// for c's lookups where c's credentials have it, and returns what the
// lookups raised.
func (d *dacOverride) enterSearching(c *tracer.Call, enter func(c *tracer.Call)) []*dacRaised {
	cr := c.Creds()
	if c.AtSIGSYS() || !(cr.Capable(ident.CapDacOverride) || cr.Capable(ident.CapDacReadSearch)) {
		enter(c)
		return nil
	}
	d.call, d.searched = c, nil
	enter(c)
	raised := d.searched
	d.call, d.searched = nil, nil
	return raised
}

// wrapSearch is h with the search override for the directories on the
// way of its paths: what a lookup raised goes back at the call's exit.
func (d *dacOverride) wrapSearch(h tracer.Handler) tracer.Handler {
	enter := h.Enter
	h.Enter = func(c *tracer.Call) {
		raised := d.enterSearching(c, enter)
		if len(raised) == 0 {
			return
		}
		tid := c.Tid()
		d.done(tid) // a call before whose exit was never seen
		d.pending[tid] = &dacPending{raised: raised}
		if !c.AfterExit(func(*tracer.Call) { d.done(tid) }) {
			d.done(tid) // the kernel runs nothing more of it
		}
	}
	return h
}

// wrap is h with the override for call dc: after h's Enter (which has
// translated the paths), the modes the call needs are raised and the call
// stops at its exit, where they go back.
func (d *dacOverride) wrap(h tracer.Handler, dc dacCall) tracer.Handler {
	enter, exit := h.Enter, h.Exit
	h.Enter = func(c *tracer.Call) {
		raised := d.enterSearching(c, enter)
		prevExit := exit != nil && c.ExitWanted()
		if !prevExit {
			c.NoExit() // the Exit below is for raised modes only
		}
		if c.Answered() || c.AtSIGSYS() {
			d.release(raised)
			return
		}
		if c.Creds().Capable(ident.CapDacOverride) {
			raised = append(raised, d.enter(c, dc)...)
		}
		if len(raised) == 0 {
			return
		}
		d.done(c.Tid()) // a call before whose exit was never seen
		d.pending[c.Tid()] = &dacPending{raised: raised, prevExit: prevExit}
		c.WantExit()
	}
	h.Exit = func(c *tracer.Call) {
		p := d.pending[c.Tid()]
		if p == nil {
			if exit != nil {
				exit(c)
			}
			return
		}
		d.done(c.Tid())
		if p.prevExit {
			exit(c)
		}
	}
	return h
}

// enter raises what call c (as translated: its registers now) needs of the
// real user's modes, returning what it raised.
func (d *dacOverride) enter(c *tracer.Call, dc dacCall) []*dacRaised {
	var flags uint64
	if dc.flagsArg >= 0 {
		flags = c.Regs.Arg(dc.flagsArg)
	}
	if dc.how && c.Nr() == nrOf("openat2") {
		var b [8]byte
		if c.ReadMem(flags, b[:]) != nil {
			return nil
		}
		flags = binary.LittleEndian.Uint64(b[:])
	}
	var out []*dacRaised
	for _, pa := range dc.paths {
		s, err := c.ReadPath(c.Regs.Arg(pa.path))
		if err != nil || s == "" {
			continue
		}
		dirfd := int32(unix.AT_FDCWD)
		if pa.dirfd >= 0 {
			dirfd = int32(c.Regs.Arg(pa.dirfd))
		}
		if r := d.raiseFor(c.Tid(), dirfd, s, pa.need, flags); r != nil {
			out = append(out, r)
		}
	}
	return out
}

// kernelPath is the path, usable by the tracer, that the kernel resolves
// for path s of thread tid relative to dirfd.
func kernelPath(tid int, dirfd int32, s string) string {
	switch {
	case strings.HasPrefix(s, "/"):
		return s
	case dirfd == unix.AT_FDCWD:
		return procCwd(tid) + "/" + s
	default:
		return procFd(tid, int(dirfd)) + "/" + s
	}
}

// parentPath is the directory holding the last component of absolute
// path p (trailing slashes ignored), or "" for none (p is "/").
func parentPath(p string) string {
	p = strings.TrimRight(p, "/")
	i := strings.LastIndexByte(p, '/')
	switch {
	case i < 0:
		return ""
	case i == 0:
		return "/"
	}
	return p[:i]
}

// openNeed is the owner bits an open with flags needs of an existing file,
// and whether a missing name is created (O_CREAT), or ok false where the
// override has nothing to give (O_PATH checks nothing; O_EXCL of an
// existing name is EEXIST whatever the modes).
func openNeed(flags uint64) (bits uint32, creates, ok bool) {
	if flags&unix.O_PATH != 0 {
		return 0, false, false
	}
	switch flags & unix.O_ACCMODE {
	case unix.O_RDONLY:
		bits = 0o400
	case unix.O_WRONLY:
		bits = 0o200
	case unix.O_RDWR:
		bits = 0o600
	default:
		return 0, false, false
	}
	if flags&unix.O_TRUNC != 0 {
		bits |= 0o200
	}
	return bits, flags&unix.O_CREAT != 0, true
}

// raiseFor raises what one path argument needs: the file's owner bits, or
// its parent's write and search bits.
func (d *dacOverride) raiseFor(tid int, dirfd int32, s string, need dacNeed, flags uint64) *dacRaised {
	p := kernelPath(tid, dirfd, s)
	switch need {
	case dacParent:
		return d.raiseDir(parentPath(p))
	case dacWrite:
		return d.raise(p, true, 0o200, nil)
	}
	if need == dacCreat {
		flags = unix.O_CREAT | unix.O_WRONLY | unix.O_TRUNC
	}
	bits, creates, ok := openNeed(flags)
	if !ok {
		return nil
	}
	follow := flags&unix.O_NOFOLLOW == 0
	var st unix.Stat_t
	switch err := d.ops.stat(p, &st, follow); {
	case err == nil:
		if creates && flags&unix.O_EXCL != 0 {
			return nil
		}
		return d.raise(p, follow, bits, &st)
	case err == unix.ENOENT && creates:
		return d.raiseDir(parentPath(p))
	}
	return nil
}

// raiseDir raises directory dir's write and search bits.
func (d *dacOverride) raiseDir(dir string) *dacRaised {
	if dir == "" {
		return nil
	}
	return d.raise(dir, true, 0o300, nil)
}

// raise gives file p the owner bits, unless it has them already, it is a
// symlink, or the real user does not own it; pre is its stat if made.
func (d *dacOverride) raise(p string, follow bool, bits uint32, pre *unix.Stat_t) *dacRaised {
	var st unix.Stat_t
	if pre != nil {
		st = *pre
	} else if err := d.ops.stat(p, &st, follow); err != nil {
		return nil
	}
	key := dacKey{uint64(st.Dev), uint64(st.Ino)}
	if r := d.raised[key]; r != nil {
		if r.cur&bits != bits {
			if d.ops.chmod(r.fd, r.cur|bits) != nil {
				return nil
			}
			r.cur |= bits
		}
		r.refs++
		return r
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK || st.Uid != d.uid || st.Mode&bits == bits {
		return nil
	}
	fd, err := d.ops.open(p, follow)
	if err != nil {
		return nil
	}
	// The file opened must be the one looked at (no swap in between).
	if d.ops.fstat(fd, &st) != nil || (dacKey{uint64(st.Dev), uint64(st.Ino)}) != key {
		d.ops.close(fd)
		return nil
	}
	orig := st.Mode & 0o7777
	if d.ops.chmod(fd, orig|bits) != nil {
		d.ops.close(fd)
		return nil
	}
	r := &dacRaised{key: key, fd: fd, orig: orig, cur: orig | bits, refs: 1}
	d.raised[key] = r
	return r
}

// dacAround runs fn, a call's work the tracer makes itself with the
// host's paths (-l's emulated links), with the write and search bits of
// directories dirs raised as for the kernel's calls, for a fake root.
func dacAround(c *tracer.Call, fn func() int64, dirs ...string) int64 {
	d := emulationOf(c).dac
	if d == nil || !c.Creds().Capable(ident.CapDacOverride) {
		return fn()
	}
	var raised []*dacRaised
	for _, dir := range dirs {
		if r := d.raiseDir(dir); r != nil {
			raised = append(raised, r)
		}
	}
	defer d.release(raised)
	return fn()
}

// done puts back what thread tid's call raised, where no other call in
// flight still needs it.
func (d *dacOverride) done(tid int) {
	p := d.pending[tid]
	if p == nil {
		return
	}
	delete(d.pending, tid)
	d.release(p.raised)
}

// release drops one use of each of raised, putting back the modes no call
// uses any more.
func (d *dacOverride) release(raised []*dacRaised) {
	for _, r := range raised {
		r.refs--
		if r.refs > 0 {
			continue
		}
		d.ops.chmod(r.fd, r.orig)
		d.ops.close(r.fd)
		delete(d.raised, r.key)
	}
}
