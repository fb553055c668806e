package pathmap

import (
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeLinks answers MagicLinks from a table, as a tracer would: 123 is a
// traced process (thread 124), 999 the tracer itself.
type fakeLinks map[MagicLink]fakeTarget

type fakeTarget struct {
	t   MagicTarget
	err error
}

func (f fakeLinks) Follow(l MagicLink) (MagicTarget, error) {
	a, ok := f[l]
	if !ok {
		return MagicTarget{}, syscall.ENOENT
	}
	return a.t, a.err
}

var testLinks = fakeLinks{
	{Pid: 123, Name: "root"}:           {t: MagicTarget{Guest: "/"}},
	{Pid: 123, Name: "cwd"}:            {t: MagicTarget{Guest: "/home/u"}},
	{Pid: 123, Name: "exe"}:            {t: MagicTarget{Guest: "/usr/bin/sh", Jump: true}},
	{Pid: 123, Name: "fd/3"}:           {t: MagicTarget{Guest: "/usr/lib", Jump: true}},
	{Pid: 123, Name: "fd/4"}:           {t: MagicTarget{Guest: "/sdcard/Download", Jump: true}},
	{Pid: 123, Name: "fd/0"}:           {t: MagicTarget{Guest: "/dev/null", Jump: true}},
	{Pid: 123, Name: "fd/5"}:           {t: MagicTarget{Jump: true}}, // a pipe
	{Pid: 123, Name: "fd/6"}:           {t: MagicTarget{Guest: "/etc/group", Jump: true}},
	{Pid: 123, Name: "fd/8"}:           {err: syscall.EACCES},
	{Pid: 123, Tid: 124, Name: "fd/3"}: {t: MagicTarget{Guest: "/usr/lib", Jump: true}},
	{Pid: 123, Tid: 124, Name: "root"}: {t: MagicTarget{Guest: "/"}},
	{Pid: 999, Name: "root"}:           {t: MagicTarget{Guest: "/"}},
	{Pid: 999, Name: "cwd"}:            {t: MagicTarget{Guest: "/outside/host"}}, // not in the guest: as is
	{Pid: 999, Name: "fd/4"}:           {t: MagicTarget{Guest: "/usr/lib"}},
	{Pid: 999, Name: "fd/9"}:           {t: MagicTarget{}}, // no path, no jump
}

// magicWorld is fakeWorld with the links testLinks knows.
func magicWorld(t *testing.T) *Mapper {
	t.Helper()
	f := fakeWorld()
	f.link("/proc/123/root", "/")
	f.link("/proc/123/fd/4", "/storage/emulated/0/Download")
	f.link("/proc/123/fd/5", "pipe:[77]")
	f.link("/proc/123/fd/6", "/r/etc/group")
	f.link("/proc/123/fd/8", "/r/etc/group")
	f.link("/proc/123/task/124/fd/3", "/r/usr/lib")
	f.link("/proc/123/task/124/root", "/")
	f.link("/proc/999/root", "/")
	f.link("/proc/999/cwd", "/outside/host")
	f.link("/proc/999/exe", "/usr/bin/droidroot")
	f.link("/proc/999/fd/4", "/r/usr/lib")
	f.link("/proc/999/fd/9", "anon_inode:[eventfd]")
	f.link("/r/usr/self-root", "/proc/self/root/etc")
	f.link("/r/usr/fd3", "/proc/self/fd/3")
	f.link("/r/tmp/rel-proc", "../proc/self/fd/3/..")
	m, err := New("/r", fakeBinds, f, WithVirtualDir("/vdir"))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

// TestResolveMagicLinks: with Proc.Links, a magic link anywhere in a path is
// followed to the guest path it stands for, so ".." after it and the names
// below it stay in the guest's view; only a last component the kernel can
// jump through itself (the caller's own file descriptors) is left to it.
func TestResolveMagicLinks(t *testing.T) {
	const (
		F = Follow
		N = Flags(0)
		E = Entry
	)
	pr := Proc{Pid: 123, Tid: 124, Links: testLinks}
	tests := []struct {
		name  string
		pr    Proc
		cwd   string
		p     string
		flags Flags
		want  want
		guest string // Result.Guest (WantGuest), when not empty
	}{
		// fd/N of the caller: ".." and names below it are the guest's.
		{name: "fd dotdot", p: "/proc/self/fd/3/..", flags: F, want: want{Host: "/r/usr"}, guest: "/usr"},
		{name: "fd dotdot twice", p: "/proc/self/fd/3/../../..", flags: F, want: want{Host: "/r"}, guest: "/"},
		{name: "fd below", p: "/proc/self/fd/3/libc.so", flags: F, want: want{Host: "/r/usr/lib/libc.so"}},
		{name: "fd in a bind dotdot", p: "/proc/123/fd/4/../..", flags: F, want: want{Host: "/r"}},
		{name: "fd slash", p: "/proc/self/fd/3/", flags: N, want: want{Host: "/proc/123/fd/3/", Magic: true}},
		{name: "fd last jumps", p: "/proc/self/fd/3", flags: F, want: want{Host: "/proc/123/fd/3", Magic: true}},
		{name: "fd nofollow", p: "/proc/self/fd/3", flags: N, want: want{Host: "/proc/123/fd/3"}},
		{name: "fd entry", p: "/proc/self/fd/3/new", flags: E, want: want{Host: "/r/usr/lib/new"}},
		{name: "fd of a file dotdot", p: "/proc/self/fd/6/..", flags: F, want: want{Err: "ENOTDIR"}},
		{name: "fd pipe below", p: "/proc/self/fd/5/x", flags: F, want: want{Err: "ENOTDIR"}},
		{name: "fd pipe last", p: "/proc/self/fd/5", flags: F, want: want{Host: "/proc/123/fd/5", Magic: true}},
		{name: "fd closed", p: "/proc/self/fd/3/../x", pr: Proc{Pid: 123, Tid: 124, Links: fakeLinks{}}, flags: F, want: want{Err: "ENOENT"}},
		{name: "fd refused", p: "/proc/self/fd/8/..", flags: F, want: want{Err: "EACCES"}},
		{name: "thread-self fd", p: "/proc/thread-self/fd/3/..", flags: F, want: want{Host: "/r/usr"}},
		{name: "task fd", p: "/proc/123/task/124/fd/3/..", flags: F, want: want{Host: "/r/usr"}},
		{name: "dev fd symbolic dotdot", p: "/dev/fd/3/..", flags: F, want: want{Host: "/r/usr"}},
		{name: "dev stdin", p: "/dev/stdin", flags: F, want: want{Host: "/proc/123/fd/0", Magic: true}},
		{name: "dev stdin below", p: "/dev/stdin/x", flags: F, want: want{Err: "ENOTDIR"}},
		// root and cwd are never jumped through: the kernel's are the host's.
		{name: "root", p: "/proc/self/root", flags: F, want: want{Host: "/r"}, guest: "/"},
		{name: "root dotdot", p: "/proc/self/root/../etc/group", flags: F, want: want{Host: "/r/etc/group"}},
		{name: "root nofollow", p: "/proc/self/root", flags: N, want: want{Host: "/proc/123/root"}},
		{name: "task root", p: "/proc/thread-self/root/usr", flags: F, want: want{Host: "/r/usr"}},
		{name: "cwd", p: "/proc/self/cwd", flags: F, want: want{Host: "/r/home/u"}, guest: "/home/u"},
		{name: "cwd dotdot", p: "/proc/123/cwd/../../etc/group", flags: F, want: want{Host: "/r/etc/group"}},
		{name: "exe last jumps", p: "/proc/self/exe", flags: F, want: want{Host: "/proc/123/exe", Magic: true}},
		{name: "exe dotdot", p: "/proc/self/exe/..", flags: F, want: want{Err: "ENOTDIR"}},
		// Another process, outside the guest tree (the tracer): its root is
		// the guest's, its files are reached by their guest paths.
		{name: "tracer root", p: "/proc/999/root", flags: F, want: want{Host: "/r"}},
		{name: "tracer root below", p: "/proc/999/root/etc/group", flags: F, want: want{Host: "/r/etc/group"}},
		{name: "tracer root dotdot", p: "/proc/999/root/../../etc/group", flags: F, want: want{Host: "/r/etc/group"}},
		{name: "tracer cwd outside", p: "/proc/999/cwd", flags: F, want: want{Err: "ENOENT"}},
		{name: "tracer cwd outside below", p: "/proc/999/cwd/x", flags: F, want: want{Err: "ENOENT"}},
		{name: "tracer fd", p: "/proc/999/fd/4", flags: F, want: want{Host: "/r/usr/lib"}},
		{name: "tracer fd no path", p: "/proc/999/fd/9", flags: F, want: want{Err: "ENOENT"}},
		{name: "tracer exe unknown", p: "/proc/999/exe", flags: F, want: want{Err: "ENOENT"}},
		// Symlinks to magic links, absolute and relative, from any cwd.
		{name: "link to self root", p: "/usr/self-root/group", flags: F, want: want{Host: "/r/etc/group"}},
		{name: "link to self root relative", cwd: "/usr", p: "self-root/../etc/group", flags: F, want: want{Host: "/r/etc/group"}},
		{name: "link to fd dotdot", cwd: "/usr", p: "fd3/../bin/sh", flags: F, want: want{Host: "/r/usr/bin/sh"}},
		{name: "relative link through fd", cwd: "/tmp", p: "rel-proc/bin", flags: F, want: want{Host: "/r/usr/bin"}},
		{name: "relative from proc", cwd: "/proc/123", p: "fd/3/..", flags: F, want: want{Host: "/r/usr"}},
		{name: "relative from proc root", cwd: "/proc", p: "self/root/..", flags: F, want: want{Host: "/r"}},
		// Magic links count as symlinks.
		{name: "links counted", p: "/proc/self/fd/3/../../proc/self/fd/3/../../proc/self/root/etc/group", flags: F, want: want{Host: "/r/etc/group"}},
		// Without Links: the kernel follows (the caller must not give such
		// paths to a tracee).
		{name: "no links", pr: Proc{Pid: 123, Tid: 124}, p: "/proc/self/fd/3/..", flags: F, want: want{Host: "/proc/123/fd/3/..", Magic: true}},
	}
	m := magicWorld(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cwd := tc.cwd
			if cwd == "" {
				cwd = "/"
			}
			p := tc.pr
			if p.Pid == 0 {
				p = pr
			}
			r, err := m.Lookup(p, cwd, tc.p, tc.flags|WantGuest)
			got := want{Host: r.Host, Err: errName(err), Magic: r.Magic, MountPoint: r.MountPoint, Virtual: r.Virtual}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Lookup(%q, %q, %v) mismatch (-want +got):\n%s", cwd, tc.p, tc.flags, diff)
			}
			if tc.guest != "" && r.Guest != tc.guest {
				t.Errorf("Guest = %q, want %q", r.Guest, tc.guest)
			}
			if err == nil && !r.Magic && r.Literal {
				t.Errorf("Literal set for a walk through a magic link")
			}
		})
	}
}

// TestResolveMagicLinkLimit: magic links count towards MaxSymlinks, as in
// the kernel (nd->total_link_count).
func TestResolveMagicLinkLimit(t *testing.T) {
	m := magicWorld(t)
	pr := Proc{Pid: 123, Tid: 124, Links: testLinks}
	// Each /proc/self/root is two links: "self" and "root".
	roots := strings.Repeat("/proc/self/root", MaxSymlinks/2)
	if h, err := m.Resolve(pr, "/", roots+"/etc/group", true); err != nil || h != "/r/etc/group" {
		t.Errorf("%d links: %q, %v; want /r/etc/group", MaxSymlinks, h, err)
	}
	if _, err := m.Resolve(pr, "/", roots+"/proc/self/status", true); err != syscall.ELOOP {
		t.Errorf("%d links: %v, want ELOOP", MaxSymlinks+1, err)
	}
}

// TestParseMagicLink: the links and only the links.
func TestParseMagicLink(t *testing.T) {
	for _, tc := range []struct {
		host string
		want MagicLink
		ok   bool
	}{
		{"/proc/12/root", MagicLink{Pid: 12, Name: "root"}, true},
		{"/proc/12/cwd", MagicLink{Pid: 12, Name: "cwd"}, true},
		{"/proc/12/exe", MagicLink{Pid: 12, Name: "exe"}, true},
		{"/proc/12/fd/3", MagicLink{Pid: 12, Name: "fd/3"}, true},
		{"/proc/12/map_files/400000-401000", MagicLink{Pid: 12, Name: "map_files/400000-401000"}, true},
		{"/proc/12/ns/net", MagicLink{Pid: 12, Name: "ns/net"}, true},
		{"/proc/12/task/13/fd/0", MagicLink{Pid: 12, Tid: 13, Name: "fd/0"}, true},
		{"/proc/12/task/13/cwd", MagicLink{Pid: 12, Tid: 13, Name: "cwd"}, true},
		{"/proc/self/fd/3", MagicLink{}, false},
		{"/proc/thread-self/root", MagicLink{}, false},
		{"/proc/12/fd", MagicLink{}, false},
		{"/proc/12/fd/..", MagicLink{}, false},
		{"/proc/12/fd/3/x", MagicLink{}, false},
		{"/proc/12/root/x", MagicLink{}, false},
		{"/proc/12/status", MagicLink{}, false},
		{"/proc/12/task/x/fd/0", MagicLink{}, false},
		{"/proc/12345678901/fd/0", MagicLink{}, false},
		{"/proc/-1/fd/0", MagicLink{}, false},
		{"/proc//fd/0", MagicLink{}, false},
		{"/sys/12/fd/0", MagicLink{}, false},
	} {
		got, ok := ParseMagicLink(tc.host)
		if ok != tc.ok || got != tc.want {
			t.Errorf("ParseMagicLink(%q) = %+v, %v; want %+v, %v", tc.host, got, ok, tc.want, tc.ok)
		}
		if ok && got.Host() != tc.host {
			t.Errorf("%+v.Host() = %q, want %q", got, got.Host(), tc.host)
		}
	}
}
