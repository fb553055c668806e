package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/bench"
)

// fastPathCounters sums the counters of the fast path's per-process
// reports (DROIDROOT_FASTPATH_STATS=1) in stderr, keyed "function reason"
// ("stat answered", "dirs unverified"), and returns stderr without them.
func fastPathCounters(stderr string) (map[string]int, string) {
	re := regexp.MustCompile(`(?m)^droidroot-fastpath\[\d+\]: (\w+)(.*)\n`)
	counts := map[string]int{}
	for _, m := range re.FindAllStringSubmatch(stderr, -1) {
		for _, f := range strings.Fields(m[2]) {
			if why, v, ok := strings.Cut(f, "="); ok {
				n, _ := strconv.Atoi(v)
				counts[m[1]+" "+why] += n
			}
		}
	}
	return counts, re.ReplaceAllString(stderr, "")
}

// runCounted runs argv (a droidroot command line) with the library on and
// its counters printed, and returns its result without the counters' lines
// and the counters (fastPathCounters).
func runCounted(t testing.TB, argv []string) (result, map[string]int) {
	t.Helper()
	res := run(t, "", append([]string{"env", "DROIDROOT_FASTPATH_STATS=1", "DROIDROOT_FASTPATH=1"}, argv...)...)
	counts, rest := fastPathCounters(res.Stderr)
	res.Stderr = rest
	return res, counts
}

// countedAgainstChroot runs cmd in the Debian guest with the cwd at /, in a
// real chroot, whose stdout chrootOK must accept, and under droidroot with
// options opts (withIdentity's) and the library's counters: droidroot's
// result must be the chroot's. It returns the counters.
func countedAgainstChroot(t *testing.T, chrootOK func(stdout string) bool, opts []string, cmd ...string) map[string]int {
	t.Helper()
	g := debianGuest(t)
	g.Cwd = "/"
	want := viaChroot(t, g, "", cmd...)
	if want.Code != 0 || !chrootOK(want.Stdout) {
		t.Fatalf("chroot: %s", want)
	}
	got, counts := runCounted(t, withIdentity(droidrootArgs(droidrootBin(t), g, cmd...), opts...))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("droidroot %v against the chroot (-want +got):\n%s", opts, diff)
	}
	return counts
}

// fastPathStats is fastPathCounters' "answered" counts, by function.
func fastPathStats(stderr string) (map[string]int, string) {
	counts, rest := fastPathCounters(stderr)
	answered := map[string]int{}
	for k, n := range counts {
		if fn, ok := strings.CutSuffix(k, " answered"); ok {
			answered[fn] = n
		}
	}
	return answered, rest
}

// TestFastPath runs real glibc programs of the Debian guest with the fast
// path on and off: the same output, and with it on, the path calls were
// answered in-process (its counters), ld.so.preload stayed the guest's own.
func TestFastPath(t *testing.T) {
	needRoot(t)
	g := debianGuest(t)
	script := `
import os, sys, json, subprocess
out = []
for p in ["/etc/hostname", "/usr/lib", "/usr/bin/python3", "/nonexistent", "/usr/lib/nope/x", "/proc/self", "/dev/null", "/tmp"]:
    try:
        st = os.stat(p)
        out.append([p, st.st_mode, st.st_size if not os.path.isdir(p) else 0, st.st_uid])
    except OSError as e:
        out.append([p, e.errno])
    out.append([p, os.access(p, os.R_OK), os.path.islink(p)])
with open("/tmp/fp-file", "w") as f:
    f.write("x" * 5)
out.append(os.stat("/tmp/fp-file").st_size)
with open("/etc/hostname") as f:
    out.append(f.read())
out.append(os.readlink("/usr/lib/os-release") if os.path.islink("/usr/lib/os-release") else None)
import email.mime.text, http.client, xml.dom.minidom, json.decoder, decimal
import fcntl
os.makedirs("/tmp/fp-dir/sub", exist_ok=True)
d = os.open("/tmp/fp-dir", os.O_RDONLY | os.O_DIRECTORY)
for dup in [fcntl.fcntl(d, fcntl.F_DUPFD, 100), fcntl.fcntl(d, fcntl.F_DUPFD_CLOEXEC, 200), os.dup(d)]:
    out.append([os.stat("sub", dir_fd=dup).st_mode, os.stat("../fp-file", dir_fd=dup).st_size])
os.mkfifo("/tmp/fp-dir/fifo", 0o600)
os.mknod("/tmp/fp-dir/reg", 0o600)
os.truncate("/tmp/fp-file", 2)
os.utime("/tmp/fp-file", (10, 20))
st = os.stat("/tmp/fp-file")
out.append([oct(os.lstat("/tmp/fp-dir/fifo").st_mode), oct(os.lstat("/tmp/fp-dir/reg").st_mode), st.st_size, st.st_mtime])
os.chdir("/tmp/fp-dir/sub")
out.append([os.stat("../../fp-file").st_size, os.path.exists("../fifo"), os.path.exists("./../reg")])
for f in ["/tmp/fp-dir/fifo", "/tmp/fp-dir/reg"]:
    os.unlink(f)
print(json.dumps(out))
print(subprocess.run(["cat", "/etc/ld.so.preload"], capture_output=True).returncode)
`
	var outs []result
	for _, mode := range []string{"on", "off"} {
		argv := droidrootArgs(droidrootBin(t), g, "/usr/bin/python3", "-c", script)
		if mode == "off" {
			argv = append(argv[:2], append([]string{"--no-fastpath"}, argv[2:]...)...)
		}
		res := run(t, "", append([]string{"env", "DROIDROOT_FASTPATH_STATS=1", "DROIDROOT_FASTPATH=1"}, argv...)...)
		answered, rest := fastPathStats(res.Stderr)
		res.Stderr = rest
		if res.Code != 0 {
			t.Fatalf("fast path %s: %s", mode, res)
		}
		switch mode {
		case "on":
			if answered["stat"]+answered["statx"] < 10 || answered["open"] < 10 || answered["access"] < 3 {
				t.Errorf("fast path on: answered in-process %v; want stat, open and access calls", answered)
			}
			// fstatat under the three copies of a directory descriptor,
			// relative names with "..", and the write family's newer calls.
			for fn, n := range map[string]int{"fstatat": 6, "mknod": 2, "truncate": 1, "utimensat": 1, "fstat": 3} {
				if answered[fn] < n {
					t.Errorf("fast path on: %s answered in-process %d times, want at least %d (all: %v)", fn, answered[fn], n, answered)
				}
			}
		case "off":
			if len(answered) != 0 {
				t.Errorf("--no-fastpath: the library answered %v", answered)
			}
		}
		outs = append(outs, res)
	}
	if diff := cmp.Diff(outs[1], outs[0]); diff != "" {
		t.Errorf("fast path on differs from off (-off +on):\n%s", diff)
	}
	if !strings.HasSuffix(outs[0].Stdout, "\n1\n") {
		t.Errorf("the guest's cat /etc/ld.so.preload should fail (the rootfs has none): %s", outs[0].Stdout)
	}
}

// TestFastPathOracle runs every oracle probe with pathprobe.dyn (glibc
// wrappers, so the fast path answers what it can) with the fast path off:
// TestOracle runs it on; both must match the kernel.
func TestFastPathOracle(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: TestOracle covers the fast path on; the host run compares it off too")
	}
	needRoot(t)
	base := rootfs(t, "busybox")
	droidrootBin(t)
	off := func(t testing.TB, g guest, stdin string, cmd ...string) result {
		t.Helper()
		argv := droidrootArgs(droidrootBin(t), g, cmd...)
		return run(t, stdin, append(argv[:2], append([]string{"--no-fastpath"}, argv[2:]...)...)...)
	}
	for name, ops := range opsFiles(t) {
		t.Run(name, func(t *testing.T) {
			if reason, known := knownDivergences[name]; known {
				t.Skipf("a known divergence, which TestOracle checks still differs: %s", reason)
			}
			t.Parallel()
			want := probe(t, "chroot", viaChroot, base, "pathprobe.dyn", name, ops)
			got := probe(t, "droidroot-nofastpath", off, base, "pathprobe.dyn", name, ops)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("--no-fastpath differs from the chroot oracle on %s.ops (-chroot +droidroot):\n%s", name, diff)
			}
		})
	}
}

// symlinkedParentsOps are TestFastPathAnswers' ops for parents with
// symlinks on the way, run with and without -l.
const symlinkedParentsOps = "stat /fx/abs/file\nstat /fx/rel/sub/deep/f2\nstat /fx/relup/file\n" +
	"stat /fx/dir/sub/up/dir/file\nstat /fx/dir/sub/root/fx/dir/file\nstat /fx/dotdot/fx/dir/file\n" +
	"stat /fx/absdotdot/file\nstat /fx/bindlink/f\nstat /fx/bindlink-rel/g\nstat /fx/abs/nope\n" +
	"stat /fx/trailing/file\nstat /fx/mplink/m\nopen /fx/abs/file rdonly\nstat /fx/loop1/x\n" +
	"stat /fx/filelink/x\nstat /fx/proc-self/x\nstat /fx/dangling/x\nstat /fx/abs/sub/../file\n" +
	"cd /fx/scratch\nmkdir a\nmkdir a/b\nwrite a/b/f x\nsymlink a l\nstat /fx/scratch/l/b/f\n" +
	"unlink l\nsymlink a/b l\nstat /fx/scratch/l/b/f\nstat /fx/scratch/l/f\n" +
	"rename a c\nstat /fx/scratch/c/b/f\nstat /fx/scratch/a/b/f\nstat /fx/scratch/l/f\n" +
	"unlink c/b/f\nrmdir c/b\nrmdir c\nunlink l\n"

// tailsOps are TestFastPathAnswers' ops for paths whose last component is
// "", "." or "..".
const tailsOps = "stat /fx/dir/.\nstat /fx/dir/\nstat /fx/dir/sub/..\nstat /fx/dir//sub/./\n" +
	"lstat /fx/dir/deeplink/\nlstat /fx/dir/deeplink/.\nstat /fx/dir/file/\nstat /fx/dir/file/.\n" +
	"stat /fx/dir/nope/.\nstat /fx/dir/nope/..\nstat /fx/abs/.\nstat /mnt/b1/.\nstat /mnt/b1/nested/..\n" +
	"stat /mnt/b1/nested/.\nstat /mnt/.\nstat /mnt/alias/\nstat /mnt/b1/up/.\nstat /proc/self/.\n" +
	"stat /.\nstat /..\nstat /fx/dir/sub/../../..\nstatx /fx/dir/.\naccess /fx/dir/. r\n" +
	"access /fx/dir/ x\naccess /fx/dir/sub/.. w\nopen /fx/dir/. rdonly\nopen /fx/dir/sub/.. rdonly,directory\n" +
	"open /fx/dir/. wronly\nopen /fx/dir/. rdonly,creat\nopen /fx/dir/deeplink/ rdonly\nls /fx/dir/.\n" +
	"mkdir /fx/dir/.\nrmdir /fx/dir/sub/.\nunlink /fx/dir/sub/\nreadlink /fx/dir/.\n" +
	"cd /fx/dir\nstat .\nstat ./\nstat sub/.\nstat sub/..\nstat ..\nstat sub/\nlstat deeplink/\n" +
	"stat file/.\nstat nope/.\naccess . r\nopen . rdonly,directory\nls .\nls sub/..\n" +
	"fd 40 /fx/dir/sub rdonly,directory\nat 40 stat .\nat 40 stat ..\nat 40 open . rdonly,directory\n" +
	"at 40 stat deep/\ncd /mnt/b1\nstat .\nstat ..\nls .\ncd /mnt/b1/nested\nstat ..\n" +
	"cd /proc/self\nstat .\ncd /\nstat .\nls .\nstat ..\n"

// followOps are TestFastPathAnswers' ops for a symlink as the last
// component of a call that follows it.
const followOps = "stat /fx/abs\nstat /fx/absdotdot\nstat /fx/bindlink\nstat /fx/bindlink-rel\nstat /fx/chain1\n" +
	"stat /fx/cwdlink\nstat /fx/dangling\nstat /fx/dangling-rel\nstat /fx/dir/deeplink\nstat /fx/dotdot\n" +
	"stat /fx/etc-abs\nstat /fx/filelink\nstat /fx/filelink/\nstat /fx/loop1\nstat /fx/m1\nstat /fx/m25\n" +
	"stat /fx/n1\nstat /fx/mplink\nstat /fx/proc-self\nstat /fx/rel\nstat /fx/relup\nstat /fx/trailing\n" +
	"stat /mnt/b1/abs\nstat /mnt/b1/up\nstat /mnt/b1/rel\nstat /mnt/b1/hostabs\nstat /mnt/b2/dotdot\n" +
	"stat /mnt/b2/escape\nstat /fx/abs/deeplink\nlstat /fx/chain1\nstatx /fx/chain1\nstatx /fx/dangling\n" +
	"lstatx /fx/chain1\naccess /fx/chain1 r\naccess /fx/filelink x\naccess /fx/dangling f\naccess /fx/abs w\n" +
	"access /fx/chain1 f\naccess /fx/loop1 f\neaccess /fx/chain1 r\nlaccess /fx/chain1 r\n" +
	"fd 40 /fx/dir rdonly,directory\nat 40 stat deeplink\ncd /fx\nstat chain1\nstat dir/deeplink\n" +
	"access filelink r\nstat rel\ncd /fx/scratch\nwrite f x\nlink f h\nsymlink h s\nsymlink ../scratch/s s2\n" +
	"stat s\nstat s2\naccess s2 r\nstat h\nunlink s2\nunlink s\nunlink h\nunlink f\n"

// TestFastPathAnswers runs ops under the chroot oracle and under droidroot
// with the fast path's counters on: the same transcript, and each function's
// calls answered in-process as often as the case says. The oracle guest
// binds /fx/mp, /mnt/b1/nested and more, so /, /fx, /mnt and /mnt/b1 are bind
// points' ancestors: names in them go to the tracer (a ".." landing there,
// then a name), and so does ".." out of a bind's root (/mnt/b1/nested); the
// cases mix those with ".." the library takes.
func TestFastPathAnswers(t *testing.T) {
	needRoot(t)
	base := rootfs(t, "busybox")
	droidrootBin(t)
	for _, tc := range []struct {
		name, ops string
		want      map[string]int
		// android, when set, is want under a reproduced Android policy
		// (make test-e2e-android), which blocks faccessat2 and openat2.
		android map[string]int
	}{
		{"dotdot-cwd", "cd /fx/dir/sub/deep\nstat ../../file\nstat ../deep/f2\nstat ./f2\nstat .//f2\n" +
			"stat ../../sub/./deep/../deep/f2\nstat ../../../dir/file\nstat ../nope/../deep/f2\n" +
			"cd /mnt/b1/nested\nstat ../f\nstat ../../b1/f\ncd /mnt/alias/sub\nstat ../file\n",
			map[string]int{"stat": 6}, nil},
		{"dotdot-dirfd", "fd 40 /fx/dir/sub rdonly,directory\nat 40 stat ../file\nat 40 stat deep/../deep/f2\n" +
			"at 40 open ../file rdonly\nat 40 access ../file r\nat 40 readlink ../deeplink\nat 40 stat ../../dir/file\n",
			map[string]int{"fstatat": 2, "open": 2, "access": 1, "readlink": 1}, nil},
		// One name below a directory descriptor or the cwd: looked up
		// directly (no check of the descriptor first), and made again the
		// checked way when the answer could differ: a missing name (a
		// base that exists only for a bind point), an answer in /proc (a
		// /proc/self descriptor the tracer opened), no directory (a
		// descriptor number closed and taken by a socket the library never
		// saw), a name on a bind point's path (/, /mnt, /fx).
		{"direct", "fd 40 /fx/dir rdonly,directory\nat 40 stat sub\nat 40 lstat deeplink\nat 40 stat deeplink\n" +
			"at 40 stat nope\nat 40 statx sub\nat 40 statx nope\nfd 41 / rdonly,directory\nat 41 stat mnt\n" +
			"at 41 stat fx\nat 41 stat etc\nat 41 lstat bin\nfd 42 /mnt rdonly,directory\nat 42 stat b1\n" +
			"at 42 stat file\nat 42 stat alias\nat 42 stat nope\nfd 43 /proc/self rdonly,directory\n" +
			"at 43 stat status\nat 43 lstat cwd\nat 43 stat nope\nfd 44 /fx/dir/sub rdonly,directory\n" +
			"bind /fx/scratch/s\nat 3 stat deep\nat 44 stat deep\ncd /fx/dir\nstat sub\nlstat deeplink\n" +
			"stat nope\ncd /\nstat etc\nstat mnt\ncd /proc/self\nstat status\nstat nope\ncd /mnt\n" +
			"stat b2\nstat nope\nunlink /fx/scratch/s\n",
			map[string]int{"fstatat": 8, "statx": 2, "stat": 3, "lstat": 1}, nil},
		// Two names below the cwd: the cwd's identity comes from the
		// tracer's cwd record while it stands (counted as "cwd" answered),
		// from a stat of "." otherwise ("cwd" unverified): before the
		// first getcwd, and after each chdir until the next. The library
		// asks for the record itself (a trapped getcwd) after 16 stats of
		// ".", so a program that never calls getcwd gets it too.
		{"cwd-identity", "cd /fx/dir\nstat sub/deep\nstat sub/nope\ngetcwd\nstat sub/deep\nlstat sub/deeplink\n" +
			"stat sub/nope\nopen sub/f2 rdonly\ncd sub\nstat deep/f2\ngetcwd\nstat deep/f2\nstat deep/nope\n" +
			"cd /mnt/alias\nstat sub/deep\ngetcwd\nstat sub/deep\nstat sub/../file\ncd /fx/dir\n" +
			strings.Repeat("stat sub/deep\n", 17) + "stat sub/deep\nstat sub/deep\n",
			map[string]int{"cwd": 8 + 3}, nil},
		{"write-family", "cd /fx/scratch\nwrite t 0123456789\ntruncate t 4\ntruncate /fx/scratch/t 2\n" +
			"truncate nope 1\ntruncate /fx/filelink 6\ncat t\nunlink t\n", map[string]int{"truncate": 3}, nil},
		// mkdir takes a name with trailing slashes as the name (git makes
		// every directory so), and so does an O_DIRECTORY open without
		// O_CREAT (opendir("dir/")): answered in-process, with the
		// kernel's errors; for mkdir a symlink there (which the slash
		// follows) and a bind point go to the tracer, the open follows
		// the symlink (open-follow). Other opens that create
		// nothing take "dir/" as "dir/." (tails).
		{"trailing-slash", "mkdir /fx/scratch/ts/\nmkdir /fx/scratch/ts/\nmkdir /fx/scratch/ts//sub//\n" +
			"mkdir /fx/scratch/nope/x/\nmkdir /fx/dir/file/\nmkdir /fx/dir/filelink/\nmkdir /mnt/b1/\n" +
			"cd /fx/scratch\nmkdir rel/\nmkdir rel/../rel2/\nstat /fx/scratch/ts/sub\nrmdir /fx/scratch/ts/sub\n" +
			"rmdir /fx/scratch/ts\nrmdir rel\nrmdir rel2\nopen /fx/dir/sub/ rdonly,directory\n" +
			"open /fx/dir/file/ rdonly,directory\nopen /fx/dir/deeplink/ rdonly,directory\n" +
			"open /fx/dir/nope/ rdonly,directory\nopen /fx/dir/sub// rdonly,directory,nofollow\n" +
			"open /fx/dir/sub/ rdonly\nopen /fx/dir/file/ rdonly\n",
			map[string]int{"mkdir": 8, "open": 6}, nil},
		// An open that finds a symlink as its last component and creates
		// nothing follows it the guest's way in-process ("follow"), as
		// stat does (/etc/os-release, a link to ../usr/lib/os-release):
		// chains, absolute and relative targets, into and out of binds,
		// a dangling one (ENOENT), O_TRUNC through a link, under a
		// directory descriptor and the cwd. A loop, /proc, O_NOFOLLOW's
		// ELOOP and O_CREAT through a link go to the tracer, and so does
		// a name in /fx from there (a bind point's ancestor).
		{"open-follow", "open /fx/chain1 rdonly\nopen /fx/filelink rdonly\nopen /fx/dangling rdonly\n" +
			"open /fx/dangling-rel rdonly\nopen /fx/loop1 rdonly\nopen /fx/abs rdonly,directory\n" +
			"open /fx/bindlink rdonly,directory\nopen /mnt/b1/hostabs rdonly\nopen /mnt/b2/escape rdonly\n" +
			"open /mnt/b1/abs rdonly,directory\nopen /fx/proc-self rdonly,directory\nopen /fx/filelink rdonly,nofollow\n" +
			"open /fx/abs wronly\nopen /fx/m25 rdonly\nfd 40 /fx/dir rdonly,directory\nat 40 open deeplink rdonly,directory\n" +
			"cd /fx\nopen chain1 rdonly\ncd /fx/dir\ngetcwd\nopen deeplink rdonly,directory\ncd /fx/scratch\nwrite f xyz\nsymlink f s\n" +
			"symlink s s2\nopen s2 rdonly\nopen s wronly,trunc\ncat f\nopen s wronly,creat 0644\nsymlink nope d\n" +
			"open d wronly,creat 0644\nstat nope\nunlink nope\nunlink d\nunlink s2\nunlink s\nunlink f\n",
			map[string]int{"open": 18, "follow": 15}, map[string]int{"open": 17, "follow": 14}},
		// Removing or renaming a regular file changes no directory or
		// resolution anyone cached: the cached directories stay verified
		// through it ("dirs unverified" counts each verification), where a
		// symlink on the way removed and replaced shows on the next call.
		// Verified: /fx/dir and /fx/scratch once each, through the file's
		// removal and rename; /fx/scratch/a, then /fx/scratch/l as the
		// symlink's resolution; after the symlink's removal /fx/scratch (at
		// the mkdir), the new directory /fx/scratch/l and /fx/dir; after its
		// rmdir /fx/dir, /fx/scratch/a and /fx/scratch: 10. With every
		// removal counted as a change, each stat of /fx/dir/file after one
		// verifies again.
		{"removals", "stat /fx/dir/file\nstat /fx/dir/file\nwrite /fx/scratch/t x\nunlink /fx/scratch/t\n" +
			"stat /fx/dir/file\nwrite /fx/scratch/t x\nrename /fx/scratch/t /fx/scratch/u\nstat /fx/dir/file\n" +
			"unlink /fx/scratch/u\nstat /fx/dir/file\nmkdir /fx/scratch/a\nwrite /fx/scratch/a/f 1\n" +
			"symlink a /fx/scratch/l\nstat /fx/scratch/l/f\nunlink /fx/scratch/l\nmkdir /fx/scratch/l\n" +
			"write /fx/scratch/l/f 22\nstat /fx/scratch/l/f\nstat /fx/dir/file\nunlink /fx/scratch/l/f\n" +
			"rmdir /fx/scratch/l\nstat /fx/dir/file\nunlink /fx/scratch/a/f\nrmdir /fx/scratch/a\n",
			map[string]int{"dirs unverified": 10}, nil},
		{"openat2", "fd 40 /fx/dir/sub rdonly,directory\nopenat2 /fx/dir/file rdonly none\n" +
			"openat2 /fx/dir/nope rdonly none\nopenat2 /fx/scratch/o2 wronly,creat,excl none 0640\n" +
			"unlink /fx/scratch/o2\nat 40 openat2 ../file rdonly none\nopenat2 /fx/dir/file rdonly beneath\n" +
			"openat2 /fx/dir/file rdonly none 0640\n",
			map[string]int{"openat2": 4}, nil},
		// Parents with symlinks on the way (Wine's dosdevices/c:, merged
		// /usr's /lib): resolved the guest's way in-process, with what
		// only the tracer decides (a loop, a file, /proc, a missing
		// component) left to it; then the process's own changes to a
		// symlink and an ancestor on the way show on its next call.
		// (/fx/scratch/a/b/f once a is renamed: two missing levels.)
		{"symlinked-parents", symlinkedParentsOps,
			map[string]int{"stat": 17, "open": 2}, nil},
		// The same under -l (launchers' --link2symlink).
		{"symlinked-parents -l", symlinkedParentsOps,
			map[string]int{"stat": 17, "open": 2}, nil},
		// "//", "." and ".." before the last component of an absolute
		// path, resolved as symlinks are (".." out of a bind's root is
		// its mount point's parent); a missing or non-directory
		// component goes to the tracer; a last component that is not a
		// name is the tails case's.
		{"absolute-dots", "stat /fx/dir/sub/../file\nstat /fx//dir/./file\nstat /../fx/dir/file\n" +
			"stat /fx/dir/nope/../file\nstat /fx/dir/file/../file\nstat /mnt/b1/nested/../f\n" +
			"stat /mnt/alias/../b1/f\nstat /fx/dir/sub/..\nstat /fx/dir/\nopen /fx/dir/sub/../file rdonly\n" +
			"stat /fx/abs/../dir/file\nstat /fx/dir/deeplink/../deep/f2\n",
			map[string]int{"stat": 9, "open": 1}, nil},
		// realpath (and canonicalize_file_name): glibc's algorithm on the
		// library's readlink, getcwd and faccessat; loops, the 40-link
		// limit, dangling and missing names (the partial result), a file
		// with a trailing "/", "/." or "/..", binds and /proc.
		{"realpath", "realpath /fx/dir/file\nrealpath /fx/abs/sub/deep\nrealpath /fx/relup/sub/../file\n" +
			"realpath /fx/dir/deeplink/..\nrealpath /fx/dotdot\nrealpath /fx/absdotdot\nrealpath /fx/dangling\n" +
			"realpath /fx/dangling-rel\nrealpath /fx/loop1\nrealpath /fx/chain1\nrealpath /fx/filelink/\n" +
			"realpath /fx/filelink/.\nrealpath /fx/dir/file/..\nrealpath /fx/n0\nrealpath /fx/m0\n" +
			"realpath /fx/trailing/file\nrealpath /mnt/b1/f\nrealpath /fx/bindlink/f\nrealpath /fx/bindlink-rel\n" +
			"realpath /fx/proc-self/cwd\nrealpath //fx//dir/./sub/\nrealpath /fx/nope/x\nrealpath fx/dir\n" +
			"cd /fx/dir\nrealpath sub/deep/../../file\nrealpath ..\nrealpath .\nrealpath /mnt/b1/nested/../f\n" +
			"realpath /fx/dir/sub/up/dir/file\n",
			// readlink of /proc, /proc/self and /proc/PID on /fx/proc-self/cwd's way are
			// answered too (readlink_self); its cwd is the tracer's.
			map[string]int{"realpath": 56, "readlink answered": 278}, nil},
		// A path ending in "/", "/." or "/.." (or that is "." or ".."):
		// the stat family, access and an open that creates nothing take it
		// as "." below the directory the whole path resolves to (opendir(".")
		// of ls and find, Wine's /usr/lib/wine/../.., stat("dir/")); a file,
		// a missing name, /proc, and the calls that treat such a name their
		// own way go to the tracer.
		// access with a mode on a name accessed before: an lstat and the
		// check on the pin kept from then (from the name's second access:
		// "pins answered"; its mode changed is the pin's inode's, checked
		// then), never an answer of the file the pin no longer names: a
		// rename over it, its removal ("pins unverified": the pin is
		// dropped), a symlink in its place (followed; the pins of the
		// file it leads to); names below the cwd and below a cached parent;
		// the kept pins hidden from the process's listing of its descriptors.
		{"access-pins", "cd /fx/scratch\nwrite f x\nchmod f 644\naccess f x\naccess f x\naccess f x\n" +
			"chmod f 755\naccess f x\naccess f rx\nwrite g y\nchmod g 644\nrename g f\naccess f x\naccess f x\n" +
			"access f x\nunlink f\naccess f r\nsymlink /fx/dir/file f\naccess f r\naccess f r\nunlink f\n" +
			"mkdir d\nwrite d/h z\nchmod d/h 600\naccess /fx/scratch/d/h x\naccess /fx/scratch/d/h x\n" +
			"access /fx/scratch/d/h x\nchmod d/h 700\naccess /fx/scratch/d/h x\nls /proc/self/fd\nunlink d/h\nrmdir d\n",
			map[string]int{"access": 15, "pins": 7, "pins unverified": 2},
			map[string]int{"access": 15, "pins": 7, "pins unverified": 2}},
		// access with R_OK or X_OK that every class of the file's modes
		// grants (0755), on a name whose pin the kernel granted it through
		// before, with the ctime the file had when pinned: answered with
		// the lstat alone ("grants"). A mode not granted before (rx after
		// x), W_OK, a chmod (the ctime) and an ACL (a named user's entry
		// may refuse what the modes grant: never granted so) are the
		// kernel's check.
		{"access-granted", "cd /fx/scratch\nwrite f x\nchmod f 755\naccess f x\naccess f x\naccess f x\n" +
			"access f rx\naccess f rx\naccess f w\naccess f w\nchmod f 750\naccess f x\naccess f x\n" +
			"write g y\nchmod g 755\nacl g 65534 0\naccess g x\naccess g x\naccess g x\n" +
			"acl f 65534 0\naccess f x\n",
			map[string]int{"access": 13, "grants": 2, "pins": 7}, nil},
		// The same with the ids changed after a grant (setuid; not under
		// Android's policy, whose set*id changes no id): the ACL's user is
		// refused, a 0750 file too, a 0755 one still granted.
		{"access-granted-ids", "cd /fx/scratch\nwrite f x\nchmod f 750\naccess f x\naccess f x\naccess f x\n" +
			"write g y\nchmod g 755\nacl g 65534 0\naccess g x\naccess g x\naccess g x\n" +
			"write h z\nchmod h 755\naccess h x\naccess h x\nsetuid 65534\naccess g x\naccess f x\n" +
			"access h x\naccess h x\naccess h r\n",
			map[string]int{"access": 13, "grants": 2, "pins": 5}, nil},
		{"tails", tailsOps,
			map[string]int{"stat": 22, "lstat": 2, "fstatat": 5, "statx": 1, "access": 4, "open": 12}, nil},
		// A symlink as the last component of stat, statx or access:
		// followed the guest's way in-process ("follow" counts each),
		// its target mapped and verified as any path; a loop, a chain
		// longer than 16, /proc, and under -l a target that names link
		// data go to the tracer.
		{"follow", followOps, map[string]int{"follow": 33, "stat": 25, "statx": 3, "access": 7, "access symlink": 1},
			map[string]int{"follow": 33, "stat": 25, "statx": 3, "access": 6, "access flags": 1}},
		{"follow -l", followOps, map[string]int{"follow": 32, "stat": 23, "stat option": 4, "statx": 2, "access": 7},
			map[string]int{"follow": 32, "stat": 23, "stat option": 4, "statx": 2, "access": 6, "access flags": 1}},
		// unlink and rename under -l (links emulated): a name of an
		// emulated hard link (a symlink to link data) goes to the tracer,
		// which keeps the link's count; every other name is the kernel's
		// own call, made in-process (rm -r, git's temporary objects).
		{"l2s-entries -l", "cd /fx/scratch\nwrite f x\nlink f h\nstat h\nunlink f\nstat h\nrename h h2\nstat h2\n" +
			"write g y\nrename g g2\nunlink g2\nsymlink nowhere s\nrename s s2\nunlink s2\nmkdir d\nrename d d2\n" +
			"write d2/f z\nlink d2/f d2/h\nrename d2/f d2/h\nunlink d2/h\nunlink d2/f\nrmdir d2\nunlink h2\nunlink nope\n",
			map[string]int{"unlink": 4, "unlink option": 4, "rename": 3, "rename option": 2}, nil},
		// link under -l where the kernel makes links (the tracer tries
		// the kernel's first): in-process, but for a name of an emulated
		// link; with links refused (the l2s-entries case) every link is
		// the tracer's.
		{"l2s-links -l-real", "cd /fx/scratch\nwrite f x\nlink f h\nstat h\nlink f h\nlink nope n\nsymlink f s\n" +
			"link s s2\nlstat s2\nmkdir d\nlink d d2\nunlink s2\nunlink s\nunlink h\nunlink f\nrmdir d\n",
			map[string]int{"link": 4, "link option": 1, "unlink": 5}, nil},
		// The xattr calls that follow the name (Wine's DOS attributes):
		// made on its pin in-process; a symlink there, the l* forms and
		// /proc go to the tracer.
		{"xattr", "write /fx/scratch/x v\nsetxattr /fx/scratch/x user.dosattrib 0x20\n" +
			"getxattr /fx/scratch/x user.dosattrib\ngetxattr /fx/scratch/x user.nope\nlistxattr /fx/scratch/x\n" +
			"symlink x /fx/scratch/l\ngetxattr /fx/scratch/l user.dosattrib\nlgetxattr /fx/scratch/l user.dosattrib\n" +
			"getxattr /fx/scratch/nope user.a\ngetxattr /fx/dir/nope/x user.a\nsetxattr /fx/dir/nope/x user.a 1\n" +
			"cd /fx/scratch\ngetxattr x user.dosattrib\nremovexattr x user.dosattrib\ngetxattr x user.dosattrib\n" +
			"removexattr x user.dosattrib\nlistxattr x\ngetxattr /mnt/b1/f user.a\nsetxattr /proc/self/status user.a 1\n" +
			"getxattr /mnt user.a\nunlink l\nunlink x\n",
			map[string]int{"xattr": 13, "xattr symlink": 1, "xattr proc": 1, "xattr option": 1}, nil},
		// fstatfs: the kernel's answer in-process, but where the guest
		// may see the file in /dev/shm (the tracer's tmpfs answer:
		// TestProcMountsAndShm) and for a /proc file the tracer generated
		// (/proc/self/status: /proc's answer from the tracer).
		{"fstatfs", "fstatfs /fx/dir/file\nfstatfs /fx/dir\nfstatfs /mnt/b1/f\nfstatfs /proc/self/status\n" +
			"fstatfs /proc/self/stat\nfstatfs /\n", map[string]int{"fstatfs": 5, "fstatfs option": 1}, nil},
		// statfs: fstatfs of the name's pin in-process; /dev/shm (the
		// tracer's tmpfs answer: TestProcMountsAndShm), a symlink, a bind
		// point's ancestor, /proc, "/" and relative paths go to the tracer.
		{"statfs", "statfs /fx/dir/file\nstatfs /fx/dir\nstatfs /mnt/b1/f\nstatfs /fx/dir/nope\nstatfs /fx/dir/file/x\n" +
			"statfs /fx/filelink\nstatfs /proc/self/status\nstatfs /\nstatfs /mnt\ncd /fx/dir\nstatfs file\n",
			map[string]int{"statfs": 4}, nil},
		// The root itself ("/", or only slashes): the stat family's
		// answer is the rootfs's own (python's imports stat the cwd, "/"
		// when that is the cwd); "/." and "/.." are it too (tails), for
		// access and an open as well; readlink goes to the tracer.
		{"root", "stat /\nlstat /\nstat //\nlstat ///\nstatx /\nlstatx //\ncd /fx\nstat /\nopen / rdonly,directory\n" +
			"stat /.\nstat /..\naccess / r\nreadlink /\n",
			map[string]int{"stat": 5, "lstat": 2, "statx": 2, "access": 1, "open": 1}, nil},
		// getcwd: the first after a chdir, fchdir or a rename of the cwd
		// goes to the tracer, which publishes its answer; the next ones
		// are answered in-process while the kernel's cwd is the same host
		// directory, also where that directory has two guest names
		// (/fx/dir and /mnt/alias). A removed cwd is the tracer's ENOENT.
		{"getcwd", "cd /fx/dir\ngetcwd\ngetcwd\ncd /mnt/alias\ngetcwd\ngetcwd\ncd sub\ngetcwd\n" +
			"cd /fx/dir/sub\ngetcwd\ngetcwd\ncd /mnt/b1\ngetcwd\ngetcwd\nfd 40 /fx/dir/sub rdonly,directory\n" +
			"cd /mnt/alias\ngetcwd\nfchdir 40\ngetcwd\ngetcwd\ncd /fx/scratch\nmkdir a\ncd a\ngetcwd\ngetcwd\n" +
			"rename /fx/scratch/a /fx/scratch/b\ngetcwd\ngetcwd\nmkdir /fx/scratch/b/c\ncd c\ngetcwd\n" +
			"rmdir /fx/scratch/b/c\ngetcwd\ncd /\nrmdir /fx/scratch/b\ngetcwd\ngetcwd\n",
			map[string]int{"getcwd": 8}, nil},
		// A missing last directory on the way (git's .git/objects/xx/
		// before its first object), absolute and relative, in the rootfs
		// and in binds, "//" and "." on the way (fontconfig's
		// "<dir>//<file>"): answered in-process under droidroot's empty
		// directory once its parent verified and the name is missing
		// there; several missing levels the same way (fontconfig's cache
		// in a fresh home), once the nearest ancestor that verifies has
		// the next name missing. A file or a bind point on the way, and
		// several missing levels of a relative path, go to the tracer.
		{"missing-parent", "stat /fx/dir/nope/x\nstat /fx/dir//nope//x\nstat /fx/./dir/nope/./x\naccess /fx/dir/nope/x f\nopen /fx/dir/nope/x rdonly\n" +
			"open /fx/scratch/m/x wronly,creat,excl 0644\nmkdir /fx/scratch/m/x\nreadlink /fx/dir/nope/x\n" +
			"stat /mnt/nope/x\nstat /mnt/b1/nope/x\nstat /mnt/b1/nested/nope/x\nstat /mnt/alias/nope/x\n" +
			"cd /fx/scratch\nstat m/x\nopen m/x wronly,creat,excl 0644\nunlink m/x\nrename m/x y\nmkdir m\n" +
			"write m/x data\nstat m/x\nstat m/y/z\naccess m/y/z r\nopen m/y/z wronly,creat 0600\n" +
			"fd 41 /fx/scratch/m rdonly,directory\nat 41 stat y/z\nat 41 open y/z wronly,creat 0600\n" +
			"stat /fx/dir/file/x\nstat /fx/dir/nope/deeper/x\nstat m/y/w/z\nstat /fx/scratch/m/x/y\n" +
			"stat /fx/dir/nope/deeper/deepest/x\nopen /fx/scratch/q/r/x wronly,creat 0644\nmkdir /fx/dir/nope/deeper/x\n" +
			"stat /mnt/b1/nope/deeper/x\nstat /mnt/b1/f/deeper/x\nstat /mnt/b1/nested/nope/deeper/x\n" +
			"unlink m/x\nrmdir m\n",
			map[string]int{"stat": 14, "access": 2, "open": 8, "mkdir": 3, "readlink": 1, "unlink": 3, "rename": 1}, nil},
		// access follows the last component through its pin (a symlink
		// is followed first: "follow"); faccessat2's flags (AT_EACCESS: eaccess,
		// bash's test -x; AT_SYMLINK_NOFOLLOW) are answered in-process
		// where the policy lets the library make faccessat2, else libc's;
		// where it does not (Android), AT_EACCESS is faccessat's check
		// when the ids and capabilities make it the same one.
		{"access", "access /fx/dir/file r\naccess /fx/dir/file x\naccess /fx/dir/file f\naccess /fx/dir/deeplink r\n" +
			"access /fx/dir/nope r\naccess /fx/dir/sub/deep/f2 rwx\neaccess /fx/dir/file r\neaccess /fx/dir/file x\n" +
			"eaccess /fx/dir/deeplink x\neaccess /fx/dir/nope f\nlaccess /fx/dir/deeplink r\nlaccess /fx/dangling r\n" +
			"laccess /fx/dir/file w\ncd /fx/dir\naccess sub/deep/f2 w\neaccess sub/deep/f2 r\n",
			map[string]int{"access": 15, "follow": 2},
			map[string]int{"access": 12, "follow": 2, "access flags": 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			want := probe(t, "chroot", viaChroot, base, "pathprobe.dyn", tc.name, tc.ops)
			g := oracleGuest(t, base)
			if strings.Contains(tc.ops, "\nsetuid ") {
				if os.Getenv("DROIDROOT_ANDROID_POLICY") != "" {
					t.Skip("Android's policy emulates set*id without changing an id")
				}
				// Another user's calls walk the host path to the rootfs.
				for d := filepath.Dir(g.Root); d != filepath.Dir(d) && d != os.TempDir(); d = filepath.Dir(d) {
					if err := os.Chmod(d, 0o755); err != nil {
						t.Fatal(err)
					}
				}
			}
			argv := droidrootArgs(droidrootBin(t), g, "/progs/pathprobe.dyn", "-f", "-")
			env := []string{"env", "DROIDROOT_FASTPATH_STATS=1", "DROIDROOT_FASTPATH=1"}
			if _, opt, ok := strings.Cut(tc.name, " "); ok {
				// "name -l": with those options, -l's links emulated as
				// on Android ("-l-real": -l, the kernel's links made)
				if real := strings.TrimSuffix(opt, "-real"); real != opt {
					argv = withIdentity(argv, strings.Fields(real)...)
				} else {
					argv = withIdentity(argv, strings.Fields(opt)...)
					env = append(env, failLink...)
				}
			}
			res := run(t, tc.ops, append(env, argv...)...)
			counts, rest := fastPathCounters(res.Stderr)
			if res.Code != 0 || rest != "" {
				t.Fatalf("droidroot: %s", res)
			}
			if diff := cmp.Diff(want, res.Stdout); diff != "" {
				t.Errorf("droidroot differs from the chroot oracle (-chroot +droidroot):\n%s", diff)
			}
			// A key is a function (its calls answered in-process) or
			// "function reason".
			answered := tc.want
			if tc.android != nil && os.Getenv("DROIDROOT_ANDROID_POLICY") != "" {
				answered = tc.android
			}
			for key, n := range answered {
				if !strings.Contains(key, " ") {
					key += " answered"
				}
				if counts[key] != n {
					t.Errorf("%s: %d, want %d (all: %v)\n%s", key, counts[key], n, counts, res.Stderr)
				}
			}
		})
	}
}

// TestFastPathOwnFilter: a process that installs a seccomp filter of its
// own, through seccomp(2) or prctl(PR_SET_SECCOMP), has the library turned
// off from then on (its counters say "off"), and so do the programs it
// runs (their library stays off: no counters at all).
func TestFastPathOwnFilter(t *testing.T) {
	needRoot(t)
	g := debianGuest(t)
	seccompNr := map[string]int{"amd64": 317, "arm64": 277}[runtime.GOARCH]
	script := `
import ctypes, os, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
class Insn(ctypes.Structure):
    _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]
class Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(Insn))]
insns = (Insn * 1)(Insn(0x06, 0, 0, 0x7fff0000))  # ret SECCOMP_RET_ALLOW
prog = Prog(1, insns)
for i in range(5):
    os.stat("/etc/hostname")
assert libc.prctl(38, 1, 0, 0, 0) == 0  # PR_SET_NO_NEW_PRIVS
if sys.argv[1] == "prctl":
    r = libc.prctl(22, 2, ctypes.byref(prog), 0, 0)  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER
else:
    r = libc.syscall(int(sys.argv[2]), 1, 0, ctypes.byref(prog))  # SECCOMP_SET_MODE_FILTER
assert r == 0, ctypes.get_errno()
for i in range(7):
    os.stat("/etc/hostname")
sys.stdout.flush()
subprocess.run(["/usr/bin/stat", "-c", "%s", "/etc/hostname", "/usr/bin/stat"], check=True)
print(os.getpid())
`
	re := regexp.MustCompile(`(?m)^droidroot-fastpath\[(\d+)\]: stat (.*)$`)
	for _, how := range []string{"prctl", "seccomp"} {
		t.Run(how, func(t *testing.T) {
			argv := droidrootArgs(droidrootBin(t), g, "/usr/bin/python3", "-c", script, how, strconv.Itoa(seccompNr))
			res := run(t, "", append([]string{"env", "DROIDROOT_FASTPATH_STATS=1", "DROIDROOT_FASTPATH=1"}, argv...)...)
			if res.Code != 0 {
				t.Fatalf("%s", res)
			}
			lines := strings.Fields(res.Stdout)
			pid := lines[len(lines)-1]
			off := 0
			for _, m := range re.FindAllStringSubmatch(res.Stderr, -1) {
				if m[1] != pid {
					t.Errorf("process %s (the program python ran after its filter) has the library on: %s", m[1], m[0])
					continue
				}
				for _, f := range strings.Fields(m[2]) {
					if v, ok := strings.CutPrefix(f, "off="); ok {
						off, _ = strconv.Atoi(v)
					}
				}
			}
			if off < 7 {
				t.Errorf("stat calls after the filter that went to the tracer as off: %d, want at least 7\n%s", off, res.Stderr)
			}
		})
	}
}

// TestFastPathPreloadReaders: /etc/ld.so.preload as each reader sees it.
// A dynamic program's ld.so gets the merged file (the library loads: its
// counters show, and nothing says "cannot be preloaded"), and the program
// itself then reads the guest's own; a static program (busybox, the static
// pathprobe) reads the guest's own from its first open. 32-bit programs do
// not run under droidroot (TestProgram32), so no other ABI's ld.so reads it.
func TestFastPathPreloadReaders(t *testing.T) {
	needRoot(t)
	g := oracleGuest(t, rootfs(t, "busybox"))
	own := "# the guest's own\n"
	if err := os.WriteFile(filepath.Join(g.Root, "etc/ld.so.preload"), []byte(own), 0o644); err != nil {
		t.Fatal(err)
	}
	want := `"# the guest's own\n"`
	for _, tc := range []struct {
		name   string
		cmd    []string
		stdout string
		lib    bool
	}{
		{"busybox cat", []string{"/bin/cat", "/etc/ld.so.preload"}, own, false},
		{"static", []string{"/progs/pathprobe", "cat /etc/ld.so.preload"}, "cat /etc/ld.so.preload -> " + want + "\n", false},
		{"static-pie", []string{"/progs/pathprobe.pie", "cat /etc/ld.so.preload"}, "cat /etc/ld.so.preload -> " + want + "\n", false},
		{"dynamic", []string{"/progs/pathprobe.dyn", "cat /etc/ld.so.preload", "stat /fx/dir/file"}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			argv := droidrootArgs(droidrootBin(t), g, tc.cmd...)
			res := run(t, "", append([]string{"env", "DROIDROOT_FASTPATH_STATS=1", "DROIDROOT_FASTPATH=1"}, argv...)...)
			answered, rest := fastPathStats(res.Stderr)
			if res.Code != 0 || rest != "" {
				t.Fatalf("%s", res)
			}
			if tc.stdout != "" && res.Stdout != tc.stdout {
				t.Errorf("stdout = %q, want %q", res.Stdout, tc.stdout)
			}
			if tc.lib {
				if first, _, _ := strings.Cut(res.Stdout, "\n"); first != "cat /etc/ld.so.preload -> "+want {
					t.Errorf("the dynamic program read %q, want the guest's own", first)
				}
				if answered["stat"] == 0 {
					t.Errorf("the library did not load in the dynamic program (counters %v)", answered)
				}
			}
		})
	}
}

// TestFastPathEarlyCalls: a library's constructor that ld.so runs before
// the fast path library's (libselinux's, in Debian's coreutils: statfs of
// its file systems' mount points, access of its config) calls the
// library's wrappers before its own constructor; the first such call sets
// the library up, and the calls are answered in-process: no statfs or
// faccessat stop in ls.
func TestFastPathEarlyCalls(t *testing.T) {
	needRoot(t)
	g := debianGuest(t)
	argv := droidrootArgs(droidrootBin(t), g, "/bin/ls", "/")
	res := run(t, "", append([]string{"env", "DROIDROOT_FASTPATH_STATS=1", "DROIDROOT_FASTPATH=1", "DROIDROOT_STOPS=sites"}, argv...)...)
	answered, rest := fastPathStats(res.Stderr)
	if res.Code != 0 || !strings.Contains(res.Stdout, "etc\n") {
		t.Fatalf("%s", res)
	}
	if answered["statfs"] < 2 || answered["access"] < 1 {
		t.Errorf("ls's early statfs and access were not answered in-process: %v", answered)
	}
	// No stop made from the library's wrappers (ld.so's access of
	// /etc/ld.so.preload stops, as in every process).
	if m := regexp.MustCompile(`(?m)^.*\s(statfs|faccessat|access)\s+droidroot-fastpath-.*$`).FindString(rest); m != "" {
		t.Errorf("a call of ls's stopped in the library: %q\n%s", m, rest)
	}
}

// TestFastPathOwnFdsHidden: the library's own descriptors (its cached
// directories and its empty directory, at 768 and up) are not among a
// program's open descriptors however it looks for them: fstat and fcntl of
// each number (python's test_subprocess, leak checks) say EBADF, and a
// listing of its /proc/self/fd, /dev/fd, /proc/<pid>/fd or fdinfo leaves them out,
// whether opendir, fdopendir (python's listdir of a descriptor, find's fts)
// or scandir made it.
// The transcript is the one with the fast path off, and the library has
// directories cached when it looks.
func TestFastPathOwnFdsHidden(t *testing.T) {
	needRoot(t)
	g := debianGuest(t)
	script := `
import fcntl, os
for p in ("/etc/hostname", "/usr/lib/os-release", "/usr/share/doc", "/usr/bin/nope", "/usr/lib/nope/x"):
    try: os.stat(p)
    except OSError: pass
os.listdir("/usr/lib")
def ok(f, fd):
    try: f(fd); return True
    except OSError: return False
print("fstat", [fd for fd in range(1024) if ok(os.fstat, fd)])
print("fcntl", [fd for fd in range(1024) if ok(lambda fd: fcntl.fcntl(fd, fcntl.F_GETFD), fd)])
for d in ("/proc/self/fd", "/dev/fd/", "/proc/%d/fd" % os.getpid(), "/proc/thread-self/fd", "/proc/self/fdinfo", "/proc/%d/fdinfo/" % os.getpid()):
    name = d.replace(str(os.getpid()), "PID")
    if not os.path.isdir(d):  # the arm64 VM's /dev has no fd
        print(name, "missing")
        continue
    print(name, sorted(int(x) for x in os.listdir(d)))
fd = os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY)
print("listdir(fd)", sorted(int(x) for x in os.listdir(fd)))  # fdopendir
os.close(fd)
import ctypes, subprocess
libc = ctypes.CDLL(None)
lst = ctypes.POINTER(ctypes.c_void_p)()
n = libc.scandir(b"/proc/self/fd", ctypes.byref(lst), None, None)
print("scandir", sorted(int(ctypes.string_at(lst[i] + 19)) for i in range(n) if ctypes.string_at(lst[i] + 19).isdigit()))
find = subprocess.run(["find", "/usr/share/doc/", "/etc/", "/proc/self/fd/", "-mindepth", "1", "-maxdepth", "1", "-path", "/proc/*", "-printf", "%f\n"], capture_output=True, text=True)
print("find (fts)", find.returncode, sorted(int(x) for x in find.stdout.split()))
`
	// The listings are the library's own streams where libc's fstat of the
	// descriptor would stop: under -l, -i with another owner, and on glibc
	// 2.33 to 2.38 (such as Debian 12's); never under -H, whose hiding is
	// the tracer's.
	script = "import os; print('glibc', os.confstr('CS_GNU_LIBC_VERSION'))\n" + script
	for _, tc := range []struct {
		opts []string
		own  func(glibc int) bool
	}{
		{nil, fstatatGlibc},
		{[]string{"-l"}, func(int) bool { return true }},
		{[]string{"-i", "1000:1000"}, func(int) bool { return true }},
		{[]string{"-H"}, func(int) bool { return false }},
	} {
		opts := tc.opts
		t.Run(strings.Join(append([]string{"opts"}, opts...), " "), func(t *testing.T) {
			argv := withIdentity(droidrootArgs(droidrootBin(t), g, "/usr/bin/python3", "-c", script), opts...)
			off := run(t, "", append([]string{"env", "DROIDROOT_FASTPATH=0"}, argv...)...)
			if off.Code != 0 {
				t.Fatalf("fast path off: %s", off)
			}
			on := run(t, "", append([]string{"env", "DROIDROOT_FASTPATH=1", "DROIDROOT_FASTPATH_STATS=1"}, argv...)...)
			counts, _ := fastPathCounters(on.Stderr)
			if on.Code != 0 || counts["dirs answered"]+counts["dirs unverified"] == 0 {
				t.Fatalf("fast path on: no directories cached (%v): %s", counts, on)
			}
			glibc := glibcIn(t, on.Stdout, "glibc glibc ")
			if own := tc.own(glibc); (counts["readdir answered"] > 0) != own {
				t.Errorf("glibc %d: listings read in-process: %d, want some: %v", glibc, counts["readdir answered"], own)
			}
			if diff := cmp.Diff(off.Stdout, on.Stdout); diff != "" {
				t.Errorf("the program's descriptors with the fast path on differ from off (-off +on):\n%s", diff)
			}
		})
	}
}

// TestFastPathFstatL2S: under -l (launchers' --link2symlink, here with
// DROIDROOT_FAIL_LINK=1: every link is emulated, as on Android) and -i, the
// library answers fstat of a file that is no link data file itself (python's
// open makes one for every file: they went to the tracer), the owner shown
// as the identity's; a descriptor of a link's data file goes to the tracer,
// whose -l layer gives the link count. The transcript is the one with the
// library off.
func TestFastPathFstatL2S(t *testing.T) {
	needRoot(t)
	g := debianGuest(t)
	script := `
import os
d = "/tmp/l2s-fstat"
os.mkdir(d)
open(d + "/a", "w").write("x")
os.link(d + "/a", d + "/b")
for n in ("a", "b", "b"):
    with open(d + "/" + n) as f:
        st = os.fstat(f.fileno())
        print(n, st.st_uid, st.st_gid, st.st_nlink, st.st_size)
with open("/etc/hostname") as f:
    st = os.fstat(f.fileno())
    print("hostname", st.st_uid, st.st_nlink)
os.unlink(d + "/a"); os.unlink(d + "/b"); os.rmdir(d)
`
	argv := withIdentity(droidrootArgs(droidrootBin(t), g, "/usr/bin/python3", "-c", script), "-i", "1000:1000", "-l")
	env := []string{"env", "DROIDROOT_FAIL_LINK=1", "DROIDROOT_FASTPATH_STATS=1"}
	off := run(t, "", append(append(env, "DROIDROOT_FASTPATH=0"), argv...)...)
	if off.Code != 0 {
		t.Fatalf("fast path off: %s", off)
	}
	on := run(t, "", append(append(env, "DROIDROOT_FASTPATH=1"), argv...)...)
	counts, _ := fastPathCounters(on.Stderr)
	if on.Code != 0 {
		t.Fatalf("fast path on: %s", on)
	}
	if diff := cmp.Diff(off.Stdout, on.Stdout); diff != "" {
		t.Errorf("fast path on differs from off (-off +on):\n%s", diff)
	}
	if want := "hostname 1000 1\n"; !strings.Contains(on.Stdout, want) || !strings.Contains(on.Stdout, "b 1000 1000 2 1\n") {
		t.Errorf("want the identity's owner and the emulated link count:\n%s", on.Stdout)
	}
	// Python's open makes two fstats of each file: the link data's three opens go to the
	// tracer, /etc/hostname's is answered.
	if counts["fstat option"] != 6 || counts["fstat answered"] < 2 {
		t.Errorf("fstat counters %v: want 6 to the tracer (-l's link data), the others answered\n%s", counts, on.Stderr)
	}
}

// TestFastPathListingsL2S: under -l the library reads directory streams in-process
// (opendir, fdopendir, readdir, readdir_r, telldir, seekdir, rewinddir, scandir), leaving a
// batch to the tracer only where a symlink in it names link data. dirprobe's transcript
// (names, types, which names share an inode, positions, errors, a directory removed while
// listed) must be the chroot's (real hard links), and the same with the library off; the
// counters show batches read in-process and batches the tracer read for their links; with -0
// too (the launchers' options).
func TestFastPathListingsL2S(t *testing.T) {
	needRoot(t)
	g, want, fresh := dirprobeGuest(t)
	bin := droidrootBin(t)
	for _, tc := range []struct {
		name string
		opts []string
	}{{"-l", []string{"-l"}}, {"-0 -l", []string{"-0", "-l"}}} {
		t.Run(tc.name, func(t *testing.T) {
			for _, fp := range []string{"1", "0"} {
				fresh()
				argv := withIdentity(droidrootArgs(bin, g, "/progs/dirprobe.dyn", "/mnt/empty"), tc.opts...)
				res := run(t, "", append([]string{"env", "DROIDROOT_FAIL_LINK=1", "DROIDROOT_FASTPATH_STATS=1", "DROIDROOT_FASTPATH=" + fp}, argv...)...)
				counts, stderr := fastPathCounters(res.Stderr)
				if res.Code != 0 || stderr != "" {
					t.Fatalf("fast path %s: %s", fp, res)
				}
				if diff := cmp.Diff(want.Stdout, res.Stdout); diff != "" {
					t.Errorf("fast path %s differs from the chroot oracle (-chroot +droidroot):\n%s", fp, diff)
				}
				if fp == "1" && (counts["readdir answered"] < 5 || counts["readdir symlink"] < 3) {
					t.Errorf("readdir counters %v: want batches read in-process and batches with link data read by the tracer\n%s", counts, res.Stderr)
				}
				// readlink of a symlink is answered; of a hard link's names f1
				// and h1 (symlinks to link data), the tracer's (EINVAL: a
				// regular file).
				if fp == "1" && (counts["readlink answered"] < 1 || counts["readlink option"] != 2) {
					t.Errorf("readlink counters %v: want s1 answered, f1 and h1 left to the tracer\n%s", counts, res.Stderr)
				}
				if fp == "0" && counts["readdir answered"] != 0 {
					t.Errorf("library off, yet readdir answered in-process: %v", counts)
				}
			}
			fresh()
		})
	}
}

// TestFastPathCancellation: the library's open family is a cancellation point as glibc's is.
// cancelprobe cancels threads at open, openat, creat and fopen (a cancel pending at the call,
// and one sent while the open of a FIFO blocks), at calls that are no cancellation points
// (stat, access, fopen with "c", opendir), with cancellation disabled, and checks the caller's
// cancel type is kept: the transcript must be the chroot's with the library on and off. The
// library before this answered the pending cases after the open and hung in the FIFO's.
func TestFastPathCancellation(t *testing.T) {
	needRoot(t)
	g := busyboxGuest(t)
	work := openTempDir(t)
	g.Binds = append(g.Binds, work+":/mnt/empty")
	want := viaChroot(t, g, "", "/progs/cancelprobe.dyn", "/mnt/empty")
	if want.Code != 0 || want.Stderr != "" || !strings.Contains(want.Stdout, "FIFO for reading, blocked: cancelled") {
		t.Fatalf("chroot: %s", want)
	}
	bin := droidrootBin(t)
	for _, fp := range []string{"1", "0"} {
		argv := droidrootArgs(bin, g, "/progs/cancelprobe.dyn", "/mnt/empty")
		res, counts := againstChrootFastPath(t, want, fp, argv)
		// Opens that return: fopen with "c", and open with cancellation disabled (twice).
		if fp == "1" && counts["open answered"] < 3 {
			t.Errorf("open counters %v: want the opens that return answered in-process\n%s", counts, res.Stderr)
		}
	}
}

// TestFastPathStdio: where libc's fstat of a descriptor is a stop (-l, another owner under
// -0/-i, glibc 2.33 to 2.38), the library's fopen and fdopen give the stream the buffer glibc
// would give it at the first read or write (the fstat there cannot be wrapped), and its fclose
// frees it. stdioprobe's transcript (every mode, seeks, buffer sizes and line buffering,
// setvbuf before the first use, freopen, /dev/null, fdopen of a file, a pipe, /dev/null, in
// append mode and with setvbuf, bad descriptors and modes, 400 streams open at once) must be the
// chroot's with the library on and off; the counters show the buffers given, and the census
// as many fstat stops fewer.
func TestFastPathStdio(t *testing.T) {
	needRoot(t)
	g := busyboxGuest(t)
	needStdioprobe(t, g.Root)
	work := openTempDir(t)
	g.Binds = append(g.Binds, work+":/mnt/empty")
	want := viaChroot(t, g, "", "/progs/stdioprobe.dyn", "/mnt/empty")
	if want.Code != 0 || want.Stderr != "" || !strings.Contains(want.Stdout, "many: 400 of 400 read back") {
		t.Fatalf("chroot: %s", want)
	}
	oldGlibc := fstatatGlibc(glibcIn(t, want.Stdout, "glibc "))
	bin := droidrootBin(t)
	for _, tc := range []struct {
		opts []string
		own  bool // the library gives the buffers
	}{
		{nil, oldGlibc},
		{[]string{"-0", "-l"}, true},
		{[]string{"-H"}, oldGlibc},
	} {
		t.Run(strings.Join(append([]string{"opts"}, tc.opts...), " "), func(t *testing.T) {
			stops := map[string]int{}
			for _, fp := range []string{"0", "1"} {
				argv := withIdentity(droidrootArgs(bin, g, "/progs/stdioprobe.dyn", "/mnt/empty"), tc.opts...)
				res := run(t, "", append([]string{"env", "DROIDROOT_STOPS=1", "DROIDROOT_FASTPATH_STATS=1", "DROIDROOT_FASTPATH=" + fp}, argv...)...)
				counts, _ := fastPathCounters(res.Stderr)
				rows := stopCensus(t, res.Stderr)
				if res.Code != 0 {
					t.Fatalf("fast path %s: %s", fp, res)
				}
				if diff := cmp.Diff(want.Stdout, res.Stdout); diff != "" {
					t.Errorf("fast path %s differs from the chroot oracle (-chroot +droidroot):\n%s", fp, diff)
				}
				stops[fp] = rows["seccomp fstat"] + rows["seccomp newfstatat"] + rows["seccomp fstatat"] // fstatat: arm64's name
				// The table of buffers has 256 entries: of 400 streams open at
				// once, the rest get glibc's own buffer ("stdio long").
				if fp == "1" && tc.own && (counts["stdio answered"] < 200 || counts["stdio answered"]+counts["stdio long"] < 400) {
					t.Errorf("stdio counters %v: want a buffer given in-process for every stream until the table is full", counts)
				}
				if fp == "1" && !tc.own && counts["stdio answered"]+counts["fdopen answered"] != 0 {
					t.Errorf("stdio counters %v: want none given where libc's fstat is no stop", counts)
				}
				// fdopen's streams: a file, both ends of a pipe, append mode and
				// the unbuffered reader get the library's buffer; /dev/null,
				// a character device, keeps glibc's way.
				if fp == "1" && tc.own && (counts["fdopen answered"] != 5 || counts["fdopen flags"] != 1) {
					t.Errorf("fdopen counters %v: want 5 streams given their buffer in-process and 1 left to glibc", counts)
				}
			}
			if tc.own && stops["1"] > stops["0"]-200 {
				t.Errorf("fstat stops: %d with the library, %d without: want at least 200 fewer", stops["1"], stops["0"])
			}
		})
	}
}

// TestFastPathListings: without options, the library's own directory streams serve opendir
// and fdopendir where glibc's own fstat of the descriptor is a stop (glibc 2.33 to 2.38, whose
// fstat is newfstatat(fd, "", AT_EMPTY_PATH)): dirprobe's transcript (names, types, shared
// inodes, positions, errors, a directory removed while listed, scandir) must be the chroot's
// with the library on and off, the counters showing the streams read in-process exactly there.
func TestFastPathListings(t *testing.T) {
	needRoot(t)
	g, want, fresh := dirprobeGuest(t)
	needStdioprobe(t, g.Root)
	// stdioprobe prints the guest's glibc version first (and then fails: no such directory).
	glibc := glibcIn(t, viaChroot(t, g, "", "/progs/stdioprobe.dyn", "/nonexistent").Stdout, "glibc ")
	own := fstatatGlibc(glibc)
	bin := droidrootBin(t)
	for _, fp := range []string{"1", "0"} {
		fresh()
		argv := droidrootArgs(bin, g, "/progs/dirprobe.dyn", "/mnt/empty")
		res, counts := againstChrootFastPath(t, want, fp, argv)
		if fp == "1" && (counts["readdir answered"] > 0) != own {
			t.Errorf("glibc %d: listings read in-process %d, want some: %v\n%s", glibc, counts["readdir answered"], own, res.Stderr)
		}
	}
	fresh()
}

// againstChrootFastPath runs argv (a droidroot command line) with the library on (fp "1") or
// off ("0") and its counters printed; it fails t unless the run exits 0 with nothing but the
// counters on stderr, reports a stdout other than the chroot's (want), and returns the run and
// its counters (fastPathCounters).
func againstChrootFastPath(t *testing.T, want result, fp string, argv []string) (result, map[string]int) {
	t.Helper()
	res := run(t, "", append([]string{"env", "DROIDROOT_FASTPATH_STATS=1", "DROIDROOT_FASTPATH=" + fp}, argv...)...)
	counts, stderr := fastPathCounters(res.Stderr)
	if res.Code != 0 || stderr != "" {
		t.Fatalf("fast path %s: %s", fp, res)
	}
	if diff := cmp.Diff(want.Stdout, res.Stdout); diff != "" {
		t.Errorf("fast path %s differs from the chroot oracle (-chroot +droidroot):\n%s", fp, diff)
	}
	return res, counts
}

// glibcIn reads the glibc version a probe printed ("<prefix>2.36" at the start of out) as
// major*100+minor, failing t without one.
func glibcIn(t *testing.T, out, prefix string) int {
	t.Helper()
	var major, minor int
	if _, err := fmt.Sscanf(out, prefix+"%d.%d", &major, &minor); err != nil {
		t.Fatalf("no glibc version: %v: %s", err, out)
	}
	return major*100 + minor
}

// fstatatGlibc tells whether glibc version v (major*100+minor) makes fstat as
// newfstatat(fd, "", AT_EMPTY_PATH), which droidroot's filter traps (2.33 to 2.38).
func fstatatGlibc(v int) bool { return v >= 233 && v <= 238 }

// needStdioprobe skips (or fails, DROIDROOT_E2E_REQUIRED=1) where the busybox rootfs at root
// predates test/progs/stdioprobe.c.
func needStdioprobe(t *testing.T, root string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(root, "progs/stdioprobe.dyn")); err != nil {
		missing(t, "%s has no /progs/stdioprobe.dyn: the busybox rootfs predates test/progs/stdioprobe.c (test/mkrootfs.sh busybox rebuilds it)", root)
	}
}

// dirprobeGuest is the busybox guest with a scratch directory bound at /mnt/empty, dirprobe's
// transcript there in a real chroot, and fresh, which removes what dirprobe left in it.
func dirprobeGuest(t *testing.T) (g guest, want result, fresh func()) {
	t.Helper()
	g = busyboxGuest(t)
	work := openTempDir(t)
	g.Binds = append(g.Binds, work+":/mnt/empty")
	fresh = func() {
		if err := os.RemoveAll(filepath.Join(work, "t")); err != nil {
			t.Fatal(err)
		}
	}
	want = viaChroot(t, g, "", "/progs/dirprobe.dyn", "/mnt/empty")
	if want.Code != 0 || want.Stderr != "" {
		t.Fatalf("chroot: %s", want)
	}
	return g, want, fresh
}

// TestFastPathTrampolinePage: the library maps its trampoline page without leaving the process
// where the kernel can remap the page ld.so mapped (Linux 5.13: MREMAP_DONTUNMAP of a file's
// mapping), so its only stop of its own is the handshake; as before 5.13 (the test switch
// DROIDROOT_FASTPATH_REMAP=0) it opens its file, one stop more. Either way the library answers
// through the page.
func TestFastPathTrampolinePage(t *testing.T) {
	needRoot(t)
	g := busyboxGuest(t)
	args := droidrootArgs(droidrootBin(t), g, "/progs/pathprobe.dyn", "-f", "-")
	selfOpen := regexp.MustCompile(`(?m)^\s*(\d+)\s+seccomp\s+openat\s+droidroot-fastpath-`)
	for _, tc := range []struct {
		name  string
		env   []string
		opens int
	}{{"remapped", nil, 0}, {"opened", []string{"DROIDROOT_FASTPATH_REMAP=0"}, 1}} {
		if tc.opens == 0 && !kernelAtLeast(t, 5, 13) {
			tc.opens = 1 // MREMAP_DONTUNMAP of a file's mapping is 5.13's
		}
		t.Run(tc.name, func(t *testing.T) {
			env := append([]string{"env", "DROIDROOT_STOPS=sites", "DROIDROOT_FASTPATH_STATS=1", "DROIDROOT_FASTPATH=1"}, tc.env...)
			res := run(t, "stat /etc/hostname\n", append(env, args...)...)
			if res.Code != 0 {
				t.Fatalf("%s", res)
			}
			opens := 0
			for _, m := range selfOpen.FindAllStringSubmatch(res.Stderr, -1) {
				n, _ := strconv.Atoi(m[1])
				opens += n
			}
			if opens != tc.opens {
				t.Errorf("the library's own opens: %d, want %d\n%s", opens, tc.opens, res.Stderr)
			}
			if !regexp.MustCompile(`(?m)^droidroot-fastpath\[\d+\]: stat answered=1`).MatchString(res.Stderr) {
				t.Errorf("the library answered no stat:\n%s", res.Stderr)
			}
		})
	}
}

// kernelAtLeast reports whether the running kernel is major.minor or newer.
func kernelAtLeast(t *testing.T, major, minor int) bool {
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		t.Fatal(err)
	}
	release := unix.ByteSliceToString(uts.Release[:])
	ma, mi, ok := bench.KernelVersion(release)
	if !ok {
		t.Fatalf("kernel release %q", release)
	}
	return ma > major || ma == major && mi >= minor
}

// TestFastPathProcSelf: where the guest's /proc is the host's, the library answers readlink of
// the process's own /proc links (what glibc's realpath of /proc/self/exe reads: Wine, Chromium
// and python find their files that way) as the tracer does, with droidroot's record of the
// program for exe (the kernel's names the loader); other spellings and links go to the tracer.
// Without the host's /proc every one is the tracer's.
func TestFastPathProcSelf(t *testing.T) {
	needRoot(t)
	g := busyboxGuest(t)
	ops := "readlink /proc/self/exe\nreadlink /proc/thread-self/exe\nreadlink /proc/self\nreadlink /proc/thread-self\n" +
		"readlink /proc\nrealpath /proc/self/exe\nreadlink /proc/self/cwd\nreadlink //proc/self/exe\nreadlink /proc/self/exe/\n"
	digits := regexp.MustCompile(`\d+`)
	transcript := func(g guest, env ...string) (string, map[string]int) {
		t.Helper()
		args := droidrootArgs(droidrootBin(t), g, "/progs/pathprobe.dyn", "-f", "-")
		res := run(t, ops, append(append([]string{"env", "DROIDROOT_FASTPATH_STATS=1"}, env...), args...)...)
		if res.Code != 0 {
			t.Fatalf("%s", res)
		}
		counts, _ := fastPathCounters(res.Stderr)
		return digits.ReplaceAllString(res.Stdout, "N"), counts
	}
	noProc := g
	noProc.Binds = nil
	for _, b := range g.Binds {
		if b != "/proc" {
			noProc.Binds = append(noProc.Binds, b)
		}
	}
	for _, tc := range []struct {
		name           string
		g              guest
		answered, proc int
	}{
		// Five readlinks, and twice (pathprobe's realpath asks with a buffer and without) six
		// of realpath's: /proc, /proc/self, /proc/PID, /proc/PID/exe, /progs, the program. The
		// cwd and "//proc" are the tracer's ("exe/" is counted as dots).
		{"host /proc", g, 17, 2},
		{"no /proc", noProc, 0, 11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			off, _ := transcript(tc.g, "DROIDROOT_FASTPATH=0")
			on, counts := transcript(tc.g, "DROIDROOT_FASTPATH=1")
			if diff := cmp.Diff(off, on); diff != "" {
				t.Errorf("transcript with the library (+) and without (-):\n%s", diff)
			}
			if tc.g.Binds[0] == "/proc" && !strings.Contains(on, `readlink /proc/self/exe -> "/progs/pathprobe.dyn"`) {
				t.Errorf("readlink /proc/self/exe is not the program's guest path:\n%s", on)
			}
			if counts["readlink answered"] != tc.answered || counts["readlink proc"] != tc.proc {
				t.Errorf("readlink answered %d, went to the tracer for /proc %d; want %d and %d (%v)\n%s",
					counts["readlink answered"], counts["readlink proc"], tc.answered, tc.proc, counts, on)
			}
		})
	}
}

// TestFastPathOtherUID: a process that changed its ids for real (a
// droidroot run as root; apt's sandbox user, su) reads the merged preload
// file like every other, so ld.so loads the library, which stays off there
// (it cannot map the session's shared files, which are root's); the
// program itself then reads the guest's own /etc/ld.so.preload, as in a
// chroot. The merged file was out of its reach, and the program read it in
// ld.so's place: EACCES.
func TestFastPathOtherUID(t *testing.T) {
	needRoot(t)
	if os.Getenv("DROIDROOT_ANDROID_POLICY") != "" {
		t.Skip("Android's policy emulates set*id without changing an id")
	}
	g := debianGuest(t)
	g.Cwd = "/" // the bound /tmp's host parents are root's alone
	script := `cat /etc/ld.so.preload; echo "cat $?"; id -u; ls -d /etc/apt /mnt/work`
	cmd := []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/bin/sh", "-c", script}
	want := viaChroot(t, g, "", cmd...)
	if want.Code != 0 || !strings.Contains(want.Stdout, "cat 1\n65534\n") {
		t.Fatalf("chroot: %s", want)
	}
	argv := droidrootArgs(droidrootBin(t), g, cmd...)
	got, counts := runCounted(t, argv)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("droidroot against the chroot (-want +got):\n%s", diff)
	}
	answered := 0
	for k, n := range counts {
		if strings.HasSuffix(k, " answered") {
			answered += n
		}
	}
	if counts["open off"] == 0 || answered != 0 {
		t.Errorf("the library should load and stay off in the processes: counters %v", counts)
	}
}

// fastPathIDsScript reads its ids every way glibc gives them (and through
// syscall()), changes one thread's saved uid with a raw setresuid (the
// kernel's ids are per thread: the other threads keep theirs; its euid stays
// 0, so that glibc's later calls succeed in it too if it lingers: glibc
// aborts where they fail in one thread), then the process's with glibc's
// setresgid and setresuid (every thread's), once the thread is gone.
const fastPathIDsScript = `
import os, ctypes, threading, time
libc = ctypes.CDLL(None, use_errno=True)
setresuid, getuid = {"x86_64": (117, 102), "aarch64": (147, 174)}[os.uname().machine]
print(os.getuid(), os.geteuid(), os.getgid(), os.getegid(), os.getresuid(), os.getresgid(), libc.syscall(getuid))
out = []
def raw():
    libc.syscall(setresuid, -1, -1, 5)
    out.append((os.getuid(), os.geteuid(), os.getresuid(), libc.syscall(getuid)))
th = threading.Thread(target=raw); th.start(); th.join()
print(out[0], os.getuid(), os.getresuid(), libc.syscall(getuid))
while len(os.listdir("/proc/self/task")) > 1: # the thread reaped
    time.sleep(0.001)
os.setresgid(20, 21, 22); os.setresuid(10, 11, 12)
print(os.getuid(), os.geteuid(), os.getgid(), os.getegid(), os.getresuid(), os.getresgid())
`

// TestFastPathIDs: under -0 the library answers the get*id family from the
// ids the tracer published at the handshake, stops answering once a set*id
// call of any thread may have changed them, and answers again once every
// thread has the same ones: the same answers as root's in a real chroot,
// the first and the last ones made in-process (counters).
func TestFastPathIDs(t *testing.T) {
	needRoot(t)
	const wantOut = "0 0 0 0 (0, 0, 0) (0, 0, 0) 0\n(0, 0, (0, 0, 5), 0) 0 (0, 0, 0) 0\n10 11 20 21 (10, 11, 12) (20, 21, 22)\n"
	counts := countedAgainstChroot(t, func(out string) bool { return out == wantOut },
		[]string{"-0"}, "python3", "-c", fastPathIDsScript)
	// The first line's seven, python's own at its start, and the last
	// line's six (glibc's setresuid made every thread's ids the same
	// again: published again); between the raw setresuid and glibc's,
	// every one goes to the tracer.
	if counts["ids answered"] < 13 || counts["ids unverified"] < 7 {
		t.Errorf("get*id answered %d times in-process, %d by the tracer (want at least 13 and 7): counters %v",
			counts["ids answered"], counts["ids unverified"], counts)
	}
}

// fastPathSocketScript connects, binds, accepts and names sockets of each
// kind: TCP and UDP on 127.0.0.1 (made in-process), abstract AF_UNIX names
// (connect and bind in-process too), AF_UNIX paths (the tracer's), and the
// kernel's errors and truncation.
const fastPathSocketScript = `import socket, os, errno
def tryit(name, f):
    try:
        r = f()
        print(name, "ok" if r is None else r)
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, e.errno))
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
port = srv.getsockname()[1]
c = socket.socket(); tryit("tcp connect", lambda: c.connect(("127.0.0.1", port)))
a, _ = srv.accept(); c.sendall(b"hi"); print("tcp data", a.recv(2))
tryit("tcp connect again", lambda: c.connect(("127.0.0.1", port)))
tryit("bind in use", lambda: socket.socket().bind(("127.0.0.1", port)))
d = socket.socket(); d.bind(("127.0.0.1", 0)); dport = d.getsockname()[1]; d.close()
tryit("refused", lambda: socket.socket().connect(("127.0.0.1", dport)))
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); tryit("udp bind", lambda: u.bind(("127.0.0.1", 0)))
v = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); tryit("udp connect", lambda: v.connect(u.getsockname())); v.send(b"x"); print("udp data", u.recv(1))
tryit("family mismatch", lambda: socket.socket().connect(("::1", 1, 0, 0)) if False else socket.socket(socket.AF_INET6).connect(("127.0.0.1", 1)))
ab = socket.socket(socket.AF_UNIX); tryit("abstract bind", lambda: ab.bind(b"\0droidroot-test-%d" % os.getpid())); ab.listen(1)
ac = socket.socket(socket.AF_UNIX); tryit("abstract connect", lambda: ac.connect(b"\0droidroot-test-%d" % os.getpid()))
p = socket.socket(socket.AF_UNIX); tryit("path bind", lambda: p.bind("/tmp/sock-%d" % os.getpid())); p.listen(1)
pc = socket.socket(socket.AF_UNIX); tryit("path connect", lambda: pc.connect("/tmp/sock-%d" % os.getpid())); print("path peer", pc.getpeername() == "/tmp/sock-%d" % os.getpid())
os.unlink("/tmp/sock-%d" % os.getpid())
tryit("path missing", lambda: socket.socket(socket.AF_UNIX).connect("/tmp/nonexistent/sock"))
s = socket.socket(); s.close(); tryit("closed fd", lambda: s.connect(("127.0.0.1", port)))
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
print("bad fd", libc.connect(9999, b"\x02\x00\x00\x50\x7f\x00\x00\x01" + b"\0"*8, 16), errno.errorcode[ctypes.get_errno()])
print("bad addr", libc.connect(c.fileno(), ctypes.c_void_p(8), 16), errno.errorcode[ctypes.get_errno()])
print("tcp names", srv.getsockname() == ("127.0.0.1", port), c.getpeername() == ("127.0.0.1", port), a.getsockname() == ("127.0.0.1", port))
tryit("unconnected peer", lambda: socket.socket().getpeername())
r, w = os.pipe(); tryit("pipe peer", lambda: socket.socket(fileno=os.dup(r)).getpeername())
q = socket.socket(socket.AF_UNIX); q.bind("/tmp/sockq-%d" % os.getpid()); q.listen(1)
qc = socket.socket(socket.AF_UNIX); qc.connect("/tmp/sockq-%d" % os.getpid())
qn = "/tmp/sockq-%d" % os.getpid()
qa, qpeer = q.accept(); print("unix accept", repr(qpeer), q.getsockname() == qn, qc.getpeername() == qn, repr(qa.getpeername()), qa.getsockname() == qn)
os.unlink("/tmp/sockq-%d" % os.getpid())
buf = ctypes.create_string_buffer(16); ln = ctypes.c_uint(4)
print("truncated", libc.getsockname(srv.fileno(), buf, ctypes.byref(ln)), ln.value, buf.raw[:4] == bytes([2, 0]) + port.to_bytes(2, "big"), buf.raw[4:8])
print("bad len ptr", libc.getsockname(srv.fileno(), buf, ctypes.c_void_p(8)), errno.errorcode[ctypes.get_errno()])
print("bad fd name", libc.getpeername(9999, buf, ctypes.byref(ln)), errno.errorcode[ctypes.get_errno()])
c2 = socket.socket(); c2.connect(("127.0.0.1", port))
print("accept4", libc.accept4(srv.fileno(), None, None, socket.SOCK_CLOEXEC) > 2)
print("accept bad", libc.accept(w, None, None), errno.errorcode[ctypes.get_errno()])
`

// TestFastPathSocket: connect and bind of the addresses droidroot leaves as
// they are (AF_INET, AF_INET6, abstract AF_UNIX names), and getsockname,
// getpeername, accept and accept4 of sockets of another family than
// AF_UNIX, are made by the library through the trampoline, the rest by
// libc's (the tracer translates an AF_UNIX path): the same transcript as in
// a real chroot, most of the calls in-process (counters).
func TestFastPathSocket(t *testing.T) {
	needRoot(t)
	counts := countedAgainstChroot(t, func(out string) bool {
		return strings.Contains(out, "tcp data b'hi'\n") && strings.Contains(out, "path peer True\n") &&
			strings.Contains(out, "unix accept '' True True '' True\n")
	}, nil, "python3", "-c", fastPathSocketScript)
	// About 50 calls on sockets of other families than AF_UNIX's or with
	// abstract names (python's own getsockname of each socket it makes
	// included); the AF_UNIX paths' binds, connects and names go to
	// libc's (a bad fd's and a bad pointer's connect too: the kernel's
	// answer either way).
	if counts["socket answered"] < 40 || counts["socket flags"] < 10 {
		t.Errorf("socket calls: %d in-process, %d by libc (want at least 40 and 10): counters %v",
			counts["socket answered"], counts["socket flags"], counts)
	}
}

// TestFastPathFDLimit: a program that fills its descriptor table up to
// RLIMIT_NOFILE gets as many descriptors as in a chroot, by open, socketpair,
// pipe and dup: the library's cached directories (about 40 here, at 768 and
// up, below the limit of 1024) are given back at the first EMFILE and the
// call made again (fastpath.c's shed).
func TestFastPathFDLimit(t *testing.T) {
	needRoot(t)
	g := debianGuest(t)
	script := `
import errno, os, resource, socket
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (1024, max(hard, 1024)))
# names below many directories, twice: the library caches the directories
dirs = sorted(e.path for e in os.scandir("/usr/share") if e.is_dir(follow_symlinks=False))[:90]
for _ in range(2):
    for d in dirs:
        os.path.exists(d + "/no-such-file")
    os.path.exists("/no/such/dir/file")  # a parent proven missing: the empty directory's
def fill(make):
    got = []
    try:
        while True:
            got.extend(make())
    except OSError as e:
        if e.errno != errno.EMFILE:
            raise
    for fd in got:
        os.close(fd)
    return len(got)
print("open", fill(lambda: [os.open("/dev/null", os.O_RDONLY)]))
print("socketpair", fill(lambda: [s.detach() for s in socket.socketpair()]))
print("pipe", fill(lambda: list(os.pipe())))
print("dup", fill(lambda: [os.dup(0)]))
`
	cmd := []string{"/usr/bin/python3", "-c", script}
	want := viaChroot(t, g, "", cmd...)
	if want.Code != 0 {
		t.Fatalf("chroot: %s", want)
	}
	got := run(t, "", append([]string{"env", "DROIDROOT_FASTPATH=1"}, droidrootArgs(droidrootBin(t), g, cmd...)...)...)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("droidroot against the chroot (-want +got):\n%s", diff)
	}
	// The same with the counters on (whose copy of stderr is one
	// descriptor more): the library did give descriptors back.
	res := run(t, "", append([]string{"env", "DROIDROOT_FASTPATH_STATS=1", "DROIDROOT_FASTPATH=1"}, droidrootArgs(droidrootBin(t), g, cmd...)...)...)
	counts, _ := fastPathCounters(res.Stderr)
	if res.Code != 0 || counts["shed answered"] == 0 || counts["dirs answered"] == 0 {
		t.Errorf("with the counters: exit %d, counters %v (want shed and dirs answered)", res.Code, counts)
	}
}

// TestFastPathManyBinds runs path calls under the oracle guest with a
// launcher's number of binds more (some 25: each its own first component,
// one nested in another, one beside /mnt/b1 whose name starts as b1's, one
// whose first component starts as /fx's): the chroot's transcript, and
// the calls under a bind, in the rootfs beside one and in a bind point's
// ancestor answered in-process where a guest with few binds has them
// answered (the library compares a path only with the binds that share
// its first component: a bind missed would map the path into the rootfs).
func TestFastPathManyBinds(t *testing.T) {
	needRoot(t)
	base := rootfs(t, "busybox")
	bin := droidrootBin(t)
	g := oracleGuest(t, base)
	oracleBinds := len(g.Binds)
	dir := t.TempDir()
	for i := 0; i < 24; i++ {
		d := filepath.Join(dir, fmt.Sprintf("l%02d", i))
		makeTree(t, d, tree{"x": fmt.Sprintf("l%02d\n", i), "sl": "->x", "in/w": "w\n", "in/bb/": ""})
		g.Binds = append(g.Binds, fmt.Sprintf("%s:/l%02d", d, i))
	}
	makeTree(t, filepath.Join(dir, "bb"), tree{"z": "bb\n"})
	makeTree(t, filepath.Join(dir, "b1x"), tree{"y": "b1x\n"})
	makeTree(t, filepath.Join(dir, "fxd"), tree{"z": "fxd\n"})
	g.Binds = append(g.Binds, filepath.Join(dir, "bb")+":/l03/in/bb", filepath.Join(dir, "b1x")+":/mnt/b1x",
		filepath.Join(dir, "fxd")+":/fxd")
	ops := "stat /fx/dir/file\nlstat /fx/dir/file\naccess /fx/dir/file r\nopen /fx/dir/file rdonly\n" +
		"stat /fx/dir/nope\nstat /mnt/b1/f\nstat /mnt/b1/nested/n\nstat /mnt/b1x/y\nstat /mnt/b1xx\n" +
		"stat /l00/x\nstat /l07/x\nlstat /l07/sl\nstat /l07/sl\nstat /l23/x\nstat /l23/nope\n" +
		"stat /l03/in/bb/z\nstat /l03/in/w\nstat /l04/in/w\nstat /fxd/z\nstat /fxd/nope\nreadlink /l05/sl\n" +
		"access /l06/x r\nopen /l06/x rdonly\nfd 40 / rdonly,directory\nat 40 stat l05\nat 40 stat fxd\n" +
		"at 40 stat etc\nfd 41 /l08 rdonly,directory\nat 41 stat x\nat 41 stat in\ncd /l10\nstat x\nstat nope\n" +
		"stat in/w\ncd /\nstat /etc/passwd\n"
	for _, b := range g.Binds[oracleBinds:] { // the chroot's mount points
		if _, gp, _ := strings.Cut(b, ":"); !strings.HasPrefix(gp, "/l03/") {
			if err := os.Mkdir(filepath.Join(g.Root, gp), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(g.Root, "many.ops"), []byte(ops), 0o644); err != nil {
		t.Fatal(err)
	}
	want := viaChroot(t, g, "", "/progs/pathprobe.dyn", "-f", "/many.ops")
	if want.Code != 0 || want.Stderr != "" {
		t.Fatalf("chroot: %s", want)
	}
	got, counts := runCounted(t, droidrootArgs(bin, g, "/progs/pathprobe.dyn", "-f", "/many.ops"))
	t.Logf("counters: %v", counts)
	if diff := cmp.Diff(want.Stdout, got.Stdout); diff != "" {
		t.Errorf("droidroot differs from the chroot oracle (-chroot +droidroot):\n%s", diff)
	}
}

// fastPathWaitsScript waits for children every way a shell and python do:
// bash's blocking wait and WNOHANG wait after each child, a background job,
// python's os.waitpid with WNOHANG (children none ready, exited, no child),
// os.wait4's rusage, os.wait and errors.
const fastPathWaitsScript = `for i in 1 2 3; do /bin/true; done; (exit 3); echo $?; sleep 0.2 & wait $!; echo bg $?
python3 - <<'PY'
import os, time, errno
pid = os.fork()
if pid == 0:
    time.sleep(0.3); os._exit(4)
print("none ready", os.waitpid(pid, os.WNOHANG))
while True:
    r = os.waitpid(pid, os.WNOHANG)
    if r != (0, 0):
        break
    time.sleep(0.01)
print("exited", r[0] == pid, os.waitstatus_to_exitcode(r[1]))
pid = os.fork()
if pid == 0:
    os._exit(5)
p, st, ru = os.wait4(pid, 0)
print("wait4", p == pid, os.waitstatus_to_exitcode(st), ru.ru_maxrss > 0)
pid = os.fork()
if pid == 0:
    os._exit(6)
p, st = os.wait()
print("wait", p == pid, os.waitstatus_to_exitcode(st))
for f in (lambda: os.waitpid(-1, os.WNOHANG), lambda: os.waitpid(-1, 0), lambda: os.waitpid(0, 1 << 20)):
    try:
        print(f())
    except OSError as e:
        print(errno.errorcode[e.errno])
PY`

// TestFastPathWaits: the waits of a process that traces nobody, made with
// WNOHANG in-process (counter "wait"): the chroot's results, and a blocking
// wait with no child ready left to the tracer (a stop, as before).
// TestPtraceProbe's waitfirst: the waits of a process that becomes a tracer.
func TestFastPathWaits(t *testing.T) {
	needRoot(t)
	const wantOut = "3\nbg 0\nnone ready (0, 0)\nexited True 4\nwait4 True 5 True\nwait True 6\nECHILD\nECHILD\nEINVAL\n"
	counts := countedAgainstChroot(t, func(out string) bool { return out == wantOut }, nil, "/bin/bash", "-c", fastPathWaitsScript)
	// bash's WNOHANG wait after each of its 5 children, python's 3
	// errors, its first WNOHANG and its last poll at least.
	if counts["wait answered"] < 10 || counts["wait flags"] == 0 {
		t.Errorf("waits answered in-process %d (want at least 10), blocking waits to the tracer %d: counters %v",
			counts["wait answered"], counts["wait flags"], counts)
	}
}

// TestFastPathSmallStack: the library's frames live on its caller's stack. stackprobe makes
// the same path calls (symlinks on the way and last, an absolute symlink, trailing slashes,
// "..", a missing directory, mkdir, rename, rmdir, creat, unlink, realpath, fopen, opendir,
// statx, syscall()) on the main thread, on a thread with a 16 KiB stack (PTHREAD_STACK_MIN on
// x86_64) and in a signal handler on a 16 KiB alternate stack: every line must be the chroot's,
// with the library on and off, and the counters show each small stack's calls answered
// in-process. Before, the library's deepest call took 19 KiB of frames: SIGSEGV on both.
func TestFastPathSmallStack(t *testing.T) {
	needRoot(t)
	g := busyboxGuest(t)
	progs := progsDir(t, "stackprobe")
	work := openTempDir(t)
	g.Binds = append(g.Binds, progs+":/mnt/b2", work+":/mnt/empty")
	fresh := func() {
		ents, err := os.ReadDir(work)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if err := os.RemoveAll(filepath.Join(work, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := viaChroot(t, g, "", "/mnt/b2/stackprobe.dyn", "/mnt/empty")
	if want.Code != 0 || want.Stderr != "" || strings.Count(want.Stdout, "= ok") < 3*18 {
		t.Fatalf("chroot: %s", want)
	}
	bin := droidrootBin(t)
	for _, fp := range []string{"1", "0"} {
		fresh()
		argv := droidrootArgs(bin, g, "/mnt/b2/stackprobe.dyn", "/mnt/empty")
		_, counts := againstChrootFastPath(t, want, fp, argv)
		// Each mode makes one rename and one realpath, and follows four
		// links: all three modes' answered in-process.
		if fp == "1" && (counts["rename answered"] < 3 || counts["realpath answered"] < 3 || counts["follow answered"] < 3*4) {
			t.Errorf("counters %v: want each mode's rename, realpath and followed links answered in-process", counts)
		}
	}
	fresh()
}
