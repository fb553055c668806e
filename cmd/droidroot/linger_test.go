package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/loader"
	"github.com/droidroot/droidroot/pathmap"
	"github.com/droidroot/droidroot/tracer"
)

// TestLingerClose: the lookup cache's inotify descriptor goes to a stage 2
// process (droidroot's loader) that holds it, without stdin, stdout or
// stderr, while droidroot's own copy is closed at once; when droidroot
// exits, the process dies of SIGKILL (never an exit status a tracer running
// droidroot could take for the run's). droidroot is played by this test's
// binary run again (lingerChild); this test adopts the orphan (a subreaper)
// to see how it ends.
func TestLingerClose(t *testing.T) {
	ld, err := loader.Extract(t.TempDir(), runtime.GOARCH, 0)
	if err != nil {
		t.Fatal(err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Skipf("no subreaper: %v", err)
	}
	defer unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
	cmd := exec.Command(os.Args[0], "-test.run=^TestLingerChild$", "-test.v")
	cmd.Env = append(os.Environ(), "DROIDROOT_LINGER_TEST="+ld)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("the droidroot stand-in: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "SKIP") {
		t.Skipf("%s", out)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(strings.SplitN(strings.SplitN(string(out), "lingering=", 2)[1], "\n", 2)[0]))
	deadline := time.Now().Add(10 * time.Second)
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		if err != nil {
			t.Fatalf("wait4(%d): %v", pid, err)
		}
		if got == pid {
			if !ws.Signaled() || ws.Signal() != unix.SIGKILL {
				t.Errorf("the lingering process ended with %v, want killed by SIGKILL", ws)
			}
			return
		}
		if time.Now().After(deadline) {
			unix.Kill(pid, unix.SIGKILL)
			t.Fatalf("the lingering process outlived droidroot by 10 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestLingerChild is TestLingerClose's droidroot: it makes a lookup cache,
// hands it over with lingerClose and checks the lingering process's
// descriptors; it prints the process's pid and exits.
func TestLingerChild(t *testing.T) {
	ld := os.Getenv("DROIDROOT_LINGER_TEST")
	if ld == "" {
		t.Skip("run by TestLingerClose")
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "a/b"), 0o755); err != nil {
		t.Fatal(err)
	}
	m, err := pathmap.New(root, nil, nil, pathmap.WithCache())
	if err != nil {
		t.Fatal(err)
	}
	if m.CacheFD() < 0 {
		t.Skip("no lookup cache here (inotify)")
	}
	if _, err := m.Resolve(pathmap.Proc{}, "/", "/a/b/c", true); err != nil {
		t.Fatal(err)
	}
	lingerClose(m, ld)
	if m.CacheFD() != -1 {
		t.Errorf("the cache is still open after lingerClose")
	}
	pid := lingeringChild(t)
	fd := func(n int) string {
		link, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.Itoa(n))
		return link
	}
	// The process may not have exec'd yet: its descriptors are set before.
	if got := fd(4); got != "anon_inode:inotify" {
		t.Errorf("the lingering process's fd 4 is %q, want the inotify instance", got)
	}
	for n := 0; n < 3; n++ {
		if got := fd(n); got != "" {
			t.Errorf("the lingering process has fd %d: %s", n, got)
		}
	}
	if fd(3) == "" || fd(3) != fd(5) {
		t.Errorf("the lingering process's fds 3 and 5 are %q and %q, want both ends of one pipe", fd(3), fd(5))
	}
	t.Logf("lingering=%d", pid)
}

// lingeringChild returns the pid of the test's child that runs as stage 2.
func lingeringChild(t *testing.T) int {
	t.Helper()
	me := strconv.Itoa(os.Getpid())
	for try := 0; try < 200; try++ {
		ents, _ := os.ReadDir("/proc")
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
			if err != nil {
				continue
			}
			// pid (comm) state ppid ...
			f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
			if len(f) < 2 || f[1] != me {
				continue
			}
			if cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && strings.TrimRight(string(cmd), "\x00") == tracer.Stage2Name {
				return pid
			}
		}
		time.Sleep(5 * time.Millisecond) // not exec'd yet
	}
	t.Fatalf("no child runs as %s", tracer.Stage2Name)
	return 0
}
