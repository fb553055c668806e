package tracer

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/ident"
	"github.com/droidroot/droidroot/loader"
	"github.com/droidroot/droidroot/pathmap"
	"github.com/droidroot/droidroot/seccomp"
)

// Config is everything the tracer needs to run a guest command tree.
type Config struct {
	// Mapper translates guest paths.
	Mapper *pathmap.Mapper
	// Cwd is the guest's initial current directory (absolute guest path).
	Cwd string
	// CwdHost is the host directory of Cwd.
	CwdHost string
	// Path is the guest path of the program to run; Argv its arguments
	// (Argv[0] included) and Env its environment.
	Path string
	Argv []string
	Env  []string
	// Loader is the host path of the loader executable.
	Loader string
	// Stage2 is the host path of the program that installs the filter and
	// execs the guest (see Stage2Name): droidroot's own loader, which
	// does it without a second Go runtime start. "" re-executes droidroot.
	Stage2 string
	// Table holds the syscall handlers.
	Table Table
	// State is the per-run state the table's handlers share (emul's
	// Emulation, built with the table), handed to them by Call.State; nil
	// for none.
	State any
	// NoSeccomp makes every syscall stop (ptrace-only mode).
	NoSeccomp bool
	// KillOnExit kills every remaining tracee when the first process exits.
	KillOnExit bool
	// Verbose is the log level (PROOT_VERBOSE / -v).
	Verbose int
	// Log receives diagnostics; nil means os.Stderr.
	Log io.Writer
	// Creds, when set, are the first guest process's emulated credentials
	// (-0 / -i, or set*id emulation), which the loader publishes in the
	// auxiliary vector; nil starts from droidroot's real ones, unpublished.
	// The tracer keeps credentials per thread and applies exec's rules;
	// handlers reach them through Call.Creds.
	Creds *ident.Creds
	// Stdin, Stdout, Stderr are the guest's standard files (nil: ours).
	Stdin, Stdout, Stderr *os.File
	// Android is the Android app policy droidroot runs under (simulated
	// with --android-policy, or the device's own), or nil. With it, a
	// SIGSYS stop of a call the policy blocks is answered by the table's
	// handler for that call (see sigsysStop).
	Android *seccomp.AndroidPolicy
}

// Tracer runs and traces one guest command tree.
type Tracer struct {
	cfg      Config
	goarch   string
	handlers []*Handler // indexed by native syscall number
	threads  map[int]*Thread
	// first is the pid of the first guest process.
	first int
	// killed is set once --kill-on-exit has killed the rest of the tree.
	killed bool
	// loaderLo, loaderHi bound the loader's mapped image.
	loaderLo, loaderHi uint64
	// spin is how long waitNext polls before it blocks (0: never);
	// spinning is set while stops come quickly.
	spin     time.Duration
	spinning bool
	// flight is the flight recorder (DROIDROOT_FLIGHT=1), nil when off.
	flight     *flight
	lastStatus int
	warned     map[string]bool
	// awaiting are new tasks whose initial stop has not been reported yet
	// (see waitAwaiting).
	awaiting map[int]*Thread
	// hooks are the Events hooks of the table (events.go).
	hooks []func(*Event)
	// exitStops is set when a hook wants EventExiting.
	exitStops bool
}

// New prepares a tracer; nothing runs until Run.
func New(cfg Config) (*Tracer, error) {
	if cfg.Log == nil {
		cfg.Log = os.Stderr
	}
	t := &Tracer{cfg: cfg, goarch: runtime.GOARCH, threads: map[int]*Thread{}, warned: map[string]bool{}}
	t.spin = DefaultSpin
	if v, err := strconv.Atoi(os.Getenv("DROIDROOT_SPIN")); err == nil && v >= 0 {
		t.spin = time.Duration(v) * time.Microsecond
	}
	if flightOn() {
		t.flight = &flight{rings: map[int]*flightRing{}}
	}
	abi := seccomp.NativeABI(t.goarch)
	for name, h := range cfg.Table {
		nr, ok := abi.Nr(name)
		if !ok {
			continue // not a syscall of this architecture (e.g. open on arm64)
		}
		for len(t.handlers) <= nr {
			t.handlers = append(t.handlers, nil)
		}
		h := h
		t.handlers[nr] = &h
	}
	for _, h := range cfg.Table {
		if h.Events != nil {
			t.hooks = append(t.hooks, h.Events)
			t.exitStops = t.exitStops || h.ExitingEvents
		}
	}
	if cfg.Loader != "" {
		lo, hi, err := imageRange(cfg.Loader)
		if err != nil {
			return nil, fmt.Errorf("loader %s: %w", cfg.Loader, err)
		}
		t.loaderLo, t.loaderHi = lo, hi
	}
	return t, nil
}

// imageRange returns the address range the PT_LOAD segments of a
// fixed-address ELF file occupy.
func imageRange(path string) (lo, hi uint64, err error) {
	f, err := elf.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	lo = ^uint64(0)
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD {
			continue
		}
		lo = min(lo, p.Vaddr&^4095)
		hi = max(hi, p.Vaddr+p.Memsz)
	}
	if hi == 0 || f.Type != elf.ET_EXEC {
		return 0, 0, errors.New("not a fixed-address executable")
	}
	return lo, hi, nil
}

// Policy is the seccomp policy derived from the handler table: the
// filter traps exactly the syscalls that have handlers.
func Policy(goarch string, table Table) seccomp.Policy {
	abi := seccomp.NativeABI(goarch)
	rules := map[int]seccomp.Action{}
	for name, h := range table {
		nr, ok := abi.Nr(name)
		if !ok {
			continue
		}
		if h.Exit != nil {
			rules[nr] = seccomp.TraceExit
		} else {
			rules[nr] = seccomp.TraceEntry
		}
	}
	return seccomp.Policy{Rules: map[*seccomp.ABI]map[int]seccomp.Action{abi: rules}, AllowSkipped: true}
}

// TracedNames lists the syscall names of table that exist on goarch, sorted.
func TracedNames(goarch string, table Table) []string {
	abi := seccomp.NativeABI(goarch)
	var names []string
	for name := range table {
		if _, ok := abi.Nr(name); ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

func (t *Tracer) logf(level int, format string, args ...any) {
	if t.cfg.Verbose >= level {
		fmt.Fprintf(t.cfg.Log, "droidroot: "+format+"\n", args...)
	}
}

func (t *Tracer) warnOnce(key, format string, args ...any) {
	if t.warned[key] {
		return
	}
	t.warned[key] = true
	fmt.Fprintf(t.cfg.Log, "droidroot: "+format+"\n", args...)
}

// ptraceOptions are set on the first tracee and inherited by all others.
const ptraceOptions = unix.PTRACE_O_TRACESYSGOOD | unix.PTRACE_O_TRACEFORK |
	unix.PTRACE_O_TRACEVFORK | unix.PTRACE_O_TRACECLONE | unix.PTRACE_O_TRACEEXEC |
	unix.PTRACE_O_TRACESECCOMP | unix.PTRACE_O_EXITKILL

// ErrPtrace explains a failure to trace.
var ErrPtrace = errors.New("cannot trace the guest")

// Run starts the guest and traces it until every tracee has exited. It
// returns the exit status proot would: that of the last process that
// exited, 128+N for death by signal N.
func (t *Tracer) Run() (int, error) {
	// Every ptrace request must come from this thread: lock it for good.
	runtime.LockOSThread()
	if err := QuietStops(); err != nil {
		t.logf(1, "SA_NOCLDSTOP on SIGCHLD: %v", err)
	}

	var filter []byte
	if !t.cfg.NoSeccomp {
		prog, err := seccomp.Build(t.goarch, Policy(t.goarch, t.cfg.Table))
		if err != nil {
			return 1, fmt.Errorf("building the seccomp filter: %w", err)
		}
		raw, err := seccomp.Assemble(prog)
		if err != nil {
			return 1, fmt.Errorf("assembling the seccomp filter: %w", err)
		}
		filter = make([]byte, 8*len(raw))
		for i, ins := range raw {
			binary.LittleEndian.PutUint16(filter[8*i:], ins.Code)
			filter[8*i+2] = ins.Jt
			filter[8*i+3] = ins.Jf
			binary.LittleEndian.PutUint32(filter[8*i+4:], ins.K)
		}
	}

	pr, pw, err := os.Pipe()
	if err != nil {
		return 1, err
	}
	files := []uintptr{os.Stdin.Fd(), os.Stdout.Fd(), os.Stderr.Fd(), pr.Fd()}
	if t.cfg.Stdin != nil {
		files[0] = t.cfg.Stdin.Fd()
	}
	if t.cfg.Stdout != nil {
		files[1] = t.cfg.Stdout.Fd()
	}
	if t.cfg.Stderr != nil {
		files[2] = t.cfg.Stderr.Fd()
	}
	self := t.cfg.Stage2
	if self == "" {
		var err error
		if self, err = os.Executable(); err != nil {
			self = "/proc/self/exe"
		}
	}
	argv := append([]string{Stage2Name, t.cfg.Path}, t.cfg.Argv...)
	pid, err := syscall.ForkExec(self, argv, &syscall.ProcAttr{
		Dir:   t.cfg.CwdHost,
		Env:   t.cfg.Env,
		Files: files,
		Sys:   &syscall.SysProcAttr{Setpgid: false},
	})
	pr.Close()
	if err != nil {
		pw.Close()
		return 1, fmt.Errorf("starting the guest: %w", err)
	}
	if err := seize(pid, t.options()); err != nil {
		pw.Close()
		unix.Kill(pid, unix.SIGKILL)
		var ws unix.WaitStatus
		unix.Wait4(pid, &ws, 0, nil)
		return 1, fmt.Errorf("%w: ptrace(PTRACE_SEIZE) failed: %v (%s)", ErrPtrace, err, ptraceHint(err))
	}
	t.first = pid
	if t.cfg.NoSeccomp {
		// Stop stage 2 now so that PTRACE_SYSCALL applies from its exec on.
		if err := ptrace(unix.PTRACE_INTERRUPT, pid, 0, 0); err != nil {
			pw.Close()
			unix.Kill(pid, unix.SIGKILL)
			return 1, fmt.Errorf("%w: PTRACE_INTERRUPT: %v", ErrPtrace, err)
		}
	}
	proc := &Process{Pid: pid}
	th := &Thread{Tid: pid, Proc: proc, FS: &FS{Cwd: t.cfg.Cwd}, ready: true}
	if t.cfg.Creds != nil {
		th.creds = *t.cfg.Creds
	} else {
		th.creds = ident.Real()
	}
	t.threads[pid] = th
	// Hand stage 2 its filter; it installs it and execs the guest.
	var hdr [4]byte
	binary.LittleEndian.PutUint32(hdr[:], uint32(len(filter)))
	pw.Write(append(hdr[:], filter...))
	pw.Close()
	return t.loop()
}

func ptraceHint(err error) string {
	switch err {
	case unix.EPERM:
		return "ptrace is forbidden here: a container without CAP_SYS_PTRACE, a seccomp profile, or /proc/sys/kernel/yama/ptrace_scope = 3"
	case unix.ENOSYS:
		return "this kernel or emulator has no ptrace (qemu-user cannot run a tracer)"
	}
	return "check that ptrace is allowed"
}

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
		if th != nil && th.awaitInitial {
			th.awaitInitial = false
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
			// A new task whose parent's event has not arrived yet: keep
			// it stopped until it has, with the stop it reported (its
			// initial stop, or, where that stop is missing, its first
			// traced call), which forked() then handles.
			t.threads[tid] = &Thread{Tid: tid, stopped: true, held: ws}
			continue
		}
		t.dispatch(th, ws)
	}
	if t.flight != nil && t.lastStatus != 0 {
		t.flight.dump(os.Stderr)
	}
	return t.lastStatus, nil
}

// DefaultSpin is how long the tracer polls for the next stop before it
// blocks, while stops come quickly (see waitNext); DROIDROOT_SPIN=US
// changes it, 0 turns polling off. Measured on a 2-core VM: a trap with a
// do-nothing handler 17-20 us instead of 23-26, stat 33-35 instead of 37-42.
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
	if th.skipInitial && event != unix.PTRACE_EVENT_STOP {
		th.skipInitial = false // the thread ran: the initial stop will not be reported
	}
	if t.flight != nil {
		t.fly(th.Tid, "DISPATCH", "ws=%#x sig=%d event=%d op=%v pendingExit=%v", uint32(ws), sig, event, th.op != nil, th.pendingExit != nil)
	}
	if th.op != nil && t.opStop(th, sig, event) {
		return
	}
	switch {
	case sig == unix.SIGTRAP|0x80:
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
		if th.skipInitial && sig == unix.SIGTRAP {
			// The initial stop forked() already resumed, reported late.
			th.skipInitial = false
			if t.flight != nil {
				t.fly(th.Tid, "DROP", "late initial stop")
			}
			return
		}
		if !th.ready {
			th.stopped = true
			return
		}
		switch sig {
		case unix.SIGSTOP, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU:
			// Group stop: stay stopped but let SIGCONT through.
			resume(unix.PTRACE_LISTEN, th.Tid, 0)
		default:
			t.cont(th, 0)
		}
	default:
		if sig == unix.SIGSYS && t.sigsysStop(th) {
			return // a blocked call, answered
		}
		// Signal-delivery stop: deliver it.
		t.cont(th, sig)
	}
}

func (t *Tracer) cont(th *Thread, sig syscall.Signal) {
	req := t.resumeReq()
	if th.pendingExit != nil || th.op != nil || th.fix != nil {
		req = unix.PTRACE_SYSCALL
	}
	if t.flight != nil {
		t.fly(th.Tid, "CONT", "req=%d sig=%d", req, sig)
	}
	if err := resume(req, th.Tid, sig); err != nil && err != unix.ESRCH {
		t.logf(1, "resume %d: %v", th.Tid, err)
	}
}

func (t *Tracer) exited(tid int, th *Thread, ws unix.WaitStatus) {
	delete(t.threads, tid)
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
	t.lastStatus = status
	if tid == t.first && t.cfg.KillOnExit {
		t.killed = true
		for other := range t.threads {
			unix.Kill(other, unix.SIGKILL)
		}
	}
}

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
	ct := t.threads[child]
	wasStopped := ct != nil && ct.stopped
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
	}
	ct.inSyscall = th.inSyscall
	ct.creds = th.creds
	ct.ready = true
	if len(t.hooks) > 0 {
		t.emit(Event{Kind: EventFork, Tid: child, Pid: ct.Proc.Pid, ParentTid: th.Tid, ParentPid: th.Proc.Pid, Flags: flags})
	}
	if wasStopped {
		ct.stopped = false
		if held := ct.held; held.StopSignal() == unix.SIGTRAP && !initialStop(held) {
			// Not its initial stop: in the arm64 test VM a new thread was
			// seen to run without one (before ptracePtr fixed the stale
			// pointers, which may explain it), and this is its first
			// traced call, which must be translated, not just resumed.
			ct.held = 0
			t.dispatch(ct, held)
		} else {
			t.cont(ct, 0)
		}
	} else {
		// Its initial stop is still to come. In the arm64 test VM such a
		// stop was seen never to be reported by wait4, leaving the new
		// thread stopped for good (before ptracePtr: an event message
		// read as child 0 looks just like that): until a stop of it is
		// reported, the loop polls and resumes it itself (waitAwaiting).
		ct.awaitInitial = true
		if t.awaiting == nil {
			t.awaiting = map[int]*Thread{}
		}
		t.awaiting[child] = ct
	}
	t.cont(th, 0)
}

// initialStop tells whether stop status ws is a PTRACE_EVENT_STOP, as a
// new task's initial stop is.
func initialStop(ws unix.WaitStatus) bool { return int(ws)>>16&0xff == unix.PTRACE_EVENT_STOP }

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
// here; a late report of that stop is dropped (Thread.skipInitial). In any
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
			if st := stopStatus(&si); !initialStop(st) {
				t.logf(2, "task %d: stopped without an initial stop", tid)
				*ws = st
				return tid, nil
			}
			if resume(t.resumeReq(), tid, 0) == nil {
				t.logf(2, "task %d: its initial stop was not reported; resumed", tid)
				th.awaitInitial = false
				th.skipInitial = true
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

// seccompStop handles a PTRACE_EVENT_SECCOMP stop. Every traced call is
// of the native ABI (the filter traps the others, see foreignStop), so the
// registers are all the stop needs: entry or exit comes from the handler
// table, not from the filter's RET_DATA.
func (t *Tracer) seccompStop(th *Thread) {
	c := &th.call
	if err := getRegs(th.Tid, &c.Regs); err != nil {
		return
	}
	t.enter(th)
}

// enter runs the entry handler of the syscall th is stopped at.
func (t *Tracer) enter(th *Thread) {
	c := &th.call
	if t.flight != nil {
		t.fly(th.Tid, "ENTER", "%s loading=%v", t.flyArgs(th.Tid, &c.Regs), th.loading)
	}
	if th.loading {
		if pc := c.Regs.PC(); pc >= t.loaderLo && pc < t.loaderHi {
			t.cont(th, 0) // the loader opening the program: host paths
			return
		}
		th.loading = false
	}
	if th.isPretranslated(&c.Regs) {
		t.cont(th, 0) // restarted by SetNr at a SIGSYS stop: translated already
		return
	}
	nr := c.Regs.Nr()
	var h *Handler
	if nr >= 0 && nr < len(t.handlers) {
		h = t.handlers[nr]
	}
	if h == nil || t.blockedAtEntry(nr) {
		t.cont(th, 0)
		return
	}
	c.t = t
	c.Entry = c.Regs
	c.reset(th)
	c.undoRewrites()
	h.Enter(c)
	if th.op != nil {
		t.startOp(th, c, false, c.Entry.PC())
		return
	}
	if c.dirty {
		if err := putRegs(th.Tid, &c.Regs); err != nil {
			t.logf(1, "setregs %d: %v", th.Tid, err)
			if t.flight != nil {
				t.fly(th.Tid, "SETREGS", "%v", err)
			}
		}
		if t.flight != nil {
			t.flyCheck(th)
		}
	} else if t.flight != nil {
		t.fly(th.Tid, "CLEAN", "no register change")
	}
	if h.Exit != nil && !c.noExit {
		th.pendingExit = h
	}
	if t.cfg.NoSeccomp && t.cfg.Android != nil && c.skipped {
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
		th.skipEntryStop = false
		if syscallInfoOp(th.Tid) == syscallInfoEntry {
			t.cont(th, 0)
			return
		}
	}
	h := th.pendingExit
	if h == nil {
		t.cont(th, 0)
		return
	}
	if err := getRegs(th.Tid, &c.Regs); err == nil {
		c.dirty = false
		h.Exit(c)
		if c.dirty {
			putRegs(th.Tid, &c.Regs)
		}
	}
	th.pendingExit = nil
	t.cont(th, 0)
}

// execEvent handles PTRACE_EVENT_EXEC: the loader has just been exec'd;
// hand it the program to load.
func (t *Tracer) execEvent(th *Thread) {
	if former, err := eventMsg(th.Tid); err == nil && int(former) != th.Tid {
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
		t.emit(Event{Kind: EventExec, Tid: th.Tid, Pid: th.Proc.Pid})
	}
	// Other threads of the process are gone; the process gets its own FS.
	fs := *th.FS
	th.FS = &fs
	ids := t.execCreds(th)
	if plan == nil {
		t.cont(th, 0)
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
	script := loader.Script{Program: plan.ProgramHost, Interp: plan.InterpHost, ExecFn: plan.ExecFn, IDs: ids}.Encode(sp)
	addr := loader.Address(sp, len(script))
	if err := writeMem(th.Tid, addr, script); err != nil {
		t.warnOnce("script", "cannot hand the load script to process %d: %v", th.Tid, err)
		unix.Kill(th.Tid, unix.SIGKILL)
		return
	}
	r.SetEntryArg(addr)
	if err := putRegs(th.Tid, &r); err != nil {
		t.logf(1, "setregs %d: %v", th.Tid, err)
	}
	t.cont(th, 0)
}

// Process returns the traced process with thread-group id pid, or nil.
func (t *Tracer) Process(pid int) *Process {
	if th := t.threads[pid]; th != nil {
		return th.Proc
	}
	return nil
}

// WarnOnce prints a diagnostic the first time key is seen.
func (t *Tracer) WarnOnce(key, format string, args ...any) { t.warnOnce(key, format, args...) }

// ThreadFS returns the filesystem context of traced thread tid, or nil.
func (t *Tracer) ThreadFS(tid int) *FS {
	if th := t.threads[tid]; th != nil {
		return th.FS
	}
	return nil
}
