package tracer

import (
	"encoding/binary"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/loader"
)

// The scratch area (issue 18's third race). Handlers hand the kernel host
// paths in guest memory (Call.PushString; structures, which the kernel may
// write back, stay below the stack pointer: Call.Push). Below the stack pointer, where proot
// writes them, any other thread of the process can overwrite one between the
// tracer's write and the kernel's read, with a host path of its choice. So
// every process the loader starts maps a read-only area at a fixed address
// (loader.ScratchAddr, script.h), and each guest thread is given a slot of it
// of its own (unique among all traced threads, so that processes sharing
// their memory never share one); the tracer writes the slot through
// /proc/<pid>/mem, which writes read-only private pages, and no guest thread
// can change the slot without first changing the mapping (mprotect,
// munmap, mremap, mmap MAP_FIXED, madvise) or writing /proc/self/mem: what
// only a program written against droidroot does (docs/security.md). Where
// the area is missing (stage 2, a foreign PROOT_LOADER, a mapping that
// failed: its magic is not there), the thread has no slot (more threads
// than slots) or a push does not fit in one, pushes go below the stack
// pointer as before.

// scratchSlots is the number of slots; slot 0 holds the magic.
const scratchSlots = int(loader.ScratchSize / loader.ScratchSlot)

// Scratch states of a Process.
const (
	scratchUnknown = iota // not checked since the process started or exec'd
	scratchYes
	scratchNo
)

// inScratch tells whether v is an address in the scratch area.
func inScratch(v uint64) bool {
	return v >= loader.ScratchAddr+loader.ScratchSlot && v < loader.ScratchAddr+loader.ScratchSize
}

// scratchSlot returns the bounds of the calling thread's slot and the
// descriptor to write it with, ok false when pushes go to the stack.
func (c *Call) scratchSlot() (lo, top uint64, fd int, ok bool) {
	th, p := c.th, c.th.Proc
	if p == nil || c.t == nil || c.t.noScratch {
		return 0, 0, 0, false
	}
	if p.scratch == scratchUnknown {
		p.scratch = scratchNo
		var b [8]byte
		if n, err := readMem(th.Tid, loader.ScratchAddr, b[:]); err == nil && n == 8 && binary.LittleEndian.Uint64(b[:]) == loader.ScratchMagic {
			p.scratch = scratchYes
		}
	}
	if p.scratch != scratchYes {
		return 0, 0, 0, false
	}
	if p.memFd <= 0 {
		fd, err := unix.Open("/proc/"+strconv.Itoa(th.Tid)+"/mem", unix.O_RDWR|unix.O_CLOEXEC, 0)
		if err != nil {
			p.scratch = scratchNo
			return 0, 0, 0, false
		}
		p.memFd = fd
	}
	if th.slot == 0 {
		th.slot = c.t.allocSlot()
		if th.slot == 0 {
			return 0, 0, 0, false
		}
	}
	lo = loader.ScratchAddr + uint64(th.slot)*loader.ScratchSlot
	return lo, lo + loader.ScratchSlot, p.memFd, true
}

// pushScratch writes b into the calling thread's scratch slot, below what
// the call pushed there before; ok false when it must go to the stack.
func (c *Call) pushScratch(b []byte) (uint64, bool) {
	if c.slotTop == 0 {
		lo, top, fd, ok := c.scratchSlot()
		if !ok {
			c.slotTop = 1 // checked: no slot
			return 0, false
		}
		c.slotLo, c.slotTop, c.slotCur, c.memFd = lo, top, top-min(c.slotReserve, top-lo), fd
	}
	if c.slotTop == 1 || c.slotCur-c.slotLo < uint64(len(b))+15 {
		return 0, false
	}
	addr := (c.slotCur - uint64(len(b))) &^ 15
	if n, err := unix.Pwrite(c.memFd, b, int64(addr)); err != nil || n != len(b) {
		// The area is gone (a deliberate munmap): not again for this process.
		c.th.Proc.scratch = scratchNo
		c.slotTop = 1
		return 0, false
	}
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

// closeMem forgets p's /proc/<pid>/mem descriptor and scratch state (p
// exec'd a new program, or exited).
func (p *Process) closeMem() {
	if p.memFd > 0 {
		unix.Close(p.memFd)
	}
	p.memFd = 0
	p.scratch = scratchUnknown
}
