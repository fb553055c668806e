package pathmap

import (
	"path"
	"strings"
	"sync"
	"syscall"
)

// fakeFS is an in-memory host filesystem: host path -> file, directory,
// device or symlink. It behaves like the kernel for the paths pathmap gives
// it and records anything pathmap must never do (unclean paths, symlinks in
// parent components), so tests can assert that it didn't.
type fakeFS struct {
	mu       sync.Mutex
	ents     map[string]fakeEnt
	lstats   int
	readlink int
	bad      []string
}

type fakeEnt struct {
	mode   uint32
	target string
}

func newFakeFS() *fakeFS {
	return &fakeFS{ents: map[string]fakeEnt{"/": {mode: syscall.S_IFDIR}}}
}

func (f *fakeFS) add(p string, e fakeEnt) *fakeFS {
	f.mkdirAll(path.Dir(p))
	f.ents[p] = e
	return f
}

func (f *fakeFS) mkdirAll(p string) {
	for q := p; q != "/"; q = path.Dir(q) {
		if _, ok := f.ents[q]; !ok {
			f.ents[q] = fakeEnt{mode: syscall.S_IFDIR}
		}
	}
}

func (f *fakeFS) dir(ps ...string) *fakeFS {
	for _, p := range ps {
		f.add(p, fakeEnt{mode: syscall.S_IFDIR})
	}
	return f
}

func (f *fakeFS) file(ps ...string) *fakeFS {
	for _, p := range ps {
		f.add(p, fakeEnt{mode: syscall.S_IFREG})
	}
	return f
}

func (f *fakeFS) chr(p string) *fakeFS { return f.add(p, fakeEnt{mode: syscall.S_IFCHR}) }

func (f *fakeFS) link(p, target string) *fakeFS {
	return f.add(p, fakeEnt{mode: syscall.S_IFLNK, target: target})
}

func (f *fakeFS) counts() (int, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lstats, f.readlink
}

func (f *fakeFS) resetCounts() {
	f.mu.Lock()
	f.lstats, f.readlink = 0, 0
	f.mu.Unlock()
}

// lookup finds p like the kernel's walk with the final component not
// followed. A symlink in a parent component is a pathmap bug: it is
// recorded (and reported as EXDEV, which no test expects).
func (f *fakeFS) lookup(p string) (fakeEnt, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(p) >= PathMax {
		return fakeEnt{}, syscall.ENAMETOOLONG
	}
	if !strings.HasPrefix(p, "/") || path.Clean(p) != p {
		f.bad = append(f.bad, "unclean path "+p)
		return fakeEnt{}, syscall.EXDEV
	}
	if p == "/" {
		return f.ents["/"], nil
	}
	comps := strings.Split(p[1:], "/")
	cur := ""
	for i, c := range comps {
		if len(c) > NameMax {
			return fakeEnt{}, syscall.ENAMETOOLONG
		}
		cur += "/" + c
		e, ok := f.ents[cur]
		if !ok {
			return fakeEnt{}, syscall.ENOENT
		}
		if i == len(comps)-1 {
			return e, nil
		}
		switch e.mode {
		case syscall.S_IFDIR:
		case syscall.S_IFLNK:
			f.bad = append(f.bad, "symlink in parent of "+p)
			return fakeEnt{}, syscall.EXDEV
		default:
			return fakeEnt{}, syscall.ENOTDIR
		}
	}
	panic("unreachable")
}

func (f *fakeFS) Lstat(p string) (uint32, error) {
	f.mu.Lock()
	f.lstats++
	f.mu.Unlock()
	e, err := f.lookup(p)
	if err != nil {
		return 0, err
	}
	return e.mode, nil
}

func (f *fakeFS) Readlink(p string) (string, error) {
	f.mu.Lock()
	f.readlink++
	f.mu.Unlock()
	e, err := f.lookup(p)
	if err != nil {
		return "", err
	}
	if e.mode != syscall.S_IFLNK {
		return "", syscall.EINVAL
	}
	return e.target, nil
}
