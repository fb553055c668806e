package pathmap

import (
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// FS is the host filesystem access pathmap needs; tests can fake it. The
// host one (HostFS, the default) uses lstat(2) and readlink(2).
//
// Implementations must behave like the host kernel for the paths pathmap
// gives them: absolute, clean, without symlinks in their parent components.
type FS interface {
	// Lstat returns the S_IFMT bits of the st_mode of host (not following
	// a final symlink). The error is a syscall.Errno.
	Lstat(host string) (mode uint32, err error)
	// Readlink returns the target of symlink host. For anything that is
	// not a symlink it fails with EINVAL, for a missing path with ENOENT,
	// like readlink(2).
	Readlink(host string) (string, error)
}

// HostFS returns the FS of the host: lstat(2) and readlink(2). When New
// gets it (or nil), Resolve makes these system calls directly on its own
// buffers, without allocating.
func HostFS() FS { return hostFS{} }

type hostFS struct{}

func (hostFS) Lstat(host string) (uint32, error) {
	var st unix.Stat_t
	if err := unix.Lstat(host, &st); err != nil {
		return 0, toErrno(err)
	}
	return st.Mode & syscall.S_IFMT, nil
}

func (hostFS) Readlink(host string) (string, error) {
	buf := make([]byte, PathMax)
	n, err := unix.Readlink(host, buf)
	if err != nil {
		return "", toErrno(err)
	}
	if n >= len(buf) {
		return "", syscall.ENAMETOOLONG
	}
	return string(buf[:n]), nil
}

// realpath resolves p on the host like realpath(3): every symlink is
// followed with host semantics, the result is absolute and clean. It also
// returns the S_IFMT bits of the result.
func realpath(fs FS, p string) (string, uint32, error) {
	r, mode, _, err := realpathProc(fs, p)
	return r, mode, err
}

// realpathProc is realpath, except that it stops at the symlinks
// /proc/self and /proc/thread-self, which name the calling process: it then
// returns "/proc/self/REST" (or thread-self), lexically cleaned, with
// sym=true, for Resolve to name the tracee instead.
func realpathProc(fs FS, p string) (_ string, _ uint32, sym bool, _ error) {
	if p == "" {
		return "", 0, false, syscall.ENOENT
	}
	if !filepath.IsAbs(p) {
		a, err := filepath.Abs(p)
		if err != nil {
			return "", 0, false, err
		}
		p = a
	}
	resolved := "/"
	rest := p
	mode := uint32(syscall.S_IFDIR)
	links := 0
	for {
		rest = strings.TrimLeft(rest, "/")
		if rest == "" {
			return resolved, mode, false, nil
		}
		name := rest
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			name, rest = rest[:i], rest[i:]
		} else {
			rest = ""
		}
		if mode != syscall.S_IFDIR {
			return "", 0, false, syscall.ENOTDIR
		}
		switch name {
		case ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		cand := resolved + "/" + name
		if resolved == "/" {
			cand = "/" + name
		}
		md, err := fs.Lstat(cand)
		if err != nil {
			return "", 0, false, toErrno(err)
		}
		if md == syscall.S_IFLNK {
			if cand == "/proc/self" || cand == "/proc/thread-self" {
				if s := filepath.Clean(cand + "/" + rest); isSymbolicProc(s) {
					return s, 0, true, nil
				}
			}
			links++
			if links > MaxSymlinks {
				return "", 0, false, syscall.ELOOP
			}
			t, err := fs.Readlink(cand)
			if err != nil {
				return "", 0, false, toErrno(err)
			}
			if t == "" {
				return "", 0, false, syscall.ENOENT
			}
			if strings.HasPrefix(t, "/") {
				resolved = "/"
			}
			rest = t + "/" + rest
			continue
		}
		resolved, mode = cand, md
	}
}
