package emul

import (
	"encoding/binary"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/ident"
	"github.com/droidroot/droidroot/tracer"
)

// Identity is what -0 / -i give the guest: the ids it starts with. Files
// the real user owns show these ids as their owner, and calls that fail
// only for lack of privilege succeed while the guest is root.
type Identity struct {
	UID, GID uint32
}

// InitialCreds returns the credentials the first guest process starts
// with, or nil when cfg emulates none: the Identity's ids, or with
// EmulateSetID alone the real ids of droidroot itself.
func InitialCreds(cfg Config) *ident.Creds {
	switch {
	case cfg.Identity != nil:
		c := ident.New(cfg.Identity.UID, cfg.Identity.GID, []uint32{cfg.Identity.GID})
		return &c
	case cfg.EmulateSetID:
		c := ident.Real()
		return &c
	}
	return nil
}

// addIdentity puts the identity handlers into t for cfg: the get*id and
// set*id families answered from the tracer's credentials (EmulateSetID or
// an Identity), and with an Identity the owner fix-ups of stat results and
// root's answers to privileged file calls.
func addIdentity(t *tableBuilder, cfg Config) {
	if cfg.Identity == nil && !cfg.EmulateSetID {
		return
	}
	for name, h := range credHandlers() {
		t.set(name, h)
	}
	if sc := t.e.socks.creds; sc != nil {
		if _, ok := t.get("getsockopt"); !ok {
			t.set("getsockopt", sc.peercredHandler())
		}
	}
	if cfg.Identity == nil {
		return
	}
	realUID, realGID := uint32(unix.Getuid()), uint32(unix.Getgid())
	if realUID != cfg.Identity.UID || realGID != cfg.Identity.GID {
		owner := ownerFix{realUID: realUID, realGID: realGID, uid: cfg.Identity.UID, gid: cfg.Identity.GID}
		if _, ok := t.get("fstat"); !ok {
			// Traced for the fix-up alone: answered in the tracer, the
			// fix-up made at once (no exit stop).
			t.set("fstat", tracer.Handler{Enter: fstatEnter})
		}
		for name, arg := range map[string]int{"stat": 1, "lstat": 1, "fstat": 1, "newfstatat": 2, "fstatat": 2} {
			chainExit(t, name, owner.stat(arg))
		}
		chainExit(t, "statx", owner.statx)
	}
	// The privilege fix-ups matter only for a fake root that is not really
	// root: the kernel refuses nothing to real root, and a fake non-root
	// identity never gains capabilities.
	if cfg.Identity.UID != 0 || unix.Geteuid() == 0 {
		return
	}
	for _, name := range []string{"chown", "lchown", "fchown", "fchownat"} {
		chainExit(t, name, privileged(ident.CapChown))
	}
	for _, name := range []string{"chmod", "fchmod", "fchmodat", "fchmodat2"} {
		chainExit(t, name, privileged(ident.CapFowner))
	}
	for _, name := range []string{"setxattr", "lsetxattr", "fsetxattr"} {
		chainExit(t, name, privilegedXattr)
	}
	mknodHandler(t, "mknod", 1)
	mknodHandler(t, "mknodat", 2)
	accessHandler(t, "access", -1, 0, 1, -1)
	accessHandler(t, "faccessat", 0, 1, 2, -1)
	accessHandler(t, "faccessat2", 0, 1, 2, 3)
	addDacOverride(t, uint32(unix.Geteuid()))
}

// chainExit adds exit to the handler of name (creating a pass-through
// handler for an untraced call such as fstat), after any Exit it has. The
// call keeps its exit stop where the handler's entry cancelled it for its
// own Exit's sake (NoExit: -l's stat patch, which most stats need not), or
// exit runs at once where the entry answered the call itself and asked for
// it (Call.ExitNow).
func chainExit(t *tableBuilder, name string, exit func(c *tracer.Call)) {
	h, ok := t.get(name)
	if !ok {
		h.Enter = func(*tracer.Call) {}
	}
	if prev := h.Exit; prev != nil {
		h.Exit = func(c *tracer.Call) { prev(c); exit(c) }
		enter := h.Enter
		h.Enter = func(c *tracer.Call) { enter(c); c.WantExit() }
	} else {
		h.Exit = exit
	}
	t.set(name, h)
}

// credHandlers answer the get*id and set*id families from the calling
// thread's credentials, with the kernel's rules (package ident). They
// answer at entry with Return, so they also serve SIGSYS stops.
func credHandlers() tracer.Table {
	arg := func(c *tracer.Call, i int) uint32 { return uint32(c.Arg(i)) }
	get := func(f func(*ident.Creds) uint32) tracer.Handler {
		return tracer.Handler{Enter: func(c *tracer.Call) { c.Return(int64(f(c.Creds()))) }}
	}
	set := func(f func(c *tracer.Call, cr *ident.Creds) unix.Errno) tracer.Handler {
		return tracer.Handler{Enter: func(c *tracer.Call) {
			clearIDs(c) // the fast path library's copy (fastpath.go)
			c.Fail0(f(c, c.Creds()))
			republishIDs(c)
		}}
	}
	getres := func(f func(*ident.Creds) [3]uint32) tracer.Handler {
		return tracer.Handler{Enter: func(c *tracer.Call) {
			ids := f(c.Creds())
			for i, v := range ids {
				var b [4]byte
				binary.LittleEndian.PutUint32(b[:], v)
				if c.WriteMem(c.Arg(i), b[:]) != nil {
					c.Fail(unix.EFAULT)
					return
				}
			}
			c.Return(0)
		}}
	}
	return tracer.Table{
		"getuid":  get(func(cr *ident.Creds) uint32 { return cr.UID }),
		"geteuid": get(func(cr *ident.Creds) uint32 { return cr.EUID }),
		"getgid":  get(func(cr *ident.Creds) uint32 { return cr.GID }),
		"getegid": get(func(cr *ident.Creds) uint32 { return cr.EGID }),
		"getresuid": getres(func(cr *ident.Creds) [3]uint32 {
			return [3]uint32{cr.UID, cr.EUID, cr.SUID}
		}),
		"getresgid": getres(func(cr *ident.Creds) [3]uint32 {
			return [3]uint32{cr.GID, cr.EGID, cr.SGID}
		}),
		"setuid": set(func(c *tracer.Call, cr *ident.Creds) unix.Errno { return cr.Setuid(arg(c, 0)) }),
		"setgid": set(func(c *tracer.Call, cr *ident.Creds) unix.Errno { return cr.Setgid(arg(c, 0)) }),
		"setreuid": set(func(c *tracer.Call, cr *ident.Creds) unix.Errno {
			return cr.Setreuid(arg(c, 0), arg(c, 1))
		}),
		"setregid": set(func(c *tracer.Call, cr *ident.Creds) unix.Errno {
			return cr.Setregid(arg(c, 0), arg(c, 1))
		}),
		"setresuid": set(func(c *tracer.Call, cr *ident.Creds) unix.Errno {
			return cr.Setresuid(arg(c, 0), arg(c, 1), arg(c, 2))
		}),
		"setresgid": set(func(c *tracer.Call, cr *ident.Creds) unix.Errno {
			return cr.Setresgid(arg(c, 0), arg(c, 1), arg(c, 2))
		}),
		"setfsuid":  {Enter: func(c *tracer.Call) { c.Return(int64(c.Creds().Setfsuid(arg(c, 0)))) }},
		"setfsgid":  {Enter: func(c *tracer.Call) { c.Return(int64(c.Creds().Setfsgid(arg(c, 0)))) }},
		"getgroups": {Enter: getgroups},
		"setgroups": {Enter: setgroups},
		"capget":    {Enter: capget},
		"capset":    {Enter: capset},
		"prctl":     {Enter: prctl},
	}
}

// prctl answers PR_GET_KEEPCAPS and PR_SET_KEEPCAPS from the emulated
// credentials; every other option runs in the kernel.
func prctl(c *tracer.Call) {
	switch c.Arg(0) {
	case unix.PR_GET_KEEPCAPS:
		if c.Creds().KeepCaps {
			c.Return(1)
		} else {
			c.Return(0)
		}
	case unix.PR_SET_KEEPCAPS:
		if c.Arg(1) > 1 {
			c.Fail(unix.EINVAL)
			return
		}
		c.Creds().KeepCaps = c.Arg(1) == 1
		c.Return(0)
	}
}

// Capability header versions (linux/capability.h) and how many 32-bit
// words each set has in them.
const (
	capVersion1 = 0x19980330
	capVersion2 = 0x20071026
	capVersion3 = 0x20080522
)

// capHeader reads capget/capset's header: the number of data structs the
// version implies (0 after answering EINVAL for an unknown version, as the
// kernel does after writing the version it prefers) and the pid.
func capHeader(c *tracer.Call) (n int, pid int32, errno unix.Errno) {
	var h [8]byte
	if c.ReadMem(c.Arg(0), h[:4]) != nil {
		return 0, 0, unix.EFAULT
	}
	switch binary.LittleEndian.Uint32(h[:4]) {
	case capVersion1:
		n = 1
	case capVersion2, capVersion3:
		n = 2
	default:
		binary.LittleEndian.PutUint32(h[:4], capVersion3)
		if c.WriteMem(c.Arg(0), h[:4]) != nil {
			return 0, 0, unix.EFAULT
		}
		return 0, 0, unix.EINVAL
	}
	if c.ReadMem(c.Arg(0)+4, h[4:]) != nil {
		return 0, 0, unix.EFAULT
	}
	return n, int32(binary.LittleEndian.Uint32(h[4:])), 0
}

// capget is capget(hdr, data) for the caller or another traced thread;
// other pids are left to the kernel.
func capget(c *tracer.Call) {
	n, pid, errno := capHeader(c)
	if errno != 0 || c.Arg(1) == 0 {
		if c.Arg(1) == 0 && errno == unix.EINVAL {
			errno = 0
		}
		c.Fail0(errno)
		return
	}
	if pid < 0 {
		c.Fail(unix.EINVAL)
		return
	}
	cr := c.Creds()
	if pid != 0 && int(pid) != c.Tid() {
		if cr = c.Tracer().ThreadCreds(int(pid)); cr == nil {
			return // not ours: the kernel answers
		}
	}
	b := make([]byte, 12*n)
	for i := 0; i < n; i++ {
		for j, set := range []uint64{cr.CapEff, cr.CapPrm, cr.CapInh} {
			binary.LittleEndian.PutUint32(b[12*i+4*j:], uint32(set>>(32*i)))
		}
	}
	if c.WriteMem(c.Arg(1), b) != nil {
		c.Fail(unix.EFAULT)
		return
	}
	c.Return(0)
}

// capset is capset(hdr, data): only the caller's own sets may change.
func capset(c *tracer.Call) {
	n, pid, errno := capHeader(c)
	if errno != 0 {
		c.Fail(errno)
		return
	}
	if pid != 0 && int(pid) != c.Tid() {
		c.Fail(unix.EPERM)
		return
	}
	b := make([]byte, 12*n)
	if c.ReadMem(c.Arg(1), b) != nil {
		c.Fail(unix.EFAULT)
		return
	}
	var sets [3]uint64
	for i := 0; i < n; i++ {
		for j := range sets {
			sets[j] |= uint64(binary.LittleEndian.Uint32(b[12*i+4*j:])) << (32 * i)
		}
	}
	c.Fail0(c.Creds().Capset(sets[0], sets[1], sets[2]))
}

// getgroups is getgroups(size, list).
func getgroups(c *tracer.Call) {
	cr := c.Creds()
	groups, errno := cr.Getgroups(int(int32(c.Arg(0))))
	if errno != 0 {
		c.Fail(errno)
		return
	}
	if len(groups) > 0 {
		b := make([]byte, 4*len(groups))
		for i, g := range groups {
			binary.LittleEndian.PutUint32(b[4*i:], g)
		}
		if c.WriteMem(c.Arg(1), b) != nil {
			c.Fail(unix.EFAULT)
			return
		}
	}
	c.Return(int64(len(cr.Groups)))
}

// setgroups is setgroups(size, list).
func setgroups(c *tracer.Call) {
	cr := c.Creds()
	n := int(int32(c.Arg(0)))
	if errno := cr.SetgroupsSize(n); errno != 0 {
		c.Fail(errno)
		return
	}
	groups := make([]uint32, n)
	if n > 0 {
		b := make([]byte, 4*n)
		if c.ReadMem(c.Arg(1), b) != nil {
			c.Fail(unix.EFAULT)
			return
		}
		for i := range groups {
			groups[i] = binary.LittleEndian.Uint32(b[4*i:])
		}
	}
	c.Fail0(cr.Setgroups(groups))
}

// ownerFix shows files the real user owns as owned by the identity.
type ownerFix struct {
	realUID, realGID, uid, gid uint32
}

// fix rewrites the uid and gid words at addr and addr+4 of a successful
// call's result.
func (o ownerFix) fix(c *tracer.Call, uidAddr, gidAddr uint64) {
	var b [4]byte
	for _, f := range []struct {
		addr       uint64
		real, fake uint32
	}{{uidAddr, o.realUID, o.uid}, {gidAddr, o.realGID, o.gid}} {
		if f.real == f.fake || c.ReadMem(f.addr, b[:]) != nil || binary.LittleEndian.Uint32(b[:]) != f.real {
			continue
		}
		binary.LittleEndian.PutUint32(b[:], f.fake)
		c.WriteMem(f.addr, b[:])
	}
}

// stat fixes the struct stat that argument arg points at.
func (o ownerFix) stat(arg int) func(c *tracer.Call) {
	return func(c *tracer.Call) {
		if c.Ret() != 0 {
			return
		}
		buf := c.Arg(arg)
		o.fix(c, buf+tracer.StatUIDOff, buf+tracer.StatUIDOff+4)
	}
}

// statx offsets (struct statx, include/uapi/linux/stat.h).
const (
	statxUIDOffset = 20
	statxGIDOffset = 24
	statxUID       = 0x8
	statxGID       = 0x10
)

// statx fixes the struct statx of statx(dirfd, path, flags, mask, buf).
func (o ownerFix) statx(c *tracer.Call) {
	if c.Ret() != 0 {
		return
	}
	buf := c.Arg(4)
	var m [4]byte
	if c.ReadMem(buf, m[:]) != nil {
		return
	}
	mask := binary.LittleEndian.Uint32(m[:])
	uidAddr, gidAddr := buf+statxUIDOffset, buf+statxGIDOffset
	if mask&statxUID == 0 {
		uidAddr = 0
	}
	if mask&statxGID == 0 {
		gidAddr = 0
	}
	o.fix(c, uidAddr, gidAddr)
}

// privileged turns EPERM into success for a caller with capability cap
// (CAP_CHOWN, CAP_FOWNER, CAP_MKNOD): chown and chmod of files the real user
// cannot change succeed without changing them, as under termux proot -0.
func privileged(cap int) func(c *tracer.Call) {
	return func(c *tracer.Call) {
		if c.Ret() == -int64(unix.EPERM) && c.Creds().Capable(cap) {
			c.Return(0)
		}
	}
}

// privilegedXattr is privileged for setting trusted.* and security.*
// attributes, which need CAP_SYS_ADMIN.
func privilegedXattr(c *tracer.Call) {
	if c.Ret() != -int64(unix.EPERM) || !c.Creds().Capable(ident.CapSysAdmin) {
		return
	}
	name, err := c.ReadPath(c.Arg(1))
	if err == nil && (strings.HasPrefix(name, "trusted.") || strings.HasPrefix(name, "security.")) {
		c.Return(0)
	}
}

// mknodHandler makes a fake root's mknod of a device create an empty
// regular file with the same permissions (droidroot is not really root, so
// the kernel would say EPERM): dpkg and tar then find a file to rename and
// chown. A remaining EPERM becomes success, as under termux proot.
func mknodHandler(t *tableBuilder, name string, modeArg int) {
	h, ok := t.get(name)
	if !ok {
		return
	}
	inner := h.Enter
	h.Enter = func(c *tracer.Call) {
		inner(c)
		if c.Answered() || !c.Creds().Capable(ident.CapMknod) {
			return
		}
		mode := uint32(c.Arg(modeArg))
		if typ := mode & unix.S_IFMT; typ == unix.S_IFCHR || typ == unix.S_IFBLK {
			c.SetArg(modeArg, uint64(unix.S_IFREG|mode&^unix.S_IFMT))
		}
	}
	t.set(name, h)
	chainExit(t, name, privileged(ident.CapMknod))
}

// accessHandler makes access checks of a caller that is root (by its real
// uid, or its fs uid with AT_EACCESS) answer as root's: read and write are
// granted (EROFS stays), execute needs an x bit unless on a directory.
// dirfdArg is -1 for access(2), flagsArg -1 without flags.
func accessHandler(t *tableBuilder, name string, dirfdArg, pathArg, modeArg, flagsArg int) {
	h, ok := t.get(name)
	if !ok {
		return
	}
	inner := h.Enter
	h.Enter = func(c *tracer.Call) {
		inner(c)
		c.Data = c.Regs.Arg(pathArg) // the host path the kernel checks
	}
	t.set(name, h)
	chainExit(t, name, func(c *tracer.Call) {
		if c.Ret() != -int64(unix.EACCES) {
			return
		}
		var flags uint64
		if flagsArg >= 0 {
			flags = c.Arg(flagsArg)
		}
		if !c.Creds().AccessCapable(ident.CapDacOverride, flags&unix.AT_EACCESS != 0) {
			return
		}
		addr, _ := c.Data.(uint64)
		host, err := c.ReadPath(addr)
		if err != nil {
			return
		}
		if host == "" && dirfdArg >= 0 {
			h, errno := fdHostPath(c, int(int32(c.Arg(dirfdArg))))
			if errno != 0 {
				return
			}
			host = h
		}
		if errno, ok := rootAccess(host, c.Arg(modeArg), flags); ok {
			c.Return(-int64(errno))
		}
	})
}

// rootAccess is the answer of an access check of host by a caller with
// CAP_DAC_OVERRIDE that the kernel refused with EACCES for the real
// user: read and write are granted (EROFS stays), execute needs an x bit
// unless on a directory. ok is false when root would be refused too.
func rootAccess(host string, mode, flags uint64) (errno unix.Errno, ok bool) {
	statFlags := 0
	if flags&unix.AT_SYMLINK_NOFOLLOW != 0 {
		statFlags = unix.AT_SYMLINK_NOFOLLOW
	}
	var st unix.Stat_t
	if unix.Fstatat(unix.AT_FDCWD, host, &st, statFlags) != nil {
		return 0, false
	}
	if mode&unix.X_OK != 0 && st.Mode&unix.S_IFMT != unix.S_IFDIR && st.Mode&0o111 == 0 {
		return 0, false
	}
	if mode&unix.W_OK != 0 {
		var fs unix.Statfs_t
		if unix.Statfs(host, &fs) == nil && fs.Flags&unix.ST_RDONLY != 0 {
			return unix.EROFS, true
		}
	}
	return 0, true
}
