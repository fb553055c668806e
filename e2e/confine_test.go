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
