//go:build linux

package e2e

import (
	"strings"
	"testing"
)

// TestRestartedPathCall: a blocking open of a FIFO, interrupted again and again by a SIGALRM
// handler with a deep stack frame (SA_RESTART), is restarted by the kernel with the registers
// droidroot left; the host path droidroot had pushed below the stack pointer is overwritten by
// then. The restarted open must still open the guest's FIFO (it used to hang or fail ENOENT).
func TestRestartedPathCall(t *testing.T) {
	needRoot(t)
	g := busyboxGuest(t)
	droidrootBin(t)
	for _, prog := range []string{"restart", "restart.pie", "restart.dyn"} {
		t.Run(prog, func(t *testing.T) {
			res := viaDroidroot(t, g, "", "/progs/"+prog, "fifo", "/tmp")
			if res.Code != 0 || !strings.HasPrefix(res.Stdout, "open=ok read=x ") || !strings.HasSuffix(res.Stdout, " child=0\n") {
				t.Errorf("got %s\nwant open=ok read=x ... child=0", res)
			}
			t.Logf("%s", strings.TrimSpace(res.Stdout))
		})
	}
}

// TestCloneFS: clone(CLONE_FS|SIGCHLD) reaches the tracer as a fork event, yet parent and child
// share one fs struct: a chdir in the child moves the parent too, in droidroot's view as in
// the kernel's (compared with a real chroot).
func TestCloneFS(t *testing.T) {
	needRoot(t)
	g := busyboxGuest(t)
	droidrootBin(t)
	want := viaChroot(t, g, "", "/progs/restart", "clonefs", "/mnt/b1/sub")
	got := viaDroidroot(t, g, "", "/progs/restart", "clonefs", "/mnt/b1/sub")
	if got.String() != want.String() {
		t.Errorf("droidroot: %s\nchroot: %s", got, want)
	}
	if want.Stdout != "child=0 cwd=/mnt/b1/sub same=1\n" {
		t.Errorf("the oracle itself says %s", want)
	}
}

// TestBindOverSymlink: a binding whose guest path is (or goes through) a symlink lands where
// mount(2) puts it, on the link's target, as proot does; with proot's trailing "!" the link
// itself is the mount point (no kernel equivalent: checked against what proot prints).
func TestBindOverSymlink(t *testing.T) {
	needRoot(t)
	bin := droidrootBin(t)
	g := busyboxGuest(t)
	src := t.TempDir() + "/src"
	makeTree(t, src, tree{"f": "bound\n", "d/g": "g\n"})
	script := "cat /fx/filelink /fx/dir/file /fx/chain1; ls /fx/dir/sub"
	g.Binds = append(g.Binds, src+"/f:/fx/filelink", src+"/d:/fx/abs/sub")
	want := viaChroot(t, g, "", "/bin/sh", "-c", script)
	got := viaDroidroot(t, g, "", "/bin/sh", "-c", script)
	if got.String() != want.String() {
		t.Errorf("droidroot: %s\nchroot: %s", got, want)
	}
	if want.Stdout != "bound\nbound\nbound\ng\n" {
		t.Errorf("the oracle itself says %s", want)
	}
	// "!": the link is replaced, its target is not.
	res := run(t, "", bin, "run", "-r", g.Root, "-b", src+"/f:/fx/filelink!", "--", "/bin/sh", "-c", "cat /fx/filelink /fx/dir/file")
	if res.Stdout != "bound\nhello\n" {
		t.Errorf("with !: %s\nwant bound, then the target's own content", res)
	}
}

// TestCwdPending: droidroot lets chdir and fchdir run without waiting for their result and
// settles the guest cwd when it is next read; cwdprobe changes directory from threads (one
// that stays alive), fails to, forks and comes back with fchdir, inside a binding. Each
// transcript must be the chroot oracle's.
func TestCwdPending(t *testing.T) {
	needRoot(t)
	droidrootBin(t)
	g := busyboxGuest(t)
	src := t.TempDir() + "/src"
	makeTree(t, src, tree{"f": "f\n", "a/f": "af\n", "b/g": "bg\n"})
	g.Binds = append(g.Binds, src+":/fx/dir/sub")
	for _, prog := range probeVariants {
		prog := strings.Replace(prog, "pathprobe", "cwdprobe", 1)
		want := viaChroot(t, g, "", "/progs/"+prog, "/fx/dir/sub")
		got := viaDroidroot(t, g, "", "/progs/"+prog, "/fx/dir/sub")
		if got.String() != want.String() {
			t.Errorf("%s: droidroot: %s\nchroot: %s", prog, got, want)
		}
		if !strings.Contains(want.Stdout, "end: getcwd /fx/dir/sub/a, /proc/self/cwd /fx/dir/sub/a, stat f ok, stat a/f No such file or directory\n") {
			t.Errorf("%s: the oracle itself says %s", prog, want)
		}
	}
}
