package tracer

import "github.com/droidroot/droidroot/loader"

// This file: syscall stops (seccomp entry, syscall entry and exit) and the
// handlers they run.

// seccompStop handles a PTRACE_EVENT_SECCOMP stop. Every traced call is
// of the native ABI (the filter traps the others, see foreignStop), so the
// registers are all the stop needs: entry or exit comes from the handler
// table, not from the filter's RET_DATA.
func (t *Tracer) seccompStop(th *Thread) {
	c := &th.call
	if err := getRegs(th.Tid, &c.Regs); err != nil {
		return
	}
	if th.gfilters != nil && t.ptGuestSeccomp(th, &c.Regs) {
		return // the guest's own filter's stop (guestseccomp.go)
	}
	t.enter(th)
}

// enter runs the entry handler of the syscall th is stopped at.
func (t *Tracer) enter(th *Thread) {
	c := &th.call
	if t.flight != nil {
		t.fly(th.Tid, "ENTER", "%s loading=%v", t.flyArgs(th.Tid, &c.Regs), th.loading)
	}
	th.skipRegs = nil // a skip's SIGSYS comes before the next call
	if t.census != nil {
		t.countCall(th, &c.Regs)
	}
	if th.loading {
		if t.InLoader(c.Regs.PC()) {
			if c.Regs.Nr() == loader.ExecStopNr && t.ptIsHandover(th, &c.Regs) {
				t.ptHandover(th, &c.Regs, false) // the hand-over: the exec stop
				return
			}
			t.cont(th, 0) // the loader opening the program: host paths
			return
		}
		th.loading = false
		if th.pt != nil && th.pt.execPending {
			th.pt.execPending = false // the hand-over was missed: its calls are the guest's again
		}
	}
	if th.isPretranslated(&c.Regs) {
		t.cont(th, 0) // restarted by SetNr at a SIGSYS stop: translated already
		return
	}
	t.releaseHeld(th) // its last call has run
	nr := c.Regs.Nr()
	h := t.handlerOf(nr)
	if h == nil && t.cfg.NoSeccomp {
		// No filter refuses anything in ptrace-only mode: the tracer does.
		if errno, ok := refusal(t.policy, t.goarch, nr); ok && !t.blockedAtEntry(nr) {
			h = &Handler{Enter: func(c *Call) { c.Fail(errno) }}
		}
	}
	if h == nil || t.blockedAtEntry(nr) {
		t.cont(th, 0)
		return
	}
	t.enterWith(th, h)
}

// enterWith runs entry handler h for the syscall th is stopped at.
func (t *Tracer) enterWith(th *Thread, h *Handler) {
	c := &th.call
	c.t = t
	c.Entry = c.Regs
	c.read = c.Regs
	c.reset(th)
	c.undoRewrites()
	c.h = h
	h.Enter(c)
	if c.exitNow && h.Exit != nil && th.op == nil {
		h.Exit(c)
	}
	c.endStage()
	if th.op != nil {
		t.startOp(th, c, false, c.Entry.PC())
		return
	}
	if c.dirty {
		if !t.setChangedRegs(th, &c.read, &c.Regs) {
			return // killed: the call never runs with the guest's arguments
		}
		if th.pt != nil {
			t.ptEnterHandled(th, &c.Entry, &c.Regs)
		}
		if t.flight != nil {
			t.flyCheck(th)
		}
	} else if t.flight != nil {
		t.fly(th.Tid, "CLEAN", "no register change")
	}
	if eh := c.exitHandler(h); eh != nil {
		th.pendingExit = eh
	}
	if t.cfg.NoSeccomp && t.trapsSkips(th) && c.skipped {
		saved := c.Regs
		th.skipRegs = &saved
	}
	t.cont(th, 0)
}

// syscallStop handles a syscall-entry or -exit stop.
func (t *Tracer) syscallStop(th *Thread) {
	c := &th.call
	if th.fix != nil && t.fixupStop(th) {
		return
	}
	if t.cfg.NoSeccomp {
		switch syscallInfoOp(th.Tid) {
		case syscallInfoEntry:
			th.inSyscall = false
		case syscallInfoExit:
			th.inSyscall = true
		}
	}
	if t.cfg.NoSeccomp && !th.inSyscall {
		th.inSyscall = true
		th.skipRegs = nil
		if err := getRegs(th.Tid, &c.Regs); err != nil {
			return
		}
		t.enter(th)
		return
	}
	th.inSyscall = false
	if th.skipEntryStop {
		// Until the restarted call's entry, stops are a signal handler's
		// calls (the Go runtime's SIGURG in a harness child, a guest's
		// handler): let them run. The call after the entry is ours.
		switch syscallInfoOp(th.Tid) {
		case syscallInfoEntry:
			if err := getRegs(th.Tid, &c.Regs); err == nil && c.Regs.Nr() == th.restartNr {
				th.skipEntryStop = false
			}
			t.cont(th, 0)
			return
		case syscallInfoExit:
			t.cont(th, 0)
			return
		}
		th.skipEntryStop = false // no syscall info: the old guess, this is the exit
	}
	h := th.pendingExit
	if h == nil {
		t.cont(th, 0)
		return
	}
	if err := getRegs(th.Tid, &c.Regs); err == nil {
		c.dirty = false
		h.Exit(c)
		if c.dirty && !t.setRegs(th, &c.Regs) {
			th.pendingExit = nil
			return
		}
	}
	th.pendingExit = nil
	t.cont(th, 0)
}
