package pathmap

import (
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// Anchors: a host path of PathMax bytes or more that no directory the
// caller's kernel view holds (the cwd, a dirfd: appendRel) reaches by a
// short enough relative path, such as an absolute guest path shorter than
// PATH_MAX inside a bind whose host source is long, is named through a
// directory the mapper's own process holds open: "/proc/<pid>/fd/<N>/rest",
// N an O_PATH descriptor of an ancestor of the path. The kernel follows that
// magic link for any process allowed to read the mapper's /proc/<pid>/fd
// (same user, PTRACE_MODE_READ), tracees included, and takes the rest
// physically, as the walk's host paths hold no symlinks.
//
// An anchor is checked against its path (device and inode) at every use
// and opened again when the directory there changed, so a renamed
// ancestor is not followed to its new place. At most maxAnchors stay open;
// past that all are closed and opened again as needed.

// maxAnchors bounds the descriptors the anchors keep open.
const maxAnchors = 64

// anchorStep is the granularity at which ancestors are chosen, so that the
// host paths of a walk that grows one component at a time share anchors.
const anchorStep = 1024

// maxRecent is how many long host paths named through anchors are kept
// for Mapper.LongHost.
const maxRecent = 64

// anchors holds the open ancestor directories of long host paths.
type anchors struct {
	mu  sync.Mutex
	fds map[string]int // host directory -> O_PATH descriptor
	pid string         // this process's pid, for /proc/<pid>/fd
	// recent are the last long host paths named (a ring; next is the slot
	// the next one goes to).
	recent [maxRecent]string
	next   int
}

// newAnchors returns an empty set of anchors for this process.
func newAnchors() *anchors {
	return &anchors{fds: map[string]int{}, pid: strconv.Itoa(os.Getpid())}
}

// appendName appends to dst a name of path (a clean absolute host path
// without symlinks, PathMax bytes or longer) shorter than PathMax:
// /proc/<pid>/fd/<N>/ then the rest of path below the anchor N. ok is
// false when no ancestor can be opened.
func (a *anchors) appendName(dst, path []byte) (_ []byte, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	dst, ok = a.appendNameLocked(dst, path, 0)
	if ok {
		a.rememberLocked(string(path))
	}
	return dst, ok
}

// remember records path, a long host path found otherwise (DirHost), as
// if an anchor had just named it.
func (a *anchors) remember(path string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rememberLocked(path)
}

// rememberLocked adds path to the recent long paths (not again when it is
// the last one). a.mu is held.
func (a *anchors) rememberLocked(path string) {
	if a.recent[(a.next+maxRecent-1)%maxRecent] != path {
		a.recent[a.next] = path
		a.next = (a.next + 1) % maxRecent
	}
}

// find returns the most recently named long host path whose file (not
// followed) is (dev, ino) now.
func (a *anchors) find(dev, ino uint64) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := 1; i <= maxRecent; i++ {
		p := a.recent[(a.next+maxRecent-i)%maxRecent]
		if p == "" {
			continue
		}
		name, ok := a.appendNameLocked(nil, []byte(p), 0)
		var st unix.Stat_t
		if ok && unix.Lstat(string(name), &st) == nil && st.Dev == dev && st.Ino == ino {
			return p, true
		}
	}
	return "", false
}

// appendNameLocked is appendName with a.mu held; depth bounds the chain of
// anchors an anchor itself needs.
func (a *anchors) appendNameLocked(dst, path []byte, depth int) ([]byte, bool) {
	prefix := len("/proc/") + len(a.pid) + len("/fd/") + 10 + 1
	cut := anchorCut(path, len(path)+prefix-PathMax+1)
	if cut <= 0 || depth > 8 {
		return dst, false
	}
	fd, ok := a.open(string(path[:cut]), depth)
	if !ok {
		return dst, false
	}
	dst = append(dst, "/proc/"...)
	dst = append(dst, a.pid...)
	dst = append(dst, "/fd/"...)
	dst = strconv.AppendInt(dst, int64(fd), 10)
	dst = append(dst, path[cut:]...)
	return dst, len(path)-cut+prefix < PathMax
}

// anchorCut returns where to cut path into an ancestor directory and the
// rest ("/name..."): at a slash at or after need, preferring the last
// slash at or before need rounded up to anchorStep, so that longer paths
// below one directory share it. 0 when there is no such slash.
func anchorCut(path []byte, need int) int {
	if need < 1 {
		need = 1
	}
	limit := (need + anchorStep - 1) / anchorStep * anchorStep
	best := 0
	for i := need; i < len(path); i++ {
		if path[i] != '/' {
			continue
		}
		if best == 0 || i <= limit {
			best = i
		}
		if i > limit {
			break
		}
	}
	return best
}

// open returns the descriptor of the anchor for host directory dir,
// opening it (again) when it is not open or the directory at dir changed.
func (a *anchors) open(dir string, depth int) (int, bool) {
	if _, ok := a.fds[dir]; !ok && len(a.fds) >= maxAnchors {
		// Before dir's own name is made: it may go through an anchor.
		for d, fd := range a.fds {
			unix.Close(fd)
			delete(a.fds, d)
		}
	}
	name := dir
	if len(dir) >= PathMax {
		b, ok := a.appendNameLocked(nil, []byte(dir), depth+1)
		if !ok {
			return 0, false
		}
		name = string(b)
	}
	var st unix.Stat_t
	if err := unix.Stat(name, &st); err != nil {
		return 0, false
	}
	if fd, ok := a.fds[dir]; ok {
		var fst unix.Stat_t
		if unix.Fstat(fd, &fst) == nil && fst.Dev == st.Dev && fst.Ino == st.Ino {
			return fd, true
		}
		unix.Close(fd)
		delete(a.fds, dir)
	}
	fd, err := unix.Open(name, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, false
	}
	a.fds[dir] = fd
	return fd, true
}
