package pathmap

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fakeWorld builds the host tree most table tests use:
//
//	/r                 the rootfs
//	/storage/emulated/0  bound at /sdcard
//	/hostdev           bound at /dev
//	/proc              the host's procfs (tracer pid 999, tracee 123/124), bound at /proc
//	/opt/a, /opt/b     nested bindings at /mnt and /mnt/inner
//	/data/x            bound at /a/b/c, where the rootfs has no /a
//	/hostfile, /etc-host/resolv.conf  single-file bindings
//	/r/usr/lib         bound again at /libalias
//	/                  bound at /host
//	/vdir              the stand-in for virtual directories
func fakeWorld() *fakeFS {
	f := newFakeFS()
	f.dir("/r/usr/bin", "/r/usr/lib", "/r/tmp", "/r/home/u", "/r/mnt", "/r/proc", "/r/dev", "/r/etc")
	f.file("/r/usr/bin/sh", "/r/usr/lib/libc.so", "/r/etc/group", "/r/etc/passwd", "/r/home/u/.profile")
	f.link("/r/bin", "usr/bin")
	f.link("/r/lib", "/usr/lib")
	f.link("/r/etc/link-out", "/../../..")
	f.link("/r/dangling", "/nonexistent")
	f.link("/r/loop1", "loop2")
	f.link("/r/loop2", "loop1")
	f.link("/r/self-loop", "self-loop")
	f.link("/r/to-sdcard", "/sdcard/Download")
	f.link("/r/to-dev-null", "/dev/null")
	f.link("/r/up", "../../..")
	f.link("/r/file-link", "etc/group")
	f.link("/r/slashlink", "usr/")
	f.link("/r/rootlink", "/")
	f.link("/r/dotdotlink", "usr/lib/..")
	f.link("/r/to-virtual", "/a/b/c/f")
	f.link("/r/to-proc-self", "/proc/self")
	// Chains of 40 and 41 symlinks.
	for i := 0; i < 39; i++ {
		f.link(fmt.Sprintf("/r/c%d", i), fmt.Sprintf("c%d", i+1))
	}
	f.link("/r/c39", "etc/group")
	for i := 0; i < 40; i++ {
		f.link(fmt.Sprintf("/r/d%d", i), fmt.Sprintf("d%d", i+1))
	}
	f.link("/r/d40", "etc/group")

	f.file("/storage/emulated/0/Download/a.txt")
	f.link("/storage/emulated/0/escape", "/../..")
	f.link("/storage/emulated/0/rel-up", "../../..")
	f.link("/storage/emulated/0/to-lib", "../usr/lib")
	f.chr("/hostdev/null")
	f.dir("/opt/a/inner-host", "/opt/b")
	f.file("/opt/a/g", "/opt/b/f")
	f.file("/data/x/f")
	f.file("/hostfile", "/etc-host/resolv.conf")
	f.dir("/vdir")

	f.link("/proc/self", "999")
	f.link("/proc/thread-self", "999/task/999")
	f.link("/proc/mounts", "self/mounts")
	f.file("/proc/999/status", "/proc/123/status", "/proc/123/mounts", "/proc/123/task/124/status")
	f.link("/proc/123/fd/3", "/some/host/file")
	f.link("/proc/123/fd/0", "/dev/pts/0")
	f.link("/proc/123/exe", "/usr/bin/droidroot")
	f.link("/proc/123/cwd", "/r/home/u")
	return f
}

var fakeBinds = []Binding{
	{Host: "/storage/emulated/0", Guest: "/sdcard"},
	{Host: "/hostdev", Guest: "/dev"},
	{Host: "/proc", Guest: "/proc"},
	{Host: "/opt/a", Guest: "/mnt"},
	{Host: "/opt/b", Guest: "/mnt/inner"},
	{Host: "/data/x", Guest: "/a/b/c"},
	{Host: "/hostfile", Guest: "/etc/passwd"},
	{Host: "/etc-host/resolv.conf", Guest: "/etc/resolv.conf"},
	{Host: "/r/usr/lib", Guest: "/libalias"},
	{Host: "/", Guest: "/host"},
	{Host: "/proc/self/fd", Guest: "/dev/fd"},
	{Host: "/proc/self/fd/0", Guest: "/dev/stdin"},
}

func newFakeMapper(t testing.TB) (*Mapper, *fakeFS) {
	t.Helper()
	f := fakeWorld()
	m, err := New("/r", fakeBinds, f, WithVirtualDir("/vdir"))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m, f
}

type want struct {
	Host       string
	Guest      string
	Err        string
	Magic      bool
	MountPoint bool
	Virtual    bool
}

func errName(err error) string {
	if err == nil {
		return ""
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return errnoName(e)
	}
	return err.Error()
}

func errnoName(e syscall.Errno) string {
	names := map[syscall.Errno]string{
		syscall.ENOENT: "ENOENT", syscall.ENOTDIR: "ENOTDIR", syscall.ELOOP: "ELOOP",
		syscall.ENAMETOOLONG: "ENAMETOOLONG", syscall.EINVAL: "EINVAL", syscall.EACCES: "EACCES",
		syscall.EXDEV: "EXDEV", syscall.EISDIR: "EISDIR", syscall.EEXIST: "EEXIST",
		syscall.ENOTEMPTY: "ENOTEMPTY", syscall.EBUSY: "EBUSY",
	}
	if n, ok := names[e]; ok {
		return n
	}
	return fmt.Sprintf("errno%d", int(e))
}

func TestResolveFake(t *testing.T) {
	const (
		F = Follow
		N = Flags(0)
		E = Entry
	)
	pr := Proc{Pid: 123, Tid: 124}
	long := "/" + strings.Repeat("a/", PathMax/2) // >= PathMax
	dots4095 := "/" + strings.Repeat("./", (PathMax-2)/2)
	if len(dots4095) >= PathMax {
		dots4095 = dots4095[:PathMax-1]
	}
	name256 := strings.Repeat("n", 256)
	chain := func(n int) string { return fmt.Sprintf("/%c0", n) }
	tests := []struct {
		name  string
		pr    Proc
		cwd   string
		p     string
		flags Flags
		want  want
		// syscalls (lstat, readlink) when >= 0
		lst, rdl int
	}{
		// Plain paths.
		{name: "root", p: "/", flags: F, want: want{Host: "/r"}, lst: 0, rdl: 0},
		{name: "root slashes", p: "///", flags: N, want: want{Host: "/r"}},
		{name: "file", p: "/usr/bin/sh", flags: F, want: want{Host: "/r/usr/bin/sh"}, lst: 0, rdl: 3},
		{name: "file nofollow", p: "/usr/bin/sh", flags: N, want: want{Host: "/r/usr/bin/sh"}, lst: 0, rdl: 2},
		{name: "double slashes", p: "//usr///bin//sh", flags: F, want: want{Host: "/r/usr/bin/sh"}},
		{name: "dir trailing", p: "/usr/", flags: N, want: want{Host: "/r/usr/"}, lst: 1, rdl: 0},
		{name: "dir trailing twice", p: "/usr//", flags: F, want: want{Host: "/r/usr/"}},
		{name: "dir dot", p: "/usr/.", flags: F, want: want{Host: "/r/usr"}, lst: 1, rdl: 0},
		{name: "dot dot at root", p: "/../../etc/group", flags: F, want: want{Host: "/r/etc/group"}},
		{name: "dot dot final", p: "/usr/bin/..", flags: F, want: want{Host: "/r/usr"}},
		{name: "empty", p: "", flags: F, want: want{Err: "ENOENT"}},
		{name: "nul ends the path", p: "/etc/group\x00/x", flags: F, want: want{Host: "/r/etc/group"}},
		{name: "path too long", p: long, flags: F, want: want{Err: "ENAMETOOLONG"}},
		{name: "path 4095 bytes", p: dots4095, flags: F, want: want{Host: "/r"}},
		{name: "component too long", p: "/tmp/" + name256, flags: F, want: want{Err: "ENAMETOOLONG"}},
		{name: "component too long intermediate", p: "/" + name256 + "/x", flags: N, want: want{Err: "ENAMETOOLONG"}},
		// Left to the kernel, which says ENAMETOOLONG on the returned path.
		{name: "component too long nofollow", p: "/tmp/" + name256, flags: N, want: want{Host: "/r/tmp/" + name256}},

		// Missing and non-directory components.
		{name: "missing final", p: "/nonexistent", flags: F, want: want{Host: "/r/nonexistent"}},
		{name: "missing final slash", p: "/nonexistent/", flags: F, want: want{Host: "/r/nonexistent/"}},
		{name: "missing intermediate", p: "/nonexistent/x", flags: F, want: want{Err: "ENOENT"}},
		{name: "missing then dotdot", p: "/nonexistent/..", flags: F, want: want{Err: "ENOENT"}},
		{name: "file trailing slash", p: "/etc/group/", flags: N, want: want{Err: "ENOTDIR"}},
		{name: "file intermediate", p: "/etc/group/x", flags: F, want: want{Err: "ENOTDIR"}},
		{name: "file dot", p: "/etc/group/.", flags: F, want: want{Err: "ENOTDIR"}},
		{name: "file dotdot", p: "/etc/group/..", flags: F, want: want{Err: "ENOTDIR"}},
		// Left to the kernel (ENOTDIR on the returned path): no lookup of an
		// unfollowed last component.
		{name: "file intermediate nofollow", p: "/etc/group/x", flags: N, want: want{Host: "/r/etc/group/x"}},

		// Symlinks.
		{name: "relative link", p: "/bin/sh", flags: F, want: want{Host: "/r/usr/bin/sh"}, lst: 0, rdl: 4},
		{name: "absolute link", p: "/lib/libc.so", flags: F, want: want{Host: "/r/usr/lib/libc.so"}},
		{name: "link final nofollow", p: "/bin", flags: N, want: want{Host: "/r/bin"}, lst: 0, rdl: 0},
		{name: "link final follow", p: "/bin", flags: F, want: want{Host: "/r/usr/bin"}},
		{name: "link trailing slash follows", p: "/bin/", flags: N, want: want{Host: "/r/usr/bin/"}},
		{name: "link to file trailing", p: "/file-link/", flags: N, want: want{Err: "ENOTDIR"}},
		{name: "link to file", p: "/file-link", flags: F, want: want{Host: "/r/etc/group"}},
		{name: "link escaping with dotdot", p: "/etc/link-out/etc/group", flags: F, want: want{Host: "/r/etc/group"}},
		{name: "relative link up", p: "/up", flags: F, want: want{Host: "/r"}},
		{name: "relative link up then", p: "/up/etc/group", flags: F, want: want{Host: "/r/etc/group"}},
		{name: "dangling follow", p: "/dangling", flags: F, want: want{Host: "/r/nonexistent"}},
		{name: "dangling nofollow", p: "/dangling", flags: N, want: want{Host: "/r/dangling"}},
		{name: "dangling slash", p: "/dangling/", flags: N, want: want{Host: "/r/nonexistent/"}},
		{name: "dangling intermediate", p: "/dangling/x", flags: F, want: want{Err: "ENOENT"}},
		{name: "loop", p: "/loop1", flags: F, want: want{Err: "ELOOP"}},
		{name: "loop nofollow", p: "/loop1", flags: N, want: want{Host: "/r/loop1"}},
		{name: "loop intermediate", p: "/loop1/x", flags: N, want: want{Err: "ELOOP"}},
		{name: "self loop slash", p: "/self-loop/", flags: N, want: want{Err: "ELOOP"}},
		{name: "40 links", p: chain('c'), flags: F, want: want{Host: "/r/etc/group"}},
		{name: "41 links", p: chain('d'), flags: F, want: want{Err: "ELOOP"}},
		{name: "dotdot through link", p: "/lib/..", flags: F, want: want{Host: "/r/usr"}},
		{name: "dotdot through link 2", p: "/bin/../lib/libc.so", flags: F, want: want{Host: "/r/usr/lib/libc.so"}},
		{name: "link body dotdot", p: "/dotdotlink", flags: F, want: want{Host: "/r/usr"}},
		{name: "link body trailing slash", p: "/slashlink", flags: F, want: want{Host: "/r/usr/"}},
		{name: "link to root", p: "/rootlink", flags: F, want: want{Host: "/r"}},
		{name: "link to root then", p: "/rootlink/etc/group", flags: F, want: want{Host: "/r/etc/group"}},
		{name: "link to root dotdot", p: "/rootlink/..", flags: F, want: want{Host: "/r"}},

		// Bindings.
		{name: "bind file", p: "/sdcard/Download/a.txt", flags: F, want: want{Host: "/storage/emulated/0/Download/a.txt"}, lst: 0, rdl: 2},
		{name: "bind mount point", p: "/sdcard", flags: N, want: want{Host: "/storage/emulated/0", MountPoint: true}, lst: 0, rdl: 0},
		{name: "bind dotdot", p: "/sdcard/..", flags: F, want: want{Host: "/r"}},
		{name: "bind dotdot deeper", p: "/sdcard/Download/../..", flags: F, want: want{Host: "/r"}},
		{name: "bind absolute link escaping", p: "/sdcard/escape", flags: F, want: want{Host: "/r"}},
		{name: "bind relative link up", p: "/sdcard/rel-up/etc/group", flags: F, want: want{Host: "/r/etc/group"}},
		{name: "bind relative link to guest", p: "/sdcard/to-lib/libc.so", flags: F, want: want{Host: "/r/usr/lib/libc.so"}},
		{name: "rootfs link into bind", p: "/to-sdcard/a.txt", flags: F, want: want{Host: "/storage/emulated/0/Download/a.txt"}},
		{name: "dev null", p: "/dev/null", flags: F, want: want{Host: "/hostdev/null"}, lst: 0, rdl: 1},
		{name: "link to dev null", p: "/to-dev-null", flags: F, want: want{Host: "/hostdev/null"}},
		{name: "dev null slash", p: "/dev/null/", flags: F, want: want{Err: "ENOTDIR"}},
		{name: "dev null intermediate", p: "/dev/null/x", flags: F, want: want{Err: "ENOTDIR"}},
		{name: "nested bind", p: "/mnt/inner/f", flags: F, want: want{Host: "/opt/b/f"}},
		{name: "nested outer", p: "/mnt/g", flags: F, want: want{Host: "/opt/a/g"}},
		{name: "nested dotdot", p: "/mnt/inner/..", flags: F, want: want{Host: "/opt/a"}},
		{name: "nested dotdot twice", p: "/mnt/inner/../..", flags: F, want: want{Host: "/r"}},
		{name: "single file bind over file", p: "/etc/passwd", flags: F, want: want{Host: "/hostfile", MountPoint: true}},
		{name: "single file bind slash", p: "/etc/passwd/", flags: N, want: want{Err: "ENOTDIR"}},
		{name: "single file bind intermediate", p: "/etc/passwd/x", flags: N, want: want{Err: "ENOTDIR"}},
		{name: "single file bind missing in rootfs", p: "/etc/resolv.conf", flags: F, want: want{Host: "/etc-host/resolv.conf", MountPoint: true}},
		{name: "bind of rootfs subdir", p: "/libalias/libc.so", flags: F, want: want{Host: "/r/usr/lib/libc.so"}},
		{name: "bind of rootfs subdir dotdot", p: "/libalias/..", flags: F, want: want{Host: "/r"}},
		{name: "host root bound", p: "/host/storage", flags: F, want: want{Host: "/storage"}},
		{name: "host root bound top", p: "/host", flags: F, want: want{Host: "/", MountPoint: true}},
		{name: "host root bound dotdot", p: "/host/..", flags: F, want: want{Host: "/r"}},

		// Virtual directories (/a and /a/b are not in the rootfs).
		{name: "virtual", p: "/a", flags: F, want: want{Host: "/vdir", Virtual: true}},
		{name: "virtual nofollow", p: "/a", flags: N, want: want{Host: "/vdir", Virtual: true}},
		{name: "virtual slash", p: "/a/", flags: N, want: want{Host: "/vdir/", Virtual: true}},
		{name: "virtual 2", p: "/a/b", flags: F, want: want{Host: "/vdir", Virtual: true}},
		{name: "virtual mount", p: "/a/b/c", flags: F, want: want{Host: "/data/x", MountPoint: true}},
		{name: "virtual mount file", p: "/a/b/c/f", flags: F, want: want{Host: "/data/x/f"}},
		{name: "virtual dotdot", p: "/a/b/c/../..", flags: F, want: want{Host: "/vdir", Virtual: true}},
		{name: "virtual dotdot to root", p: "/a/b/c/../../../etc/group", flags: F, want: want{Host: "/r/etc/group"}},
		{name: "virtual other", p: "/a/zzz", flags: F, want: want{Host: "/r/a/zzz"}},
		{name: "virtual other intermediate", p: "/a/zzz/q", flags: F, want: want{Err: "ENOENT"}},
		{name: "link into virtual", p: "/to-virtual", flags: F, want: want{Host: "/data/x/f"}},
		{name: "virtual cwd", cwd: "/a/b", p: "c/f", flags: F, want: want{Host: "/data/x/f"}},
		{name: "virtual cwd dot", cwd: "/a/b", p: ".", flags: F, want: want{Host: "/vdir", Virtual: true}},
		{name: "virtual cwd dotdot", cwd: "/a/b", p: "..", flags: F, want: want{Host: "/vdir", Virtual: true}},

		// procfs.
		{name: "proc self", pr: pr, p: "/proc/self/status", flags: F, want: want{Host: "/proc/123/status"}, lst: 0, rdl: 1}, // /proc/123 is the caller's own: no readlink
		{name: "proc self nofollow", pr: pr, p: "/proc/self", flags: N, want: want{Host: "/proc/self"}},
		{name: "proc self follow", pr: pr, p: "/proc/self", flags: F, want: want{Host: "/proc/123"}},
		{name: "proc self slash", pr: pr, p: "/proc/self/", flags: N, want: want{Host: "/proc/123/"}},
		{name: "proc thread-self", pr: pr, p: "/proc/thread-self/status", flags: F, want: want{Host: "/proc/123/task/124/status"}},
		{name: "proc thread-self no tid", pr: Proc{Pid: 123}, p: "/proc/thread-self", flags: F, want: want{Host: "/proc/123/task/123"}},
		{name: "proc mounts", pr: pr, p: "/proc/mounts", flags: F, want: want{Host: "/proc/123/mounts"}},
		{name: "link to proc self", pr: pr, p: "/to-proc-self/status", flags: F, want: want{Host: "/proc/123/status"}},
		{name: "proc fd magic", pr: pr, p: "/proc/self/fd/3", flags: F, want: want{Host: "/proc/123/fd/3", Magic: true}},
		{name: "proc fd nofollow", pr: pr, p: "/proc/self/fd/3", flags: N, want: want{Host: "/proc/123/fd/3"}},
		{name: "proc fd intermediate", pr: pr, p: "/proc/self/fd/3/x/../y/", flags: N, want: want{Host: "/proc/123/fd/3/x/../y/", Magic: true}},
		{name: "proc exe", pr: pr, p: "/proc/self/exe", flags: F, want: want{Host: "/proc/123/exe", Magic: true}},
		{name: "proc cwd slash", pr: pr, p: "/proc/123/cwd/", flags: N, want: want{Host: "/proc/123/cwd/", Magic: true}},
		{name: "proc self pid 0", p: "/proc/self/status", flags: F, want: want{Host: "/proc/999/status"}},
		{name: "dev fd symbolic", pr: pr, p: "/dev/fd/3", flags: F, want: want{Host: "/proc/123/fd/3", Magic: true}},
		{name: "dev stdin follow", pr: pr, p: "/dev/stdin", flags: F, want: want{Host: "/proc/123/fd/0", Magic: true}},
		{name: "dev stdin nofollow", pr: pr, p: "/dev/stdin", flags: N, want: want{Host: "/proc/123/fd/0", MountPoint: true}},

		// Relative paths.
		{name: "cwd", cwd: "/usr", p: "bin/sh", flags: F, want: want{Host: "/r/usr/bin/sh"}},
		{name: "cwd in bind", cwd: "/sdcard/Download", p: "../../etc/group", flags: F, want: want{Host: "/r/etc/group"}},
		{name: "cwd bind dot", cwd: "/sdcard", p: ".", flags: F, want: want{Host: "/storage/emulated/0"}},
		{name: "cwd unclean", cwd: "/usr/./bin/../lib/", p: "libc.so", flags: F, want: want{Host: "/r/usr/lib/libc.so"}},
		{name: "cwd relative", cwd: "usr", p: "bin", flags: F, want: want{Err: "EINVAL"}},
		{name: "cwd ignored for absolute", cwd: "usr", p: "/usr", flags: F, want: want{Host: "/r/usr"}},

		// Entry calls (mkdir, unlink, rmdir, rename, ...).
		{name: "entry link slash", p: "/bin/", flags: E, want: want{Host: "/r/bin/"}, lst: 0, rdl: 0},
		{name: "entry intermediate link", p: "/bin/x", flags: E, want: want{Host: "/r/usr/bin/x"}},
		{name: "entry dot", p: "/etc/.", flags: E, want: want{Host: "/r/etc/."}},
		{name: "entry dotdot", p: "/etc/..", flags: E, want: want{Host: "/r/etc/.."}},
		{name: "entry root", p: "/", flags: E, want: want{Host: "/"}},
		{name: "entry root dot", p: "/.", flags: E, want: want{Host: "/r/."}},
		{name: "entry mount point", p: "/sdcard", flags: E, want: want{Host: "/storage/emulated/0", MountPoint: true}},
		{name: "entry new dir slash", p: "/new/", flags: E, want: want{Host: "/r/new/"}},
		{name: "entry file dot", p: "/etc/group/.", flags: E, want: want{Err: "ENOTDIR"}},
		{name: "entry follow ignored", p: "/bin", flags: E | F, want: want{Host: "/r/bin"}},
	}
	m, f := newFakeMapper(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cwd := tc.cwd
			if cwd == "" {
				cwd = "/"
			}
			f.resetCounts()
			r, err := m.Lookup(tc.pr, cwd, tc.p, tc.flags)
			got := want{Host: r.Host, Err: errName(err), Magic: r.Magic, MountPoint: r.MountPoint, Virtual: r.Virtual}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Lookup(%q, %q, %v) mismatch (-want +got):\n%s", cwd, tc.p, tc.flags, diff)
			}
			if tc.lst != 0 || tc.rdl != 0 || tc.name == "root" {
				l, rl := f.counts()
				if l != tc.lst || rl != tc.rdl {
					t.Errorf("syscalls: lstat %d readlink %d, want %d %d", l, rl, tc.lst, tc.rdl)
				}
			}
			// Resolve agrees with Lookup.
			if tc.flags&^Follow == 0 {
				h, err2 := m.Resolve(tc.pr, cwd, tc.p, tc.flags&Follow != 0)
				if h != r.Host || errName(err2) != errName(err) {
					t.Errorf("Resolve = %q, %v; Lookup = %q, %v", h, err2, r.Host, err)
				}
			}
		})
	}
	if len(f.bad) > 0 {
		t.Errorf("pathmap gave the FS bad paths: %q", f.bad)
	}
}

func TestLookupGuest(t *testing.T) {
	m, _ := newFakeMapper(t)
	pr := Proc{Pid: 123, Tid: 124}
	tests := []struct {
		cwd, p string
		flags  Flags
		want   string
	}{
		{"/", "/bin/sh", Follow, "/usr/bin/sh"},
		{"/", "/bin", 0, "/bin"},
		{"/", "/lib/", 0, "/usr/lib"},
		{"/", "/sdcard/Download/../x", Follow, "/sdcard/x"},
		{"/", "/to-sdcard", Follow, "/sdcard/Download"},
		{"/", "/a/b/c/..", Follow, "/a/b"},
		{"/", "/a/zzz", Follow, "/a/zzz"},
		{"/sdcard", "..", Follow, "/"},
		{"/", "/", Follow, "/"},
		{"/", "/proc/self", Follow, "/proc/123"},
		{"/", "/libalias/..", Follow, "/"},
		{"/usr", "../etc/group/", Entry, "/etc/group"},
		{"/", "/nonexistent", Follow, "/nonexistent"},
		{"/", "/etc/..", Entry, "/etc/.."},
	}
	for _, tc := range tests {
		r, err := m.Lookup(pr, tc.cwd, tc.p, tc.flags|WantGuest)
		if err != nil {
			t.Errorf("Lookup(%q, %q): %v", tc.cwd, tc.p, err)
			continue
		}
		if r.Guest != tc.want {
			t.Errorf("Lookup(%q, %q).Guest = %q, want %q", tc.cwd, tc.p, r.Guest, tc.want)
		}
		// Resolving the canonical guest path again gives the same host path.
		if tc.flags&Entry == 0 {
			r2, err := m.Lookup(pr, "/", r.Guest, tc.flags|WantGuest)
			if err != nil || strings.TrimSuffix(r2.Host, "/") != strings.TrimSuffix(r.Host, "/") || r2.Guest != r.Guest {
				t.Errorf("Lookup(%q) = %+v, %v; want host %q", r.Guest, r2, err, r.Host)
			}
		}
	}
	if r, _ := m.Lookup(pr, "/", "/proc/self/exe", Follow|WantGuest); r.Guest != "" || !r.Magic {
		t.Errorf("magic: %+v", r)
	}
}

func TestToGuest(t *testing.T) {
	m, _ := newFakeMapper(t)
	tests := []struct {
		host  string
		guest string
		ok    bool
	}{
		{"/r", "/", true},
		{"/r/", "/", true},
		{"/r/usr/bin/sh", "/usr/bin/sh", true},
		{"/r/usr/lib/libc.so", "/libalias/libc.so", true}, // longest host prefix wins
		{"/r/usr/libx", "/usr/libx", true},
		{"/rx", "/host/rx", true}, // only the host-root binding covers it
		{"/storage/emulated/0", "/sdcard", true},
		{"/storage/emulated/0/Download/a.txt", "/sdcard/Download/a.txt", true},
		{"/storage/emulated/01", "/host/storage/emulated/01", true},
		{"/hostdev/null", "/dev/null", true},
		{"/opt/b/f", "/mnt/inner/f", true},
		{"/opt/a/g", "/mnt/g", true},
		{"/data/x/f", "/a/b/c/f", true},
		{"/hostfile", "/etc/passwd", true},
		{"/proc/123/status", "/proc/123/status", true},
		{"/r/../storage", "/host/storage", true}, // cleaned first
		{"pipe:[123]", "", false},
		{"", "", false},
	}
	for _, tc := range tests {
		g, ok := m.ToGuest(tc.host)
		if g != tc.guest || ok != tc.ok {
			t.Errorf("ToGuest(%q) = %q, %v; want %q, %v", tc.host, g, ok, tc.guest, tc.ok)
		}
	}

	// Without the host-root binding, paths outside are not mapped.
	f := fakeWorld()
	m2, err := New("/r", []Binding{{Host: "/storage/emulated/0", Guest: "/sdcard"}}, f)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"/", "/rx", "/storage", "/proc/1/status"} {
		if g, ok := m2.ToGuest(h); ok {
			t.Errorf("ToGuest(%q) = %q, true; want false", h, g)
		}
	}
	if g, ok := m2.ToGuest("/storage/emulated/0/x"); !ok || g != "/sdcard/x" {
		t.Errorf("ToGuest = %q, %v", g, ok)
	}
}

func TestNew(t *testing.T) {
	f := fakeWorld()
	f.link("/rootlink", "r")
	f.link("/storage/self", "/storage/emulated/0")
	binds := []Binding{
		{Host: "/storage/self/", Guest: "/sdcard/"},
		{Host: "/missing", Guest: "/m"},
		{Host: "/hostdev", Guest: "relative"},
		{Host: "/opt/a", Guest: "/x"},
		{Host: "/opt/b", Guest: "/x/./"}, // same guest: hides the previous one
		{Host: "/proc/self/fd", Guest: "/dev/fd"},
		{Host: "/hostdev/stdin", Guest: "/in"}, // -> /proc/self/fd/0
	}
	f.link("/hostdev/stdin", "../proc/./self/fd/0")
	m, err := New("/rootlink/", binds, f)
	var be BindErrors
	if !errors.As(err, &be) || m == nil {
		t.Fatalf("New: %v, %v; want BindErrors and a mapper", m, err)
	}
	gotErrs := []string{}
	for _, e := range be {
		gotErrs = append(gotErrs, e.Binding.Host+": "+errName(e.Err))
	}
	if diff := cmp.Diff([]string{"/missing: ENOENT", "/hostdev: EINVAL"}, gotErrs); diff != "" {
		t.Errorf("bind errors (-want +got):\n%s", diff)
	}
	if !errors.Is(err, syscall.ENOENT) {
		t.Errorf("errors.Is(err, ENOENT) = false for %v", err)
	}
	if want := `can't sanitize binding "/missing": no such file or directory`; be[0].Error() != want {
		t.Errorf("Error() = %q, want %q", be[0].Error(), want)
	}
	if m.Root() != "/r" {
		t.Errorf("Root() = %q", m.Root())
	}
	wantB := []Binding{
		{Host: "/storage/emulated/0", Guest: "/sdcard"},
		{Host: "/opt/a", Guest: "/x"},
		{Host: "/opt/b", Guest: "/x"},
		{Host: "/proc/self/fd", Guest: "/dev/fd"},
		{Host: "/proc/self/fd/0", Guest: "/in"},
	}
	if diff := cmp.Diff(wantB, m.Bindings()); diff != "" {
		t.Errorf("Bindings (-want +got):\n%s", diff)
	}
	if h, err := m.Resolve(Proc{}, "/", "/x/f", true); err != nil || h != "/opt/b/f" {
		t.Errorf("later binding should win: %q, %v", h, err)
	}
	if h, err := m.Resolve(Proc{Pid: 123}, "/", "/in", false); err != nil || h != "/proc/123/fd/0" {
		t.Errorf("symbolic binding through a symlink: %q, %v", h, err)
	}
	if g, ok := m.ToGuest("/opt/a/g"); ok {
		t.Errorf("hidden binding used by ToGuest: %q", g)
	}
	if m.VirtualDir() != "/r" {
		t.Errorf("VirtualDir() = %q, want the rootfs", m.VirtualDir())
	}

	if _, err := New("/nowhere", nil, f); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("New(missing root) = %v", err)
	}
	if _, err := New("/r/etc/group", nil, f); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("New(file root) = %v", err)
	}
	if _, err := New("/r", nil, f, WithVirtualDir("/hostfile")); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("New(file vdir) = %v", err)
	}

	// A binding at "/" replaces the rootfs.
	m3, err := New("/r", []Binding{{Host: "/opt/a", Guest: "/"}}, f)
	if err != nil {
		t.Fatal(err)
	}
	if m3.Root() != "/opt/a" {
		t.Errorf("Root() = %q", m3.Root())
	}
	if h, _ := m3.Resolve(Proc{}, "/", "/g", true); h != "/opt/a/g" {
		t.Errorf("Resolve = %q", h)
	}
}

func TestIsProcMagic(t *testing.T) {
	for p, want := range map[string]bool{
		"/proc/1/exe":                 true,
		"/proc/1/cwd/x":               true,
		"/proc/self/root":             true,
		"/proc/thread-self/exe":       true,
		"/proc/12/fd/3":               true,
		"/proc/12/fd/3/..":            true,
		"/proc/12/fd":                 false,
		"/proc/12/fd/":                false,
		"/proc/12/map_files/7f-80":    true,
		"/proc/12/ns/net":             true,
		"/proc/12/task/13/exe":        true,
		"/proc/12/task/13/fd/1":       true,
		"/proc/12/task/x/exe":         false,
		"/proc/12/status":             false,
		"/proc/12/fdinfo/3":           false,
		"/proc/mounts":                false,
		"/proc/sys/kernel/exe":        false,
		"/procx/1/exe":                false,
		"/r/proc/1/exe":               false,
		"/proc/1a/exe":                false,
		"/proc//1/exe":                true, // the kernel skips repeated slashes too
		"/proc/self/task/1/cwd":       true,
		"/proc/thread-self/fd/0":      true,
		"/proc/thread-self/task/1/fd": false,
	} {
		if got := IsProcMagic(p); got != want {
			t.Errorf("IsProcMagic(%q) = %v, want %v", p, got, want)
		}
	}
}

// TestConcurrent runs lookups from many goroutines on one Mapper (run it
// with -race).
func TestConcurrent(t *testing.T) {
	m, _ := newFakeMapper(t)
	paths := []string{"/bin/sh", "/sdcard/Download/a.txt", "/a/b/c/f", "/proc/self/fd/3", "/lib/..",
		"/loop1", "/to-virtual", "/mnt/inner/../g", "/dev/fd/0", "/nonexistent/"}
	want := make([]Result, len(paths))
	for i, p := range paths {
		want[i], _ = m.Lookup(Proc{Pid: 123}, "/", p, Follow|WantGuest)
	}
	done := make(chan bool)
	for g := 0; g < 8; g++ {
		go func() {
			defer func() { done <- true }()
			for n := 0; n < 200; n++ {
				i := n % len(paths)
				r, _ := m.Lookup(Proc{Pid: 123}, "/", paths[i], Follow|WantGuest)
				if r != want[i] {
					t.Errorf("Lookup(%q) = %+v, want %+v", paths[i], r, want[i])
					return
				}
			}
		}()
	}
	for g := 0; g < 8; g++ {
		<-done
	}
}

// TestBindingDeref: a binding's guest path is dereferenced in the guest's view, as mount(2)
// does with its target (and proot without "!"): through /lib -> /usr/lib, onto a link's
// target, through an earlier binding; with NoDeref a link at Guest is itself the mount point.
func TestBindingDeref(t *testing.T) {
	for _, tc := range []struct {
		name  string
		binds []Binding
		want  []string // the bindings' guest paths after New
	}{
		{"plain", []Binding{{Host: "/opt/a", Guest: "/usr/lib/x"}}, []string{"/usr/lib/x"}},
		{"through a dir link", []Binding{{Host: "/opt/a", Guest: "/lib/x"}}, []string{"/usr/lib/x"}},
		{"onto a file link", []Binding{{Host: "/opt/a", Guest: "/file-link"}}, []string{"/etc/group"}},
		{"file link, no deref", []Binding{{Host: "/opt/a", Guest: "/file-link", NoDeref: true}}, []string{"/file-link"}},
		{"parent still derefs with NoDeref", []Binding{{Host: "/opt/a", Guest: "/lib/x", NoDeref: true}}, []string{"/lib/x"}},
		{"missing guest path", []Binding{{Host: "/opt/a", Guest: "/bin/new/deeper"}}, []string{"/usr/bin/new/deeper"}},
		{"link inside an earlier binding", []Binding{
			{Host: "/opt/a", Guest: "/mnt/a"},
			{Host: "/opt/b", Guest: "/mnt/a/l"},
		}, []string{"/mnt/a", "/mnt/a/inner"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fakeWorld()
			f.dir("/opt/a/inner", "/opt/b")
			f.link("/opt/a/l", "inner")
			m, err := New("/r", tc.binds, f)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			var got []string
			for _, b := range m.Bindings() {
				got = append(got, b.Guest)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("guest paths (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLiteral: Result.Literal says when the kernel, given the guest's own
// path from the host directory the walk started at, reaches Host itself.
func TestLiteral(t *testing.T) {
	m, _ := newFakeMapper(t)
	pr := Proc{Pid: 123, Tid: 124}
	tests := []struct {
		cwd, p  string
		flags   Flags
		literal bool
		host    string
	}{
		{"/usr", "bin/sh", Follow, true, "/r/usr/bin/sh"},
		{"/usr", "bin//sh", Follow, true, "/r/usr/bin/sh"},
		{"/usr", "./bin/sh", Follow, true, "/r/usr/bin/sh"},
		{"/usr", "bin/", 0, true, "/r/usr/bin/"},
		{"/usr", "bin/missing", Follow, true, "/r/usr/bin/missing"},
		{"/", "bin", 0, true, "/r/bin"},                     // a link not followed: the kernel does not either
		{"/", "dangling", Entry, true, "/r/dangling"},       // the entry itself
		{"/", "bin", Follow, false, "/r/usr/bin"},           // a link followed
		{"/", "bin/sh", 0, false, "/r/usr/bin/sh"},          // a link as an intermediate
		{"/usr", "bin/../lib", Follow, false, "/r/usr/lib"}, // ".." is the guest's
		{"/usr", "..", Entry, true, "/r/usr/.."},            // LAST_DOTDOT: the kernel refuses it itself
		{"/", "..", Follow, false, "/r"},                    // ".." at the guest root stays there
		{"/", "../etc", Follow, false, "/r/etc"},
		{"/", "sdcard/Download", Follow, false, "/storage/emulated/0/Download"}, // a mount point
		{"/sdcard", "Download/a.txt", Follow, true, "/storage/emulated/0/Download/a.txt"},
		{"/", "a/b", Follow, false, "/vdir"}, // a virtual directory
		{"/", "proc/self/status", Follow, false, "/proc/123/status"},
		{"/", "/usr/bin/sh", Follow, true, "/r/usr/bin/sh"},
	}
	for _, tc := range tests {
		r, err := m.Lookup(pr, tc.cwd, tc.p, tc.flags)
		if err != nil {
			t.Errorf("Lookup(%q, %q, %v): %v", tc.cwd, tc.p, tc.flags, err)
			continue
		}
		if r.Literal != tc.literal || r.Host != tc.host {
			t.Errorf("Lookup(%q, %q, %v) = %q literal %v, want %q literal %v", tc.cwd, tc.p, tc.flags, r.Host, r.Literal, tc.host, tc.literal)
		}
	}
}

// TestNewLinearInBindings: New's work grows linearly with the number of bindings. Each
// binding's guest path is dereferenced in the view of the bindings before it; doing that
// with a fresh Mapper per binding (which dereferenced all of its own bindings again) made
// 20 bindings take seconds and 25, what launchers pass, never finish. The count of host
// filesystem calls is exact, so this fails on a regression without timing anything.
func TestNewLinearInBindings(t *testing.T) {
	calls := func(n int) int {
		f := fakeWorld()
		f.dir("/opt/a")
		var binds []Binding
		for i := range n {
			// Launcher-like: nested, through a symlink (/lib -> /usr/lib), missing guest parents.
			binds = append(binds, Binding{Host: "/opt/a", Guest: fmt.Sprintf("/lib/b%d/c", i)})
		}
		f.resetCounts()
		m, err := New("/r", binds, f)
		if err != nil {
			t.Fatalf("New with %d bindings: %v", n, err)
		}
		if got := len(m.Bindings()); got != n {
			t.Fatalf("New with %d bindings kept %d", n, got)
		}
		if g := m.Bindings()[n-1].Guest; g != fmt.Sprintf("/usr/lib/b%d/c", n-1) {
			t.Fatalf("last binding's guest path %q, want it dereferenced through /lib", g)
		}
		l, r := f.counts()
		return l + r
	}
	small, big := calls(10), calls(10000)
	if per10, per10k := float64(small)/10, float64(big)/10000; per10k > 2*per10 {
		t.Errorf("host calls per binding: %.1f with 10 bindings, %.1f with 10,000 (want linear)", per10, per10k)
	}
}

// TestBindingDerefIncremental: a binding's guest path is resolved in the view of exactly the
// bindings before it: a later binding that replaces "/" or hides an earlier one at the same
// path changes where the bindings after it land, not where earlier ones landed.
func TestBindingDerefIncremental(t *testing.T) {
	f := fakeWorld()
	f.dir("/opt/a/inner", "/opt/b", "/opt/newroot/etc")
	f.link("/opt/a/l", "inner")
	f.link("/opt/newroot/lnk", "/etc")
	m, err := New("/r", []Binding{
		{Host: "/opt/a", Guest: "/lib/x"},       // through /lib -> /usr/lib
		{Host: "/opt/newroot", Guest: "/"},      // replaces the rootfs: no /lib link any more
		{Host: "/opt/b", Guest: "/lib/y"},       // so this stays /lib/y
		{Host: "/opt/b", Guest: "/lnk/z"},       // newroot's /lnk -> /etc
		{Host: "/opt/a", Guest: "/mnt"},         //
		{Host: "/opt/b", Guest: "/mnt/l/below"}, // through the link inside /opt/a
	}, f)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	var got []string
	for _, b := range m.Bindings() {
		got = append(got, b.Guest)
	}
	want := []string{"/usr/lib/x", "/", "/lib/y", "/etc/z", "/mnt", "/mnt/inner/below"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("guest paths (-want +got):\n%s", diff)
	}
}
