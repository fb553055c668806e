//go:build linux

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// confineProbe makes raw syscalls with ctypes, by native number, and prints each one's
// result and errno name; then it starts a thread and a subprocess (glibc's clone3 falls back
// to clone). argv: the numbers as name=nr, the host path of a file with an xattr, a host
// directory and a guest directory to mount on.
const confineProbe = `
import ctypes, errno, os, subprocess, sys, threading
nr = dict(a.split("=") for a in sys.argv[1].split(","))
host_file, host_dir, guest_dir = sys.argv[2:5]
libc = ctypes.CDLL(None, use_errno=True)
L = ctypes.c_long
def call(label, name, *args):
    ctypes.set_errno(0)
    r = libc.syscall(L(int(nr.get(name, name))), *args)
    e = ctypes.get_errno() if r == -1 else 0
    print(label, r if r == -1 else "ok", errno.errorcode.get(e, e) if e else "")
call("unknown-1000", "1000", L(0), L(0))
call("unknown-0x3ff", "1023")
val = ctypes.create_string_buffer(64)
args = (ctypes.c_uint64 * 2)(ctypes.addressof(val), 64)  # struct xattr_args: value, size, flags
call("getxattrat-host", "getxattrat", L(-100), ctypes.c_char_p(host_file.encode()), L(0),
     ctypes.c_char_p(b"user.droidroot"), ctypes.byref(args), L(16))
attr = ctypes.create_string_buffer(24)  # struct file_attr
call("file_getattr-host", "468", L(-100), ctypes.c_char_p(host_file.encode()), attr, L(24), L(0))
for label, target in (("mount-guest", guest_dir), ("mount-host", host_dir)):
    call(label, "mount", ctypes.c_char_p(b"none"), ctypes.c_char_p(target.encode()),
         ctypes.c_char_p(b"tmpfs"), L(0), ctypes.c_char_p(None))
call("open_tree", "open_tree", L(-100), ctypes.c_char_p(b"/"), L(1))  # OPEN_TREE_CLONE
call("fsopen", "fsopen", ctypes.c_char_p(b"tmpfs"), L(0))
params = ctypes.create_string_buffer(120)
call("io_uring_setup", "io_uring_setup", L(8), params)
call("clone3", "clone3", ctypes.c_void_p(None), L(0))
allow = (ctypes.c_uint64 * 1)(0x7fff0000 << 32 | 0x06)  # BPF_RET|BPF_K SECCOMP_RET_ALLOW
prog = (ctypes.c_uint64 * 2)(1, ctypes.addressof(allow))  # struct sock_fprog
call("seccomp-listener", "seccomp", L(1), L(8), prog)  # SET_MODE_FILTER, NEW_LISTENER
out = []
t = threading.Thread(target=lambda: out.append(os.getpid()))
t.start(); t.join()
print("thread", out == [os.getpid()])
print("subprocess", subprocess.run(["sh", "-c", "echo sub"], capture_output=True).stdout.decode().strip())
`

// TestConfinement: the calls droidroot cannot translate are refused with the kernel's errno
// for an unprivileged caller (mount family: EPERM) or ENOSYS (io_uring, the xattr *at calls,
// clone3, and every number droidroot does not know, such as file_getattr, 468, which Linux
// 6.17 added after the syscall tables droidroot knows): a host file's xattr stays unread, the
// host's mount table unchanged, and threads and subprocesses still work. Also in ptrace-only
// mode (PROOT_NO_SECCOMP=1), where the tracer answers them instead of the filter.
func TestConfinement(t *testing.T) {
	needRoot(t)
	g := debianGuest(t)
	mountNr := map[string]int{"amd64": 165, "arm64": 40}[runtime.GOARCH]
	// The numbers from 424 up are the same on every architecture.
	seccompNr := map[string]int{"amd64": 317, "arm64": 277}[runtime.GOARCH]
	nrs := fmt.Sprintf("mount=%d,open_tree=428,fsopen=430,io_uring_setup=425,clone3=435,getxattrat=464,seccomp=%d", mountNr, seccompNr)

	host := t.TempDir() // outside the rootfs
	hostFile := filepath.Join(host, "secret")
	if err := os.WriteFile(hostFile, []byte("secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(hostFile, "user.droidroot", []byte("host"), 0); err != nil {
		t.Logf("no user xattr on the host's %s (%v): getxattrat is checked for its errno only", host, err)
	}
	hostDir := filepath.Join(host, "mnt")
	if err := os.Mkdir(hostDir, 0o755); err != nil {
		t.Fatal(err)
	}
	guestTmp := strings.TrimSuffix(g.Binds[3], ":/tmp")
	if err := os.Mkdir(filepath.Join(guestTmp, "m"), 0o755); err != nil {
		t.Fatal(err)
	}
	mountinfo := func() string {
		b, err := os.ReadFile("/proc/self/mountinfo")
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	before := mountinfo()

	want := strings.Join([]string{
		"unknown-1000 -1 ENOSYS",
		"unknown-0x3ff -1 ENOSYS",
		"getxattrat-host -1 ENOSYS",
		"file_getattr-host -1 ENOSYS",
		"mount-guest -1 EPERM",
		"mount-host -1 EPERM",
		"open_tree -1 EPERM",
		"fsopen -1 EPERM",
		"io_uring_setup -1 ENOSYS",
		"clone3 -1 ENOSYS",
		"seccomp-listener -1 EBUSY",
		"thread True",
		"subprocess sub",
	}, "\n") + "\n"
	for _, mode := range []struct{ name, env string }{{"seccomp", ""}, {"ptrace-only", "PROOT_NO_SECCOMP=1"}} {
		t.Run(mode.name, func(t *testing.T) {
			argv := droidrootArgs(droidrootBin(t), g, "python3", "-c", confineProbe, nrs, hostFile, hostDir, "/tmp/m")
			if mode.env != "" {
				argv = append([]string{"env", mode.env}, argv...)
			}
			res := run(t, "", argv...)
			if res.Code != 0 || res.Stdout != want {
				t.Errorf("got %s\nwant exit 0, stdout:\n%s", res, want)
			}
			after := mountinfo()
			for _, dir := range []string{hostDir, filepath.Join(guestTmp, "m")} {
				if strings.Contains(after, dir) && !strings.Contains(before, dir) {
					t.Errorf("the host's mount table has a new mount on %s", dir)
					_ = unix.Unmount(dir, unix.MNT_DETACH)
				}
			}
		})
	}
}

// magicProbe walks through procfs magic links the ways a guest can name them. $1 is the host
// path of a file outside the rootfs. "same" means the path names the guest's "/" (same
// listing and inode), "host" that a host file outside the rootfs was reached.
const magicProbe = `
exec 3</ 4</tmp
root=$(ls -a /); ino=$(stat -c %i /)
same() { if [ "$(ls -a "$2" 2>&1)" = "$root" ] && [ "$(stat -c %i "$2/")" = "$ino" ]; then echo "$1 same"; else echo "$1 differs"; fi; }
host() { if cat "$2" >/dev/null 2>&1; then echo "$1 host"; else echo "$1 no"; fi; }
same fd-dotdot /proc/self/fd/3/..
same fd-dotdot-2 /proc/self/fd/4/../..
same dev-fd-dotdot /dev/fd/3/..
same thread-self /proc/thread-self/fd/3/..
same ppid-root /proc/$PPID/root
same ppid-root-dotdot /proc/$PPID/root/..
same ppid-cwd /proc/$PPID/cwd
host ppid-root-file /proc/$PPID/root$1
host ppid-root-dotdot-file /proc/$PPID/root/../..$1
host self-root-file /proc/self/root$1
echo "readlink ppid root $(readlink /proc/$PPID/root)"
ln -s ../proc/self/root/.. /tmp/up; ln -s /proc/self/fd/3/.. /tmp/fdup
cd /tmp
same rel-symlink up
same rel-symlink-fd fdup
same rel-symlink-fd-dotdot fdup/..
cd -P /proc/self/fd/3/..; same chdir-fd .
cd -P /proc/$PPID/root; same chdir-ppid-root .
echo "stdin $(echo piped | cat /dev/stdin) $(cat /proc/self/fd/0 </etc/hostname >/dev/null && echo ok)"
cat /dev/stdin/.. 2>/dev/null || echo "stdin dotdot refused"
`

// TestMagicLinks: a procfs magic link (/proc/<pid>/{root,cwd,fd/N}, /proc/thread-self/fd/N,
// /dev/fd/N, /dev/stdin) anywhere in a path, reached directly, through a symlink or by a
// relative path, leads where it would in a chroot: ".." after the guest's "/" stays there; and
// /proc/<pid>/root of droidroot itself (the first guest process's parent, outside the guest
// tree) is the guest's "/", as under proot, never the host's. Busybox (static, every
// architecture) and Debian (glibc, with the fast path library).
func TestMagicLinks(t *testing.T) {
	needRoot(t)
	canary := filepath.Join(t.TempDir(), "canary") // outside every rootfs
	if err := os.WriteFile(canary, []byte("host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"fd-dotdot same", "fd-dotdot-2 same", "dev-fd-dotdot same", "thread-self same",
		"ppid-root same", "ppid-root-dotdot same", "ppid-cwd same",
		"ppid-root-file no", "ppid-root-dotdot-file no", "self-root-file no",
		"readlink ppid root /",
		"rel-symlink same", "rel-symlink-fd same", "rel-symlink-fd-dotdot same",
		"chdir-fd same", "chdir-ppid-root same",
		"stdin piped ok", "stdin dotdot refused",
	}, "\n") + "\n"
	for _, gc := range []struct {
		name  string
		guest func(testing.TB) guest
	}{{"busybox", busyboxGuest}, {"debian", debianGuest}} {
		t.Run(gc.name, func(t *testing.T) {
			g := gc.guest(t)
			// proot launchers' binds: /dev/fd and /dev/stdin are magic links whatever the
			// host's /dev holds (the arm64 test VM's devtmpfs has neither); "!" keeps them
			// at /dev/fd and /dev/stdin where the host's are symlinks.
			g.Binds = append(g.Binds, "/proc/self/fd:/dev/fd!", "/proc/self/fd/0:/dev/stdin!")
			res := run(t, "", droidrootArgs(droidrootBin(t), g, "sh", "-c", magicProbe, "sh", canary)...)
			if res.Code != 0 || res.Stdout != want {
				t.Errorf("got %s\nwant exit 0, stdout:\n%s", res, want)
			}
		})
	}
}

// TestCloneUntraced: clone(CLONE_UNTRACED), through glibc's clone() and as a raw syscall,
// gives a child droidroot traces (test/progs/untraced.c): its path calls are translated (it
// reads the guest's /etc/hostname), its TracerPid shows no tracer (as in a chroot: droidroot's
// tracing is not shown, docs/ptrace.md), and its guest parent's seize of it is
// emulated (docs/ptrace.md: droidroot stays its real tracer, its calls stay translated; the
// seized child is then killed), or refused (EPERM) with DROIDROOT_GUEST_PTRACE=0. Before, the
// child ran untraced: ENOSYS for every traced call under the filter (and the host's files
// without one, PROOT_NO_SECCOMP=1), seizable by the guest for real, which could then let its
// calls through. In both modes, static and dynamic.
func TestCloneUntraced(t *testing.T) {
	needRoot(t)
	progs := progsDir(t, "untraced")
	var want strings.Builder
	for _, way := range []string{"glibc-clone", "raw-clone"} {
		if os.Getenv("DROIDROOT_GUEST_PTRACE") == "0" {
			fmt.Fprintf(&want, "%[1]s hostname droidroot-busybox\n%[1]s tracerpid 0\n%[1]s seize EPERM\n%[1]s exit 0\n", way)
		} else {
			fmt.Fprintf(&want, "%[1]s hostname droidroot-busybox\n%[1]s tracerpid 0\n%[1]s seize ok\n%[1]s signal 9\n", way)
		}
	}
	for _, prog := range []string{"untraced", "untraced.dyn"} {
		for _, mode := range []struct{ name, env string }{{"seccomp", ""}, {"ptrace-only", "PROOT_NO_SECCOMP=1"}} {
			t.Run(prog+"/"+mode.name, func(t *testing.T) {
				g := busyboxGuest(t)
				g.Binds = append(g.Binds, progs+":/mnt/b2")
				argv := droidrootArgs(droidrootBin(t), g, "/mnt/b2/"+prog)
				if mode.env != "" {
					argv = append([]string{"env", mode.env}, argv...)
				}
				res := run(t, "", argv...)
				if res.Code != 0 || res.Stdout != want.String() {
					t.Errorf("got %s\nwant exit 0, stdout:\n%s", res, want.String())
				}
			})
		}
	}
}
