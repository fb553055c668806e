// Package tmpdir makes the directories a droidroot session keeps in its
// temporary directory (PROOT_TMP_DIR) and removes those of sessions that
// ended without removing their own.
//
// A session removes its directories when its guest tree has finished, but a
// droidroot killed with SIGKILL (what Android does to an app's processes)
// cannot. Every directory Make creates is locked with flock(2) on a
// descriptor the session holds open until it exits: the kernel drops the
// lock with the process, however it ends. Sweep takes each directory's lock
// without waiting; a lock it gets belongs to a session that is gone, and
// the directory is removed.
//
// The directories live in one directory per user, Dir's
// droidroot-run-EUID, so that a sweep reads a handful of entries rather
// than the whole of a shared /tmp (442 entries on the development VM: 0.4
// ms).
package tmpdir

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// MinAge is how long a directory stays out of Sweep's reach after it was
// last modified: Make creates a directory before it can lock it.
const MinAge = time.Minute

// DirPrefix starts the name of Dir's directory; the user's effective id
// follows.
const DirPrefix = "droidroot-run-"

var (
	mu    sync.Mutex
	locks = map[string]int{} // directory -> the descriptor holding its lock
)

// Dir returns the directory in tmp that holds this user's sessions'
// directories, tmp/droidroot-run-EUID, made with mode 0711 if missing, and
// true. Others may not list it, but may pass through it to a directory
// whose own mode lets them in: the bind points' tree (0755) is reached by
// guest processes that changed their ids for real (apt's sandbox user
// under a droidroot run as root), as when it was made in tmp itself. Where that name is not a directory of this user's that no one
// else may write (another user made it first in a shared /tmp), it returns
// tmp itself and false: Make works there, Sweep must not run there.
func Dir(tmp string) (string, bool) {
	euid := os.Geteuid()
	dir := filepath.Join(tmp, DirPrefix+strconv.Itoa(euid))
	if err := unix.Mkdir(dir, 0o711); err == nil {
		unix.Chmod(dir, 0o711) // whatever the umask
	} else if err != unix.EEXIST {
		return tmp, false
	}
	var st unix.Stat_t
	if unix.Lstat(dir, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR ||
		st.Uid != uint32(euid) || st.Mode&0o022 != 0 {
		return tmp, false
	}
	return dir, true
}

// Make creates a new directory in dir (os.TempDir() for "") named prefix +
// "." + a random number (os.MkdirTemp's pattern), with mode 0700, and locks it for as long as
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

// Sweep removes from dir (one of Dir's) the directories of ended sessions:
// each directory in it last modified at least MinAge before now whose lock
// it can take. It returns how many it removed. Errors (a race with another
// Sweep) leave an entry where it is.
func Sweep(dir string, now time.Time) int {
	f, err := os.Open(dir)
	if err != nil {
		return 0
	}
	names, _ := f.Readdirnames(-1)
	f.Close()
	n := 0
	for _, name := range names {
		if sweepOne(filepath.Join(dir, name), now) {
			n++
		}
	}
	return n
}

// sweepOne removes path if it is a directory of this user's, old enough,
// whose lock is free.
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
