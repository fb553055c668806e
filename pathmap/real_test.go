package pathmap

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// TestResolveReal runs Resolve on a real tree with real symlinks, through
// the allocation-free system calls of the host FS.
func TestResolveReal(t *testing.T) {
	forBothModes(t, testResolveReal)
}

// forBothModes runs a test without and with the lookup cache.
func forBothModes(t *testing.T, f func(t *testing.T, opts ...Option)) {
	t.Run("uncached", func(t *testing.T) { f(t) })
	t.Run("cached", func(t *testing.T) { f(t, WithCache()) })
}

func testResolveReal(t *testing.T, opts ...Option) {
	rt := newRealTree(t)
	m, err := New(rt.root, rt.binds, nil, append(opts, WithVirtualDir(rt.vdir))...)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	R, B := rt.root, rt.base
	tests := []struct {
		cwd, p string
		flags  Flags
		want   want
	}{
		{"/", "/", Follow, want{Host: R}},
		{"/", "/bin/sh", Follow, want{Host: R + "/usr/bin/sh"}},
		{"/", "/bin", 0, want{Host: R + "/bin"}},
		{"/", "/bin/", 0, want{Host: R + "/usr/bin/"}},
		{"/", "/lib/libc.so", Follow, want{Host: R + "/usr/lib/libc.so"}},
		{"/", "/lib/..", Follow, want{Host: R + "/usr"}},
		{"/", "/etc/link-out/etc/group", Follow, want{Host: R + "/etc/group"}},
		{"/", "/dangling", Follow, want{Host: R + "/nonexistent"}},
		{"/", "/dangling-dir", Follow, want{Host: R + "/nonexistent/"}},
		{"/", "/dangling/x", Follow, want{Err: "ENOENT"}},
		{"/", "/loop1", Follow, want{Err: "ELOOP"}},
		{"/", "/c0", Follow, want{Host: R + "/etc/group"}},
		{"/", "/d0", Follow, want{Err: "ELOOP"}},
		{"/", "/up/usr/lib/up2/etc/group", Follow, want{Host: R + "/etc/group"}},
		{"/", "/to-sdcard/a.txt", Follow, want{Host: B + "/sd/Download/a.txt"}},
		{"/", "/to-sdcard-rel", 0, want{Host: R + "/to-sdcard-rel"}},
		{"/", "/to-sdcard-rel", Follow, want{Host: B + "/sd/Download/"}},
		{"/", "/sdcard/escape/etc/group", Follow, want{Host: R + "/etc/group"}},
		{"/", "/sdcard/rel-up", Follow, want{Host: R}},
		{"/", "/sdcard/to-lib/libc.so", Follow, want{Host: R + "/usr/lib/libc.so"}},
		{"/", "/sdcard/Download/to-group", Follow, want{Host: R + "/etc/group"}},
		{"/", "/to-dev-null", Follow, want{Host: "/dev/null"}},
		{"/", "/mnt/inner/f", Follow, want{Host: B + "/optB/f"}},
		{"/", "/mnt/inner/up", Follow, want{Host: R}},
		{"/", "/to-mnt-inner", Follow, want{Host: B + "/optB/f"}},
		{"/", "/a/b", Follow, want{Host: rt.vdir, Virtual: true}},
		{"/", "/a/b/c/f", Follow, want{Host: B + "/datax/f"}},
		{"/", "/a/b/c/up/group", Follow, want{Host: R + "/etc/group"}},
		{"/", "/to-virtual-dir/c/../c/f", Follow, want{Host: B + "/datax/f"}},
		{"/", "/etc/passwd", Follow, want{Host: B + "/hostfile", MountPoint: true}},
		{"/", "/etc/resolv.conf", 0, want{Host: B + "/resolv", MountPoint: true}},
		{"/", "/to-libalias", Follow, want{Host: R + "/usr/lib/libc.so"}},
		{"/", "/libalias/up2", Follow, want{Host: R}},
		{"/", "/to-file-slash", Follow, want{Err: "ENOTDIR"}},
		{"/", "/to-host-escape/group", Follow, want{Host: R + "/etc/group"}},
		{"/home/u", "rel/libc.so", Follow, want{Host: R + "/usr/lib/libc.so"}},
		{"/home/u", "dotdot-link/../..", Follow, want{Host: R}},
		{"/", rt.deep, Follow, want{Host: R + rt.deep}},
		{"/", rt.deep + "/", Follow, want{Err: "ENOTDIR"}},
		{"/", "/bin/", Entry, want{Host: R + "/bin/"}},
	}
	for _, tc := range append(tests, tests...) { // the second time from the cache, if any
		r, err := m.Lookup(Proc{}, tc.cwd, tc.p, tc.flags)
		got := want{Host: r.Host, Err: errName(err), Magic: r.Magic, MountPoint: r.MountPoint, Virtual: r.Virtual}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Lookup(%q, %q, %v) mismatch (-want +got):\n%s", tc.cwd, tc.p, tc.flags, diff)
		}
	}
}

// TestResolveRealProc checks the procfs rules on the real /proc, with this
// process as the tracee.
func TestResolveRealProc(t *testing.T) {
	forBothModes(t, testResolveRealProc)
}

func testResolveRealProc(t *testing.T, opts ...Option) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	m, err := New("/", nil, nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	pid, tid := os.Getpid(), unix.Gettid()
	pr := Proc{Pid: pid, Tid: tid}
	P := "/proc/" + strconv.Itoa(pid)
	f, err := os.Open("/usr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fd := strconv.Itoa(int(f.Fd()))
	tests := []struct {
		p      string
		follow bool
		want   want
	}{
		{"/proc/self/status", true, want{Host: P + "/status"}},
		{"/proc/self", false, want{Host: "/proc/self"}},
		{"/proc/self", true, want{Host: P}},
		{"/proc/thread-self/stat", true, want{Host: P + "/task/" + strconv.Itoa(tid) + "/stat"}},
		{"/proc/mounts", true, want{Host: P + "/mounts"}},
		{"/proc/net/dev", true, want{Host: P + "/net/dev"}},
		{"/proc/self/exe", true, want{Host: P + "/exe", Magic: true}},
		{"/proc/self/exe", false, want{Host: P + "/exe"}},
		{"/proc/self/fd/" + fd + "/bin/../lib", true, want{Host: P + "/fd/" + fd + "/bin/../lib", Magic: true}},
		{"/proc/self/cwd/", false, want{Host: P + "/cwd/", Magic: true}},
		{"/proc/self/ns/net", true, want{Host: P + "/ns/net", Magic: true}},
		{"/proc/self/task/" + strconv.Itoa(tid) + "/root", true, want{Host: P + "/task/" + strconv.Itoa(tid) + "/root", Magic: true}},
	}
	for _, tc := range append(tests, tests...) {
		r, err := m.Lookup(pr, "/", tc.p, map[bool]Flags{true: Follow, false: 0}[tc.follow])
		got := want{Host: r.Host, Err: errName(err), Magic: r.Magic, MountPoint: r.MountPoint, Virtual: r.Virtual}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Lookup(%q, %v) mismatch (-want +got):\n%s", tc.p, tc.follow, diff)
			continue
		}
		if r.Magic != IsProcMagic(r.Host) && !strings.HasSuffix(tc.p, "exe") {
			t.Errorf("IsProcMagic(%q) = %v", r.Host, !r.Magic)
		}
		// The kernel agrees on what the host path names.
		var a, b unix.Stat_t
		stat := unix.Stat
		if !tc.follow {
			stat = unix.Lstat
		}
		e1, e2 := stat(tc.p, &a), stat(r.Host, &b)
		if e1 != e2 || a.Ino != b.Ino || a.Dev != b.Dev {
			t.Errorf("%q: stat %v ino %d dev %d; host %q: %v ino %d dev %d", tc.p, e1, a.Ino, a.Dev, r.Host, e2, b.Ino, b.Dev)
		}
	}
	// A component too long for procfs is ENOENT there, not ENAMETOOLONG:
	// Resolve leaves it to the filesystem.
	if _, err := m.Resolve(pr, "/", "/proc/"+strings.Repeat("9", 300)+"/x", true); err != syscall.ENOENT {
		t.Errorf("long procfs component: %v, want ENOENT", err)
	}
}

// TestDeepCwd: below a cwd deeper than PATH_MAX, reached by relative
// chdirs as the kernel allows, a relative walk makes its system calls
// through /proc/<tid>/cwd (Proc.KernelCwd) and finds a symlink there;
// without KernelCwd the host path is too long for the kernel.
func TestDeepCwd(t *testing.T) {
	root := t.TempDir()
	back, err := unix.Open(".", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(back)
	defer unix.Fchdir(back) // the cwd is the whole process's
	if err := unix.Chdir(root); err != nil {
		t.Fatal(err)
	}
	name := strings.Repeat("d", 200)
	guest := "/"
	for len(root)+len(guest) < PathMax+400 {
		if err := unix.Mkdir(name, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := unix.Chdir(name); err != nil {
			t.Fatal(err)
		}
		guest += name + "/"
	}
	guest = strings.TrimSuffix(guest, "/")
	if err := os.Mkdir("sub", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", "link"); err != nil {
		t.Fatal(err)
	}
	for _, opts := range [][]Option{nil, {WithCache()}} {
		m, err := New(root, nil, nil, opts...)
		if err != nil {
			t.Fatal(err)
		}
		pr := Proc{Pid: os.Getpid(), KernelCwd: true}
		r, err := m.Lookup(pr, guest, "link/f", Follow|WantGuest)
		if err != nil || r.Literal || r.Guest != guest+"/sub/f" {
			t.Errorf("KernelCwd: Lookup(link/f) = guest %.40q... literal %v, %v; want %.40q..., not literal", r.Guest, r.Literal, err, guest+"/sub/f")
		}
		r, err = m.Lookup(pr, guest, "sub/f", Follow)
		if err != nil || !r.Literal {
			t.Errorf("KernelCwd: Lookup(sub/f) literal %v, %v; want literal", r.Literal, err)
		}
		pr.KernelCwd = false
		if r, err := m.Lookup(pr, guest, "link/f", Follow); err != nil || !strings.HasPrefix(r.Rel, "/proc/") {
			t.Errorf("without KernelCwd: Lookup(link/f) = Rel %.40q, %v; want one through an anchor", r.Rel, err)
		}
		m.Close()
	}
}
