package emul

import (
	"bytes"
	"debug/elf"

	"golang.org/x/sys/unix"
)

// fileID is what identifies one version of a host file: a write changes
// its mtime and ctime, a chmod, chown, ACL or rename over it its ctime or
// inode, so two stats with the same fileID saw the same content and the
// same permissions (for the same caller).
type fileID struct {
	dev, ino       uint64
	size           int64
	mode, uid, gid uint32
	mtime, ctime   unix.Timespec
}

// idOf is st's fileID.
func idOf(st *unix.Stat_t) fileID {
	return fileID{dev: st.Dev, ino: st.Ino, size: st.Size, mode: st.Mode, uid: st.Uid, gid: st.Gid,
		mtime: st.Mtim, ctime: st.Ctim}
}

// execFile is what planExec reads from a program's file: its first
// binprmBufSize bytes (what the kernel looks at for the format) and, for
// an ELF file, its PT_INTERP or the errno of its validation.
type execFile struct {
	id     fileID
	head   []byte
	interp string
	errno  unix.Errno // elfInterp's, for an ELF head
}

// maxExecFiles bounds the exec file cache: past it, it starts again empty.
const maxExecFiles = 256

// execFiles keeps, per host path, the execFile read last and the interpreters
// that opened, while a stat shows the same fileID: a program run again (a
// shell's commands, a build's compilers) costs one stat and an access check
// instead of an open, three reads and a close, and its interpreter one stat
// instead of an open and a close. A nil *execFiles keeps nothing.
type execFiles struct {
	progs   map[string]*execFile
	interps map[string]fileID
}

// execFilesOf is e's cache, nil for the shared noEmulation.
func execFilesOf(e *Emulation) *execFiles {
	if e == &noEmulation {
		return nil
	}
	if e.execFiles == nil {
		e.execFiles = &execFiles{progs: map[string]*execFile{}, interps: map[string]fileID{}}
	}
	return e.execFiles
}

// program returns what exec needs of host with the kernel's checks (a
// regular file with execute permission, which droidroot can open): its head
// and, for an ELF file, its interpreter.
func (x *execFiles) program(host string) (*execFile, unix.Errno) {
	var st unix.Stat_t
	if errno := execCheck(host, &st); errno != 0 {
		return nil, errno
	}
	id := idOf(&st)
	if x != nil {
		if f := x.progs[host]; f != nil && f.id == id {
			return f, 0
		}
	}
	fd, errno := openRead(host)
	if errno != 0 {
		return nil, errno
	}
	defer unix.Close(fd)
	r := fdReader(fd)
	var head [binprmBufSize]byte
	n, _ := r.ReadAt(head[:], 0)
	f := &execFile{id: id, head: head[:n]}
	if bytes.HasPrefix(f.head, []byte(elf.ELFMAG)) {
		f.interp, f.errno = elfInterp(r)
	}
	// A file changed while read (its stat now differs) is not kept.
	var now unix.Stat_t
	if x != nil && unix.Fstat(fd, &now) == nil && idOf(&now) == id {
		if len(x.progs) >= maxExecFiles {
			clear(x.progs)
		}
		x.progs[host] = f
	}
	return f, 0
}

// interpreter checks that the ELF interpreter host opens, as the kernel's
// exec opens it.
func (x *execFiles) interpreter(host string) unix.Errno {
	var st unix.Stat_t
	if x != nil && unix.Stat(host, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG {
		if id, ok := x.interps[host]; ok && id == idOf(&st) {
			return 0
		}
	}
	fd, errno := openRead(host)
	if errno != 0 {
		return errno
	}
	var now unix.Stat_t
	if x != nil && unix.Fstat(fd, &now) == nil && now.Mode&unix.S_IFMT == unix.S_IFREG {
		if len(x.interps) >= maxExecFiles {
			clear(x.interps)
		}
		x.interps[host] = idOf(&now)
	}
	unix.Close(fd)
	return 0
}

// fdReader reads a descriptor at offsets (pread), with none of os.File's
// set-up: an io.ReaderAt for elfInterp.
type fdReader int

// ReadAt reads len(b) bytes at off, or fewer at the file's end.
func (r fdReader) ReadAt(b []byte, off int64) (int, error) {
	n := 0
	for n < len(b) {
		k, err := unix.Pread(int(r), b[n:], off+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		if k == 0 {
			break
		}
		n += k
	}
	return n, nil
}
