package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/loader"
	"github.com/droidroot/droidroot/pathmap"
	"github.com/droidroot/droidroot/tracer"
)

// TestLingerClose: the lookup cache's inotify descriptor goes to a stage 2
// process (droidroot's loader) that holds it, without stdin, stdout or
// stderr, until droidroot's end closes its pipe; droidroot's own copy is
// closed at once.
func TestLingerClose(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "a/b"), 0o755); err != nil {
		t.Fatal(err)
	}
	m, err := pathmap.New(root, nil, nil, pathmap.WithCache())
	if err != nil {
		t.Fatal(err)
	}
	fd := m.CacheFD()
	if fd < 0 {
		t.Skip("no lookup cache here (inotify)")
	}
	if _, err := m.Resolve(pathmap.Proc{}, "/", "/a/b/c", true); err != nil {
		t.Fatal(err)
	}
	ld, err := loader.Extract(t.TempDir(), runtime.GOARCH, 0)
	if err != nil {
		t.Fatal(err)
	}
	before := len(lingering)
	lingerClose(m, ld)
	if m.CacheFD() != -1 {
		t.Errorf("the cache is still open after lingerClose")
	}
	if len(lingering) != before+1 {
		t.Fatalf("no lingering process")
	}
	pid := lingeringChild(t)
	if link, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/4"); err != nil || link != "anon_inode:inotify" {
		t.Errorf("the lingering process's fd 4 is %q (%v), want the inotify instance", link, err)
	}
	for n := 0; n < 3; n++ {
		if _, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.Itoa(n)); err == nil {
			t.Errorf("the lingering process has fd %d", n)
		}
	}
	// droidroot's end: the pipe closes, the process exits.
	pw := lingering[len(lingering)-1]
	lingering = lingering[:before]
	pw.Close()
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil || !ws.Exited() || ws.ExitStatus() != 125 {
		t.Errorf("the lingering process ended with %v (%v), want exit status 125", ws, err)
	}
}

// lingeringChild returns the pid of the test's child that runs as stage 2.
func lingeringChild(t *testing.T) int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	me := strconv.Itoa(os.Getpid())
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
	t.Fatalf("no child runs as %s", tracer.Stage2Name)
	return 0
}
