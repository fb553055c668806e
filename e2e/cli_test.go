//go:build linux

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIErrors: bad input gets one clear line and a non-zero exit; a
// missing bind source is a warning (as in proot), not an error.
func TestCLIErrors(t *testing.T) {
	bin := droidrootBin(t)
	root := rootfs(t, "busybox")
	proot := filepath.Join(t.TempDir(), "proot")
	if err := os.Symlink(bin, proot); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		argv   []string
		code   int
		stderr string // a substring of the only line on stderr
		stdout string
		stdin  string
	}{
		{"missing rootfs", []string{bin, "run", "-r", "/nonexistent/rootfs", "--", "/bin/true"}, 1, "rootfs /nonexistent/rootfs: no such file or directory", "", ""},
		{"rootfs is a file", []string{bin, "run", "-r", root + "/fx/dir/file", "--", "/bin/true"}, 1, "not a directory", "", ""},
		{"unknown option", []string{bin, "run", "--frobnicate", "/bin/true"}, 1, `unknown option '--frobnicate'`, "", ""},
		// proot's parser takes no abbreviation and wants its separator after a name.
		{"abbreviated option", []string{proot, "--root=" + root, "/bin/true"}, 1, `unknown option '--root=`, "", ""},
		{"long option without =", []string{proot, "--rootfs", root, "/bin/true"}, 1, `option '--rootfs' and its value must be separated by '='`, "", ""},
		{"short option's value glued", []string{proot, "-r" + root, "/bin/true"}, 1, `option '-r' and its value must be separated by ' '`, "", ""},
		{"short option's value in one argument", []string{proot, "-r " + root, "/bin/echo", "ran"}, 0, "", "ran\n", ""},
		{"missing bind source", []string{bin, "run", "-r", root, "-b", "/nonexistent/src:/mnt/x", "--", "/bin/echo", "ran"}, 0, "warning: can't bind /nonexistent/src", "ran\n", ""},
		// A negative verbose level: errors only, as proot.
		{"-v -1: no warnings", []string{proot, "-v", "-1", "-r", root, "-b", "/nonexistent/src:/mnt/x", "-w", "/nonexistent", "/bin/echo", "ran"}, 0, "", "ran\n", ""},
		{"-v -1: errors", []string{proot, "-v", "-1", "-r", root, "no-such-command"}, 1, "no-such-command: command not found", "", ""},
		// A bind with no host or guest path is reported and left out (":/x" once bound the cwd).
		{"empty bind", []string{bin, "run", "-r", root, "-b", "", "--", "/bin/echo", "ran"}, 0, `warning: can't bind "": empty binding`, "ran\n", ""},
		{"bind ':'", []string{bin, "run", "-r", root, "-b", ":", "--", "/bin/echo", "ran"}, 0, `warning: can't bind ":": no host path before ':'`, "ran\n", ""},
		{"bind without host", []string{bin, "run", "-r", root, "-b", ":/mnt/x", "--", "/bin/sh", "-c", "test -e /mnt/x || echo unbound"}, 0, `warning: can't bind ":/mnt/x": no host path before ':'`, "unbound\n", ""},
		{"bind without guest", []string{bin, "run", "-r", root, "-b", "/tmp:", "--", "/bin/echo", "ran"}, 0, `warning: can't bind "/tmp:": no guest path after ':'`, "ran\n", ""},
		{"command not found", []string{bin, "run", "-r", root, "--", "no-such-command"}, 1, "no-such-command: command not found", "", ""},
		// proot's which(): no PATH, no search (proot's test-03969e70).
		{"PATH unset", []string{"env", "-u", "PATH", proot, "-r", root, "-w", "/bin", "true"}, 1, "true: command not found", "", ""},
		{"PATH unset, a path", []string{"env", "-u", "PATH", proot, "-r", root, "/bin/echo", "ran"}, 0, "", "ran\n", ""},
		{"proot name, no command: /bin/sh as -sh", []string{proot, "-r", root}, 0, "", "-sh\n", "echo $0\n"},
		{"proot option first", []string{bin, "-r", root, "/bin/echo", "as proot"}, 0, "", "as proot\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, tc.stdin, tc.argv...)
			if res.Code != tc.code || res.Stdout != tc.stdout {
				t.Errorf("got %s\nwant exit %d, stdout %q", res, tc.code, tc.stdout)
			}
			lines := strings.Split(strings.TrimRight(res.Stderr, "\n"), "\n")
			if tc.stderr == "" {
				if res.Stderr != "" {
					t.Errorf("stderr = %q, want nothing", res.Stderr)
				}
			} else if len(lines) != 1 || !strings.Contains(lines[0], tc.stderr) {
				t.Errorf("stderr = %q, want one line containing %q", res.Stderr, tc.stderr)
			}
		})
	}
}

// TestLauncherBinds: a launcher's command line, with the 28 binds termux proot launchers pass
// (devices, /proc/self/fd links, storage, app directories, several through guest symlinks),
// starts and sees every bind. Set-up once took seconds at 17 binds and never finished at 20
// (each bind re-resolved all the earlier ones, recursively); the e2e command timeout catches
// a return of that, and pathmap's TestNewLinearInBindings counts the work exactly.
func TestLauncherBinds(t *testing.T) {
	bin := droidrootBin(t)
	root := rootfs(t, "busybox")
	host := t.TempDir()
	argv := []string{bin, "--kill-on-exit", "--link2symlink", "--rootfs=" + root, "--cwd=/",
		"--bind=/dev", "--bind=/proc", "--bind=/sys", "--bind=/dev/urandom:/dev/random",
		"--bind=/proc/self/fd:/dev/fd", "--bind=/proc/self/fd/0:/dev/stdin",
		"--bind=/proc/self/fd/1:/dev/stdout", "--bind=/proc/self/fd/2:/dev/stderr"}
	var want []string
	for i := range 20 {
		dir := filepath.Join(host, fmt.Sprintf("d%02d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "marker"), []byte(fmt.Sprintf("m%02d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
		// Guest paths with missing parents, and paths through a guest symlink
		// (/fx/abs -> /fx/dir), which a bind dereferences as mount(2) does.
		guest := fmt.Sprintf("/storage/emulated/%d/Android/data", i)
		if i%2 == 1 {
			guest = fmt.Sprintf("/fx/abs/b%02d", i)
		}
		argv = append(argv, "--bind="+dir+":"+guest)
		want = append(want, fmt.Sprintf("m%02d", i))
	}
	script := `for i in $(seq 0 19); do
		if [ $((i % 2)) = 1 ]; then cat /fx/dir/b$(printf %02d $i)/marker
		else cat /storage/emulated/$i/Android/data/marker; fi
	done; echo x | cat /dev/stdin; test -c /dev/random && echo random`
	res := run(t, "", append(argv, "/bin/sh", "-c", script)...)
	want = append(want, "x", "random")
	if res.Code != 0 || res.Stdout != strings.Join(want, "\n")+"\n" {
		t.Errorf("got %s\nwant exit 0 and stdout %q", res, strings.Join(want, "\n")+"\n")
	}
}

// TestInitialCwd: the guest starts where -w says: $PWD is the directory's physical path, as
// getcwd gives it and proot sets it (replacing the host's $PWD; a shell's cd through a symlink
// would keep the name), a directory bound at two guest paths is the one named, and a missing one is reported
// as missing (then the guest starts in /, as proot does). Without -w, or with a relative one,
// the host's working directory is taken as a guest path, as proot takes it (a host directory
// inside the rootfs is no guest path of it).
func TestInitialCwd(t *testing.T) {
	bin := droidrootBin(t)
	root := rootfs(t, "busybox")
	d := t.TempDir()
	show := []string{"/bin/sh", "-c", `echo "$PWD"; pwd -P`}
	for _, tc := range []struct {
		name   string
		args   []string
		stdout string
		stderr string
	}{
		{"through a symlink", []string{"-w", "/fx/abs"}, "/fx/dir\n/fx/dir\n", ""},
		{"relative to /", []string{"-w", "fx/dir/"}, "/fx/dir\n/fx/dir\n", ""},
		{"bound twice", []string{"-b", d + ":/mnt/x", "-b", d + ":/mnt/y", "-w", "/mnt/y"}, "/mnt/y\n/mnt/y\n", ""},
		{"missing", []string{"-w", "/nonexistent"}, "/\n/\n", `can't chdir("/nonexistent") in the guest rootfs: no such file or directory`},
		{"a file", []string{"-w", "/fx/dir/file"}, "/\n/\n", `can't chdir("/fx/dir/file") in the guest rootfs: not a directory`},
		{"default: the host's /tmp", []string{"@/tmp"}, "/tmp\n/tmp\n", ""},
		{"relative to the host's /tmp", []string{"@/tmp", "-w", "../fx/abs"}, "/fx/dir\n/fx/dir\n", ""},
		{"default: no guest directory", []string{"@" + d}, "/\n/\n", `can't chdir("` + d + `") in the guest rootfs: no such file or directory`},
		{"default: inside the rootfs", []string{"@" + root + "/fx"}, "/\n/\n", `can't chdir("` + root + `/fx") in the guest rootfs`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args, pre := tc.args, []string{}
			if dir, ok := strings.CutPrefix(args[0], "@"); ok {
				// Started from host directory dir.
				args, pre = args[1:], []string{"sh", "-c", `cd "$0" && exec "$@"`, dir}
			}
			argv := append(append(pre, "env", "PWD=/host/pwd", bin, "run", "-r", root), args...)
			res := run(t, "", append(append(argv, "--"), show...)...)
			if res.Code != 0 || res.Stdout != tc.stdout || !strings.Contains(res.Stderr, tc.stderr) || (tc.stderr == "") != (res.Stderr == "") {
				t.Errorf("got %s\nwant stdout %q, stderr containing %q", res, tc.stdout, tc.stderr)
			}
		})
	}
}

// TestVirtualDirs: the directories a bind point needs where the rootfs has none (-b H:/a/b/c
// without /a) behave as the directories a real mount would need (mkdir -p, mode 0755): each
// lists the entries on the way to the mount points, with the link count such a directory
// has; ".." of the bind point is its parent; /proc/self/fd and /proc/self/cwd give their
// guest paths, never a directory of droidroot's own.
func TestVirtualDirs(t *testing.T) {
	bin := droidrootBin(t)
	root := rootfs(t, "busybox")
	host := t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "f"), []byte("f\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `ls -a /virt; ls -a /virt/b; stat -c '%a %h %F' /virt /virt/b /virt/file
cd /virt/b/c/..; pwd -P; readlink /proc/self/cwd
exec 3</virt; readlink /proc/self/fd/3; cat /virt/file /virt/b/c/f`
	res := run(t, "", bin, "run", "-r", root, "-b", "/proc", "-b", host+":/virt/b/c", "-b", host+"/f:/virt/file", "--", "/bin/sh", "-c", script)
	want := ".\n..\nb\nfile\n.\n..\nc\n755 3 directory\n755 3 directory\n644 1 regular file\n/virt/b\n/virt/b\n/virt\nf\nf\n"
	if res.Code != 0 || res.Stdout != want {
		t.Errorf("got %s\nwant stdout:\n%s", res, want)
	}
}
