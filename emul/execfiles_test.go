package emul

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestExecFilesProgram: program gives what exec reads of a file, with the
// kernel's checks made at every call, and reads it again once its stat
// differs (its content or its modes changed), whether or not it kept it.
func TestExecFilesProgram(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "prog")
	const ld = "/lib/ld-linux.so.2\x00"
	type step struct {
		name   string
		change func(t *testing.T)
		head   string // the head's first bytes
		interp string
		errno  unix.Errno
		kept   bool // answered from the cache (the same *execFile)
	}
	write := func(b []byte, mode os.FileMode) func(t *testing.T) {
		return func(t *testing.T) {
			if err := os.WriteFile(prog, b, mode); err != nil {
				t.Fatal(err)
			}
			// A new mtime even on a coarse clock.
			later := time.Now().Add(time.Duration(len(b)) * time.Second)
			if err := os.Chtimes(prog, later, later); err != nil {
				t.Fatal(err)
			}
		}
	}
	chmod := func(mode os.FileMode) func(t *testing.T) {
		return func(t *testing.T) {
			if err := os.Chmod(prog, mode); err != nil {
				t.Fatal(err)
			}
		}
	}
	steps := []step{
		{name: "missing", errno: unix.ENOENT},
		{name: "ELF", change: write(testELF(ld, nil), 0o755), head: "\x7fELF", interp: "/lib/ld-linux.so.2"},
		{name: "ELF again", head: "\x7fELF", interp: "/lib/ld-linux.so.2", kept: true},
		{name: "not executable", change: chmod(0o644), errno: unix.EACCES},
		{name: "executable again", change: chmod(0o755), head: "\x7fELF", interp: "/lib/ld-linux.so.2"},
		{name: "rewritten as a script", change: write([]byte("#!/bin/sh\necho\n"), 0o755), head: "#!/bin/sh"},
		{name: "script again", head: "#!/bin/sh", kept: true},
		{name: "static ELF", change: write(testELF("", nil), 0o755), head: "\x7fELF"},
		{name: "bad ELF", change: write(testELF("/lib/ld", nil), 0o755), head: "\x7fELF", errno: unix.ENOEXEC},
		{name: "a directory", change: func(t *testing.T) {
			if err := os.Remove(prog); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(prog, 0o755); err != nil {
				t.Fatal(err)
			}
		}, errno: unix.EACCES},
	}
	for _, cached := range []bool{true, false} {
		os.RemoveAll(prog)
		x := &execFiles{progs: map[string]*execFile{}, interps: map[string]fileID{}}
		if !cached {
			x = nil
		}
		var last *execFile
		for _, s := range steps {
			if s.change != nil {
				s.change(t)
			}
			f, errno := x.program(prog)
			if errno != 0 {
				if errno != s.errno {
					t.Errorf("cached=%v %s: errno %v, want %v", cached, s.name, errno, s.errno)
				}
				last = nil
				continue
			}
			if len(f.head) < len(s.head) || string(f.head[:len(s.head)]) != s.head || f.interp != s.interp || f.errno != s.errno {
				t.Errorf("cached=%v %s: head %.9q interp %q errno %v; want %q, %q, %v", cached, s.name, f.head, f.interp, f.errno, s.head, s.interp, s.errno)
			}
			if kept := f == last; kept != (s.kept && cached) {
				t.Errorf("cached=%v %s: answered from the cache %v, want %v", cached, s.name, kept, s.kept && cached)
			}
			last = f
		}
	}
}

// TestExecFilesInterpreter: an interpreter that opened is checked again
// with a stat only while that shows the same file; one gone is ENOENT.
func TestExecFilesInterpreter(t *testing.T) {
	dir := t.TempDir()
	ld := filepath.Join(dir, "ld.so")
	x := &execFiles{progs: map[string]*execFile{}, interps: map[string]fileID{}}
	if errno := x.interpreter(ld); errno != unix.ENOENT {
		t.Fatalf("missing: %v, want ENOENT", errno)
	}
	if err := os.WriteFile(ld, []byte("ld"), 0o755); err != nil {
		t.Fatal(err)
	}
	if errno := x.interpreter(ld); errno != 0 {
		t.Fatalf("present: %v", errno)
	}
	if _, ok := x.interps[ld]; !ok {
		t.Errorf("an interpreter that opened is not kept")
	}
	if errno := x.interpreter(ld); errno != 0 {
		t.Fatalf("again: %v", errno)
	}
	if err := os.Remove(ld); err != nil {
		t.Fatal(err)
	}
	if errno := x.interpreter(ld); errno != unix.ENOENT {
		t.Errorf("removed: %v, want ENOENT", errno)
	}
	if errno := (*execFiles)(nil).interpreter(dir); errno != 0 {
		t.Errorf("a directory opens read-only (the loader refuses it later): %v", errno)
	}
}
