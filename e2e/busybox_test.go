//go:build linux

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// busyboxGuest is the busybox rootfs (used read-only) with the host's /proc and /dev, a fresh
// host directory as /tmp (so the cached rootfs is never written) and two binds with symlinks.
func busyboxGuest(t testing.TB) guest {
	t.Helper()
	root := rootfs(t, "busybox")
	dir := t.TempDir()
	tmp, b1, b2 := filepath.Join(dir, "tmp"), filepath.Join(dir, "b1"), filepath.Join(dir, "b2")
	makeTree(t, tmp, tree{})
	makeTree(t, b1, tree{
		"f":         "b1\n",
		"sub/g":     "g\n",
		"abs":       "->/fx/dir",
		"up":        "->..",
		"hostabs":   "->/etc/hostname",
		"dangling":  "->/nonexistent",
		"exec.sh":   "#!/bin/sh\necho script \"$0\" \"$@\"\n",
		"nested/":   "",
		"nested/n2": "n2\n",
	})
	makeTree(t, b2, tree{"g2": "g2\n", "dotdot": "->../../.."})
	if err := os.Chmod(filepath.Join(b1, "exec.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	return guest{
		Root:  root,
		Binds: []string{"/proc", "/dev", tmp + ":/tmp", b1 + ":/mnt/b1", b2 + ":/mnt/b1/nested"},
		Cwd:   "/",
	}
}

// TestShell runs busybox sh scripts under droidroot and checks output and exit status. The
// chroot oracle must give the same answers (that checks the expectations themselves).
func TestShell(t *testing.T) {
	needRoot(t)
	for _, tc := range []struct {
		name, script, stdout string
		code                 int
	}{
		{"pipes", `echo hello world | tr a-z A-Z | cut -d' ' -f2 | rev`, "DLROW\n", 0},
		{"redirections", `echo one >/tmp/o; echo two >>/tmp/o; cat </tmp/o; ls /nonexistent 2>/dev/null || echo "ls failed: $?"; exec 3>/tmp/fd3; echo three >&3; exec 3>&-; cat /tmp/fd3`,
			"one\ntwo\nls failed: 1\nthree\n", 0},
		{"here-doc", "cat <<EOF\na $((1+2)) b\nEOF", "a 3 b\n", 0},
		{"exit 3", `exit 3`, "", 3},
		{"false", `false`, "", 1},
		{"subshell status", `(exit 7); echo $?`, "7\n", 0},
		{"background and wait", `sleep 0.1 & wait $!; echo "waited $?"; (exit 5) & wait $!; echo "bg $?"`, "waited 0\nbg 5\n", 0},
		{"command substitution", `x=$(pwd; cd /fx/abs && pwd -P); echo $x`, "/ /fx/dir\n", 0},
		{"kill -9 self", `kill -9 $$`, "", 137},
		{"kill -TERM self", `kill -TERM $$`, "", 143},
		{"child killed", `sh -c 'kill -9 $$'; echo "child $?"`, "child 137\n", 0},
		{"exec", `exec /progs/pathprobe getcwd`, "getcwd -> \"/\"\n", 0},
		{"shebang", `/mnt/b1/exec.sh a b`, "script /mnt/b1/exec.sh a b\n", 0},
		{"not found", `/nonexistent 2>/dev/null; echo $?`, "127\n", 0},
		{"not executable", `/fx/dir/file 2>/dev/null; echo $?`, "126\n", 0},
		{"cd through binds", `cd /mnt/b1/nested && pwd && cd .. && pwd && ls && cd up && pwd -P && cat b1/f`,
			"/mnt/b1/nested\n/mnt/b1\nabs\ndangling\nexec.sh\nf\nhostabs\nnested\nsub\nup\n/mnt\nb1\n", 0},
		{"readlink -f", `for p in /mnt/b1/abs/../dir/file /mnt/b1/up /mnt/b1/nested/dotdot /fx/dotdot /fx/chain1; do readlink -f $p; done`,
			"/fx/dir/file\n/mnt\n/\n/\n/fx/dir/file\n", 0},
		{"find", `find /mnt/b1 /fx/dir/sub | sort`,
			"/fx/dir/sub\n/fx/dir/sub/deep\n/fx/dir/sub/deep/f2\n/fx/dir/sub/root\n/fx/dir/sub/up\n/mnt/b1\n/mnt/b1/abs\n/mnt/b1/dangling\n/mnt/b1/exec.sh\n/mnt/b1/f\n/mnt/b1/hostabs\n/mnt/b1/nested\n/mnt/b1/nested/dotdot\n/mnt/b1/nested/g2\n/mnt/b1/sub\n/mnt/b1/sub/g\n/mnt/b1/up\n", 0},
		{"tmp is the bind", `echo x >/tmp/new && ls /tmp && rm /tmp/new && ls /tmp | wc -l`, "new\n0\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range runners {
				g := busyboxGuest(t) // a fresh /tmp for each run
				res := r.Run(t, g, "", "/bin/sh", "-c", tc.script)
				if res.Stdout != tc.stdout || res.Code != tc.code {
					t.Errorf("%s: got %s\nwant exit %d, stdout:\n%s", r.Name, res, tc.code, tc.stdout)
				}
				if r.Name == "chroot" && t.Failed() {
					t.Fatal("the expectation is wrong: the chroot oracle disagrees")
				}
			}
		})
	}
}

// TestLs compares `ls -la` over symlinks and binds with the chroot oracle (times included:
// the rootfs is shared, the bind trees have fixed times).
func TestLs(t *testing.T) {
	needRoot(t)
	g := busyboxGuest(t)
	droidrootBin(t)
	cmd := []string{"/bin/ls", "-la", "/fx", "/fx/abs/", "/fx/bindlink/", "/mnt", "/mnt/b1", "/mnt/b1/nested", "/mnt/b1/abs/", "/mnt/b1/up/"}
	want := viaChroot(t, g, "", cmd...)
	got := viaDroidroot(t, g, "", cmd...)
	if diff := cmp.Diff(want.String(), got.String()); diff != "" {
		t.Errorf("ls -la differs (-chroot +droidroot):\n%s", diff)
	}
	// Same with the guest's cwd on a bind, and relative paths.
	g.Cwd = "/mnt/b1"
	cmd = []string{"/bin/ls", "-la", ".", "..", "nested", "up/", "abs"}
	want = viaChroot(t, g, "", cmd...)
	got = viaDroidroot(t, g, "", cmd...)
	if diff := cmp.Diff(want.String(), got.String()); diff != "" {
		t.Errorf("ls -la in /mnt/b1 differs (-chroot +droidroot):\n%s", diff)
	}
}

// TestDynamicUsesGuestLoader runs a dynamic program of the busybox rootfs and checks, in its
// /proc/self/maps, that the program, ld.so and libc it runs with are the rootfs's files. The
// kernel writes maps with host paths, so under droidroot they are ROOTFS/...; a tracer that
// let the host's ld.so be used (PT_INTERP resolved on the host, e.g. /lib64/ld-linux-x86-64.so.2)
// would show the host's /lib/x86_64-linux-gnu/... (aarch64-linux-gnu on arm64).
func TestDynamicUsesGuestLoader(t *testing.T) {
	needRoot(t)
	g := busyboxGuest(t)
	cmd := []string{"/progs/mapsprobe.dyn", "ld-linux", "libc.so", "mapsprobe"}
	sorted := func(s string) []string {
		lines := strings.Split(strings.TrimSpace(s), "\n")
		sort.Strings(lines)
		return lines
	}
	guestFiles := []string{
		glibc.Multiarch + "/" + glibc.LdSo,
		glibc.Multiarch + "/libc.so.6",
		"/progs/mapsprobe.dyn",
	}
	// The oracle: in a chroot, maps shows guest paths.
	res := viaChroot(t, g, "", cmd...)
	if diff := cmp.Diff(guestFiles, sorted(res.Stdout)); diff != "" || res.Code != 0 {
		t.Fatalf("chroot: unexpected maps (-want +got):\n%s\n%s", diff, res)
	}
	res = viaDroidroot(t, g, "", cmd...)
	var want []string
	for _, f := range guestFiles {
		want = append(want, g.Root+f)
	}
	if diff := cmp.Diff(want, sorted(res.Stdout)); diff != "" || res.Code != 0 {
		t.Errorf("droidroot: the dynamic program did not run with the rootfs's own files (-want +got):\n%s\n%s", diff, res)
	}
}

// TestFlightRecorder: DROIDROOT_FLIGHT=1 prints the tracer's last stops, with the paths it
// wrote read back, when the run ends with a non-zero status, and nothing otherwise.
func TestFlightRecorder(t *testing.T) {
	needRoot(t)
	g := busyboxGuest(t)
	bin := droidrootBin(t)
	for _, code := range []int{3, 0} {
		args := droidrootArgs(bin, g, "/bin/sh", "-c", "cat /etc/hostname >/dev/null; exit "+strconv.Itoa(code))
		res := run(t, "", append([]string{"env", "DROIDROOT_FLIGHT=1"}, args...)...)
		if res.Code != code {
			t.Fatalf("exit %d: got %s", code, res)
		}
		dumped := strings.Contains(res.Stderr, "droidroot flight recorder:")
		if dumped != (code != 0) {
			t.Errorf("exit %d: flight recorder printed: %v, want %v\n%s", code, dumped, code != 0, res)
		}
		if code == 0 {
			continue
		}
		// cat's open of /etc/hostname: its entry, and the path written for it, read back: the
		// file itself, which droidroot holds open until cat's next call (see emul's
		// translateIn), with that file.
		root, err := filepath.EvalSymlinks(g.Root)
		if err != nil {
			t.Fatal(err)
		}
		want := regexp.MustCompile(`"/proc/\d+/fd/\d+" <nil> \(\d+ = ` + regexp.QuoteMeta(strconv.Quote(root+"/etc/hostname")) + `\)`)
		if !strings.Contains(res.Stderr, `a1="/etc/hostname"`) || !want.MatchString(res.Stderr) {
			t.Errorf("no entry for cat's open of /etc/hostname with host path %s:\n%s", want, res.Stderr)
		}
	}
}

// TestStopCensus: DROIDROOT_STOPS=1 prints, when the run ends, how many stops of each kind and
// call the tracer saw: a shell that runs a dynamic program (through droidroot's loader, with the
// fast path's handshake) and a static one, each once, and opens a file in the tracer; the
// loader's opens stop only in ptrace-only mode.
func TestStopCensus(t *testing.T) {
	needRoot(t)
	g := busyboxGuest(t)
	args := droidrootArgs(droidrootBin(t), g, "/bin/sh", "-c", "echo stat /etc/hostname | /progs/pathprobe.dyn -f -; /bin/cat /etc/hostname >/dev/null")
	res := run(t, "", append([]string{"env", "DROIDROOT_STOPS=1", "DROIDROOT_FASTPATH=1"}, args...)...)
	if res.Code != 0 {
		t.Fatalf("%s", res)
	}
	rows := stopCensus(t, res.Stderr)
	// The first process's exec and pathprobe's at least (busybox's sh may run cat itself); one
	// handshake, pathprobe's (busybox is static; a SIGSYS under Android's policy, which blocks
	// numbers it does not know); a fork, vfork or clone event per child.
	for key, least := range map[string]int{"seccomp execve": 2, "exec": 2} {
		if rows[key] < least {
			t.Errorf("%q: %d, want at least %d\n%s", key, rows[key], least, res.Stderr)
		}
	}
	if rows["seccomp droidroot_fastpath"]+rows["sigsys droidroot_fastpath"] != 1 || rows["clone"]+rows["fork"]+rows["vfork"] < 1 {
		t.Errorf("want one handshake and at least one child's event:\n%s", res.Stderr)
	}
	// The loader's opens (the scratch area, each program, pathprobe's interpreter) go through
	// the filter from its code (tracer.AllowLoader): no stop; with ptrace alone each is one.
	if rows["loader openat"] != 0 {
		t.Errorf("the loader's opens stopped %d times, want none (the filter allows them)\n%s", rows["loader openat"], res.Stderr)
	}
	res = run(t, "", append([]string{"env", "DROIDROOT_STOPS=1", "DROIDROOT_FASTPATH=1", "PROOT_NO_SECCOMP=1"}, args...)...)
	if res.Code != 0 {
		t.Fatalf("ptrace only: %s", res)
	}
	if n := stopCensus(t, res.Stderr)["loader openat"]; n < 4 {
		t.Errorf("ptrace only: the loader's opens of the two programs and their scratch areas: %d, want at least 4\n%s", n, res.Stderr)
	}
}

// stopCensus returns the rows of DROIDROOT_STOPS=1's census in stderr ("seccomp openat": 3),
// failing t when there is none or its rows do not add up to its total.
func stopCensus(t *testing.T, stderr string) map[string]int {
	t.Helper()
	rows := map[string]int{}
	total := -1
	for _, line := range strings.Split(stderr, "\n") {
		if m := regexp.MustCompile(`^droidroot: (\d+) stops \(DROIDROOT_STOPS=1\)`).FindStringSubmatch(line); m != nil {
			total, _ = strconv.Atoi(m[1])
		} else if f := strings.Fields(line); len(f) >= 2 && total >= 0 && !strings.HasPrefix(line, "droidroot") {
			n, err := strconv.Atoi(f[0])
			if err != nil {
				t.Fatalf("census line %q", line)
			}
			rows[strings.Join(f[1:], " ")] += n
			total -= n
		}
	}
	if total != 0 {
		t.Errorf("census missing, or its rows do not add up to its total (left over %d):\n%s", total, stderr)
	}
	return rows
}

// TestThreads runs 8 threads doing stat/lstat/readlink in loops, in every link mode.
func TestThreads(t *testing.T) {
	needRoot(t)
	g := busyboxGuest(t)
	droidrootBin(t)
	paths := []string{"/fx/abs", "/fx/dir/file", "/mnt/b1/f", "/mnt/b1/up", "/fx/loop1", "/fx/chain1", "/mnt/b1/nested/dotdot"}
	// 8 threads racing on 7 paths: 50,400 calls a program (16,800 with -short).
	n := threadRounds(300)
	for _, prog := range []string{"threads", "threads.pie", "threads.dyn"} {
		t.Run(prog, func(t *testing.T) {
			want := fmt.Sprintf("threads=8 iterations=%d paths=7 ok\n", n)
			res := viaDroidroot(t, g, "", append([]string{"/progs/" + prog, "-t", "8", "-n", strconv.Itoa(n)}, paths...)...)
			if res.Stdout != want || res.Code != 0 {
				t.Errorf("got %s\nwant stdout %q", res, want)
			}
		})
	}
	// The tracer polls for stops while they come quickly (tracer.DefaultSpin);
	// DROIDROOT_SPIN=0 makes it block in wait4 every time.
	t.Run("nospin", func(t *testing.T) {
		want := fmt.Sprintf("threads=8 iterations=%d paths=7 ok\n", n/3)
		args := droidrootArgs(droidrootBin(t), g, append([]string{"/progs/threads", "-t", "8", "-n", strconv.Itoa(n / 3)}, paths...)...)
		res := run(t, "", append([]string{"env", "DROIDROOT_SPIN=0"}, args...)...)
		if res.Stdout != want || res.Code != 0 {
			t.Errorf("got %s\nwant stdout %q", res, want)
		}
	})
}

// TestStopCensusSites: DROIDROOT_STOPS=sites also counts each call that stops by its call
// site: pathprobe's stats of a path with the library off stop in libc's stat wrapper, named
// by libc's file and offset and the wrapper's symbol, returning into pathprobe itself.
func TestStopCensusSites(t *testing.T) {
	needRoot(t)
	g := busyboxGuest(t)
	ops := strings.Repeat("stat /etc/hostname\n", 7)
	args := droidrootArgs(droidrootBin(t), g, "/progs/pathprobe.dyn", "-f", "-")
	res := run(t, ops, append([]string{"env", "DROIDROOT_STOPS=sites", "DROIDROOT_FASTPATH=0"}, args...)...)
	if res.Code != 0 {
		t.Fatalf("%s", res)
	}
	stopCensus(t, strings.Split(res.Stderr, "call sites of those stops")[0])
	_, sites, ok := strings.Cut(res.Stderr, "call sites of those stops (DROIDROOT_STOPS=sites)")
	if !ok {
		t.Fatalf("no call sites:\n%s", res.Stderr)
	}
	// "       7  seccomp   newfstatat    libc.so.6+0xf786a (fstatat64+0xa)  <-  pathprobe.dyn+0x..."
	// (arm64: "fstatat ... (fstatat+0x10)")
	re := regexp.MustCompile(`(?m)^ +(\d+)  seccomp +(newfstatat|fstatat|fstatat64|stat)\s+libc\.so\.6\+0x[0-9a-f]+ \(\w*stat\w*\+0x[0-9a-f]+\)  <-  (\S+)`)
	m := re.FindStringSubmatch(sites)
	if m == nil {
		t.Fatalf("no stat row in libc's stat wrapper:\n%s", res.Stderr)
	}
	if n, _ := strconv.Atoi(m[1]); n < 7 || !strings.HasPrefix(m[3], "pathprobe.dyn+0x") && !strings.HasPrefix(m[3], "libc.so.6+0x") {
		t.Errorf("stat row %q: want at least 7 calls, returning to pathprobe or libc\n%s", m[0], res.Stderr)
	}
}

// TestShebangLimits: #! lines at the edges of the kernel's 256-byte buffer
// (fs/binfmt_script.c) run as in the chroot: an argument cut before the
// buffer's last byte, a name that may be truncated (ENOEXEC), NULs, blanks,
// a carriage return, an empty name (the kernel opens the cwd: EACCES).
func TestShebangLimits(t *testing.T) {
	needRoot(t)
	g := busyboxGuest(t)
	tmp := strings.SplitN(g.Binds[2], ":", 2)[0]
	scripts := map[string]string{
		"long-arg":  "#!/bin/echo " + strings.Repeat("x", 300) + "\n",
		"long-name": "#!/" + strings.Repeat("n", 260) + "\n",
		"name-edge": "#!/bin/" + strings.Repeat("n", 247) + " \n",
		"nul-arg":   "#!/bin/echo a\x00b\n",
		"nul-name":  "#!   \x00/bin/echo\n",
		"bang":      "#!",
		"blanks":    "#! \t",
		"crlf":      "#!/bin/echo arg\r\n",
		"newline":   "#!\n",
	}
	var names []string
	for name, text := range scripts {
		if err := os.WriteFile(filepath.Join(tmp, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	script := ""
	for _, n := range names {
		script += fmt.Sprintf("(exec /tmp/%s a) 2>&1 | od -c | tail -3; echo \"%s $?\"\n", n, n)
	}
	want := viaChroot(t, g, "", "/bin/sh", "-c", "set -o pipefail; "+script)
	got := viaDroidroot(t, g, "", "/bin/sh", "-c", "set -o pipefail; "+script)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("droidroot differs from the chroot (-chroot +droidroot):\n%s", diff)
	}
}
