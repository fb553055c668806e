package pathmap

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
)

// Limits of the Linux path walk that Resolve reproduces.
const (
	// PathMax is the kernel's PATH_MAX: a path (with its NUL) must be
	// shorter, so a path of PathMax bytes or more gives ENAMETOOLONG.
	PathMax = 4096
	// NameMax is NAME_MAX, the longest component most filesystems accept.
	NameMax = 255
	// MaxSymlinks is the number of symlinks one walk may follow; the next
	// one gives ELOOP.
	MaxSymlinks = 40
)

// Binding makes host path Host visible at guest path Guest (both absolute,
// cleaned), like a bind mount of Host on Guest inside the guest root.
type Binding struct {
	Host, Guest string
	// NoDeref keeps a symlink at Guest itself as the mount point (proot's
	// trailing "!"). Otherwise Guest is dereferenced in the guest's view as
	// the kernel's mount(2) does with its target: every symlink on the
	// way, the last one included, so a binding at a link lands on the
	// link's target.
	NoDeref bool
}

// BindError tells why one binding was left out by New. proot only warns
// about these ("can't sanitize binding"), and so can the caller.
type BindError struct {
	Binding Binding
	Err     error // a syscall.Errno from resolving Host, or EINVAL for a relative Guest
}

// Error implements error, in proot's words.
func (e *BindError) Error() string {
	return fmt.Sprintf("can't sanitize binding %q: %v", e.Binding.Host, e.Err)
}

// Unwrap returns the underlying errno.
func (e *BindError) Unwrap() error { return e.Err }

// BindErrors is the error New returns, together with a usable Mapper, when
// some bindings were left out. Use errors.As to get it.
type BindErrors []*BindError

// Error implements error.
func (es BindErrors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "; ")
}

// Unwrap returns the individual *BindError values.
func (es BindErrors) Unwrap() []error {
	r := make([]error, len(es))
	for i, e := range es {
		r[i] = e
	}
	return r
}

// Option configures New.
type Option func(*options)

type options struct {
	virtualDir  string
	virtualTree string
	cache       bool
	tempDir     string
	// Limits of the lookup cache (tests); 0 means the default.
	cacheDirs, cacheEntries int
}

// WithVirtualDir sets the host directory that stands for the virtual
// directories: the guest parents of binding mount points that do not exist
// in the rootfs (see the package documentation). It should be an empty
// directory outside the rootfs that the tracee cannot write to. Without it,
// the rootfs's top directory stands in.
func WithVirtualDir(host string) Option {
	return func(o *options) { o.virtualDir = host }
}

// WithVirtualTree gives every virtual directory a host directory of its own:
// root + its guest path, which the caller has made, for each of
// VirtualParents, with the mode a directory made for a mount point would have
// (0755), each holding the directories on the way to the mount points below
// it. A virtual directory then lists its children, and stats, opens and
// reads back (ToGuest maps root's tree to the guest's "/") as a directory
// made for the mounts would. It takes precedence over WithVirtualDir.
func WithVirtualTree(root string) Option {
	return func(o *options) { o.virtualTree = root }
}

// WithCache makes Resolve and Lookup remember what the host filesystem said
// about each host path they looked up (symlink target, not a symlink, type,
// ENOENT, ...) and answer from that memory as long as inotify reports no
// change that could alter the answer; see "Lookup cache" in the package
// documentation. It applies to the host filesystem only (fs nil or HostFS
// in New); with any other FS it is ignored. When the cache cannot be set up
// (no inotify: inotify_init1 fails), New succeeds without it: Mapper.Cached
// tells. A Mapper with a cache holds up to three file descriptors
// (close-on-exec) until Close, or until it is garbage collected.
func WithCache() Option {
	return func(o *options) { o.cache = true }
}

// WithTempDir names the directory where the lookup cache makes (and at
// once removes) the directory that its missing names are given below
// (PinnedFile); os.TempDir() without it.
func WithTempDir(dir string) Option {
	return func(o *options) { o.tempDir = dir }
}

// withCacheLimits bounds the cache (tests): directories watched or known
// unwatchable, and entries; reaching either empties the cache.
func withCacheLimits(dirs, entries int) Option {
	return func(o *options) { o.cacheDirs, o.cacheEntries = dirs, entries }
}

// CacheStats describes the work of a Mapper's lookup cache.
type CacheStats struct {
	// Enabled: the Mapper has a working cache (WithCache, the host FS,
	// inotify available, not closed).
	Enabled bool
	// Hits and Misses count the lstat/readlink questions and directory
	// searches (SearchDir) of walks that the cache answered, and that it
	// asked the host and remembered.
	// Uncached counts those it could not remember (procfs, a filesystem
	// inotify cannot watch, EACCES, ...).
	Hits, Misses, Uncached uint64
	// Syncs counts the checks for changes (one per walk that used a
	// cached answer); Syscalls every system call the cache made: those
	// checks, the misses and uncached questions, statfs and inotify_*
	// calls for new directories, resets.
	Syncs, Syscalls uint64
	// Invalidations counts entries and directories dropped after an
	// inotify event; Resets the times everything was dropped (queue
	// overflow, a mount change, the size limit); WatchErrors the
	// directories inotify refused to watch (ENOSPC, EACCES, ...).
	Invalidations, Resets, WatchErrors uint64
	// Current size: directories known (watched or not), inotify
	// watches, cached paths.
	Dirs, Watches, Entries int
	// FilePins is the number of descriptors PinnedFile holds open,
	// FilePinUses its answers not given back yet (ReleaseFile).
	FilePins, FilePinUses int
}

// bindInfo is one mount: the rootfs at "/" or a binding.
type bindInfo struct {
	host      string // canonical host path ("/proc/self/..." kept as is for symbolic ones)
	guest     string // cleaned guest path
	hostPfx   string // host, "" for "/"
	guestPfx  string // guest, "" for "/"
	mode      uint32 // S_IFMT of host, taken by New (unused when symbolic)
	symbolic  int    // symNone, symSelf or symThreadSelf
	symRest   string // for symbolic: what follows /proc/self or /proc/thread-self
	effective bool   // not hidden by a later binding with the same Guest
}

const (
	symNone = iota
	symSelf
	symThreadSelf
)

// node is a trie of the guest paths of the bindings: the walk follows it to
// find mount points without comparing strings against every binding.
type node struct {
	name   string
	path   string // the guest path ("" at the root)
	parent *node
	kids   []*node
	byName map[string]*node // kids by name, once there are kidIndexMin of them
	bind   *bindInfo        // non-nil at a mount point (always at the root)
	mount  *node            // nearest ancestor-or-self with bind != nil
}

// kidIndexMin is the number of children from which a node indexes them by
// name: a directory holding thousands of bind points must not make each
// lookup (and each insert in New) linear in their number.
const kidIndexMin = 16

func (n *node) child(name []byte) *node {
	if n.byName != nil {
		return n.byName[string(name)]
	}
	for _, k := range n.kids {
		if k.name == string(name) {
			return k
		}
	}
	return nil
}

func (n *node) childString(name string) *node {
	if n.byName != nil {
		return n.byName[name]
	}
	for _, k := range n.kids {
		if k.name == name {
			return k
		}
	}
	return nil
}

// addKid appends k to n's children, indexing them once there are many.
func (n *node) addKid(k *node) {
	n.kids = append(n.kids, k)
	switch {
	case n.byName != nil:
		n.byName[k.name] = k
	case len(n.kids) >= kidIndexMin:
		n.byName = make(map[string]*node, 2*len(n.kids))
		for _, c := range n.kids {
			n.byName[c.name] = c
		}
	}
}

// Mapper translates paths between one guest view (rootfs plus bindings) and
// the host. It is immutable after New (apart from its lookup cache, which
// has its own lock) and safe for concurrent use.
type Mapper struct {
	fs     FS
	osfs   bool // fs is the host filesystem: use the allocation-free system calls
	root   *node
	binds  []Binding   // accepted bindings, canonical, in the order given
	infos  []*bindInfo // same order as binds
	toG    []*bindInfo // ToGuest candidates: rootfs and effective non-symbolic bindings
	vdir   string      // stand-in host directory for virtual directories
	vtree  string      // WithVirtualTree's root, "" without
	rootBI *bindInfo   // the mount at "/"
	cache  *cache      // WithCache; nil without
	anch   *anchors    // open ancestors of long host paths (anchor.go); nil unless osfs
	// fileHosts are the host paths of the bindings of files (not
	// directories): PinnedName leaves them as they are (pin.go).
	fileHosts map[string]bool
	// hostView: the guest's view hides nothing of the host's (HostView).
	hostView bool
	// searchAll: this process may search any directory (root), so the
	// walk's "." and ".." need no check of their directory (walker.search).
	searchAll bool
}

// New canonicalises root (the host realpath of the rootfs directory) and the
// bindings: each Host is realpath'd on the host, except that a Host naming
// "/proc/self/..." or "/proc/thread-self/...", directly or through symlinks
// (/dev/fd -> /proc/self/fd), stays symbolic and is resolved per tracee by
// Resolve; each Guest is cleaned. A binding whose Host cannot be resolved (missing, ...) or
// whose Guest is relative is left out and reported in a BindErrors error;
// the returned Mapper is then still valid and usable (proot only warns). Any
// other error (bad root or virtual directory) returns a nil Mapper.
//
// A binding with Guest "/" replaces the rootfs. Bindings with the same Guest:
// the last one wins, as with mounts made in order. fs nil means the host
// filesystem. Relative root and Host paths are taken relative to the
// current directory of the process.
func New(root string, binds []Binding, fs FS, opts ...Option) (*Mapper, error) {
	var o options
	for _, f := range opts {
		f(&o)
	}
	m := &Mapper{fs: fs}
	if fs == nil {
		m.fs = HostFS()
	}
	_, m.osfs = m.fs.(hostFS)
	if m.osfs {
		m.anch = newAnchors()
		m.searchAll = os.Geteuid() == 0
	}

	rootPath, mode, err := realpath(m.fs, root)
	if err != nil {
		return nil, fmt.Errorf("pathmap: rootfs %q: %w", root, err)
	}
	if mode != syscall.S_IFDIR {
		return nil, fmt.Errorf("pathmap: rootfs %q: %w", root, syscall.ENOTDIR)
	}
	m.rootBI = newBindInfo(rootPath, "/", mode)
	m.rootBI.effective = true
	m.root = &node{bind: m.rootBI}
	m.root.mount = m.root
	m.vdir = rootPath

	var berrs BindErrors
	for _, b := range binds {
		guest := b.Guest
		if !strings.HasPrefix(guest, "/") {
			berrs = append(berrs, &BindError{Binding: b, Err: syscall.EINVAL})
			continue
		}
		guest = filepath.Clean(guest)
		if !b.NoDeref && guest != "/" {
			// m as built so far is the guest's view before this mount.
			guest = m.derefGuest(guest)
		}
		host := b.Host
		var mode uint32
		if _, _, ok := symbolicProc(host); ok {
			host = filepath.Clean(host)
		} else {
			h, md, _, err := realpathProc(m.fs, host)
			if err != nil {
				berrs = append(berrs, &BindError{Binding: b, Err: err})
				continue
			}
			host, mode = h, md
		}
		bi := newBindInfo(host, guest, mode)
		bi.symbolic, bi.symRest, _ = symbolicProc(host)
		m.binds = append(m.binds, Binding{Host: bi.host, Guest: bi.guest, NoDeref: b.NoDeref})
		m.infos = append(m.infos, bi)
		m.insert(bi)
		m.rootBI = m.root.bind
		m.vdir = m.rootBI.host
	}
	if o.virtualDir != "" {
		v, err := realDir(m.fs, o.virtualDir, "virtual directory")
		if err != nil {
			return nil, err
		}
		m.vdir = v
	}
	if o.virtualTree != "" {
		v, err := realDir(m.fs, o.virtualTree, "virtual tree")
		if err != nil {
			return nil, err
		}
		m.vtree, m.vdir = v, v
	}

	// ToGuest: longest host prefix first; on a tie the shortest guest path
	// (so the rootfs wins over a binding of the rootfs itself).
	m.toG = append(m.toG, m.rootBI)
	if m.vtree != "" {
		m.toG = append(m.toG, newBindInfo(m.vtree, "/", syscall.S_IFDIR))
	}
	for _, bi := range m.infos {
		if bi.effective && bi.symbolic == symNone && bi != m.rootBI {
			m.toG = append(m.toG, bi)
		}
	}
	sort.SliceStable(m.toG, func(i, j int) bool {
		a, b := m.toG[i], m.toG[j]
		if len(a.hostPfx) != len(b.hostPfx) {
			return len(a.hostPfx) > len(b.hostPfx)
		}
		return len(a.guest) < len(b.guest)
	})

	m.hostView = m.hidesNothing()

	if o.cache && m.osfs {
		// The mount tops: the chains of directories leading to them
		// are kept even where they cannot be watched.
		tops := []string{rootPath}
		for _, bi := range m.infos {
			switch {
			case bi.symbolic != symNone:
			case bi.mode == syscall.S_IFDIR:
				tops = append(tops, bi.host)
			default:
				if m.fileHosts == nil {
					m.fileHosts = map[string]bool{}
				}
				m.fileHosts[bi.host] = true
			}
		}
		if c, err := newCache(tops, o.cacheDirs, o.cacheEntries); err == nil {
			c.tempDir = o.tempDir
			m.cache = c
			runtime.AddCleanup(m, func(c *cache) { c.close() }, c)
		}
	}

	if len(berrs) > 0 {
		return m, berrs
	}
	return m, nil
}

// Cached reports whether m has a working lookup cache (see WithCache).
func (m *Mapper) Cached() bool { return m.cache != nil && m.cache.stats().Enabled }

// SearchDir tells whether the host user may search host directory dir (an
// absolute path): faccessat(X_OK), remembered by the lookup cache while
// nothing on dir's path changes. nil on a Mapper that does not look at
// the host's files.
func (m *Mapper) SearchDir(dir string) error {
	if !m.osfs {
		return nil
	}
	w := walkers.Get().(*walker)
	w.m, w.synced = m, false
	err := w.searchDir([]byte(dir))
	w.m = nil
	walkers.Put(w)
	return err
}

// CacheStats returns the counters of m's lookup cache (zero without one).
func (m *Mapper) CacheStats() CacheStats {
	if m.cache == nil {
		return CacheStats{}
	}
	return m.cache.stats()
}

// CacheFD returns the lookup cache's inotify descriptor, -1 without one.
// Its last close waits until the kernel has freed the cache's watches
// (fsnotify's mark reaper waits for an SRCU grace period: 10-15 ms on a
// virtual machine), and a process's exit closes it before its parent can
// see the exit. A caller about to exit can have that wait happen elsewhere:
// it leaves a duplicate of the descriptor with a process that outlives it,
// then calls Close.
func (m *Mapper) CacheFD() int {
	if m.cache == nil {
		return -1
	}
	return m.cache.fd()
}

// Close releases the lookup cache's file descriptors and watches; m keeps
// working, without the cache. It is a no-op for a Mapper without a cache,
// and always returns nil.
func (m *Mapper) Close() error {
	if m.cache != nil {
		m.cache.close()
	}
	return nil
}

func newBindInfo(host, guest string, mode uint32) *bindInfo {
	bi := &bindInfo{host: host, guest: guest, hostPfx: host, guestPfx: guest, mode: mode}
	if host == "/" {
		bi.hostPfx = ""
	}
	if guest == "/" {
		bi.guestPfx = ""
	}
	return bi
}

// symbolicProc reports whether host names the calling process in procfs
// (/proc/self, /proc/thread-self), which New must not resolve (it would
// name the tracer).
func symbolicProc(host string) (kind int, rest string, ok bool) {
	h := filepath.Clean(host)
	for _, c := range []struct {
		p string
		k int
	}{{"/proc/self", symSelf}, {"/proc/thread-self", symThreadSelf}} {
		if h == c.p {
			return c.k, "", true
		}
		if strings.HasPrefix(h, c.p+"/") {
			return c.k, h[len(c.p):], true
		}
	}
	return symNone, "", false
}

func isSymbolicProc(host string) bool {
	_, _, ok := symbolicProc(host)
	return ok
}

// insert adds bi to the guest trie; a later binding at the same guest path
// hides the earlier one.
// insert adds bi's mount point to the trie, hiding an earlier binding at the
// same guest path, and keeps every node's mount up to date, so that m can
// resolve paths between two inserts (New's derefGuest). Its cost is the
// length of bi's guest path plus the size of the subtree below it, not the
// number of bindings.
func (m *Mapper) insert(bi *bindInfo) {
	n := m.root
	for _, c := range strings.Split(bi.guest, "/") {
		if c == "" {
			continue
		}
		k := n.childString(c)
		if k == nil {
			k = &node{name: c, path: n.path + "/" + c, parent: n, mount: n.mount}
			n.addKid(k)
		}
		n = k
	}
	if n.bind != nil {
		n.bind.effective = false
	}
	bi.effective = true
	n.bind = bi
	m.setMounts(n, n)
}

func (m *Mapper) setMounts(n, mount *node) {
	if n.bind != nil {
		mount = n
	}
	n.mount = mount
	for _, k := range n.kids {
		m.setMounts(k, mount)
	}
}

// realDir is the realpath of dir, which must be a directory (what names
// it in errors).
func realDir(fs FS, dir, what string) (string, error) {
	v, mode, err := realpath(fs, dir)
	if err == nil && mode != syscall.S_IFDIR {
		err = syscall.ENOTDIR
	}
	if err != nil {
		return "", fmt.Errorf("pathmap: %s %q: %w", what, dir, err)
	}
	return v, nil
}

// VirtualEntry is an entry of the tree WithVirtualTree's root must hold.
type VirtualEntry struct {
	// Path is the guest path: root + Path is its host path.
	Path string
	// Dir tells a directory (a parent of mount points, or a directory's
	// mount point) from a file's mount point (an empty file).
	Dir bool
}

// VirtualTree returns what WithVirtualTree's root must hold: the directories
// on the way to the bindings' mount points and the mount points themselves
// ("/a", "/a/b" and "/a/b/c" for a binding at "/a/b/c"), a parent before its
// children. Only those under virtual directories are ever used; a mount
// point's own entry is only what its parent lists.
func (m *Mapper) VirtualTree() []VirtualEntry {
	var out []VirtualEntry
	var walk func(n *node)
	walk = func(n *node) {
		for _, k := range n.kids {
			dir := k.bind == nil || k.bind.mode == syscall.S_IFDIR ||
				k.bind.mode == 0 && !isDigits(filepath.Base(k.bind.host)) // /proc/self/fd, not fd/0
			out = append(out, VirtualEntry{Path: k.path, Dir: dir})
			walk(k)
		}
	}
	walk(m.root)
	return out
}

// LongHost returns a host path of PathMax bytes or more, among the last
// ones the mapper named through an anchor (a descriptor of an ancestor),
// whose file is (dev, ino) now, not following a last symlink: the host path
// of a file whose /proc/<pid>/fd link the kernel cannot read back
// (ENAMETOOLONG), as long as it was reached by such a path recently and is
// still there.
func (m *Mapper) LongHost(dev, ino uint64) (string, bool) {
	if m.anch == nil {
		return "", false
	}
	return m.anch.find(dev, ino)
}

// Root returns the canonical host path of the guest root directory.
func (m *Mapper) Root() string { return m.rootBI.host }

// HostView reports whether the guest's view is the host's own, so that a
// host path walked in the host's view can reach nothing the guest could not
// name: the root is the host's "/", and every binding either shows a
// directory at its own path (-b /proc) or covers a guest path that did not
// exist on the host when m was made (the fast path library's), so hides no
// host file. A walk that follows a symlink with the host's root then gives
// what the same walk gives in the guest; the races between a lookup and
// the kernel's walk (docs/security.md) reach nothing outside, and the
// caller need not pin (PinnedName) what it hands the kernel.
func (m *Mapper) HostView() bool { return m.hostView }

// hidesNothing computes HostView for a Mapper New has built.
func (m *Mapper) hidesNothing() bool {
	if m.rootBI.host != "/" || !m.osfs {
		return false
	}
	for _, bi := range m.infos {
		switch {
		case bi.symbolic != symNone:
			return false
		case bi.host == bi.guest:
		default:
			if _, err := m.fs.Lstat(bi.guest); err != syscall.ENOENT {
				return false
			}
		}
	}
	return true
}

// Bindings returns the accepted bindings, in the order given to New, with
// canonical Host and cleaned Guest paths.
func (m *Mapper) Bindings() []Binding {
	return append([]Binding(nil), m.binds...)
}

// VirtualDir returns the host directory that stands for virtual
// directories (see WithVirtualDir).
func (m *Mapper) VirtualDir() string { return m.vdir }

// ToGuest maps a host path (a readlink result, /proc/PID/cwd, an fd link,
// getsockname, ...) back to the guest view: the binding with the longest
// Host that is a prefix of host (component-wise) wins, the rootfs counting
// as a binding of Root() at "/". ok is false when host is outside the rootfs
// and every binding (callers then show it unchanged, as proot does), and for
// anything that is not an absolute path ("pipe:[123]", ...). Symbolic
// bindings (/proc/self/...) and bindings hidden by a later one at the same
// guest path are not used. host is cleaned lexically first.
func (m *Mapper) ToGuest(host string) (guest string, ok bool) {
	if !strings.HasPrefix(host, "/") {
		return "", false
	}
	host = filepath.Clean(host)
	for _, bi := range m.toG {
		var rest string
		switch {
		case bi.hostPfx == "":
			rest = host
		case host == bi.hostPfx:
			rest = ""
		case len(host) > len(bi.hostPfx) && host[len(bi.hostPfx)] == '/' && host[:len(bi.hostPfx)] == bi.hostPfx:
			rest = host[len(bi.hostPfx):]
		default:
			continue
		}
		if rest == "/" {
			rest = ""
		}
		g := bi.guestPfx + rest
		if g == "" {
			g = "/"
		}
		return g, true
	}
	return "", false
}

// toErrno extracts a syscall.Errno from an error returned by an FS.
func toErrno(err error) error {
	if err == nil {
		return nil
	}
	if e, ok := err.(syscall.Errno); ok {
		return e
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return err
}

// derefGuest returns where a binding at guest lands given the bindings
// before it, which m holds while New builds it: guest with every symlink
// resolved in the guest's view, the last component included; for a missing
// path, the path it would have. guest itself when it cannot be resolved
// (the binding then stays where it was asked for).
func (m *Mapper) derefGuest(guest string) string {
	pm := m
	self := os.Getpid()
	// The longest prefix that resolves, then the missing rest as given.
	for p, rest := guest, ""; p != "/"; p, rest = filepath.Dir(p), filepath.Join(filepath.Base(p), rest) {
		r, err := pm.Lookup(Proc{Pid: self, Tid: self}, "/", p, Follow|WantGuest)
		if (err == nil || err == syscall.ENOENT) && !r.Magic && strings.HasPrefix(r.Guest, "/") {
			return filepath.Join(r.Guest, rest)
		}
		if err != nil && err != syscall.ENOENT {
			break
		}
	}
	return guest
}
