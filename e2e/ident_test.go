//go:build linux

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// The identity model (-0, -i, set*id emulation): what guest programs see of their ids, of file
// owners and of privileged calls. The set*id walk is compared with the kernel (a real chroot as
// root); the privileged calls run droidroot as an unprivileged user (nobody), where they fail
// in the kernel and droidroot must answer as root's.

// nobody is the unprivileged user the privilege tests run droidroot as (nobodyCred).
const nobody = "65534"

// idProbe returns the guest directory holding idprobe (test/progs/idprobe.c) and .dyn for
// root, and the binds that make it visible: the rootfs's own /progs when it has them, else a
// fresh build with the host's gcc bound at /mnt/b1.
func idProbe(t testing.TB, root string) (string, []string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(root, "progs/idprobe.dyn")); err == nil {
		return "/progs", nil
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		missing(t, "the rootfs has no /progs/idprobe and there is no gcc to build it")
	}
	dir := openTempDir(t)
	src := repoPath(t, "test/progs/idprobe.c")
	for _, v := range []struct{ name, flag string }{{"idprobe", "-static"}, {"idprobe.dyn", "-O2"}} {
		out, err := exec.Command("gcc", "-O2", "-Wall", "-pthread", v.flag, "-o", filepath.Join(dir, v.name), src).CombinedOutput()
		if err != nil {
			t.Fatalf("building idprobe: %v\n%s", err, out)
		}
	}
	return "/mnt/b1", []string{dir + ":/mnt/b1"}
}

// openTempDir returns a fresh directory that every user may enter and nobody may write.
func openTempDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// chownTree gives everything under dir to nobody.
func chownTree(t testing.TB, dir string) {
	t.Helper()
	if out, err := exec.Command("chown", "-R", nobody+":"+nobody, dir).CombinedOutput(); err != nil {
		t.Fatalf("chown -R %s: %v\n%s", dir, err, out)
	}
}

// rootLogin is root with root's login groups ([0]), what -0 starts with; the oracle runs as it.
var rootLogin = &syscall.Credential{Uid: 0, Gid: 0, Groups: []uint32{0}}

// nobodyCred is nobody with no supplementary groups.
var nobodyCred = &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}

// asNobody prefixes a droidroot command line run as nobody with a PROOT_TMP_DIR nobody owns
// (for the loader and droidroot's helper files, wherever the system's temporary directory is).
func asNobody(t testing.TB, argv []string) []string {
	t.Helper()
	dir := filepath.Join(openTempDir(t), "proot-tmp")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	chownTree(t, dir)
	return append([]string{"env", "PROOT_TMP_DIR=" + dir}, argv...)
}

// withIdentity puts identity options after "run" in a droidroot command line.
func withIdentity(argv []string, opts ...string) []string {
	out := append([]string{argv[0], argv[1]}, opts...)
	return append(out, argv[2:]...)
}

// TestIdentityShell: id, whoami, stat owners and the auxv ids under -0 and -i, in the busybox
// rootfs (and -0 against the chroot oracle as root).
func TestIdentityShell(t *testing.T) {
	needRoot(t)
	g := busyboxGuest(t)
	dir, binds := idProbe(t, g.Root)
	g.Binds = append(g.Binds, binds...)
	// A file the real user does not own keeps its owner.
	other := filepath.Join(t.TempDir(), "other")
	if err := os.WriteFile(other, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(other, 4242, 4343); err != nil {
		t.Fatal(err)
	}
	g.Binds = append(g.Binds, other+":/mnt/file")
	script := `id; whoami 2>&1; stat -c '%u:%g %n' /bin/busybox /tmp /mnt/file; ` + dir + `/idprobe auxv; ` + dir + `/idprobe.dyn auxv | head -1`
	bin := droidrootBin(t)
	for _, tc := range []struct {
		opts []string
		want string
	}{
		{[]string{"-0"}, "uid=0(root) gid=0(root) groups=0(root)\nroot\n0:0 /bin/busybox\n0:0 /tmp\n4242:4343 /mnt/file\n" +
			"auxv uid 0 euid 0 gid 0 egid 0 secure 0\nafter exec: 0 | uids 0 0 0 0 | gids 0 0 0 0 | groups 0\n" +
			"auxv uid 0 euid 0 gid 0 egid 0 secure 0\n"},
		{[]string{"-i", "1000:1000"}, "uid=1000 gid=1000 groups=1000\nwhoami: unknown uid 1000\n1000:1000 /bin/busybox\n1000:1000 /tmp\n4242:4343 /mnt/file\n" +
			"auxv uid 1000 euid 1000 gid 1000 egid 1000 secure 0\nafter exec: 0 | uids 1000 1000 1000 1000 | gids 1000 1000 1000 1000 | groups 1000\n" +
			"auxv uid 1000 euid 1000 gid 1000 egid 1000 secure 0\n"},
		// Launchers' --link2symlink: -l's stat patch layer kept the
		// owner fix-up from running (traced stats showed the real owner).
		{[]string{"-i", "1000:1000", "--link2symlink"}, "uid=1000 gid=1000 groups=1000\nwhoami: unknown uid 1000\n1000:1000 /bin/busybox\n1000:1000 /tmp\n4242:4343 /mnt/file\n" +
			"auxv uid 1000 euid 1000 gid 1000 egid 1000 secure 0\nafter exec: 0 | uids 1000 1000 1000 1000 | gids 1000 1000 1000 1000 | groups 1000\n" +
			"auxv uid 1000 euid 1000 gid 1000 egid 1000 secure 0\n"},
		{[]string{"--change-id=10123:10124"}, "uid=10123 gid=10124 groups=10124\nwhoami: unknown uid 10123\n10123:10124 /bin/busybox\n10123:10124 /tmp\n4242:4343 /mnt/file\n" +
			"auxv uid 10123 euid 10123 gid 10124 egid 10124 secure 0\nafter exec: 0 | uids 10123 10123 10123 10123 | gids 10124 10124 10124 10124 | groups 10124\n" +
			"auxv uid 10123 euid 10123 gid 10124 egid 10124 secure 0\n"},
	} {
		t.Run(strings.Join(tc.opts, " "), func(t *testing.T) {
			res := run(t, "", withIdentity(droidrootArgs(bin, g, "/bin/sh", "-c", script), tc.opts...)...)
			if res.Code != 0 || res.Stderr != "" {
				t.Fatalf("droidroot %v:\n%s", tc.opts, res)
			}
			if diff := cmp.Diff(tc.want, res.Stdout); diff != "" {
				t.Errorf("droidroot %v (-want +got):\n%s", tc.opts, diff)
			}
		})
	}
	// As root in a real chroot, the kernel says the same as -0.
	argv := []string{repoPath(t, "test/oracle/chroot.sh"), g.Root}
	argv = append(append(argv, g.Binds...), "--", "/bin/sh", "-c", script)
	if res := runAs(t, rootLogin, "", argv...); res.Code != 0 || !strings.HasPrefix(res.Stdout, "uid=0(root) gid=0(root) groups=0(root)\nroot\n0:0 /bin/busybox\n") {
		t.Errorf("the oracle disagrees with the -0 expectation:\n%s", res)
	}
}

// TestIdentitySetID walks idprobe through set*id transitions (setgroups, setfsuid, setres*id,
// setre*id, set*id, -1 and EPERM cases, fork, a thread, exec with AT_SECURE; capabilities after
// each step, PR_SET_KEEPCAPS and capset) and compares
// every step with the kernel's answers as root in a real chroot: under -0 (also in ptrace-only
// mode), and with the set*id emulation alone (DROIDROOT_EMULATE_SETID=1, from the real ids).
func TestIdentitySetID(t *testing.T) {
	needRoot(t)
	g := busyboxGuest(t)
	dir, binds := idProbe(t, g.Root)
	g.Binds = append(g.Binds, binds...)
	bin := droidrootBin(t)
	for _, prog := range []string{dir + "/idprobe", dir + "/idprobe.dyn"} {
		want := runAs(t, rootLogin, "", append(append([]string{repoPath(t, "test/oracle/chroot.sh"), g.Root}, g.Binds...), "--", prog)...)
		if want.Code != 0 || want.Stderr != "" || !strings.Contains(want.Stdout, "auxv uid 1000 euid 2000 gid 7 egid 7 secure 1\n") {
			t.Fatalf("oracle %s:\n%s", prog, want)
		}
		for _, variant := range []struct {
			name string
			argv []string
		}{
			{"-0", withIdentity(droidrootArgs(bin, g, prog), "-0")},
			{"emulated set*id", append([]string{"env", "DROIDROOT_EMULATE_SETID=1"}, droidrootArgs(bin, g, prog)...)},
			{"-0 ptrace-only", append([]string{"env", "PROOT_NO_SECCOMP=1"}, withIdentity(droidrootArgs(bin, g, prog), "-0")...)},
		} {
			got := runAs(t, rootLogin, "", variant.argv...)
			if got.Code != 0 || got.Stderr != "" {
				t.Errorf("%s %s:\n%s", variant.name, prog, got)
				continue
			}
			if diff := cmp.Diff(want.Stdout, got.Stdout); diff != "" {
				t.Errorf("%s %s differs from the kernel (-kernel +droidroot):\n%s", variant.name, prog, diff)
			}
		}
	}
}

// TestIdentityPrivileged runs droidroot as nobody, where chown, chmod of another's file, mknod
// of a device, trusted/security xattrs and access to an unreadable file fail in the kernel:
// under -0 they answer as for root (a device node becomes an empty regular file; nothing
// changes owner), under -i 1000:1000 and after dropping root they fail as before.
func TestIdentityPrivileged(t *testing.T) {
	needRoot(t)
	root := rootfs(t, "busybox")
	probeDir, binds := idProbe(t, root)
	work := filepath.Join(openTempDir(t), "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	chownTree(t, work)
	for _, b := range binds {
		chownTree(t, strings.Split(b, ":")[0])
	}
	rootFile := filepath.Join(work, "rootfile")
	if err := os.WriteFile(rootFile, nil, 0o600); err != nil { // owned by the real root
		t.Fatal(err)
	}
	g := guest{Root: root, Binds: append([]string{"/proc", "/dev", work + ":/mnt/b2"}, binds...), Cwd: "/"}
	bin := droidrootBin(t)
	ids := func(u, g, grp string) string {
		return " | uids " + u + " " + u + " " + u + " " + u + " | gids " + g + " " + g + " " + g + " " + g + " | groups " + grp + "\n"
	}
	root0, user := ids("0", "0", "0"), ids("1000", "1000", "1000")
	dropped := ids("1000", "0", "0")
	tests := []struct {
		opt, want string
	}{
		{"-0", "chown(f, 123, 456): 0" + root0 + "lchown(f, 123, 456): 0" + root0 + "fchown(fd, 123, 456): 0" + root0 +
			"fchownat(AT_FDCWD, f, 0, 0, 0): 0" + root0 + "chmod(rootf, 0644): 0" + root0 + "fchmodat(AT_FDCWD, rootf, 0644, 0): 0" + root0 +
			"access(rootf, R_OK | W_OK): 0" + root0 + "access(rootf, X_OK): EACCES" + root0 +
			"faccessat(AT_FDCWD, rootf, R_OK, AT_EACCESS): 0" + root0 + "access(dir, X_OK): 0" + root0 +
			"mknod(dev, S_IFCHR | 0666, makedev(1, 3)): 0" + root0 + "mknod made: regular file 644\n" +
			`setxattr(f, "trusted.droidroot", "x", 1, 0): 0` + root0 + `fsetxattr(fd, "security.droidroot", "x", 1, 0): 0` + root0 +
			"rootfile: mode 600\n" +
			"setresuid(1000, 1000, 1000): 0" + dropped + "chown(f, 123, 456): EPERM" + dropped + "access(rootf, R_OK): EACCES" + dropped +
			"mknod(dev, S_IFCHR | 0666, makedev(1, 3)): EEXIST" + dropped},
		{"-i 1000:1000", "chown(f, 123, 456): EPERM" + user + "lchown(f, 123, 456): EPERM" + user + "fchown(fd, 123, 456): EPERM" + user +
			"fchownat(AT_FDCWD, f, 0, 0, 0): EPERM" + user + "chmod(rootf, 0644): EPERM" + user + "fchmodat(AT_FDCWD, rootf, 0644, 0): EPERM" + user +
			"access(rootf, R_OK | W_OK): EACCES" + user + "access(rootf, X_OK): EACCES" + user +
			"faccessat(AT_FDCWD, rootf, R_OK, AT_EACCESS): EACCES" + user + "access(dir, X_OK): 0" + user +
			"mknod(dev, S_IFCHR | 0666, makedev(1, 3)): EPERM" + user +
			`setxattr(f, "trusted.droidroot", "x", 1, 0): EPERM` + user + `fsetxattr(fd, "security.droidroot", "x", 1, 0): EPERM` + user +
			"rootfile: mode 600\n" +
			"setresuid(1000, 1000, 1000): 0" + user + "chown(f, 123, 456): EPERM" + user + "access(rootf, R_OK): EACCES" + user +
			"mknod(dev, S_IFCHR | 0666, makedev(1, 3)): EPERM" + user},
	}
	// The static probe's calls all reach the tracer; the dynamic one's go
	// through the fast path library, which answers access in-process but
	// for the kernel's EACCES, the one answer the tracer changes.
	for _, tc := range tests {
		for _, prog := range []string{"idprobe", "idprobe.dyn"} {
			t.Run(tc.opt+"/"+prog, func(t *testing.T) {
				for _, f := range []string{"file", "null"} {
					os.Remove(filepath.Join(work, f))
				}
				argv := withIdentity(droidrootArgs(bin, g, probeDir+"/"+prog, "priv", "/mnt/b2"), strings.Fields(tc.opt)...)
				dyn := strings.HasSuffix(prog, ".dyn")
				if dyn {
					argv = append([]string{"env", "DROIDROOT_FASTPATH_STATS=1", "DROIDROOT_FASTPATH=1"}, argv...)
				}
				res := runAs(t, nobodyCred, "", asNobody(t, argv)...)
				counts, stderr := fastPathCounters(res.Stderr)
				if res.Code != 0 || stderr != "" {
					t.Fatalf("%s:\n%s", tc.opt, res)
				}
				if dyn && (counts["access answered"] != 1 || counts["access option"] < 3) {
					t.Errorf("access calls: %d answered in-process (want 1: the directory's), %d left to the tracer for EACCES (want at least 3)\n%s",
						counts["access answered"], counts["access option"], res.Stderr)
				}
				checkPriv(t, tc.opt, tc.want, res.Stdout, work)
			})
		}
	}
}

// checkPriv compares TestIdentityPrivileged's probe output got with want,
// and checks that the probe's file kept its real owner.
func checkPriv(t *testing.T, opt, want, got, work string) {
	t.Helper()
	if opt != "-0" {
		// Without -0 droidroot passes the kernel's answer through, and whether an
		// unprivileged user may set a security.* xattr depends on the kernel's LSMs
		// (Debian's arm64 6.1 kernel in the VM allows it on tmpfs).
		got = strings.Replace(got, `"security.droidroot", "x", 1, 0): 0`, `"security.droidroot", "x", 1, 0): EPERM`, 1)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", opt, diff)
	}
	if uid, gid := statOwner(t, filepath.Join(work, "file")); uid != 65534 || gid != 65534 {
		t.Errorf("the file's real owner changed to %d:%d", uid, gid)
	}
}

// statOwner returns the real owner of path.
func statOwner(t testing.TB, path string) (int, int) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	return int(st.Uid), int(st.Gid)
}

// makeDeb builds a .deb of the tree files (path -> content; DEBIAN/* are the control files,
// executable when they are maintainer scripts) and the character devices devs (path ->
// device number) into out with dpkg-deb.
func makeDeb(t testing.TB, out string, files tree, devs map[string]int) {
	t.Helper()
	dir := t.TempDir()
	makeTree(t, dir, files)
	for name, dev := range devs {
		p := filepath.Join(dir, name)
		if err := unix.Mknod(p, unix.S_IFCHR|0o666, dev); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o666); err != nil { // past the umask
			t.Fatal(err)
		}
	}
	for name := range files {
		if strings.HasPrefix(name, "DEBIAN/post") || strings.HasPrefix(name, "DEBIAN/pre") || strings.HasSuffix(name, ".sh") {
			if err := os.Chmod(filepath.Join(dir, name), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	cmd := exec.Command("dpkg-deb", "--root-owner-group", "-b", dir, out)
	if b, err := exec.Command("dpkg-deb", "--version").CombinedOutput(); err != nil || !strings.Contains(string(b), "Debian") {
		// No Debian dpkg-deb on the host (the arm64 VM has busybox's): use the Debian
		// rootfs's own, through droidroot.
		cmd = exec.Command(droidrootBin(t), "run", "-r", rootfs(t, "debian"), "-b", dir+":/mnt/pkg",
			"-b", filepath.Dir(out)+":/mnt/out", "--", "dpkg-deb", "--root-owner-group", "-b", "/mnt/pkg", "/mnt/out/"+filepath.Base(out))
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb: %v\n%s", err, b)
	}
}

// TestIdentityDpkg installs real packages in the Debian rootfs under -0, with droidroot
// running as nobody as on a phone (where the app owns the rootfs): dpkg -i of a .deb holding a
// device node (unpacked as an empty regular file) whose postinst checks it runs as root and
// chowns, then apt-get install of a local .deb that
// depends on it (apt drops to the _apt user to fetch it). The rootfs stays read-only: the
// directories dpkg and apt write are writable copies bound over it.
func TestIdentityDpkg(t *testing.T) {
	needRoot(t)
	root := rootfs(t, "debian")
	top := openTempDir(t)
	w := filepath.Join(top, "w")
	for _, d := range []string{"tmp", "opt", "root", "var/lib", "var/cache"} {
		if err := os.MkdirAll(filepath.Join(w, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyTree(t, filepath.Join(root, "var/lib/dpkg"), filepath.Join(w, "var/lib/dpkg"))
	copyTree(t, filepath.Join(root, "var/lib/apt"), filepath.Join(w, "var/lib/apt"))
	copyTree(t, filepath.Join(root, "var/cache/apt"), filepath.Join(w, "var/cache/apt"))
	copyTree(t, filepath.Join(root, "var/cache/debconf"), filepath.Join(w, "var/cache/debconf"))
	copyTree(t, filepath.Join(root, "var/log"), filepath.Join(w, "var/log"))
	makeDeb(t, filepath.Join(w, "tmp/a.deb"), tree{
		"DEBIAN/control":           "Package: droidroot-a\nVersion: 1.0\nArchitecture: all\nMaintainer: T <t@example.com>\nDescription: droidroot test a\n",
		"DEBIAN/postinst":          "#!/bin/sh\nset -e\necho \"postinst a $1 as $(id -u):$(id -g)\"\nchown root:root /opt/droidroot-a/hello.sh\nchmod 0755 /opt/droidroot-a/hello.sh\n",
		"opt/droidroot-a/hello.sh": "#!/bin/sh\necho hello from a\n",
	}, map[string]int{"opt/droidroot-a/null": int(unix.Mkdev(1, 3))})
	makeDeb(t, filepath.Join(w, "tmp/b.deb"), tree{
		"DEBIAN/control":       "Package: droidroot-b\nVersion: 1.0\nArchitecture: all\nDepends: droidroot-a\nMaintainer: T <t@example.com>\nDescription: droidroot test b\n",
		"opt/droidroot-b/data": "b\n",
	}, nil)
	chownTree(t, w)
	binds := []string{"/proc", "/dev"}
	for _, d := range []string{"tmp", "opt", "root", "var/lib/dpkg", "var/lib/apt", "var/cache/apt", "var/cache/debconf", "var/log"} {
		binds = append(binds, filepath.Join(w, d)+":/"+d)
	}
	g := guest{Root: root, Binds: binds, Cwd: "/tmp"}
	script := `set -e
dpkg -i /tmp/a.deb
/opt/droidroot-a/hello.sh
apt-get install -y -q /tmp/b.deb >/tmp/apt.log 2>&1 || { cat /tmp/apt.log; exit 1; }
grep -c 'Setting up droidroot-b' /tmp/apt.log
dpkg-query -W -f '${Package} ${Version} ${Status}\n' droidroot-a droidroot-b
stat -c '%u:%g %a %n' /opt/droidroot-a/hello.sh /opt/droidroot-b/data
stat -c '%F %a %n' /opt/droidroot-a/null`
	res := runAs(t, nobodyCred, "", asNobody(t, withIdentity(droidrootArgs(droidrootBin(t), g, "/bin/sh", "-c", script), "-0"))...)
	want := "Selecting previously unselected package droidroot-a.\n" +
		"(Reading database ... 12534 files and directories currently installed.)\n" +
		"Preparing to unpack /tmp/a.deb ...\nUnpacking droidroot-a (1.0) ...\nSetting up droidroot-a (1.0) ...\n" +
		"postinst a configure as 0:0\nhello from a\n1\n" +
		"droidroot-a 1.0 install ok installed\ndroidroot-b 1.0 install ok installed\n" +
		"0:0 755 /opt/droidroot-a/hello.sh\n0:0 644 /opt/droidroot-b/data\n" +
		"regular empty file 666 /opt/droidroot-a/null\n"
	if res.Code != 0 {
		t.Fatalf("dpkg/apt under -0 as nobody:\n%s", res)
	}
	// The database size depends on the rootfs: compare that line by its shape.
	got := res.Stdout
	if i := strings.Index(got, "(Reading database ... "); i >= 0 {
		if j := strings.Index(got[i:], ")\n"); j >= 0 {
			got = got[:i] + "(Reading database ... 12534 files and directories currently installed.)\n" + got[i+j+2:]
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("dpkg/apt under -0 as nobody (-want +got):\n%s\nstderr:\n%s", diff, res.Stderr)
	}
	if res.Stderr != "" {
		t.Logf("stderr:\n%s", res.Stderr)
	}
	if uid, _ := statOwner(t, filepath.Join(w, "opt/droidroot-a/hello.sh")); uid != 65534 {
		t.Errorf("hello.sh really owned by %d, want nobody's files to stay nobody's", uid)
	}
}

// TestIdentityDebian: id, whoami and ls -ln of glibc programs (which read /etc/passwd through
// NSS) under -0 and -i in the Debian rootfs.
func TestIdentityDebian(t *testing.T) {
	needRoot(t)
	g := debianGuest(t)
	script := `id; whoami 2>&1; ls -lnd /etc/passwd /tmp/. | awk '{print $3, $4, $NF}'; python3 -c 'import os; print(os.getresuid(), os.getresgid(), os.getgroups(), os.fstat(0).st_uid)' </etc/hostname`
	for _, tc := range []struct{ opt, want string }{
		{"-0", "uid=0(root) gid=0(root) groups=0(root)\nroot\n0 0 /etc/passwd\n0 0 /tmp/.\n(0, 0, 0) (0, 0, 0) [0] 0\n"},
		{"-i 1000:1000", "uid=1000 gid=1000 groups=1000\nwhoami: cannot find name for user ID 1000\n1000 1000 /etc/passwd\n1000 1000 /tmp/.\n(1000, 1000, 1000) (1000, 1000, 1000) [1000] 1000\n"},
		{"-i 65534:65534", "uid=65534(nobody) gid=65534(nogroup) groups=65534(nogroup)\nnobody\n65534 65534 /etc/passwd\n65534 65534 /tmp/.\n(65534, 65534, 65534) (65534, 65534, 65534) [65534] 65534\n"},
	} {
		res := run(t, "", withIdentity(droidrootArgs(droidrootBin(t), g, "/bin/sh", "-c", script), strings.Fields(tc.opt)...)...)
		if res.Stdout != tc.want || res.Stderr != "" {
			t.Errorf("%s: got %s\nwant stdout:\n%s", tc.opt, res, tc.want)
		}
	}
}

// TestIdentityUserSwitch runs the tools that switch users under -0 in the Debian rootfs (su,
// runuser, setpriv with its PR_SET_KEEPCAPS + capset dance, and a python3 program doing apt's
// privilege drop, then failing to regain root) and compares them with the kernel's answers as
// root in a real chroot.
func TestIdentityUserSwitch(t *testing.T) {
	needRoot(t)
	g := debianGuest(t)
	script := `su -s /bin/sh -c 'id; whoami' nobody
runuser -u _apt -- id
setpriv --reuid=1000 --regid=1000 --clear-groups id
setpriv --reuid=_apt --regid=nogroup --init-groups sh -c 'id; setpriv --reuid=0 --regid=0 --clear-groups id'
setpriv --reuid=1000 --regid=1000 --keep-groups id
python3 -c '
import os
os.setgroups([]); os.setresgid(65534, 65534, 65534); os.setresuid(42, 42, 42)
print(os.getresuid(), os.getresgid(), os.getgroups())
try:
    os.setuid(0)
except OSError as e:
    print("setuid(0):", e.strerror)
'`
	want := "uid=65534(nobody) gid=65534(nogroup) groups=65534(nogroup)\nnobody\n" +
		"uid=42(_apt) gid=65534(nogroup) groups=65534(nogroup)\n" +
		"uid=1000 gid=1000 groups=1000\n" +
		"uid=42(_apt) gid=65534(nogroup) groups=65534(nogroup)\n" +
		"uid=1000 gid=1000 groups=1000,0(root)\n" +
		"(42, 42, 42) (65534, 65534, 65534) []\nsetuid(0): Operation not permitted\n"
	wantErr := "setpriv: setresuid failed: Operation not permitted\n"
	oracle := append(append([]string{repoPath(t, "test/oracle/chroot.sh"), "-w", g.Cwd, g.Root}, g.Binds...), "--", "/bin/sh", "-c", script)
	for _, r := range []struct {
		name string
		argv []string
	}{
		{"chroot", oracle},
		{"droidroot -0", withIdentity(droidrootArgs(droidrootBin(t), g, "/bin/sh", "-c", script), "-0")},
	} {
		res := runAs(t, rootLogin, "", r.argv...)
		if res.Code != 0 || res.Stdout != want || res.Stderr != wantErr {
			t.Errorf("%s: got %s\nwant stdout:\n%s--- stderr:\n%s", r.name, res, want, wantErr)
		}
	}
}

// fakeRootModes is TestFakeRootModes' script: what real root may do whatever a file's modes
// say (CAP_DAC_OVERRIDE), with the modes printed after each step.
const fakeRootModes = `cd /tmp
echo data > ro; chmod 0444 ro; echo more >> ro; echo "append $?"; cat ro; stat -c %a ro
chmod 0000 ro; cat ro; echo "read $?"; stat -c %a ro
: > ro; echo "truncate $?"; stat -c '%a %s' ro
mkdir d; touch d/f d/f2; chmod 0555 d
rm d/f; echo "rm $?"; touch d/g; echo "create $?"; mkdir d/s; echo "mkdir $?"; mv d/g d/h; echo "mv $?"
ln -s x d/l; echo "ln $?"; ls d; stat -c %a d
rmdir d/s; echo "rmdir $?"; rm -rf d; echo "rm -rf $?"
mkdir -p m/a/b; touch m/a/b/f; chmod -R a-w m; rm -rf m; echo "rm -rf of a read-only tree $?"; ls
echo a > a; mkdir l; chmod 0555 l; ln a l/b; echo "link $?"; cat l/b; stat -c '%a %h' a l/b
mv l/b l/c; echo "mv link $?"; rm l/c; echo "rm link $?"; ls l; stat -c '%a %h' a l
for m in 0400 0600 0000; do
  mkdir u; echo data > u/f; mkdir u/s; chmod $m u
  touch u/new; echo "create in $m $?"; stat -c '%a %s' u/f; cat u/f; ls -l u/s/.. | wc -l; rm u/f; echo "rm $?"
  echo more > u/s/g; cat u/s/g; mv u/s/g u/s/h; echo "mv $?"; ln -s t u/l; readlink u/l; rmdir u/nothing 2>/dev/null; echo "rmdir $?"
  (cd u && pwd && ls && cat s/h && echo x > y && cat ./y); echo "cd $?"; ls u; stat -c %a u
  if command -v python3 >/dev/null; then python3 -c 'import os; os.fchdir(os.open("u", os.O_RDONLY | os.O_DIRECTORY)); print("fchdir", os.getcwd(), sorted(os.listdir(".")), open("s/h").read().strip())'; else echo fchdir; fi
  chmod 700 u; rm -r u
done
`

// TestFakeRootModes: a fake root (-0, droidroot running as nobody, who owns the files as an
// Android app owns its rootfs) writes a 0444 file, reads a 0000 one, makes and removes
// names in a 0555 directory, and looks up, makes, removes and reads names in and below
// directories it may not search (0400, 0600, 0000) and changes into them, as root does in a
// real chroot (the oracle), and the modes are back after each call. In the busybox rootfs every call is traced; in the Debian one the fast
// path library answers them, and hands the kernel's EACCES to the tracer.
func TestFakeRootModes(t *testing.T) {
	needRoot(t)
	bin := droidrootBin(t)
	for _, tc := range []struct {
		rootfs, fastpath string
		opts             []string // after -0
		env              []string
	}{
		{rootfs: "busybox", fastpath: "0"},
		{rootfs: "debian", fastpath: "1"},
		{rootfs: "debian", fastpath: "0"},
		// -l with the links refused, as on Android's app storage: the
		// tracer makes the emulated links' names itself.
		{rootfs: "debian", fastpath: "1", opts: []string{"-l"}, env: []string{"DROIDROOT_FAIL_LINK=1"}},
	} {
		t.Run(tc.rootfs+"/fastpath="+tc.fastpath+strings.Join(tc.opts, ""), func(t *testing.T) {
			root := rootfs(t, tc.rootfs)
			work := func() string { return nobodyDir(t, 0o755) }
			binds := func(w string) []string { return []string{"/proc", "/dev", w + ":/tmp"} }
			argv := []string{repoPath(t, "test/oracle/chroot.sh"), root}
			argv = append(append(argv, binds(work())...), "--", "/bin/sh", "-c", fakeRootModes)
			want := runAs(t, rootLogin, "", argv...)
			if want.Code != 0 || want.Stderr != "" || !strings.Contains(want.Stdout, "append 0\ndata\nmore\n444\n") {
				t.Fatalf("the oracle:\n%s", want)
			}
			g := guest{Root: root, Binds: binds(work()), Cwd: "/"}
			argv = withIdentity(droidrootArgs(bin, g, "/bin/sh", "-c", fakeRootModes), append([]string{"-0"}, tc.opts...)...)
			env := append([]string{"env", "DROIDROOT_FASTPATH_STATS=1", "DROIDROOT_FASTPATH=" + tc.fastpath}, tc.env...)
			argv = append(env, argv...)
			res := runAs(t, nobodyCred, "", asNobody(t, argv)...)
			counts, stderr := fastPathCounters(res.Stderr)
			if res.Code != 0 || stderr != "" {
				t.Fatalf("droidroot -0:\n%s", res)
			}
			if diff := cmp.Diff(want.Stdout, res.Stdout); diff != "" {
				t.Errorf("droidroot -0 as nobody against root in a chroot (-want +got):\n%s", diff)
			}
			if tc.fastpath == "1" && (counts["open option"] == 0 || counts["open answered"] == 0) {
				t.Errorf("the library answered no open, or handed no open's EACCES to the tracer:\n%s", res.Stderr)
			}
		})
	}
}

// TestUnsearchableAncestor: a process whose cwd lies below a directory it may no longer
// search makes and reads names relative to its cwd, as the kernel walks them from there and
// never searches the cwd's ancestors; droidroot's own lookups of such names (as the same user)
// go through the kernel's cwd too. install -d of an absolute directory then of relative ones is
// coreutils' install/basic-1 (gnulib's savewd). droidroot runs as nobody; the oracle is the
// chroot with the script run as nobody.
func TestUnsearchableAncestor(t *testing.T) {
	script := `mkdir -p w/sub1/d xx && cd w/sub1/d && chmod a-r . && chmod a-rx ..
install -d /tmp/xx/zz rel/a rel/b; echo install $?
mkdir new && touch new/f && ln -s f new/l && readlink new/l && cat new/l && ls -d rel/a rel/b new/f
cd /tmp && chmod 755 w/sub1 w/sub1/d && ls -d xx/zz && rm -r w xx && echo done`
	againstChrootAsNobody(t, script, "install 0\nf\nnew/f\nrel/a\nrel/b\nxx/zz\ndone\n")
}

// againstChrootAsNobody runs script with /bin/sh as nobody in the debian rootfs, with /proc,
// /dev and /sys bound and a /tmp of its own (nobody's, the cwd): in the chroot oracle
// (setpriv), which must print want, and under droidroot run as nobody, which must too.
func againstChrootAsNobody(t *testing.T, script, want string) {
	t.Helper()
	needRoot(t)
	tmp := filepath.Join(openTempDir(t), "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	chownTree(t, tmp)
	g := guest{Root: rootfs(t, "debian"), Binds: []string{"/proc", "/dev", "/sys", tmp + ":/tmp"}, Cwd: "/tmp"}
	oracle := viaChroot(t, g, "", "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/bin/sh", "-c", script)
	if oracle.Stdout != want || oracle.Code != 0 {
		t.Fatalf("chroot: got %s\nwant stdout %q: the expectation is wrong", oracle, want)
	}
	chownTree(t, tmp)
	res := runAs(t, nobodyCred, "", asNobody(t, droidrootArgs(droidrootBin(t), g, "/bin/sh", "-c", script))...)
	if res.Stdout != want || res.Code != 0 {
		t.Errorf("droidroot as nobody: got %s\nwant stdout %q", res, want)
	}
}

// TestUnsearchableDots: "." and ".." are names the kernel looks up in their directory, which
// it must search first (link_path_walk's may_lookup): in a directory the caller may read but
// not search, "r/." and "r/.." are EACCES though "r" itself is not (bash's glob test: `*/.`
// lists only the searchable directories). droidroot's walk takes "." and ".." itself, so it
// checks that search where the kernel would. As nobody (root searches anything).
func TestUnsearchableDots(t *testing.T) {
	script := `mkdir -m a=r r && mkdir -m a=x s && touch f
for p in r/. r/./. r/.. r/../f s/. s/.. r r/ ./f; do printf '%s ' $p; stat -c %F $p 2>&1 | sed 's/.*: //'; done
python3 -c '
import os
for p in ["r/.", "r/..", "s/."]:
    r = []
    for fn in (os.lstat, lambda p: os.access(p, os.F_OK), lambda p: os.open(p, os.O_RDONLY)):
        try: r.append(str(fn(p) is not False))
        except OSError as e: r.append(e.strerror)
    print(p, *r)'
echo */.; rmdir r s`
	want := "r/. Permission denied\nr/./. Permission denied\nr/.. Permission denied\nr/../f Permission denied\n" +
		"s/. directory\ns/.. directory\nr directory\nr/ directory\n./f regular empty file\n" +
		"r/. Permission denied False Permission denied\nr/.. Permission denied False Permission denied\n" +
		"s/. True True Permission denied\ns/.\n"
	againstChrootAsNobody(t, script, want)
}

// nobodyDir makes a new directory of mode perm, owned by nobody, in a temporary directory
// nobody may reach (openTempDir): a guest's /tmp for a droidroot run as nobody.
func nobodyDir(t *testing.T, perm os.FileMode) string {
	t.Helper()
	w := filepath.Join(openTempDir(t), "w")
	if err := os.Mkdir(w, perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(w, perm); err != nil { // past the umask, and the sticky bit
		t.Fatal(err)
	}
	chownTree(t, w)
	return w
}

// socketCreds is a python program that looks at the credentials AF_UNIX sockets carry:
// SO_PEERCRED of a socketpair and of a connection from a child that made itself uid 4242
// first (asked while the child runs: droidroot reports a peer's current ids), and
// SCM_CREDENTIALS sent with the sender's own ids and with ids it may not claim.
const socketCreds = `
import os, socket, struct
def peer(s):
    pid, uid, gid = struct.unpack("3i", s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, 12))
    return pid, uid, gid
def send(s, pid, uid, gid):
    try:
        s.sendmsg([b"\0"], [(socket.SOL_SOCKET, socket.SCM_CREDENTIALS, struct.pack("3i", pid, uid, gid))])
        return "ok"
    except OSError as e:
        return "errno %d" % e.errno
a, b = socket.socketpair()
b.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
pid, uid, gid = peer(a)
print("ids", os.getuid(), os.getgid(), "socketpair peer", uid, gid, pid == os.getpid())
print("send own ids", send(a, os.getpid(), os.geteuid(), os.getegid()))
msg, anc, flags, addr = b.recvmsg(1, socket.CMSG_SPACE(12))
pid, uid, gid = struct.unpack("3i", anc[0][2])
print("received", msg, uid, gid, pid == os.getpid())
print("send other ids as root", send(a, os.getpid(), 4242, 4343))
srv = socket.socket(socket.AF_UNIX)
srv.bind("\0droidroot-creds-%d" % os.getpid())
srv.listen(1)
r, w = os.pipe()
child = os.fork()
if child == 0:
    os.setgid(4343); os.setuid(4242)
    c = socket.socket(socket.AF_UNIX)
    c.connect("\0droidroot-creds-%d" % os.getppid())
    pid, uid, gid = peer(c)
    os.write(w, ("child: server peer %d %d %s\n" % (uid, gid, pid == os.getppid())).encode())
    os.write(w, ("child: send own ids %s\n" % send(c, os.getpid(), 4242, 4343)).encode())
    os.write(w, ("child: send root's ids %s\n" % send(c, os.getpid(), 0, 0)).encode())
    c.recv(1)
    os._exit(0)
conn, _ = srv.accept()
pid, uid, gid = peer(conn)
conn.send(b"x")
os.close(w)
os.waitpid(child, 0)
print(os.read(r, 4096).decode(), end="")
print("client peer", uid, gid, pid == child)
`

// TestIdentitySocketCreds: under -0, the credentials AF_UNIX sockets carry are the guest's
// emulated ones, as real root's in a chroot: SO_PEERCRED shows a peer's emulated ids (it showed
// the real user's, so dbus-daemon refused a fake root's AUTH EXTERNAL), and SCM_CREDENTIALS
// with the sender's own emulated ids are accepted (the kernel refused them, EPERM: GLib's D-Bus
// clients send them) while ids it may not claim are refused; a receiver (SO_PASSCRED) sees
// the ids its own process sent, with the library (recvmsg is not stopped: without it, the
// kernel's real ids). droidroot runs as nobody, with the library on and off; the oracle is
// root in a chroot.
func TestIdentitySocketCreds(t *testing.T) {
	needRoot(t)
	bin := droidrootBin(t)
	root := rootfs(t, "debian")
	want := runAs(t, rootLogin, "", repoPath(t, "test/oracle/chroot.sh"), root, "/proc", "/dev", "--", "python3", "-c", socketCreds)
	if want.Code != 0 || want.Stderr != "" || !strings.Contains(want.Stdout, "child: send root's ids errno 1\n") {
		t.Fatalf("the oracle:\n%s", want)
	}
	for _, fp := range []string{"1", "0"} {
		t.Run("fastpath="+fp, func(t *testing.T) {
			want := want.Stdout
			if fp == "0" {
				// The receiver's credentials without the library: the kernel's.
				want = strings.Replace(want, "received b'\\x00' 0 0 True", "received b'\\x00' 65534 65534 True", 1)
			}
			g := guest{Root: root, Binds: []string{"/proc", "/dev"}, Cwd: "/"}
			argv := withIdentity(droidrootArgs(bin, g, "python3", "-c", socketCreds), "-0")
			argv = append([]string{"env", "DROIDROOT_FASTPATH_STATS=1", "DROIDROOT_FASTPATH=" + fp}, argv...)
			res := runAs(t, nobodyCred, "", asNobody(t, argv)...)
			counts, stderr := fastPathCounters(res.Stderr)
			if res.Code != 0 || stderr != "" {
				t.Fatalf("droidroot -0:\n%s", res)
			}
			if diff := cmp.Diff(want, res.Stdout); diff != "" {
				t.Errorf("droidroot -0 as nobody against root in a chroot (-want +got):\n%s", diff)
			}
			if fp == "1" && counts["sendmsg option"] == 0 {
				t.Errorf("the library made a sendmsg with credentials itself:\n%s", res.Stderr)
			}
		})
	}
}

// dbusSession starts a session bus and asks it for its id with libdbus's dbus-send and GLib's
// gdbus, which authenticate with AUTH EXTERNAL (the id from geteuid, checked against
// SO_PEERCRED) and, for GLib, SCM_CREDENTIALS.
const dbusSession = `d=$(mktemp -d /tmp/dbus.XXXXXX)
dbus-daemon --session --nofork --address=unix:path=$d/bus --print-pid=3 3>$d/pid &
for i in $(seq 50); do [ -S $d/bus ] && break; sleep 0.1; done
export DBUS_SESSION_BUS_ADDRESS=unix:path=$d/bus
dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus.GetId >/dev/null; echo "dbus-send $?"
gdbus call --session --dest org.freedesktop.DBus --object-path /org/freedesktop/DBus --method org.freedesktop.DBus.GetId >/dev/null; echo "gdbus $?"
kill $(cat $d/pid); wait
`

// TestIdentityDBus: a fake root's D-Bus session works as real root's in a chroot. Under -0 as an
// ordinary user (the launchers' option, an app on the phone), dbus-daemon refused dbus-send's
// AUTH EXTERNAL (SO_PEERCRED showed the real user) and gdbus could not send its credentials
// (EPERM), as under termux proot; sockCreds makes both the guest's. Library on and off.
func TestIdentityDBus(t *testing.T) {
	needRoot(t)
	bin := droidrootBin(t)
	root := rootfs(t, "debian")
	if _, err := os.Stat(filepath.Join(root, "usr/bin/gdbus")); err != nil {
		t.Fatalf("the debian rootfs has no gdbus (test/rootfs/debian.sh installs dbus-daemon and libglib2.0-bin): %v", err)
	}
	work := func() string { return nobodyDir(t, 0o1777) }
	const ok = "dbus-send 0\ngdbus 0\n"
	want := runAs(t, rootLogin, "", repoPath(t, "test/oracle/chroot.sh"), root, "/proc", "/dev", work()+":/tmp", "--", "/bin/sh", "-c", dbusSession)
	if want.Code != 0 || want.Stdout != ok {
		t.Fatalf("the oracle:\n%s", want)
	}
	for _, fp := range []string{"1", "0"} {
		t.Run("fastpath="+fp, func(t *testing.T) {
			g := guest{Root: root, Binds: []string{"/proc", "/dev", work() + ":/tmp"}, Cwd: "/"}
			argv := withIdentity(droidrootArgs(bin, g, "/bin/sh", "-c", dbusSession), "-0")
			argv = append([]string{"env", "DROIDROOT_FASTPATH=" + fp}, argv...)
			res := runAs(t, nobodyCred, "", asNobody(t, argv)...)
			if res.Code != 0 || res.Stdout != ok {
				t.Errorf("droidroot -0 as nobody: want %q\n%s", ok, res)
			}
		})
	}
}
