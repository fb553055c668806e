package tracer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/ident"
	"github.com/droidroot/droidroot/loader"
	"github.com/droidroot/droidroot/seccomp"
)

// This file: starting the guest (Run) and what a failure to trace means.

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
	t.osThread = unix.Gettid()
	if err := QuietStops(); err != nil {
		t.logf(1, "SA_NOCLDSTOP on SIGCHLD: %v", err)
	}

	if name, pid := tracedByProot(); name != "" {
		return 1, fmt.Errorf("%w: droidroot runs inside %s (pid %d), which traces it: proot's ptrace emulation cannot run a tracer with a seccomp filter (run droidroot outside proot, or droidroot inside droidroot)", ErrPtrace, name, pid)
	}

	var filter []byte
	if !t.cfg.NoSeccomp {
		prog, err := seccomp.Build(t.goarch, t.policy)
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
	th := &Thread{Tid: pid, Proc: proc, FS: &FS{Cwd: t.cfg.Cwd}}
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
	if tracer := tracerPid(); err == unix.EPERM && tracer != 0 {
		return fmt.Sprintf("droidroot is itself traced (TracerPid %d): droidroot nested in droidroot or proot needs the outer one to emulate ptrace with seccomp stops (proot does not; droidroot does, but cannot map a second loader yet)", tracer)
	}
	switch err {
	case unix.EPERM:
		return "ptrace is forbidden here: a container without CAP_SYS_PTRACE, a seccomp profile, or /proc/sys/kernel/yama/ptrace_scope = 3"
	case unix.ENOSYS:
		return "this kernel or emulator has no ptrace (qemu-user cannot run a tracer)"
	}
	return "check that ptrace is allowed"
}

// tracerPid is the TracerPid of /proc/self/status: the process tracing
// droidroot, 0 for none.
func tracerPid() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "TracerPid:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// tracedByProot returns the name and pid of the proot that traces droidroot
// (TracerPid, named by its comm), or "" when there is none. A droidroot
// shipped as libproot.so has proot's name too: droidroot nested in droidroot
// runs in a process where the outer session's loader is mapped (the first
// loader variant is not free), and is not refused.
func tracedByProot() (string, int) {
	pid := tracerPid()
	if pid == 0 {
		return "", 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return "", 0
	}
	name := strings.TrimSpace(string(b))
	if name != "libproot.so" && !strings.HasPrefix(name, "proot") {
		return "", 0
	}
	if loader.FreeVariant() > 0 {
		return "", 0 // droidroot's loader is here: the tracer is droidroot
	}
	return name, pid
}
