package tracer

import (
	"encoding/binary"
	"syscall"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// This file: the seccomp stops of a guest's own filters for its emulated
// tracer (PTRACE_O_TRACESECCOMP: strace --seccomp-bpf; docs/ptrace.md).
//
// A guest filter stacks on droidroot's: the kernel runs every filter of
// the thread, newest first, and takes the strictest action, the first
// filter's with it. A call either filter answers with SECCOMP_RET_TRACE
// (and none with a stricter action) stops for the real tracer, droidroot,
// as a seccomp stop. droidroot keeps each filter a guest thread installs
// and runs them itself at such a stop: when theirs say RET_TRACE, the stop
// is the guest tracer's PTRACE_EVENT_SECCOMP (event message the filter's
// data), and droidroot does its own work on the call once that tracer
// resumes it, with the registers it left (as the kernel runs the call as
// the tracer left it: number -1 skips it). Without a tracer that asked for
// the event the kernel fails the call with ENOSYS, and so does droidroot.

// guestFilter is one seccomp filter a guest thread installed. canTrace:
// it may answer RET_TRACE (a return of the accumulator may), else its
// verdicts never make a stop of the guest's (sandboxes' filters, which
// trap or fail calls, cost no run at droidroot's seccomp stops).
type guestFilter struct {
	vm       *bpf.VM
	canTrace bool
}

// mayTrace reports whether one of filters fs may answer RET_TRACE.
func mayTrace(fs []*guestFilter) bool {
	for _, f := range fs {
		if f != nil && f.canTrace {
			return true
		}
	}
	return false
}

// prSetSeccompBit is the bit of PR_SET_SECCOMP (22) the filter tests to
// stop prctl (the fast path's is the same).
const prSetSeccompBit = 1 << 4

// seccomp's actions (the high 16 bits of a filter's answer).
const (
	seccompRetActionFull = 0xffff0000
	seccompRetTrace      = 0x7ff00000
	seccompRetData       = 0x0000ffff
)

// newGuestFilter decodes a classic BPF program (struct sock_filter[]).
func newGuestFilter(b []byte) *guestFilter {
	raw := make([]bpf.RawInstruction, len(b)/8)
	for i := range raw {
		raw[i] = bpf.RawInstruction{Op: binary.LittleEndian.Uint16(b[8*i:]), Jt: b[8*i+2], Jf: b[8*i+3], K: binary.LittleEndian.Uint32(b[8*i+4:])}
	}
	insns, ok := bpf.Disassemble(raw)
	if !ok {
		return nil // an instruction x/net/bpf does not know (the kernel accepted it)
	}
	vm, err := bpf.NewVM(insns)
	if err != nil {
		return nil
	}
	f := &guestFilter{vm: vm}
	for _, in := range insns {
		switch in := in.(type) {
		case bpf.RetA:
			f.canTrace = true
		case bpf.RetConstant:
			if in.Val&seccompRetActionFull == seccompRetTrace {
				f.canTrace = true
			}
		}
	}
	return f
}

// seccompData is struct seccomp_data for registers r, as x/net/bpf's VM
// loads it: each 32-bit word big-endian at its offset (the kernel's filters
// load native words).
func seccompData(r *Regs) []byte {
	var b [64]byte
	put64 := func(off int, v uint64) {
		binary.BigEndian.PutUint32(b[off:], uint32(v))
		binary.BigEndian.PutUint32(b[off+4:], uint32(v>>32))
	}
	binary.BigEndian.PutUint32(b[0:], uint32(int32(r.Nr())))
	binary.BigEndian.PutUint32(b[4:], ptAuditArch)
	put64(8, r.PC())
	for i := 0; i < 6; i++ {
		put64(16+8*i, r.Arg(i))
	}
	return b[:]
}

// guestVerdict runs filters fs (newest first) on the call of registers r as
// the kernel does: the strictest action wins, the newest filter's among
// equals. ok is false when no filter could run.
func guestVerdict(fs []*guestFilter, r *Regs) (ret uint32, ok bool) {
	data := seccompData(r)
	for _, f := range fs {
		if f == nil {
			continue
		}
		v, err := f.vm.Run(data)
		if err != nil {
			continue
		}
		cur := uint32(v)
		if !ok || int32(cur&seccompRetActionFull) < int32(ret&seccompRetActionFull) {
			ret, ok = cur, true
		}
	}
	return ret, ok
}

// ptFilterEnter is the entry of a guest's seccomp(SECCOMP_SET_MODE_FILTER,
// flags, prog) or prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, prog) (prog
// its argument progArg): the filter is kept for the exit, where it counts
// once the kernel installed it. droidroot's loader's own filters are not
// the guest's.
func (t *Tracer) ptFilterEnter(c *Call, progArg int) {
	th := c.th
	th.gfilterNew = nil
	if c.skipped {
		return
	}
	if t.InLoader(c.Entry.PC()) {
		return
	}
	var hdr [16]byte
	if c.ReadMem(c.Arg(progArg), hdr[:]) != nil {
		return
	}
	n := int(binary.LittleEndian.Uint16(hdr[:2]))
	if n == 0 || n > 4096 {
		return
	}
	prog := make([]byte, 8*n)
	if c.ReadMem(binary.LittleEndian.Uint64(hdr[8:]), prog) != nil {
		return
	}
	th.gfilterNew = newGuestFilter(prog)
}

// ptFilterExit installs the filter of a seccomp call that succeeded in the
// calling thread, or with SECCOMP_FILTER_FLAG_TSYNC in every thread of its
// process.
func (t *Tracer) ptFilterExit(c *Call, tsync bool) {
	th := c.th
	f := th.gfilterNew
	th.gfilterNew = nil
	if f == nil || c.Ret() != 0 {
		return
	}
	install := func(o *Thread) { o.gfilters = append([]*guestFilter{f}, o.gfilters...) }
	if !tsync || th.Proc == nil {
		install(th)
		return
	}
	for _, o := range t.threads {
		if o.Proc == th.Proc {
			install(o)
		}
	}
}

// ptGuestSeccomp handles a seccomp stop of thread th (registers r) that has
// filters of its own: when they answer RET_TRACE, the stop is its emulated
// tracer's PTRACE_EVENT_SECCOMP (droidroot's work on the call follows when
// the tracer resumes it), or, without a tracer that asked for it, the call
// fails with ENOSYS. It reports whether it took the stop.
func (t *Tracer) ptGuestSeccomp(th *Thread, r *Regs) bool {
	if t.InLoader(r.PC()) || th.pretranslatedMatch(r) {
		return false // the loader's calls, droidroot's restarts: its own
	}
	if n := th.gfilterRestart; n != 0 {
		th.gfilterRestart = 0
		if r.Nr() == n-1 {
			return false // a blocked call droidroot restarted as this one
		}
	}
	if !mayTrace(th.gfilters) {
		return false
	}
	ret, ok := guestVerdict(th.gfilters, r)
	if !ok || ret&seccompRetActionFull != seccompRetTrace {
		return false
	}
	pt := th.pt
	if pt == nil || pt.opts&unix.PTRACE_O_TRACESECCOMP == 0 {
		t.enterWith(th, &Handler{Enter: func(c *Call) { c.Fail(unix.ENOSYS) }})
		return true
	}
	data := uint64(ret & seccompRetData)
	si := &Siginfo{Signo: int32(unix.SIGTRAP), Code: int32(unix.SIGTRAP) | unix.PTRACE_EVENT_SECCOMP<<8}
	pt.execed, pt.rewrote = false, false
	t.ptHold(th, ptStop{kind: ptSeccomp, status: stoppedStatus(unix.SIGTRAP, unix.PTRACE_EVENT_SECCOMP), si: si, msg: data, hasMsg: true},
		func(req int, _ syscall.Signal) {
			// PTRACE_SYSCALL: the call's exit stop is the tracer's.
			pt.inSys = req == unix.PTRACE_SYSCALL
			c := &th.call
			if getRegs(th.Tid, &c.Regs) != nil {
				return
			}
			if c.Regs.Nr() < 0 {
				t.cont(th, 0) // skipped by the tracer
				return
			}
			t.enter(th)
		})
	return true
}

// ptGuestSigsys handles the SIGSYS stop s of a call the Android policy
// blocks, in thread th whose own filters run before droidroot answers the
// call (the kernel would run them, without the policy): when they answer
// RET_TRACE, its emulated tracer's PTRACE_EVENT_SECCOMP comes first, and
// droidroot answers the call (or the call the tracer made of it) once the
// tracer resumes it; without a tracer that asked for it, ENOSYS. A call
// droidroot restarts is its own: its seccomp stop is not reported again
// (pretranslatedMatch, gfilterRestart). It reports whether it took the stop.
func (t *Tracer) ptGuestSigsys(th *Thread, s sigsysInfo) bool {
	c := &th.call
	if t.InLoader(c.Regs.PC()) {
		return false
	}
	if !mayTrace(th.gfilters) {
		return false
	}
	r := c.Regs
	r.SetNr(s.nr) // the number the policy trapped (siginfo's; a copy)
	ret, ok := guestVerdict(th.gfilters, &r)
	if !ok || ret&seccompRetActionFull != seccompRetTrace {
		return false
	}
	pt := th.pt
	if pt == nil || pt.opts&unix.PTRACE_O_TRACESECCOMP == 0 {
		t.sigsysAnswer(th, s, nil) // ENOSYS
		return true
	}
	c.sigsys = false
	si := &Siginfo{Signo: int32(unix.SIGTRAP), Code: int32(unix.SIGTRAP) | unix.PTRACE_EVENT_SECCOMP<<8}
	pt.execed, pt.rewrote = false, false
	t.ptHold(th, ptStop{kind: ptSeccomp, status: stoppedStatus(unix.SIGTRAP, unix.PTRACE_EVENT_SECCOMP), si: si, msg: uint64(ret & seccompRetData), hasMsg: true},
		func(req int, _ syscall.Signal) {
			pt.inSys = req == unix.PTRACE_SYSCALL
			// An answered call makes no exit stop of its own: report one
			// once droidroot has answered (cont, ptSyscallExit).
			pt.sigsysExit = pt.inSys
			if getRegs(th.Tid, &c.Regs) != nil {
				return
			}
			c.t = t
			c.Entry = c.Regs
			c.reset(th)
			c.sigsys = true
			c.callAddr = s.callAddr
			nr := c.Regs.Nr()
			if nr < 0 {
				// Skipped by the tracer, with the result it left.
				c.Regs.answerAt(s.callAddr)
				c.sigsys = false
				if t.setRegs(th, &c.Regs) {
					t.cont(th, 0)
				}
				return
			}
			s.nr = nr
			t.sigsysAnswer(th, s, t.handlerOf(nr))
		})
	return true
}
