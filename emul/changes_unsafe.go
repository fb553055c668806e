package emul

import (
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/fastpath"
)

// changeCounter is the tracer's own mapping of the session's change counter
// (fastpath.Config.Changes), shared with every fast path library of the
// session: each rename or removal the tracer sees succeed increments it, as
// the library does for its own, so that every process's cached directories
// are verified again on their next use.
type changeCounter struct {
	mem []byte
}

// mapChanges maps the change counter's file at path shared.
func mapChanges(path string) (*changeCounter, error) {
	mem, err := mapShared(path, fastpath.ChangesSize)
	if err != nil {
		return nil, err
	}
	return &changeCounter{mem: mem}, nil
}

// mapShared maps the first size bytes of the file at path read-write and
// shared (the futex_waitv registry, the change counter).
func mapShared(path string, size int) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
}

func (cc *changeCounter) word() *uint32 { return (*uint32)(unsafe.Pointer(&cc.mem[0])) }

// add counts one change.
func (cc *changeCounter) add() { atomic.AddUint32(cc.word(), 1) }

// load returns the count.
func (cc *changeCounter) load() uint32 { return atomic.LoadUint32(cc.word()) }
