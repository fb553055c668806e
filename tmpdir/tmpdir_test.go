package tmpdir

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
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
		p, err := Make(dir, "droidroot-binds")
		if err != nil {
			os.Stdout.WriteString("error " + err.Error() + "\n")
			os.Exit(1)
		}
		os.WriteFile(filepath.Join(p, "f"), []byte("x"), 0o600)
		os.Stdout.WriteString(p + "\n")
		select {}
	}
	os.Exit(m.Run())
}

func TestMakeRemove(t *testing.T) {
	dir := t.TempDir()
	p, err := Make(dir, "droidroot-uts")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(p), "droidroot-uts.") || filepath.Dir(p) != dir {
		t.Errorf("Make gave %s, want %s/droidroot-uts.N", p, dir)
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
	for _, p := range Prefixes {
		mk(p+".123", old) // an ended session's: removed
	}
	mk("droidroot-binds.young", now.Add(-MinAge/2)) // just made: kept
	mk("droidroot-binds-123", old)                  // an earlier version's, maybe live: kept
	mk("droidroot-empty-0", old)                    // not a session's: kept
	mk("droidroot-binds.", old)                     // no number: kept
	mk("drs", old)
	mk("other.1", old)
	if err := os.WriteFile(filepath.Join(dir, "droidroot-shm.file"), nil, 0o600); err != nil {
		t.Fatal(err) // not a directory: kept
	}
	if err := os.Symlink(mk("target", old), filepath.Join(dir, "droidroot-uts.link")); err != nil {
		t.Fatal(err) // a symlink: kept, and its target too
	}
	// A live session's, locked by another open file description: kept.
	live := mk("droidroot-fastpath.live", old)
	fd, err := unix.Open(live, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if err := unix.Flock(fd, unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}

	if n := Sweep(dir, now); n != len(Prefixes) {
		t.Errorf("Sweep removed %d, want %d", n, len(Prefixes))
	}
	want := []string{"droidroot-binds-123", "droidroot-binds.", "droidroot-binds.young", "droidroot-empty-0",
		"droidroot-fastpath.live", "droidroot-shm.file", "droidroot-uts.link", "drs", "other.1", "target"}
	if diff := cmp.Diff(want, names(t, dir)); diff != "" {
		t.Errorf("left after Sweep (-want +got):\n%s", diff)
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
	if err != nil || !strings.HasPrefix(line, dir+"/droidroot-binds.") {
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
