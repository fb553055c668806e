package tracer

import (
	"encoding/binary"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/seccomp"
)

// This file: ptrace between guest processes (docs/ptrace.md).
//
// droidroot is the real tracer of every guest thread, so a guest's own
// ptrace is emulated on top of it, as the kernel's is on top of its
// scheduler: an emulated tracer (P) names tracees (T) whose real stops
// droidroot is already handling. When T stops in a way P must see (a
// signal, a syscall entry or exit while P asked for PTRACE_SYSCALL, an event
// P's options ask for, a group stop), droidroot keeps T in its real stop,
// records the wait status the kernel would give P (ptStop), notifies P
// (SIGCHLD, and a parked wait of P re-runs) and resumes T only when P
// resumes it. P's requests on a T held that way are forwarded to the real
// kernel (registers, siginfo, event message, memory words) where the real
// stop answers them as the emulated one would, and synthesized where it
// does not (syscall info, the stops droidroot makes up).
//
// P's wait family is traced (wait4, waitid): a process that traces nobody
// costs one stop per wait and is otherwise untouched. A tracer's wait
// takes a pending emulated stop or exit first; otherwise it asks the kernel
// for its real children without blocking and, when it must block, parks in
// an interruptible ppoll (op.go) that any emulated stop or real child
// change of the process interrupts to run the wait again (requeue).

// ptTracee is the emulated-ptrace state of one traced thread.
type ptTracee struct {
	tracer    int // the tid of the emulated tracer
	tracerPid int // and its thread group
	seized    bool
	opts      int
	// syscalls: P resumed T with PTRACE_SYSCALL (its syscall stops are
	// reported); inSys: an entry stop was reported and its exit is to come.
	syscalls, inSys bool
	// interrupted: P asked for PTRACE_INTERRUPT.
	interrupted bool
	// initial: T's initial stop (an auto-attached child) is to be reported.
	initial bool
	// sigsysExit: the reported call was blocked by the Android policy:
	// its exit is reported once droidroot has answered it at its SIGSYS
	// stop (the exit stop shows the rolled-back call).
	sigsysExit bool
	// realExit: T's real ptrace options have PTRACE_O_TRACEEXIT (set at
	// a real stop, where the kernel takes requests).
	realExit bool
	// execed: the reported call exec'd (its exit registers are the new
	// program's, not the call's).
	execed bool
	// execPending: T exec'd and droidroot's loader runs; the exec stop is
	// reported at its droidroot_execstop call (ptHandover), where the
	// program starts; execFormer is the tid that exec'd (the event message).
	execPending bool
	execFormer  int
	// guest and written are T's registers at the seccomp stop of the
	// reported call, before and after droidroot's handler (rewrote: they
	// differ): the exit stop shows the guest's own arguments again.
	guest, written Regs
	rewrote        bool
	stop           *ptStop
	// curWS is the real status of T's current stop, heldWS that of the
	// stop it is held in.
	curWS, heldWS unix.WaitStatus
	// resume lets T's real stop go when P resumes it (req: CONT, SYSCALL,
	// LISTEN, SINGLESTEP; sig: the signal P passes).
	resume func(req int, sig syscall.Signal)
}

// ptKind is what an emulated stop is.
type ptKind uint8

const (
	ptSignal ptKind = iota
	ptSyscallEntry
	ptSyscallExit
	ptEvent
	ptGroup
	ptSeccomp // PTRACE_EVENT_SECCOMP of a guest's own filter (guestseccomp.go)
)

// ptStop is one emulated stop of a tracee.
type ptStop struct {
	kind     ptKind
	status   unix.WaitStatus
	reported bool
	// si is a made-up siginfo (a stop that is not the real stop's kind),
	// nil to ask the kernel; msg likewise the event message when hasMsg.
	si     *Siginfo
	msg    uint64
	hasMsg bool
}

// ptExit is the exit of an emulated tracee that its tracer must see from
// droidroot (a thread, or a process that is not its child: the kernel
// reports a child's exit to its parent itself).
type ptExit struct {
	tid, pid, tracerPid int
	clone               bool
	status              unix.WaitStatus
}

// ptState is the tracer-wide state of the emulation.
type ptState struct {
	// tracers counts the tracees of each emulated tracer process.
	tracers map[int]int
	exits   []ptExit
	// Yama (yama.go): yamaRead once ptrace_scope was read, yama when it
	// exists, scope its value; ptracers are the PR_SET_PTRACER exceptions
	// by tracee process. parentOf and capPtrace replace /proc in tests.
	yamaRead, yama bool
	scope          int
	ptracers       map[int]ptracer
	parentOf       func(pid int) int
	capPtrace      func(tid int) bool
	// gen counts, per process, the changes its waits must look at again
	// (ptRequeueWaiters): a wait that asked the kernel while one came does
	// not park on that answer.
	gen map[int]uint64
}

// Wait statuses (as wait4 reports them).
func stoppedStatus(sig syscall.Signal, event int) unix.WaitStatus {
	return unix.WaitStatus(0x7f | int(sig)<<8 | event<<16)
}

// ptraceOptionsMask are the options PTRACE_SETOPTIONS accepts.
const ptraceOptionsMask = unix.PTRACE_O_TRACESYSGOOD | unix.PTRACE_O_TRACEFORK | unix.PTRACE_O_TRACEVFORK |
	unix.PTRACE_O_TRACECLONE | unix.PTRACE_O_TRACEEXEC | unix.PTRACE_O_TRACEVFORKDONE | unix.PTRACE_O_TRACEEXIT |
	unix.PTRACE_O_TRACESECCOMP | unix.PTRACE_O_EXITKILL | unix.PTRACE_O_SUSPEND_SECCOMP

// GuestPtrace returns the handlers of the guest ptrace emulation: ptrace
// itself and the wait family (docs/ptrace.md).
func GuestPtrace() Table {
	return Table{
		"ptrace": {Enter: func(c *Call) { c.t.ptraceEnter(c) }},
		"wait4":  {Enter: func(c *Call) { c.t.ptWaitEnter(c, false) }},
		"waitid": {Enter: func(c *Call) { c.t.ptWaitEnter(c, true) }},
		// The loader's call is taken at its stop (Tracer.enter): from
		// anywhere else it is no call.
		"droidroot_execstop": {Enter: func(c *Call) { c.Fail(unix.ENOSYS) }},
		// PR_SET_PTRACER under Yama (yama.go), PR_SET_SECCOMP's filters
		// (guestseccomp.go); the filter stops no other common option.
		"prctl": {
			Enter: func(c *Call) {
				if c.Arg(0) == unix.PR_SET_SECCOMP && c.Arg(1) == unix.SECCOMP_MODE_FILTER {
					c.t.ptFilterEnter(c, 2)
					return
				}
				c.t.ptPrctl(c)
			},
			Exit:    func(c *Call) { c.t.ptFilterExit(c, false) },
			TraceIf: &ArgMask{Arg: 0, Mask: prSetPtracerBit | prSetSeccompBit},
		},
		// The guest's own filters, for PTRACE_O_TRACESECCOMP.
		"seccomp": {
			Enter: func(c *Call) {
				if c.Arg(0) == unix.SECCOMP_SET_MODE_FILTER {
					c.t.ptFilterEnter(c, 2)
				}
			},
			Exit: func(c *Call) { c.t.ptFilterExit(c, c.Entry.Arg(1)&unix.SECCOMP_FILTER_FLAG_TSYNC != 0) },
		},
	}
}

// GuestTraced reports whether the calling thread has an emulated tracer
// (an emulation then keeps in-process shortcuts off: the fast path).
func (c *Call) GuestTraced() bool { return c.th.pt != nil }

// GuestTraced reports whether traced thread tid has an emulated tracer.
// Call it on the tracer's thread.
func (t *Tracer) GuestTraced(tid int) bool {
	th := t.threads[tid]
	return th != nil && th.pt != nil
}

// GuestTracerOf returns the thread id of the emulated tracer of traced
// thread tid (a guest's ptrace of it), or 0: the TracerPid a chroot's
// /proc/TID/status shows, where the kernel's shows droidroot. Call it on
// the tracer's thread.
func (t *Tracer) GuestTracerOf(tid int) int {
	t.onTracerThread("GuestTracerOf")
	if th := t.threads[tid]; th != nil && th.pt != nil {
		return th.pt.tracer
	}
	return 0
}

// Tracing reports whether the calling thread's process traces anyone
// (a guest's ptrace) or has emulated exits to see: its waits must then be
// the wait handler's (an emulation keeps in-process waits off: the fast
// path's, EventGuestTracer).
func (c *Call) Tracing() bool { return c.th.Proc != nil && c.t.ptTracing(c.th.Proc.Pid) }

// ptTracing reports whether process pid traces anyone or has exits to see.
func (t *Tracer) ptTracing(pid int) bool {
	if t.pt.tracers[pid] > 0 {
		return true
	}
	for _, e := range t.pt.exits {
		if e.tracerPid == pid {
			return true
		}
	}
	return false
}

// ptAttach makes th a tracee of tracer (a thread of process tracerPid).
func (t *Tracer) ptAttach(th *Thread, tracer, tracerPid int, seized bool, opts int) {
	th.pt = &ptTracee{tracer: tracer, tracerPid: tracerPid, seized: seized}
	if t.pt.tracers == nil {
		t.pt.tracers = map[int]int{}
	}
	if t.pt.tracers[tracerPid] == 0 {
		// The process becomes a tracer: a wait it is blocked in went to
		// the kernel untouched, and would never see an emulated stop. It
		// is interrupted, and restarts through the wait handler.
		for _, w := range t.threads {
			if w.waitPassed && w.Proc != nil && w.Proc.Pid == tracerPid {
				w.waitPassed = false
				ptrace(unix.PTRACE_INTERRUPT, w.Tid, 0, 0)
			}
		}
		// Before any emulated stop of the new tracee can be pending: the
		// process's waits made in-process end (the fast path's).
		if len(t.hooks) > 0 {
			t.emit(Event{Kind: EventGuestTracer, Tid: tracer, Pid: tracerPid})
		}
	}
	t.pt.tracers[tracerPid]++
	t.ptSetOptions(th, opts)
	if len(t.hooks) > 0 && th.Proc != nil {
		t.emit(Event{Kind: EventGuestTraced, Tid: th.Tid, Pid: th.Proc.Pid})
	}
}

// ptSetOptions sets th's emulated options; PTRACE_O_TRACEEXIT needs the
// real exit stop.
func (t *Tracer) ptSetOptions(th *Thread, opts int) {
	th.pt.opts = opts
	t.ptRealOptions(th)
}

// ptRealOptions gives th the real PTRACE_O_TRACEEXIT its emulated options
// need; a thread that is not in a real stop gets it at its next one.
func (t *Tracer) ptRealOptions(th *Thread) {
	pt := th.pt
	if pt.opts&unix.PTRACE_O_TRACEEXIT == 0 || pt.realExit {
		return
	}
	if t.exitStops || ptrace(unix.PTRACE_SETOPTIONS, th.Tid, 0, uintptr(t.options()|unix.PTRACE_O_TRACEEXIT)) == nil {
		pt.realExit = true
	}
}

// ptForget ends th's emulated tracing (detach, or a gone tracer).
func (t *Tracer) ptForget(th *Thread) {
	if th.pt == nil {
		return
	}
	if n := t.pt.tracers[th.pt.tracerPid]; n > 1 {
		t.pt.tracers[th.pt.tracerPid] = n - 1
	} else {
		delete(t.pt.tracers, th.pt.tracerPid)
	}
	th.pt = nil
}

// ptDetach detaches th from its emulated tracer, letting a held stop go
// with signal sig.
func (t *Tracer) ptDetach(th *Thread, sig syscall.Signal) {
	pt := th.pt
	resume := pt.resume
	group := pt.stop != nil && pt.stop.kind == ptGroup
	t.ptForget(th)
	if resume != nil {
		if group {
			resume(unix.PTRACE_LISTEN, 0) // stays in its group stop, as after a real detach
			return
		}
		resume(unix.PTRACE_CONT, sig)
	}
}

// ptHold keeps th in its real stop as emulated stop st, until its tracer
// resumes it (resume then lets the real stop go), and tells the tracer.
func (t *Tracer) ptHold(th *Thread, st ptStop, resume func(req int, sig syscall.Signal)) {
	th.pt.stop = &st
	th.pt.resume = resume
	th.pt.heldWS = th.pt.curWS
	t.ptRealOptions(th)
	t.logf(3, "ptrace: %d stops for %d: %#x", th.Tid, th.pt.tracer, uint32(st.status))
	if t.flight != nil {
		t.fly(th.Tid, "PTSTOP", "status=%#x kind=%d tracer=%d", uint32(st.status), st.kind, th.pt.tracer)
	}
	t.ptNotify(th.pt.tracerPid)
}

// ptNotify tells emulated tracer process pid that a tracee changed state:
// its parked waits run again, and it gets SIGCHLD when it handles it (the
// kernel's do_notify_parent_cldstop; sent as SI_USER).
func (t *Tracer) ptNotify(pid int) {
	t.ptRequeueWaiters(pid)
	if handlerRuns(pid, unix.SIGCHLD) {
		unix.Kill(pid, unix.SIGCHLD)
	}
}

// ptRequeueWaiters makes the parked waits of process pid run again.
func (t *Tracer) ptRequeueWaiters(pid int) {
	if t.pt.gen == nil {
		t.pt.gen = map[int]uint64{}
	}
	t.pt.gen[pid]++
	for _, w := range t.threads {
		if w.ptWaiting && w.Proc != nil && w.Proc.Pid == pid {
			w.ptWaiting = false
			t.requeue(w)
		}
	}
}

// ptResumeReal lets th's held real stop go with P's request.
func (t *Tracer) ptResumeReal(th *Thread, req int, sig syscall.Signal) {
	switch req {
	case unix.PTRACE_LISTEN:
		t.resumeThread(th, unix.PTRACE_LISTEN, 0)
	case unix.PTRACE_SINGLESTEP:
		t.resumeThread(th, unix.PTRACE_SINGLESTEP, sig)
	default:
		t.contReal(th, sig)
	}
}

// ptSyscallEntry handles a real syscall-entry stop of an emulated tracee:
// reported when its tracer asked for syscall stops, unless it is one of
// droidroot's own (the loader's calls, a restart, an injected call).
func (t *Tracer) ptSyscallEntry(th *Thread) bool {
	pt := th.pt
	if !pt.syscalls || pt.inSys || pt.stop != nil || th.op != nil || th.fix != nil || th.skipEntryStop {
		return false
	}
	var r Regs
	if err := getRegs(th.Tid, &r); err != nil {
		return false
	}
	if t.InLoader(r.PC()) {
		return false
	}
	pt.execed, pt.rewrote = false, false
	t.ptHold(th, ptStop{kind: ptSyscallEntry, status: t.ptSysStatus(pt)}, func(req int, sig syscall.Signal) {
		pt.inSys = req == unix.PTRACE_SYSCALL
		if t.cfg.NoSeccomp {
			t.syscallStop(th) // droidroot's own entry work now
			return
		}
		t.ptResumeReal(th, req, sig)
	})
	return true
}

func (t *Tracer) ptSysStatus(pt *ptTracee) unix.WaitStatus {
	if pt.opts&unix.PTRACE_O_TRACESYSGOOD != 0 {
		return stoppedStatus(unix.SIGTRAP|0x80, 0)
	}
	return stoppedStatus(unix.SIGTRAP, 0)
}

// ptSyscallExit is called when droidroot is done with a stop of th and
// would resume it: at the exit stop of a reported call, the emulated exit
// stop is held instead, with the guest's own argument registers back.
func (t *Tracer) ptSyscallExit(th *Thread) bool {
	pt := th.pt
	if pt.execPending {
		return false // the loader runs: its calls are droidroot's, the exec's exit comes at the hand-over
	}
	if !pt.inSys || pt.stop != nil || th.sysOp != syscallInfoExit && !pt.sigsysExit || th.op != nil || th.fix != nil {
		return false
	}
	if pol := t.cfg.Android; pol != nil && th.sysOp == syscallInfoExit {
		var r Regs
		if getRegs(th.Tid, &r) == nil && r.Nr() >= 0 && pol.Blocks(seccomp.NativeABI(t.goarch), r.Nr()) {
			pt.sigsysExit = true // the SIGSYS stop comes next: report after droidroot's answer
			return false
		}
	}
	pt.inSys, pt.sigsysExit = false, false
	if pt.rewrote && !pt.execed {
		var r Regs
		if getRegs(th.Tid, &r) == nil {
			changed := false
			for i := firstKeptArg; i < 6; i++ {
				if g, w := pt.guest.Arg(i), pt.written.Arg(i); g != w && r.Arg(i) == w {
					r.SetArg(i, g)
					changed = true
				}
			}
			if changed {
				t.setRegs(th, &r)
			}
		}
	}
	t.ptHold(th, ptStop{kind: ptSyscallExit, status: t.ptSysStatus(pt)}, func(req int, sig syscall.Signal) {
		t.ptResumeReal(th, req, sig)
	})
	return true
}

// ptEnterHandled records, for a reported call, the registers before and
// after droidroot's entry handler.
func (t *Tracer) ptEnterHandled(th *Thread, guest, written *Regs) {
	if th.pt == nil || !th.pt.inSys {
		return
	}
	th.pt.guest, th.pt.written = *guest, *written
	th.pt.rewrote = true
}

// ptEventWanted reports whether options opts ask for ptrace event ev.
func ptEventWanted(opts, ev int) bool {
	switch ev {
	case unix.PTRACE_EVENT_FORK:
		return opts&unix.PTRACE_O_TRACEFORK != 0
	case unix.PTRACE_EVENT_VFORK:
		return opts&unix.PTRACE_O_TRACEVFORK != 0
	case unix.PTRACE_EVENT_CLONE:
		return opts&unix.PTRACE_O_TRACECLONE != 0
	case unix.PTRACE_EVENT_EXEC:
		return opts&unix.PTRACE_O_TRACEEXEC != 0
	case unix.PTRACE_EVENT_EXIT:
		return opts&unix.PTRACE_O_TRACEEXIT != 0
	}
	return false
}

// ptEvent holds th at the real stop of ptrace event ev when its emulated
// tracer asked for it; it reports whether it did.
func (t *Tracer) ptEvent(th *Thread, ev int) bool {
	if th.pt == nil || !ptEventWanted(th.pt.opts, ev) {
		return false
	}
	t.ptHold(th, ptStop{kind: ptEvent, status: stoppedStatus(unix.SIGTRAP, ev)}, func(req int, sig syscall.Signal) {
		if ev == unix.PTRACE_EVENT_EXIT {
			t.resumeThread(th, unix.PTRACE_CONT, 0)
			return
		}
		t.ptResumeReal(th, req, sig)
	})
	return true
}

// ptForked gives new task ct the emulated tracer of its parent th when the
// options follow event ev (auto-attach); its initial stop is then reported.
func (t *Tracer) ptForked(th, ct *Thread, ev int) {
	pt := th.pt
	if pt == nil || !ptEventWanted(pt.opts, ev) {
		return
	}
	t.ptAttach(ct, pt.tracer, pt.tracerPid, pt.seized, pt.opts)
	ct.pt.initial = true
}

// ptInitial holds new task th in its initial stop when its emulated tracer
// is to see it: PTRACE_EVENT_STOP for a seizing tracer, else SIGSTOP.
func (t *Tracer) ptInitial(th *Thread) bool {
	pt := th.pt
	if pt == nil || !pt.initial {
		return false
	}
	pt.initial = false
	st := ptStop{kind: ptSignal, status: stoppedStatus(unix.SIGSTOP, 0), si: &Siginfo{Signo: int32(unix.SIGSTOP)}}
	if pt.seized {
		st = ptStop{kind: ptGroup, status: stoppedStatus(unix.SIGTRAP, unix.PTRACE_EVENT_STOP),
			si: &Siginfo{Signo: int32(unix.SIGTRAP), Code: int32(unix.SIGTRAP | unix.PTRACE_EVENT_STOP<<8)}}
	}
	t.ptHold(th, st, func(req int, sig syscall.Signal) {
		if req == unix.PTRACE_LISTEN {
			t.resumeThread(th, unix.PTRACE_LISTEN, 0)
			return
		}
		t.contReal(th, 0)
	})
	return true
}

// ptEventStop handles a real PTRACE_EVENT_STOP (a group stop, or an
// interrupt) of an emulated tracee.
func (t *Tracer) ptEventStop(th *Thread, sig syscall.Signal) bool {
	pt := th.pt
	if t.ptInitial(th) {
		return true
	}
	switch sig {
	case unix.SIGSTOP, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU:
		status := stoppedStatus(sig, 0)
		if pt.seized {
			status = stoppedStatus(sig, unix.PTRACE_EVENT_STOP)
		}
		t.ptHold(th, ptStop{kind: ptGroup, status: status}, func(req int, s syscall.Signal) {
			if req == unix.PTRACE_LISTEN {
				t.resumeThread(th, unix.PTRACE_LISTEN, 0)
				return
			}
			t.contReal(th, s)
		})
		return true
	}
	if pt.interrupted {
		pt.interrupted = false
		t.ptHold(th, ptStop{kind: ptGroup, status: stoppedStatus(unix.SIGTRAP, unix.PTRACE_EVENT_STOP)}, func(req int, s syscall.Signal) {
			if req == unix.PTRACE_LISTEN {
				t.resumeThread(th, unix.PTRACE_LISTEN, 0)
				return
			}
			t.contReal(th, s)
		})
		return true
	}
	return false
}

// ptSignalStop holds a signal-delivery stop of an emulated tracee.
func (t *Tracer) ptSignalStop(th *Thread, sig syscall.Signal) {
	t.ptHold(th, ptStop{kind: ptSignal, status: stoppedStatus(sig, 0)}, func(req int, s syscall.Signal) {
		t.ptResumeReal(th, req, s)
	})
}

// ptExecEvent handles the exec of an emulated tracee (droidroot's loader
// has its script): the exec event when asked for, else the legacy SIGTRAP
// of a tracee that was not seized.
func (t *Tracer) ptExecEvent(th *Thread) bool {
	pt := th.pt
	if pt == nil {
		return false
	}
	pt.execed = true
	if t.ptEvent(th, unix.PTRACE_EVENT_EXEC) {
		return true
	}
	if !pt.seized {
		unix.Tgkill(th.Proc.Pid, th.Tid, unix.SIGTRAP)
	}
	return false
}

// ptExecDeferred reports whether the exec stop of th (at the real exec
// event, former the tid that exec'd) waits for the loader's hand-over: th
// has an emulated tracer and the loader is droidroot's own. The loader then
// gets FlagExecStop.
func (t *Tracer) ptExecDeferred(th *Thread, former int) bool {
	if th.pt == nil || t.scriptAreaSize == 0 {
		return false
	}
	th.pt.execPending, th.pt.execFormer = true, former
	t.logf(3, "ptrace: %d exec'd: its exec stop comes at the loader's hand-over", th.Tid)
	return true
}

// ptIsHandover reports whether th, stopped at a droidroot_execstop call
// with registers r, is droidroot's loader handing over to the program of
// an exec whose stop its emulated tracer waits for.
func (t *Tracer) ptIsHandover(th *Thread, r *Regs) bool {
	return th.pt != nil && th.pt.execPending && t.InLoader(r.PC())
}

// ptHandover is the loader's droidroot_execstop(entry, sp) call of th (r
// its registers at the seccomp stop, or at the SIGSYS stop of an Android
// policy that blocks the call: atSigsys): droidroot starts the program as
// the kernel's exec would (pc at entry, sp at argc, the other registers 0,
// the call skipped: number -1 at a seccomp stop; at a SIGSYS stop the
// kernel skipped it, and the SIGSYS is not delivered, every resume passes
// the emulated tracer's signal or none) and reports the exec stop there:
// the exec event, or the legacy SIGTRAP, then execve's exit stop when the
// tracer follows syscalls. At a seccomp stop that exit stop is the skipped
// call's real one; at a SIGSYS stop the kernel has made it already, in the
// loader, and it is made up here.
func (t *Tracer) ptHandover(th *Thread, r *Regs, atSigsys bool) {
	pt := th.pt
	pt.execPending = false
	t.logf(3, "ptrace: %d: the loader hands over (entry %#x, sp %#x)", th.Tid, r.Arg(0), r.Arg(1))
	r.startAt(r.Arg(0), r.Arg(1))
	if !t.setRegs(th, r) {
		return
	}
	th.Proc.auxvSP = r.SP()
	pt.execed = true
	// after runs once the exec stop is left (req: the tracer's resume).
	after := func(req int, sig syscall.Signal) {
		if atSigsys && pt.inSys && req == unix.PTRACE_SYSCALL {
			pt.inSys = false
			st := t.ptSysStatus(pt)
			si := &Siginfo{Signo: int32(unix.SIGTRAP), Code: int32(st>>8) & 0xff}
			t.ptHold(th, ptStop{kind: ptSyscallExit, status: st, si: si}, func(req int, sig syscall.Signal) {
				t.ptResumeReal(th, req, sig)
			})
			return
		}
		if atSigsys {
			pt.inSys = false
		}
		t.ptResumeReal(th, req, sig)
	}
	if ptEventWanted(pt.opts, unix.PTRACE_EVENT_EXEC) {
		// The event comes before execve returns: the result register
		// holds what the kernel put there at entry (x86_64: -ENOSYS),
		// and gets execve's 0 when the tracee goes on.
		if v := execEventRet; v != 0 {
			r.SetRet(v)
			t.setRegs(th, r)
		}
		si := &Siginfo{Signo: int32(unix.SIGTRAP), Code: int32(unix.SIGTRAP) | unix.PTRACE_EVENT_EXEC<<8}
		t.ptHold(th, ptStop{kind: ptEvent, status: stoppedStatus(unix.SIGTRAP, unix.PTRACE_EVENT_EXEC), si: si, msg: uint64(pt.execFormer), hasMsg: true}, func(req int, sig syscall.Signal) {
			var r Regs
			if getRegs(th.Tid, &r) == nil && r.Ret() != 0 {
				r.SetRet(0)
				t.setRegs(th, &r)
			}
			if req != unix.PTRACE_SYSCALL && !atSigsys {
				pt.inSys = false // no exit stop for execve: the tracer stopped following syscalls
			}
			after(req, sig)
		})
		return
	}
	if !pt.seized {
		unix.Tgkill(th.Proc.Pid, th.Tid, unix.SIGTRAP) // delivered once the exit stop, if any, is left
	}
	if pt.syscalls {
		after(unix.PTRACE_SYSCALL, 0)
		return
	}
	after(unix.PTRACE_CONT, 0)
}

// ptExited handles the exit of traced thread th (reaped by droidroot): its
// emulated tracer sees it, its own tracees are detached or killed, and the
// parked waits of its parent run again.
func (t *Tracer) ptExited(tid int, th *Thread, ws unix.WaitStatus) {
	if th == nil {
		return
	}
	if pt := th.pt; pt != nil {
		leader := th.Proc != nil && th.Proc.Pid == tid
		if !leader || th.Proc.Parent != pt.tracerPid {
			pid := tid
			if th.Proc != nil {
				pid = th.Proc.Pid
			}
			t.pt.exits = append(t.pt.exits, ptExit{tid: tid, pid: pid, tracerPid: pt.tracerPid, clone: !leader, status: ws})
		}
		tracerPid := pt.tracerPid
		t.ptForget(th)
		t.ptNotify(tracerPid)
	}
	if len(t.pt.tracers) > 0 {
		for _, o := range t.threads {
			if o.pt == nil || o.pt.tracer != tid {
				continue
			}
			if o.pt.opts&unix.PTRACE_O_EXITKILL != 0 {
				unix.Tgkill(o.Proc.Pid, o.Tid, unix.SIGKILL)
				t.ptForget(o)
				continue
			}
			t.ptDetach(o, 0)
		}
	}
	if th.Proc != nil && th.Proc.Pid == tid {
		kept := t.pt.exits[:0]
		for _, e := range t.pt.exits {
			if e.tracerPid != tid {
				kept = append(kept, e)
			}
		}
		t.pt.exits = kept
		if th.Proc.Parent != 0 {
			t.ptRequeueWaiters(th.Proc.Parent)
		}
	}
}

// refuseSeccompStops reports whether options ask for
// PTRACE_O_SUSPEND_SECCOMP, which the kernel refuses (EPERM) to a tracer
// under a seccomp filter, as every guest process is (droidroot's).
func (t *Tracer) refuseSeccompStops(opts uint64) bool {
	return opts&unix.PTRACE_O_SUSPEND_SECCOMP != 0
}

// ptraceEnter answers a guest's ptrace call.
func (t *Tracer) ptraceEnter(c *Call) {
	req := int(c.Arg(0))
	pid := int(int32(c.Arg(1)))
	addr, data := c.Arg(2), c.Arg(3)
	me := c.th
	switch req {
	case unix.PTRACE_TRACEME:
		parent := t.threads[me.Proc.ParentTid]
		if parent == nil {
			parent = t.threads[me.Proc.Parent]
		}
		if me.pt != nil || parent == nil || parent.Proc == nil || !t.yamaMayTraceme(parent.Tid) {
			c.Fail(unix.EPERM) // already traced, the parent is outside the guest, or Yama refuses
			return
		}
		t.ptAttach(me, parent.Tid, parent.Proc.Pid, false, 0)
		c.Return(0)
		return
	case unix.PTRACE_ATTACH, unix.PTRACE_SEIZE:
		target := t.threads[pid]
		switch {
		case target == nil || target.Proc == nil:
			if pid > 0 && unix.Kill(pid, 0) == nil {
				c.Fail(unix.EPERM) // outside the guest: droidroot's own, or the host's
			} else {
				c.Fail(unix.ESRCH)
			}
			return
		case req == unix.PTRACE_SEIZE && (addr != 0 || data&^uint64(ptraceOptionsMask) != 0):
			c.Fail(unix.EIO) // ptrace_attach checks the seize arguments first
			return
		case req == unix.PTRACE_SEIZE && t.refuseSeccompStops(data):
			c.Fail(unix.EPERM)
			return
		case target.Proc.Pid == me.Proc.Pid, !t.yamaMayAttach(me.Tid, me.Proc.Pid, target.Proc.Pid), target.pt != nil:
			c.Fail(unix.EPERM) // its own thread group, Yama's refusal, already traced
			return
		}
		if req == unix.PTRACE_SEIZE {
			t.ptAttach(target, me.Tid, me.Proc.Pid, true, int(data))
		} else {
			t.ptAttach(target, me.Tid, me.Proc.Pid, false, 0)
			unix.Tgkill(target.Proc.Pid, target.Tid, unix.SIGSTOP)
		}
		c.Return(0)
		return
	}
	target := t.threads[pid]
	if target == nil || target.pt == nil || target.pt.tracer != me.Tid {
		c.Fail(unix.ESRCH)
		return
	}
	pt := target.pt
	switch req {
	case unix.PTRACE_KILL:
		unix.Tgkill(target.Proc.Pid, target.Tid, unix.SIGKILL)
		c.Return(0)
		return
	case unix.PTRACE_INTERRUPT:
		if !pt.seized {
			c.Fail(unix.EIO)
			return
		}
		if pt.stop == nil {
			pt.interrupted = true
			ptrace(unix.PTRACE_INTERRUPT, target.Tid, 0, 0)
		}
		c.Return(0)
		return
	}
	if pt.stop == nil {
		c.Fail(unix.ESRCH) // running: not in a ptrace stop
		return
	}
	switch req {
	case unix.PTRACE_CONT, unix.PTRACE_SYSCALL, unix.PTRACE_SINGLESTEP, unix.PTRACE_LISTEN, unix.PTRACE_DETACH:
		if data > 64 {
			c.Fail(unix.EIO)
			return
		}
		sig := syscall.Signal(data)
		if req == unix.PTRACE_LISTEN && (!pt.seized || pt.stop.kind != ptGroup) {
			c.Fail(unix.EIO)
			return
		}
		if req == unix.PTRACE_DETACH {
			t.ptDetach(target, sig)
			c.Return(0)
			return
		}
		if req != unix.PTRACE_LISTEN {
			pt.syscalls = req == unix.PTRACE_SYSCALL
		}
		resume := pt.resume
		pt.stop, pt.resume = nil, nil
		t.logf(3, "ptrace: %d resumes %d: req %#x sig %d", me.Tid, target.Tid, req, sig)
		c.Return(0)
		resume(req, sig)
	case unix.PTRACE_SETOPTIONS:
		if data&^uint64(ptraceOptionsMask) != 0 {
			c.Fail(unix.EINVAL)
			return
		}
		if t.refuseSeccompStops(data) {
			c.Fail(unix.EPERM)
			return
		}
		t.ptSetOptions(target, int(data))
		c.Return(0)
	case unix.PTRACE_GETEVENTMSG:
		msg := pt.stop.msg
		if !pt.stop.hasMsg {
			var err error
			if msg, err = eventMsg(target.Tid); err != nil {
				msg = 0
			}
		}
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], msg)
		c.putResult(data, b[:])
	case unix.PTRACE_GETSIGINFO:
		b := make([]byte, 128)
		if si := pt.stop.si; si != nil {
			binary.LittleEndian.PutUint32(b[0:], uint32(si.Signo))
			binary.LittleEndian.PutUint32(b[4:], uint32(si.Errno))
			binary.LittleEndian.PutUint32(b[8:], uint32(si.Code))
		} else if err := ptRead(unix.PTRACE_GETSIGINFO, target.Tid, 0, b); err != nil {
			c.Fail(err.(unix.Errno))
			return
		}
		c.putResult(data, b)
	case unix.PTRACE_SETSIGINFO:
		b := make([]byte, 128)
		if c.ReadMem(data, b) != nil {
			c.Fail(unix.EFAULT)
			return
		}
		c.ret(ptWrite(unix.PTRACE_SETSIGINFO, target.Tid, 0, b))
	case unix.PTRACE_PEEKTEXT, unix.PTRACE_PEEKDATA, unix.PTRACE_PEEKUSR:
		b := make([]byte, 8)
		if err := ptRead(req, target.Tid, uintptr(addr), b); err != nil {
			c.Fail(err.(unix.Errno))
			return
		}
		c.putResult(data, b)
	case unix.PTRACE_POKETEXT, unix.PTRACE_POKEDATA, unix.PTRACE_POKEUSR:
		c.ret(ptrace(req, target.Tid, uintptr(addr), uintptr(data)))
	case unix.PTRACE_GETREGSET, unix.PTRACE_SETREGSET:
		t.ptRegset(c, req, target, addr, data)
	case ptraceGetSyscallInfo:
		c.putSized(data, int(addr), t.ptSyscallInfo(target))
	default:
		if f, ok := ptForward[req]; ok {
			b := make([]byte, f.size)
			if f.in {
				if c.ReadMem(data, b) != nil {
					c.Fail(unix.EFAULT)
					return
				}
				c.ret(ptWrite(req, target.Tid, uintptr(addr), b))
				return
			}
			if err := ptRead(req, target.Tid, uintptr(addr), b); err != nil {
				c.Fail(err.(unix.Errno))
				return
			}
			c.putResult(data, b)
			return
		}
		c.Fail(unix.EIO)
	}
}

// ptFwd is a ptrace request forwarded as is: its data points to size
// bytes the kernel reads (in) or writes.
type ptFwd struct {
	size int
	in   bool
}

// ret answers the call with err's errno, or 0.
func (c *Call) ret(err error) {
	if err != nil {
		if e, ok := err.(unix.Errno); ok {
			c.Fail(e)
			return
		}
		c.Fail(unix.EIO)
		return
	}
	c.Return(0)
}

// putResult writes b at the guest's addr and answers 0 (EFAULT if it cannot).
func (c *Call) putResult(addr uint64, b []byte) {
	if c.WriteMem(addr, b) != nil {
		c.Fail(unix.EFAULT)
		return
	}
	c.Return(0)
}

// putSized writes at most size bytes of b at addr and answers len(b), as
// PTRACE_GET_SYSCALL_INFO does.
func (c *Call) putSized(addr uint64, size int, b []byte) {
	n := min(size, len(b))
	if n > 0 && c.WriteMem(addr, b[:n]) != nil {
		c.Fail(unix.EFAULT)
		return
	}
	c.Return(int64(len(b)))
}

// ptRegset forwards PTRACE_GETREGSET / SETREGSET: data is the guest's iovec.
func (t *Tracer) ptRegset(c *Call, req int, target *Thread, nt, data uint64) {
	var iov [16]byte
	if c.ReadMem(data, iov[:]) != nil {
		c.Fail(unix.EFAULT)
		return
	}
	base, n := binary.LittleEndian.Uint64(iov[:8]), binary.LittleEndian.Uint64(iov[8:])
	n = min(n, 1<<16)
	b := make([]byte, n)
	if req == unix.PTRACE_SETREGSET {
		if c.ReadMem(base, b) != nil {
			c.Fail(unix.EFAULT)
			return
		}
	}
	got, err := ptRegsetReal(req, target.Tid, int(nt), b)
	if err != nil {
		c.ret(err)
		return
	}
	if req == unix.PTRACE_GETREGSET {
		if c.WriteMem(base, b[:got]) != nil {
			c.Fail(unix.EFAULT)
			return
		}
	}
	binary.LittleEndian.PutUint64(iov[8:], uint64(got))
	if c.WriteMem(data+8, iov[8:]) != nil {
		c.Fail(unix.EFAULT)
		return
	}
	c.Return(0)
}

// ptSyscallInfo builds PTRACE_GET_SYSCALL_INFO's answer for target's
// emulated stop: its kind decides the op, its registers the rest.
func (t *Tracer) ptSyscallInfo(target *Thread) []byte {
	var r Regs
	getRegs(target.Tid, &r)
	return syscallInfo(target.pt.stop.kind, &r, uint32(target.pt.stop.msg))
}

// syscallInfo encodes struct ptrace_syscall_info for a stop of kind k with
// registers r (a seccomp stop: its filter's data retData).
func syscallInfo(k ptKind, r *Regs, retData uint32) []byte {
	b := make([]byte, 88)
	le := binary.LittleEndian
	le.PutUint32(b[4:], ptAuditArch)
	le.PutUint64(b[8:], r.PC())
	le.PutUint64(b[16:], r.SP())
	switch k {
	case ptSyscallEntry:
		b[0] = syscallInfoEntry
		le.PutUint64(b[24:], uint64(int64(r.Nr())))
		for i := 0; i < 6; i++ {
			le.PutUint64(b[32+8*i:], r.Arg(i))
		}
		return b[:80]
	case ptSeccomp:
		b[0] = syscallInfoSeccomp
		le.PutUint64(b[24:], uint64(int64(r.Nr())))
		for i := 0; i < 6; i++ {
			le.PutUint64(b[32+8*i:], r.Arg(i))
		}
		le.PutUint32(b[80:], retData)
		return b[:84]
	case ptSyscallExit:
		b[0] = syscallInfoExit
		ret := r.Ret()
		le.PutUint64(b[24:], uint64(ret))
		if ret < 0 && ret >= -4095 {
			b[32] = 1
		}
		return b[:33]
	}
	b[0] = syscallInfoNone
	return b[:24]
}

// waitSel is what a wait call asks for.
type waitSel struct {
	idtype  int // P_ALL, P_PID, P_PGID
	id      int
	options int
}

// match reports whether thread tid (of process pid; clone: a thread or
// a child with another exit signal) is selected.
func (s waitSel) match(tid, pid int, clone bool) bool {
	if s.options&unix.WALL == 0 && clone != (s.options&unix.WCLONE != 0) {
		return false
	}
	switch s.idtype {
	case unix.P_PID:
		return tid == s.id
	case unix.P_PGID:
		pg, err := unix.Getpgid(pid)
		return err == nil && pg == s.id
	case unix.P_ALL:
		return true
	}
	return false // P_PIDFD: the kernel answers (a tracee named by a pidfd is not emulated)
}

// waitSelOf decodes the selection of a wait4 (pid, options) or waitid
// (idtype, id, options) call; me is the caller's process.
func waitSelOf(c *Call, waitid bool) waitSel {
	if waitid {
		return waitSel{idtype: int(c.Arg(0)), id: int(int32(c.Arg(1))), options: int(c.Arg(3))}
	}
	pid := int(int32(c.Arg(0)))
	s := waitSel{options: int(c.Arg(2)) | unix.WEXITED}
	switch {
	case pid > 0:
		s.idtype, s.id = unix.P_PID, pid
	case pid == -1:
		s.idtype = unix.P_ALL
	case pid == 0:
		pg, _ := unix.Getpgid(c.Pid())
		s.idtype, s.id = unix.P_PGID, pg
	default:
		s.idtype, s.id = unix.P_PGID, -pid
	}
	return s
}

// ptWaitEnter answers a wait4 or waitid of a process that traces someone
// (others' waits go to the kernel untouched).
func (t *Tracer) ptWaitEnter(c *Call, waitid bool) {
	me := c.th
	if me.Proc == nil || !t.ptTracing(me.Proc.Pid) {
		me.waitPassed = true // see ptAttach
		return
	}
	me.waitPassed = false
	sel := waitSelOf(c, waitid)
	if t.ptWaitAnswer(c, sel, waitid) {
		return
	}
	args := [6]uint64{}
	for i := range args {
		args[i] = c.Arg(i)
	}
	optArg := 2
	if waitid {
		optArg = 3
	}
	args[optArg] |= unix.WNOHANG
	nr := c.Nr()
	pid := me.Proc.Pid
	gen := t.pt.gen[pid]
	var then func(c *Call, ret int64)
	then = func(c *Call, ret int64) {
		t.logf(3, "ptrace: wait of %d: the kernel says %d", c.Tid(), ret)
		if ret > 0 || ret < 0 && ret != -int64(unix.ECHILD) {
			c.Return(ret) // a real child's state (reaped: it must be the answer), or an error
			return
		}
		if waitid && ret == 0 && t.waitidFilled(c) {
			c.Return(0)
			return
		}
		if t.ptWaitAnswer(c, sel, waitid) {
			return // a stop that came while the kernel was asked
		}
		has := t.ptHasMatch(me, sel)
		if ret == -int64(unix.ECHILD) && !has {
			c.Return(ret) // nothing to wait for, real or emulated
			return
		}
		if sel.options&unix.WNOHANG != 0 {
			c.Return(0) // children, none ready
			return
		}
		if g := t.pt.gen[pid]; g != gen {
			// A child changed while the kernel was asked (its exit is
			// visible to this wait only once droidroot has reaped it): ask again.
			gen = g
			c.Run(nr, args, then)
			return
		}
		// Sleep until an emulated stop or exit, a real child's exit or group
		// stop (requeue), or a signal whose handler runs.
		me.ptWaiting = true
		t.logf(3, "ptrace: wait of %d parks", c.Tid())
		c.Park(nil, func(ParkEnd) int64 {
			me.ptWaiting = false
			return -int64(unix.EINTR)
		})
	}
	c.Run(nr, args, then)
}

// waitidFilled reports whether a waitid that returned 0 found a child (the
// kernel zeroes si_pid when WNOHANG found none).
func (t *Tracer) waitidFilled(c *Call) bool {
	infop := c.Arg(2)
	if infop == 0 {
		return false
	}
	var b [4]byte
	if c.ReadMem(infop+16, b[:]) != nil {
		return false
	}
	return binary.LittleEndian.Uint32(b[:]) != 0
}

// ptHasMatch reports whether the caller's process has an emulated tracee
// or exit the selection names.
func (t *Tracer) ptHasMatch(me *Thread, sel waitSel) bool {
	pid := me.Proc.Pid
	for _, th := range t.threads {
		if th.pt != nil && th.pt.tracerPid == pid && th.Proc != nil && sel.match(th.Tid, th.Proc.Pid, th.Tid != th.Proc.Pid) {
			return true
		}
	}
	for _, e := range t.pt.exits {
		if e.tracerPid == pid && sel.match(e.tid, e.pid, e.clone) {
			return true
		}
	}
	return false
}

// ptWaitAnswer answers the wait with a pending emulated stop or exit, if
// one is selected.
func (t *Tracer) ptWaitAnswer(c *Call, sel waitSel, waitid bool) bool {
	pid := c.th.Proc.Pid
	nowait := sel.options&unix.WNOWAIT != 0
	if sel.options&unix.WEXITED != 0 {
		for i, e := range t.pt.exits {
			if e.tracerPid != pid || !sel.match(e.tid, e.pid, e.clone) {
				continue
			}
			if !t.ptWaitResult(c, waitid, e.tid, e.status) {
				return true
			}
			if !nowait {
				t.pt.exits = append(t.pt.exits[:i:i], t.pt.exits[i+1:]...)
			}
			return true
		}
	}
	for _, th := range t.threads {
		pt := th.pt
		if pt == nil || pt.tracerPid != pid || pt.stop == nil || pt.stop.reported || th.Proc == nil ||
			!sel.match(th.Tid, th.Proc.Pid, th.Tid != th.Proc.Pid) {
			continue
		}
		t.logf(3, "ptrace: wait of %d gets %d %#x", c.Tid(), th.Tid, uint32(pt.stop.status))
		if t.ptWaitResult(c, waitid, th.Tid, pt.stop.status) && !nowait {
			pt.stop.reported = true
		}
		return true
	}
	return false
}

// ptWaitResult writes a wait's answer (status for wait4, siginfo for
// waitid, a zeroed rusage) and returns tid (waitid: 0). It reports
// whether the guest's memory took it.
func (t *Tracer) ptWaitResult(c *Call, waitid bool, tid int, ws unix.WaitStatus) bool {
	le := binary.LittleEndian
	rusage := c.Arg(3)
	if waitid {
		rusage = c.Arg(4)
	}
	if rusage != 0 && c.WriteMem(rusage, make([]byte, 144)) != nil {
		c.Fail(unix.EFAULT)
		return false
	}
	if !waitid {
		if p := c.Arg(1); p != 0 {
			var b [4]byte
			le.PutUint32(b[:], uint32(ws))
			if c.WriteMem(p, b[:]) != nil {
				c.Fail(unix.EFAULT)
				return false
			}
		}
		c.Return(int64(tid))
		return true
	}
	si := make([]byte, 128)
	le.PutUint32(si[0:], uint32(unix.SIGCHLD))
	code, status := int32(0), int32(0)
	switch {
	case ws.Stopped():
		code, status = 4 /* CLD_TRAPPED */, int32(ws>>8)
	case ws.Exited():
		code, status = 1 /* CLD_EXITED */, int32(ws.ExitStatus())
	case ws.CoreDump():
		code, status = 3 /* CLD_DUMPED */, int32(ws.Signal())
	default:
		code, status = 2 /* CLD_KILLED */, int32(ws.Signal())
	}
	le.PutUint32(si[8:], uint32(code))
	le.PutUint32(si[16:], uint32(tid))
	le.PutUint32(si[20:], uint32(unix.Getuid()))
	le.PutUint32(si[24:], uint32(status))
	if p := c.Arg(2); p != 0 && c.WriteMem(p, si) != nil {
		c.Fail(unix.EFAULT)
		return false
	}
	c.Return(0)
	return true
}
