package emul

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/pathmap"
	"github.com/droidroot/droidroot/tracer"
)

// Hard links without link(2) (-l/--link2symlink).
//
// Android app storage refuses link(2). Like termux proot, droidroot then
// moves the linked file to a hidden data file and makes every name a
// symlink to it; unlike termux proot, the guest never sees the symlinks:
//
//   - data file   DIR/.l2s.<name>.<random>      the file itself (its inode)
//   - count       DIR/.l2s.<name>.<random>.n    a symlink whose target is the
//     number of names, in decimal; none while there is one name
//   - each name   a symlink to the data file: its base name when the name is
//     in DIR, else its absolute guest path
//
// DIR is PROOT_L2S_DIR when it is set and visible in the guest, else a
// ".l2s" store at the root of the mount (rootfs or bound directory), else
// the directory of the first name. Hard links termux proot made are
// understood and kept in its format (see termuxFinal).
//
// Because names point at guest paths, the path mapper follows them like
// any guest symlink (open, stat, exec, chmod through any name reach the
// data file). Calls that act on a name itself
// (lstat, readlink, lchown, utimensat with AT_SYMLINK_NOFOLLOW, O_NOFOLLOW
// opens...) are pointed at the data file; st_nlink is patched from the
// count; link, unlink and rename keep the count; directory listings hide
// the .l2s. entries and report names with the data file's d_type.

// l2sPrefix starts the base name of every data and count file.
const l2sPrefix = ".l2s."

// l2sCountSuffix ends the base name of a count symlink.
const l2sCountSuffix = ".n"

// link2symlink is the state of the hard-link emulation.
type link2symlink struct {
	on   bool   // -l given
	dir  string // PROOT_L2S_DIR (host), "" = the store at the mount's root
	fail bool   // real links fail with EPERM (DROIDROOT_FAIL_LINK)
	// opened maps a data file (host path) to the guest path of the name
	// it was last opened through, so that /proc/PID/fd/N shows a name.
	opened map[string]string
}

// maxOpened bounds the opened map; it is cleared when full.
const maxOpened = 4096

// noteOpen records that the guest opened data file dataHost through the
// name guest (relative to dirfd argument dirfdArg).
func (l *link2symlink) noteOpen(c *tracer.Call, dirfdArg int, guest, dataHost string) {
	if !strings.HasPrefix(guest, "/") {
		base := guestCwd(c)
		if dirfdArg >= 0 && int32(c.Arg(dirfdArg)) != unix.AT_FDCWD {
			d, errno := fdGuestPath(c, int(int32(c.Arg(dirfdArg))))
			if errno != 0 {
				return
			}
			base = d
		}
		guest = filepath.Join(base, guest)
	}
	if l.opened == nil || len(l.opened) >= maxOpened {
		l.opened = map[string]string{}
	}
	l.opened[dataHost] = filepath.Clean(guest)
}

// nameOf returns the guest name through which data file dataHost was
// last opened, if that name still stands for it.
func (l *link2symlink) nameOf(c *tracer.Call, dataHost string) (string, bool) {
	if !isL2SData(filepath.Base(dataHost)) {
		return "", false
	}
	name, ok := l.opened[dataHost]
	if !ok {
		return "", false
	}
	h, err := c.Mapper().Resolve(c.PathProc(), "/", name, false)
	if err != nil {
		return "", false
	}
	if d, ok := l2sName(c, h); !ok || d != dataHost {
		return "", false
	}
	return name, true
}

// isL2SData reports whether base is the base name of a data file.
func isL2SData(base string) bool {
	return strings.HasPrefix(base, l2sPrefix) && !strings.HasSuffix(base, l2sCountSuffix)
}

// l2sName returns the host path of the data file that the host symlink
// nameHost stands for, if it is a name of an emulated hard link: one of
// droidroot's, or one termux proot made (a symlink to an intermediate
// symlink, both host paths; see termuxFinal).
func l2sName(c *tracer.Call, nameHost string) (string, bool) {
	target, err := readlinkHost(nameHost)
	if err != nil || !isL2SData(filepath.Base(target)) {
		return "", false
	}
	var data string
	if !strings.Contains(target, "/") {
		data = filepath.Join(filepath.Dir(nameHost), target)
	} else if h, err := c.Mapper().Resolve(pathProc(c), "/", target, false); err == nil {
		data = h
	}
	var st unix.Stat_t
	if data != "" && unix.Fstatat(unix.AT_FDCWD, data, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			if final, ok := termuxFinal(data); ok {
				return final, true
			}
		}
		return data, true
	}
	if strings.HasPrefix(target, "/") {
		// termux proot's names point at host paths.
		return termuxFinal(target)
	}
	return "", false
}

// termuxFinal follows a termux proot link2symlink intermediate symlink
// (".l2s.NAME0001", a host path) to its final file ".l2s.NAME0001.NNNN",
// NNNN being the number of names.
func termuxFinal(inter string) (string, bool) {
	final, err := readlinkHost(inter)
	if err != nil || !strings.HasPrefix(final, "/") || !isTermuxFinal(filepath.Base(final)) ||
		strings.TrimSuffix(filepath.Base(final), filepath.Ext(final)) != filepath.Base(inter) {
		return "", false
	}
	var st unix.Stat_t
	if unix.Fstatat(unix.AT_FDCWD, final, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return "", false
	}
	return final, true
}

// isTermuxFinal reports whether base looks like the final file of a termux
// proot hard link: ".l2s." ... "." and four digits.
func isTermuxFinal(base string) bool {
	if !strings.HasPrefix(base, l2sPrefix) || len(base) < len(l2sPrefix)+5 || base[len(base)-5] != '.' {
		return false
	}
	for _, ch := range base[len(base)-4:] {
		if ch < '0' || ch > '9' {
			return false
		}
	}
	return true
}

// termuxInter returns the intermediate symlink of a termux final file, if
// data is one (its sibling without the count suffix points at it).
func termuxInter(data string) (string, bool) {
	if !isTermuxFinal(filepath.Base(data)) {
		return "", false
	}
	if _, err := readlinkHost(data + l2sCountSuffix); err == nil {
		return "", false // one of droidroot's
	}
	inter := data[:len(data)-5]
	if f, ok := termuxFinal(inter); !ok || filepath.Base(f) != filepath.Base(data) {
		return "", false
	}
	return inter, true
}

// l2sStoreName is the directory at the root of each mount (the rootfs and
// every bound directory) where data files go when PROOT_L2S_DIR is not
// usable: there they survive renames and removals of the directories that
// hold their names.
const l2sStoreName = ".l2s"

// mountStore returns the host path of the store of the mount host lies on.
func mountStore(c *tracer.Call, host string) (string, bool) {
	guest, ok := toGuest(c, host)
	if !ok {
		return "", false
	}
	m := mountOf(c.Mapper(), guest)
	if m == "" {
		return filepath.Join(c.Mapper().Root(), l2sStoreName), true
	}
	for _, b := range c.Mapper().Bindings() {
		if b.Guest == m {
			var st unix.Stat_t
			if unix.Stat(b.Host, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
				return "", false
			}
			return filepath.Join(b.Host, l2sStoreName), true
		}
	}
	return "", false
}

// l2sCount reads the number of names of data file data (0 if unknown). A
// data file of droidroot's without a count has one name (setL2SCount).
func l2sCount(data string) int {
	s, err := readlinkHost(data + l2sCountSuffix)
	if err != nil {
		if _, ok := termuxInter(data); ok {
			s = data[len(data)-4:]
		} else if err == unix.ENOENT {
			return 1
		} else {
			return 0
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// setL2SCount replaces the count of data atomically (symlink + rename).
// A termux proot final file is renamed to carry the new count instead, and
// its intermediate symlink re-pointed.
func setL2SCount(data string, n int) error {
	if inter, ok := termuxInter(data); ok {
		nf := inter + "." + strconv.Itoa(10000 + n)[1:]
		if err := unix.Renameat(unix.AT_FDCWD, data, unix.AT_FDCWD, nf); err != nil {
			return err
		}
		tmp := inter + ".tmp"
		unix.Unlinkat(unix.AT_FDCWD, tmp, 0)
		if err := unix.Symlinkat(nf, unix.AT_FDCWD, tmp); err != nil {
			return err
		}
		return unix.Renameat(unix.AT_FDCWD, tmp, unix.AT_FDCWD, inter)
	}
	// Each metadata call is dear (tens of microseconds on a phone's
	// storage, and git makes an emulated link and drops a name for every
	// object): one name is no count at all, one call (git's link of a
	// temporary, then its unlink: 2, then 1), and a count made where there
	// was none is one symlink.
	count := data + l2sCountSuffix
	if n <= 1 {
		if err := unix.Unlinkat(unix.AT_FDCWD, count, 0); err != nil && err != unix.ENOENT {
			return err
		}
		return nil
	}
	if err := unix.Symlinkat(strconv.Itoa(n), unix.AT_FDCWD, count); err != unix.EEXIST {
		return err
	}
	// The count's new symlink replaces the old one in one rename; a
	// temporary left by an interrupted update is removed only when found.
	tmp := count + ".tmp"
	err := unix.Symlinkat(strconv.Itoa(n), unix.AT_FDCWD, tmp)
	if err == unix.EEXIST {
		unix.Unlinkat(unix.AT_FDCWD, tmp, 0)
		err = unix.Symlinkat(strconv.Itoa(n), unix.AT_FDCWD, tmp)
	}
	if err != nil {
		return err
	}
	return unix.Renameat(unix.AT_FDCWD, tmp, unix.AT_FDCWD, count)
}

// l2sTarget is what a name in host directory dir points at to reach data
// (for a termux proot link: its intermediate symlink's host path).
func l2sTarget(c *tracer.Call, dir, data string) (string, bool) {
	if inter, ok := termuxInter(data); ok {
		return inter, true
	}
	if filepath.Dir(data) == dir {
		return filepath.Base(data), true
	}
	return toGuest(c, data)
}

// dropName removes one name of data from the count, deleting the data
// when it was the last.
func dropName(data string) {
	n := l2sCount(data) - 1
	if n > 0 {
		setL2SCount(data, n)
		return
	}
	if inter, ok := termuxInter(data); ok {
		unix.Unlinkat(unix.AT_FDCWD, inter, 0)
	}
	unix.Unlinkat(unix.AT_FDCWD, data, 0)
	unix.Unlinkat(unix.AT_FDCWD, data+l2sCountSuffix, 0)
}

// linkHandler handles link and linkat: the kernel's link when it works
// (and FailLink is off), else the emulation when -l is on, else EPERM.
func (l *link2symlink) linkHandler(oldA, newA pathArg, flagsArg int) tracer.Handler {
	return tracer.Handler{Enter: func(c *tracer.Call) {
		if flagsArg >= 0 && c.Arg(flagsArg)&^uint64(unix.AT_SYMLINK_FOLLOW|unix.AT_EMPTY_PATH) != 0 {
			c.Fail(unix.EINVAL)
			return
		}
		var ts [2]translated
		for k, a := range []pathArg{oldA, newA} {
			t, errno := translate(c, a, pathmap.WantGuest)
			if errno != 0 {
				c.Fail(errno)
				return
			}
			ts[k] = t
		}
		old, nw := ts[0], ts[1]
		if !old.skip && mountOf(c.Mapper(), old.res.Guest) != mountOf(c.Mapper(), nw.res.Guest) {
			c.Fail(unix.EXDEV)
			return
		}
		if old.skip {
			// linkat(fd, "", ..., AT_EMPTY_PATH): the file open as fd.
			fd := int(int32(c.Arg(0)))
			h, errno := fdHostPath(c, fd)
			if errno != 0 {
				c.Fail(errno)
				return
			}
			if l.on && !l.fail {
				// The kernel's way for an unnamed (O_TMPFILE) file too.
				proc := procFd(c.Tid(), fd)
				if err := unix.Linkat(unix.AT_FDCWD, proc, unix.AT_FDCWD, nw.host, unix.AT_SYMLINK_FOLLOW); err == nil {
					c.Return(0)
					return
				}
			}
			old.host = strings.TrimSuffix(h, " (deleted)")
		}
		if !l.on {
			if l.fail {
				c.Fail(unix.EPERM)
				return
			}
			writeArgs(c, []pathArg{oldA, newA}, ts[:])
			return
		}
		c.Return(dacAround(c, func() int64 { return l.link(c, old.host, nw.host) }, filepath.Dir(old.host), filepath.Dir(nw.host)))
	}}
}

// link makes newHost another name of oldHost and returns the syscall
// result. Every metadata call is dear on a phone's storage (tens of
// microseconds, and git or dpkg link every object or file they replace), so
// the errors the kernel would give for newHost (a missing or non-directory
// parent, EACCES; EEXIST but where a file would move first: convert) come
// from making its symlink, not from stats made first.
func (l *link2symlink) link(c *tracer.Call, oldHost, newHost string) int64 {
	var st unix.Stat_t
	if err := unix.Fstatat(unix.AT_FDCWD, oldHost, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return -int64(err.(unix.Errno))
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return -int64(unix.EPERM)
	}
	data, isName := "", false
	switch {
	case st.Mode&unix.S_IFMT == unix.S_IFLNK:
		data, isName = l2sName(c, oldHost)
	case isL2SData(filepath.Base(oldHost)):
		// Reached through a symlink to a name (AT_SYMLINK_FOLLOW).
		data, isName = oldHost, true
	}
	if !isName && !l.fail {
		err := unix.Linkat(unix.AT_FDCWD, oldHost, unix.AT_FDCWD, newHost, 0)
		switch err {
		case nil:
			return 0
		case unix.EPERM, unix.EACCES, unix.EMLINK, unix.ENOTSUP:
		default:
			return -int64(err.(unix.Errno))
		}
	}
	if !isName && st.Mode&unix.S_IFMT == unix.S_IFLNK {
		// A symlink's other name is a symlink with the same text: the
		// kernel resolves each name of a linked symlink from its own
		// directory, which a symlink moved to the store would not be
		// (a relative target read from there). Its own inode and a link
		// count of 1 are the difference left.
		target, err := readlinkHost(oldHost)
		if err != nil {
			return -int64(err.(unix.Errno))
		}
		if err := unix.Symlinkat(target, unix.AT_FDCWD, newHost); err != nil {
			return -int64(err.(unix.Errno))
		}
		return 0
	}
	if !isName {
		return -int64(l.convert(c, oldHost, newHost)) // a link to itself: convert's EEXIST
	}
	target, ok := l2sTarget(c, filepath.Dir(newHost), data)
	if !ok {
		return -int64(unix.EXDEV)
	}
	if err := unix.Symlinkat(target, unix.AT_FDCWD, newHost); err != nil {
		return -int64(err.(unix.Errno))
	}
	if err := setL2SCount(data, l2sCount(data)+1); err != nil {
		unix.Unlinkat(unix.AT_FDCWD, newHost, 0)
		return -int64(err.(unix.Errno))
	}
	return 0
}

// convert makes the file at host an emulated hard link with two names,
// host and newHost: it moves the file to a data file, makes host a symlink
// to it and then newHost (so a listing in creation order keeps host before
// newHost, as with a real link), and gives the data file a count of 2. An
// existing newHost is EEXIST before anything moves (git links every object
// that may already be there); newHost's other errors (a missing or
// non-directory parent, EACCES) come from its symlink, and the file moves
// back. It returns the call's errno (0: done).
func (l *link2symlink) convert(c *tracer.Call, host, newHost string) unix.Errno {
	var nst unix.Stat_t
	if err := unix.Fstatat(unix.AT_FDCWD, newHost, &nst, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		return unix.EEXIST
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	name := l2sPrefix + filepath.Base(host) + "." + hex.EncodeToString(rnd[:])
	if len(name) > 255 {
		name = l2sPrefix + hex.EncodeToString(rnd[:])
	}
	dir := filepath.Dir(host)
	data := ""
	var stores []string
	if l.dir != "" {
		if _, ok := toGuest(c, l.dir); ok {
			stores = append(stores, l.dir)
		} else {
			c.Tracer().WarnOnce("l2sdir", "PROOT_L2S_DIR %s is not visible in the guest; hard links keep their data in %s at the root of each mount", l.dir, l2sStoreName)
		}
	}
	if s, ok := mountStore(c, host); ok {
		stores = append(stores, s)
	}
	for _, s := range stores {
		// The store is made once: a rename into it that finds it
		// missing makes it and tries again.
		d := filepath.Join(s, name)
		err := unix.Renameat(unix.AT_FDCWD, host, unix.AT_FDCWD, d)
		if err == unix.ENOENT {
			if merr := unix.Mkdirat(unix.AT_FDCWD, s, 0o700); merr != nil && merr != unix.EEXIST {
				continue
			}
			err = unix.Renameat(unix.AT_FDCWD, host, unix.AT_FDCWD, d)
		}
		if err == nil {
			data = d
			break
		}
	}
	if data == "" {
		d := filepath.Join(dir, name)
		if err := unix.Renameat(unix.AT_FDCWD, host, unix.AT_FDCWD, d); err != nil {
			return err.(unix.Errno)
		}
		data = d
	}
	undo := func() { unix.Renameat(unix.AT_FDCWD, data, unix.AT_FDCWD, host) }
	target, ok := l2sTarget(c, dir, data)
	newTarget, newOK := l2sTarget(c, filepath.Dir(newHost), data)
	if !ok || !newOK {
		undo()
		return unix.EXDEV
	}
	if err := unix.Symlinkat(target, unix.AT_FDCWD, host); err != nil {
		undo()
		return err.(unix.Errno)
	}
	err := unix.Symlinkat(newTarget, unix.AT_FDCWD, newHost)
	if err == nil {
		err = setL2SCount(data, 2) // a fresh data name: one symlink
		if err != nil {
			unix.Unlinkat(unix.AT_FDCWD, newHost, 0)
		}
	}
	if err != nil {
		unix.Unlinkat(unix.AT_FDCWD, host, 0)
		undo()
		return err.(unix.Errno)
	}
	return 0
}

// unlinkHandler is entryHandler for unlink/unlinkat that keeps the count
// of an emulated hard link: removing a name drops it, the last name takes
// the data file with it.
func (l *link2symlink) unlinkHandler(a pathArg, flagsArg int) tracer.Handler {
	plain := entryHandler(a)
	return tracer.Handler{Enter: func(c *tracer.Call) {
		if flagsArg >= 0 && c.Arg(flagsArg)&unix.AT_REMOVEDIR != 0 {
			plain.Enter(c)
			return
		}
		t, errno := translate(c, a, pathmap.WantGuest)
		if errno != 0 || t.res.MountPoint {
			plain.Enter(c)
			return
		}
		data, ok := l2sName(c, t.host)
		if !ok {
			plain.Enter(c)
			return
		}
		unlink := func() int64 {
			if err := unix.Unlinkat(unix.AT_FDCWD, t.host, 0); err != nil {
				return -int64(err.(unix.Errno))
			}
			return 0
		}
		if r := dacAround(c, unlink, filepath.Dir(t.host)); r != 0 {
			c.Return(r)
			return
		}
		dropName(data)
		c.Return(0)
	}}
}

// renameHandler is entryHandler for rename, renameat and renameat2 that
// keeps emulated hard links whole: a name replaced drops from its count,
// a name moved to another directory is re-pointed, and renaming a name
// onto another name of the same file does nothing, as for hard links.
func (l *link2symlink) renameHandler(oldA, newA pathArg, flagsArg int) tracer.Handler {
	plain := entryHandler(oldA, newA)
	return tracer.Handler{Enter: func(c *tracer.Call) {
		var ts [2]translated
		for k, a := range []pathArg{oldA, newA} {
			t, errno := translate(c, a, pathmap.WantGuest)
			if errno != 0 || t.res.MountPoint {
				plain.Enter(c)
				return
			}
			ts[k] = t
		}
		oldData, oldName := l2sName(c, ts[0].host)
		newData, newName := l2sName(c, ts[1].host)
		if !oldName && !newName {
			plain.Enter(c)
			return
		}
		if mountOf(c.Mapper(), ts[0].res.Guest) != mountOf(c.Mapper(), ts[1].res.Guest) {
			c.Fail(unix.EXDEV)
			return
		}
		var flags uint
		if flagsArg >= 0 {
			flags = uint(c.Arg(flagsArg))
		}
		if oldName && newName && oldData == newData && flags&unix.RENAME_EXCHANGE == 0 {
			if flags&unix.RENAME_NOREPLACE != 0 {
				c.Fail(unix.EEXIST)
				return
			}
			c.Return(0)
			return
		}
		c.Return(dacAround(c, func() int64 {
			if err := unix.Renameat2(unix.AT_FDCWD, ts[0].host, unix.AT_FDCWD, ts[1].host, flags); err != nil {
				return -int64(err.(unix.Errno))
			}
			if flags&unix.RENAME_EXCHANGE != 0 {
				if newName {
					l.repoint(c, ts[0].host, newData)
				}
			} else if newName {
				dropName(newData)
			}
			if oldName {
				l.repoint(c, ts[1].host, oldData)
			}
			return 0
		}, filepath.Dir(ts[0].host), filepath.Dir(ts[1].host)))
	}}
}

// repoint makes the name at host point at data from its (new) directory.
func (l *link2symlink) repoint(c *tracer.Call, host, data string) {
	target, ok := l2sTarget(c, filepath.Dir(host), data)
	if !ok {
		return
	}
	if cur, err := readlinkHost(host); err == nil && cur == target {
		return
	}
	tmp := filepath.Join(filepath.Dir(host), l2sPrefix+"tmp."+strconv.Itoa(c.Tid()))
	unix.Unlinkat(unix.AT_FDCWD, tmp, 0)
	if unix.Symlinkat(target, unix.AT_FDCWD, tmp) == nil {
		unix.Renameat(unix.AT_FDCWD, tmp, unix.AT_FDCWD, host)
	}
}

// substitute points a call that acts on a name itself at its data file.
func (l *link2symlink) substitute(c *tracer.Call, host string) string {
	if data, ok := l2sName(c, host); ok {
		return data
	}
	return host
}

// l2sDirent makes the directory entry rec of a name show its data file:
// the data file's inode number and type. It reports whether it could.
func l2sDirent(data string, rec []byte) bool {
	var st unix.Stat_t
	if unix.Fstatat(unix.AT_FDCWD, data, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return false
	}
	binary.LittleEndian.PutUint64(rec, st.Ino)
	rec[direntTypeOff] = byte((st.Mode & unix.S_IFMT) >> 12)
	return true
}
