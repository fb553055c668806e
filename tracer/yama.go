package tracer

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// This file: the Yama LSM's rules for the guest ptrace emulation
// (docs/ptrace.md, "Permissions"): ptrace_scope, read once, and the
// exceptions a process declares with prctl(PR_SET_PTRACER), which the
// emulation keeps itself (droidroot is the real tracer of every guest
// thread, so the kernel's own exceptions would change nothing).

// yamaScopeFile is where Yama publishes ptrace_scope; without the file
// there is no Yama.
const yamaScopeFile = "/proc/sys/kernel/yama/ptrace_scope"

// ptracerAny is PR_SET_PTRACER_ANY's exception: any process may attach.
const ptracerAny = -1

// prSetPtracerBit is a bit of PR_SET_PTRACER (0x59616d61, "Yama") that no
// common prctl option has (PR_SET_VMA shares it): the filter stops only
// the prctl calls with it (Handler.TraceIf).
const prSetPtracerBit = 0x40000000

// ptracer is one PR_SET_PTRACER exception of a tracee process: the task
// its declaration named (tid, or ptracerAny) and that task's process, whose
// descendants may attach. The exception ends when either task exits.
type ptracer struct {
	tid, pid int
}

// yamaScope reads Yama's ptrace_scope once: ok is false without Yama.
func (t *Tracer) yamaScope() (scope int, ok bool) {
	if !t.pt.yamaRead {
		t.pt.yamaRead = true
		file := t.cfg.YamaFile
		if file == "" {
			file = yamaScopeFile
		}
		if b, err := os.ReadFile(file); err == nil {
			if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				t.pt.yama, t.pt.scope = true, n
			}
		}
	}
	return t.pt.scope, t.pt.yama
}

// ptPrctl answers prctl(PR_SET_PTRACER) under Yama as yama_task_prctl
// does: 0 removes the calling process's exception, PR_SET_PTRACER_ANY (or
// -1 as an int) lets any process attach, a pid lets that task's process
// and its descendants attach (EINVAL when no such task exists). Without
// Yama the kernel answers (EINVAL); other options are not this handler's.
func (t *Tracer) ptPrctl(c *Call) {
	if c.Arg(0) != unix.PR_SET_PTRACER || c.th.Proc == nil {
		return
	}
	if _, ok := t.yamaScope(); !ok {
		return
	}
	me := c.th.Proc.Pid
	arg := c.Arg(1)
	switch {
	case arg == 0:
		delete(t.pt.ptracers, me)
	case arg == uint64(unix.PR_SET_PTRACER_ANY) || int32(arg) == -1:
		t.setPtracer(me, ptracer{tid: ptracerAny, pid: ptracerAny})
	default:
		tid := int(int32(arg))
		pid := t.tgidOf(tid)
		if pid <= 0 {
			c.Fail(unix.EINVAL)
			return
		}
		t.setPtracer(me, ptracer{tid: tid, pid: pid})
	}
	c.Return(0)
}

func (t *Tracer) setPtracer(tracee int, p ptracer) {
	if t.pt.ptracers == nil {
		t.pt.ptracers = map[int]ptracer{}
	}
	t.pt.ptracers[tracee] = p
}

// ptracersExited ends the exceptions of exited task tid: those it
// declared (as its process's leader) and those that named it.
func (t *Tracer) ptracersExited(tid int) {
	for tracee, p := range t.pt.ptracers {
		if tracee == tid || p.tid == tid {
			delete(t.pt.ptracers, tracee)
		}
	}
}

// tgidOf returns the thread group of task tid (0 if there is none): the
// guest's from the thread table, others' from /proc.
func (t *Tracer) tgidOf(tid int) int {
	if tid <= 0 {
		return 0
	}
	if th := t.threads[tid]; th != nil && th.Proc != nil {
		return th.Proc.Pid
	}
	if v, ok := procStatusField(tid, "Tgid:"); ok {
		n, _ := strconv.Atoi(v)
		return n
	}
	return 0
}

// parentOf returns the real parent process of process pid (0 if unknown):
// /proc's PPid, which follows reparenting (the kernel's real_parent).
func (t *Tracer) parentOf(pid int) int {
	if t.pt.parentOf != nil {
		return t.pt.parentOf(pid)
	}
	if v, ok := procStatusField(pid, "PPid:"); ok {
		n, _ := strconv.Atoi(v)
		return n
	}
	return 0
}

// capPtrace reports whether task tid has CAP_SYS_PTRACE in its effective
// set: its emulated credentials when droidroot emulates them (-0, -i, the
// set*id emulation), else its real ones (those droidroot runs with, as
// capset changed them).
func (t *Tracer) capPtrace(tid int) bool {
	if t.pt.capPtrace != nil {
		return t.pt.capPtrace(tid)
	}
	if th := t.threads[tid]; th != nil && t.cfg.Creds != nil {
		return th.creds.Capable(unix.CAP_SYS_PTRACE)
	}
	v, ok := procStatusField(tid, "CapEff:")
	if !ok {
		return false
	}
	caps, err := strconv.ParseUint(v, 16, 64)
	return err == nil && caps&(1<<unix.CAP_SYS_PTRACE) != 0
}

// procStatusField returns the value of a field of /proc/PID/status.
func procStatusField(pid int, field string) (string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return "", false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field); ok {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// descendant reports whether process pid is process anc or descends from
// it (task_is_descendant: real parents, up to the first process).
func (t *Tracer) descendant(pid, anc int) bool {
	for i := 0; i < 4096 && pid > 0; i++ {
		if pid == anc {
			return true
		}
		pid = t.parentOf(pid)
	}
	return false
}

// yamaMayAttach reports whether Yama lets task tid of process tracer
// attach to process tracee (yama_ptrace_access_check, PTRACE_MODE_ATTACH):
// with scope 1 a descendant, or a process the tracee's PR_SET_PTRACER
// exception names (or a descendant of it), or one with CAP_SYS_PTRACE;
// with scope 2 only CAP_SYS_PTRACE; with 3 nobody. No Yama, or scope 0:
// anyone.
func (t *Tracer) yamaMayAttach(tid, tracer, tracee int) bool {
	scope, ok := t.yamaScope()
	if !ok {
		return true
	}
	switch scope {
	case 0:
		return true
	case 1:
		if t.descendant(tracee, tracer) {
			return true
		}
		if p, ok := t.pt.ptracers[tracee]; ok && (p.pid == ptracerAny || t.descendant(tracer, p.pid)) {
			return true
		}
		return t.capPtrace(tid)
	case 2:
		return t.capPtrace(tid)
	}
	return false
}

// yamaMayTraceme reports whether Yama lets a task be traced by its parent,
// task parent (yama_ptrace_traceme): scope 2 needs the parent's
// CAP_SYS_PTRACE, scope 3 refuses.
func (t *Tracer) yamaMayTraceme(parent int) bool {
	scope, ok := t.yamaScope()
	switch {
	case !ok || scope < 2:
		return true
	case scope == 2:
		return t.capPtrace(parent)
	}
	return false
}
