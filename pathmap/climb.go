package pathmap

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Directories deeper than PATH_MAX. The kernel takes a relative path from
// a directory however deep it is (rm -r, du and fts walk a tree through
// descriptors of its directories), but cannot print such a directory's
// path: readlink of its /proc/<pid>/fd/<N> link (and getcwd) fails with
// ENAMETOOLONG. DirHost finds the path the way getcwd did before the kernel
// had a system call for it: up through "..", finding each directory in its
// parent's listing, until an ancestor whose path the kernel prints.

// maxClimb bounds the directories DirHost climbs (a path of PathMax bytes
// has fewer than 2048 components).
const maxClimb = 2048

// DirHost returns the host path of the directory that link, a magic link
// such as /proc/<pid>/fd/<N>, leads to, when the kernel cannot print it
// (PathMax bytes or more): LongHost's answer when a recent long path is
// that directory now, else the path found by climbing from it, which
// LongHost then knows too. ok is false for what is not a directory, a
// directory removed since it was opened, and where a directory on the way
// cannot be listed (no read permission) or is reached by no name.
func (m *Mapper) DirHost(link string) (string, bool) {
	if m.anch == nil {
		return "", false
	}
	fd, err := unix.Open(link, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", false
	}
	defer func() { unix.Close(fd) }()
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return "", false
	}
	if h, ok := m.anch.find(st.Dev, st.Ino); ok {
		return h, true
	}
	var names []string
	for range maxClimb {
		parent, err := unix.Openat(fd, "..", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return "", false
		}
		name, ok := entryNaming(parent, st.Dev, st.Ino)
		unix.Close(fd)
		fd = parent
		if !ok || unix.Fstat(fd, &st) != nil {
			return "", false
		}
		names = append(names, name)
		top, err := hostFS{}.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
		if err == unix.ENAMETOOLONG {
			continue
		}
		if err != nil || !strings.HasPrefix(top, "/") || strings.HasSuffix(top, " (deleted)") {
			return "", false
		}
		var b strings.Builder
		b.WriteString(strings.TrimSuffix(top, "/"))
		for i := len(names) - 1; i >= 0; i-- {
			b.WriteByte('/')
			b.WriteString(names[i])
		}
		path := b.String()
		m.anch.remember(path)
		return path, true
	}
	return "", false
}

// entryNaming returns the name under which directory dir (opened for
// reading) holds the directory (dev, ino), found in its listing: an
// entry with that inode number, checked with fstatat, or, where none has
// it (a mount point: the listing shows the inode under the mount), the
// directory entry fstatat finds to be it.
func entryNaming(dir int, dev, ino uint64) (string, bool) {
	if _, err := unix.Seek(dir, 0, 0); err != nil {
		return "", false
	}
	var cands []string // directories whose listed inode differs
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.Getdents(dir, buf)
		if err != nil {
			return "", false
		}
		if n <= 0 {
			break
		}
		for off := 0; off+19 <= n; {
			d := buf[off:n]
			reclen := int(binary.NativeEndian.Uint16(d[16:18]))
			if reclen < 19 || reclen > len(d) {
				return "", false
			}
			dino := binary.NativeEndian.Uint64(d[0:8])
			typ := d[18]
			name := d[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			off += reclen
			s := string(name)
			if s == "." || s == ".." || (typ != unix.DT_DIR && typ != unix.DT_UNKNOWN) {
				continue
			}
			if dino == ino {
				if isEntry(dir, s, dev, ino) {
					return s, true
				}
				continue
			}
			cands = append(cands, s)
		}
	}
	for _, s := range cands {
		if isEntry(dir, s, dev, ino) {
			return s, true
		}
	}
	return "", false
}

// isEntry tells whether name in directory dir is the file (dev, ino).
func isEntry(dir int, name string, dev, ino uint64) bool {
	var st unix.Stat_t
	return unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Dev == dev && st.Ino == ino
}
