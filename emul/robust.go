package emul

import (
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/tracer"
)

// robustLists emulates set_robust_list/get_robust_list (Android blocks
// them; Steam's steamclient.so reads its head back) and does what the
// kernel's exit_robust_list does when a thread exits: every robust futex
// the thread still owns gets FUTEX_OWNER_DIED and a waiter is woken, so a
// killed process cannot wedge the others.
type robustLists struct {
	heads map[int]uint64 // tid -> registered head
}

// robustListHeadSize is sizeof(struct robust_list_head) on 64-bit ABIs.
const robustListHeadSize = 24

// Futex word bits (include/uapi/linux/futex.h).
const (
	futexWaiters    = 0x80000000
	futexOwnerDied  = 0x40000000
	futexTIDMask    = 0x3fffffff
	robustListLimit = 2048
)

func addRobustList(t *tableBuilder) {
	r := &robustLists{heads: map[int]uint64{}}
	t.set("set_robust_list", tracer.Handler{Enter: r.set, Events: r.events, ExitingEvents: true})
	t.set("get_robust_list", tracer.Handler{Enter: r.get})
}

func (r *robustLists) set(c *tracer.Call) {
	if c.Arg(1) != robustListHeadSize {
		c.Fail(unix.EINVAL)
		return
	}
	r.heads[c.Tid()] = c.Arg(0)
	c.Return(0)
}

func (r *robustLists) get(c *tracer.Call) {
	pid := int(int32(c.Arg(0)))
	tid := c.Tid()
	if pid != 0 {
		if !c.Tracer().Traced(pid) {
			// Not ours: no head to report. The kernel would answer
			// for a task of the same user; we cannot read it.
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil || pid < 0 {
				c.Fail(unix.ESRCH)
			} else {
				c.Fail(unix.EPERM)
			}
			return
		}
		if pid != tid && !mayRead(tid, pid) {
			c.Fail(unix.EPERM)
			return
		}
		tid = pid
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], robustListHeadSize)
	if c.WriteMem(c.Arg(2), b[:]) != nil {
		c.Fail(unix.EFAULT)
		return
	}
	binary.LittleEndian.PutUint64(b[:], r.heads[tid])
	if c.WriteMem(c.Arg(1), b[:]) != nil {
		c.Fail(unix.EFAULT)
		return
	}
	c.Return(0)
}

func (r *robustLists) events(e *tracer.Event) {
	switch e.Kind {
	case tracer.EventExiting:
		if head := r.heads[e.Tid]; head != 0 {
			delete(r.heads, e.Tid)
			r.exitList(e, head)
		}
	case tracer.EventExec, tracer.EventThreadGone:
		delete(r.heads, e.Tid)
	}
}

// exitList is the kernel's exit_robust_list for the exiting thread e.Tid.
func (r *robustLists) exitList(e *tracer.Event, head uint64) {
	var h [robustListHeadSize]byte
	if e.ReadMem(head, h[:]) != nil {
		return
	}
	le := binary.LittleEndian
	entry, pi := le.Uint64(h[0:])&^1, le.Uint64(h[0:])&1 != 0
	offset := le.Uint64(h[8:])
	pending, pip := le.Uint64(h[16:])&^1, le.Uint64(h[16:])&1 != 0
	var woke []uint64
	for limit := robustListLimit; entry != head && limit > 0; limit-- {
		var nb [8]byte
		rc := e.ReadMem(entry, nb[:])
		next := le.Uint64(nb[:])
		if entry != pending {
			w, ok := r.death(e, entry+offset, pi, false)
			woke = append(woke, w...)
			if !ok {
				pending = 0 // the kernel stops at a bad entry
				break
			}
		}
		if rc != nil {
			pending = 0 // the kernel gives up on a bad list
			break
		}
		entry, pi = next&^1, next&1 != 0
	}
	if pending != 0 {
		w, _ := r.death(e, pending+offset, pip, true)
		woke = append(woke, w...)
	}
	if len(woke) > 0 {
		kickFutexWaiters(e.Tracer(), e.Tid, woke)
	}
}

// death is handle_futex_death: it returns the futex words to wake.
func (r *robustLists) death(e *tracer.Event, uaddr uint64, pi, pendingOp bool) ([]uint64, bool) {
	if uaddr%4 != 0 {
		return nil, false
	}
	var b [4]byte
	if e.ReadMem(uaddr, b[:]) != nil {
		return nil, false
	}
	uval := binary.LittleEndian.Uint32(b[:])
	owner := uval & futexTIDMask
	if pendingOp && !pi && owner == 0 {
		return []uint64{uaddr}, true
	}
	if int(owner) != e.Tid {
		return nil, true
	}
	binary.LittleEndian.PutUint32(b[:], uval&futexWaiters|futexOwnerDied)
	if e.WriteMem(uaddr, b[:]) != nil {
		return nil, false
	}
	if !pi && uval&futexWaiters != 0 {
		return []uint64{uaddr}, true
	}
	return nil, true
}

// kickFutexWaiters wakes the threads sleeping in futex on one of the words:
// the tracer cannot call futex on another process's memory, so it
// interrupts every traced thread blocked in futex(2) on an address with
// the same offset in its page (/proc/TID/syscall); the interrupted wait is
// restarted by the kernel and returns at once because the word changed (a
// thread waiting on another word just goes back to sleep).
func kickFutexWaiters(t *tracer.Tracer, dying int, words []uint64) {
	futex, _ := nativeNr("futex")
	t.Threads(func(tid, _ int) {
		if tid == dying {
			return
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/syscall", tid))
		if err != nil {
			return
		}
		f := strings.Fields(string(data))
		if len(f) < 2 {
			return
		}
		nr, err1 := strconv.Atoi(f[0])
		addr, err2 := strconv.ParseUint(strings.TrimPrefix(f[1], "0x"), 16, 64)
		if err1 != nil || err2 != nil || nr != futex {
			return
		}
		for _, w := range words {
			if addr&4095 == w&4095 {
				t.Interrupt(tid)
				return
			}
		}
	})
}

// ids returns the Uid and Gid lines of /proc/TID/status (real, effective,
// saved, filesystem).
func ids(tid int) (uid, gid []string) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", tid))
	if err != nil {
		return nil, nil
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "Uid:"); ok {
			uid = strings.Fields(v)
		} else if v, ok := strings.CutPrefix(line, "Gid:"); ok {
			gid = strings.Fields(v)
		}
	}
	return uid, gid
}

// mayRead approximates ptrace_may_access(PTRACE_MODE_READ_REALCREDS): root
// may, others only when the target's real, effective and saved ids all
// equal the caller's real ones.
func mayRead(caller, target int) bool {
	cu, cg := ids(caller)
	tu, tg := ids(target)
	if len(cu) < 3 || len(cg) < 3 || len(tu) < 3 || len(tg) < 3 {
		return true
	}
	if cu[1] == "0" {
		return true
	}
	for i := 0; i < 3; i++ {
		if tu[i] != cu[0] || tg[i] != cg[0] {
			return false
		}
	}
	return true
}
