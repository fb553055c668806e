package emul

import (
	"bufio"
	"encoding/binary"
	"os"
	"path"
	"strconv"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/fastpath"
	"github.com/droidroot/droidroot/loader"
	"github.com/droidroot/droidroot/tracer"
)

// futex_waitv answered by the tracer, for the processes of a session whose
// fast path library answers it (fastpath.FlagWaitv) that do not have the
// library (static and musl programs) or that call it with a raw syscall
// instruction: the same answers as the library's (fastpath/csrc/waitv.c),
// against the same registry, so the whole tree agrees (docs/android.md).
//
//   - The arguments are checked in the kernel's order (kernel/futex/syscalls.c),
//     with the kernel's EFAULT for any pointer the tracer cannot read.
//   - One word: the thread waits with an injected FUTEX_WAIT_BITSET on the
//     word, with the absolute timeout on the caller's clock: the kernel's own
//     wait, woken by any wake; a signal ends it as futex_waitv's -ERESTARTSYS
//     does (interrupted).
//   - Several words: the registry is mapped into the process once (injected
//     openat + mmap + close); the tracer claims a slot in its own mapping,
//     writes the words' keys (those of shared file mappings from
//     /proc/PID/maps), publishes it WAITING, checks the values and makes the
//     thread sleep on the slot's state word (an injected FUTEX_WAIT_BITSET), where
//     the library's FUTEX_WAKE finds and wakes it.
type waitvEmu struct {
	path   string
	reg    *waitvRegistry
	failed bool
	maps   map[int]uint64 // pid -> guest address of the registry mapping
}

// futex_waitv's limits and flags (include/uapi/linux/futex.h).
const (
	futex2SizeU32    = 0x02
	futex2SizeMask   = 0x03
	futex2NUMA       = 0x04
	futex2Private    = 128
	futexWaitBitset  = 9
	futexPrivateFlag = 128
	futexClockRT     = 256
	fwPrivateKind    = 1 << 63
	saRestart        = 0x10000000
)

// Registry slot states (waitv.c).
const (
	fwFree    = 0
	fwClaimed = 1
	fwWaiting = 2
	fwWoken   = 3 // + index
)

// fullFence is a full memory barrier (MFENCE, DMB ISH): a waiter's
// publication is ordered before its reading of the words, as the library's
// __atomic_thread_fence(__ATOMIC_SEQ_CST).
func fullFence()

func newWaitvEmu(registry string) *waitvEmu {
	return &waitvEmu{path: registry, maps: map[int]uint64{}}
}

func (w *waitvEmu) handler() tracer.Handler {
	return tracer.Handler{Enter: w.enter, Events: w.events}
}

// events keeps the registry's guest addresses: a fork inherits the
// mapping, an exec or exit drops it.
func (w *waitvEmu) events(ev *tracer.Event) {
	switch ev.Kind {
	case tracer.EventFork:
		if a, ok := w.maps[ev.ParentPid]; ok && ev.Pid != ev.ParentPid {
			w.maps[ev.Pid] = a
		}
	case tracer.EventExec, tracer.EventProcessGone:
		delete(w.maps, ev.Pid)
	}
}

// wakesOf says which code of a program with PT_INTERP interp ("" for a
// static one) the loader must trace the FUTEX_WAKE calls of: a process
// without the fast path library (which only glibc's ld.so preloads) wakes
// with raw calls the registry's waiters would not see. None when the
// session does not emulate futex_waitv (w nil).
func (w *waitvEmu) wakesOf(interp string) uint64 {
	switch base := path.Base(interp); {
	case w == nil:
		return 0
	case interp == "":
		return loader.FlagWakesProgram
	case strings.HasPrefix(base, "ld-linux"):
		return 0 // glibc: the library answers
	default:
		return loader.FlagWakesProgram | loader.FlagWakesInterp // musl: libc is the interpreter
	}
}

// wakeHandler handles the FUTEX_WAKE calls the loader's filter stops in a
// library-less process (the main filter does not trace futex): after the
// kernel's own wake, registered waiters of that word are woken up to the
// count, as the library's FUTEX_WAKE does (waitv.c's fw_wake).
func (w *waitvEmu) wakeHandler() tracer.Handler {
	return tracer.Handler{
		Untraced: true,
		Enter: func(c *tracer.Call) {
			if c.Arg(1)&0x7f != 1 { // FUTEX_WAKE (ptrace-only mode shows every futex call)
				c.NoExit()
			}
		},
		Exit: func(c *tracer.Call) {
			k, n := c.Ret(), int64(int32(c.Arg(2)))
			if k < 0 || k >= n {
				return
			}
			reg := w.registry()
			if reg == nil {
				return
			}
			key := waitvKeys(c.Pid(), []waitvWaiter{{uaddr: c.Arg(0), private: c.Arg(1)&futexPrivateFlag != 0}})[0]
			if k2 := reg.wake(key, k, n); k2 != k {
				c.Return(k2)
			}
		},
	}
}

// wake moves up to n-k WAITING slots with key to WOKEN+index and wakes
// them; it returns k plus their number.
func (r *waitvRegistry) wake(key waitvKey, k, n int64) int64 {
	bit := key.bloom()
	fullFence()
	hw := int(atomic.LoadUint32(r.hiwater()))
	for i := 0; i < hw && i < fwSlots && k < n; i++ {
		v := atomic.LoadUint32(r.state(i))
		if v&0xff != fwWaiting || r.bloom(i)&bit == 0 {
			continue
		}
		j := r.keyIndex(i, key)
		if j < 0 || atomic.LoadUint32(r.state(i)) != v {
			continue // no match, or the keys were another waiter's
		}
		if pid, tid := r.slotOwner(i); unix.Tgkill(int(pid), int(tid), 0) == unix.ESRCH {
			atomic.CompareAndSwapUint32(r.state(i), v, v&^0xff|fwFree)
			continue
		}
		if atomic.CompareAndSwapUint32(r.state(i), v, v&^0xff|uint32(fwWoken+j)) {
			r.wakeState(i)
			k++
		}
	}
	return k
}

// waitvWaiter is one struct futex_waitv.
type waitvWaiter struct {
	val, uaddr uint64
	private    bool
}

// waitvKey identifies a futex word session-wide (waitv.c's struct fw_key).
type waitvKey struct{ a, b, c uint64 }

func (k waitvKey) bloom() uint64 {
	h := k.a*0x9e3779b97f4a7c15 ^ k.b*0xc2b2ae3d27d4eb4f ^ k.c*0x165667b19e3779f9
	return 1 << (h >> 58)
}

// userLimit bounds the addresses the kernel's access_ok accepts (the
// largest user address space of both architectures).
const userLimit = 1 << 48

func (w *waitvEmu) enter(c *tracer.Call) {
	waiters, n, flags := c.Arg(0), uint32(c.Arg(1)), uint32(c.Arg(2))
	tsAddr, clk := c.Arg(3), int32(c.Arg(4))
	if flags != 0 || n == 0 || n > fwMaxWaiters || waiters == 0 {
		c.Fail(unix.EINVAL)
		return
	}
	rt := false
	if tsAddr != 0 {
		if clk != unix.CLOCK_REALTIME && clk != unix.CLOCK_MONOTONIC {
			c.Fail(unix.EINVAL)
			return
		}
		var b [16]byte
		if c.ReadMem(tsAddr, b[:]) != nil {
			c.Fail(unix.EFAULT)
			return
		}
		sec, nsec := int64(binary.LittleEndian.Uint64(b[:])), int64(binary.LittleEndian.Uint64(b[8:]))
		if sec < 0 || nsec < 0 || nsec >= 1e9 {
			c.Fail(unix.EINVAL)
			return
		}
		rt = clk == unix.CLOCK_REALTIME
	}
	ws := make([]waitvWaiter, n)
	for i := range ws {
		var b [24]byte
		if c.ReadMem(waiters+24*uint64(i), b[:]) != nil {
			c.Fail(unix.EFAULT)
			return
		}
		f, reserved := binary.LittleEndian.Uint32(b[16:]), binary.LittleEndian.Uint32(b[20:])
		val := binary.LittleEndian.Uint64(b[:])
		if f&^uint32(futex2SizeMask|futex2NUMA|futex2Private) != 0 || reserved != 0 ||
			f&futex2SizeMask != futex2SizeU32 || f&futex2NUMA != 0 || val>>32 != 0 {
			c.Fail(unix.EINVAL)
			return
		}
		ws[i] = waitvWaiter{val: val, uaddr: binary.LittleEndian.Uint64(b[8:]), private: f&futex2Private != 0}
	}
	// get_futex_key of every word: alignment, the address range, and for
	// a shared word its page.
	for _, x := range ws {
		if x.uaddr%4 != 0 {
			c.Fail(unix.EINVAL)
			return
		}
		var b [4]byte
		if x.uaddr+4 > userLimit || !x.private && c.ReadMem(x.uaddr, b[:]) != nil {
			c.Fail(unix.EFAULT)
			return
		}
	}
	futexNr, _ := nativeNr("futex")
	if n == 1 {
		op := uint64(futexWaitBitset)
		if ws[0].private {
			op |= futexPrivateFlag
		}
		if rt {
			op |= futexClockRT
		}
		// Injected rather than restarted: a timed FUTEX_WAIT_BITSET that a
		// signal interrupts is EINTR after any handler (ERESTART_RESTARTBLOCK),
		// where futex_waitv (ERESTARTSYS) restarts after an SA_RESTART one.
		waitvNr, _ := nativeNr("futex_waitv")
		c.Run(futexNr, [6]uint64{ws[0].uaddr, op, ws[0].val, tsAddr, 0, 0xffffffff}, func(c *tracer.Call, ret int64) {
			if ret == -int64(unix.EINTR) || ret <= -512 && ret >= -516 {
				w.interrupted(c, waitvNr)
				return
			}
			c.Return(ret) // 0 (index 0), EAGAIN, ETIMEDOUT
		})
		return
	}
	reg := w.registry()
	if reg == nil {
		c.Fail(unix.ENOMEM)
		return
	}
	if _, ok := w.maps[c.Pid()]; ok {
		w.register(c, reg, ws, tsAddr, rt)
		return
	}
	// Map the registry into the process first.
	mapFileInto(c, w.path, unix.O_RDWR|unix.O_CLOEXEC, 0, fastpath.RegistrySize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED,
		func(c *tracer.Call, openErr, addr int64) {
			if openErr < 0 || addr < 0 && addr > -4096 {
				c.Fail(unix.ENOMEM)
				return
			}
			w.maps[c.Pid()] = uint64(addr)
			w.register(c, reg, ws, tsAddr, rt)
		})
}

// registry maps the registry on first use.
func (w *waitvEmu) registry() *waitvRegistry {
	if w.reg == nil && !w.failed {
		r, err := mapWaitvRegistry(w.path)
		if err != nil {
			w.failed = true
			return nil
		}
		w.reg = r
	}
	return w.reg
}

// register publishes the caller as a waiter on ws and puts it to sleep.
func (w *waitvEmu) register(c *tracer.Call, reg *waitvRegistry, ws []waitvWaiter, tsAddr uint64, rt bool) {
	keys := waitvKeys(c.Pid(), ws)
	slot := reg.claim()
	if slot < 0 {
		c.Fail(unix.ENOMEM) // as the library when every slot is taken
		return
	}
	reg.setSlot(slot, uint32(c.Pid()), uint32(c.Tid()), keys)
	var bloom uint64
	for _, k := range keys {
		bloom |= k.bloom()
	}
	reg.setBloom(slot, bloom)
	waiting := atomic.LoadUint32(reg.state(slot))&^0xff | fwWaiting
	atomic.StoreUint32(reg.state(slot), waiting)
	fullFence()
	for _, x := range ws {
		var b [4]byte
		if c.ReadMem(x.uaddr, b[:]) != nil {
			c.Return(reg.leave(slot, waiting, -int64(unix.EFAULT)))
			return
		}
		if uint64(binary.LittleEndian.Uint32(b[:])) != x.val {
			c.Return(reg.leave(slot, waiting, -int64(unix.EAGAIN)))
			return
		}
	}
	w.sleep(c, reg, slot, waiting, tsAddr, rt)
}

// sleep makes the thread wait on its slot's state word until a waker sets
// WOKEN+index, the timeout passes or a signal comes.
func (w *waitvEmu) sleep(c *tracer.Call, reg *waitvRegistry, slot int, waiting uint32, tsAddr uint64, rt bool) {
	futexNr, _ := nativeNr("futex")
	waitvNr, _ := nativeNr("futex_waitv")
	stateAddr := w.maps[c.Pid()] + fwStatesOff + 4*uint64(slot)
	op := uint64(futexWaitBitset)
	if rt {
		op |= futexClockRT
	}
	c.Run(futexNr, [6]uint64{stateAddr, op, uint64(waiting), tsAddr, 0, 0xffffffff}, func(c *tracer.Call, ret int64) {
		if v := atomic.LoadUint32(reg.state(slot)); v&0xff >= fwWoken {
			atomic.StoreUint32(reg.state(slot), v&^0xff|fwFree)
			c.Return(int64(v&0xff - fwWoken))
			return
		}
		switch {
		case ret == -int64(unix.ETIMEDOUT):
			c.Return(reg.leave(slot, waiting, ret))
		case ret == -int64(unix.EINTR) || ret <= -512 && ret >= -516:
			if r := reg.leave(slot, waiting, -1); r >= 0 {
				c.Return(r)
				return
			}
			w.interrupted(c, waitvNr)
		case ret == 0 || ret == -int64(unix.EAGAIN):
			// Spurious (a late wake of the slot's previous owner), or the
			// guest's word is not the registry any more (unmapped or
			// replaced): then the call starts over and maps it again.
			var b [4]byte
			if c.ReadMem(stateAddr, b[:]) == nil && binary.LittleEndian.Uint32(b[:]) == atomic.LoadUint32(reg.state(slot)) {
				w.sleep(c, reg, slot, waiting, tsAddr, rt)
				return
			}
			fallthrough
		default:
			if r := reg.leave(slot, waiting, -1); r >= 0 {
				c.Return(r)
				return
			}
			delete(w.maps, c.Pid())
			c.Reissue(waitvNr)
		}
	})
}

// interrupted ends a wait a signal interrupted as the kernel's futex_waitv
// (-ERESTARTSYS) does: EINTR when the signal runs a handler without
// SA_RESTART, else the call is made again (after the handler). The signal
// shows among the held ones after one more injected call; its disposition
// is the thread's own rt_sigaction.
func (w *waitvEmu) interrupted(c *tracer.Call, waitvNr int) {
	getpid, _ := nativeNr("getpid")
	sigaction, _ := nativeNr("rt_sigaction")
	c.Run(getpid, [6]uint64{}, func(c *tracer.Call, _ int64) {
		held := c.Held()
		if len(held) == 0 {
			c.Reissue(waitvNr)
			return
		}
		buf, err := c.Push(make([]byte, 64))
		if err != nil {
			c.Reissue(waitvNr)
			return
		}
		c.Run(sigaction, [6]uint64{uint64(held[0]), 0, buf, 8}, func(c *tracer.Call, ret int64) {
			var b [16]byte
			if ret != 0 || c.ReadMem(buf, b[:]) != nil {
				c.Reissue(waitvNr)
				return
			}
			handler, flags := binary.LittleEndian.Uint64(b[:]), binary.LittleEndian.Uint64(b[8:])
			if handler > 1 /* SIG_DFL, SIG_IGN */ && flags&saRestart == 0 {
				c.Fail(unix.EINTR)
				return
			}
			c.Reissue(waitvNr)
		})
	})
}

// claim takes a free slot, reclaiming those of dead waiters if needed
// (waitv.c's fw_claim); -1 when every slot is taken.
func (r *waitvRegistry) claim() int {
	for pass := 0; pass < 2; pass++ {
		for i := 0; i < fwSlots; i++ {
			v := atomic.LoadUint32(r.state(i))
			if v&0xff == fwFree && atomic.CompareAndSwapUint32(r.state(i), v, (v&^0xff)+0x100|fwClaimed) {
				for {
					hw := atomic.LoadUint32(r.hiwater())
					if hw >= uint32(i+1) || atomic.CompareAndSwapUint32(r.hiwater(), hw, uint32(i+1)) {
						break
					}
				}
				return i
			}
		}
		for i := 0; i < fwSlots; i++ {
			v := atomic.LoadUint32(r.state(i))
			if v&0xff == fwWaiting {
				pid, tid := r.slotOwner(i)
				if unix.Tgkill(int(pid), int(tid), 0) == unix.ESRCH {
					atomic.CompareAndSwapUint32(r.state(i), v, v&^0xff|fwFree)
				}
			}
		}
	}
	return -1
}

// leave frees a slot whose wait ends without a wake seen (returning err),
// or returns the index a waker set meanwhile (waitv.c's fw_leave).
func (r *waitvRegistry) leave(slot int, waiting uint32, err int64) int64 {
	if atomic.CompareAndSwapUint32(r.state(slot), waiting, waiting&^0xff|fwFree) {
		return err
	}
	v := atomic.LoadUint32(r.state(slot))
	atomic.StoreUint32(r.state(slot), waiting&^0xff|fwFree)
	return int64(v&0xff) - fwWoken
}

// waitvKeys are the words' keys: (dev, ino, offset) of the shared file
// mapping a shared word is in, as the library records them from fstat
// and mmap, else (FW_PRIVATE_KIND | pid, address, 0).
func waitvKeys(pid int, ws []waitvWaiter) []waitvKey {
	keys := make([]waitvKey, len(ws))
	var maps []sharedMapping
	loaded := false
	for i, x := range ws {
		keys[i] = waitvKey{fwPrivateKind | uint64(uint32(pid)), x.uaddr, 0}
		if x.private {
			continue
		}
		if !loaded {
			maps, loaded = sharedMappings(pid), true
		}
		for _, m := range maps {
			if x.uaddr >= m.start && x.uaddr < m.end {
				keys[i] = waitvKey{m.dev, m.ino, m.off + x.uaddr - m.start}
				break
			}
		}
	}
	return keys
}

// sharedMapping is a MAP_SHARED mapping of a file, from /proc/PID/maps.
type sharedMapping struct{ start, end, off, dev, ino uint64 }

// sharedMappings lists pid's shared mappings of files: those the library
// keys by file (a regular file's, a memfd's), not shared anonymous memory
// (/dev/zero) or SysV segments, which it keys by address.
func sharedMappings(pid int) []sharedMapping {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/maps")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []sharedMapping
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 6 || len(fs[1]) < 4 || fs[1][3] != 's' || fs[4] == "0" {
			continue
		}
		if p := strings.Join(fs[5:], " "); strings.HasPrefix(p, "/dev/zero") || strings.HasPrefix(p, "/SYSV") {
			continue
		}
		lo, hi, ok := strings.Cut(fs[0], "-")
		maj, min, ok2 := strings.Cut(fs[3], ":")
		if !ok || !ok2 {
			continue
		}
		var m sharedMapping
		var e [6]error
		m.start, e[0] = strconv.ParseUint(lo, 16, 64)
		m.end, e[1] = strconv.ParseUint(hi, 16, 64)
		m.off, e[2] = strconv.ParseUint(fs[2], 16, 64)
		ma, e3 := strconv.ParseUint(maj, 16, 32)
		mi, e4 := strconv.ParseUint(min, 16, 32)
		e[3], e[4] = e3, e4
		m.ino, e[5] = strconv.ParseUint(fs[4], 10, 64)
		if e != [6]error{} {
			continue
		}
		m.dev = unix.Mkdev(uint32(ma), uint32(mi))
		out = append(out, m)
	}
	return out
}
