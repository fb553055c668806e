package pathmap

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// sameFile tells whether descriptor fd is open on the file at path (not
// followed) or, with path "", on descriptor other's file.
func sameFile(t *testing.T, fd int, other int) bool {
	t.Helper()
	var a, b unix.Stat_t
	if unix.Fstat(fd, &a) != nil || unix.Fstat(other, &b) != nil {
		return false
	}
	return a.Dev == b.Dev && a.Ino == b.Ino
}

// nodePin returns the descriptor the cache's node of host directory dir holds.
func nodePin(t *testing.T, m *Mapper, dir string) int {
	t.Helper()
	c := m.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.dirs[dir]; n != nil && n.pin > 0 {
		return n.pin
	}
	t.Fatalf("no descriptor for %s", dir)
	return 0
}

// TestRetireRemoved: the node of a directory that was removed lets it go at
// once (its number holds the dead directory until the grace ends), so the
// kernel can report its IN_DELETE_SELF; a renamed one stays held until then.
func TestRetireRemoved(t *testing.T) {
	root, _, m := pinnedTree(t)
	readPinned(t, m, "/d/f")
	readPinned(t, m, "/e/f")
	dfd, efd := nodePin(t, m, filepath.Join(root, "d")), nodePin(t, m, filepath.Join(root, "e"))
	in, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	must(t, err)
	defer unix.Close(in)
	_, err = unix.InotifyAddWatch(in, filepath.Join(root, "d"), unix.IN_DELETE_SELF)
	must(t, err)
	must(t, os.RemoveAll(filepath.Join(root, "d")))
	must(t, os.Rename(filepath.Join(root, "e"), filepath.Join(root, "e2")))
	c := m.cache
	c.mu.Lock()
	c.sync()
	dead := c.deadFd
	c.mu.Unlock()
	if dead <= 0 || !sameFile(t, dfd, dead) {
		t.Errorf("the removed directory's number does not hold the dead directory")
	}
	buf := make([]byte, 4096)
	if n, err := unix.Read(in, buf); n <= 0 {
		t.Errorf("no IN_DELETE_SELF for the removed directory: %v", err)
	}
	var st unix.Stat_t
	must(t, unix.Stat(filepath.Join(root, "e2"), &st))
	var est unix.Stat_t
	if unix.Fstat(efd, &est) != nil || est.Ino != st.Ino {
		t.Errorf("the renamed directory's descriptor no longer holds it during the grace")
	}
}

// TestLetGoRemoved: a file pin still in use whose file was removed is given
// the dead directory once removedGrace has passed since it was handed out (not
// before, and not for a file that still has a link), and closed at its last
// release.
func TestLetGoRemoved(t *testing.T) {
	root, _, m := pinnedTree(t)
	lookup := func(p string) string {
		r, err := m.Lookup(Proc{}, "/", p, Follow)
		must(t, err)
		return r.Host
	}
	_, dfd, pin, _ := m.PinnedFile(lookup("/d/f"))
	_, efd, pin2, _ := m.PinnedFile(lookup("/e/f"))
	if pin != Pinned || pin2 != Pinned || dfd < 0 || efd < 0 {
		t.Fatalf("PinnedFile: %v %d, %v %d", pin, dfd, pin2, efd)
	}
	must(t, os.Remove(filepath.Join(root, "d", "f")))
	must(t, os.Rename(filepath.Join(root, "e", "f"), filepath.Join(root, "e", "g")))
	c := m.cache
	c.mu.Lock()
	c.sync() // the entries are dropped; the pins stay in use
	c.letGoRemoved(time.Now())
	early := c.deadFd > 0 && sameFile(t, dfd, c.deadFd)
	c.letGoRemoved(time.Now().Add(removedGrace + time.Second))
	late := c.deadFd > 0 && sameFile(t, dfd, c.deadFd)
	renamed := c.deadFd > 0 && sameFile(t, efd, c.deadFd)
	c.mu.Unlock()
	if early || !late || renamed {
		t.Errorf("dead directory given: before the grace %v (want false), after %v (want true), to a renamed file %v (want false)",
			early, late, renamed)
	}
	m.ReleaseFile(dfd)
	m.ReleaseFile(efd)
	if st := m.CacheStats(); st.FilePins != 0 {
		t.Errorf("after the releases: %d file pins, want 0", st.FilePins)
	}
}

// TestApplyChangesInBackground: with nobody looking anything up, a removed
// directory that the cache held is let go (its IN_DELETE_SELF comes), and the
// goroutine ends when the cache is closed.
func TestApplyChangesInBackground(t *testing.T) {
	root, _, m := pinnedTree(t)
	readPinned(t, m, "/d/f")
	in, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	must(t, err)
	defer unix.Close(in)
	_, err = unix.InotifyAddWatch(in, filepath.Join(root, "d"), unix.IN_DELETE_SELF)
	must(t, err)
	m.ApplyChangesInBackground()
	must(t, os.RemoveAll(filepath.Join(root, "d")))
	fds := []unix.PollFd{{Fd: int32(in), Events: unix.POLLIN}}
	if n, err := unix.Poll(fds, 5000); n != 1 {
		t.Errorf("no IN_DELETE_SELF within 5 s of the removal: %v", err)
	}
	m.Close()
}
