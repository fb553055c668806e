// Package ident is droidroot's identity model: the credentials a guest
// process believes it has (the -0 / -i fake ids, and everything set*id
// changes afterwards). It is pure: the rules of each set*id call are those
// of the kernel (kernel/sys.c), table-tested, with no ptrace or syscalls.
//
// Privilege follows the kernel's default capability rules for uid 0
// (security/commoncap.c, cap_emulate_setxuid): a task has CAP_SETUID and
// CAP_SETGID exactly when its effective uid is 0, and the file
// capabilities (CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_MKNOD...) when
// its filesystem uid is 0. Capabilities kept with PR_SET_KEEPCAPS or capset
// are not modelled.
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

// Creds are one task's credentials, as the kernel's struct cred holds them.
// The zero value is root with no supplementary groups.
type Creds struct {
	UID, EUID, SUID, FSUID uint32
	GID, EGID, SGID, FSGID uint32
	// Groups are the supplementary groups, sorted as the kernel keeps them
	// (groups_sort). The slice is never modified in place, so copies of a
	// Creds (fork) may share it.
	Groups []uint32
}

// New returns the credentials of a task whose ids are all uid and gid,
// with the given supplementary groups (copied and sorted).
func New(uid, gid uint32, groups []uint32) Creds {
	g := slices.Clone(groups)
	slices.Sort(g)
	return Creds{UID: uid, EUID: uid, SUID: uid, FSUID: uid, GID: gid, EGID: gid, SGID: gid, FSGID: gid, Groups: g}
}

// CapSetUID reports whether the task may change its uids freely
// (CAP_SETUID): its effective uid is 0.
func (c *Creds) CapSetUID() bool { return c.EUID == 0 }

// CapSetGID reports whether the task may change its gids and groups
// freely (CAP_SETGID): its effective uid is 0.
func (c *Creds) CapSetGID() bool { return c.EUID == 0 }

// FSPrivileged reports whether file operations run with root's file
// capabilities (CAP_CHOWN, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_MKNOD): the
// filesystem uid is 0 and the task still holds root's permitted
// capabilities (so that setfsuid(0) raises them again, cap_task_fix_setuid).
func (c *Creds) FSPrivileged() bool { return c.FSUID == 0 && c.hasRootID() }

// AccessPrivileged reports whether access(2)/faccessat(2) checks pass as
// root's: they use the real uid (access_override_creds), or with
// AT_EACCESS (eaccess) the filesystem uid as any other file operation.
func (c *Creds) AccessPrivileged(eaccess bool) bool {
	if eaccess {
		return c.FSPrivileged()
	}
	return c.UID == 0
}

// hasRootID reports whether any of the real, effective or saved uids is 0:
// the task still holds root's permitted capabilities (cap_emulate_setxuid
// clears them only when all three become non-zero), so setfsuid(0) brings
// the file capabilities back.
func (c *Creds) hasRootID() bool { return c.UID == 0 || c.EUID == 0 || c.SUID == 0 }

// Setuid is setuid(2) (__sys_setuid).
func (c *Creds) Setuid(uid uint32) unix.Errno {
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
	return setre(r, e, &c.UID, &c.EUID, &c.SUID, &c.FSUID, c.CapSetUID())
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
	return setres(r, e, s, &c.UID, &c.EUID, &c.SUID, &c.FSUID, c.CapSetUID())
}

// Setresgid is setresgid(2) (__sys_setresgid).
func (c *Creds) Setresgid(r, e, s uint32) unix.Errno {
	return setres(r, e, s, &c.GID, &c.EGID, &c.SGID, &c.FSGID, c.CapSetGID())
}

// Setfsuid is setfsuid(2) (__sys_setfsuid): it returns the previous
// filesystem uid whether or not it changed it (NoID changes nothing).
func (c *Creds) Setfsuid(uid uint32) uint32 {
	old := c.FSUID
	if uid == NoID {
		return old
	}
	if uid == c.UID || uid == c.EUID || uid == c.SUID || uid == c.FSUID || c.CapSetUID() {
		c.FSUID = uid
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
// without set-id bits (droidroot runs with no_new_privs, so set-id bits are
// never honoured): the saved and filesystem ids become the effective ones.
// It returns the AT_SECURE value the kernel would give the new program:
// whether the effective ids differ from the real ones.
func (c *Creds) Exec() (secure bool) {
	c.SUID, c.FSUID = c.EUID, c.EUID
	c.SGID, c.FSGID = c.EGID, c.EGID
	return c.EUID != c.UID || c.EGID != c.GID
}
