//go:build linux

package pathmap

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The lookup cache (WithCache): see "Lookup cache" in the package
// documentation for what it caches, how it is validated and its limits.
//
// Structure. Every cached answer (an lstat or readlink of host path D/N) is
// a centry held by the dirNode of its parent directory D. dirNodes form a
// tree that mirrors the host's directory tree from "/": a node exists only
// when its parent's node exists, and the nodes are created top-down, each
// one's inotify watch being added after its parent's. A change to the name
// N in a watched D (create, delete, rename in or out, attributes) drops
// D/N's entry and D/N's subtree of nodes, and those of every name a
// case-insensitive directory could take for N (dropName); a change to D
// itself (attributes, deleted, moved, watch gone) drops D's subtree.
// Since the parent of every node is watched, renaming or replacing any
// ancestor of D is seen as an event on that ancestor's parent, which drops
// everything below it. So an entry survives only as long as no directory
// on its path, from "/" down, has had that path's name changed, which is
// what its answer depends on.
//
// Exceptions, kept narrow: a node is watched only on filesystems whose
// every change goes through this kernel's VFS (localFS), and entries are
// kept only in watched nodes ("cacheable"); nodes that are not cacheable
// (pseudo or network filesystems, missing, unreadable, watch limit) are
// kept as negative nodes so that the walk does not retry them at every
// lookup (their parent's watch drops them when the name changes), and have
// no children, except for the chain of directories leading to a mount top
// (the rootfs and the directory bindings, "pinned"), which is kept even
// where a directory above a top cannot be watched (on Android /data and
// /data/data are not readable by apps).
//
// Validation. Before the first cached answer a walk uses, the cache polls
// its epoll fd (inotify plus /proc/self/mountinfo, whose POLLPRI reports a
// mount or unmount in the mount namespace) with a zero timeout: one system
// call, which finds nothing when nothing changed. inotify events are
// queued by the kernel during the system call that makes the change, after
// the change is visible, so any change that happened before a lookup
// started is seen by it. The cache holds its mutex from that poll or from a
// miss's system call until the answer is stored, so an event can never be
// consumed between a miss's system call and the storing of its answer.

const (
	defaultCacheDirs    = 8192
	defaultCacheEntries = 1 << 15

	cacheWatchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
		unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ATTRIB |
		unix.IN_DONT_FOLLOW | unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK

	haveLstat    = 1
	haveReadlink = 2

	pinTop = 1 // a mount top: the rootfs or a directory binding's source
	pinAnc = 2 // a strict ancestor of a mount top
)

type cache struct {
	mu  sync.Mutex
	ifd int // inotify; -1 when the cache is off (closed, or a failure)
	epf int // epoll over ifd and mfd; -1 without mount detection
	mfd int // /proc/self/mountinfo; -1 without mount detection

	maxDirs, maxEntries int
	pins                map[string]uint8

	entries map[string]*centry // by host path
	dirs    map[string]*dirNode
	wds     map[int32][]*dirNode // several paths may name one inode (host bind mounts)

	buf []byte // inotify read buffer
	evs [4]unix.EpollEvent
	st  CacheStats

	pid   string    // this process's pid, for /proc/<pid>/fd (pin.go)
	grave []retired // dropped nodes' descriptors, closed after pinGrace
	// npins is the number of nodes holding a descriptor, maxPins its
	// bound (pinLimit).
	npins, maxPins int
	// filePins are the descriptors PinnedFile handed out, by number, and
	// nfile the number of them an entry keeps (pin.go).
	filePins map[int]*filePin
	nfile    int
	// deadFd is a directory made and removed at once (deadDir), 0 until
	// tried, -1 when it could not be made; deadName is
	// "/proc/<pid>/fd/<deadFd>/" once made; tempDir is where.
	deadName, tempDir string
	deadFd            int
}

// centry holds what the host said about one path.
type centry struct {
	key    string // the host path
	fold   string // foldKey of its last component
	dir    *dirNode
	flags  uint8 // haveLstat, haveReadlink
	mode   uint32
	lerr   syscall.Errno
	rerr   syscall.Errno
	target string
	fpin   *filePin // the file pinned (PinnedFile), nil until needed
}

// dirNode is a host directory on the path of cached entries.
type dirNode struct {
	path      string
	name      string
	parent    *dirNode
	wd        int32 // -1: not watched
	cacheable bool  // watched, on a local filesystem: entries are kept here
	// failed: not cacheable because statfs or inotify_add_watch failed
	// (missing, EACCES, ENOSPC, ...), which an event on the parent may
	// change; otherwise not cacheable because of the filesystem type.
	failed bool
	// notDir: statfs or inotify_add_watch failed because path was no
	// directory then (ENOENT, ENOTDIR, ELOOP: a symlink swapped in for it
	// since the lookup that made the node). Not remembered: see
	// cache.outOfDate.
	notDir bool
	// foldAll: on a filesystem where a name has aliases beyond case
	// (vfat's 8.3 names and trailing dots, ...): any event about a name
	// drops everything below the directory.
	foldAll bool
	// attrib: the watch reports attribute changes (IN_ATTRIB), of the
	// directory and of its children (see watchMask).
	attrib bool
	// searchOK: the host user may search the directory (search), as
	// checked after the watch was added; dropped with the node when its
	// attributes or anything above it change, as its entries are.
	searchOK bool
	// pin: an O_PATH descriptor of the directory, 0 until one is needed
	// (pin.go); pinName: "/proc/<pid>/fd/<pin>/", made with it.
	pin     int
	pinName string
	fold    string                // foldKey(name)
	kids    map[string][]*dirNode // by foldKey
	ents    map[string][]*centry  // by foldKey
}

// foldKey buckets names that a case-insensitive directory may take for
// one another: an ASCII name by its ASCII lower case (only ASCII case
// relates two ASCII names, even under Unicode case folding and
// normalization), every other name in one bucket, foldOther, a key no
// name can be (names have no NUL).
func foldKey(name string) string {
	for i := 0; i < len(name); i++ {
		if name[i] >= 0x80 {
			return foldOther
		}
	}
	for i := 0; i < len(name); i++ {
		if 'A' <= name[i] && name[i] <= 'Z' {
			return strings.ToLower(name)
		}
	}
	return name
}

const foldOther = "\x00"

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// newCache opens the inotify instance (and the mount watch, if it can).
// tops are the canonical host directories of the mounts.
func newCache(tops []string, maxDirs, maxEntries int) (*cache, error) {
	if maxDirs <= 0 {
		maxDirs = defaultCacheDirs
		// Leave half of the user's inotify watches to others (8192
		// in all on older kernels, Android's included).
		if b, err := os.ReadFile("/proc/sys/fs/inotify/max_user_watches"); err == nil {
			if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && n/2 < maxDirs {
				maxDirs = max(n/2, 16)
			}
		}
	}
	if maxEntries <= 0 {
		maxEntries = defaultCacheEntries
	}
	c := &cache{ifd: -1, epf: -1, mfd: -1, maxDirs: maxDirs, maxEntries: maxEntries,
		pins: map[string]uint8{}, buf: make([]byte, 64<<10), pid: strconv.Itoa(os.Getpid()), maxPins: pinLimit(),
		filePins: map[int]*filePin{}}
	for _, t := range tops {
		c.pins[t] |= pinTop
		for a := t; a != "/"; {
			a = parentDir(a)
			c.pins[a] |= pinAnc
		}
	}
	ifd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, err
	}
	c.ifd = ifd
	c.reset()
	// Mount changes: poll /proc/self/mountinfo. Without it the cache still
	// works, blind to mounts (and reads the inotify fd directly).
	if mfd, err := unix.Open("/proc/self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
		epf, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err == nil {
			err = unix.EpollCtl(epf, unix.EPOLL_CTL_ADD, mfd, &unix.EpollEvent{Events: unix.EPOLLPRI, Fd: int32(mfd)})
			if err == nil {
				err = unix.EpollCtl(epf, unix.EPOLL_CTL_ADD, ifd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(ifd)})
			}
			if err == nil {
				c.epf, c.mfd = epf, mfd
			} else {
				unix.Close(epf)
			}
		}
		if c.mfd < 0 {
			unix.Close(mfd)
		}
	}
	return c, nil
}

func parentDir(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}

// reset empties the cache (the caller has a fresh inotify fd, or none).
func (c *cache) reset() {
	for _, n := range c.dirs {
		c.retire(n)
	}
	for _, e := range c.entries {
		if e.fpin != nil {
			c.unpinFile(e)
		}
	}
	c.entries = map[string]*centry{}
	c.dirs = map[string]*dirNode{}
	c.wds = map[int32][]*dirNode{}
}

// flush drops everything and every watch at once by replacing the inotify
// instance: after a queue overflow, a mount change, or when full.
func (c *cache) flush() {
	c.st.Resets++
	c.st.Syscalls += 2
	unix.Close(c.ifd) // also leaves the epoll set
	c.ifd = -1
	c.reset()
	ifd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		c.disable()
		return
	}
	c.ifd = ifd
	if c.epf >= 0 {
		c.st.Syscalls++
		if unix.EpollCtl(c.epf, unix.EPOLL_CTL_ADD, ifd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(ifd)}) != nil {
			c.disable()
		}
	}
}

// disable turns the cache off for good: lookups make their system calls.
func (c *cache) disable() {
	for _, fd := range []*int{&c.ifd, &c.epf, &c.mfd} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
	c.reset()
}

func (c *cache) close() {
	c.mu.Lock()
	c.disable()
	c.reap(true)
	for _, p := range c.filePins {
		c.closeFilePin(p)
	}
	if c.deadFd > 0 {
		unix.Close(c.deadFd)
		c.deadFd, c.deadName = -1, ""
	}
	c.mu.Unlock()
}

// fd is the inotify descriptor, -1 once disabled.
func (c *cache) fd() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ifd
}

func (c *cache) stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.st
	s.Enabled = c.ifd >= 0
	s.Dirs, s.Entries = len(c.dirs), len(c.entries)
	s.Watches = len(c.wds)
	s.FilePins = len(c.filePins)
	for _, p := range c.filePins {
		s.FilePinUses += p.uses
	}
	return s
}

// sync applies the changes reported since the last call: one epoll_pwait
// (or read) with nothing to report in the common case. The epoll_pwait
// has a zero timeout, so it is made as a raw system call: it never blocks,
// and the Go scheduler need not hand the thread's work elsewhere.
func (c *cache) sync() {
	c.st.Syncs++
	if c.epf < 0 {
		c.readEvents()
		return
	}
	var n uintptr
	var e syscall.Errno
	for {
		c.st.Syscalls++
		n, _, e = syscall.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(c.epf),
			uintptr(unsafe.Pointer(&c.evs[0])), uintptr(len(c.evs)), 0, 0, 0)
		if e != syscall.EINTR {
			break
		}
	}
	if e != 0 {
		c.disable()
		return
	}
	if n == 0 {
		return
	}
	for i := 0; i < int(n); i++ {
		if c.evs[i].Fd == int32(c.mfd) {
			// Mounts changed: any path may now lead elsewhere.
			c.flush()
			return
		}
	}
	c.readEvents()
}

// readEvents drains the inotify fd.
func (c *cache) readEvents() {
	for c.ifd >= 0 {
		c.st.Syscalls++
		n, err := unix.Read(c.ifd, c.buf)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return
		case err != nil || n <= 0:
			c.disable()
			return
		}
		if !c.handle(c.buf[:n]) {
			return // flushed: the old events are moot
		}
		if len(c.buf)-n >= unix.SizeofInotifyEvent+unix.NAME_MAX+1 {
			// The next event would have fitted: the queue was empty.
			// (One queued since is as concurrent as a change made during
			// the lookup.)
			return
		}
	}
}

// handle applies a buffer of inotify events; false if it flushed.
func (c *cache) handle(buf []byte) bool {
	for len(buf) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[0]))
		end := unix.SizeofInotifyEvent + int(ev.Len)
		if end > len(buf) {
			end = len(buf)
		}
		name := buf[unix.SizeofInotifyEvent:end]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		buf = buf[end:]
		if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
			c.flush()
			return false
		}
		nodes := c.wds[ev.Wd]
		if len(nodes) == 0 {
			continue // a watch already dropped
		}
		if len(nodes) > 1 {
			// Dropping one may edit the list (a directory mounted
			// inside itself): work on a copy.
			nodes = append([]*dirNode(nil), nodes...)
		}
		if ev.Mask&unix.IN_IGNORED != 0 {
			// The kernel removed the watch (directory gone, unmounted).
			delete(c.wds, ev.Wd)
			for _, n := range nodes {
				n.wd = -1
				c.dropNode(n)
			}
			continue
		}
		if len(name) > 0 {
			for _, n := range nodes {
				c.dropName(n, name)
			}
			continue
		}
		// About the directory itself: its attributes (search permission)
		// changed, it was deleted or moved, its filesystem unmounted.
		for _, n := range nodes {
			c.dropNode(n)
		}
	}
	return true
}

// dropName forgets what n holds about name: its entry and node, and
// anything a case-insensitive directory could also find under that name.
func (c *cache) dropName(n *dirNode, name []byte) {
	if n.foldAll || !isASCII(name) {
		c.dropContents(n)
		return
	}
	c.dropFold(n, foldKey(string(name)))
	c.dropFold(n, foldOther)
}

// dropFold forgets the entries and nodes of n in bucket key.
func (c *cache) dropFold(n *dirNode, key string) {
	if es, ok := n.ents[key]; ok {
		for _, e := range es {
			c.dropEntry(e)
		}
		c.st.Invalidations += uint64(len(es))
		delete(n.ents, key)
	}
	if ks, ok := n.kids[key]; ok {
		delete(n.kids, key)
		for _, k := range ks {
			k.parent = nil // already out of n.kids
			c.dropNode(k)
		}
	}
}

// dropContents forgets everything below n, keeping n.
func (c *cache) dropContents(n *dirNode) {
	kids := n.kids
	n.kids = nil
	for _, ks := range kids {
		for _, k := range ks {
			k.parent = nil
			c.dropNode(k)
		}
	}
	for _, es := range n.ents {
		for _, e := range es {
			c.dropEntry(e)
		}
		c.st.Invalidations += uint64(len(es))
	}
	n.ents = nil
}

// dropEntry forgets entry e, and lets its file pin go (unpinFile).
func (c *cache) dropEntry(e *centry) {
	delete(c.entries, e.key)
	if e.fpin != nil {
		c.unpinFile(e)
	}
}

// dropNode forgets n, everything below it, and their watches.
func (c *cache) dropNode(n *dirNode) {
	c.dropContents(n)
	c.st.Invalidations++
	c.retire(n)
	delete(c.dirs, n.path)
	if p := n.parent; p != nil {
		ks := p.kids[n.fold]
		for i, k := range ks {
			if k == n {
				ks[i] = ks[len(ks)-1]
				ks = ks[:len(ks)-1]
				break
			}
		}
		if len(ks) == 0 {
			delete(p.kids, n.fold)
		} else {
			p.kids[n.fold] = ks
		}
		n.parent = nil
	}
	if n.wd >= 0 {
		ns := c.wds[n.wd]
		for i, m := range ns {
			if m == n {
				ns = append(ns[:i], ns[i+1:]...)
				break
			}
		}
		if len(ns) == 0 {
			delete(c.wds, n.wd)
			c.st.Syscalls++
			unix.InotifyRmWatch(c.ifd, uint32(n.wd))
		} else {
			c.wds[n.wd] = ns
		}
		n.wd = -1
	}
}

// begin prepares a lookup of path for an answer of kind flag: it returns
// the entry to answer from (nil on a miss) and, on a miss, the node to
// store the answer in (nil when path cannot be cached). c.mu is held.
func (c *cache) begin(w *walker, path []byte, flag uint8) (*centry, *dirNode) {
	e := c.entries[string(path)]
	if e != nil && e.flags&flag != 0 && !w.synced {
		// The first cached answer of this walk: apply the changes first.
		w.synced = true
		c.sync()
		e = c.entries[string(path)]
	}
	if e != nil && e.flags&flag != 0 {
		return e, nil
	}
	if c.ifd < 0 {
		return nil, nil
	}
	if e != nil {
		return nil, e.dir
	}
	if len(c.dirs) >= c.maxDirs || len(c.entries) >= c.maxEntries {
		c.flush()
		if c.ifd < 0 {
			return nil, nil
		}
	}
	d, failed := c.dirFor(path)
	if d == nil && failed && !w.synced {
		// A directory that could not be watched before may be watchable
		// now: apply the pending changes, which drop it if it changed.
		// (Pending changes to a cacheable directory do not matter: the
		// answer is fresh, and storing it there is undone by them.)
		w.synced = true
		c.sync()
		if c.ifd < 0 {
			return nil, nil
		}
		d, _ = c.dirFor(path)
	}
	return nil, d
}

// entry returns path's entry in d, made if needed.
func (c *cache) entry(d *dirNode, path []byte) *centry {
	if e := c.entries[string(path)]; e != nil {
		return e
	}
	key := string(path)
	e := &centry{key: key, fold: foldKey(key[strings.LastIndexByte(key, '/')+1:]), dir: d}
	c.entries[key] = e
	if d.ents == nil {
		d.ents = map[string][]*centry{}
	}
	d.ents[e.fold] = append(d.ents[e.fold], e)
	return e
}

// cacheableErr tells whether an answer depends only on the names along
// the path (EACCES and transient errors are not kept).
func cacheableErr(err error) (syscall.Errno, bool) {
	if err == nil {
		return 0, true
	}
	e, ok := err.(syscall.Errno)
	if !ok {
		return 0, false
	}
	switch e {
	case syscall.ENOENT, syscall.ENOTDIR, syscall.EINVAL, syscall.ENAMETOOLONG:
		return e, true
	}
	return 0, false
}

func errnoErr(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// lstat is the walker's lstat(2) of path (w.cbuf: path NUL-terminated).
func (c *cache) lstat(w *walker, path []byte) (uint32, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, d := c.begin(w, path, haveLstat)
	if e != nil {
		c.st.Hits++
		return e.mode, errnoErr(e.lerr)
	}
	c.count(d)
	mode, err := sysLstat(w.cbuf)
	if en, ok := cacheableErr(err); ok && d != nil && c.ifd >= 0 {
		e := c.entry(d, path)
		e.flags |= haveLstat
		e.mode, e.lerr = mode, en
	}
	return mode, err
}

// readlink is the walker's readlink(2) of path into w.lbuf.
func (c *cache) readlink(w *walker, path []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, d := c.begin(w, path, haveReadlink)
	if e != nil {
		c.st.Hits++
		if e.rerr != 0 {
			return 0, e.rerr
		}
		return copy(w.lbuf, e.target), nil
	}
	c.count(d)
	n, err := sysReadlink(w.cbuf, w.lbuf)
	if en, ok := cacheableErr(err); ok && d != nil && c.ifd >= 0 {
		e := c.entry(d, path)
		e.flags |= haveReadlink
		e.rerr = en
		if en == 0 {
			e.target = string(w.lbuf[:n])
		}
	}
	return n, err
}

// search is the walker's check that the host user may search directory
// dir (w.cbuf: dir NUL-terminated): faccessat(X_OK), remembered in dir's
// node (made, and watched, if needed) while no change to dir or above it
// is reported. A refusal is not kept (EACCES depends on the caller).
func (c *cache) search(w *walker, dir []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.dirs[string(dir)]
	// Before a remembered search is used, or where a failure kept dir
	// from being watched (it may be watchable now), the reported changes
	// are applied (as in begin).
	if n != nil && (n.searchOK || !n.cacheable && n.failed) && !w.synced {
		w.synced = true
		c.sync()
		n = c.dirs[string(dir)]
	}
	if n != nil && n.searchOK {
		c.st.Hits++
		return nil
	}
	if n == nil && c.ifd >= 0 && cleanAbs(dir) && len(dir) >= 2 {
		if len(c.dirs) >= c.maxDirs {
			c.flush()
		}
		if c.ifd >= 0 {
			n, _ = c.makeDir(dir)
		}
	}
	if n != nil && !n.cacheable {
		n = nil
	}
	c.count(n)
	err := sysSearch(w.cbuf)
	if err == nil && n != nil && c.ifd >= 0 {
		n.searchOK = true
	}
	return err
}

func (c *cache) count(d *dirNode) {
	c.st.Syscalls++
	if d != nil {
		c.st.Misses++
	} else {
		c.st.Uncached++
	}
}

// dirFor returns the node of path's parent directory if answers about
// path may be cached there, making the nodes (and watches) it takes. When
// it returns nil, failed tells that an existing node was in the way
// because of a failure that may have gone since (see dirNode.failed).
func (c *cache) dirFor(path []byte) (_ *dirNode, failed bool) {
	if !cleanAbs(path) || len(path) < 2 {
		return nil, false
	}
	i := bytes.LastIndexByte(path, '/')
	dir := path[:max(i, 1)]
	if n := c.dirs[string(dir)]; n != nil {
		if n.cacheable {
			return n, false
		}
		return nil, n.failed
	}
	return c.makeDir(dir)
}

// makeDir makes the nodes from the deepest existing ancestor of dir down to
// dir, top-down, and returns dir's node if it is cacheable.
func (c *cache) makeDir(dir []byte) (_ *dirNode, failed bool) {
	e := len(dir)
	var n *dirNode
	for {
		if n = c.dirs[string(dir[:e])]; n != nil || e == 1 {
			break
		}
		e = max(bytes.LastIndexByte(dir[:e], '/'), 1)
	}
	if n == nil {
		n = c.newNode("/", "", nil)
	}
	for e < len(dir) {
		start := e + 1
		if e == 1 {
			start = 1
		}
		end := len(dir)
		if j := bytes.IndexByte(dir[start:], '/'); j >= 0 {
			end = start + j
		}
		if !n.cacheable && c.pins[string(dir[:end])] == 0 {
			return nil, n.failed // below a directory whose names are not watched
		}
		p := string(dir[:end])
		n = c.newNode(p, p[start:], n)
		e = end
	}
	if n.cacheable {
		return n, false
	}
	return nil, false // just made: nothing to refresh
}

// newNode makes the node of directory path, whose parent's node (and
// watch) exists: statfs(2), then inotify_add_watch(2) when it is on a local
// filesystem or leads to a mount top.
func (c *cache) newNode(path, name string, parent *dirNode) *dirNode {
	n := &dirNode{path: path, name: name, fold: foldKey(name), parent: parent, wd: -1}
	c.st.Syscalls++
	var sfs unix.Statfs_t
	err := unix.Statfs(path, &sfs)
	local := err == nil && localFS(uint32(sfs.Type))
	n.foldAll = local && aliasFS(uint32(sfs.Type))
	n.failed = err != nil
	n.notDir = notDirErr(err)
	if local || c.pins[path]&pinAnc != 0 {
		mask := c.watchMask(path, parent)
		n.attrib = mask&unix.IN_ATTRIB != 0
		c.st.Syscalls++
		wd, err := unix.InotifyAddWatch(c.ifd, path, mask)
		if err == nil {
			n.wd = int32(wd)
			c.wds[n.wd] = append(c.wds[n.wd], n)
		} else {
			c.st.WatchErrors++
			n.failed = true
			n.notDir = n.notDir || notDirErr(err)
		}
	}
	n.cacheable = local && n.wd >= 0
	c.dirs[path] = n
	if parent != nil {
		if parent.kids == nil {
			parent.kids = map[string][]*dirNode{}
		}
		parent.kids[n.fold] = append(parent.kids[n.fold], n)
	}
	return n
}

// notDirErr tells whether err says that a path is no directory now.
func notDirErr(err error) bool {
	return err == unix.ENOENT || err == unix.ENOTDIR || err == unix.ELOOP
}

// watchMask is the inotify mask of directory path's watch. IN_ATTRIB is
// what it needs for the directory's own attributes (its search permission);
// its children's do not matter, since entries keep only a file's type. But
// with IN_ATTRIB the kernel marks every child dentry it caches in the
// directory, negative ones included, when the watch is added and removed:
// tens of milliseconds for a /tmp where many temporary names came and went.
// So a sticky, world-writable directory (a /tmp) is watched without it when
// its parent's watch has it, which reports the directory's own attribute
// changes as a child's. IN_MASK_ADD: a directory watched under two paths
// keeps the union.
func (c *cache) watchMask(path string, parent *dirNode) uint32 {
	if parent != nil && parent.wd >= 0 && parent.attrib {
		var st unix.Stat_t
		c.st.Syscalls++
		if unix.Stat(path, &st) == nil && st.Mode&(unix.S_ISVTX|0o002) == unix.S_ISVTX|0o002 {
			return cacheWatchMask&^unix.IN_ATTRIB | unix.IN_MASK_ADD
		}
	}
	return cacheWatchMask | unix.IN_MASK_ADD
}

// aliasFS tells whether a filesystem finds names under other names than
// their case variants: vfat (8.3 short names, trailing dots), exFAT
// (trailing dots), NTFS (DOS names), JFS (OS/2 mode).
func aliasFS(magic uint32) bool {
	switch magic {
	case unix.MSDOS_SUPER_MAGIC, unix.EXFAT_SUPER_MAGIC, 0x5346544e, 0x7366746e, 0x3153464a:
		return true
	}
	return false
}

// localFS tells whether every change to a filesystem of this type goes
// through this kernel's VFS, so that inotify reports it. Not: procfs,
// sysfs, cgroupfs, devpts, debugfs, ... (the kernel changes them without
// events), FUSE and network filesystems (the server changes them), stacked
// Android views (sdcardfs), and anything not listed.
func localFS(magic uint32) bool {
	switch magic {
	case unix.EXT4_SUPER_MAGIC, // also ext2, ext3
		unix.XFS_SUPER_MAGIC,
		unix.BTRFS_SUPER_MAGIC,
		unix.F2FS_SUPER_MAGIC,
		unix.TMPFS_MAGIC, // also devtmpfs: its changes go through vfs_mknod/vfs_unlink
		unix.RAMFS_MAGIC,
		unix.MSDOS_SUPER_MAGIC, // vfat
		unix.EXFAT_SUPER_MAGIC,
		unix.EROFS_SUPER_MAGIC_V1,
		unix.SQUASHFS_MAGIC,
		unix.ISOFS_SUPER_MAGIC,
		unix.OVERLAYFS_SUPER_MAGIC, // changing its layers underneath is undefined anyway
		unix.BCACHEFS_SUPER_MAGIC,
		unix.NILFS_SUPER_MAGIC,
		unix.REISERFS_SUPER_MAGIC,
		unix.UDF_SUPER_MAGIC,
		0x2fc12fc1, // zfs
		0x5346544e, // ntfs
		0x7366746e, // ntfs3
		0x3153464a: // jfs
		return true
	}
	return false
}

// cleanAbs tells whether p is an absolute clean path: no empty, "." or ".."
// component, no trailing slash.
func cleanAbs(p []byte) bool {
	if len(p) == 0 || p[0] != '/' {
		return false
	}
	if len(p) == 1 {
		return true
	}
	if p[len(p)-1] == '/' {
		return false
	}
	start := 1
	for i := 1; i <= len(p); i++ {
		if i == len(p) || p[i] == '/' {
			c := p[start:i]
			if len(c) == 0 || isDot(c) || isDotDot(c) {
				return false
			}
			start = i + 1
		}
	}
	return true
}
