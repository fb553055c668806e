package tracer

import (
	"bytes"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/pathmap"
)

// Handler is how the tracer treats one syscall. The table of handlers is
// the single source of truth for the seccomp filter: a syscall is traced
// (SECCOMP_RET_TRACE) iff it has a handler, and it also stops at exit iff
// Exit is set.
type Handler struct {
	// Enter runs at the syscall-entry stop. It may rewrite arguments,
	// or answer the call itself with Call.Return.
	Enter func(c *Call)
	// Exit, when set, runs at the syscall-exit stop of the same call.
	Exit func(c *Call)
	// Events, when set, is told about every fork, exec and exit of the
	// traced tree (events.go): emulations that keep per-thread or
	// per-process state hang it on one of their handlers (once per
	// state, not on every handler that shares it).
	Events func(e *Event)
	// ExitingEvents makes Events also see EventExiting, which costs one
	// more stop per thread exit (PTRACE_O_TRACEEXIT) for the whole tree.
	ExitingEvents bool
	// FromTrampoline lets the call through untraced when it is made from
	// the fast path library's trampoline page (Config.Trampoline): the
	// library makes it with host paths it has verified.
	FromTrampoline bool
	// TraceIf, when set, stops the call only when its argument has a bit
	// of the mask (or lies in its range): the filter checks it after the
	// number dispatch
	// (seccomp.ArgRule), and otherwise gives the call the action of its
	// class (Classes; allowed without one), so its ordinary calls cost no
	// stop. In ptrace-only mode Enter sees every call of that number and
	// checks the argument itself.
	TraceIf *ArgMask
	// Untraced keeps the call out of the filter's traced calls (it gets its
	// class's action, allowed without one): Enter runs only for the stops
	// another filter of droidroot's asks for (the loader's filter of a
	// library-less process's FUTEX_WAKE calls), and in ptrace-only mode.
	Untraced bool
}

// ArgMask names bits of the low 32 bits of one syscall argument (Arg,
// 0-5), or with Mask 0 a range of its values, [Min, Max]: see
// Handler.TraceIf.
type ArgMask struct {
	Arg      int
	Mask     uint32
	Min, Max uint32
}

// Matches reports whether argument value v has a bit of m.Mask (or lies in
// m's range).
func (m *ArgMask) Matches(v uint64) bool {
	if m.Mask != 0 {
		return uint32(v)&m.Mask != 0
	}
	return uint32(v) >= m.Min && uint32(v) <= m.Max
}

// Table maps syscall names of the host's native ABI to their handlers.
type Table map[string]Handler

// Call is one syscall of one thread, as handlers see it.
type Call struct {
	t  *Tracer
	th *Thread

	// Regs are the thread's registers at the stop; handlers change them
	// through the methods below so the tracer knows to write them back.
	Regs Regs
	// Entry holds the registers at syscall entry (during Exit, Regs has
	// the exit values and the arguments may be gone on arm64).
	Entry Regs
	// read holds the registers as read at the entry stop (Entry may have
	// been changed by undoRewrites): what the kernel has until they are
	// written back.
	read  Regs
	dirty bool
	// scratch is the lowest address handed out so far below the stack.
	scratch uint64
	// slotLo, slotTop: the thread's scratch slot (scratch.go), slotTop 0
	// until the first push, 1 when there is none; slotCur is the lowest
	// address handed out in it.
	slotLo, slotTop, slotCur uint64
	// slotReserve is what Reserve left free at the top of the slot.
	slotReserve uint64
	// noExit cancels the exit stop of a handler that has an Exit.
	noExit bool
	// skipped is set when Return answered the call.
	skipped bool
	// exitNow: see ExitNow.
	exitNow bool
	// h is the handler the call's entry runs (HasExit).
	h   *Handler
	buf []byte
	// pre holds paths PrefetchPaths read, by address, for ReadPath.
	pre [2]prefetched
	// known holds the paths ReadPath read and PushString wrote last, by
	// address, for a later ReadPath of the same call (a layer that checks
	// what its inner handler handed the kernel); any other write of guest
	// memory clears it.
	known [2]prefetched
	buf2  []byte
	// sigsys is set while the call is answered at a SIGSYS stop; callAddr
	// is the address after its syscall instruction.
	sigsys   bool
	callAddr uint64
	// keepArgs: see KeepArgs.
	keepArgs bool
	// restart is set by Restart; restartNr is the new call.
	restart   bool
	restartNr int
	// atExit is set while an AfterRestart function runs.
	atExit bool
	// stage, at stageAddr: a result StageMem holds for guest memory until
	// the stop ends (nil: none); stageBuf is its reused storage.
	stage     []byte
	stageAddr uint64
	stageBuf  []byte

	// afterExit are the functions AfterExit added, run at the exit stop.
	afterExit []func(c *Call)

	// Data carries handler state from Enter to Exit.
	Data any
}

func (c *Call) reset(th *Thread) {
	c.th = th
	c.dirty = false
	c.scratch = c.Regs.SP() - RedZone
	c.slotTop, c.slotCur, c.slotReserve = 0, 0, 0
	c.noExit = false
	c.skipped = false
	c.exitNow = false
	c.h = nil
	c.Data = nil
	c.sigsys = false
	c.callAddr = c.Regs.PC()
	c.restart = false
	c.restartNr = 0
	c.atExit = false
	c.afterExit = nil
	c.stage = nil
	c.keepArgs = false
	c.pre = [2]prefetched{}
	c.known = [2]prefetched{}
}

// remember keeps path p at addr in c.known.
func (c *Call) remember(addr uint64, p string) {
	c.known[1] = c.known[0]
	c.known[0] = prefetched{addr: addr, path: p}
}

// prefetched is a path argument read ahead of its ReadPath.
type prefetched struct {
	addr uint64
	path string
}

// HoldFd keeps descriptor fd, which the Mapper's PinnedFile gave for a
// path handed to the kernel, in use until the kernel has run this call: it
// is given back (pathmap's ReleaseFile) at the thread's next traced call,
// when it exec's or ends.
func (c *Call) HoldFd(fd int) { c.th.heldFds = append(c.th.heldFds, fd) }

// releaseHeld gives back the descriptors th's last call held (HoldFd), if
// any (th may be nil: a task never known).
func (t *Tracer) releaseHeld(th *Thread) {
	if th == nil || len(th.heldFds) == 0 {
		return
	}
	for _, fd := range th.heldFds {
		t.cfg.Mapper.ReleaseFile(fd)
	}
	th.heldFds = th.heldFds[:0]
}

// KeepArgs makes the argument registers as the handler left them final
// when it answers at a SIGSYS stop. Normally they are put back as they were
// at the stop (a translating handler's rewrites must not leak to the
// guest); a handler that itself rewrote them in an earlier step of a chain
// (close_range) and has restored the guest's values asks for this.
func (c *Call) KeepArgs() { c.keepArgs = true }

// Tid returns the calling thread's id.
func (c *Call) Tid() int { return c.th.Tid }

// Pid returns the calling thread's process id.
func (c *Call) Pid() int { return c.th.Proc.Pid }

// Proc returns the calling process's state.
func (c *Call) Proc() *Process { return c.th.Proc }

// FS returns the calling thread's filesystem context.
func (c *Call) FS() *FS { return c.th.FS }

// Mapper returns the guest<->host path translation.
func (c *Call) Mapper() *pathmap.Mapper { return c.t.cfg.Mapper }

// PathProc identifies the caller to pathmap.
func (c *Call) PathProc() pathmap.Proc { return pathmap.Proc{Pid: c.th.Proc.Pid, Tid: c.th.Tid} }

// State returns Config.State: the per-run state of the handler table.
func (c *Call) State() any { return c.t.cfg.State }

// Tracer returns the tracer handling the call.
func (c *Call) Tracer() *Tracer { return c.t }

// Nr returns the syscall number.
func (c *Call) Nr() int { return c.Regs.Nr() }

// Arg returns argument i as it was at syscall entry.
func (c *Call) Arg(i int) uint64 { return c.Entry.Arg(i) }

// SetArg changes argument i. At entry the change is remembered, so that a
// restart of the same call (after a signal handler ran) gets the guest's
// own value back before it is translated again.
func (c *Call) SetArg(i int, v uint64) {
	if !c.inExit() && c.Entry.Arg(i) != v && c.pushed(v) {
		l := &c.th.rewrites
		l.ents[l.next] = rewrite{nr: c.Entry.Nr(), arg: i, from: c.Entry.Arg(i), to: v}
		l.next = (l.next + 1) % len(l.ents)
	}
	c.Regs.SetArg(i, v)
	c.dirty = true
}

// undoRewrites gives back the guest's own argument values to a call that
// is the restart of one droidroot translated: the kernel restarts an
// interrupted call (ERESTARTSYS with SA_RESTART, ERESTARTNOINTR, ...) with
// the registers as droidroot left them, but the host path or structure it
// pointed to lived below the stack pointer, where the signal frame has
// since been written. The same applies when guest code reuses an argument
// register it expects the kernel to have preserved. A register still
// holding a value droidroot wrote for the same syscall is reverted.
func (c *Call) undoRewrites() {
	l := &c.th.rewrites
	nr := c.Entry.Nr()
	for k := range l.ents {
		e := &l.ents[k]
		// A guest never keeps data below its stack pointer's red zone
		// (signal frames overwrite it), nor in the scratch area: a
		// pointer there is ours.
		if e.nr == nr && e.to != 0 && c.Entry.Arg(e.arg) == e.to && (e.to < c.Entry.SP()-RedZone || c.t != nil && c.t.scratch.has(e.to)) {
			c.Entry.SetArg(e.arg, e.from)
			c.Regs.SetArg(e.arg, e.from)
			c.dirty = true
			*e = rewrite{}
		}
	}
}

// SetNr changes the syscall number: the kernel runs call nr with the
// arguments as the handler left them. At a SIGSYS stop (the policy
// blocked the call, which the kernel has already skipped) the thread
// executes its syscall instruction again as call nr, whose seccomp stop
// then passes untouched (its arguments are translated already), and the
// handler's Exit, if any, runs at its exit.
func (c *Call) SetNr(nr int) {
	if c.sigsys {
		c.Restart(nr)
		c.noExit = false
		// The arguments are recorded once the handler is done (sigsysStop).
		c.th.pretranslated = &pretranslated{nr: nr}
		return
	}
	c.Regs.SetNr(nr)
	c.dirty = true
}

// pretranslated is a call a handler rewrote at a SIGSYS stop and restarted
// with its arguments already translated.
type pretranslated struct {
	nr   int
	args [6]uint64
}

// isPretranslated reports whether the call at this stop is the restart
// th.pretranslated announced (and forgets it either way).
func (th *Thread) isPretranslated(r *Regs) bool {
	ok := th.pretranslatedMatch(r)
	th.pretranslated = nil
	return ok
}

// pretranslatedMatch is isPretranslated without using the restart up.
func (th *Thread) pretranslatedMatch(r *Regs) bool {
	p := th.pretranslated
	if p == nil || r.Nr() != p.nr {
		return false
	}
	for i, a := range p.args {
		if r.Arg(i) != a {
			return false
		}
	}
	return true
}

// Return answers the call at entry without running it: the guest sees v
// (a negative errno for failure). At exit it replaces the result.
func (c *Call) Return(v int64) {
	if c.opReturn(v) {
		return
	}
	if !c.inExit() {
		c.Regs.SetNr(-1)
		c.skipped = true
		c.noExit = true
	}
	c.Regs.SetRet(v)
	c.dirty = true
}

// Fail answers the call with errno err.
func (c *Call) Fail(err unix.Errno) { c.Return(-int64(err)) }

// Ret returns the result of the call (in Exit).
func (c *Call) Ret() int64 { return c.Regs.Ret() }

// NoExit cancels the exit stop for this call.
func (c *Call) NoExit() { c.noExit = true }

// ExitWanted reports whether the call stops at its exit as things stand:
// not cancelled (NoExit) nor answered at its entry (Return). A layer that
// chains an Exit of its own for some calls only asks it of the handler it
// wraps, whose Exit then runs only where that handler wanted it.
func (c *Call) ExitWanted() bool { return !c.noExit && !c.skipped }

// WantExit undoes an earlier NoExit of this call's entry (a layer that
// chained an Exit after a handler that needed none), unless Return
// answered the call.
func (c *Call) WantExit() {
	if !c.skipped {
		c.noExit = false
	}
}

// AfterExit runs fn at the call's exit stop, after the handler's Exit if
// it has one, whether or not the handler wanted that stop: a layer's work
// that must end when the kernel has run the call (a mode raised for it put
// back). Called at the entry, after the handler's Enter. It reports false,
// and fn never runs, once Return answered the call (the kernel runs
// nothing), for a call answered at a SIGSYS stop or through injected calls
// (Run), whose exits the tracer makes itself: the layer then ends its work
// at once. A thread that dies in the call never runs fn either: the layer
// must end its work on EventThreadGone too.
func (c *Call) AfterExit(fn func(c *Call)) bool {
	if c.skipped || c.sigsys || c.th.op != nil || c.atExit {
		return false
	}
	c.afterExit = append(c.afterExit, fn)
	return true
}

// exitHandler is what the exit stop of a call whose entry ran handler h
// runs: h's Exit, unless NoExit cancelled it, then the AfterExit
// functions; nil for nothing.
func (c *Call) exitHandler(h *Handler) *Handler {
	if h.Exit == nil || c.noExit {
		h = nil
	}
	if len(c.afterExit) == 0 || c.skipped {
		return h
	}
	fns := c.afterExit
	return &Handler{Exit: func(c *Call) {
		if h != nil {
			h.Exit(c)
		}
		for _, fn := range fns {
			fn(c)
		}
	}}
}

// ExitNow, after Return answered the call at its entry, runs the
// handler's Exit at once on that answer (Ret is it, Arg the entry's
// arguments), as it would run at the exit stop of a call the kernel made:
// a handler that computes the result itself (a stat the tracer makes) keeps
// the result patches other layers chained to it, without a stop of its own.
func (c *Call) ExitNow() {
	if c.skipped {
		c.exitNow = true
	}
}

// ExitedNow tells whether the call's Exit runs at its entry (ExitNow), not
// at an exit stop.
func (c *Call) ExitedNow() bool { return c.exitNow }

// HasExit tells whether the call's handler has an Exit (its own or one a
// layer chained): a result the tracer computes at entry then saves that
// stop (ExitNow).
func (c *Call) HasExit() bool { return c.h != nil && c.h.Exit != nil }

func (c *Call) inExit() bool { return c.atExit || c.th.pendingExit != nil && !c.sigsys }

// ReadPath reads a NUL-terminated path argument from guest memory with the
// kernel's limits (ENAMETOOLONG past PATH_MAX, EFAULT on a bad pointer).
func (c *Call) ReadPath(addr uint64) (string, error) {
	if addr != 0 {
		for _, p := range c.pre {
			if p.addr == addr {
				return p.path, nil
			}
		}
		for _, p := range c.known {
			if p.addr == addr {
				return p.path, nil
			}
		}
	}
	if c.buf == nil {
		c.buf = make([]byte, PathMax)
	}
	p, err := readString(c.th.Tid, addr, PathMax, c.buf)
	if err == nil && addr != 0 {
		c.remember(addr, p)
	}
	return p, err
}

// PrefetchPaths reads the paths at a and b (a call's two path arguments)
// with one system call, for the ReadPath calls that follow. A path it
// cannot read whole that way (it crosses a page, or an address is bad) is
// left to ReadPath, which gives the kernel's answer for it.
func (c *Call) PrefetchPaths(a, b uint64) {
	if a == 0 || b == 0 || a == b {
		return
	}
	if c.buf == nil {
		c.buf = make([]byte, PathMax)
	}
	if c.buf2 == nil {
		c.buf2 = make([]byte, PathMax)
	}
	ba := c.buf[:toPageEnd(a)]
	bb := c.buf2[:toPageEnd(b)]
	if n, err := readMem2(c.th.Tid, a, ba, b, bb); err != nil || n != len(ba)+len(bb) {
		return
	}
	for k, p := range [2]struct {
		addr uint64
		b    []byte
	}{{a, ba}, {b, bb}} {
		if i := bytes.IndexByte(p.b, 0); i >= 0 {
			c.pre[k] = prefetched{addr: p.addr, path: string(p.b[:i])}
		}
	}
}

// ReadMem reads len(b) bytes of guest memory at addr.
func (c *Call) ReadMem(addr uint64, b []byte) error {
	if s, err := c.staged(addr, len(b)); s != nil || err != nil {
		copy(b, s)
		return err
	}
	n, err := readMem(c.th.Tid, addr, b)
	if err != nil {
		return err
	}
	if n != len(b) {
		return unix.EFAULT
	}
	return nil
}

// WriteMem writes b into guest memory at addr.
func (c *Call) WriteMem(addr uint64, b []byte) error {
	c.known = [2]prefetched{}
	if s, err := c.staged(addr, len(b)); s != nil || err != nil {
		copy(s, b)
		return err
	}
	return writeMem(c.th.Tid, addr, b)
}

// StageMem holds result b for guest memory at addr until the stop ends,
// when one write puts it there: ReadMem and WriteMem of that range see and
// change the held copy meanwhile. A result the tracer computes at entry
// (a stat it makes) is so patched by the layers' Exit (ExitNow: -0's
// owners, -l's link count) without a read and a write of guest memory per
// field. Where the final write fails, the call is answered EFAULT, as the
// kernel answers a bad buffer. Only a call answered at its entry (Return)
// stages.
func (c *Call) StageMem(addr uint64, b []byte) {
	c.known = [2]prefetched{}
	c.stage = append(c.stageBuf[:0], b...)
	c.stageBuf = c.stage
	c.stageAddr = addr
}

// staged is the part of the staged result that holds the n bytes of
// guest memory at addr, for ReadMem and WriteMem to use instead; nil where
// nothing is staged, or where the range is not all within it, after the
// staged result is written (err: that write's failure).
func (c *Call) staged(addr uint64, n int) ([]byte, error) {
	if c.stage == nil {
		return nil, nil
	}
	if addr < c.stageAddr || addr-c.stageAddr > uint64(len(c.stage)) || uint64(n) > uint64(len(c.stage))-(addr-c.stageAddr) {
		return nil, c.flushStage()
	}
	off := int(addr - c.stageAddr)
	return c.stage[off : off+n], nil
}

// flushStage writes the staged result into guest memory.
func (c *Call) flushStage() error {
	b := c.stage
	c.stage = nil
	return writeMem(c.th.Tid, c.stageAddr, b)
}

// endStage ends a stop's staging: the held result is written, or the call
// answered EFAULT where that fails.
func (c *Call) endStage() {
	if c.stage != nil && c.flushStage() != nil {
		c.Fail(unix.EFAULT)
	}
}

// Push copies b onto the guest stack below the red zone and returns its
// address. Data pushed during one call stays valid for that call. It is
// for structures, which the kernel may also write (results); strings go
// through PushString.
func (c *Call) Push(b []byte) (uint64, error) {
	c.known = [2]prefetched{}
	addr := (c.scratch - uint64(len(b))) &^ 15
	if err := writeMem(c.th.Tid, addr, b); err != nil {
		return 0, err
	}
	c.scratch = addr
	return addr, nil
}

// PushAddr returns the address the next Push of n bytes would write below
// the stack pointer.
func (c *Call) PushAddr(n int) uint64 { return (c.scratch - uint64(n)) &^ 15 }

// pushed reports whether v is an address Push or PushString handed out
// during this call.
func (c *Call) pushed(v uint64) bool {
	return v >= c.scratch && v < c.Regs.SP()-RedZone || c.slotTop > 1 && v >= c.slotCur && v < c.slotTop
}

// PushString copies s and a NUL into guest memory that no other guest
// thread writes, for the kernel to read (a path), and returns its address:
// the calling thread's slot of the loader's read-only scratch area
// (scratch.go), or the guest stack below the red zone. It stays valid for
// the call.
func (c *Call) PushString(s string) (uint64, error) {
	b := make([]byte, len(s)+1)
	copy(b, s)
	addr, err := c.PushInput(b)
	if err == nil {
		c.remember(addr, s)
	}
	return addr, err
}

// PushInput copies b, which the kernel only reads (a path, a struct
// sockaddr_un), where PushString copies strings, and returns its address.
func (c *Call) PushInput(b []byte) (uint64, error) {
	c.known = [2]prefetched{}
	if addr, ok := c.pushScratch(b); ok {
		return addr, nil
	}
	return c.Push(b)
}

// PushStrings is PushString for several strings with one write; it returns
// their addresses in order.
func (c *Call) PushStrings(ss ...string) ([]uint64, error) {
	n := 0
	for _, s := range ss {
		n += len(s) + 1
	}
	b := make([]byte, 0, n)
	offs := make([]uint64, len(ss))
	for i, s := range ss {
		offs[i] = uint64(len(b))
		b = append(append(b, s...), 0)
	}
	base, err := c.PushInput(b)
	if err != nil {
		return nil, err
	}
	for i := range offs {
		offs[i] += base
	}
	return offs, nil
}

// SetExec records the program an execve handler decided to run; the
// tracer hands it to the loader when the exec succeeds.
func (c *Call) SetExec(p *ExecPlan) { c.th.exec = p }

// Loader returns the host path of the loader executable.
func (c *Call) Loader() string { return c.t.cfg.Loader }
