package tracer

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/loader"
	"github.com/droidroot/droidroot/seccomp"
)

// sysSeccomp is SYS_SECCOMP, the si_code of a SIGSYS sent by a seccomp
// filter's SECCOMP_RET_TRAP.
const sysSeccomp = 1

// sigsysInfo is the seccomp part of a SIGSYS siginfo_t.
type sigsysInfo struct {
	callAddr uint64 // si_call_addr: the address after the syscall instruction
	nr       int    // si_syscall
	arch     uint32 // si_arch (AUDIT_ARCH_*)
	errno    int32  // si_errno: the filter's SECCOMP_RET_DATA
	code     int32  // si_code
}

// decodeSigsys reads the _sigsys member of the siginfo union. Its layout
// is the same on x86_64 and arm64 (64-bit pointers, no padding): the union
// starts at offset 16 with void *_call_addr, then int _syscall, then
// unsigned int _arch.
func decodeSigsys(si *Siginfo) sigsysInfo {
	return sigsysInfo{
		callAddr: binary.LittleEndian.Uint64(si.Union[0:8]),
		nr:       int(int32(binary.LittleEndian.Uint32(si.Union[8:12]))),
		arch:     binary.LittleEndian.Uint32(si.Union[12:16]),
		errno:    si.Errno,
		code:     si.Code,
	}
}

// handlerOf returns the handler of native syscall nr, or nil.
func (t *Tracer) handlerOf(nr int) *Handler {
	if nr >= 0 && nr < len(t.handlers) {
		return t.handlers[nr]
	}
	return t.farHandlers[nr]
}

// ours tells whether a SIGSYS is a call the Android policy blocked, which
// droidroot answers, rather than a guest's own seccomp trap or another
// arch's call, which the guest gets untouched.
func (t *Tracer) ours(s sigsysInfo) bool {
	pol := t.cfg.Android
	native := seccomp.NativeABI(t.goarch)
	if pol == nil || s.code != sysSeccomp || s.errno != 0 || s.arch != native.AuditArch {
		return false
	}
	// For a device policy, whose release is unknown, Blocks is "some
	// release blocks it": the calls the table has blocked-call handlers
	// for, and the numbers above every list.
	return pol.Blocks(native, s.nr)
}

// foreign tells whether a SIGSYS is droidroot's filter trapping a call of
// an ABI it does not translate (x32 or i386 on x86_64, an unknown arch):
// its RET_DATA, and not the native ABI. Under an Android policy whose
// filter traps foreign calls too (TrapForeign) droidroot's filter does not
// trap them itself, and Android's SIGSYS (data 0) reaches the guest.
func (t *Tracer) foreign(s sigsysInfo) bool {
	if s.code != sysSeccomp || (s.errno != seccomp.DataUnsupportedABI && s.errno != seccomp.DataUnknownArch) {
		return false
	}
	const x32Bit = 0x40000000 // X32_SYSCALL_BIT
	return s.arch != seccomp.NativeABI(t.goarch).AuditArch || (t.goarch == "amd64" && uint32(s.nr)&x32Bit != 0)
}

// foreignStop answers a foreign call with ENOSYS, as a kernel without that
// ABI would, and says so once. The kernel has skipped the call and left
// pc after the syscall instruction; only the return register changes.
// (SECCOMP_RET_TRAP resets a blocked or ignored SIGSYS to the default
// action before the stop: a process that blocks SIGSYS and makes a
// foreign call keeps SIGSYS unblocked afterwards.)
func (t *Tracer) foreignStop(th *Thread, s sigsysInfo) {
	t.warnOnce("abi", "a guest process uses a syscall ABI droidroot does not support yet (only the native %s ABI is translated); answering ENOSYS", seccomp.NativeABI(t.goarch).Name)
	var r Regs
	if err := getRegs(th.Tid, &r); err != nil {
		return
	}
	r.SetRet(-int64(unix.ENOSYS))
	r.answerAt(s.callAddr)
	if t.setRegs(th, &r) {
		t.cont(th, 0)
	}
}

// sigsysStop handles a SIGSYS signal-delivery stop of th. It returns false
// if the signal is not ours and must be delivered.
//
// For ours, the kernel has skipped the call and rolled the registers back
// (number and arguments intact, pc = si_call_addr). The table's Enter
// handler runs as at a seccomp stop, and then:
//   - it answered (Call.Return): the result goes to the return register and
//     pc to si_call_addr;
//   - it rewrote the call (Call.Restart): pc goes back to the syscall
//     instruction, which runs again through every filter;
//   - it did neither (a translating handler whose call the kernel cannot run
//     here), or there is no handler: ENOSYS.
//
// The signal is suppressed in every case.
func (t *Tracer) sigsysStop(th *Thread) bool {
	var si Siginfo
	if err := getSiginfo(th.Tid, &si); err != nil {
		// Out of its stop already: only SIGKILL takes a tracee out of a
		// ptrace stop, and its exit follows. The stop is not the guest's
		// to see: an emulated tracer (strace's PTRACE_SEIZE test, which
		// kills its child in a blocked pause) would get a SIGSYS stop
		// where the kernel reports the kill.
		if t.flight != nil {
			t.fly(th.Tid, "DROP", "SIGSYS stop of a task out of its stop: %v", err)
		}
		return true
	}
	s := decodeSigsys(&si)
	t.census.count(stopSigsys, s.nr)
	if t.census != nil && t.census.sites {
		var r Regs
		if getRegs(th.Tid, &r) == nil {
			t.census.countSite(stopSigsys, s.nr, th.Tid, s.callAddr, callerOf(th.Tid, &r))
		}
	}
	if t.foreign(s) {
		t.foreignStop(th, s)
		return true
	}
	if s.nr == loader.ExecStopNr && s.code == sysSeccomp {
		// Our loader's hand-over, or a nested droidroot's loader's: the
		// signal is then the guest's, as under a kernel's Android policy
		// (its tracer, emulated here, takes it as its exec stop).
		return t.handoverSigsys(th, s)
	}
	if sk := th.skipRegs; sk != nil && s.nr == -1 && s.code == sysSeccomp {
		// A call answered or restarted at a syscall-entry stop (an op's
		// end, or any call in ptrace-only mode) went on as number -1,
		// which the policy traps (trapsSkips), and the kernel rolled the
		// registers back. Put our answer back.
		th.skipRegs = nil
		sk.forceNr()
		if t.setRegs(th, sk) {
			t.cont(th, 0)
		}
		return true
	}
	if t.cfg.Android == nil {
		return false
	}
	if s.nr == -1 && s.code == sysSeccomp && th.pt != nil {
		// Not a skip of ours (skipRegs): the guest's tracer skipped the
		// call at a syscall-entry stop, and its SIGSYS is for that tracer
		// (a nested droidroot puts its answer back, as droidroot does).
		return false
	}
	if !t.ours(s) {
		return false
	}
	c := &th.call
	if err := getRegs(th.Tid, &c.Regs); err != nil {
		return true // gone
	}
	c.t = t
	c.Entry = c.Regs
	c.reset(th)
	c.sigsys = true
	c.callAddr = s.callAddr
	if th.gfilters != nil && t.ptGuestSigsys(th, s) {
		return true // the guest's own filter stops the call first (guestseccomp.go)
	}
	t.sigsysAnswer(th, s, t.handlerOf(s.nr))
	return true
}

// trapsSkips tells whether a filter may trap number -1 in th: the Android
// policy droidroot runs under, or a guest's own filter (a nested droidroot
// runs under its reproduction of that policy), which the kernel runs on a
// call the tracer skips at a syscall-entry stop.
func (t *Tracer) trapsSkips(th *Thread) bool { return t.cfg.Android != nil || th.gfilters != nil }

// handoverSigsys handles the SIGSYS stop s of th if it is the loader's
// hand-over call (droidroot_execstop) that a filter trapped: the Android
// policy (which allows no unknown number), or a guest's own filter, which
// the kernel runs on the loader's calls too (a nested droidroot's
// reproduction of that policy). The kernel skipped the call: the exec stop
// is at this SIGSYS stop, which droidroot swallows.
func (t *Tracer) handoverSigsys(th *Thread, s sigsysInfo) bool {
	c := &th.call
	if err := getRegs(th.Tid, &c.Regs); err != nil {
		return false
	}
	if !t.ptIsHandover(th, &c.Regs) {
		return false
	}
	c.t = t
	c.Entry = c.Regs
	c.reset(th)
	t.ptHandover(th, &c.Regs, true)
	return true
}

// sigsysAnswer answers the blocked call of th's SIGSYS stop s with handler
// h (nil: ENOSYS), th.call holding its registers.
func (t *Tracer) sigsysAnswer(th *Thread, s sigsysInfo, h *Handler) {
	c := &th.call
	if h != nil {
		c.h = h
		h.Enter(c)
		if c.exitNow && h.Exit != nil && th.op == nil {
			h.Exit(c)
		}
		c.endStage()
		if p := th.pretranslated; p != nil && c.restart {
			for i := range p.args {
				p.args[i] = c.Regs.Arg(i)
			}
		}
		if c.restart && !c.noExit && h.Exit != nil {
			// Call.SetNr: the Exit runs at the restarted call's exit. The
			// thread resumes with PTRACE_SYSCALL, so the restarted call
			// first makes a syscall-entry stop, which is not that exit.
			th.pendingExit = h
			th.skipEntryStop = !t.cfg.NoSeccomp
			th.restartNr = c.restartNr
		}
	}
	if t.sigsysOp(th, c, s.callAddr) {
		// Parked (a semop that must wait) or running injected calls
		// (shmat): op.go has set the registers and resumed the thread.
		c.sigsys = false
		return
	}
	switch {
	case c.restart:
		t.logf(3, "SIGSYS %d: restarted as %d", s.nr, c.restartNr)
		if th.gfilters != nil {
			th.gfilterRestart = c.restartNr + 1
		}
		if th.pt != nil {
			th.pt.sigsysExit = false // the restarted call's exit stop is the one to report
		}
	case !c.skipped:
		if h != nil {
			t.logf(2, "SIGSYS %d: the handler did not answer; ENOSYS", s.nr)
		}
		c.Return(-int64(unix.ENOSYS))
		fallthrough
	default:
		// Only the result changes: a handler may have rewritten argument
		// registers, which the guest's code may still rely on after the
		// syscall instruction (it preserves them).
		ret := c.Regs.Ret()
		if !c.keepArgs {
			c.Regs = c.Entry
		}
		c.Regs.SetRet(ret)
		c.Regs.answerAt(s.callAddr)
		c.dirty = true
	}
	c.sigsys = false
	if t.setRegs(th, &c.Regs) {
		t.cont(th, 0)
	}
}

// fixup is work a handler left for the exit of the call it restarted as.
type fixup struct {
	nr      int // the call restarted as
	entered bool
	fn      func(c *Call)
}

// fixupStop handles a syscall stop of a thread with a pending fixup. It
// returns false if the stop needs the ordinary handling too.
func (t *Tracer) fixupStop(th *Thread) bool {
	f := th.fix
	c := &th.call
	if err := getRegs(th.Tid, &c.Regs); err != nil {
		th.fix = nil
		return true
	}
	op := syscallInfoOp(th.Tid)
	entry := op == syscallInfoEntry || op == syscallInfoNone && !f.entered
	if entry {
		if f.entered || c.Regs.Nr() != f.nr {
			// Not the restarted call (a signal handler ran first): give up.
			th.fix = nil
			return false
		}
		f.entered = true
		if t.cfg.NoSeccomp {
			return false // ordinary entry handling; it resumes with PTRACE_SYSCALL
		}
		t.cont(th, 0)
		return true
	}
	if !f.entered {
		return false // ptrace-only mode: the exit of the call that was skipped
	}
	th.fix = nil
	c.dirty = false
	c.atExit = true
	f.fn(c)
	c.atExit = false
	if c.dirty && !t.setRegs(th, &c.Regs) {
		return true
	}
	if t.cfg.NoSeccomp {
		th.inSyscall = false
	}
	t.cont(th, 0)
	return true
}

// Restart replaces the call with syscall nr and the given arguments (those
// not given keep their values) and makes the thread execute its syscall
// instruction again: the new call passes through every seccomp filter,
// so it is translated like any call the guest makes. It works at a SIGSYS
// stop and at a syscall-entry stop.
func (c *Call) Restart(nr int, args ...uint64) {
	for i, a := range args {
		c.Regs.SetArg(i, a)
	}
	c.restart = true
	c.restartNr = nr
	c.noExit = true
	c.skipped = true
	c.Regs.restartAt(nr, c.callAddr)
	c.dirty = true
}

// AfterRestart runs fn at the exit of the call Restart started (which must
// be one droidroot does not trace): fn sees the result with Ret and may
// change it with Return, and may read and write guest memory.
func (c *Call) AfterRestart(fn func(c *Call)) {
	c.th.fix = &fixup{nr: c.restartNr, fn: fn}
}

// AtSIGSYS reports whether the call is being answered at a SIGSYS stop (the
// Android policy blocked it) rather than at a seccomp or syscall stop.
func (c *Call) AtSIGSYS() bool { return c.sigsys }

// Android returns the Android policy droidroot runs under, or nil.
func (c *Call) Android() *seccomp.AndroidPolicy { return c.t.cfg.Android }

// Reserve moves the scratch area below the stack n bytes further down, and
// the next string in the thread's scratch slot as far, so that what a
// handler pushes before Restart survives the pushes of the handler of the
// restarted call (which start again below the red zone and at the top of
// the slot).
func (c *Call) Reserve(n uint64) {
	c.scratch -= n
	c.slotReserve += n
	if c.slotTop > 1 {
		c.slotCur -= min(n, c.slotCur-c.slotLo)
	}
}

// blockedAtEntry reports whether a ptrace-only syscall-entry stop is of a
// call the simulated Android policy will trap right after it (seccomp runs
// after the entry stop): its handler runs at the SIGSYS stop instead, once.
func (t *Tracer) blockedAtEntry(nr int) bool {
	p := t.cfg.Android
	return t.cfg.NoSeccomp && p != nil && !p.Device() && p.Blocks(seccomp.NativeABI(t.goarch), nr)
}
