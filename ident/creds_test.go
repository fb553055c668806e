package ident

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// ids writes one family of ids as {real, effective, saved, fs}.
type ids [4]uint32

func uids(c Creds) ids { return ids{c.UID, c.EUID, c.SUID, c.FSUID} }
func gids(c Creds) ids { return ids{c.GID, c.EGID, c.SGID, c.FSGID} }

// withUIDs returns root's gids and the uids u, with the capabilities a
// task with these uids has after an exec: permitted if any of the real or
// effective uid is 0, effective if the effective uid is 0 (and the file
// capabilities only with fs uid 0).
func withUIDs(u ids) Creds {
	c := New(0, 0, nil)
	c.UID, c.EUID, c.SUID, c.FSUID = u[0], u[1], u[2], u[3]
	c.CapPrm, c.CapEff = 0, 0
	if c.UID == 0 || c.EUID == 0 || c.SUID == 0 {
		c.CapPrm = CapFull
	}
	if c.EUID == 0 {
		c.CapEff = CapFull
	}
	if c.FSUID != 0 {
		c.CapEff &^= capFSSet
	} else {
		c.CapEff |= c.CapPrm & capFSSet
	}
	return c
}

func withIDs(u, g ids) Creds {
	c := withUIDs(u)
	c.GID, c.EGID, c.SGID, c.FSGID = g[0], g[1], g[2], g[3]
	return c
}

const X = NoID

// The cases follow kernel/sys.c; each names the rule it checks.
func TestSetuid(t *testing.T) {
	tests := []struct {
		name  string
		from  ids
		uid   uint32
		errno unix.Errno
		want  ids
	}{
		{"root sets all", ids{0, 0, 0, 0}, 1000, 0, ids{1000, 1000, 1000, 1000}},
		{"euid root, ruid user: all", ids{1000, 0, 0, 0}, 5, 0, ids{5, 5, 5, 5}},
		{"user to real uid: effective only", ids{1000, 2000, 3000, 2000}, 1000, 0, ids{1000, 1000, 3000, 1000}},
		{"user to saved uid", ids{1000, 2000, 3000, 2000}, 3000, 0, ids{1000, 3000, 3000, 3000}},
		{"user to effective uid only: EPERM", ids{1000, 2000, 3000, 2000}, 2000, unix.EPERM, ids{1000, 2000, 3000, 2000}},
		{"user to other: EPERM", ids{1000, 1000, 1000, 1000}, 0, unix.EPERM, ids{1000, 1000, 1000, 1000}},
		{"dropped root regains with saved 0", ids{1000, 1000, 0, 1000}, 0, 0, ids{1000, 0, 0, 0}},
		{"-1 is EINVAL", ids{0, 0, 0, 0}, X, unix.EINVAL, ids{0, 0, 0, 0}},
		{"-1 is EINVAL unprivileged", ids{5, 5, 5, 5}, X, unix.EINVAL, ids{5, 5, 5, 5}},
	}
	for _, tt := range tests {
		c := withUIDs(tt.from)
		errno := c.Setuid(tt.uid)
		if errno != tt.errno || uids(c) != tt.want {
			t.Errorf("%s: setuid(%d) from %v = %v, %v; want %v, %v", tt.name, int32(tt.uid), tt.from, errno, uids(c), tt.errno, tt.want)
		}
	}
}

func TestSetgid(t *testing.T) {
	tests := []struct {
		name  string
		u, g  ids
		gid   uint32
		errno unix.Errno
		want  ids
	}{
		{"euid root sets all", ids{0, 0, 0, 0}, ids{0, 0, 0, 0}, 100, 0, ids{100, 100, 100, 100}},
		{"privilege is the euid, not the egid", ids{0, 0, 0, 0}, ids{7, 7, 7, 7}, 100, 0, ids{100, 100, 100, 100}},
		{"user to real gid", ids{1, 1, 1, 1}, ids{10, 20, 30, 20}, 10, 0, ids{10, 10, 30, 10}},
		{"user to saved gid", ids{1, 1, 1, 1}, ids{10, 20, 30, 20}, 30, 0, ids{10, 30, 30, 30}},
		{"user to effective gid only: EPERM", ids{1, 1, 1, 1}, ids{10, 20, 30, 20}, 20, unix.EPERM, ids{10, 20, 30, 20}},
		{"gid 0 is no privilege", ids{1, 1, 1, 1}, ids{0, 0, 0, 0}, 5, unix.EPERM, ids{0, 0, 0, 0}},
		{"-1 is EINVAL", ids{0, 0, 0, 0}, ids{0, 0, 0, 0}, X, unix.EINVAL, ids{0, 0, 0, 0}},
	}
	for _, tt := range tests {
		c := withIDs(tt.u, tt.g)
		errno := c.Setgid(tt.gid)
		if errno != tt.errno || gids(c) != tt.want || uids(c) != tt.u {
			t.Errorf("%s: setgid(%d) = %v, gids %v uids %v; want %v, %v", tt.name, int32(tt.gid), errno, gids(c), uids(c), tt.errno, tt.want)
		}
	}
}

func TestSetreuid(t *testing.T) {
	tests := []struct {
		name  string
		from  ids
		r, e  uint32
		errno unix.Errno
		want  ids
	}{
		{"nothing", ids{1, 2, 3, 2}, X, X, 0, ids{1, 2, 3, 2}},
		{"root sets both: saved follows", ids{0, 0, 0, 0}, 1000, 1000, 0, ids{1000, 1000, 1000, 1000}},
		{"root drops effective keeping real: saved follows", ids{0, 0, 0, 0}, X, 1000, 0, ids{0, 1000, 1000, 1000}},
		{"root sets real only: saved becomes euid", ids{0, 0, 5, 0}, 1000, X, 0, ids{1000, 0, 0, 0}},
		{"swap real and effective", ids{1, 2, 3, 2}, 2, 1, 0, ids{2, 1, 1, 1}},
		{"effective to saved", ids{1, 2, 3, 2}, X, 3, 0, ids{1, 3, 3, 3}},
		{"effective to real keeps saved", ids{1, 2, 3, 2}, X, 1, 0, ids{1, 1, 3, 1}},
		{"real to saved: EPERM", ids{1, 2, 3, 2}, 3, X, unix.EPERM, ids{1, 2, 3, 2}},
		{"effective to other: EPERM", ids{1, 2, 3, 2}, X, 9, unix.EPERM, ids{1, 2, 3, 2}},
		{"real ok, effective not: nothing changes", ids{1, 2, 3, 2}, 2, 9, unix.EPERM, ids{1, 2, 3, 2}},
		{"real to effective", ids{1, 2, 3, 2}, 2, X, 0, ids{2, 2, 2, 2}},
		{"saved-0 user regains root euid", ids{1000, 1000, 0, 1000}, X, 0, 0, ids{1000, 0, 0, 0}},
		{"setreuid(-1,euid) with euid != ruid sets saved", ids{5, 5, 0, 5}, X, 5, 0, ids{5, 5, 0, 5}},
	}
	for _, tt := range tests {
		c := withUIDs(tt.from)
		errno := c.Setreuid(tt.r, tt.e)
		if errno != tt.errno || uids(c) != tt.want {
			t.Errorf("%s: setreuid(%d, %d) from %v = %v, %v; want %v, %v", tt.name, int32(tt.r), int32(tt.e), tt.from, errno, uids(c), tt.errno, tt.want)
		}
	}
}

func TestSetregid(t *testing.T) {
	c := withIDs(ids{1, 1, 1, 1}, ids{10, 20, 30, 20})
	if errno := c.Setregid(20, 10); errno != 0 || gids(c) != (ids{20, 10, 10, 10}) {
		t.Errorf("swap: %v %v", errno, gids(c))
	}
	if errno := c.Setregid(30, X); errno != unix.EPERM || gids(c) != (ids{20, 10, 10, 10}) {
		t.Errorf("real to a gone saved gid: %v %v", errno, gids(c))
	}
	c = withIDs(ids{0, 0, 0, 0}, ids{10, 20, 30, 20})
	if errno := c.Setregid(7, 8); errno != 0 || gids(c) != (ids{7, 8, 8, 8}) {
		t.Errorf("root: %v %v", errno, gids(c))
	}
}

func TestSetresuid(t *testing.T) {
	tests := []struct {
		name    string
		from    ids
		r, e, s uint32
		errno   unix.Errno
		want    ids
	}{
		{"root to anything", ids{0, 0, 0, 0}, 1, 2, 3, 0, ids{1, 2, 3, 2}},
		{"all -1", ids{1, 2, 3, 2}, X, X, X, 0, ids{1, 2, 3, 2}},
		{"permute", ids{1, 2, 3, 2}, 3, 1, 2, 0, ids{3, 1, 2, 1}},
		{"fs follows effective even unchanged", ids{1, 2, 3, 7}, X, X, 1, 0, ids{1, 2, 1, 2}},
		{"one unknown: EPERM", ids{1, 2, 3, 2}, 1, 9, X, unix.EPERM, ids{1, 2, 3, 2}},
		{"fs uid does not count", ids{1, 2, 3, 7}, 7, X, X, unix.EPERM, ids{1, 2, 3, 7}},
		{"drop root for good", ids{0, 0, 0, 0}, 1000, 1000, 1000, 0, ids{1000, 1000, 1000, 1000}},
		{"temporary drop keeps saved root", ids{0, 0, 0, 0}, X, 100, X, 0, ids{0, 100, 0, 100}},
		{"and back", ids{0, 100, 0, 100}, X, 0, X, 0, ids{0, 0, 0, 0}},
		{"0xfffffffe is a valid id", ids{0, 0, 0, 0}, 0xfffffffe, X, X, 0, ids{0xfffffffe, 0, 0, 0}},
	}
	for _, tt := range tests {
		c := withUIDs(tt.from)
		errno := c.Setresuid(tt.r, tt.e, tt.s)
		if errno != tt.errno || uids(c) != tt.want {
			t.Errorf("%s: setresuid(%d, %d, %d) from %v = %v, %v; want %v, %v", tt.name, int32(tt.r), int32(tt.e), int32(tt.s), tt.from, errno, uids(c), tt.errno, tt.want)
		}
	}
}

func TestSetresgid(t *testing.T) {
	c := withIDs(ids{1, 1, 1, 1}, ids{10, 20, 30, 20})
	if errno := c.Setresgid(30, 30, 30); errno != 0 || gids(c) != (ids{30, 30, 30, 30}) {
		t.Errorf("to saved: %v %v", errno, gids(c))
	}
	if errno := c.Setresgid(10, X, X); errno != unix.EPERM {
		t.Errorf("back to a dropped gid: %v %v", errno, gids(c))
	}
	c = withIDs(ids{1, 0, 1, 0}, ids{10, 20, 30, 20})
	if errno := c.Setresgid(4, 5, 6); errno != 0 || gids(c) != (ids{4, 5, 6, 5}) {
		t.Errorf("euid 0: %v %v", errno, gids(c))
	}
}

func TestSetfsuid(t *testing.T) {
	tests := []struct {
		name      string
		from      ids
		uid, prev uint32
		want      ids
	}{
		{"root to anything", ids{0, 0, 0, 0}, 77, 0, ids{0, 0, 0, 77}},
		{"query with -1", ids{1, 2, 3, 4}, X, 4, ids{1, 2, 3, 4}},
		{"user to saved", ids{1, 2, 3, 2}, 3, 2, ids{1, 2, 3, 3}},
		{"user to other: unchanged, previous returned", ids{1, 2, 3, 2}, 9, 2, ids{1, 2, 3, 2}},
		{"privilege is the euid", ids{0, 5, 0, 5}, 9, 5, ids{0, 5, 0, 5}},
		{"back to root through the saved uid", ids{0, 5, 0, 5}, 0, 5, ids{0, 5, 0, 0}},
	}
	for _, tt := range tests {
		c := withUIDs(tt.from)
		prev := c.Setfsuid(tt.uid)
		if prev != tt.prev || uids(c) != tt.want {
			t.Errorf("%s: setfsuid(%d) from %v = %d, %v; want %d, %v", tt.name, int32(tt.uid), tt.from, prev, uids(c), tt.prev, tt.want)
		}
	}
	c := withIDs(ids{1, 1, 1, 1}, ids{10, 20, 30, 20})
	if prev := c.Setfsgid(30); prev != 20 || gids(c) != (ids{10, 20, 30, 30}) {
		t.Errorf("setfsgid(30) = %d, %v", prev, gids(c))
	}
	if prev := c.Setfsgid(99); prev != 30 || c.FSGID != 30 {
		t.Errorf("setfsgid(99) = %d, fsgid %d", prev, c.FSGID)
	}
}

func TestGroups(t *testing.T) {
	c := New(0, 0, []uint32{5, 1})
	if g, errno := c.Getgroups(0); errno != 0 || g != nil {
		t.Errorf("getgroups(0) = %v, %v", g, errno)
	}
	if _, errno := c.Getgroups(1); errno != unix.EINVAL {
		t.Errorf("getgroups(1) with 2 groups = %v, want EINVAL", errno)
	}
	if _, errno := c.Getgroups(-1); errno != unix.EINVAL {
		t.Errorf("getgroups(-1) = %v, want EINVAL", errno)
	}
	if g, _ := c.Getgroups(10); !cmp.Equal(g, []uint32{1, 5}) {
		t.Errorf("groups %v, want sorted [1 5]", g)
	}
	fork := c
	if errno := c.Setgroups([]uint32{9, 3, 3}); errno != 0 || !cmp.Equal(c.Groups, []uint32{3, 3, 9}) {
		t.Errorf("setgroups: %v %v", errno, c.Groups)
	}
	if !cmp.Equal(fork.Groups, []uint32{1, 5}) {
		t.Errorf("a copy's groups changed: %v", fork.Groups)
	}
	if errno := c.SetgroupsSize(NGroupsMax + 1); errno != unix.EINVAL {
		t.Errorf("too many groups: %v", errno)
	}
	if errno := c.Setgroups(nil); errno != 0 || len(c.Groups) != 0 {
		t.Errorf("setgroups(0): %v %v", errno, c.Groups)
	}
	c.Setresuid(X, 1000, X)
	if errno := c.Setgroups([]uint32{1}); errno != unix.EPERM {
		t.Errorf("setgroups with euid 1000: %v, want EPERM", errno)
	}
	if errno := c.SetgroupsSize(NGroupsMax + 1); errno != unix.EPERM {
		t.Errorf("EPERM comes before EINVAL: %v", errno)
	}
}

// TestCapabilities follows the capability sets through uid changes, as
// cap_emulate_setxuid and cap_task_fix_setuid do.
func TestCapabilities(t *testing.T) {
	type caps struct{ eff, prm uint64 }
	get := func(c Creds) caps { return caps{c.CapEff, c.CapPrm} }
	full, none := caps{CapFull, CapFull}, caps{0, 0}
	c := New(0, 0, nil)
	steps := []struct {
		name string
		do   func() unix.Errno
		want caps
	}{
		{"root", func() unix.Errno { return 0 }, full},
		{"fsuid 5 drops the file capabilities", func() unix.Errno { c.Setfsuid(5); return 0 }, caps{CapFull &^ capFSSet, CapFull}},
		{"fsuid 0 raises them", func() unix.Errno { c.Setfsuid(0); return 0 }, full},
		{"euid 1000 clears effective, saved root keeps permitted", func() unix.Errno { return c.Setresuid(X, 1000, X) }, caps{0, CapFull}},
		{"unprivileged setresgid", func() unix.Errno {
			if errno := c.Setresgid(5, 5, 5); errno != unix.EPERM {
				t.Errorf("setresgid with euid 1000 = %v, want EPERM", errno)
			}
			return 0
		}, caps{0, CapFull}},
		{"setfsuid(0) raises the file capabilities from permitted", func() unix.Errno { c.Setfsuid(0); return 0 }, caps{capFSSet, CapFull}},
		{"euid 0 again: effective = permitted", func() unix.Errno { return c.Setresuid(X, 0, X) }, full},
		{"all uids 1000: everything gone", func() unix.Errno { return c.Setresuid(1000, 1000, 1000) }, none},
	}
	for _, s := range steps {
		if errno := s.do(); errno != 0 || get(c) != s.want {
			t.Fatalf("%s: %v, caps %+v; want %+v", s.name, errno, get(c), s.want)
		}
	}
	// With PR_SET_KEEPCAPS (setpriv), permitted survives the drop and capset brings the
	// effective set back, so setresgid works after setresuid.
	c = New(0, 0, nil)
	c.KeepCaps = true
	if errno := c.Setresuid(1000, 1000, 1000); errno != 0 || get(c) != (caps{0, CapFull}) {
		t.Fatalf("keepcaps drop: %v %+v", errno, get(c))
	}
	if errno := c.Setresgid(1000, 1000, 1000); errno != unix.EPERM {
		t.Errorf("setresgid before capset: %v, want EPERM", errno)
	}
	if errno := c.Capset(CapFull, CapFull, 0); errno != 0 {
		t.Fatalf("capset: %v", errno)
	}
	if errno := c.Setresgid(1000, 1000, 1000); errno != 0 {
		t.Errorf("setresgid after capset: %v", errno)
	}
	if secure := c.Exec(); secure || get(c) != none || c.KeepCaps {
		t.Errorf("exec as uid 1000: secure %v caps %+v keepcaps %v; want everything cleared", secure, get(c), c.KeepCaps)
	}
}

func TestCapset(t *testing.T) {
	const setuid = 1 << CapSetuid
	tests := []struct {
		name          string
		eff, prm, inh uint64
		errno         unix.Errno
	}{
		{"shrink", setuid, setuid, 0, 0},
		{"effective beyond permitted", CapFull, setuid, 0, unix.EPERM},
		{"grow permitted", 0, CapFull, 0, unix.EPERM},
		{"inheritable from permitted", 0, setuid, setuid, 0},
	}
	for _, tt := range tests {
		c := New(1000, 1000, nil)
		c.CapPrm, c.CapEff = setuid, setuid
		if errno := c.Capset(tt.eff, tt.prm, tt.inh); errno != tt.errno {
			t.Errorf("%s: capset = %v, want %v", tt.name, errno, tt.errno)
		}
	}
	c := New(1000, 1000, nil)
	if errno := c.Capset(0, 0, 1<<CapChown); errno != unix.EPERM {
		t.Errorf("inheritable without it permitted nor CAP_SETPCAP: %v, want EPERM", errno)
	}
}

func TestAccessCapable(t *testing.T) {
	root := New(0, 0, nil)
	dropped := withUIDs(ids{0, 5, 0, 5})
	user := New(5, 5, nil)
	setuidRoot := withUIDs(ids{5, 0, 0, 0})
	for _, tt := range []struct {
		name         string
		c            Creds
		access, eacc bool
	}{
		{"root", root, true, true},
		{"real root, euid 5", dropped, true, false},
		{"user", user, false, false},
		{"real user, euid root", setuidRoot, false, true},
	} {
		if a, e := tt.c.AccessCapable(CapDacOverride, false), tt.c.AccessCapable(CapDacOverride, true); a != tt.access || e != tt.eacc {
			t.Errorf("%s: access %v eaccess %v; want %v %v", tt.name, a, e, tt.access, tt.eacc)
		}
	}
}

func TestExec(t *testing.T) {
	c := withIDs(ids{0, 1000, 0, 7}, ids{0, 0, 5, 5})
	if secure := c.Exec(); !secure || uids(c) != (ids{0, 1000, 1000, 1000}) || gids(c) != (ids{0, 0, 0, 0}) {
		t.Errorf("exec: secure %v uids %v gids %v", secure, uids(c), gids(c))
	}
	c = New(1000, 1000, nil)
	if c.Exec() {
		t.Error("exec with equal ids is secure")
	}
}

func TestReal(t *testing.T) {
	c := Real()
	if int(c.UID) != unix.Getuid() || int(c.EUID) != unix.Geteuid() || int(c.GID) != unix.Getgid() {
		t.Errorf("Real() = %+v, want this process's ids", c)
	}
	if unix.Geteuid() == 0 && c.CapEff == 0 {
		t.Errorf("Real() as root has no effective capabilities: %+v", c)
	}
}
