package tracer

import (
	"encoding/binary"
	"time"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/loader"
	"github.com/droidroot/droidroot/seccomp"
)

// This file: new tasks (fork, vfork, clone events and their initial
// stops) and exec (handing the loader its program).

// forked handles a fork, vfork or clone event of th.
func (t *Tracer) forked(th *Thread, event int) {
	msg, err := eventMsg(th.Tid)
	if err != nil {
		t.cont(th, 0)
		return
	}
	child := int(msg)
	// The event tells fork-like from thread-like by the exit signal only:
	// clone(CLONE_FS|SIGCHLD) is a "fork" event that shares the cwd. Read
	// the flags of every clone call.
	flags := t.cloneFlags(th)
	if t.gone[child] {
		// It exited before this event (goneEarly): nothing to follow.
		delete(t.gone, child)
		if t.ptEvent(th, event) {
			return
		}
		t.cont(th, 0)
		return
	}
	ct := t.threads[child]
	wasStopped := ct != nil && ct.birth == orphan
	if t.flight != nil {
		held := unix.WaitStatus(0)
		if ct != nil {
			held = ct.held
		}
		t.fly(th.Tid, "FORK", "event=%d child=%d flags=%#x known=%v stopped=%v held=%#x", event, child, flags, ct != nil, wasStopped, uint32(held))
	}
	if ct == nil {
		ct = &Thread{Tid: child}
		t.threads[child] = ct
	}
	if flags&unix.CLONE_THREAD != 0 {
		ct.Proc = th.Proc
	} else {
		exe := *th.Proc
		exe.Pid = child
		ct.Proc = &exe
	}
	if flags&unix.CLONE_FS != 0 {
		ct.FS = th.FS
	} else {
		fs := *th.FS
		ct.FS = &fs
		if flags&unix.CLONE_THREAD != 0 {
			ct.Proc.SplitFS = true
		}
	}
	ct.inSyscall = th.inSyscall
	ct.creds = th.creds
	ct.gfilters = th.gfilters
	if flags&unix.CLONE_THREAD == 0 {
		ct.Proc.Parent, ct.Proc.ParentTid = th.Proc.Pid, th.Tid
		if flags&unix.CLONE_PARENT != 0 {
			ct.Proc.Parent, ct.Proc.ParentTid = th.Proc.Parent, th.Proc.ParentTid
		}
	}
	t.ptForked(th, ct, event)
	if len(t.hooks) > 0 {
		t.emit(Event{Kind: EventFork, Tid: child, Pid: ct.Proc.Pid, ParentTid: th.Tid, ParentPid: th.Proc.Pid, Flags: flags})
	}
	if wasStopped {
		ct.birth = born
		if held := ct.held; held.StopSignal() == unix.SIGTRAP && !initialStop(held) {
			// Not its initial stop: in the arm64 test VM a new thread was
			// seen to run without one (before ptracePtr fixed the stale
			// pointers, which may explain it), and this is its first
			// traced call, which must be translated, not just resumed.
			ct.held = 0
			t.dispatch(ct, held)
		} else if !t.ptInitial(ct) {
			t.cont(ct, 0)
		}
	} else {
		// Its initial stop is still to come. In the arm64 test VM such a
		// stop was seen never to be reported by wait4, leaving the new
		// thread stopped for good (before ptracePtr: an event message
		// read as child 0 looks just like that): until a stop of it is
		// reported, the loop polls and resumes it itself (waitAwaiting).
		ct.birth = unreported
		if t.awaiting == nil {
			t.awaiting = map[int]*Thread{}
		}
		t.awaiting[child] = ct
	}
	if t.ptEvent(th, event) {
		return
	}
	t.cont(th, 0)
}

// goneEarly records that task tid, not known yet (its parent's fork or
// clone event had not come), was let go at its exit stop, so that the
// event, if it still comes, does not wait for a stop of it. A parent killed
// in its clone never reports the event, so the set is bounded: it is
// emptied when it holds 64 tasks.
func (t *Tracer) goneEarly(tid int) {
	if t.gone == nil || len(t.gone) >= 64 {
		t.gone = map[int]bool{}
	}
	t.gone[tid] = true
}

// initialStop tells whether stop status ws is a PTRACE_EVENT_STOP, as a
// new task's initial stop is.
func initialStop(ws unix.WaitStatus) bool { return int(ws)>>16&0xff == unix.PTRACE_EVENT_STOP }

// staleInitialReport tells whether ws, a PTRACE_EVENT_STOP with SIGTRAP
// reported for a task waitAwaiting resumed from its initial stop, is that
// stop reported late: the task is in no stop of that status now (cur, its
// siginfo, nil when it is in no stop). A task that is, stopped again:
// SIGCONT sent to a seized tracee makes it trap with that same status
// (JOBCTL_TRAP_NOTIFY) at once, stopped or not, and dropping that report
// would leave it stopped for good (a shell's "kill -STOP; kill -CONT" of a
// child just forked).
func staleInitialReport(ws unix.WaitStatus, cur *Siginfo) bool {
	return cur == nil || stopStatus(cur) != ws
}

// stopStatus is the wait status of the ptrace stop whose siginfo is si:
// for a ptrace event or syscall stop (and PTRACE_EVENT_STOP), si_code is
// the status's stop part; for a signal-delivery stop, the signal.
func stopStatus(si *Siginfo) unix.WaitStatus {
	code := si.Code & 0xff
	if si.Code>>8 == unix.PTRACE_EVENT_STOP ||
		si.Signo == int32(unix.SIGTRAP) && (code == int32(unix.SIGTRAP) || code == int32(unix.SIGTRAP|0x80)) {
		return unix.WaitStatus(0x7f | uint32(si.Code)<<8)
	}
	return unix.WaitStatus(0x7f | uint32(si.Signo)<<8)
}

// waitAwaiting is wait4 while new tasks have not reported their initial
// stop: it polls, and for such a task that is stopped it asks the kernel
// which stop (PTRACE_GETSIGINFO). In its initial stop, the task is resumed
// here; a late report of that stop is dropped (resumedEarly). In any
// other (a task that ran without an initial stop, at its first traced call
// or a signal) the stop is returned as if wait4 had reported it. The
// attempts do not wait for a quiet moment: other threads may keep
// reporting stops all along.
func (t *Tracer) waitAwaiting(ws *unix.WaitStatus) (int, error) {
	for delay := 20 * time.Microsecond; ; {
		for tid, th := range t.awaiting {
			var si Siginfo
			if getSiginfo(tid, &si) != nil {
				continue // not stopped yet
			}
			if t.flight != nil {
				t.fly(tid, "AWAIT", "siginfo signo=%d code=%#x", si.Signo, si.Code)
			}
			if st := stopStatus(&si); !initialStop(st) || th.pt != nil && (th.pt.initial || th.pt.interrupted) {
				if initialStop(st) {
					th.birth = born // its emulated tracer sees this stop (initial, or its interrupt)
					delete(t.awaiting, tid)
				}
				t.logf(2, "task %d: stopped without an initial stop", tid)
				*ws = st
				return tid, nil
			}
			if t.resumeThread(th, t.resumeReq(), 0) {
				t.logf(2, "task %d: its initial stop was not reported; resumed", tid)
				th.birth = resumedEarly
				delete(t.awaiting, tid)
			}
		}
		if len(t.awaiting) == 0 {
			return wait4(ws)
		}
		tid, err := wait4Flags(ws, unix.WNOHANG)
		if err != nil || tid > 0 {
			return tid, err
		}
		time.Sleep(delay)
		if delay < 2*time.Millisecond {
			delay *= 2
		}
	}
}

// cloneFlags reads the flags of the clone or clone3 call th is in; fork
// and vfork have none that matter here (0).
func (t *Tracer) cloneFlags(th *Thread) uint64 {
	var r Regs
	if err := getRegs(th.Tid, &r); err != nil {
		return 0
	}
	abi := seccomp.NativeABI(t.goarch)
	if nr, ok := abi.Nr("clone"); ok && r.Nr() == nr {
		return r.Arg(0)
	}
	if nr, ok := abi.Nr("clone3"); ok && r.Nr() == nr {
		var b [8]byte
		if n, err := readMem(th.Tid, r.Arg(0), b[:]); err != nil || n != 8 {
			return 0
		}
		return binary.LittleEndian.Uint64(b[:])
	}
	return 0
}

// execEvent handles PTRACE_EVENT_EXEC: the loader has just been exec'd;
// hand it the program to load.
func (t *Tracer) execEvent(th *Thread) {
	t.releaseHeld(th) // the execve's path is resolved
	formerTid := th.Tid
	if former, err := eventMsg(th.Tid); err == nil && int(former) != th.Tid {
		formerTid = int(former)
		// A non-leader thread exec'd: it takes over the leader's tid.
		if ft := t.threads[int(former)]; ft != nil {
			delete(t.threads, int(former))
			ft.Tid = th.Tid
			ft.Proc = th.Proc
			t.threads[th.Tid] = ft
			th = ft
		}
	}
	plan := th.exec
	th.exec = nil
	if len(t.hooks) > 0 {
		t.emit(Event{Kind: EventExec, Tid: th.Tid, Pid: th.Proc.Pid, Static: plan != nil && plan.InterpHost == ""})
	}
	// A new memory: the loader maps the scratch area again.
	th.Proc.scratch, th.Proc.scratchAsked = scratchUnknown, false
	th.Proc.auxvSP = 0
	// Other threads of the process are gone; the process gets its own FS.
	fs := *th.FS
	th.FS = &fs
	ids := t.execCreds(th)
	if plan == nil {
		if !t.ptExecEvent(th) {
			t.cont(th, 0)
		}
		return
	}
	th.loading = true
	th.Proc.Exe = plan.Exe
	th.Proc.ExeHost = plan.ProgramHost
	var r Regs
	if err := getRegs(th.Tid, &r); err != nil {
		return
	}
	sp := r.SP()
	th.Proc.auxvSP = sp
	script := loader.Script{Program: plan.ProgramHost, Interp: plan.InterpHost, ExecFn: plan.ExecFn, IDs: ids, HWCap: t.cfg.HWCap}
	deferred := t.ptExecDeferred(th, formerTid)
	script.ExecStop = deferred
	if t.scriptAreaSize != 0 { // droidroot's own loader
		script.Wakes = plan.Wakes
		if t.scratch != nil {
			script.Scratch = t.scratch.path
			th.Proc.scratchAsked = true
		}
	}
	scriptBytes := script.Encode(sp)
	// The top of the loader's script area when it has one and the script
	// leaves the loader its stack there (the loader runs just below the
	// script): below sp, the stack is not mapped after an exec with large
	// arguments.
	addr := loader.Address(sp, len(scriptBytes))
	if uint64(len(scriptBytes))+loaderStack <= t.scriptAreaSize {
		addr = (t.scriptArea + t.scriptAreaSize - uint64(len(scriptBytes))) &^ 15
	}
	if err := writeMem(th.Tid, addr, scriptBytes); err != nil {
		t.warnOnce("script", "cannot hand the load script to process %d: %v", th.Tid, err)
		unix.Kill(th.Tid, unix.SIGKILL)
		return
	}
	r.SetEntryArg(addr)
	if t.setRegs(th, &r) && (deferred || !t.ptExecEvent(th)) {
		t.cont(th, 0)
	}
}
