package tracer

import (
	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/ident"
)

// FS is the filesystem context a group of threads shares (CLONE_FS): the
// guest's current directory.
type FS struct {
	// Cwd is the guest path of the current directory, absolute and clean,
	// once Pending is settled.
	Cwd string
	// Pending is a change of directory a thread was let make without a
	// syscall-exit stop (chdir, fchdir), nil when there is none. Readers
	// of Cwd settle it first (emul's guestCwd): the kernel's cwd tells
	// whether it happened.
	Pending *PendingCwd
	// Lost is set when the kernel's cwd is not known to be Cwd's host
	// directory: it lies outside the guest (Cwd is then "/"), or it could
	// not be read back (deeper than PATH_MAX after an fchdir). Paths are
	// then never made relative to it (pathmap.Proc.KernelCwd).
	Lost bool
	// Host is Cwd's host directory as /proc/<tid>/cwd read when Cwd was
	// last known right, "" when not read yet (emul's guestCwd reads it
	// then). When the kernel's cwd reads otherwise, the directory or an
	// ancestor was renamed or moved, by anyone, and Cwd follows it.
	Host string
	// HostToken, when HostTokenOf is Host, says that the lookup cache
	// watches Host's path since Host was last read back
	// (pathmap.Mapper.DirToken): while it reports no change, the kernel's
	// cwd is not read again.
	HostToken   any
	HostTokenOf string
}

// PendingCwd describes a chdir or fchdir whose result the tracer did not
// wait for.
type PendingCwd struct {
	// Tid is the thread that made the call.
	Tid int
	// Guest is the guest directory chdir goes to when it succeeds; "" for
	// fchdir, whose directory is read back from the kernel.
	Guest string
	// Host is Guest's host directory as /proc/<tid>/cwd reads when the
	// call succeeded; "" when that is too long to read, and then Dev and
	// Ino identify it.
	Host     string
	Dev, Ino uint64
}

// Process is the state of one thread group (a guest process).
type Process struct {
	// Pid is the thread-group id.
	Pid int
	// Exe is the guest path of the program the process runs, what
	// /proc/<pid>/exe must read as.
	Exe string
	// ExeHost is the host path of that program.
	ExeHost string
	// Parent is the process's real parent (0: outside the guest), and
	// ParentTid the thread that made it (guest ptrace: PTRACE_TRACEME).
	Parent, ParentTid int
	// SplitFS is set once a thread of the process has a filesystem
	// context of its own (a clone with CLONE_THREAD but not CLONE_FS):
	// its threads' cwds may differ.
	SplitFS bool
	// scratch says whether the process has the loader's scratch area
	// (scratch.go).
	scratch uint8
	// scratchAsked: droidroot's loader was asked to map the scratch area
	// at the process's last exec.
	scratchAsked bool
	// auxvSP is the stack pointer the exec gave the loader (argc, argv,
	// envp, then the auxiliary vector the loader rewrites for the
	// program); 0 when unknown (auxv.go).
	auxvSP uint64
}

// Thread is one traced kernel task.
type Thread struct {
	Tid  int
	Proc *Process
	FS   *FS

	// pendingExit is the handler whose Exit runs at the next
	// syscall-exit stop, with the Call state of its entry.
	pendingExit *Handler
	// inSyscall tracks entry/exit alternation in ptrace-only mode.
	inSyscall bool
	// loading is true from a successful exec until the first traced
	// syscall made outside the loader: the loader's own calls (opening the
	// program by its host path) are not translated.
	loading bool
	// exec is set by an execve handler and consumed at PTRACE_EVENT_EXEC.
	exec *ExecPlan
	// birth is where a new task is in its start-up (see birth); held is
	// the stop an orphan reported.
	birth birth
	held  unix.WaitStatus
	// rewrites remembers the arguments handlers rewrote in this thread's
	// last few translated calls (see undoRewrites).
	rewrites rewriteLog
	// heldFds are descriptors of the tracer's that a translated path of
	// this thread's last traced call names (Call.HoldFd): open until the
	// kernel has resolved it, closed at the thread's next traced call, its
	// exec or its end.
	heldFds []int
	call    Call
	// creds are the thread's emulated credentials (when Config.Creds is set).
	creds ident.Creds
	// op is a call that takes more than one stop to answer: parked
	// until woken, or running injected syscalls (op.go).
	op *threadOp
	// fix is the exit work of a call a handler restarted as another.
	fix *fixup
	// skipRegs, in ptrace-only mode under an Android policy, are the
	// registers of a call answered or restarted at its entry stop, to put
	// back at the SIGSYS that skipping it (number -1) causes.
	skipRegs *Regs
	// pretranslated is a restart whose arguments are translated already
	// (Call.SetNr at a SIGSYS stop).
	pretranslated *pretranslated
	// skipEntryStop: syscall stops until the entry of the call restarted
	// from a SIGSYS stop with an Exit pending (number restartNr) are not its
	// exit (seccomp mode, where syscall stops are otherwise only exits): a
	// signal handler may run first, and its calls stop too.
	skipEntryStop bool
	restartNr     int
	// pt is the thread's emulated tracer, nil when the guest traces it not
	// (guestptrace.go); ptWaiting is set while it is parked in an emulated
	// wait; sysOp is what its current syscall stop is (syscallInfoEntry or
	// Exit) when it has an emulated tracer.
	pt        *ptTracee
	ptWaiting bool
	// waitPassed: its last wait4/waitid went to the kernel as it was (its
	// process traced nobody then); it may still be blocked in it.
	waitPassed bool
	sysOp      int
	// gfilters are the seccomp filters the guest installed in this thread,
	// newest first (guestseccomp.go); gfilterNew is the one its current
	// seccomp call installs if it succeeds.
	gfilters   []*guestFilter
	gfilterNew *guestFilter
	// gfilterRestart is 1 + the number of the call droidroot restarted a
	// blocked call as at a SIGSYS stop (0: none): that call's seccomp stop
	// is droidroot's own, not the guest filter's.
	gfilterRestart int
	// slot is the thread's scratch slot (scratch.go), 0 for none yet.
	slot int
}

// birth is a new task's start-up, which the tracer learns of from two
// reports that come in either order: its parent's fork, vfork or clone
// event (forked) and its own first stop (wait4, or waitAwaiting's poll).
type birth uint8

const (
	// born: both reports seen (or the first guest process): an ordinary
	// thread.
	born birth = iota
	// orphan: its first stop came before its parent's event. It stays
	// stopped, with that stop in Thread.held, until forked() handles it.
	orphan
	// unreported: its parent's event came first and its initial stop has
	// not been reported yet; it is in Tracer.awaiting, polled by
	// waitAwaiting.
	unreported
	// resumedEarly: waitAwaiting found it in its initial stop and resumed
	// it; a late report of that stop is dropped (staleInitialReport).
	resumedEarly
)

// rewriteLog is a small ring of argument rewrites: which register of which
// syscall was changed from what guest value to what droidroot value.
type rewriteLog struct {
	next int
	ents [4]rewrite
}

type rewrite struct {
	nr       int
	arg      int
	from, to uint64
}

// ExecPlan is what an execve handler decided: the loader runs the program
// at ProgramHost with interpreter InterpHost, publishing ExecFn.
type ExecPlan struct {
	ProgramHost string // host path of the ELF program
	InterpHost  string // host path of its PT_INTERP, "" for static programs
	ExecFn      string // guest path for AT_EXECFN (the filename as passed to execve)
	Exe         string // guest path /proc/self/exe must show
	// Wakes are loader.FlagWakesProgram and FlagWakesInterp: the loader
	// makes the program's (interpreter's) FUTEX_WAKE calls stop (droidroot's
	// own loader only; another PROOT_LOADER gets none).
	Wakes uint64
}
