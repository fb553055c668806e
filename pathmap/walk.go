package pathmap

import (
	"bytes"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Proc tells Resolve about the calling process so that /proc/self and
// /proc/thread-self resolve to the tracee, not the tracer. Tid 0 means Pid.
// Pid 0 disables the substitution.
type Proc struct {
	Pid, Tid int
	// KernelCwd says that the kernel's current directory of thread Tid
	// is the host directory of the cwd a relative path is walked from.
	// A walk whose host path reaches PathMax bytes (a cwd deeper than
	// PATH_MAX, reached by relative paths as the kernel allows) then
	// makes its system calls on host paths near that directory through
	// /proc/<Tid>/cwd, which the kernel resolves however deep it is, and
	// a Result whose Host is that long gets a relative form (Result.Rel).
	KernelCwd bool
	// Dir, when not empty, is the host directory that the caller's file
	// descriptor DirFd is open on: the dirfd an *at call's relative path
	// is walked from. When it is the host path of the cwd given to
	// Lookup, it serves as KernelCwd's directory does, through
	// /proc/<Tid>/fd/<DirFd> (KernelCwd must then be false).
	Dir   string
	DirFd int
	// Batch, if set, groups this lookup with others of one system call
	// between which the caller changes nothing on the host: the lookup
	// cache applies the changes reported so far once for all of them.
	Batch *Batch
	// Links, if set, says what the magic links of /proc/<pid>/ stand for
	// in the guest's view, so that a walk through one continues there
	// (see "procfs" in the package documentation). Without it the walk
	// stops at a magic link and hands it to the kernel (Result.Magic).
	Links MagicLinks
	// Search, if set, lets the caller search directories the host user
	// may not: a fake root's emulated CAP_DAC_OVERRIDE (see
	// SearchOverride).
	Search SearchOverride
}

// SearchOverride makes host directories searchable for one call of a
// caller that may search any directory, but whose host user may not.
type SearchOverride interface {
	// Search is asked about host directory dir when the host refused a
	// lookup of the walk in it (EACCES), and about the directory of a
	// last component the walk leaves to the kernel when the host user
	// may not search it. It returns true when it made dir searchable
	// until the call ends: the walk then looks again.
	Search(dir string) bool
}

// Batch is shared by the lookups of one system call (see Proc.Batch).
type Batch struct {
	synced bool // the cache applied the reported changes during the batch
}

// Flags select how Lookup treats the last component of a path.
type Flags uint

const (
	// Follow follows a symlink in the last component (stat, open without
	// O_NOFOLLOW, chdir, execve, ...). Without it (lstat, readlink,
	// O_NOFOLLOW, AT_SYMLINK_NOFOLLOW) the last component is left to the
	// kernel, except that a trailing slash still makes it followed.
	Follow Flags = 1 << iota
	// Entry is for calls that act on the directory entry itself: mkdir,
	// mknod, unlink, rmdir, rename (both names), the new name of link and
	// symlink, and open with O_CREAT|O_EXCL (or O_CREAT with a trailing
	// slash). As in the kernel, their last component is never followed,
	// not even with a trailing slash (rmdir("link/") is ENOTDIR, it does
	// not remove the link's target), and a last component "." or ".." or a
	// path "/" is passed through literally (host "DIR/.", "DIR/..", "/") so
	// that the kernel gives its own EINVAL/ENOTEMPTY/EEXIST/EBUSY/EISDIR
	// without looking anything up. Result.MountPoint tells when the entry
	// is a binding's mount point, which a real kernel would refuse to
	// remove or rename (EBUSY): the caller must handle it, because Host is
	// then the binding's source.
	Entry
	// WantGuest fills Result.Guest (one more allocation).
	WantGuest
)

// Result is the outcome of Lookup.
type Result struct {
	// Host is the path to hand to the kernel.
	Host string
	// Guest is the canonical guest path of what Host names (no symlinks,
	// no "." or "..", no trailing slash), when WantGuest was given and
	// Magic is false. For a missing last component it is the path it
	// would have. This is what a tracer stores as the new cwd after a
	// successful chdir.
	Guest string
	// Magic is set when the walk stopped at a procfs magic link, for the
	// kernel to follow: Host is then "/proc/<pid>/..." followed by the
	// rest of the path unchanged. With Proc.Links that is only a last
	// component whose MagicTarget.Jump is set, so nothing follows.
	Magic bool
	// MountPoint is set when the last component is a binding's mount point
	// (Host is the binding's source).
	MountPoint bool
	// Virtual is set when the path names a virtual directory (a missing
	// guest parent of a binding); Host is then the stand-in directory.
	Virtual bool
	// Rel, when not empty, is a path relative to the directory the walk
	// started at (Proc.KernelCwd's or Proc.Dir's), as the kernel takes it
	// from there, that names Host when Host is PathMax bytes or longer:
	// "../" for each component of that directory below its longest
	// common ancestor with Host, then the rest of Host. It is empty when
	// Host is shorter, when Literal is set (the guest's own path works),
	// and when that relative form is too long as well (a mount whose
	// source lies elsewhere on the host). With no such relative form, or
	// for an absolute guest path, it is an absolute name through a
	// directory the mapper's process holds open,
	// /proc/<pid>/fd/<N>/rest (anchor.go), which the kernel resolves for
	// the caller's tracees too; "" when even that fails: Host then gives
	// ENAMETOOLONG.
	Rel string
	// Literal is set when the kernel, given the guest's own path string
	// from the host directory the walk started at (the host path of cwd,
	// for a relative path), reaches Host by itself: the walk followed no
	// symlink (procfs "self" included), took no "..", and crossed no mount
	// point and no virtual directory. A tracer can then hand a relative
	// path to the kernel unchanged, relative to the directory the guest
	// named (its cwd or dirfd), which needs no copy and works however deep
	// that directory is.
	Literal bool
}

// Resolve translates guest path p for process pr into the host path to hand
// to the kernel. cwd is the guest's current directory, a canonical absolute
// guest path (as Result.Guest gives), used when p is relative. follow tells
// whether a symlink in the last component is followed. It is Lookup with
// Follow or no flag.
//
// Errors are syscall.Errno, as the kernel would give them for the guest path
// in a real chroot with these bind mounts: ENOENT (empty path, missing
// intermediate), ENOTDIR (non-directory intermediate, trailing slash on a
// non-directory), ELOOP (more than MaxSymlinks symlinks), ENAMETOOLONG (path
// of PathMax bytes or more, or a component the host filesystem rejects),
// EACCES (the host refused a lookup), EINVAL (relative p with a relative
// cwd). A missing last component is not an error. Some errors about the
// last component or its parent directory are left to the kernel, which
// reports them itself when the call runs on the returned path (see the
// package documentation, "Cost").
func (m *Mapper) Resolve(pr Proc, cwd, p string, follow bool) (string, error) {
	var f Flags
	if follow {
		f = Follow
	}
	r, err := m.Lookup(pr, cwd, p, f)
	return r.Host, err
}

// Lookup is Resolve with flags, and more about the result.
func (m *Mapper) Lookup(pr Proc, cwd, p string, flags Flags) (Result, error) {
	// The kernel reads a C string: it ends at the first NUL.
	if i := strings.IndexByte(p, 0); i >= 0 {
		p = p[:i]
	}
	if p == "" {
		return Result{}, syscall.ENOENT
	}
	if len(p) >= PathMax {
		return Result{}, syscall.ENAMETOOLONG
	}
	w := walkers.Get().(*walker)
	w.m, w.pr, w.flags, w.links, w.synced, w.bent, w.near = m, pr, flags, 0, pr.Batch != nil && pr.Batch.synced, false, false
	if w.pr.Tid <= 0 {
		w.pr.Tid = w.pr.Pid
	}
	var r Result
	var err error
	w.base = w.base[:0]
	if p[0] == '/' {
		w.setRoot()
	} else {
		err = w.setCwd(cwd)
		if w.kernelDir() {
			w.base = append(w.base, w.host...)
		}
	}
	if err == nil {
		w.pend = append(w.pend[:0], p...)
		w.pos = 0
		r, err = w.walk()
	}
	if err != nil {
		r = Result{}
	}
	if pr.Batch != nil && w.synced {
		pr.Batch.synced = true
	}
	w.m = nil
	walkers.Put(w)
	return r, err
}

// walker holds the state of one walk; walkers are pooled so that a walk
// does not allocate.
type walker struct {
	m     *Mapper
	pr    Proc
	flags Flags
	links int
	// synced: the lookup cache has applied the changes reported so far
	// (done before the first cached answer a walk uses).
	synced bool
	// bent: the walk left the literal path (Result.Literal is false).
	bent bool
	// near: a lookup was made through the kernel's directory of the walk
	// after its host path got EACCES (nearRel): Result.Rel then names the
	// result from there too.
	near bool
	// base: the host path of the kernel's cwd or dirfd when a relative
	// walk started there (Proc.KernelCwd, Proc.Dir), else empty; fd is
	// the dirfd that names it, -1 for the cwd.
	base []byte
	fd   int

	// The current directory: its canonical guest path, its host path, its
	// place in the binding trie (node is the deepest trie node on the guest
	// path, beyond the number of guest components below it).
	guest  []byte
	host   []byte
	node   *node
	beyond int
	virt   bool // a virtual directory: host is the stand-in
	isDir  bool // known to be a directory (false: not checked yet)

	pend []byte // the rest of the path to walk, from pos
	pos  int
	alt  []byte // spare buffer to build the next pend
	lbuf []byte // readlink buffer
	cbuf []byte // NUL-terminated copy of a host path for system calls
}

var walkers = sync.Pool{New: func() any {
	return &walker{
		guest: make([]byte, 0, 256),
		host:  make([]byte, 0, 512),
		pend:  make([]byte, 0, 512),
		alt:   make([]byte, 0, 512),
		lbuf:  make([]byte, PathMax),
		cbuf:  make([]byte, 0, PathMax+1),
		base:  make([]byte, 0, 512),
	}
}}

// kernelDir reports whether the kernel's view of the directory a relative
// walk starts from is w.host (Proc.KernelCwd, Proc.Dir), and sets w.fd to
// name it.
func (w *walker) kernelDir() bool {
	if w.pr.Tid <= 0 || w.bent {
		return false
	}
	w.fd = -1
	if w.pr.KernelCwd {
		return true
	}
	if w.pr.Dir != "" && string(w.host) == w.pr.Dir {
		w.fd = w.pr.DirFd
		return true
	}
	return false
}

// deep names a host path of PathMax bytes or more through the kernel's
// directory of the walk (see Proc.KernelCwd): /proc/<tid>/cwd or
// /proc/<tid>/fd/<fd>, then the path relative to it (appendRel), or else
// through an anchor (anchor.go), in w.cbuf, NUL-terminated; false if it
// cannot.
func (w *walker) deep(path []byte) bool {
	if !w.m.osfs {
		return false
	}
	if len(w.base) == 0 || !w.deepRel(path) {
		var ok bool
		w.cbuf, ok = w.m.anch.appendName(w.cbuf[:0], path)
		if !ok {
			return false
		}
		w.cbuf = append(w.cbuf, 0)
	}
	return true
}

// deepRel is deep through the kernel's directory of the walk.
func (w *walker) deepRel(path []byte) bool {
	w.cbuf = append(w.cbuf[:0], "/proc/"...)
	w.cbuf = strconv.AppendInt(w.cbuf, int64(w.pr.Tid), 10)
	if w.fd < 0 {
		w.cbuf = append(w.cbuf, "/cwd/"...)
	} else {
		w.cbuf = append(w.cbuf, "/fd/"...)
		w.cbuf = strconv.AppendInt(w.cbuf, int64(w.fd), 10)
		w.cbuf = append(w.cbuf, '/')
	}
	var ok bool
	if w.cbuf, ok = appendRel(w.cbuf, w.base, path); !ok || len(w.cbuf) >= PathMax {
		return false
	}
	w.cbuf = append(w.cbuf, 0)
	return true
}

// relHost is Result.Rel for host: its path relative to the kernel's
// directory of the walk, else its name through an anchor (anchor.go), ""
// when there is none short enough.
func (w *walker) relHost(host string) string {
	if len(w.base) > 0 {
		if r, ok := appendRel(make([]byte, 0, PathMax), w.base, []byte(host)); ok {
			return string(r)
		}
	}
	if w.m.anch == nil {
		return ""
	}
	r, ok := w.m.anch.appendName(make([]byte, 0, PathMax), []byte(strings.TrimSuffix(host, "/")))
	if !ok {
		return ""
	}
	if strings.HasSuffix(host, "/") {
		r = append(r, '/')
	}
	return string(r)
}

func (w *walker) lstat(path []byte) (uint32, error) {
	if len(path) >= PathMax {
		if w.deep(path) {
			return sysLstat(w.cbuf) // not cached: inotify cannot watch it
		}
		return 0, syscall.ENAMETOOLONG
	}
	if w.m.osfs {
		w.cbuf = append(append(w.cbuf[:0], path...), 0)
		var mode uint32
		var err error
		if w.m.cache != nil {
			mode, err = w.m.cache.lstat(w, path)
		} else {
			mode, err = sysLstat(w.cbuf)
		}
		if err == syscall.EACCES && w.nearRel(path) {
			mode, err = sysLstat(w.cbuf) // not cached: EACCES depends on the caller
		}
		if err == syscall.EACCES && w.override(dirOf(path)) {
			mode, err = sysLstat(w.cbuf)
		}
		return mode, err
	}
	mode, err := w.m.fs.Lstat(string(path))
	return mode, toErrno(err)
}

// nearRel names path in w.cbuf through the kernel's directory of the walk
// (deepRel), for a lookup that its host path refused with EACCES: a
// directory on the way from "/" that the caller may not search (a cwd
// below a directory made unsearchable since: the kernel walks a relative
// path from the cwd, and never searches the cwd's ancestors). false when
// the walk has no such directory.
func (w *walker) nearRel(path []byte) bool {
	if len(w.base) > 0 && w.m.osfs && w.deepRel(path) {
		w.near = true
		return true
	}
	return false
}

// search checks that the caller may search the current directory, as the
// kernel does before it looks up any name there, "." and ".." too
// (link_path_walk's may_lookup): a walk that takes "." and ".." itself
// leaves that directory out of the host path it hands the kernel ("r/." is
// r, "r/../x" is x), where the kernel's own lookup of any other name checks
// it. Root may search any directory; a virtual directory stands in for a
// mount point's missing parent, which a chroot's mounts would have made
// searchable; a host path of PathMax bytes or more is not checked.
func (w *walker) search() error {
	if !w.m.osfs || w.m.searchAll || w.virt || len(w.host) >= PathMax {
		return nil
	}
	err := w.searchDir(w.host)
	if err == syscall.EACCES && w.nearRel(w.host) {
		err = sysSearch(w.cbuf) // an ancestor, not the directory, refused
	}
	if err == syscall.EACCES && w.override(w.host) {
		err = sysSearch(w.cbuf)
	}
	return err
}

// override asks Proc.Search to make host directory dir searchable for
// the call, and reports whether it did.
func (w *walker) override(dir []byte) bool {
	return w.pr.Search != nil && w.m.osfs && len(dir) > 0 && len(dir) < PathMax && w.pr.Search.Search(string(dir))
}

// searchLast checks, for a caller with Proc.Search, that the host user may
// search the current directory, where the kernel looks up the last
// component of the walk itself: where not, Search may make it searchable.
func (w *walker) searchLast() {
	if w.pr.Search == nil || !w.m.osfs || w.virt || len(w.host) >= PathMax {
		return
	}
	if w.searchDir(w.host) == syscall.EACCES {
		w.override(w.host)
	}
}

// searchDir checks that the host user may search host directory dir
// (through the lookup cache when there is one), leaving dir in w.cbuf.
func (w *walker) searchDir(dir []byte) error {
	w.cbuf = append(append(w.cbuf[:0], dir...), 0)
	if w.m.cache != nil {
		return w.m.cache.search(w, dir)
	}
	return sysSearch(w.cbuf)
}

// dirOf is the directory part of absolute host path p ("/" for "/x").
func dirOf(p []byte) []byte {
	i := bytes.LastIndexByte(p, '/')
	if i <= 0 {
		return p[:min(len(p), 1)]
	}
	return p[:i]
}

// readlink returns the target of path in w.lbuf (valid until the next
// readlink); EINVAL means path is not a symlink.
func (w *walker) readlink(path []byte) ([]byte, error) {
	deep := len(path) >= PathMax
	if deep && !w.deep(path) {
		return nil, syscall.ENAMETOOLONG
	}
	if w.m.osfs {
		if !deep { // else w.cbuf names it through /proc/<tid>/cwd
			w.cbuf = append(append(w.cbuf[:0], path...), 0)
		}
		var n int
		var err error
		if w.m.cache != nil && !deep { // inotify cannot watch a deep path
			n, err = w.m.cache.readlink(w, path)
		} else {
			n, err = sysReadlink(w.cbuf, w.lbuf)
		}
		if err == syscall.EACCES && !deep && w.nearRel(path) {
			n, err = sysReadlink(w.cbuf, w.lbuf)
		}
		if err == syscall.EACCES && !deep && w.override(dirOf(path)) {
			n, err = sysReadlink(w.cbuf, w.lbuf)
		}
		if err != nil {
			return nil, err
		}
		if n >= len(w.lbuf) {
			return nil, syscall.ENAMETOOLONG
		}
		return w.lbuf[:n], nil
	}
	s, err := w.m.fs.Readlink(string(path))
	if err != nil {
		return nil, toErrno(err)
	}
	if len(s) >= len(w.lbuf) {
		return nil, syscall.ENAMETOOLONG
	}
	return w.lbuf[:copy(w.lbuf, s)], nil
}

// appendComponent appends "/name" to a clean absolute path.
func appendComponent(p, name []byte) []byte {
	if len(p) != 1 || p[0] != '/' {
		p = append(p, '/')
	}
	return append(p, name...)
}

// appendMountHost appends the host path of mount bi for this process.
func (w *walker) appendMountHost(dst []byte, bi *bindInfo) []byte {
	if bi.symbolic == symNone || w.pr.Pid <= 0 {
		return append(dst, bi.hostPfx...)
	}
	dst = append(dst, "/proc/"...)
	dst = strconv.AppendInt(dst, int64(w.pr.Pid), 10)
	if bi.symbolic == symThreadSelf {
		dst = append(dst, "/task/"...)
		dst = strconv.AppendInt(dst, int64(w.pr.Tid), 10)
	}
	return append(dst, bi.symRest...)
}

// computeHost sets w.host from w.guest: the host path of the mount the
// guest path is in, followed by the guest path below the mount point.
func (w *walker) computeHost() {
	bi := w.node.mount.bind
	w.host = w.appendMountHost(w.host[:0], bi)
	suffix := w.guest[len(bi.guestPfx):]
	if len(suffix) == 1 { // guest "/" in the rootfs
		suffix = suffix[:0]
	}
	w.host = append(w.host, suffix...)
	if len(w.host) == 0 {
		w.host = append(w.host, '/')
	}
}

func (w *walker) setRoot() {
	w.guest = append(w.guest[:0], '/')
	w.node, w.beyond, w.virt, w.isDir = w.m.root, 0, false, true
	w.computeHost()
}

// step moves the trie position one component down; kid is the trie child
// for that component (nil when there is none).
func (w *walker) step(kid *node) {
	if w.beyond == 0 && kid != nil {
		w.node = kid
	} else {
		w.beyond++
	}
}

// setCwd starts the walk at cwd, a canonical guest directory.
func (w *walker) setCwd(cwd string) error {
	if !strings.HasPrefix(cwd, "/") {
		return syscall.EINVAL
	}
	w.setRoot()
	for rest := cwd; rest != ""; {
		var name string
		name, rest = cutComponent(rest)
		switch name {
		case "", ".":
		case "..":
			w.pop()
		default:
			var kid *node
			if w.beyond == 0 {
				kid = w.node.childString(name)
			}
			if len(w.guest) > 1 {
				w.guest = append(w.guest, '/')
			}
			w.guest = append(w.guest, name...)
			w.step(kid)
		}
	}
	w.computeHost()
	if w.beyond == 0 && w.node.bind == nil {
		w.checkVirtual()
	}
	return nil
}

// pop moves w.guest and the trie position to the guest parent.
func (w *walker) pop() {
	if len(w.guest) == 1 {
		return
	}
	i := bytes.LastIndexByte(w.guest, '/')
	if i == 0 {
		i = 1
	}
	w.guest = w.guest[:i]
	if w.beyond > 0 {
		w.beyond--
	} else {
		w.node = w.node.parent
	}
}

// up handles "..": the guest parent, whose host path follows from the mount
// it is in (so ".." from the top of a binding leaves the binding).
func (w *walker) up() {
	if len(w.guest) == 1 {
		return // ".." at the guest root stays there
	}
	w.pop()
	w.virt, w.isDir = false, true
	w.computeHost()
	if w.beyond == 0 && w.node.bind == nil {
		w.checkVirtual()
	}
}

// checkVirtual makes the current position, a guest parent of a mount point,
// a virtual directory if it does not exist on the host.
func (w *walker) checkVirtual() {
	if _, err := w.lstat(w.host); err == syscall.ENOENT {
		w.setVirtual()
	}
}

func (w *walker) setVirtual() {
	w.virt, w.isDir, w.bent = true, true, true
	w.host = append(w.host[:0], w.m.vdir...)
	if w.m.vtree != "" {
		w.host = append(w.host, w.node.path...)
	}
}

// followLink continues the walk with symlink target body in place of the
// component just read.
func (w *walker) followLink(body []byte, last, trailing bool) error {
	w.links++
	w.bent = true
	if w.links > MaxSymlinks {
		return syscall.ELOOP
	}
	if len(body) == 0 {
		return syscall.ENOENT
	}
	alt := append(w.alt[:0], body...)
	if !last {
		alt = append(alt, '/')
		alt = append(alt, w.pend[w.pos:]...)
	} else if trailing {
		alt = append(alt, '/')
	}
	w.alt, w.pend, w.pos = w.pend, alt, 0
	if body[0] == '/' {
		w.setRoot()
	}
	return nil
}

// finish builds the Result for the current w.host and w.guest.
func (w *walker) finish(trailing bool, r Result) Result {
	if trailing && w.host[len(w.host)-1] != '/' {
		w.host = append(w.host, '/')
		r.Host = string(w.host)
		w.host = w.host[:len(w.host)-1]
	} else {
		r.Host = string(w.host)
	}
	if w.flags&WantGuest != 0 {
		r.Guest = string(w.guest)
	}
	r.Virtual = r.Virtual || w.virt
	r.Literal = !w.bent && !r.Virtual
	if (len(r.Host) >= PathMax || w.near) && (!r.Literal || len(w.base) == 0) {
		r.Rel = w.relHost(r.Host)
	}
	return r
}

func isDot(name []byte) bool    { return len(name) == 1 && name[0] == '.' }
func isDotDot(name []byte) bool { return len(name) == 2 && name[0] == '.' && name[1] == '.' }

// nextIsDot tells whether the next component of s is "." or "..".
func nextIsDot(s []byte) bool {
	i := bytes.IndexByte(s, '/')
	if i >= 0 {
		s = s[:i]
	}
	return isDot(s) || isDotDot(s)
}

func (w *walker) walk() (Result, error) {
	entry := w.flags&Entry != 0
	for {
		pend := w.pend
		i := w.pos
		for i < len(pend) && pend[i] == '/' {
			i++
		}
		if i == len(pend) {
			// No component left: the path names the current directory
			// ("/", or a symlink to "/").
			if entry {
				// Only a path made of slashes gets here (the kernel's
				// LAST_ROOT): "/" makes every entry call fail as it should.
				r := Result{Host: "/"}
				if w.flags&WantGuest != 0 {
					r.Guest = "/"
				}
				return r, nil
			}
			return w.finish(false, Result{}), nil
		}
		start := i
		for i < len(pend) && pend[i] != '/' {
			i++
		}
		end := i
		for i < len(pend) && pend[i] == '/' {
			i++
		}
		w.pos = i
		last := i == len(pend)
		trailing := last && i > end
		name := pend[start:end]

		if isDot(name) || isDotDot(name) {
			// "." and ".." need the current position to be a directory.
			if !w.isDir {
				mode, err := w.lstat(w.host)
				if err != nil {
					return Result{}, err
				}
				if mode != syscall.S_IFDIR {
					return Result{}, syscall.ENOTDIR
				}
				w.isDir = true
			}
			if last && entry {
				// LAST_DOT / LAST_DOTDOT: let the kernel refuse.
				w.host = appendComponent(w.host, name)
				w.guest = appendComponent(w.guest, name)
				w.virt = false
				return w.finish(false, Result{}), nil
			}
			if err := w.search(); err != nil {
				return Result{}, err
			}
			if isDotDot(name) {
				w.bent = true // the guest's "..", even at its root
				w.up()
			}
			if last {
				return w.finish(false, Result{}), nil
			}
			continue
		}

		follow := !last || (!entry && (w.flags&Follow != 0 || trailing))

		// procfs: "self" and "thread-self" name the tracee.
		if w.pr.Pid > 0 && follow && !w.virt && string(w.host) == "/proc" {
			if string(name) == "self" || string(name) == "thread-self" {
				body := strconv.AppendInt(w.lbuf[:0], int64(w.pr.Pid), 10)
				if string(name) == "thread-self" {
					body = append(body, "/task/"...)
					body = strconv.AppendInt(body, int64(w.pr.Tid), 10)
				}
				if err := w.followLink(body, last, trailing); err != nil {
					return Result{}, err
				}
				continue
			}
		}

		var kid *node
		if w.beyond == 0 {
			kid = w.node.child(name)
		}

		// A mount point: switch to the binding's host side.
		if kid != nil && kid.bind != nil {
			bi := kid.bind
			w.guest = appendComponent(w.guest, name)
			w.step(kid)
			w.virt, w.bent = false, true
			w.host = w.appendMountHost(w.host[:0], bi)
			if len(w.host) == 0 {
				w.host = append(w.host, '/')
			}
			if last && entry {
				return w.finish(trailing, Result{MountPoint: true}), nil
			}
			mode := bi.mode
			if bi.symbolic != symNone {
				md, err := w.lstat(w.host)
				if err != nil {
					if last && err == syscall.ENOENT {
						return w.finish(trailing, Result{MountPoint: true}), nil
					}
					return Result{}, err
				}
				if md == syscall.S_IFLNK && follow && procLinkDir(w.host) {
					if r, done, err := w.followMagic(end, last, trailing); done {
						return r, err
					}
					continue
				}
				mode = md
			}
			w.isDir = mode == syscall.S_IFDIR
			if !w.isDir && (!last || trailing) {
				return Result{}, syscall.ENOTDIR
			}
			if last {
				return w.finish(trailing, Result{MountPoint: true}), nil
			}
			continue
		}

		if w.virt {
			if kid != nil {
				// A guest parent of a deeper mount point inside a
				// virtual directory: virtual too.
				w.guest = appendComponent(w.guest, name)
				w.step(kid)
				if last && entry {
					w.computeHost()
					return w.finish(trailing, Result{}), nil
				}
				w.setVirtual()
				if last {
					return w.finish(trailing, Result{}), nil
				}
				continue
			}
			// Nothing else exists in a virtual directory.
			if len(name) > NameMax {
				return Result{}, syscall.ENAMETOOLONG
			}
			if !last {
				return Result{}, syscall.ENOENT
			}
			// A missing last component: a host path whose parent does
			// not exist either, so the kernel says ENOENT to any call.
			w.guest = appendComponent(w.guest, name)
			w.step(nil)
			w.virt = false
			w.computeHost()
			return w.finish(trailing, Result{}), nil
		}

		if last && (entry || (!follow && kid == nil)) {
			// Not followed: the kernel looks it up itself.
			w.searchLast()
			w.host = appendComponent(w.host, name)
			w.guest = appendComponent(w.guest, name)
			w.step(kid)
			return w.finish(trailing, Result{}), nil
		}

		oldLen := len(w.host)
		w.host = appendComponent(w.host, name)

		// One system call: lstat when the type matters (a guest parent of
		// a mount point may be virtual; "." or ".." follows; a trailing
		// slash wants a directory; an unfollowed last component), else
		// readlink, which also tells "not a symlink" (EINVAL) and gives a
		// symlink's target at once.
		var mode uint32
		var body []byte
		var err error
		known := kid != nil || trailing || !follow || (!last && nextIsDot(pend[w.pos:]))
		if kid == nil && w.ownProcDir() {
			// The caller's own /proc/<pid> or /proc/<pid>/task/<tid>:
			// a directory while it makes this call.
			mode, known = syscall.S_IFDIR, true
		} else if known {
			mode, err = w.lstat(w.host)
			if err == nil && mode == syscall.S_IFLNK && follow {
				body, err = w.readlink(w.host)
			}
		} else {
			body, err = w.readlink(w.host)
			if err == nil {
				mode = syscall.S_IFLNK
			} else if err == syscall.EINVAL {
				err = nil
			}
		}
		if err == syscall.ENAMETOOLONG && follow && procLinkDir(w.host) {
			// A magic link whose target the kernel cannot print (a host
			// path of PATH_MAX bytes or more): followMagic asks Links for
			// its guest path, or leaves the jump to the kernel.
			mode, err = syscall.S_IFLNK, nil
		}
		if err != nil {
			if err != syscall.ENOENT {
				return Result{}, err
			}
			if kid != nil {
				// A guest parent of a mount point missing from the host.
				w.guest = appendComponent(w.guest, name)
				w.step(kid)
				w.setVirtual()
				if last {
					return w.finish(trailing, Result{}), nil
				}
				continue
			}
			if !last {
				return Result{}, syscall.ENOENT
			}
			// A missing last component: fine for calls that create.
			w.guest = appendComponent(w.guest, name)
			w.step(nil)
			return w.finish(trailing, Result{}), nil
		}

		if mode == syscall.S_IFLNK && follow {
			if procLinkDir(w.host) {
				if r, done, err := w.followMagic(end, last, trailing); done {
					return r, err
				}
				continue
			}
			w.host = w.host[:oldLen]
			if err := w.followLink(body, last, trailing); err != nil {
				return Result{}, err
			}
			continue
		}

		w.guest = appendComponent(w.guest, name)
		w.step(kid)
		w.isDir = mode == syscall.S_IFDIR
		if known && !w.isDir && (!last || trailing) {
			return Result{}, syscall.ENOTDIR
		}
		if last {
			return w.finish(trailing, Result{}), nil
		}
		// An intermediate that readlink said is not a symlink: if it is
		// not a directory either, the next lookup below it fails with
		// ENOTDIR, as in the kernel.
	}
}

// ownProcDir reports whether w.host is /proc/<Pid> or
// /proc/<Pid>/task/<Tid> of the calling thread (Proc).
func (w *walker) ownProcDir() bool {
	if w.pr.Pid <= 0 {
		return false
	}
	rest, ok := bytes.CutPrefix(w.host, []byte("/proc/"))
	if !ok {
		return false
	}
	rest, ok = cutNumber(rest, w.pr.Pid)
	if !ok {
		return false
	}
	if len(rest) == 0 {
		return true
	}
	rest, ok = bytes.CutPrefix(rest, []byte("/task/"))
	if !ok {
		return false
	}
	rest, ok = cutNumber(rest, w.pr.Tid)
	return ok && len(rest) == 0
}

// cutNumber cuts the decimal form of n from the start of b.
func cutNumber(b []byte, n int) ([]byte, bool) {
	var d [20]byte
	return bytes.CutPrefix(b, strconv.AppendInt(d[:0], int64(n), 10))
}

// procLinkDir reports whether a symlink at host is a procfs magic link:
// anything below /proc/<pid>/ (also /proc/self/ and /proc/thread-self/,
// which symbolic bindings name when Proc.Pid is 0).
func procLinkDir(host []byte) bool {
	if underProcPid(host) {
		return true
	}
	return bytes.HasPrefix(host, []byte("/proc/self/")) || bytes.HasPrefix(host, []byte("/proc/thread-self/"))
}

// followMagic follows the magic link at w.host, the component of the path
// that ends at end. With Proc.Links, the walk goes on at the guest path the
// link stands for, as through a symlink to it (done is false), so that ".."
// and the components after it stay in the guest's view; only a last
// component whose target says Jump is left to the kernel. Without Links, or
// for a link it does not know, the walk stops there (w.magic).
func (w *walker) followMagic(end int, last, trailing bool) (r Result, done bool, err error) {
	if w.pr.Links == nil {
		return w.magic(end), true, nil
	}
	l, ok := ParseMagicLink(string(w.host))
	if !ok {
		return w.magic(end), true, nil
	}
	t, err := w.pr.Links.Follow(l)
	switch {
	case err != nil:
		return Result{}, true, toErrno(err)
	case last && t.Jump:
		return w.magic(end), true, nil
	case !strings.HasPrefix(t.Guest, "/") && last:
		return Result{}, true, syscall.ENOENT // nothing the guest may reach
	case !strings.HasPrefix(t.Guest, "/"):
		return Result{}, true, syscall.ENOTDIR // a pipe, socket... is no directory
	}
	if err := w.followLink([]byte(t.Guest), last, trailing); err != nil {
		return Result{}, true, err
	}
	return Result{}, false, nil
}

// magic stops the walk at a magic link: the host path so far plus the rest
// of the guest path from end, unchanged.
func (w *walker) magic(end int) Result {
	w.host = append(w.host, w.pend[end:]...)
	return Result{Host: string(w.host), Magic: true}
}
