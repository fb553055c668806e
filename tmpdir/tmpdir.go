// Package tmpdir makes the directories a droidroot session keeps in its
// temporary directory (PROOT_TMP_DIR) and removes those of sessions that
// ended without removing their own.
//
// A session removes its directories when its guest tree has finished, but a
// droidroot killed with SIGKILL (what Android does to an app's processes)
// cannot. Every directory Make creates is locked with flock(2) on a
// descriptor the session holds open until it exits: the kernel drops the
// lock with the process, however it ends. Sweep takes each such directory's
// lock without waiting; a lock it gets belongs to a session that is gone,
// and the directory is removed.
//
// The directories are named prefix + "." + a random number: the dot tells
// them from the names of earlier droidroot versions (prefix + "-" +
// number), which held no lock and which Sweep leaves alone, since one of
// them may belong to a session still running.
package tmpdir

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// MinAge is how long a directory stays out of Sweep's reach after it was
// last modified: Make creates a directory before it can lock it.
const MinAge = time.Minute

// Prefixes are the name prefixes of the directories droidroot makes with
// Make; Sweep looks at these only.
var Prefixes = []string{
	"droidroot-binds",    // the bind points' directory tree
	"droidroot-fastpath", // the fast path's per-session files
	"droidroot-uts",      // -k's files
	"droidroot-shm",      // SysV shared memory segments
	"drs",                // unix socket aliases (short: sun_path is 108 bytes)
}

var (
	mu    sync.Mutex
	locks = map[string]int{} // directory -> the descriptor holding its lock
)

// Make creates a new directory in dir named prefix + "." + a random number
// (os.MkdirTemp's pattern), with mode 0700, and locks it for as long as
// this process lives or until Remove. It returns the directory's path.
func Make(dir, prefix string) (string, error) {
	path, err := os.MkdirTemp(dir, prefix+".")
	if err != nil {
		return "", err
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == nil {
		err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err != nil {
			unix.Close(fd)
		}
	}
	if err != nil {
		os.Remove(path)
		return "", &os.PathError{Op: "lock", Path: path, Err: err}
	}
	mu.Lock()
	locks[path] = fd
	mu.Unlock()
	return path, nil
}

// Remove removes a directory Make created, with everything in it, then
// drops its lock. A path Make did not create is only removed.
func Remove(path string) error {
	err := os.RemoveAll(path)
	mu.Lock()
	fd, ok := locks[path]
	delete(locks, path)
	mu.Unlock()
	if ok {
		unix.Close(fd)
	}
	return err
}

// Sweep removes from dir the directories of ended sessions: each entry
// named after one of Prefixes and a dot, a directory last modified at
// least MinAge before now, whose lock it can take. It returns how many it
// removed. Errors (another user's directory, a race with another Sweep)
// leave an entry where it is.
func Sweep(dir string, now time.Time) int {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		if !e.IsDir() || !swept(e.Name()) {
			continue
		}
		if sweepOne(filepath.Join(dir, e.Name()), now) {
			n++
		}
	}
	return n
}

// swept reports whether name is one Make gives.
func swept(name string) bool {
	for _, p := range Prefixes {
		if strings.HasPrefix(name, p+".") && len(name) > len(p)+1 {
			return true
		}
	}
	return false
}

// sweepOne removes path if it is old enough and its lock is free.
func sweepOne(path string, now time.Time) bool {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Uid != uint32(os.Geteuid()) {
		return false
	}
	if now.Sub(time.Unix(st.Mtim.Unix())) < MinAge {
		return false
	}
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return false // a live session's
	}
	return os.RemoveAll(path) == nil
}
