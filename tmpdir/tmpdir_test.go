package tmpdir

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// TestMain lets the test binary play a session: with TMPDIR_TEST_MAKE set
// it makes a directory there, prints its path and waits to be killed.
func TestMain(m *testing.M) {
	if dir := os.Getenv("TMPDIR_TEST_MAKE"); dir != "" {
		p, err := Make(dir, "binds")
		if err != nil {
			os.Stdout.WriteString("error " + err.Error() + "\n")
			os.Exit(1)
		}
		os.WriteFile(filepath.Join(p, "f"), []byte("x"), 0o600)
		os.Stdout.WriteString(p + "\n")
		for {
			// Not select {}: with no goroutine left to run, the runtime
			// ends the process ("all goroutines are asleep"), and the
			// lock with it, while the test still counts on it.
			time.Sleep(time.Hour)
		}
	}
	os.Exit(m.Run())
}

func TestMakeRemove(t *testing.T) {
	dir := t.TempDir()
	p, err := Make(dir, "uts")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(p), "uts.") || filepath.Dir(p) != dir {
		t.Errorf("Make gave %s, want %s/uts.N", p, dir)
	}
	if st, err := os.Stat(p); err != nil || st.Mode().Perm() != 0o700 || !st.IsDir() {
		t.Errorf("stat %s: %v %v, want a 0700 directory", p, st, err)
	}
	// Locked: another open file description cannot take the lock.
	if locked(t, p) == false {
		t.Errorf("%s is not locked", p)
	}
	if err := os.WriteFile(filepath.Join(p, "x"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Remove(p); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(p); !os.IsNotExist(err) {
		t.Errorf("after Remove: %v, want it gone", err)
	}
	if _, ok := locks[p]; ok {
		t.Errorf("Remove left its lock's descriptor")
	}
	if _, err := Make(filepath.Join(dir, "missing"), "drs"); err == nil {
		t.Errorf("Make in a missing directory: no error")
	}
}

// locked reports whether path's lock is held by someone else.
func locked(t *testing.T, path string) bool {
	t.Helper()
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == unix.EWOULDBLOCK
}

func TestDir(t *testing.T) {
	tmp := t.TempDir()
	want := filepath.Join(tmp, DirPrefix+strconv.Itoa(os.Geteuid()))
	for i := 0; i < 2; i++ { // made, then found
		d, ok := Dir(tmp)
		if d != want || !ok {
			t.Fatalf("Dir: %s, %v; want %s, true", d, ok, want)
		}
		if st, err := os.Lstat(d); err != nil || !st.IsDir() || st.Mode().Perm() != 0o711 {
			t.Fatalf("%s: %v, %v; want a 0711 directory", d, st, err)
		}
	}
	for _, tc := range []struct {
		name string
		make func(p string) error
	}{
		{"a symlink", func(p string) error { return os.Symlink(t.TempDir(), p) }},
		{"a file", func(p string) error { return os.WriteFile(p, nil, 0o600) }},
		{"others may write", func(p string) error {
			if err := os.Mkdir(p, 0o700); err != nil {
				return err
			}
			return os.Chmod(p, 0o777)
		}},
		{"another user's", func(p string) error {
			if err := os.Mkdir(p, 0o700); err != nil {
				return err
			}
			return os.Lchown(p, os.Geteuid()+1, -1)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "another user's" && os.Geteuid() != 0 {
				t.Skip("chown needs root")
			}
			tmp := t.TempDir()
			if err := tc.make(filepath.Join(tmp, DirPrefix+strconv.Itoa(os.Geteuid()))); err != nil {
				t.Fatal(err)
			}
			if d, ok := Dir(tmp); d != tmp || ok {
				t.Errorf("Dir: %s, %v; want %s, false", d, ok, tmp)
			}
		})
	}
	if d, ok := Dir(filepath.Join(tmp, "missing")); ok {
		t.Errorf("Dir of a missing directory: %s, true", d)
	}
}

func TestSweep(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	old := now.Add(-2 * MinAge)
	mk := func(name string, mtime time.Time) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Join(p, "sub"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, p := range []string{"binds.1", "fastpath.2", "uts.3", "shm.4", "drs.5"} {
		mk(p, old) // an ended session's: removed
	}
	mk("binds.young", now.Add(-MinAge/2)) // just made: kept
	if err := os.WriteFile(filepath.Join(dir, "shm.file"), nil, 0o600); err != nil {
		t.Fatal(err) // not a directory: kept
	}
	target := t.TempDir()
	if err := os.Symlink(target, filepath.Join(dir, "uts.link")); err != nil {
		t.Fatal(err) // a symlink: kept, and its target too
	}
	if err := os.Chtimes(target, old, old); err != nil {
		t.Fatal(err)
	}
	// A live session's, locked by another open file description: kept.
	live := mk("fastpath.live", old)
	fd, err := unix.Open(live, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		other := mk("binds.other", old) // another user's: kept
		if err := os.Chown(other, 1, -1); err != nil {
			t.Fatal(err)
		}
	}

	if n := Sweep(dir, now); n != 5 {
		t.Errorf("Sweep removed %d, want 5", n)
	}
	want := []string{"binds.young", "fastpath.live", "shm.file", "uts.link"}
	if os.Geteuid() == 0 {
		want = append([]string{"binds.other"}, want...)
	}
	if diff := cmp.Diff(want, names(t, dir)); diff != "" {
		t.Errorf("left after Sweep (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(target); err != nil {
		t.Errorf("a symlink's target: %v", err)
	}
	if n := Sweep(filepath.Join(dir, "missing"), now); n != 0 {
		t.Errorf("Sweep of a missing directory: %d", n)
	}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// TestSweepKilled: a session's directory is kept while it runs and removed
// by the first Sweep after it was killed with SIGKILL.
func TestSweepKilled(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TMPDIR_TEST_MAKE="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, dir+"/binds.") {
		t.Fatalf("child said %q, %v", line, err)
	}
	p := strings.TrimSpace(line)
	later := time.Now().Add(2 * MinAge)
	if n := Sweep(dir, later); n != 0 {
		t.Errorf("Sweep removed %d of a live session's directories", n)
	}
	if _, err := os.Stat(filepath.Join(p, "f")); err != nil {
		t.Errorf("a live session's file: %v", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	if n := Sweep(dir, time.Now()); n != 0 {
		t.Errorf("Sweep removed %d directories younger than MinAge", n)
	}
	if n := Sweep(dir, later); n != 1 {
		t.Errorf("Sweep after SIGKILL removed %d, want 1", n)
	}
	if _, err := os.Lstat(p); !os.IsNotExist(err) {
		t.Errorf("%s after Sweep: %v", p, err)
	}
}
