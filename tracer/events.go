package tracer

import "golang.org/x/sys/unix"

// EventKind says what happened to a traced thread or process.
type EventKind int

// Process-tree events an emulation that keeps per-thread or per-process
// state can follow (Handler.Events).
const (
	// EventFork: Tid is a new task of process Pid, made by ParentTid of
	// process ParentPid with clone flags Flags (fork: Flags has no
	// CLONE_THREAD and Pid == Tid).
	EventFork EventKind = iota
	// EventExec: process Pid has exec'd a new program; its old mappings
	// are gone.
	EventExec
	// EventExiting: thread Tid is exiting (PTRACE_EVENT_EXIT, also after a
	// SIGKILL on Linux 6.x): its memory can still be read and written
	// through the Event's Call-like methods. It is not seen for a thread
	// that exits while droidroot is not tracing it.
	EventExiting
	// EventThreadGone: thread Tid has been reaped.
	EventThreadGone
	// EventProcessGone: the last thread of process Pid has been reaped
	// (after its EventThreadGone).
	EventProcessGone
	// EventGuestTraced: thread Tid of process Pid got an emulated tracer
	// (a guest's ptrace, guestptrace.go): in-process shortcuts that a
	// tracer would see through (the fast path library) must go off.
	EventGuestTraced
	// EventGuestTracer: process Pid (thread Tid) traces someone from now
	// on (a guest's ptrace): its waits must reach the wait handler, which
	// reports the emulated stops (in-process waits, the fast path's, end).
	// It comes before any emulated stop of the new tracee is pending.
	EventGuestTracer
)

// Event is one process-tree event.
type Event struct {
	Kind                 EventKind
	Tid, Pid             int
	ParentTid, ParentPid int
	Flags                uint64
	// Static (EventExec): the new program has no ELF interpreter, as
	// the exec's plan (Call.SetExec) says; false when droidroot did not
	// plan the exec.
	Static bool
	t      *Tracer
}

// Tracer returns the tracer the event comes from.
func (e *Event) Tracer() *Tracer { return e.t }

// ReadMem reads len(b) bytes of thread Tid's memory (EventExiting, EventFork).
func (e *Event) ReadMem(addr uint64, b []byte) error {
	n, err := readMem(e.Tid, addr, b)
	if err != nil {
		return err
	}
	if n != len(b) {
		return unix.EFAULT
	}
	return nil
}

// WriteMem writes b into thread Tid's memory.
func (e *Event) WriteMem(addr uint64, b []byte) error { return writeMem(e.Tid, addr, b) }

// emit runs every Events hook of the table.
func (t *Tracer) emit(e Event) {
	e.t = t
	for _, h := range t.hooks {
		h(&e)
	}
}

// options are the ptrace options of the first tracee: PTRACE_EVENT_EXIT
// stops only when a hook wants them.
func (t *Tracer) options() int {
	if t.exitStops {
		return ptraceOptions | unix.PTRACE_O_TRACEEXIT
	}
	return ptraceOptions
}

// exitingStop handles a PTRACE_EVENT_EXIT stop.
func (t *Tracer) exitingStop(th *Thread) {
	pid := th.Tid
	if th.Proc != nil {
		pid = th.Proc.Pid
	}
	t.emit(Event{Kind: EventExiting, Tid: th.Tid, Pid: pid})
	if t.ptEvent(th, unix.PTRACE_EVENT_EXIT) {
		return
	}
	t.resumeThread(th, unix.PTRACE_CONT, 0)
}

// Interrupt stops a running traced thread (PTRACE_INTERRUPT): a blocking
// syscall it is in returns -ERESTART* and is restarted when it resumes,
// unless a handler answers it. Emulations use it to make a thread look at
// memory again (a futex whose value changed).
// Call it on the tracer's thread.
func (t *Tracer) Interrupt(tid int) error {
	t.onTracerThread("Interrupt")
	if t.threads[tid] == nil {
		return unix.ESRCH
	}
	return ptrace(unix.PTRACE_INTERRUPT, tid, 0, 0)
}

// Threads calls f for every traced thread (tid and its process id). Call it
// on the tracer's thread.
func (t *Tracer) Threads(f func(tid, pid int)) {
	t.onTracerThread("Threads")
	for tid, th := range t.threads {
		if th.Proc != nil {
			f(tid, th.Proc.Pid)
		}
	}
}

// Traced reports whether tid is a traced thread. Call it on the tracer's
// thread.
func (t *Tracer) Traced(tid int) bool {
	t.onTracerThread("Traced")
	return t.threads[tid] != nil
}

// NumThreads returns how many threads are traced. Call it on the tracer's
// thread.
func (t *Tracer) NumThreads() int {
	t.onTracerThread("NumThreads")
	return len(t.threads)
}

// WriteMem writes b into the memory of traced thread tid (which may be
// running or parked).
func (t *Tracer) WriteMem(tid int, addr uint64, b []byte) error { return writeMem(tid, addr, b) }
