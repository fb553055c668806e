//go:build linux

package e2e

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// debianGuest is the debian rootfs (used read-only) with the host's /proc, /dev and /sys, a
// fresh host directory as /tmp (the working directory), and test/progs (the C sources) at
// /mnt/work.
func debianGuest(t testing.TB) guest {
	t.Helper()
	root := rootfs(t, "debian")
	tmp := filepath.Join(t.TempDir(), "tmp")
	makeTree(t, tmp, tree{})
	return guest{
		Root:  root,
		Binds: []string{"/proc", "/dev", "/sys", tmp + ":/tmp", repoPath(t, "test/progs") + ":/mnt/work"},
		Cwd:   "/tmp",
	}
}

// gitEnv makes commits reproducible, so that their hashes can be compared.
const gitEnv = `export GIT_AUTHOR_DATE='2024-01-02T03:04:05Z' GIT_COMMITTER_DATE='2024-01-02T03:04:05Z'; `

// TestDebian runs real glibc programs (python3, tar, git, gcc, dpkg) in the debian rootfs.
// Each script runs under the chroot oracle too, which must give the expected output (that
// checks the expectations themselves), and then under droidroot.
func TestDebian(t *testing.T) {
	needRoot(t)
	rootfs(t, "debian") // skip (or fail) once, not in every subtest
	for _, tc := range []struct {
		name, script, stdout string
	}{
		{"python3", `python3 -c '
import json, sqlite3, email, unittest, os
c = sqlite3.connect("/tmp/db")
c.execute("create table t(x)"); c.execute("insert into t values (42)"); c.commit()
print("ok", json.dumps(c.execute("select x from t").fetchall()), os.getcwd(), os.path.realpath("/proc/self/exe"))'`,
			"ok [[42]] /tmp /usr/bin/python3.11\n"},
		{"tar", `set -e
mkdir -p src/d; echo a >src/a; ln -s a src/l; ln src/a src/h; echo b >src/d/b
tar -czf a.tgz src; mkdir out; tar -C out -xzf a.tgz
diff -r src out/src && echo same
find out | sort
stat -c '%h %N' out/src/h out/src/l
tar -tzf a.tgz | sort`,
			"same\nout\nout/src\nout/src/a\nout/src/d\nout/src/d/b\nout/src/h\nout/src/l\n2 'out/src/h'\n1 'out/src/l' -> 'a'\nsrc/\nsrc/a\nsrc/d/\nsrc/d/b\nsrc/h\nsrc/l\n"},
		{"git", gitEnv + `set -e
git init -q -b main repo; cd repo
git config user.email t@example.com; git config user.name T
echo hi >f; mkdir d; ln -s ../f d/l
git add -A; git commit -q -m first
git log --format='%H %s'
git ls-files -s | awk '{print $1, $4}'
git status --porcelain
git rm -q f; git commit -q -m second; git log --oneline | wc -l`,
			"e728a3baf134097a5dfa2548cefb63da080dccab first\n120000 d/l\n100644 f\n2\n"},
		{"gcc", `set -e
printf '#include <stdio.h>\n#include <stdlib.h>\nint main(int c, char **v) { char *p = realpath("/proc/self/exe", 0); printf("hello from gcc %%s %%s\\n", v[0], p); return 0; }\n' >hello.c
gcc -O2 -Wall -o hello hello.c; ./hello
gcc -O2 -Wall -pthread -o threads /mnt/work/threads.c
./threads -t 8 -n 200 /usr/bin/awk /etc/alternatives/awk /tmp/hello ` + glibc.Interp,
			"hello from gcc ./hello /tmp/hello\nthreads=8 iterations=200 paths=4 ok\n"},
		// A tree deeper than PATH_MAX: fts (find, du, chmod -R, rm -r) walks it through
		// descriptors of its directories, whose paths the kernel cannot print, pwd
		// climbs it through "..", python makes a relative path from an fchdir there.
		{"deep", `set -e
n=$(printf %0200d 0 | tr 0 x)
mkdir deep; cd deep
for i in $(seq 25); do mkdir $n; cd $n; done
touch f; /bin/pwd | wc -c; cd /tmp
python3 -c '
import os
fd = os.open("deep", os.O_RDONLY)
for i in range(25):
    fd = os.open("x" * 200, os.O_RDONLY, dir_fd=fd)
os.fchdir(fd)
os.mkdir("../" + "x" * 200 + "/new")
print(sorted(os.listdir(".")), len(os.getcwd()))'
find deep -type d | wc -l; find deep -name f -type f | wc -l
du -s deep >/dev/null; chmod -R go-rx deep; stat -c %a deep
rm -r deep; test ! -e deep && echo gone`,
			"5035\n['f', 'new'] 5034\n27\n1\n700\ngone\n"},
		// tail -F hears that the directory of the file it follows was removed
		// (IN_DELETE_SELF, which comes when the last reference to the directory
		// goes): neither tail's nor the shell's fast path cache nor the tracer's
		// lookup cache keeps it.
		{"inotify", `mkdir dir && echo x >dir/file
timeout 20 tail -F dir/file >out 2>&1 & pid=$!
for i in $(seq 100); do grep -q x out && break; sleep 0.1; done
rm -r dir
for i in $(seq 100); do grep -q polling out && break; sleep 0.1; done
kill $pid; wait $pid; cat out`,
			"x\ntail: 'dir/file' has become inaccessible: No such file or directory\n" +
				"tail: directory containing watched file was removed\n" +
				"tail: inotify cannot be used, reverting to polling\n"},
		// A #! script's interpreter gets the script's argv, thousands of arguments
		// (find -exec {} +, xargs): droidroot hands the kernel the guest's own strings
		// and a pointer array of its own, which the stack must take (Linux 6.5 and later
		// do not grow a stack for a write from outside the process: the thread writes
		// there first). Too many for the kernel: E2BIG, as natively.
		{"argv", `printf '#!/bin/sh\necho $# "$1" "${3000}"\n' >s; chmod +x s
./s $(seq 3000); ./s $(seq 30000)
./s $(seq 200000) 2>&1 | sed 's/.*: //'
mkdir d; seq -f d/abcdefghijklmnopqrstuv%04g 3719 | xargs touch
find d -type f -exec ./s {} + | awk '{n += $1} END {print n}'`,
			"3000 1 3000\n30000 1 3000\nArgument list too long\n3719\n"},
		// A small stack limit (git's test suite runs `git tag --contains` under
		// `ulimit -s 128`): the loader's stack growth stays within RLIMIT_STACK,
		// and the library's frames (16 KiB) leave git room.
		{"ulimit", `(ulimit -s 128; python3 -c 'print(1)'; echo "python $?")
for s in 128 64 32 16; do (ulimit -s $s; /bin/true && git --version >/dev/null; echo "$s $?"); done`,
			"1\npython 0\n128 0\n64 0\n32 0\n16 0\n"},
		{"dpkg", `dpkg -s python3 | grep ^Status; dpkg-query -W -f '${Package}\n' gcc-12 git`,
			"Status: install ok installed\ngcc-12\ngit\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range runners {
				g := debianGuest(t) // a fresh /tmp for each run
				res := r.Run(t, g, "", "/bin/bash", "-c", tc.script)
				if res.Stdout != tc.stdout || res.Code != 0 {
					t.Errorf("%s: got %s\nwant exit 0, stdout:\n%s", r.Name, res, tc.stdout)
				}
				if r.Name == "chroot" && t.Failed() {
					t.Fatal("the expectation is wrong: the chroot oracle disagrees")
				}
			}
		})
	}
}

// TestDebianFind compares find's view of the debian rootfs with the chroot oracle.
func TestDebianFind(t *testing.T) {
	needRoot(t)
	g := debianGuest(t)
	droidrootBin(t)
	script := `find / -maxdepth 1 -printf '%y %p %l\n' | sort
find /usr/lib/python3.11/json /etc/alternatives /bin/ /lib64 -printf '%y %m %n %s %p -> %l\n' | sort
find /usr/lib/python3.11/email -name '*.py' -newer /etc/hostname -o -name 'mime' -type d -print | sort
find /etc/alternatives -xtype l -print | sort
find /usr/share/doc -maxdepth 1 -name 'lib*' -exec stat -c '%n %h' {} + | sort | head -20`
	want := viaChroot(t, g, "", "/bin/bash", "-c", script)
	got := viaDroidroot(t, g, "", "/bin/bash", "-c", script)
	if diff := cmp.Diff(want.String(), got.String()); diff != "" {
		t.Errorf("find differs (-chroot +droidroot):\n%s", diff)
	}
}

// TestDebianThreads runs the host-built threads program (from the busybox rootfs; the host's
// glibc is Debian 12's too) with the debian rootfs's ld.so and libc.
func TestDebianThreads(t *testing.T) {
	needRoot(t)
	g := debianGuest(t)
	g.Binds = append(g.Binds, rootfs(t, "busybox")+"/progs:/mnt/progs")
	want := "threads=8 iterations=300 paths=5 ok\n"
	res := viaDroidroot(t, g, "", "/mnt/progs/threads.dyn", "-t", "8", "-n", "300",
		"/usr/bin/python3", "/bin/sh", "/tmp", "/mnt/progs/threads.dyn", "/etc/alternatives/awk")
	if res.Stdout != want || res.Code != 0 {
		t.Errorf("got %s\nwant stdout %q", res, want)
	}
}

// TestExecOpenFile: execveat(fd, "", AT_EMPTY_PATH) (glibc's fexecve) of a file no path
// names runs as in the chroot: a memfd (runc's and python's way, close-on-exec), a script in
// one (whose interpreter gets /dev/fd/N), a file removed since its open; so does an exec of
// /proc/self/fd/N or /dev/fd/N of a close-on-exec memfd; /proc/self/exe shows the memfd as
// the kernel names it. droidroot's loader opens the program after the exec, when a
// close-on-exec descriptor is gone: it gets droidroot's own open of the file.
func TestExecOpenFile(t *testing.T) {
	needRoot(t)
	const script = `
import os, shutil
def run(fd, argv):
    pid = os.fork()
    if pid == 0:
        try:
            os.execve(fd, argv, {"PATH": "/usr/bin:/bin"}) if isinstance(fd, int) else os.execv(fd, argv)
        except OSError as e:
            print(argv[0], "failed", e.errno, flush=True)
            os._exit(99)
    return os.waitpid(pid, 0)[1] >> 8
fd = os.memfd_create("prog")
os.write(fd, open("/usr/bin/readlink", "rb").read())
print(run(fd, ["readlink", "/proc/self/exe"]), flush=True)
fd2 = os.memfd_create("script", 0)
os.write(fd2, b"#!/bin/sh\necho script $0 $1\n")
print(run(fd2, ["x", "arg"]), flush=True)
shutil.copy("/bin/echo", "/tmp/echo-copy")
fd3 = os.open("/tmp/echo-copy", os.O_RDONLY)
os.unlink("/tmp/echo-copy")
print(run(fd3, ["echo", "removed"]), flush=True)
fd4 = os.memfd_create("notexec")
os.write(fd4, b"\x7fELF garbage")
print(run(fd4, ["garbage"]), flush=True)
fd5 = os.memfd_create("viaproc")
os.write(fd5, open("/usr/bin/readlink", "rb").read())
for p in ("/proc/self/fd/%d" % fd5, "/dev/fd/%d" % fd5):
    print(run(p, ["readlink", "/proc/self/exe"]), flush=True)
`
	// The script's interpreter and the /dev/fd/N exec need the host's /dev/fd (bound at /dev),
	// which a bare devtmpfs (the arm64 test VM's) lacks: the chroot's answer is the oracle.
	want := viaChroot(t, debianGuest(t), "", "/usr/bin/python3", "-c", script)
	if !strings.HasPrefix(want.Stdout, "/memfd:prog (deleted)\n0\n") || !strings.Contains(want.Stdout, "removed\n0\n") ||
		!strings.Contains(want.Stdout, "garbage failed 8\n99\n/memfd:viaproc (deleted)\n0\n") || want.Code != 0 {
		t.Fatalf("the chroot oracle does not run a memfd: %s", want)
	}
	got := viaDroidroot(t, debianGuest(t), "", "/usr/bin/python3", "-c", script)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("droidroot differs from the chroot (-chroot +droidroot):\n%s", diff)
	}
}
