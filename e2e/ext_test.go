//go:build linux

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// runExt runs cmd in g under droidroot with extra options (after "run") and extra
// environment variables (through env(1), on top of the guest environment).
func runExt(t testing.TB, env, opts []string, g guest, stdin string, cmd ...string) result {
	t.Helper()
	argv := droidrootArgs(droidrootBin(t), g, cmd...)
	argv = append(append(append([]string{}, argv[:2]...), opts...), argv[2:]...)
	if len(env) > 0 {
		argv = append(append([]string{"/usr/bin/env"}, env...), argv...)
	}
	return run(t, stdin, argv...)
}

// l2sGuest is the debian rootfs with a fresh writable host directory at /w (returned too).
func l2sGuest(t testing.TB) (guest, string) {
	t.Helper()
	root := rootfs(t, "debian")
	w := filepath.Join(t.TempDir(), "w")
	makeTree(t, w, tree{})
	return guest{Root: root, Binds: []string{"/proc", "/dev", w + ":/w"}, Cwd: "/w"}, w
}

// failLink is the test switch that makes every real link fail with EPERM, as on Android.
var failLink = []string{"DROIDROOT_FAIL_LINK=1"}

// hardLinkScript exercises hard-link semantics through shell tools: shared content and
// writes, st_nlink, one inode, unlink of one name, rename of names (also across
// directories), d_type (find -type f), and listings free of droidroot's files.
const hardLinkScript = `set -e
echo hi >a; ln a b; echo x >>b; cat a
stat -c '%n %h %F' a b
[ "$(stat -c %i a)" = "$(stat -c %i b)" ] && echo same-inode
ls -li | awk 'NR>1 {print $1==i0 || i0=="" ? "ok" : "differ", $3, $NF; if (i0=="") i0=$1}'
readlink b || echo not-a-symlink
exec 3<b; readlink /proc/self/fd/3; exec 3<&-
python3 -c 'import os, stat; print(stat.S_ISREG(os.lstat("b").st_mode), os.lstat("b").st_nlink, sorted(os.listdir(".")))'
rm a; cat b; stat -c %h b
ln b c; mv c d; mkdir sub; ln b sub/e; mv sub/e sub/f; echo y >>sub/f; cat d
stat -c '%n %h' b d sub/f
find . -type f | sort
python3 -c 'import os; os.rename("d", "b")'; stat -c '%n %h' b d sub/f; rm d; stat -c '%n %h' b sub/f
for i in 1 2 3 4 5 6 7 8 9 10 11 12; do ln b n$i; done; stat -c %h b; rm n*
ls -A . sub
rm b sub/f; ls -A . sub; rmdir sub; ls -A
mkdir -p d1/d2; echo q >d1/d2/f; ln d1/d2/f g; mv d1 d3; cat d3/d2/f; rm -r d3; cat g; stat -c %h g; rm g; ls -A
echo z >x; ln x y; ln -s y s; ln -L s h; stat -c %h x h; ln nothere n2 2>/dev/null || echo enoent; ln x nodir/n 2>/dev/null || echo enoent; rm x y s h; cp /usr/bin/readlink rl; ln rl rl2; ./rl2 /proc/self/exe; rm rl rl2; ls -A
echo w >e1; echo v >e2; ln e1 e2 2>/dev/null || echo eexist; ln e1 nodir/n 2>/dev/null || echo enoent; ln e1 e1 2>/dev/null || echo eexist
stat -c '%n %h %F' e1 e2; cat e1 e2; ls -A; rm e1 e2; ls -A
`

const hardLinkOut = `hi
x
a 2 regular file
b 2 regular file
same-inode
ok 2 a
ok 2 b
not-a-symlink
/w/b
True 2 ['a', 'b']
hi
x
1
hi
x
y
b 3
d 3
sub/f 3
./b
./d
./sub/f
b 3
d 3
sub/f 3
b 2
sub/f 2
14
.:
b
sub

sub:
f
.:
sub

sub:
q
q
1
3
3
enoent
enoent
/w/rl2
eexist
enoent
eexist
e1 1 regular file
e2 1 regular file
w
v
e1
e2
`

// TestLink2Symlink runs hard-link flows on a filesystem where link() fails (the test switch
// DROIDROOT_FAIL_LINK=1): with -l they behave as with real hard links (the kernel's answers,
// droidroot without the switch), without -l they fail.
func TestLink2Symlink(t *testing.T) {
	rootfs(t, "debian")
	gitScript := gitEnv + `set -e
git init -q -b main r; cd r; git config user.email t@e; git config user.name T
echo hi >f; git add f; git commit -qm one; echo 2 >>f; git commit -qam two
git gc -q; git count-objects -v | grep -E '^(count|in-pack)'
cd ..; git clone -q --local r r2; cd r2; git log --format='%H %s'; git fsck && echo fsck-ok`
	dpkgScript := `set -e
for v in 1 2; do mkdir -p p$v/DEBIAN p$v/opt/t
printf "Package: t\nVersion: $v\nArchitecture: all\nMaintainer: x <x@e>\nDescription: t\n" >p$v/DEBIAN/control
echo v$v >p$v/opt/t/file; dpkg-deb -Zgzip -b p$v t$v.deb >/dev/null; done
mkdir -p admin/updates admin/info inst; touch admin/status admin/available
D="dpkg --force-not-root --force-script-chrootless --root=/w/inst --admindir=/w/admin --log=/dev/null"
$D -i t1.deb >/dev/null; cat inst/opt/t/file; $D -i t2.deb >/dev/null; cat inst/opt/t/file
ls -A inst/opt/t; $D -s t | grep Version; ls admin | grep -c l2s || true`
	for _, tc := range []struct{ name, script, want string }{
		{"shell", hardLinkScript, hardLinkOut},
		{"git", gitScript, ""},
		{"dpkg", dpkgScript, "v1\nv2\nfile\nVersion: 2\n0\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The kernel's own hard links give the expected output.
			g, _ := l2sGuest(t)
			ref := runExt(t, nil, nil, g, "", "/bin/bash", "-c", tc.script)
			if ref.Code != 0 || (tc.want != "" && ref.Stdout != tc.want) {
				t.Fatalf("with real links: %s\nwant stdout:\n%s", ref, tc.want)
			}
			g, w := l2sGuest(t)
			res := runExt(t, failLink, []string{"-l"}, g, "", "/bin/bash", "-c", tc.script)
			if res.Code != 0 || res.Stdout != ref.Stdout {
				t.Errorf("-l with link() failing: %s\nwant stdout:\n%s", res, ref.Stdout)
			}
			if tc.name == "shell" {
				// Everything removed: no data or count file is left behind.
				// (The store at the root of the mount may stay, empty.)
				ents, _ := os.ReadDir(w)
				store, _ := os.ReadDir(filepath.Join(w, ".l2s"))
				if len(ents) > 1 || len(ents) == 1 && ents[0].Name() != ".l2s" || len(store) != 0 {
					t.Errorf("left in the directory: %v, in its store: %v", ents, store)
				}
			}
			if testing.Short() && tc.name != "shell" {
				return // -short (TCG): the shell flow shows that link() fails without -l
			}
			g, _ = l2sGuest(t)
			res = runExt(t, failLink, nil, g, "", "/bin/bash", "-c", tc.script)
			// (The exit status is the last process's, as proot's: check the output.)
			if res.Stdout == ref.Stdout || !strings.Contains(res.Stderr, "Operation not permitted") {
				t.Errorf("without -l, link() failing must make the flow fail with EPERM: %s", res)
			}
		})
	}
}

// TestLink2SymlinkL2SDir: PROOT_L2S_DIR holds the shared data, which the guest does not see.
func TestLink2SymlinkL2SDir(t *testing.T) {
	g, w := l2sGuest(t)
	l2sDir := filepath.Join(w, "store")
	makeTree(t, l2sDir, tree{})
	res := runExt(t, append(failLink, "PROOT_L2S_DIR="+l2sDir), []string{"-l"}, g, "",
		"/bin/sh", "-c", `mkdir d; echo a >d/f; ln d/f g; ls -A store d; cat g; stat -c %h d/f g`)
	if want := "d:\nf\n\nstore:\na\n2\n2\n"; res.Code != 0 || res.Stdout != want {
		t.Errorf("got %s\nwant stdout:\n%s", res, want)
	}
	ents, _ := os.ReadDir(l2sDir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if len(names) != 2 || !strings.HasPrefix(names[0], ".l2s.f.") {
		t.Errorf("PROOT_L2S_DIR holds %v, want the data file and its count", names)
	}
}

// TestProcStatusTracerPid: /proc/PID/status (and a thread's, through /proc/thread-self and
// task/) shows TracerPid 0 for an untraced process and its tracer's pid under a guest's strace,
// as in a chroot, where the kernel shows droidroot's (programs read it to tell whether a
// debugger is attached: Go's runtime tests skip theirs, anti-debugging checks refuse to run).
func TestProcStatusTracerPid(t *testing.T) {
	needRoot(t)
	g := debianGuest(t)
	const script = `t() { awk '/^TracerPid:/ {print $2}' "$1"; }
echo self $(t /proc/self/status) thread $(t /proc/thread-self/status) pid $(t /proc/$$/status) task $(t /proc/$$/task/$$/status)
strace -f -qq -e trace=none -o /dev/null sh -c 'tp=$(awk "/^TracerPid:/ {print \$2}" /proc/$$/status); [ "$tp" = "$PPID" ] && echo traced by the parent strace'
python3 -c 'import threading, os
def f(): print("thread", open("/proc/thread-self/status").read().split("TracerPid:")[1].split()[0])
th = threading.Thread(target=f); th.start(); th.join()'
`
	want := "self 0 thread 0 pid 0 task 0\ntraced by the parent strace\nthread 0\n"
	for _, r := range runners {
		if res := r.Run(t, g, "", "/bin/sh", "-c", script); res.Code != 0 || res.Stdout != want {
			t.Errorf("%s: %s\nwant stdout:\n%s", r.Name, res, want)
		}
	}
	// The ids after set*id calls, which Android's policy makes droidroot emulate (the
	// kernel's file would show the real ones, unchanged): as the chroot's kernel shows them.
	const ids = `import os
def show():
    for l in open("/proc/self/status"):
        if l.split(":")[0] in ("Uid", "Gid", "Groups", "CapEff"): print(repr(l))
os.setgroups([4, 27]); os.setegid(5); os.setresuid(0, 7, 0); show()
os.setresuid(7, 7, 7); show()`
	chroot := viaChroot(t, g, "", "/usr/bin/python3", "-c", ids)
	if chroot.Code != 0 || !strings.Contains(chroot.Stdout, `'Gid:\t0\t5\t0\t5\n'`) {
		t.Fatalf("chroot: %s", chroot)
	}
	for _, policy := range []string{"off", "16"} {
		if res := viaDroidrootPolicy(t, g, policy, "", "/usr/bin/python3", "-c", ids); res.Code != 0 || res.Stdout != chroot.Stdout {
			t.Errorf("droidroot under policy %s: %s\nwant stdout (the chroot's):\n%s", policy, res, chroot.Stdout)
		}
	}
}

// TestProcMountsAndShm: single-file binds over /proc entries, the guest's mount table in
// /proc/self/mountinfo, /proc/PID/mountinfo and /proc/mounts (the rootfs as "/", each bind at
// its guest path, host mounts under a bound directory), and statfs/fstatfs of /dev/shm
// answering TMPFS_MAGIC although the bind source is an ordinary directory.
func TestProcMountsAndShm(t *testing.T) {
	root := rootfs(t, "debian")
	dir := t.TempDir()
	makeTree(t, dir, tree{"stat": "cpu  1 2 3 4\n", "version": "Linux version 9.9.9-fake\n", "shm/x": "", "tmp/": ""})
	g := guest{Root: root, Binds: []string{"/proc", "/dev", dir + "/tmp:/tmp", dir + "/shm:/dev/shm",
		dir + "/stat:/proc/stat", dir + "/version:/proc/version"}, Cwd: "/"}
	script := `cat /proc/stat /proc/version; stat -c '%s %F' /proc/stat /proc/version
python3 -c 'print(open("/proc/version").read(), end="")'
awk '{print $5}' /proc/self/mountinfo | grep -xE '/|/proc|/dev|/dev/pts|/tmp|/dev/shm|/proc/stat|/proc/version' | sort -u | tr '\n' ' '; echo
[ "$(cat /proc/$$/mountinfo)" = "$(cat /proc/self/mountinfo)" ] && echo pid-same
awk '$2 == "/" || $2 == "/dev/shm" {print $2, $3}' /proc/mounts
awk '{print $2}' /proc/mounts | grep -c "^$(dirname ` + dir + `)" || true
awk '$5 == "/proc/version" {print $4}' /proc/self/mountinfo
stat -f -c %T /dev/shm /dev/shm/x /tmp | tr '\n' ' '; echo
python3 -c '
import ctypes, os, struct
libc = ctypes.CDLL(None, use_errno=True)
def fstype(fd):
    buf = ctypes.create_string_buffer(256)
    assert libc.fstatfs(fd, buf) == 0
    return hex(struct.unpack_from("q", buf.raw)[0])
print(fstype(os.open("/dev/shm/x", os.O_RDONLY)), fstype(os.open("/dev/shm", os.O_RDONLY)), fstype(os.open("/tmp", os.O_RDONLY)) != "0x1021994")
fd = libc.shm_open(b"/t1", os.O_CREAT | os.O_RDWR, 0o600)
print("shm_open", fd >= 0, os.path.exists("/dev/shm/t1")); libc.shm_unlink(b"/t1")'
`
	res := viaDroidroot(t, g, "", "/bin/bash", "-c", script)
	want := "cpu  1 2 3 4\nLinux version 9.9.9-fake\n13 regular file\n25 regular file\nLinux version 9.9.9-fake\n" +
		"/ /dev /dev/pts /dev/shm /proc /proc/stat /proc/version /tmp \npid-same\n" +
		"/ " + hostFSType(t, root) + "\n/dev/shm tmpfs\n0\n" + mountRelative(t, dir+"/version") + "\n" +
		"tmpfs tmpfs " + statfsName(t, dir) + " \n0x1021994 0x1021994 " + pyBool(statfsName(t, dir) != "tmpfs") + "\nshm_open True True\n"
	if res.Code != 0 || res.Stdout != want {
		t.Errorf("got %s\nwant stdout:\n%s", res, want)
	}
	// /etc/mtab is a link to /proc/self/mounts (here made in /tmp, the rootfs has none).
	res = viaDroidroot(t, g, "", "/bin/sh", "-c", `ln -s ../proc/self/mounts /tmp/mtab; awk '$2 == "/dev/shm" || $2 == "/tmp" {print $2}' /tmp/mtab; df /dev/shm | awk 'NR == 2 {print $NF}'`)
	if want := "/tmp\n/dev/shm\n/dev/shm\n"; res.Code != 0 || res.Stdout != want {
		t.Errorf("mtab link: got %s\nwant stdout:\n%s", res, want)
	}
	// A real chroot with real binds has the same mount points (but for "/", which is no
	// mount point there) and file system types, /dev/shm apart.
	if os.Geteuid() != 0 {
		return
	}
	points := `awk '$5 != "/" {print $5, $5 == "/dev/shm" ? "-" : $(NF-2)}' /proc/self/mountinfo | sort -u`
	oracle := viaChroot(t, g, "", "/bin/sh", "-c", points)
	got := viaDroidroot(t, g, "", "/bin/sh", "-c", points)
	if oracle.Code != 0 || got.Stdout != oracle.Stdout {
		t.Errorf("mount points and types differ from the chroot's:\ndroidroot: %s\nchroot: %s", got, oracle)
	}
}

// hostFSType is the file system type of the host mount holding path.
// mountRelative is path as mountinfo's root field shows it: relative to the root of the
// host mount holding it (on a host whose /tmp is a tmpfs, /tmp/x is /x).
func mountRelative(t testing.TB, path string) string {
	t.Helper()
	mp := hostMount(t, path)
	if mp == "/" {
		return path
	}
	return strings.TrimPrefix(path, mp)
}

// pyBool is how python prints b.
func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// hostMount is the mount point of the host mount holding path.
func hostMount(t testing.TB, path string) string {
	t.Helper()
	mp, _ := hostMountOf(t, path)
	return mp
}

// hostFSType is the filesystem type of the host mount holding path.
func hostFSType(t testing.TB, path string) string {
	t.Helper()
	_, fstype := hostMountOf(t, path)
	return fstype
}

// hostMountOf finds the mount holding path: the longest mount point that is a prefix of it,
// the last one mounted on a tie (what findmnt -T says, without needing findmnt on the host).
// It returns its mount point ("/" if none matched) and filesystem type.
func hostMountOf(t testing.TB, path string) (mountPoint, fstype string) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	path, _ = filepath.EvalSymlinks(path)
	mountPoint = "/"
	best := -1
	for _, line := range strings.Split(string(b), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 1 {
			continue
		}
		mp := strings.ReplaceAll(f[4], "\\040", " ")
		if (path == mp || mp == "/" || strings.HasPrefix(path, mp+"/")) && len(mp) >= best {
			best, mountPoint, fstype = len(mp), mp, g[0]
		}
	}
	return mountPoint, fstype
}

// statfsName is what stat -f -c %T says for host path.
func statfsName(t testing.TB, path string) string {
	t.Helper()
	return strings.TrimSpace(run(t, "", "stat", "-f", "-c", "%T", path).Stdout)
}

// portScript serves TCP on 127.0.0.1:871 and UDP on [::1]:999, connects and sends to those
// ports, and prints the ports the sockets really got.
const portScript = `python3 -c '
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 871)); s.listen(1)
c = socket.create_connection(("127.0.0.1", 871)); a, _ = s.accept()
c.sendall(b"tcp-ok"); print(s.getsockname()[1], a.recv(10).decode(), c.getpeername()[1])
u = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); u.bind(("::1", 999))
v = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); v.sendto(b"udp-ok", ("::1", 999))
print(u.getsockname()[1], u.recv(10).decode())
h = socket.socket(); h.bind(("127.0.0.1", 0)); print(h.getsockname()[1] != 0)
'`

// TestPortShift: with -p, binds to ports below 1024 land 2000 higher, and connect/sendto to
// loopback reach them; without -p (root here) the ports are the guest's.
func TestPortShift(t *testing.T) {
	root := rootfs(t, "debian")
	g := guest{Root: root, Binds: []string{"/proc", "/dev"}}
	res := runExt(t, nil, []string{"-p"}, g, "", "/bin/sh", "-c", portScript)
	if want := "2871 tcp-ok 2871\n2999 udp-ok\nTrue\n"; res.Code != 0 || res.Stdout != want {
		t.Errorf("-p: got %s\nwant stdout:\n%s", res, want)
	}
	if os.Geteuid() == 0 {
		res = runExt(t, nil, nil, g, "", "/bin/sh", "-c", portScript)
		if want := "871 tcp-ok 871\n999 udp-ok\nTrue\n"; res.Code != 0 || res.Stdout != want {
			t.Errorf("without -p: got %s\nwant stdout:\n%s", res, want)
		}
	}
}

// TestLstatLinkSize: with -L, lstat's st_size of a symlink is the length of what readlink
// gives the guest (the kernel's magic links report 0); ordinary symlinks are unchanged.
func TestLstatLinkSize(t *testing.T) {
	g, _ := l2sGuest(t)
	script := `ln -s /usr/bin/env e; stat -c %s e /proc/self/exe; python3 -c '
import os
print(os.lstat("/proc/self/exe").st_size == len(os.readlink("/proc/self/exe")), os.lstat("/proc/self/exe").st_size > 0)'`
	res := runExt(t, nil, []string{"-L"}, g, "", "/bin/sh", "-c", script)
	if want := "12\n13\nTrue True\n"; res.Code != 0 || res.Stdout != want {
		t.Errorf("-L: got %s\nwant stdout:\n%s", res, want)
	}
	g, _ = l2sGuest(t)
	res = runExt(t, nil, nil, g, "", "/bin/sh", "-c", script)
	if want := "12\n0\nFalse False\n"; res.Code != 0 || res.Stdout != want {
		t.Errorf("without -L: got %s\nwant stdout:\n%s", res, want)
	}
}

// TestHideOwnFiles: with -H, listings leave out ".proot*" names and droidroot's own files in
// PROOT_TMP_DIR (the loader, ...), also when a whole getdents batch is hidden.
func TestHideOwnFiles(t *testing.T) {
	g, w := l2sGuest(t)
	files := tree{"zz": "", ".prootx": "", ".proot.l2s.y": "", "tmpd/": ""}
	for i := 0; i < 600; i++ {
		files[fmt.Sprintf("many/.proot-%0200d", i)] = ""
	}
	files["many/visible"] = ""
	makeTree(t, w, files)
	env := []string{"PROOT_TMP_DIR=" + filepath.Join(w, "tmpd")}
	script := `ls -A /w; ls -A /w/many; ls -A /w/tmpd | sed 's/-[0-9a-f]*$//' | sort -u; echo end`
	res := runExt(t, env, []string{"-H"}, g, "", "/bin/sh", "-c", script)
	if want := "many\ntmpd\nzz\nvisible\nend\n"; res.Code != 0 || res.Stdout != want {
		t.Errorf("-H: got %s\nwant stdout:\n%s", res, want)
	}
	res = runExt(t, env, nil, g, "", "/bin/sh", "-c", script)
	if !strings.Contains(res.Stdout, ".prootx") || !strings.Contains(res.Stdout, "droidroot-loader") || strings.Count(res.Stdout, "\n") < 600 {
		t.Errorf("without -H everything is listed: got %s", res)
	}
}

// TestQemu: with -q, foreign-architecture programs (arm64 static and dynamic ELFs from the
// arm64 test rootfs, on x86_64) run through qemu-user, their own execs too; without -q their
// exec fails with ENOEXEC.
func TestQemu(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("runs arm64 programs through qemu-aarch64-static on an x86_64 host")
	}
	root := filepath.Join(cacheDir(), "arm64", "rootfs")
	if _, err := os.Stat(filepath.Join(root, "progs", "hello-static")); err != nil {
		missing(t, "arm64 rootfs %s not built (run test/arm64/run.sh --rootfs-only)", root)
	}
	qemu := "/usr/bin/qemu-aarch64-static"
	if _, err := os.Stat(qemu); err != nil {
		missing(t, "%s not installed (apt-get install qemu-user-static)", qemu)
	}
	g := guest{Root: root, Cwd: "/"}
	res := runExt(t, nil, []string{"-q", "qemu-aarch64-static"}, g, "", "/progs/hello-static", "a", "b c")
	if want := "argv[0]=/progs/hello-static\nargv[1]=a\nargv[2]=b c\nexecfn=/progs/hello-static\n"; res.Code != 0 || res.Stdout != want {
		t.Errorf("static: got %s\nwant stdout:\n%s", res, want)
	}
	res = runExt(t, nil, []string{"-q", qemu}, g, "", "/bin/sh", "-c", "uname -m; /progs/hello-dynamic x | head -2; cd /progs && ./hello-static | head -1")
	if want := "aarch64\nargv[0]=/progs/hello-dynamic\nargv[1]=x\nargv[0]=./hello-static\n"; res.Code != 0 || res.Stdout != want {
		t.Errorf("shell and dynamic: got %s\nwant stdout:\n%s", res, want)
	}
	res = runExt(t, nil, nil, g, "", "/progs/hello-static")
	if res.Code == 0 || !strings.Contains(res.Stderr, "exec format error") {
		t.Errorf("without -q: got %s, want an exec format error", res)
	}
}

// ashmemScript uses /dev/ashmem as Android programs do: open, name, size, mmap MAP_SHARED,
// and shares the memory with a child process.
const ashmemScript = `python3 -c '
import os, fcntl, mmap, struct
fd = os.open("/dev/ashmem", os.O_RDWR | os.O_CLOEXEC)
fcntl.ioctl(fd, 0x41007701, b"test-region".ljust(256, b"\0"))   # ASHMEM_SET_NAME
fcntl.ioctl(fd, 0x40087703, 8192)                               # ASHMEM_SET_SIZE
print(fcntl.ioctl(fd, 0x7704), os.fstat(fd).st_size)            # ASHMEM_GET_SIZE
print(fcntl.ioctl(fd, 0x7706), fcntl.ioctl(fd, 0x7709))          # GET_PROT_MASK, GET_PIN_STATUS
m = mmap.mmap(fd, 8192, mmap.MAP_SHARED)
pid = os.fork()
if pid == 0:
    m[100:105] = b"hello"; os._exit(0)
os.waitpid(pid, 0); print(m[100:105].decode())
try:
    fcntl.ioctl(os.open("/dev/null", os.O_RDONLY), 0x7704)
except OSError as e:
    print("other fds:", e.strerror)
'`

// TestAshmemMemfd: with --ashmem-memfd, /dev/ashmem is memfd-backed shared memory with the
// ashmem ioctls answered; without it, the open fails as on the host (no /dev/ashmem here).
func TestAshmemMemfd(t *testing.T) {
	if _, err := os.Stat("/dev/ashmem"); err == nil {
		t.Skip("this host has a real /dev/ashmem")
	}
	root := rootfs(t, "debian")
	g := guest{Root: root, Binds: []string{"/proc", "/dev"}}
	res := runExt(t, nil, []string{"--ashmem-memfd"}, g, "", "/bin/sh", "-c", ashmemScript)
	if want := "8192 8192\n7 1\nhello\nother fds: Inappropriate ioctl for device\n"; res.Code != 0 || res.Stdout != want {
		t.Errorf("--ashmem-memfd: got %s\nwant stdout:\n%s", res, want)
	}
	res = runExt(t, nil, nil, g, "", "/bin/sh", "-c", ashmemScript)
	if res.Code == 0 || !strings.Contains(res.Stderr, "No such file or directory") {
		t.Errorf("without --ashmem-memfd: got %s, want ENOENT", res)
	}
}

// TestStandardBindSets: -R ROOT is -r ROOT plus termux proot's recommended host binds (host
// /etc/passwd, /proc, /dev, the rootfs at its own path...); -S binds the smaller set (the
// guest keeps its own /etc/passwd) and asks for -0.
func TestStandardBindSets(t *testing.T) {
	root := rootfs(t, "debian")
	hostPasswd, err := os.ReadFile("/etc/passwd")
	if err != nil {
		t.Skip(err)
	}
	guestPasswd, err := os.ReadFile(filepath.Join(root, "etc/passwd"))
	if err != nil || string(guestPasswd) == string(hostPasswd) {
		t.Skip("the rootfs's /etc/passwd must differ from the host's for this test")
	}
	script := `md5sum </etc/passwd; test -e /proc/self/status && echo proc; test -c /dev/null && echo dev; test -x ` + root + `/usr/bin/python3 && echo rootfs-at-its-path`
	sum := func(b []byte) string {
		r := run(t, string(b), "md5sum")
		return r.Stdout
	}
	for _, tc := range []struct {
		opt    string
		passwd []byte
	}{
		{"-R", hostPasswd},
		{"-S", guestPasswd},
	} {
		res := run(t, "", droidrootBin(t), tc.opt, root, "/bin/sh", "-c", script)
		if want := sum(tc.passwd) + "proc\ndev\nrootfs-at-its-path\n"; res.Code != 0 || res.Stdout != want {
			t.Errorf("%s: got %s\nwant stdout:\n%s", tc.opt, res, want)
		}
		if res.Stderr != "" {
			t.Errorf("%s: missing standard binds must be silent: %s", tc.opt, res.Stderr)
		}
	}
}

// TestLink2SymlinkTermuxLinks: hard links that termux proot's -l made (a rootfs unpacked
// under termux proot: each name a symlink to a host-path intermediate symlink
// ".l2s.NAME0001", itself pointing at the final file ".l2s.NAME0001.NNNN", NNNN counting the
// names) keep working as hard links under droidroot -l, counts kept in termux proot's format.
func TestLink2SymlinkTermuxLinks(t *testing.T) {
	g, w := l2sGuest(t)
	d := filepath.Join(w, "d")
	makeTree(t, d, tree{".l2s.f0001.0002": "data\n", ".l2s.f0001": "->" + d + "/.l2s.f0001.0002",
		"f": "->" + d + "/.l2s.f0001", "g": "->" + d + "/.l2s.f0001"})
	script := `cd d; cat f g; ls -A; stat -c '%n %h %F' f g; [ "$(stat -c %i f)" = "$(stat -c %i g)" ] && echo same-inode
readlink f || echo not-a-symlink; echo more >>g; cat f; ln f h; stat -c %h h; rm f; cat g; mv h /w/h2; stat -c %h g /w/h2; rm g; cat /w/h2; ls -A`
	res := runExt(t, failLink, []string{"-l"}, g, "", "/bin/sh", "-c", script)
	want := "data\ndata\nf\ng\nf 2 regular file\ng 2 regular file\nsame-inode\nnot-a-symlink\ndata\nmore\n3\ndata\nmore\n2\n2\ndata\nmore\n"
	if res.Code != 0 || res.Stdout != want {
		t.Errorf("got %s\nwant stdout:\n%s", res, want)
	}
	if target, err := os.Readlink(filepath.Join(d, ".l2s.f0001")); err != nil || target != d+"/.l2s.f0001.0001" {
		t.Errorf("the termux intermediate link points at %q (%v), want the final file with count 0001", target, err)
	}
}
