// Package ident is droidroot's identity model: the credentials a guest
// process believes it has (the -0 / -i fake ids, and everything set*id
// changes afterwards). It is pure: the rules of each set*id call are those
// of the kernel (kernel/sys.c), table-tested, with no ptrace or syscalls.
//
// Privilege is a capability model (security/commoncap.c): effective,
// permitted and inheritable sets that follow uid 0 as the kernel's
// cap_emulate_setxuid does, PR_SET_KEEPCAPS, capset's rules, and exec's
// recalculation for programs without file capabilities. The bounding set is
// full; ambient capabilities and securebits other than keep-caps are not
// modelled.
package ident

import (
	"slices"

	"golang.org/x/sys/unix"
)

// NoID is (uid_t)-1: "leave unchanged" for setre*id/setres*id, an invalid
// id everywhere else.
const NoID = ^uint32(0)

// NGroupsMax is the kernel's limit on supplementary groups (NGROUPS_MAX).
const NGroupsMax = 65536

// Capabilities (include/uapi/linux/capability.h) the model uses by name.
const (
	CapChown          = 0
	CapDacOverride    = 1
	CapDacReadSearch  = 2
	CapFowner         = 3
	CapFsetid         = 4
	CapSetgid         = 6
	CapSetuid         = 7
	CapSetpcap        = 8
	CapLinuxImmutable = 9
	CapSysChroot      = 18
	CapSysAdmin       = 21
	CapMknod          = 27
	CapMacOverride    = 32
	CapLastCap        = 40
)

// CapFull is every capability (the full bounding set).
const CapFull uint64 = 1<<(CapLastCap+1) - 1

// capFSSet is what a change of the filesystem uid to or from 0 drops or
// raises (CAP_FS_SET).
const capFSSet uint64 = 1<<CapChown | 1<<CapMknod | 1<<CapDacOverride | 1<<CapDacReadSearch |
	1<<CapFowner | 1<<CapFsetid | 1<<CapMacOverride | 1<<CapLinuxImmutable

// Creds are one task's credentials, as the kernel's struct cred holds them.
type Creds struct {
	UID, EUID, SUID, FSUID uint32
	GID, EGID, SGID, FSGID uint32
	// Groups are the supplementary groups, sorted as the kernel keeps them
	// (groups_sort). The slice is never modified in place, so copies of a
	// Creds (fork) may share it.
	Groups []uint32
	// CapEff, CapPrm and CapInh are the effective, permitted and
	// inheritable capability sets (bit N is capability N).
	CapEff, CapPrm, CapInh uint64
	// KeepCaps is PR_SET_KEEPCAPS (SECURE_KEEP_CAPS).
	KeepCaps bool
}

// New returns the credentials of a task whose ids are all uid and gid,
// with the given supplementary groups (copied and sorted): every
// capability for uid 0, none otherwise, as after an exec.
func New(uid, gid uint32, groups []uint32) Creds {
	g := slices.Clone(groups)
	slices.Sort(g)
	c := Creds{UID: uid, EUID: uid, SUID: uid, FSUID: uid, GID: gid, EGID: gid, SGID: gid, FSGID: gid, Groups: g}
	if uid == 0 {
		c.CapEff, c.CapPrm = CapFull, CapFull
	}
	return c
}

// Capable reports whether capability cap is in the effective set.
func (c *Creds) Capable(cap int) bool { return c.CapEff&(1<<cap) != 0 }

// CapSetUID reports whether the task may change its uids freely (CAP_SETUID).
func (c *Creds) CapSetUID() bool { return c.Capable(CapSetuid) }

// CapSetGID reports whether the task may change its gids and groups
// freely (CAP_SETGID).
func (c *Creds) CapSetGID() bool { return c.Capable(CapSetgid) }

// AccessCapable reports whether access(2)/faccessat(2) checks have
// capability cap: they run with the real ids (access_override_creds), the
// effective set becoming the permitted one for a real uid 0 and empty
// otherwise; with AT_EACCESS (eaccess) they use the task's own set.
func (c *Creds) AccessCapable(cap int, eaccess bool) bool {
	if eaccess {
		return c.Capable(cap)
	}
	return c.UID == 0 && c.CapPrm&(1<<cap) != 0
}

// fixSetxuid is cap_emulate_setxuid: what a uid change does to the
// capability sets (old holds the uids before the change).
func (c *Creds) fixSetxuid(oldR, oldE, oldS uint32) {
	if (oldR == 0 || oldE == 0 || oldS == 0) && c.UID != 0 && c.EUID != 0 && c.SUID != 0 {
		if !c.KeepCaps {
			c.CapPrm, c.CapEff = 0, 0
		}
	}
	if oldE == 0 && c.EUID != 0 {
		c.CapEff = 0
	}
	if oldE != 0 && c.EUID == 0 {
		c.CapEff = c.CapPrm
	}
}

// uidChange runs f, a uid-changing call, and applies the capability rules
// when it succeeds.
func (c *Creds) uidChange(f func() unix.Errno) unix.Errno {
	r, e, s := c.UID, c.EUID, c.SUID
	errno := f()
	if errno == 0 {
		c.fixSetxuid(r, e, s)
	}
	return errno
}

// Setuid is setuid(2) (__sys_setuid).
func (c *Creds) Setuid(uid uint32) unix.Errno {
	return c.uidChange(func() unix.Errno { return c.setuid(uid) })
}

func (c *Creds) setuid(uid uint32) unix.Errno {
	if uid == NoID {
		return unix.EINVAL
	}
	if c.CapSetUID() {
		c.UID, c.SUID = uid, uid
	} else if uid != c.UID && uid != c.SUID {
		return unix.EPERM
	}
	c.EUID, c.FSUID = uid, uid
	return 0
}

// Setgid is setgid(2) (__sys_setgid).
func (c *Creds) Setgid(gid uint32) unix.Errno {
	if gid == NoID {
		return unix.EINVAL
	}
	if c.CapSetGID() {
		c.GID, c.SGID = gid, gid
	} else if gid != c.GID && gid != c.SGID {
		return unix.EPERM
	}
	c.EGID, c.FSGID = gid, gid
	return 0
}

// setre is the common part of setreuid and setregid on one id family
// (real, effective, saved, fs); cap is the caller's privilege.
func setre(r, e uint32, real, eff, saved, fs *uint32, cap bool) unix.Errno {
	oldR, oldE, oldS := *real, *eff, *saved
	newR, newE := oldR, oldE
	if r != NoID {
		if r != oldR && r != oldE && !cap {
			return unix.EPERM
		}
		newR = r
	}
	if e != NoID {
		if e != oldR && e != oldE && e != oldS && !cap {
			return unix.EPERM
		}
		newE = e
	}
	*real, *eff = newR, newE
	if r != NoID || (e != NoID && e != oldR) {
		*saved = newE
	}
	*fs = newE
	return 0
}

// Setreuid is setreuid(2) (__sys_setreuid): NoID leaves an id unchanged.
// The saved uid becomes the new effective uid when the real uid is set or
// the effective uid is set to something other than the old real uid.
func (c *Creds) Setreuid(r, e uint32) unix.Errno {
	return c.uidChange(func() unix.Errno { return setre(r, e, &c.UID, &c.EUID, &c.SUID, &c.FSUID, c.CapSetUID()) })
}

// Setregid is setregid(2) (__sys_setregid).
func (c *Creds) Setregid(r, e uint32) unix.Errno {
	return setre(r, e, &c.GID, &c.EGID, &c.SGID, &c.FSGID, c.CapSetGID())
}

// setres is the common part of setresuid and setresgid.
func setres(r, e, s uint32, real, eff, saved, fs *uint32, cap bool) unix.Errno {
	known := func(id uint32) bool { return id == NoID || id == *real || id == *eff || id == *saved }
	if !cap && !(known(r) && known(e) && known(s)) {
		return unix.EPERM
	}
	if r != NoID {
		*real = r
	}
	if e != NoID {
		*eff = e
	}
	if s != NoID {
		*saved = s
	}
	*fs = *eff
	return 0
}

// Setresuid is setresuid(2) (__sys_setresuid): an unprivileged task may
// set each id to one of its current real, effective or saved uids.
func (c *Creds) Setresuid(r, e, s uint32) unix.Errno {
	return c.uidChange(func() unix.Errno { return setres(r, e, s, &c.UID, &c.EUID, &c.SUID, &c.FSUID, c.CapSetUID()) })
}

// Setresgid is setresgid(2) (__sys_setresgid).
func (c *Creds) Setresgid(r, e, s uint32) unix.Errno {
	return setres(r, e, s, &c.GID, &c.EGID, &c.SGID, &c.FSGID, c.CapSetGID())
}

// Setfsuid is setfsuid(2) (__sys_setfsuid): it returns the previous
// filesystem uid whether or not it changed it (NoID changes nothing).
// Leaving fs uid 0 drops the file capabilities; coming back raises those
// still permitted.
func (c *Creds) Setfsuid(uid uint32) uint32 {
	old := c.FSUID
	if uid == NoID || uid == old {
		return old
	}
	if uid == c.UID || uid == c.EUID || uid == c.SUID || c.CapSetUID() {
		c.FSUID = uid
		if old == 0 {
			c.CapEff &^= capFSSet
		} else if uid == 0 {
			c.CapEff |= c.CapPrm & capFSSet
		}
	}
	return old
}

// Setfsgid is setfsgid(2) (__sys_setfsgid).
func (c *Creds) Setfsgid(gid uint32) uint32 {
	old := c.FSGID
	if gid == NoID {
		return old
	}
	if gid == c.GID || gid == c.EGID || gid == c.SGID || gid == c.FSGID || c.CapSetGID() {
		c.FSGID = gid
	}
	return old
}

// Setgroups is setgroups(2): it needs CAP_SETGID and at most NGroupsMax
// groups (EINVAL). Check the size with SetgroupsSize before reading the list.
func (c *Creds) Setgroups(groups []uint32) unix.Errno {
	if errno := c.SetgroupsSize(len(groups)); errno != 0 {
		return errno
	}
	g := slices.Clone(groups)
	slices.Sort(g)
	c.Groups = g
	return 0
}

// SetgroupsSize is the part of setgroups(2) checked before the list is read:
// EPERM without CAP_SETGID, then EINVAL for a size above NGroupsMax (the
// size is an int: a negative one is EINVAL too).
func (c *Creds) SetgroupsSize(n int) unix.Errno {
	if !c.CapSetGID() {
		return unix.EPERM
	}
	if n < 0 || n > NGroupsMax {
		return unix.EINVAL
	}
	return 0
}

// Getgroups is getgroups(2) without the copy: for size 0 it returns the
// number of groups; a size smaller than that is EINVAL (as is a negative
// size); otherwise the groups to copy out.
func (c *Creds) Getgroups(size int) ([]uint32, unix.Errno) {
	if size < 0 {
		return nil, unix.EINVAL
	}
	if size == 0 {
		return nil, 0
	}
	if size < len(c.Groups) {
		return nil, unix.EINVAL
	}
	return c.Groups, 0
}

// Exec applies what a successful execve does to credentials of a program
// without set-id bits or file capabilities (droidroot runs with
// no_new_privs, so set-id bits are never honoured): the saved and
// filesystem ids become the effective ones; a real or effective uid 0 gets
// every permitted capability (and effective ones with euid 0), anyone else
// none; keep-caps is cleared. It returns the AT_SECURE value the kernel
// would give the new program: whether the effective ids differ from the
// real ones.
func (c *Creds) Exec() (secure bool) {
	c.SUID, c.FSUID = c.EUID, c.EUID
	c.SGID, c.FSGID = c.EGID, c.EGID
	c.CapPrm, c.CapEff = 0, 0
	if c.UID == 0 || c.EUID == 0 {
		c.CapPrm = CapFull | c.CapInh
	}
	if c.EUID == 0 {
		c.CapEff = c.CapPrm
	}
	c.KeepCaps = false
	return c.EUID != c.UID || c.EGID != c.GID
}

// Capset is capset(2)'s rule (cap_capset): the new inheritable set may
// only add capabilities that are permitted (unless CAP_SETPCAP), the
// permitted set may only shrink, and the effective set must lie within the
// new permitted one; otherwise EPERM and nothing changes.
func (c *Creds) Capset(eff, prm, inh uint64) unix.Errno {
	if !c.Capable(CapSetpcap) && inh&^(c.CapInh|c.CapPrm) != 0 {
		return unix.EPERM
	}
	if inh&^(c.CapInh|CapFull) != 0 || prm&^c.CapPrm != 0 || eff&^prm != 0 {
		return unix.EPERM
	}
	c.CapEff, c.CapPrm, c.CapInh = eff, prm, inh
	return 0
}
