package tracer

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/seccomp"
)

// This file holds calls that take more than one stop to answer:
//
//   - Park: a blocking emulated call (semop on a semaphore that is 0). The
//     thread sleeps in the kernel, in an interruptible ppoll(NULL, 0,
//     timeout, NULL) the tracer puts in place of the call, until another
//     thread's call makes it possible (Tracer.Wake interrupts the ppoll
//     and the answer is set at its exit stop), its timeout elapses (ppoll
//     returns 0: the kernel keeps the time), or a signal whose handler
//     must run arrives (the call fails, usually with EINTR, as semop does),
//     or a stop where the call asked for it (EndParkAtStop: semop). Other
//     signals without a handler (ignored, stop/continue) restart the ppoll
//     transparently. Nothing in the tracer waits: a parked thread costs no
//     tracer time.
//   - Run: syscall injection. The thread executes syscalls the tracer
//     chooses (shmat = openat + mmap + close), each one's result passed to
//     a continuation at its exit stop, before the call is answered. The
//     injected calls bypass the handlers (their paths are host paths).
//     Signals arriving between them are held back and re-sent with tgkill
//     once the call is answered.
//
// Both end with the original call answered as if by the kernel: every
// register as at the call's entry except the result.
//
// At a SIGSYS stop (a call the Android policy blocks), the tracer starts
// these with startOp(th, c, true, siCallAddr): the first syscall is made
// by restarting at the syscall instruction rather than in place.

// ParkEnd says why a parked call ends without a Wake.
type ParkEnd int

const (
	// ParkTimeout: the timeout given to Park elapsed.
	ParkTimeout ParkEnd = iota
	// ParkSignal: a signal handler is about to run in the thread (or the
	// sleep failed): the call must fail now (semop: EINTR).
	ParkSignal
	// ParkStopped: a signal is about to stop the thread (SIGSTOP, or
	// SIGTSTP, SIGTTIN, SIGTTOU at their default action), for a call parked
	// with EndParkAtStop; the result is what the call returns once the
	// thread is continued.
	ParkStopped
)

type threadOp struct {
	park   bool
	entry  Regs   // the registers at the call's entry
	contPC uint64 // the address after the call's syscall instruction

	// Park.
	ts     *unix.Timespec
	woken  bool
	result int64
	end    func(ParkEnd) int64
	// again: woken to make the call again from its start (requeue).
	again bool
	// stopEnds: a stop signal ends the sleep (EndParkAtStop).
	stopEnds bool

	// Run.
	nr      int
	args    [6]uint64
	then    func(c *Call, ret int64)
	next    bool // then called Run
	answer  *int64
	reissue int // Reissue: the call's number, -1 for none
	held    []syscall.Signal
}

// Park leaves the call unanswered: the thread sleeps until Tracer.Wake
// answers it, its timeout (nil: none) elapses, or a signal handler must
// run. Then end is called with the reason and returns the call's result.
// Whoever keeps the sleeper (an emulation's wait queue) must also forget it
// when the thread dies (EventThreadGone). Park is for Enter handlers.
func (c *Call) Park(timeout *unix.Timespec, end func(ParkEnd) int64) {
	c.th.op = &threadOp{park: true, entry: c.Entry, ts: timeout, end: end, reissue: -1}
}

// EndParkAtStop, after Park, makes a stop of the thread end the parked call
// (ParkStopped) as a signal handler would, where the sleep a parked call
// stands for is one the kernel ends with EINTR when the thread is stopped
// and continued (semop and semtimedop: signal(7), "Interruption of system
// calls and library functions by stop signals"); other parked calls sleep
// on once continued, as a restarted call does.
func (c *Call) EndParkAtStop() {
	if op := c.th.op; op != nil && op.park {
		op.stopEnds = true
	}
}

// Run makes the thread execute syscall nr(args) and calls then with its
// result at its exit stop. Called from Enter, the syscall replaces the call;
// called from then, it is the next one. then ends the sequence with
// c.Return (the answer to the original call) or calls Run again.
func (c *Call) Run(nr int, args [6]uint64, then func(c *Call, ret int64)) {
	op := c.th.op
	if op == nil {
		op = &threadOp{entry: c.Entry, reissue: -1}
		c.th.op = op
	}
	op.nr, op.args, op.then, op.next = nr, args, then, true
}

// Held returns the signals that arrived during the Run sequence so far (in
// a continuation): they are held back and sent again once the call is
// answered, so a handler deciding between EINTR and a restart can look at
// them (a call interrupted at its exit stop shows its signal here after one
// more injected call).
func (c *Call) Held() []syscall.Signal {
	if op := c.th.op; op != nil && !op.park {
		return op.held
	}
	return nil
}

// Reissue ends a Run sequence (in a continuation) without answering the
// call: the thread goes back to the original call's syscall instruction,
// every register as at its entry and the call's number nr in place, and
// makes the call again once the held signals (sent again first) have been
// handled. It is how a call the kernel would restart after a signal (a
// handler with SA_RESTART, or none) is restarted.
func (c *Call) Reissue(nr int) bool {
	op := c.th.op
	if op == nil || op.park {
		return false
	}
	op.reissue = nr
	var v int64
	op.answer = &v
	return true
}

// Wake answers tid's parked call with v (a result or a negative errno).
// It does nothing if tid is not parked or already woken.
// Call it on the tracer's thread.
func (t *Tracer) Wake(tid int, v int64) {
	t.onTracerThread("Wake")
	th := t.threads[tid]
	if th == nil || th.op == nil || !th.op.park || th.op.woken {
		return
	}
	th.op.woken, th.op.result = true, v
	if err := ptrace(unix.PTRACE_INTERRUPT, tid, 0, 0); err != nil {
		t.logf(1, "interrupt %d: %v", tid, err)
	}
}

// requeue wakes th's parked call so that the thread makes it again, from
// its syscall instruction with its entry registers (an emulated wait
// whose answer may have changed): handlers see it anew.
func (t *Tracer) requeue(th *Thread) {
	if th.op == nil || !th.op.park || th.op.woken {
		return
	}
	th.op.woken, th.op.again = true, true
	if err := ptrace(unix.PTRACE_INTERRUPT, th.Tid, 0, 0); err != nil {
		t.logf(1, "interrupt %d: %v", th.Tid, err)
	}
}

// startOp starts the op a handler set up on th. restart is false at a
// syscall-entry stop (the first syscall replaces the call in place) and
// true at a signal-delivery stop of a skipped call (SIGSYS): the thread is
// sent back to the syscall instruction before contPC.
func (t *Tracer) startOp(th *Thread, c *Call, restart bool, contPC uint64) {
	op := th.op
	op.contPC = contPC
	abi := seccomp.NativeABI(t.goarch)
	if op.park {
		op.nr, _ = abi.Nr("ppoll")
		op.args = [6]uint64{}
		if op.ts != nil {
			var b [16]byte
			binary.LittleEndian.PutUint64(b[:], uint64(op.ts.Sec))
			binary.LittleEndian.PutUint64(b[8:], uint64(op.ts.Nsec))
			addr, err := c.Push(b[:])
			if err != nil {
				th.op = nil
				t.answer(th, op, op.end(ParkSignal), 0)
				return
			}
			op.args[2] = addr
		}
	}
	op.next = false
	r := c.Regs
	t.setupSyscall(th, &r, op, !restart)
}

// setupSyscall makes th execute op.nr(op.args) and resumes it.
func (t *Tracer) setupSyscall(th *Thread, r *Regs, op *threadOp, inPlace bool) {
	for i, a := range op.args {
		r.SetArg(i, a)
	}
	if inPlace {
		r.SetNr(op.nr)
		r.setRestartNr(op.nr)
	} else {
		// Back to the syscall instruction, with no restart pending.
		r.SetNr(-1)
		r.setSyscallReg(op.nr)
		r.SetPC(op.contPC - SyscallInsnLen)
	}
	if t.setRegs(th, r) {
		t.resumeThread(th, unix.PTRACE_SYSCALL, 0)
	}
}

// answer ends th's op: the call returns v, every other register as at its
// entry; the thread resumes with signal sig. At a syscall-entry stop (a
// restarted ppoll) the syscall is skipped; at a signal-delivery stop no
// restart happens.
func (t *Tracer) answer(th *Thread, op *threadOp, v int64, sig syscall.Signal) {
	// Start from the registers now (on arm64 a syscall stop shows x7 as
	// the kernel's entry/exit marker, so an entry snapshot must not be
	// written back whole) and restore what the ops changed.
	var r Regs
	if err := getRegs(th.Tid, &r); err != nil {
		r = op.entry
	}
	for i := 0; i < 6; i++ {
		r.SetArg(i, op.entry.Arg(i))
	}
	r.restoreSyscallReg(&op.entry)
	r.SetNr(-1) // no restart, and skip the call at an entry stop
	if op.reissue >= 0 || op.again {
		// Back to the syscall instruction with the call's number (rax on
		// x86_64, x8 on arm64, whose x0 is the first argument again):
		// Reissue's number, or the call's own to make it again (requeue).
		nr := op.reissue
		if op.again {
			nr = op.entry.Nr()
		}
		r.setSyscallReg(nr)
		r.SetPC(op.contPC - SyscallInsnLen)
	} else {
		r.SetRet(v)
		r.SetPC(op.contPC)
	}
	if !t.setRegs(th, &r) {
		th.op = nil
		return
	}
	if t.trapsSkips(th) && syscallInfoOp(th.Tid) == syscallInfoEntry {
		// Skipping a call at a syscall-entry stop makes it number -1, which
		// seccomp then checks: an Android policy (ours, or a guest's own
		// filter: a nested droidroot's reproduction) traps it, and the
		// kernel rolls the registers back. sigsysStop puts this answer back.
		sk := r
		th.skipRegs = &sk
	}
	th.op = nil
	th.inSyscall = false
	pid := th.Tid
	if th.Proc != nil {
		pid = th.Proc.Pid
	}
	for _, s := range op.held {
		unix.Tgkill(pid, th.Tid, s)
	}
	t.cont(th, sig)
}

func isRestart(ret int64) bool { return ret <= -512 && ret >= -516 }

// opStop handles a stop of a thread with an op. It returns false for stops
// the usual handling must see (events, group stops).
func (t *Tracer) opStop(th *Thread, sig syscall.Signal, event int) bool {
	op := th.op
	switch {
	case sig == unix.SIGTRAP|0x80:
		var r Regs
		if err := getRegs(th.Tid, &r); err != nil {
			return true
		}
		if syscallInfoOp(th.Tid) == syscallInfoEntry {
			if op.park && op.woken {
				t.answer(th, op, op.result, 0)
			} else {
				t.resumeThread(th, unix.PTRACE_SYSCALL, 0)
			}
			return true
		}
		ret := r.Ret()
		if op.park {
			switch {
			case op.woken:
				t.answer(th, op, op.result, 0)
			case ret == 0:
				t.answer(th, op, op.end(ParkTimeout), 0)
			case isRestart(ret):
				t.resumeThread(th, unix.PTRACE_SYSCALL, 0)
			default:
				t.answer(th, op, op.end(ParkSignal), 0)
			}
			return true
		}
		c := &th.call
		c.Regs = r
		c.dirty = false
		op.next, op.answer = false, nil
		op.then(c, ret)
		switch {
		case th.op != op && th.op != nil && th.op.park:
			// The continuation parked the call: sleep in its place.
			np := th.op
			np.entry, np.contPC = op.entry, op.contPC
			np.nr, _ = seccomp.NativeABI(t.goarch).Nr("ppoll")
			np.args = [6]uint64{}
			t.setupSyscall(th, &r, np, false)
		case op.answer != nil:
			t.answer(th, op, *op.answer, 0)
		case op.next:
			t.setupSyscall(th, &r, op, false)
		default:
			t.answer(th, op, -int64(unix.ENOSYS), 0)
		}
		return true
	case sig == unix.SIGTRAP && event == unix.PTRACE_EVENT_SECCOMP:
		// An injected call our filter traces: it is not translated.
		t.resumeThread(th, unix.PTRACE_SYSCALL, 0)
		return true
	case event == 0:
		// A signal-delivery stop.
		if !op.park {
			op.held = append(op.held, sig)
			t.resumeThread(th, unix.PTRACE_SYSCALL, 0)
			return true
		}
		if op.woken {
			t.answer(th, op, op.result, sig)
			return true
		}
		caught, ignored := sigDisposition(th.Tid, sig)
		switch {
		case caught:
			t.answer(th, op, op.end(ParkSignal), sig)
		case op.stopEnds && stopsThread(sig, ignored):
			t.answer(th, op, op.end(ParkStopped), sig)
		default:
			t.resumeThread(th, unix.PTRACE_SYSCALL, sig)
		}
		return true
	}
	return false
}

// opReturn is Call.Return inside a Run continuation.
func (c *Call) opReturn(v int64) bool {
	op := c.th.op
	if op == nil || op.park {
		return false
	}
	op.answer = &v
	return true
}

// handlerRuns reports whether delivering sig to tid runs a handler.
func handlerRuns(tid int, sig syscall.Signal) bool {
	caught, _ := sigDisposition(tid, sig)
	return caught
}

// sigDisposition reads from /proc/TID/status whether thread tid's
// process catches signal sig (a handler runs: SigCgt) or ignores it
// (SigIgn); unreadable, it reports a handler (the call ends, as for one).
func sigDisposition(tid int, sig syscall.Signal) (caught, ignored bool) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", tid))
	if err != nil {
		return true, false
	}
	defer f.Close()
	caught = true
	bit := uint64(1) << (uint(sig) - 1)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if v, ok := strings.CutPrefix(line, "SigIgn:"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			ignored = err == nil && m&bit != 0
		} else if v, ok := strings.CutPrefix(line, "SigCgt:"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err != nil || m&bit != 0, ignored
		}
	}
	return caught, ignored
}

// stopsThread tells whether signal sig, neither caught nor (ignored) set
// to be ignored, stops the thread at its delivery: SIGSTOP always, SIGTSTP,
// SIGTTIN and SIGTTOU at their default action.
func stopsThread(sig syscall.Signal, ignored bool) bool {
	switch sig {
	case unix.SIGSTOP:
		return true
	case unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU:
		return !ignored
	}
	return false
}

// sigsysOp is for the SIGSYS path (a call the Android policy blocks,
// answered by the same Enter handler): after Enter, if the handler parked
// the call or started injected syscalls, it starts them from the SIGSYS
// stop (callAddr is si_call_addr) and reports true; the thread is then
// resumed (signal 0, PTRACE_SYSCALL) and the caller must not touch it.
func (t *Tracer) sigsysOp(th *Thread, c *Call, callAddr uint64) bool {
	if th.op == nil {
		return false
	}
	t.startOp(th, c, true, callAddr)
	return true
}
