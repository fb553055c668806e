package emul

import (
	"os"
	"sort"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/tracer"
)

// closeRangeState is one close_range call in progress in one thread.
type closeRangeState struct {
	first, last, flags uint64 // the call's arguments as the guest gave them
	pc                 uint64 // where the call came from (continuations come back there)
	next               uint64 // the lowest fd not handled yet
	unshared           bool   // CLOSE_RANGE_UNSHARE done
	inUnshare          bool   // the step running now is the unshare
	done               bool   // the step running now is the last one
}

// closeRangeHandler emulates close_range(first, last, flags) as a chain
// of allowed calls the tracee makes itself: unshare(CLONE_FILES) for
// CLOSE_RANGE_UNSHARE, then, for each open descriptor in the range (read
// from /proc/TID/fd), close(fd) or, with CLOSE_RANGE_CLOEXEC,
// fcntl(fd, F_SETFD, FD_CLOEXEC). Each step stops at its exit, where the
// tracer winds the program counter back onto the syscall instruction with
// close_range's number and the next descriptor, so the call comes back to
// the tracer until nothing is left; then the guest gets 0 (or the error of
// unshare) with its argument registers as it passed them. Descriptors
// opened by another thread during the chain may or may not be closed, as
// with the kernel's own walk of the table.
func closeRangeHandler() tracer.Handler {
	states := map[int]*closeRangeState{}
	return tracer.Handler{
		Enter: func(c *tracer.Call) {
			st := states[c.Tid()]
			if st != nil && (c.Regs.PC() != st.pc || c.Arg(1) != st.last || c.Arg(2) != st.flags) {
				st = nil // left over from a thread that died mid-chain: a new call
			}
			if st == nil {
				flags := uint64(uint32(c.Arg(2)))
				if flags&^(closeRangeUnshare|closeRangeCloexec) != 0 || uint32(c.Arg(0)) > uint32(c.Arg(1)) {
					c.Fail(unix.EINVAL)
					return
				}
				st = &closeRangeState{first: c.Arg(0), last: c.Arg(1), flags: c.Arg(2), next: uint64(uint32(c.Arg(0))), pc: c.Regs.PC()}
				states[c.Tid()] = st
			} else {
				st.next = uint64(uint32(c.Arg(0)))
			}
			st.inUnshare = false
			if st.flags&closeRangeUnshare != 0 && !st.unshared {
				st.unshared, st.inUnshare = true, true
				nr, _ := nativeNr("unshare")
				c.SetNr(nr)
				c.SetArg(0, unix.CLONE_FILES)
				return
			}
			fd, ok := nextFd(c.Tid(), st.next, uint64(uint32(st.last)))
			if !ok {
				delete(states, c.Tid())
				restoreArgs(c, st)
				c.Return(0)
				return
			}
			st.next = fd + 1
			st.done = fd >= uint64(uint32(st.last))
			if st.flags&closeRangeCloexec != 0 {
				nr, _ := nativeNr("fcntl")
				c.SetNr(nr)
				c.SetArg(0, fd)
				c.SetArg(1, unix.F_SETFD)
				c.SetArg(2, unix.FD_CLOEXEC)
				return
			}
			nr, _ := nativeNr("close")
			c.SetNr(nr)
			c.SetArg(0, fd)
		},
		Exit: func(c *tracer.Call) {
			st := states[c.Tid()]
			if st != nil && (c.Regs.PC() != st.pc || c.Arg(1) != st.last || c.Arg(2) != st.flags) {
				st = nil // left over from a thread that died mid-chain: a new call
			}
			if st == nil {
				return
			}
			ret := c.Ret()
			unshareFailed := ret < 0 && st.inUnshare
			if st.done || unshareFailed {
				delete(states, c.Tid())
				restoreArgs(c, st)
				if unshareFailed {
					c.Return(ret)
				} else {
					c.Return(0)
				}
				return
			}
			// Come back as close_range(next, last, flags).
			nr, _ := nativeNr("close_range")
			restoreArgs(c, st)
			c.SetArg(0, st.next)
			c.RestartAtExitAs(nr)
		},
	}
}

// restoreArgs puts the guest's close_range arguments back in their
// registers (the ABI preserves them across a syscall).
func restoreArgs(c *tracer.Call, st *closeRangeState) {
	c.KeepArgs()
	c.SetArg(0, st.first)
	c.SetArg(1, st.last)
	c.SetArg(2, st.flags)
}

// nextFd returns the lowest descriptor in [from, to] open in thread tid.
func nextFd(tid int, from, to uint64) (uint64, bool) {
	if from > to {
		return 0, false
	}
	ents, err := os.ReadDir("/proc/" + strconv.Itoa(tid) + "/fd")
	if err != nil {
		return 0, false
	}
	var fds []uint64
	for _, e := range ents {
		if n, err := strconv.ParseUint(e.Name(), 10, 32); err == nil && n >= from && n <= to {
			fds = append(fds, n)
		}
	}
	if len(fds) == 0 {
		return 0, false
	}
	sort.Slice(fds, func(i, j int) bool { return fds[i] < fds[j] })
	return fds[0], true
}
