package emul

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/fastpath"
	"github.com/droidroot/droidroot/tracer"
)

// fdGuard is the tracer's side of one library's descriptor guard word
// (fastpath.FlagFDGuard): one per memory, shared by the processes that
// share that memory (a vfork child and its parent). The word is
// epoch<<1, odd while the memory's threads may see more than one
// descriptor table: a child sharing the memory with a table of its own is
// running (vfork, posix_spawn), or for good once a thread of it has a table
// of its own (unshare(CLONE_FILES), a clone without CLONE_FILES) or its
// table is shared with another memory (clone(CLONE_FILES) without CLONE_VM).
// Every change to the guarded descriptors (a close, dup2 or dup3 onto
// fastpath.FDBase..FDEnd-1, a close_range) changes the epoch before the
// kernel runs it.
type fdGuard struct {
	pid    int    // the process whose memory holds the word (0: it left it)
	addr   uint64 // the word's address there
	epoch  uint32
	shares int  // children sharing the memory with a table of their own, running
	sticky bool // more than one table for good
}

// value is the word as the library reads it.
func (g *fdGuard) value() uint32 {
	v := g.epoch << 1
	if g.shares > 0 || g.sticky {
		v |= 1
	}
	return v
}

// bytes is value() as the word's bytes.
func (g *fdGuard) bytes() []byte {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], g.value())
	return b[:]
}

// change starts a new epoch and writes the word through write.
func (g *fdGuard) change(write func(addr uint64, b []byte) error) {
	g.epoch++
	write(g.addr, g.bytes())
}

// inGuarded reports whether descriptor v (the low word of an argument, as
// the kernel reads an int) is one the library may cache.
func inGuarded(v uint64) bool {
	return uint32(v) >= fastpath.FDBase && uint32(v) < fastpath.FDEnd
}

// guardedRange is the filter's test for the calls that change a guarded
// descriptor (argument arg).
func guardedRange(arg int) *tracer.ArgMask {
	return &tracer.ArgMask{Arg: arg, Min: fastpath.FDBase, Max: fastpath.FDEnd - 1}
}

// applyFDGuard traps the calls that change the library's descriptors (the
// filter tests the descriptor argument, so that ordinary closes cost no
// stop; close_range and unshare(CLONE_FILES), rare, always) and changes the
// guard word of the calling process's memory before the kernel runs them.
func (s *fastPathState) applyFDGuard(b *tableBuilder) {
	wrap := func(name string, onEnter func(c *tracer.Call), traceIf *tracer.ArgMask) {
		if _, ok := nativeNr(name); !ok {
			return // dup2 on arm64
		}
		h, ok := b.get(name)
		if !ok {
			b.set(name, tracer.Handler{Enter: onEnter, TraceIf: traceIf})
			return
		}
		enter := h.Enter
		h.Enter = func(c *tracer.Call) {
			onEnter(c)
			if enter != nil {
				enter(c)
			}
		}
		if h.TraceIf != nil {
			h.TraceIf = mergeTraceIf(h.TraceIf, traceIf)
		}
		b.set(name, h)
	}
	fdArg := func(arg int) func(c *tracer.Call) {
		return func(c *tracer.Call) {
			if inGuarded(c.Arg(arg)) {
				s.fdChange(c, false)
			}
		}
	}
	wrap("close", fdArg(0), guardedRange(0))
	wrap("dup2", fdArg(1), guardedRange(1))
	wrap("dup3", fdArg(1), guardedRange(1))
	wrap("close_range", func(c *tracer.Call) {
		if uint32(c.Arg(2))&closeRangeUnshare != 0 {
			s.fdChange(c, true)
		} else if uint32(c.Arg(1)) >= fastpath.FDBase && uint32(c.Arg(0)) < fastpath.FDEnd {
			s.fdChange(c, false)
		}
	}, nil)
	wrap("unshare", func(c *tracer.Call) {
		if c.Arg(0)&unix.CLONE_FILES != 0 {
			s.fdChange(c, true)
		}
	}, &tracer.ArgMask{Arg: 0, Mask: unix.CLONE_FILES})
}

// fdChange changes the guard word of c's process before its call changes a
// guarded descriptor; tables: the call gives the calling thread a table of
// its own (the memory's threads may then see two for good).
func (s *fastPathState) fdChange(c *tracer.Call, tables bool) {
	s.fdChangeIn(c.Pid(), tables, s.writer(c.Tracer()))
}

// memWriter writes b at addr in process pid's memory.
type memWriter func(pid int, addr uint64, b []byte) error

// fdChangeIn is fdChange for process pid.
func (s *fastPathState) fdChangeIn(pid int, tables bool, w memWriter) {
	p := s.procs[pid]
	if p == nil || p.guard == nil {
		return
	}
	if tables {
		p.guard.sticky = true
	}
	p.guard.change(w.in(pid))
}

// in is w for process pid.
func (w memWriter) in(pid int) func(addr uint64, b []byte) error {
	return func(addr uint64, b []byte) error { return w(pid, addr, b) }
}

// writer returns s.write, or t's WriteMem where s has none (tests give one).
func (s *fastPathState) writer(t *tracer.Tracer) memWriter {
	if s.write != nil {
		return s.write
	}
	if t == nil {
		return func(int, uint64, []byte) error { return nil }
	}
	return t.WriteMem
}

// guardFork follows a new process or thread (ev, EventFork) for the guard
// word of the parent's memory.
func (s *fastPathState) guardFork(ev *tracer.Event, parent, child *fastPathProc) {
	g := parent.guard
	if g == nil {
		return
	}
	write := s.writer(ev.Tracer()).in
	vm, files := ev.Flags&unix.CLONE_VM != 0, ev.Flags&unix.CLONE_FILES != 0
	switch {
	case child == nil: // a thread: same memory
		if !files {
			g.sticky = true
			g.change(write(ev.ParentPid))
		}
	case vm && files: // the same memory and table
		child.guard = g
	case vm: // the same memory, a copy of the table: odd while the child runs
		child.guard, child.guardShare = g, true
		g.shares++
		g.change(write(ev.ParentPid))
	default: // a copy of the memory: its own word
		child.guard = &fdGuard{pid: ev.Pid, addr: g.addr, epoch: g.epoch, sticky: g.sticky || files}
		child.guard.change(write(ev.Pid))
		if files { // one table, two memories
			g.sticky = true
			g.change(write(ev.ParentPid))
		}
	}
}

// guardLeave: p (pid) leaves its memory (exec, exit): a child that shared
// its parent's memory with a table of its own no longer makes it odd.
func (s *fastPathState) guardLeave(t *tracer.Tracer, p *fastPathProc) {
	g := p.guard
	switch {
	case g == nil:
	case p.guardShare:
		g.shares--
		if g.pid != 0 {
			g.change(s.writer(t).in(g.pid))
		}
	default:
		// The owner leaves the memory (a vfork child may still run in
		// it): never write its new image at this address.
		g.pid = 0
	}
	p.guard, p.guardShare = nil, false
}
