package emul

import (
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/fastpath"
)

// waitvRegistry is the tracer's own mapping of the session's futex_waitv
// registry (fastpath/csrc/waitv.c's struct fw_registry, shared with every
// fast path library of the session): the tracer claims slots and publishes
// waiters there for the processes without the library, with the same
// atomic protocol as the library.
type waitvRegistry struct {
	mem []byte
}

// Layout of struct fw_registry (waitv.c; fastpath.RegistrySize).
const (
	fwSlots      = 1024
	fwMaxWaiters = 128
	fwMagic      = 0x57565244 // "DRVW"
	fwHiwaterOff = 8
	fwStatesOff  = 16
	fwBloomsOff  = fwStatesOff + 4*fwSlots
	fwSlotsOff   = fwBloomsOff + 8*fwSlots
	fwSlotSize   = 16 + 24*fwMaxWaiters
)

// mapWaitvRegistry maps the registry file at path shared and marks it
// initialised, as the library's fw_setup does.
func mapWaitvRegistry(path string) (*waitvRegistry, error) {
	mem, err := mapShared(path, fastpath.RegistrySize)
	if err != nil {
		return nil, err
	}
	r := &waitvRegistry{mem: mem}
	atomic.CompareAndSwapUint32(r.u32(0), 0, fwMagic)
	if atomic.LoadUint32(r.u32(0)) != fwMagic {
		unix.Munmap(mem)
		return nil, unix.EINVAL
	}
	return r, nil
}

func (r *waitvRegistry) u32(off int) *uint32 { return (*uint32)(unsafe.Pointer(&r.mem[off])) }
func (r *waitvRegistry) u64(off int) *uint64 { return (*uint64)(unsafe.Pointer(&r.mem[off])) }

// state is slot i's state word.
func (r *waitvRegistry) state(i int) *uint32 { return r.u32(fwStatesOff + 4*i) }

// hiwater is the number of slots a waker scans.
func (r *waitvRegistry) hiwater() *uint32 { return r.u32(fwHiwaterOff) }

// setBloom stores slot i's key summary.
func (r *waitvRegistry) setBloom(i int, v uint64) { atomic.StoreUint64(r.u64(fwBloomsOff+8*i), v) }

// setSlot writes slot i's owner and keys (the slot is CLAIMED: nobody
// reads them until it is published WAITING).
func (r *waitvRegistry) setSlot(i int, pid, tid uint32, keys []waitvKey) {
	base := fwSlotsOff + fwSlotSize*i
	*r.u32(base) = pid
	*r.u32(base + 4) = tid
	*r.u32(base + 8) = uint32(len(keys))
	for j, k := range keys {
		o := base + 16 + 24*j
		*r.u64(o) = k.a
		*r.u64(o + 8) = k.b
		*r.u64(o + 16) = k.c
	}
}

// bloom is slot i's key summary.
func (r *waitvRegistry) bloom(i int) uint64 { return atomic.LoadUint64(r.u64(fwBloomsOff + 8*i)) }

// keyIndex is the index of key among slot i's keys, -1 if none.
func (r *waitvRegistry) keyIndex(i int, key waitvKey) int {
	base := fwSlotsOff + fwSlotSize*i
	n := int(atomic.LoadUint32(r.u32(base + 8)))
	if n > fwMaxWaiters {
		n = fwMaxWaiters
	}
	for j := 0; j < n; j++ {
		o := base + 16 + 24*j
		if atomic.LoadUint64(r.u64(o)) == key.a && atomic.LoadUint64(r.u64(o+8)) == key.b && atomic.LoadUint64(r.u64(o+16)) == key.c {
			return j
		}
	}
	return -1
}

// wakeState wakes the thread sleeping on slot i's state word: a shared
// futex, so the word of the registry file's page, whatever address the
// waiter's process maps it at.
func (r *waitvRegistry) wakeState(i int) {
	unix.Syscall6(unix.SYS_FUTEX, uintptr(unsafe.Pointer(r.state(i))), 1 /* FUTEX_WAKE */, 1, 0, 0, 0)
}

// slotOwner returns slot i's pid and tid.
func (r *waitvRegistry) slotOwner(i int) (pid, tid uint32) {
	base := fwSlotsOff + fwSlotSize*i
	return atomic.LoadUint32(r.u32(base)), atomic.LoadUint32(r.u32(base + 4))
}
