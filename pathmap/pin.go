//go:build linux

package pathmap

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Pinned directories: the race between a lookup and the kernel's use of its
// host path (issue 18). A host path that Lookup returns holds no symlink,
// but by the time the kernel walks it for the tracee, another process may
// have swapped a directory on it with a symlink (renameat2
// RENAME_EXCHANGE), which the kernel would follow in the host's view. So
// the kernel is given the path's last component below a directory the
// mapper's process holds open instead: "/proc/<pid>/fd/<N>/<last>" (the
// magic link is followed for the tracee as for the anchors of anchor.go),
// N an O_PATH descriptor of the parent directory that no later rename can
// change. Each cached directory node (cache.go) at or below a mount top
// (the rootfs, a directory binding's source) holds one, opened the first
// time it is needed: a top by its path (as a bind mount pins its source),
// every other directory with openat(2) of its one name below its parent's
// descriptor with O_NOFOLLOW, so a descriptor is always a directory the
// guest reaches by names, never through a symlink. A node is dropped when a
// change on its path is reported, and the next lookup opens its
// replacement; a call whose walk ran before the change uses the directory it
// checked, as if it had run before the change.
//
// A dropped node's descriptor is closed only after pinGrace, so that a
// tracee resumed with its number, which has not walked it yet, never finds
// another directory under that number; every descriptor the mapper holds
// open is a guest directory anyway.

// pinGrace is how long a dropped node's descriptor stays open.
const pinGrace = 2 * time.Second

// removedGrace is how long a file pin in use keeps a file removed since
// (letGoRemoved).
const removedGrace = 200 * time.Millisecond

// maxPinsCap bounds the descriptors the nodes hold (a quarter of the
// process's RLIMIT_NOFILE if that is less, at least minPins): past it, all
// are retired and opened again as needed.
const (
	maxPinsCap = 4096
	minPins    = 64
)

// pinLimit is the number of descriptors the nodes may hold.
func pinLimit() int {
	var rl unix.Rlimit
	n := maxPinsCap
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) == nil && rl.Cur/4 < uint64(n) {
		n = int(rl.Cur / 4)
	}
	return max(n, minPins)
}

// retired is a descriptor waiting to be closed.
type retired struct {
	fd int
	at time.Time
}

// Pin says what PinnedName found.
type Pin int

const (
	// Pinned: the name is below the pinned parent directory.
	Pinned Pin = iota
	// Unpinned: the parent cannot be pinned (see PinnedName); use the
	// host path as it is.
	Unpinned
	// Stale: the parent is no longer the directory the cache knew (it was
	// renamed or replaced since the lookup, whose answer is out of date):
	// look the path up again.
	Stale
)

// PinnedName returns the name of host path host (a path Lookup returned)
// that the kernel resolves below its parent directory as the mapper found
// it: "/proc/<pid>/fd/<N>/<last>". It is Unpinned, and host must be used
// as it is, when the parent cannot be pinned: no lookup cache, a parent
// outside every mount top or on a filesystem the cache does not watch
// (procfs, FUSE, ...), a last component "." or "..". It is Stale when the
// directory at the parent's path (or one above it) is not the one the
// cache knew: the lookup must be made again, the change being reported by
// then; errno is then what the kernel would answer if the path stayed as it
// is now (ENOENT: the parent is missing, ENOTDIR: it is no directory).
//
// The host file of a file binding is Unpinned too: the binding names that
// file (as a bind mount holds its source from the time it is made), and
// the directory it sits in is none of the guest's, often the host's /tmp,
// whose inotify watch would cost a walk over every name the kernel caches
// in it (tens of milliseconds where many temporary files came and went).
func (m *Mapper) PinnedName(host string) (name string, pin Pin, errno syscall.Errno) {
	if !m.mayPin(host) {
		return "", Unpinned, 0
	}
	return m.cache.pinnedName(host)
}

// mayPin tells whether host may be pinned at all (PinnedName, PinnedFile):
// a cache, an absolute path other than "/", not a file binding's host.
func (m *Mapper) mayPin(host string) bool {
	return m.cache != nil && len(host) >= 2 && host[0] == '/' && !m.fileHosts[host]
}

func (c *cache) pinnedName(host string) (string, Pin, syscall.Errno) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, last, slash, pin, errno := c.pinnedParent(host)
	if pin != Pinned {
		return "", pin, errno
	}
	return below(n.pinName, last, slash), Pinned, 0
}

// below is name last (with its trailing slash) below directory prefix
// dir ("/proc/<pid>/fd/<N>/").
func below(dir, last string, slash bool) string {
	if slash {
		return dir + last + "/"
	}
	return dir + last
}

// pinnedParent finds and pins host's parent directory's node, for
// pinnedName: the node, host's last component and whether host ends with
// a slash, or what pinnedName answers when the parent cannot be pinned.
// c.mu is held.
func (c *cache) pinnedParent(host string) (n *dirNode, last string, slash bool, pin Pin, errno syscall.Errno) {
	h := host
	slash = h[len(h)-1] == '/'
	if slash {
		h = strings.TrimRight(h, "/")
	}
	i := strings.LastIndexByte(h, '/')
	if i < 0 || !cleanAbsString(h) || c.ifd < 0 {
		return nil, "", false, Unpinned, 0
	}
	last = h[i+1:]
	c.reap(false)
	dir := h[:max(i, 1)]
	n = c.dirs[dir]
	failed := false
	switch {
	case n != nil && !n.cacheable:
		n, failed = nil, n.failed
	case n == nil:
		n, failed = c.makeDir([]byte(dir))
	}
	if n == nil {
		e := c.gone(dir)
		if failed && e != 0 {
			return nil, "", false, Stale, e
		}
		if c.outOfDate(dir) {
			// With what is there now: a file at dir (the lookup, which
			// checks no name before the last, could not tell) is the
			// kernel's ENOTDIR below it.
			return nil, "", false, Stale, e
		}
		return nil, "", false, Unpinned, 0
	}
	if n.pin <= 0 {
		_, p := c.pinFd(n, 0)
		if p == Stale {
			return nil, "", false, p, c.gone(dir)
		}
		if p != Pinned {
			return nil, "", false, p, 0
		}
	}
	return n, last, slash, Pinned, 0
}

// outOfDate tells whether dir cannot be pinned because the lookup that
// found it is out of date: dir's node, or its nearest ancestor's in the
// cache, failed its watch because it was no directory then (notDir: a
// symlink swapped in for it since), though dir is a directory again now.
// That node is dropped, so that the lookup made again watches the
// directory then there; handing the host path to the kernel instead would
// let it follow a symlink swapped in again, with the host's root. A
// directory whose watch fails for good (EACCES, the watch limit, a
// filesystem without events) is not out of date: Unpinned. c.mu is held.
func (c *cache) outOfDate(dir string) bool {
	for d := dir; ; {
		if n := c.dirs[d]; n != nil {
			if n.cacheable || !n.notDir {
				return false
			}
			c.dropNode(n)
			return true
		}
		i := strings.LastIndexByte(d, '/')
		if i <= 0 {
			return false
		}
		d = d[:i]
	}
}

// PinnedFile is PinnedName for a call whose kernel follows host's last
// component (open without O_NOFOLLOW, stat, chdir, ...): what the lookup
// found there is pinned too, so that a symlink swapped in for it after
// the lookup is not followed with the host's root (issue 18, "A last
// component swapped with a symlink"). The name is then
// "/proc/<pid>/fd/<M>", M an O_PATH descriptor of the file or directory
// itself, opened with O_NOFOLLOW below the pinned parent and checked to be
// no symlink, and kept by the name's cache entry for the next calls until a
// change drops it; the kernel's walk of that magic link ends at that inode
// and follows nothing. fd is M, which the caller gives back with
// ReleaseFile once the kernel has resolved the name (its thread's next
// call), or -1 when there is nothing to give back: a
// directory the cache pins already is named by its own descriptor, and a
// name that cannot be opened so (missing: the kernel creates it or says
// ENOENT; EACCES, ...) gets PinnedName's parent-pinned name, but a missing
// one (errno ENOENT) is given below a removed directory instead, where the
// kernel finds it missing whatever appeared at its path since the lookup
// (a call that creates the name wants PinnedName's). Stale, as for
// PinnedName, also when a symlink is there now: the lookup, which found
// none, is out of date.
func (m *Mapper) PinnedFile(host string) (name string, fd int, pin Pin, errno syscall.Errno) {
	if !m.mayPin(host) {
		return "", -1, Unpinned, 0
	}
	return m.cache.pinnedFile(host)
}

func (c *cache) pinnedFile(host string) (string, int, Pin, syscall.Errno) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := c.dirs[strings.TrimRight(host, "/")]; d != nil && d.cacheable && d.pin > 0 && c.ifd >= 0 {
		return d.pinName[:len(d.pinName)-1], -1, Pinned, 0 // "/proc/<pid>/fd/<N>"
	}
	n, last, slash, pin, errno := c.pinnedParent(host)
	if pin != Pinned {
		return "", -1, pin, errno
	}
	parent := below(n.pinName, last, slash)
	// The entry's pin, while no change to the name has dropped it: the file
	// the lookup found, as if the call ran when it was opened.
	e := c.entries[host]
	if e != nil && e.fpin != nil {
		e.fpin.uses++
		e.fpin.at = time.Now()
		return e.fpin.name, e.fpin.fd, Pinned, 0
	}
	if e != nil && e.dir == n && e.missing() {
		return c.missingName(parent, last, slash), -1, Pinned, unix.ENOENT
	}
	c.st.Syscalls++
	fd, err := unix.Openat(n.pin, last, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	switch {
	case err == unix.ENOENT:
		return c.missingName(parent, last, slash), -1, Pinned, unix.ENOENT
	case err != nil:
		return parent, -1, Pinned, 0
	case fd <= 2: // never hand out a standard descriptor's number
		unix.Close(fd)
		return parent, -1, Pinned, 0
	}
	var st unix.Stat_t
	c.st.Syscalls++
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return parent, -1, Pinned, 0
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		unix.Close(fd)
		return "", -1, Stale, 0
	}
	if slash && st.Mode&unix.S_IFMT != unix.S_IFDIR {
		unix.Close(fd)
		return parent, -1, Pinned, 0 // the kernel's ENOTDIR
	}
	name := c.pinPrefix(fd)
	p := &filePin{fd: fd, name: name[:len(name)-1], uses: 1, at: time.Now()}
	c.filePins[fd] = p
	if e != nil && !slash && e.dir == n && e.noSymlink(st.Mode) {
		// Kept while the entry, which found this kind of file there, is.
		if c.nfile >= c.maxPins {
			for _, o := range c.entries {
				if o.fpin != nil {
					c.unpinFile(o)
				}
			}
		}
		e.fpin, p.entry = p, e
		c.nfile++
	}
	return p.name, fd, Pinned, 0
}

// missingName is the name PinnedFile gives a missing last component:
// below the dead directory (deadDir), where it is missing whatever is
// created at its path meanwhile (a symlink there is never followed), with
// the kernel's own errors in its own order; parent (below the pinned
// parent, as PinnedName) where there is none. c.mu is held.
func (c *cache) missingName(parent, last string, slash bool) string {
	if d := c.deadDir(); d != "" {
		return below(d, last, slash)
	}
	return parent
}

// missing tells whether e found its path missing (an lstat's or
// readlink's ENOENT).
func (e *centry) missing() bool {
	return e.flags&haveLstat != 0 && e.lerr == unix.ENOENT || e.flags&haveReadlink != 0 && e.rerr == unix.ENOENT
}

// noSymlink tells whether e found something there that is no symlink: a
// file of mode's type (an lstat), or no symlink (readlink's EINVAL).
func (e *centry) noSymlink(mode uint32) bool {
	return e.flags&haveLstat != 0 && e.lerr == 0 && e.mode&unix.S_IFMT == mode&unix.S_IFMT ||
		e.flags&haveReadlink != 0 && e.rerr == unix.EINVAL
}

// deadDir makes, once, the directory below which every name is missing: a
// directory made in tempDir and removed at once, held open O_PATH. The
// kernel finds no name in a removed directory and creates none there, for
// anyone (its owner included, who could reach it through this process's
// /proc/<pid>/fd). "" when it cannot be made. c.mu is held.
func (c *cache) deadDir() string {
	if c.deadFd != 0 {
		return c.deadName
	}
	c.deadFd = -1 // tried
	c.st.Syscalls += 3
	d, err := os.MkdirTemp(c.tempDir, ".droidroot-missing-")
	if err != nil {
		return ""
	}
	fd, err := unix.Open(d, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	os.Remove(d)
	if err != nil {
		return ""
	}
	if fd <= 2 {
		unix.Close(fd)
		return ""
	}
	c.deadFd, c.deadName = fd, c.pinPrefix(fd)
	return c.deadName
}

// filePin is a descriptor PinnedFile handed out: kept by its entry
// (entry not nil) until a change drops the entry, and open while a caller
// uses it (uses: PinnedFile's answers not yet released, ReleaseFile).
type filePin struct {
	fd    int
	name  string // "/proc/<pid>/fd/<fd>"
	uses  int
	entry *centry
	// at is when it was last handed out; dead: its number holds the dead
	// directory since its file was removed (letGoRemoved).
	at   time.Time
	dead bool
}

// letGoRemoved lets the files go that file pins in use keep although they
// have been removed (no link left) and no entry keeps them: a pin is in use
// until its thread's next traced call, which may never come (its calls
// answered in-process, or blocked in poll), and the kernel reports a
// removed file's IN_DELETE_SELF, and its directory's, only when its last
// reference goes. Once removedGrace has passed since the name was handed out
// (the kernel resolves a name the moment its thread is resumed, in the
// system call it is stopped in), its number is given the dead
// directory, and closed at the last ReleaseFile as before: the number
// stays taken, so no later pin gets it while a release may still come.
// c.mu is held.
func (c *cache) letGoRemoved(now time.Time) {
	for fd, p := range c.filePins {
		if p.dead || p.entry != nil || now.Sub(p.at) < removedGrace {
			continue
		}
		p.dead = c.deadIfRemoved(fd)
	}
}

// deadIfRemoved gives descriptor fd the dead directory (deadDir) if the
// file it is open on has been removed (no link left), so that fd keeps its
// number but no longer the removed file; it tells whether it did. c.mu is
// held.
func (c *cache) deadIfRemoved(fd int) bool {
	var st unix.Stat_t
	c.st.Syscalls++
	if unix.Fstat(fd, &st) != nil || st.Nlink != 0 || c.deadDir() == "" {
		return false
	}
	c.st.Syscalls++
	return unix.Dup3(c.deadFd, fd, unix.O_CLOEXEC) == nil
}

// unpinFile detaches e's file pin, which is closed now if no caller uses
// it, else at its last release. c.mu is held.
func (c *cache) unpinFile(e *centry) {
	p := e.fpin
	e.fpin, p.entry = nil, nil
	c.nfile--
	if p.uses <= 0 {
		c.closeFilePin(p)
	}
}

func (c *cache) closeFilePin(p *filePin) {
	delete(c.filePins, p.fd)
	unix.Close(p.fd)
}

// ReleaseFile says that the kernel has resolved a name PinnedFile gave
// with descriptor fd (the caller's thread has made its next call): the
// descriptor is closed once nothing keeps or uses it.
func (m *Mapper) ReleaseFile(fd int) {
	if m == nil || m.cache == nil {
		return
	}
	c := m.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.filePins[fd]
	if p == nil {
		return
	}
	if p.uses--; p.uses <= 0 && p.entry == nil {
		c.closeFilePin(p)
	}
}

// cleanAbsString is cleanAbs for a string, in one pass: absolute, no empty,
// "." or ".." component, no trailing slash.
func cleanAbsString(p string) bool {
	switch {
	case len(p) == 0 || p[0] != '/':
		return false
	case len(p) == 1:
		return true
	case p[len(p)-1] == '/':
		return false
	}
	for i := 0; i < len(p)-1; i++ {
		if p[i] != '/' {
			continue
		}
		switch p[i+1] { // a component starts: not empty, "." nor ".."
		case '/':
			return false
		case '.':
			if i+2 == len(p) || p[i+2] == '/' || p[i+2] == '.' && (i+3 == len(p) || p[i+3] == '/') {
				return false
			}
		}
	}
	return true
}

// pinPrefix is "/proc/<pid>/fd/<fd>/", the start of the names below fd.
func (c *cache) pinPrefix(fd int) string {
	b := make([]byte, 0, len("/proc//fd//")+len(c.pid)+10)
	b = append(b, "/proc/"...)
	b = append(b, c.pid...)
	b = append(b, "/fd/"...)
	b = strconv.AppendInt(b, int64(fd), 10)
	return string(append(b, '/'))
}

// gone tells whether directory dir, whose node could not be watched or
// opened, is missing (ENOENT) or no directory (ENOTDIR; a symlink now: the
// lookup that found one there is out of date), rather than unwatchable (0:
// the watch limit, a filesystem the cache does not watch).
func (c *cache) gone(dir string) syscall.Errno {
	var st unix.Stat_t
	c.st.Syscalls++
	switch err := unix.Lstat(dir, &st); {
	case err == unix.ENOENT || err == unix.ENOTDIR:
		return err.(syscall.Errno)
	case err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return unix.ENOTDIR
	}
	return 0
}

// pinFd returns n's descriptor, opening it (and its parents') when needed:
// Stale when a directory is no longer at its name. c.mu is held.
func (c *cache) pinFd(n *dirNode, depth int) (int, Pin) {
	if n.pin > 0 {
		return n.pin, Pinned
	}
	if !n.cacheable || depth > 4096 {
		return 0, Unpinned
	}
	if c.npins >= c.maxPins {
		// Before n's parents are opened: their descriptors go too.
		for _, d := range c.dirs {
			c.retire(d)
		}
	}
	var fd int
	var err error
	const flags = unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC
	if c.pins[n.path]&pinTop != 0 {
		fd, err = unix.Open(n.path, flags, 0)
	} else {
		p := n.parent
		if p == nil || n.name == "" {
			return 0, Unpinned
		}
		pfd, pin := c.pinFd(p, depth+1)
		if pin != Pinned {
			return 0, pin
		}
		fd, err = unix.Openat(pfd, n.name, flags|unix.O_NOFOLLOW, 0)
	}
	c.st.Syscalls++
	switch {
	case err == unix.ENOENT || err == unix.ENOTDIR || err == unix.ELOOP:
		return 0, Stale
	case err != nil:
		return 0, Unpinned
	case fd <= 2: // never hand out a standard descriptor's number
		unix.Close(fd)
		return 0, Unpinned
	}
	n.pin = fd
	n.pinName = c.pinPrefix(fd)
	c.npins++
	return fd, Pinned
}

// retire schedules n's descriptor for closing. A directory that has been
// removed is let go at once (the kernel reports its IN_DELETE_SELF when the
// last reference goes): its number holds the dead directory until then,
// where a tracee still on its way finds no name, as in the removed one.
// c.mu is held.
func (c *cache) retire(n *dirNode) {
	if n.pin > 0 {
		c.deadIfRemoved(n.pin)
		c.grave = append(c.grave, retired{n.pin, time.Now()})
		n.pin, n.pinName = 0, ""
		c.npins--
	}
}

// reap closes the retired descriptors older than pinGrace, or all of them.
// c.mu is held.
func (c *cache) reap(all bool) {
	if len(c.grave) == 0 {
		return
	}
	now := time.Now()
	k := 0
	for k < len(c.grave) && (all || now.Sub(c.grave[k].at) >= pinGrace) {
		unix.Close(c.grave[k].fd)
		k++
	}
	if k > 0 {
		c.grave = append(c.grave[:0], c.grave[k:]...)
	}
}

// DirToken returns a token for host directory dir (a clean absolute path)
// that DirUnchanged checks: the cache's node of dir, which lives as long as
// no name on dir's path, from "/" down, changes (see "Lookup cache"); nil
// when dir's names are not watched. Take it, then confirm that dir is still
// what it should be (one read of /proc/<tid>/cwd): from then on a change is
// reported.
func (m *Mapper) DirToken(dir string) any {
	c := m.cache
	if c == nil || !cleanAbs([]byte(dir)) {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ifd < 0 {
		return nil
	}
	n := c.dirs[dir]
	if n == nil {
		n, _ = c.makeDir([]byte(dir))
	}
	if n == nil || !n.cacheable {
		return nil
	}
	return n
}

// DirUnchanged tells whether no name on dir's path changed since tok was
// taken (DirToken), after applying the changes reported so far (once per
// batch b, which the lookups that share it then skip; b may be nil).
func (m *Mapper) DirUnchanged(dir string, tok any, b *Batch) bool {
	n, ok := tok.(*dirNode)
	c := m.cache
	if !ok || n == nil || c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ifd < 0 {
		return false
	}
	if b == nil || !b.synced {
		c.sync()
		if b != nil {
			b.synced = true
		}
	}
	return c.dirs[dir] == n
}

// PinnedFd splits a name PinnedName or PinnedFile returned into the
// descriptor of the mapper's process it starts at and the name below it:
// "/proc/<pid>/fd/<N>" is N and "" (the file itself), and
// "/proc/<pid>/fd/<N>/<name>" is N and name, one component. ok is false for
// anything else (another process's descriptors, a path the kernel is given
// as it is). The descriptor is valid while the name is: until the caller
// gives a held one back (ReleaseFile) or the cache's next change.
func (m *Mapper) PinnedFd(name string) (fd int, rest string, ok bool) {
	if m.cache == nil {
		return -1, "", false
	}
	p, ok := strings.CutPrefix(name, "/proc/")
	if !ok {
		return -1, "", false
	}
	if p, ok = strings.CutPrefix(p, m.cache.pid); !ok {
		return -1, "", false
	}
	if p, ok = strings.CutPrefix(p, "/fd/"); !ok {
		return -1, "", false
	}
	num := p
	if i := strings.IndexByte(p, '/'); i >= 0 {
		num, rest = p[:i], p[i+1:]
		if rest == "" || strings.IndexByte(rest, '/') >= 0 || rest == "." || rest == ".." {
			return -1, "", false
		}
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 || num != strconv.Itoa(n) {
		return -1, "", false
	}
	return n, rest, true
}
