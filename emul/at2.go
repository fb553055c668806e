package emul

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/ident"
	"github.com/droidroot/droidroot/tracer"
)

// The emulations of Config.EmulateAt2: faccessat2, fchmodat2 and
// close_range, which Android's app policy blocks (openat2 is in
// openat2.go). Nothing here makes a blocked call in droidroot's process:
// results come from stat, statfs, faccessat and /proc, or the call is
// rewritten into an allowed one that the tracee makes itself.

// close_range flags (linux/close_range.h).
const (
	closeRangeUnshare = 1 << 1
	closeRangeCloexec = 1 << 2
)

// Capability bits used by access checks.
const (
	capDacOverride   = 1
	capDacReadSearch = 2
)

func at2Handlers() map[string]tracer.Handler {
	return map[string]tracer.Handler{
		"faccessat2":  {Enter: faccessat2},
		"fchmodat2":   {Enter: fchmodat2},
		"close_range": closeRangeHandler(),
	}
}

// creds are the ids and capabilities of a thread, from /proc/TID/status.
type creds struct {
	uid, euid, fsuid uint32
	gid, egid, fsgid uint32
	groups           []uint32
	capPrm, capEff   uint64
}

// readCreds parses /proc/<tid>/status ("self" for droidroot's own thread).
func readCreds(tid string) (creds, error) {
	b, err := os.ReadFile("/proc/" + tid + "/status")
	if err != nil {
		return creds{}, err
	}
	var cr creds
	ids := func(s string) []uint32 {
		var r []uint32
		for _, f := range strings.Fields(s) {
			v, err := strconv.ParseUint(f, 10, 32)
			if err == nil {
				r = append(r, uint32(v))
			}
		}
		return r
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch k {
		case "Uid":
			if u := ids(v); len(u) == 4 {
				cr.uid, cr.euid, cr.fsuid = u[0], u[1], u[3]
			}
		case "Gid":
			if g := ids(v); len(g) == 4 {
				cr.gid, cr.egid, cr.fsgid = g[0], g[1], g[3]
			}
		case "Groups":
			cr.groups = ids(v)
		case "CapPrm":
			cr.capPrm, _ = strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		case "CapEff":
			cr.capEff, _ = strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		}
	}
	return cr, nil
}

// guestCreds returns the credentials access checks and chmod use for the
// caller: the emulated ones when droidroot emulates set*id (-0, -i, or
// under an Android policy, where set*id never reaches the kernel), else
// the kernel's, from /proc/TID/status.
var guestCreds = func(c *tracer.Call) (creds, error) {
	if c.CredsEmulated() {
		k := c.Creds()
		return creds{uid: k.UID, euid: k.EUID, fsuid: k.FSUID, gid: k.GID, egid: k.EGID, fsgid: k.FSGID,
			groups: k.Groups, capPrm: k.CapPrm, capEff: k.CapEff}, nil
	}
	return readCreds(strconv.Itoa(c.Tid()))
}

// accessCreds are the ids and capabilities an access check uses.
type accessCreds struct {
	uid, gid uint32
	groups   []uint32
	caps     uint64
}

// forAccess returns what faccessat checks with: the real ids (and, as the
// kernel's access_override_creds, the permitted capabilities for real
// root, none otherwise), or with AT_EACCESS the file-system ids and
// effective capabilities.
func (cr creds) forAccess(eaccess bool) accessCreds {
	if eaccess {
		return accessCreds{cr.fsuid, cr.fsgid, cr.groups, cr.capEff}
	}
	a := accessCreds{uid: cr.uid, gid: cr.gid, groups: cr.groups}
	if cr.uid == 0 {
		a.caps = cr.capPrm
	}
	return a
}

func (a accessCreds) equal(b accessCreds) bool {
	if a.uid != b.uid || a.gid != b.gid || a.caps != b.caps || len(a.groups) != len(b.groups) {
		return false
	}
	x, y := slices.Clone(a.groups), slices.Clone(b.groups)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// emptyTarget returns the host path standing for the dirfd of an
// AT_EMPTY_PATH call: its /proc/PID/fd link (which stat and faccessat
// follow to the object) or the current directory.
func emptyTarget(c *tracer.Call, dirfdArg int) (string, unix.Errno) {
	fd := int32(c.Arg(dirfdArg))
	if fd == unix.AT_FDCWD {
		return resolveAt(c, -1, ".", true)
	}
	if _, errno := fdHostPath(c, int(fd)); errno != 0 {
		return "", errno
	}
	return procFd(c.Pid(), int(fd)), 0
}

// at2Target translates the (dirfd 0, path 1, flags 3) of faccessat2 and
// fchmodat2 to the host path they act on; skip is set for AT_EMPTY_PATH
// with an empty path (host is then the dirfd's file).
func at2Target(c *tracer.Call) (host string, skip bool, errno unix.Errno) {
	t, errno := translate(c, dirfdPathArg(0, 1, unlessFlag(3, atSymlinkNofollow)).empty(3, atEmptyPath), 0)
	if errno != 0 {
		return "", false, errno
	}
	if !t.skip {
		return t.host, false, 0
	}
	host, errno = emptyTarget(c, 0)
	return host, true, errno
}

// faccessat2 answers faccessat2(dirfd, path, mode, flags) as the kernel's
// do_faccessat does. When the ids the check uses are droidroot's own
// (the usual case), the answer is the kernel's faccessat on the host path
// (ACLs, read-only and noexec mounts included); otherwise it is computed
// from the file's mode, owner and group, as glibc's fallback does, with
// the kernel's capability, EROFS and noexec rules.
func faccessat2(c *tracer.Call) {
	mode := uint32(c.Arg(2))
	flags := uint32(c.Arg(3))
	if mode&^7 != 0 || flags&^uint32(unix.AT_EACCESS|unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		c.Fail(unix.EINVAL)
		return
	}
	host, skip, errno := at2Target(c)
	if errno != 0 {
		c.Fail(errno)
		return
	}
	var st unix.Stat_t
	statFlags := 0
	if flags&unix.AT_SYMLINK_NOFOLLOW != 0 && !skip {
		statFlags = unix.AT_SYMLINK_NOFOLLOW
	}
	if err := unix.Fstatat(unix.AT_FDCWD, host, &st, statFlags); err != nil {
		c.Fail(err.(unix.Errno))
		return
	}
	guestCr, err := guestCreds(c)
	if err != nil {
		c.Fail(unix.ESRCH)
		return
	}
	want := guestCr.forAccess(flags&unix.AT_EACCESS != 0)
	isLink := st.Mode&unix.S_IFMT == unix.S_IFLNK
	errno = 0
	if own, err := readCreds("thread-self"); err == nil && !isLink && own.forAccess(false).equal(want) {
		// The kernel checks with the same ids: ask it (faccessat, no flags).
		if err := unix.Faccessat(unix.AT_FDCWD, host, mode, 0); err != nil {
			errno = err.(unix.Errno)
		}
	} else {
		errno = accessByMode(host, &st, mode, want)
	}
	if errno == unix.EACCES && c.CredsEmulated() && c.Creds().AccessCapable(ident.CapDacOverride, flags&unix.AT_EACCESS != 0) {
		// A fake root (-0) is refused nothing a real root would get: the
		// answer ident.go's exit fix-up gives faccessat.
		if e, ok := rootAccess(host, uint64(mode), uint64(flags)); ok {
			errno = e
		}
	}
	c.Fail(errno)
}

// accessByMode is the access check of the kernel (generic_permission and
// do_faccessat) computed from a file's stat: 0 or the errno.
func accessByMode(host string, st *unix.Stat_t, mode uint32, a accessCreds) unix.Errno {
	ft := st.Mode & unix.S_IFMT
	var fs unix.Statfs_t
	fsDir := host
	if ft == unix.S_IFLNK {
		fsDir = filepath.Dir(host)
	}
	haveFs := unix.Statfs(fsDir, &fs) == nil
	special := ft == unix.S_IFCHR || ft == unix.S_IFBLK || ft == unix.S_IFIFO || ft == unix.S_IFSOCK
	if mode&unix.X_OK != 0 && ft == unix.S_IFREG && haveFs && fs.Flags&unix.ST_NOEXEC != 0 {
		return unix.EACCES
	}
	if mode&unix.W_OK != 0 && !special && haveFs && fs.Flags&unix.ST_RDONLY != 0 {
		return unix.EROFS
	}
	if mode == 0 {
		return 0
	}
	perm := st.Mode & 0o777
	if ft == unix.S_IFLNK {
		perm = 0o777
	}
	var granted uint32
	switch {
	case a.uid == st.Uid:
		granted = perm >> 6 & 7
	case a.gid == st.Gid || slices.Contains(a.groups, st.Gid):
		granted = perm >> 3 & 7
	default:
		granted = perm & 7
	}
	if mode&^granted == 0 {
		return 0
	}
	// Capabilities (capable_wrt_inode_uidgid).
	if a.caps&(1<<capDacOverride) != 0 {
		if ft == unix.S_IFDIR || mode&unix.X_OK == 0 || st.Mode&0o111 != 0 {
			return 0
		}
	}
	if a.caps&(1<<capDacReadSearch) != 0 {
		left := mode &^ granted
		if ft == unix.S_IFDIR {
			left &^= unix.R_OK | unix.X_OK
		} else {
			left &^= unix.R_OK
		}
		if left == 0 {
			return 0
		}
	}
	return unix.EACCES
}

// fchmodat2 answers fchmodat2(dirfd, path, mode, flags): EINVAL for
// unknown flags, EOPNOTSUPP for AT_SYMLINK_NOFOLLOW on a symlink (Linux
// has no symlink modes), otherwise the chmod: made by droidroot itself
// (fchmodat on the host path) when the caller's file-system ids and
// capabilities are droidroot's, else by the tracee, the call becoming
// fchmodat(AT_FDCWD, host, mode).
func fchmodat2(c *tracer.Call) {
	flags := uint32(c.Arg(3))
	if flags&^uint32(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
		c.Fail(unix.EINVAL)
		return
	}
	host, skip, errno := at2Target(c)
	if errno != 0 {
		c.Fail(errno)
		return
	}
	if flags&unix.AT_SYMLINK_NOFOLLOW != 0 && !skip {
		var st unix.Stat_t
		if err := unix.Lstat(host, &st); err != nil {
			c.Fail(err.(unix.Errno))
			return
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			c.Fail(unix.EOPNOTSUPP)
			return
		}
	}
	// Same file-system ids and capabilities as droidroot: chmod here, with
	// the answer taken as it is (no restart of the call needed).
	if guestCr, err := guestCreds(c); err == nil {
		if own, err := readCreds("thread-self"); err == nil && own.forAccess(true).equal(guestCr.forAccess(true)) {
			if err := unix.Fchmodat(unix.AT_FDCWD, host, uint32(c.Arg(2)), 0); err != nil {
				c.Fail(err.(unix.Errno))
				return
			}
			c.Return(0)
			return
		}
	}
	addr, err := c.PushString(host)
	if err != nil {
		c.Fail(unix.EFAULT)
		return
	}
	nr, _ := nativeNr("fchmodat")
	c.SetNr(nr)
	c.SetArg(0, atFDCWDReg)
	c.SetArg(1, addr)
	c.SetArg(3, 0)
}
