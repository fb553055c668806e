package tracer

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/loader"
)

// The scratch area (issue 18's third race). Handlers hand the kernel host
// paths in guest memory (Call.PushString; structures, which the kernel may
// write back, stay below the stack pointer: Call.Push). Below the stack
// pointer, where proot writes them, any other thread of the process can
// overwrite one between the tracer's write and the kernel's read, with a
// host path of its choice. So the tracer keeps a memfd of
// loader.ScratchSize bytes, mapped writable in its own memory and sealed
// against other writers (F_SEAL_FUTURE_WRITE, where the kernel has it), and
// every process the loader starts maps it read-only at a fixed address
// (its loader.Variant's Scratch; the loader opens the tracer's /proc/<pid>/fd/<N>
// read-only, so that mprotect cannot make it writable). Each guest thread
// is given a slot of it of its own, unique among all traced threads
// (processes share the file), and the tracer writes the slot with a plain
// copy into its own mapping: no system call, where process_vm_writev cost
// one per call. No guest thread can change a slot, short of unmapping the
// area and mapping its own memory there: what only a program written
// against droidroot does (docs/security.md). Where the area is missing in
// a process (stage 2, a foreign PROOT_LOADER, a mapping or an open that
// failed: the cookie in slot 0 is not there), the thread has no slot (more
// threads than slots) or a string does not fit in one, pushes go below the
// stack pointer as before.

// scratchSlots is the number of slots; slot 0 holds the cookie.
const scratchSlots = int(loader.ScratchSize / loader.ScratchSlot)

// Scratch states of a Process.
const (
	scratchUnknown = iota // not checked since the process started or exec'd
	scratchYes
	scratchNo
)

// scratch is the tracer's side of the scratch area.
type scratch struct {
	addr   uint64   // where the loader maps it in guest processes
	mem    []byte   // the tracer's writable mapping
	path   string   // /proc/<pid>/fd/<N>, for the loader
	cookie [16]byte // the first bytes of slot 0
}

// newScratch makes the scratch file and maps it, for a loader that maps it
// at addr in guest processes, or returns nil when the kernel refuses (no
// memfd_create, ...): pushes then go below the stack.
func newScratch(addr uint64) *scratch {
	fd, err := unix.MemfdCreate("droidroot-scratch", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil
	}
	if unix.Ftruncate(fd, int64(loader.ScratchSize)) != nil {
		unix.Close(fd)
		return nil
	}
	mem, err := unix.Mmap(fd, 0, int(loader.ScratchSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil
	}
	s := &scratch{addr: addr, mem: mem, path: "/proc/" + strconv.Itoa(os.Getpid()) + "/fd/" + strconv.Itoa(fd)}
	copy(s.cookie[:], "DRSCRTCH")
	binary.LittleEndian.PutUint64(s.cookie[8:], rand.Uint64())
	copy(mem, s.cookie[:])
	// No other writer: new writable mappings and write(2) are refused from
	// here on (Linux 5.1), ours stays. Older kernels: the loader's
	// read-only open is what keeps a guest from writing.
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_FUTURE_WRITE); err != nil {
		unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW)
	}
	return s
}

// has tells whether v is an address in the scratch area's slots (false
// for a nil s: no scratch area).
func (s *scratch) has(v uint64) bool {
	return s != nil && v >= s.addr+loader.ScratchSlot && v < s.addr+loader.ScratchSize
}

// checkScratch settles whether the calling thread's process has the
// scratch area mapped (once per process image).
func (c *Call) checkScratch() {
	th, p := c.th, c.th.Proc
	if p == nil || c.t == nil || c.t.scratch == nil || p.scratch != scratchUnknown || th.loading {
		return // settled, or the loader has not mapped it yet
	}
	p.scratch = scratchNo
	var b [16]byte
	if n, err := readMem(th.Tid, c.t.scratch.addr, b[:]); err == nil && n == len(b) && bytes.Equal(b[:], c.t.scratch.cookie[:]) {
		p.scratch = scratchYes
	}
}

// ScratchMissing tells whether the calling thread's process lacks the
// scratch area although the tracer has one: its loader's open of the
// tracer's /proc/<pid>/fd/<N> or its mapping failed (or stage 2, or a
// foreign PROOT_LOADER, ran it). A system whose /proc keeps a guest from
// the tracer's descriptors (an SELinux or hidepid policy) fails that open,
// and would fail every name pinned below the tracer's descriptors the
// same way: the path handlers hand such a process its host paths instead.
func (c *Call) ScratchMissing() bool {
	c.checkScratch()
	p := c.th.Proc
	return p != nil && p.scratchAsked && p.scratch == scratchNo
}

// scratchSlot returns the bounds of the calling thread's slot, ok false
// when pushes go to the stack.
func (c *Call) scratchSlot() (lo, top uint64, ok bool) {
	th, p := c.th, c.th.Proc
	if p == nil || c.t == nil || c.t.scratch == nil {
		return 0, 0, false
	}
	c.checkScratch()
	if p.scratch != scratchYes {
		return 0, 0, false
	}
	if th.slot == 0 {
		th.slot = c.t.allocSlot()
		if th.slot == 0 {
			return 0, 0, false
		}
	}
	lo = c.t.scratch.addr + uint64(th.slot)*loader.ScratchSlot
	return lo, lo + loader.ScratchSlot, true
}

// pushScratch writes b into the calling thread's scratch slot, below what
// the call pushed there before; ok false when it must go to the stack.
func (c *Call) pushScratch(b []byte) (uint64, bool) {
	if c.slotTop == 0 {
		lo, top, ok := c.scratchSlot()
		if !ok {
			c.slotTop = 1 // checked: no slot
			return 0, false
		}
		c.slotLo, c.slotTop, c.slotCur = lo, top, top-min(c.slotReserve, top-lo)
	}
	if c.slotTop == 1 || c.slotCur-c.slotLo < uint64(len(b))+15 {
		return 0, false
	}
	addr := (c.slotCur - uint64(len(b))) &^ 15
	copy(c.t.scratch.mem[addr-c.t.scratch.addr:], b)
	c.slotCur = addr
	return addr, true
}

// allocSlot returns a free scratch slot, or 0 when all are taken.
func (t *Tracer) allocSlot() int {
	if n := len(t.freeSlots); n > 0 {
		s := t.freeSlots[n-1]
		t.freeSlots = t.freeSlots[:n-1]
		return s
	}
	if t.nextSlot == 0 {
		t.nextSlot = 1
	}
	if t.nextSlot >= scratchSlots {
		return 0
	}
	t.nextSlot++
	return t.nextSlot - 1
}

// freeSlot gives back th's slot (the thread is gone).
func (t *Tracer) freeSlot(th *Thread) {
	if th != nil && th.slot != 0 {
		t.freeSlots = append(t.freeSlots, th.slot)
		th.slot = 0
	}
}
