//go:build !linux

package pathmap

import (
	"errors"
	"syscall"
)

// Without inotify there is no lookup cache: WithCache is ignored.

type cache struct{}

func newCache(tops []string, maxDirs, maxEntries int) (*cache, error) {
	return nil, errors.New("pathmap: no lookup cache on this system")
}

func (*cache) close()                                       {}
func (*cache) fd() int                                      { return -1 }
func (*cache) stats() CacheStats                            { return CacheStats{} }
func (*cache) lstat(w *walker, path []byte) (uint32, error) { return sysLstat(w.cbuf) }
func (*cache) readlink(w *walker, path []byte) (int, error) { return sysReadlink(w.cbuf, w.lbuf) }

// Pin says what PinnedName found.
type Pin int

// PinnedName's answers.
const (
	Pinned Pin = iota
	Unpinned
	Stale
)

// PinnedName is not available without the lookup cache: Unpinned.
func (m *Mapper) PinnedName(host string) (string, Pin, syscall.Errno) { return "", Unpinned, 0 }

// ReleaseFile has nothing to release without the lookup cache.
func (m *Mapper) ReleaseFile(fd int) {}

// PinnedFile is not available without the lookup cache: Unpinned.
func (m *Mapper) PinnedFile(host string) (string, int, Pin, syscall.Errno) {
	return "", -1, Unpinned, 0
}

// DirToken is nil without the lookup cache.
func (m *Mapper) DirToken(dir string) any { return nil }

// DirUnchanged is false without the lookup cache.
func (m *Mapper) DirUnchanged(dir string, tok any, b *Batch) bool { return false }
