package tracer

import (
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/seccomp"
)

// This file: the wait loop, the dispatch of stops by kind, resuming, exits.

// resumeReq is how threads are restarted when no exit stop is wanted.
func (t *Tracer) resumeReq() int {
	if t.cfg.NoSeccomp {
		return unix.PTRACE_SYSCALL
	}
	return unix.PTRACE_CONT
}

func (t *Tracer) loop() (int, error) {
	var ws unix.WaitStatus
	for len(t.threads) > 0 {
		var tid int
		var err error
		if len(t.awaiting) > 0 {
			tid, err = t.waitAwaiting(&ws)
		} else {
			tid, err = t.waitNext(&ws)
		}
		if err != nil {
			if err == unix.ECHILD {
				break
			}
			return 1, fmt.Errorf("wait4: %w", err)
		}
		if t.flight != nil {
			t.fly(tid, "WAIT", "ws=%#x known=%v", uint32(ws), t.threads[tid] != nil)
		}
		th := t.threads[tid]
		if th != nil && th.birth == unreported {
			th.birth = born
			delete(t.awaiting, tid)
		}
		switch {
		case ws.Exited() || ws.Signaled():
			t.exited(tid, th, ws)
			continue
		case !ws.Stopped():
			continue
		}
		if th == nil {
			if int(ws)>>16&0xff == unix.PTRACE_EVENT_EXIT {
				// A new task at its exit before its parent's event: its
				// thread group is dying (the new thread took the group's
				// fatal signal, SIGPIPE in Go's os tests, while its
				// parent, killed, skips its event stop) or it exited at
				// once. Held, it would keep its group from exiting and
				// droidroot waiting for good: let it exit, and tell
				// forked() it is gone.
				resume(unix.PTRACE_CONT, tid, 0)
				t.goneEarly(tid)
				continue
			}
			// A new task whose parent's event has not arrived yet: keep
			// it stopped until it has, with the stop it reported (its
			// initial stop, or, where that stop is missing, its first
			// traced call), which forked() then handles.
			t.threads[tid] = &Thread{Tid: tid, birth: orphan, held: ws}
			continue
		}
		t.dispatch(th, ws)
	}
	if t.flight != nil && t.lastStatus != 0 {
		t.flight.dump(os.Stderr)
	}
	if t.census != nil {
		t.census.report(t.cfg.Log, seccomp.NativeABI(t.goarch))
	}
	return t.lastStatus, nil
}

// DefaultSpin is how long the tracer polls for the next stop before it
// blocks, while stops come quickly (see waitNext); Config.Spin
// (DROIDROOT_SPIN=US) changes it, or turns polling off. Measured on a
// 2-core VM: a traced call with a do-nothing handler 17-20 us instead of
// 23-26, stat 33-35 instead of 37-42.
const DefaultSpin = 50 * time.Microsecond

// waitNext is wait4, polled first while stops come quickly. Blocked in
// wait4, the tracer's CPU goes idle and the stop has to wake it (an
// interrupt, an idle exit): in a syscall-dense stretch, polling for up to
// t.spin (sched_yield between polls, so that a tracee on the same CPU
// runs) finds the next stop without that. A poll that comes back empty
// turns polling off until a blocking wait returns within t.spin again, so
// a guest that computes between calls costs at most one empty poll.
func (t *Tracer) waitNext(ws *unix.WaitStatus) (int, error) {
	if t.spin <= 0 {
		return wait4(ws)
	}
	if t.spinning {
		deadline := time.Now().Add(t.spin)
		for {
			tid, err := wait4Flags(ws, unix.WNOHANG)
			if err != nil || tid > 0 {
				return tid, err
			}
			if time.Now().After(deadline) {
				break
			}
			unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0)
		}
		t.spinning = false
	}
	start := time.Now()
	tid, err := wait4(ws)
	t.spinning = time.Since(start) < t.spin
	return tid, err
}

// dispatch handles stop ws of traced thread th.
func (t *Tracer) dispatch(th *Thread, ws unix.WaitStatus) {
	sig := ws.StopSignal()
	event := int(ws) >> 16 & 0xff
	if th.birth == resumedEarly && event != unix.PTRACE_EVENT_STOP {
		th.birth = born // the thread ran: the initial stop will not be reported
	}
	if t.flight != nil {
		t.fly(th.Tid, "DISPATCH", "ws=%#x sig=%d event=%d op=%v pendingExit=%v", uint32(ws), sig, event, th.op != nil, th.pendingExit != nil)
	}
	if th.pt != nil {
		if th.pt.stop != nil {
			if ws == th.pt.heldWS {
				return // held for its emulated tracer: a second report of that stop (waitAwaiting)
			}
			// It left the held stop (SIGKILL): that stop is gone.
			th.pt.stop, th.pt.resume = nil, nil
		}
		th.pt.curWS = ws
		th.sysOp = syscallInfoNone
		if sig == unix.SIGTRAP|0x80 {
			th.sysOp = syscallInfoOp(th.Tid)
		}
	}
	if t.census != nil {
		t.countStop(sig, event)
	}
	if th.op != nil && t.opStop(th, sig, event) {
		return
	}
	switch {
	case sig == unix.SIGTRAP|0x80:
		if th.pt != nil && th.sysOp == syscallInfoEntry && t.ptSyscallEntry(th) {
			return // reported to the emulated tracer
		}
		t.syscallStop(th)
	case sig == unix.SIGTRAP && event == unix.PTRACE_EVENT_SECCOMP:
		t.seccompStop(th)
	case sig == unix.SIGTRAP && (event == unix.PTRACE_EVENT_FORK || event == unix.PTRACE_EVENT_VFORK || event == unix.PTRACE_EVENT_CLONE):
		t.forked(th, event)
	case sig == unix.SIGTRAP && event == unix.PTRACE_EVENT_EXEC:
		t.execEvent(th)
	case sig == unix.SIGTRAP && event == unix.PTRACE_EVENT_EXIT:
		t.exitingStop(th)
	case event == unix.PTRACE_EVENT_STOP:
		if th.birth == resumedEarly && sig == unix.SIGTRAP {
			th.birth = born
			var si Siginfo
			cur := &si
			if getSiginfo(th.Tid, &si) != nil {
				cur = nil
			}
			if staleInitialReport(ws, cur) {
				if t.flight != nil {
					t.fly(th.Tid, "DROP", "late initial stop")
				}
				return
			}
			// A stop of its own: SIGCONT's (a seized tracee traps at every
			// SIGCONT, stopped or not), or an emulated tracer's interrupt.
		}
		if th.birth == orphan {
			return // stays stopped until its parent's event (forked)
		}
		if th.pt != nil && t.ptEventStop(th, sig) {
			return
		}
		switch sig {
		case unix.SIGSTOP, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU:
			if len(t.pt.tracers) > 0 && th.Proc != nil && th.Proc.Parent != 0 {
				t.ptRequeueWaiters(th.Proc.Parent) // a parked wait may want WUNTRACED
			}
			// Group stop: stay stopped but let SIGCONT through.
			t.resumeThread(th, unix.PTRACE_LISTEN, 0)
		default:
			t.cont(th, 0)
		}
	default:
		if sig == unix.SIGSYS && t.sigsysStop(th) {
			return // a blocked call, answered
		}
		if th.pt != nil {
			t.ptSignalStop(th, sig)
			return
		}
		// Signal-delivery stop: deliver it.
		t.cont(th, sig)
	}
}

func (t *Tracer) cont(th *Thread, sig syscall.Signal) {
	if th.pt != nil && t.ptSyscallExit(th) {
		return // the exit stop of a call an emulated tracer saw enter
	}
	t.contReal(th, sig)
}

// contReal resumes th with signal sig: PTRACE_SYSCALL when droidroot or an
// emulated tracer needs the next syscall stop, else resumeReq.
func (t *Tracer) contReal(th *Thread, sig syscall.Signal) {
	req := t.resumeReq()
	if th.pendingExit != nil || th.op != nil || th.fix != nil || th.pt != nil && (th.pt.syscalls || th.pt.inSys) {
		req = unix.PTRACE_SYSCALL
	}
	if t.flight != nil {
		t.fly(th.Tid, "CONT", "req=%d sig=%d", req, sig)
	}
	t.resumeThread(th, req, sig)
}

func (t *Tracer) exited(tid int, th *Thread, ws unix.WaitStatus) {
	delete(t.threads, tid)
	t.releaseHeld(th)
	t.freeSlot(th)
	if th != nil && (th.pt != nil || len(t.pt.tracers) > 0 || len(t.pt.exits) > 0) {
		t.ptExited(tid, th, ws)
	}
	if len(t.pt.ptracers) > 0 {
		t.ptracersExited(tid)
	}
	if th != nil && th.Proc != nil && len(t.hooks) > 0 {
		th.op = nil
		t.emit(Event{Kind: EventThreadGone, Tid: tid, Pid: th.Proc.Pid})
		if th.Proc.Pid == tid {
			t.emit(Event{Kind: EventProcessGone, Tid: tid, Pid: tid})
		}
	}
	if th == nil || th.Proc == nil || th.Proc.Pid != tid {
		return
	}
	status := 0
	if ws.Exited() {
		status = ws.ExitStatus()
	} else {
		status = 128 + int(ws.Signal())
	}
	t.logf(2, "process %d exited: %d", tid, status)
	if t.killed {
		return // the status is the first process's
	}
	// As proot: the status of the last process that exited normally. A
	// process killed by a signal does not count (a shell's killed
	// background job must not replace its own exit status), except the
	// first one, as a shell reports it (128+N), when nothing exits after it.
	if ws.Exited() || tid == t.first {
		t.lastStatus = status
	}
	if tid == t.first && t.cfg.KillOnExit {
		t.killed = true
		for other := range t.threads {
			unix.Kill(other, unix.SIGKILL)
		}
	}
}

// resumeThread restarts th with request req (PTRACE_CONT, _SYSCALL, _LISTEN) and signal sig:
// the one way the tracer resumes a thread it has seen. A thread that is gone (ESRCH: killed,
// or replaced by an exec in another thread) needs nothing more: its exit is reported by
// wait4. Any other error is logged: the thread stays stopped, and nothing runs untranslated.
// It reports whether th was resumed.
func (t *Tracer) resumeThread(th *Thread, req int, sig syscall.Signal) bool {
	err := resume(req, th.Tid, sig)
	if err != nil && err != unix.ESRCH {
		t.logf(1, "resume %d: %v", th.Tid, err)
		if t.flight != nil {
			t.fly(th.Tid, "RESUME", "req=%d sig=%d: %v", req, sig, err)
		}
	}
	return err == nil
}

// setRegs writes r as th's registers: the one way the tracer changes a stopped thread's
// registers. It reports whether th may be resumed. When they could not be written (other
// than because the thread is gone), the call th is stopped at would run with the guest's own
// registers (a path call would reach the host path the guest named), so th's whole process is
// killed (SIGKILL takes the thread group) and the failure reported.
func (t *Tracer) setRegs(th *Thread, r *Regs) bool {
	return t.writeRegs(th, nil, r)
}

// setChangedRegs is setRegs for registers that were was when read at this
// stop: only those that changed are written (putChangedRegs).
func (t *Tracer) setChangedRegs(th *Thread, was, r *Regs) bool {
	return t.writeRegs(th, was, r)
}

func (t *Tracer) writeRegs(th *Thread, was, r *Regs) bool {
	var err error
	if was != nil {
		err = putChangedRegs(th.Tid, was, r)
	} else {
		err = putRegs(th.Tid, r)
	}
	if err == nil {
		return true
	}
	if t.flight != nil {
		t.fly(th.Tid, "SETREGS", "%v", err)
	}
	if err == unix.ESRCH {
		return false // gone: its exit is reported by wait4
	}
	pid := th.Tid
	if th.Proc != nil {
		pid = th.Proc.Pid
	}
	t.warnf("cannot write the registers of thread %d (%v): process %d killed, so that its call does not run untranslated", th.Tid, err, pid)
	unix.Kill(pid, unix.SIGKILL)
	return false
}
