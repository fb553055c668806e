package tracer_test

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/seccomp"
	"github.com/droidroot/droidroot/tracer"
	tt "github.com/droidroot/droidroot/tracer/tracertest"
)

// TestGuestPtraceHandlers: the guest ptrace handlers' answers to a process
// that traces nobody and whose parent is outside the guest (the harness's
// child): requests on non-tracees, attaching to itself or to a process
// outside the guest, PTRACE_TRACEME; and its waits, which go to the kernel
// untouched (one stop, not answered). The multi-process cases (stops, the
// emulated waits) are e2e's TestPtraceProbe and TestStrace.
func TestGuestPtraceHandlers(t *testing.T) {
	steps := []tt.Step{
		tt.Call("getpid"),
		tt.Call("ptrace", tt.Int(unix.PTRACE_TRACEME), tt.Int(0), tt.Int(0), tt.Int(0)),
		tt.Call("ptrace", tt.Int(unix.PTRACE_ATTACH), tt.Ret(0), tt.Int(0), tt.Int(0)),
		tt.Call("ptrace", tt.Int(unix.PTRACE_SEIZE), tt.Ret(0), tt.Int(0), tt.Int(unix.PTRACE_O_TRACESYSGOOD)),
		tt.Call("ptrace", tt.Int(unix.PTRACE_ATTACH), tt.Int(1), tt.Int(0), tt.Int(0)),
		tt.Call("ptrace", tt.Int(unix.PTRACE_ATTACH), tt.Int(0x3ffffff0), tt.Int(0), tt.Int(0)),
		tt.Call("ptrace", tt.Int(unix.PTRACE_CONT), tt.Ret(0), tt.Int(0), tt.Int(0)),
		tt.Call("ptrace", tt.Int(unix.PTRACE_PEEKDATA), tt.Ret(0), tt.Int(0), tt.Out(8)),
		tt.Call("ptrace", tt.Int(unix.PTRACE_INTERRUPT), tt.Ret(0), tt.Int(0), tt.Int(0)),
		tt.Call("wait4", tt.Int(-1), tt.Out(4), tt.Int(unix.WNOHANG), tt.Int(0)),
		tt.Call("waitid", tt.Int(unix.P_ALL), tt.Int(0), tt.Out(128), tt.Int(unix.WEXITED|unix.WNOHANG), tt.Int(0)),
		// A seize's arguments are checked before the target (EIO, not EPERM for itself).
		tt.Call("ptrace", tt.Int(unix.PTRACE_SEIZE), tt.Ret(0), tt.Int(8), tt.Int(0)),
		tt.Call("ptrace", tt.Int(unix.PTRACE_SEIZE), tt.Ret(0), tt.Int(0), tt.Int(1<<30)),
	}
	want := []unix.Errno{0, unix.EPERM, unix.EPERM, unix.EPERM, unix.EPERM, unix.ESRCH, unix.ESRCH, unix.ESRCH, unix.ESRCH, unix.ECHILD, unix.ECHILD, unix.EIO, unix.EIO}
	android, err := seccomp.LoadAndroidPolicy("16")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		android *seccomp.AndroidPolicy
	}{{"linux", nil}, {"android 16", android}} {
		t.Run(tc.name, func(t *testing.T) {
			r := tt.Run(t, tt.Options{Table: tracer.GuestPtrace(), Android: tc.android}, steps...)
			if len(r.Steps) != len(steps) {
				t.Fatalf("the child made %d of %d steps: %s", len(r.Steps), len(steps), r.Stderr)
			}
			for k, w := range want {
				if got := r.Steps[k].Errno(); got != w {
					t.Errorf("step %d (%s): %v, want %v", k, steps[k].Name, got, w)
				}
			}
			for _, k := range []int{9, 10} {
				s, ok := r.EntryOf(k)
				if !ok || s.Answered {
					t.Errorf("step %d (%s): stopped %v, answered %v; want one stop, left to the kernel", k, steps[k].Name, ok, s.Answered)
				}
			}
			for _, k := range []int{1, 2, 3, 4, 5, 6, 7, 8, 11, 12} {
				if s, ok := r.EntryOf(k); !ok || !s.Answered {
					t.Errorf("step %d (ptrace): stopped %v; want answered by the emulation", k, ok)
				}
			}
		})
	}
}

// TestGuestPtracePrctl: prctl(PR_SET_PTRACER) under Yama is answered by the
// emulation as yama_task_prctl answers it (0 to clear, for
// PR_SET_PTRACER_ANY or -1, and for a task that exists; EINVAL for one
// that does not); without Yama it is left to the kernel (which has no such
// option then); other options do not stop.
func TestGuestPtracePrctl(t *testing.T) {
	dir := t.TempDir()
	yama := filepath.Join(dir, "ptrace_scope")
	if err := os.WriteFile(yama, []byte("1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	steps := []tt.Step{
		tt.Call("getppid"),
		tt.Call("prctl", tt.Int(unix.PR_SET_PTRACER), tt.Int(0), tt.Int(0), tt.Int(0), tt.Int(0)),
		tt.Call("prctl", tt.Int(unix.PR_SET_PTRACER), tt.Int(-1), tt.Int(0), tt.Int(0), tt.Int(0)),
		tt.Call("prctl", tt.Int(unix.PR_SET_PTRACER), tt.Int(0xffffffff), tt.Int(0), tt.Int(0), tt.Int(0)),
		tt.Call("prctl", tt.Int(unix.PR_SET_PTRACER), tt.Ret(0), tt.Int(0), tt.Int(0), tt.Int(0)),
		tt.Call("prctl", tt.Int(unix.PR_SET_PTRACER), tt.Int(0x3ffffff0), tt.Int(0), tt.Int(0), tt.Int(0)),
		tt.Call("prctl", tt.Int(unix.PR_GET_DUMPABLE), tt.Int(0), tt.Int(0), tt.Int(0), tt.Int(0)),
	}
	t.Run("yama", func(t *testing.T) {
		r := tt.Run(t, tt.Options{Table: tracer.GuestPtrace(), YamaFile: yama}, steps...)
		if len(r.Steps) != len(steps) {
			t.Fatalf("the child made %d of %d steps: %s", len(r.Steps), len(steps), r.Stderr)
		}
		for k, w := range []unix.Errno{0, 0, 0, 0, 0, unix.EINVAL, 0} {
			if got := r.Steps[k].Errno(); got != w {
				t.Errorf("step %d: %v, want %v", k, got, w)
			}
		}
		for k := 1; k <= 5; k++ {
			if s, ok := r.EntryOf(k); !ok || !s.Answered {
				t.Errorf("step %d: stopped %v; want answered by the emulation", k, ok)
			}
		}
		if _, ok := r.EntryOf(6); ok || r.Steps[6].Ret != 1 {
			t.Errorf("PR_GET_DUMPABLE: stopped %v, got %d; want no stop, 1", ok, r.Steps[6].Ret)
		}
	})
	t.Run("no yama", func(t *testing.T) {
		r := tt.Run(t, tt.Options{Table: tracer.GuestPtrace(), YamaFile: filepath.Join(dir, "none")}, steps[:3]...)
		if len(r.Steps) != 3 {
			t.Fatalf("the child made %d of 3 steps: %s", len(r.Steps), r.Stderr)
		}
		for k := 1; k <= 2; k++ {
			if s, ok := r.EntryOf(k); !ok || s.Answered {
				t.Errorf("step %d: stopped %v, answered %v; want one stop, left to the kernel", k, ok, s.Answered)
			}
		}
	})
}

// traceGetppid is a seccomp filter that answers RET_TRACE|7 for getppid
// and lets every other call (and other arches) through.
func traceGetppid() []byte {
	nr, _ := seccomp.NativeABI(runtime.GOARCH).Nr("getppid")
	arch := uint32(unix.AUDIT_ARCH_X86_64)
	if runtime.GOARCH == "arm64" {
		arch = unix.AUDIT_ARCH_AARCH64
	}
	ins := []struct {
		op     uint16
		jt, jf uint8
		k      uint32
	}{
		{unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, 0, 0, 4},
		{unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, 1, 0, arch},
		{unix.BPF_RET | unix.BPF_K, 0, 0, unix.SECCOMP_RET_ALLOW},
		{unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, 0, 0, 0},
		{unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, 0, 1, uint32(nr)},
		{unix.BPF_RET | unix.BPF_K, 0, 0, unix.SECCOMP_RET_TRACE | 7},
		{unix.BPF_RET | unix.BPF_K, 0, 0, unix.SECCOMP_RET_ALLOW},
	}
	b := make([]byte, 8*len(ins))
	for i, in := range ins {
		binary.LittleEndian.PutUint16(b[8*i:], in.op)
		b[8*i+2], b[8*i+3] = in.jt, in.jf
		binary.LittleEndian.PutUint32(b[8*i+4:], in.k)
	}
	return b
}

// TestGuestSeccompFilter: a filter the guest installs (seccomp, or prctl
// PR_SET_SECCOMP) is followed: its RET_TRACE for getppid, with no emulated
// tracer asking for PTRACE_O_TRACESECCOMP, fails the call with ENOSYS, as
// the kernel does (the oracle), and other calls run.
func TestGuestSeccompFilter(t *testing.T) {
	for _, how := range []string{"seccomp", "prctl"} {
		t.Run(how, func(t *testing.T) {
			install := tt.Call("seccomp", tt.Int(unix.SECCOMP_SET_MODE_FILTER), tt.Int(0), tt.Fprog(traceGetppid()))
			if how == "prctl" {
				install = tt.Call("prctl", tt.Int(unix.PR_SET_SECCOMP), tt.Int(unix.SECCOMP_MODE_FILTER), tt.Fprog(traceGetppid()), tt.Int(0), tt.Int(0))
			}
			steps := []tt.Step{
				tt.Call("getppid"),
				tt.Call("prctl", tt.Int(unix.PR_SET_NO_NEW_PRIVS), tt.Int(1), tt.Int(0), tt.Int(0), tt.Int(0)),
				install,
				tt.Call("getppid"),
				tt.Call("getpid"),
			}
			r := tt.Run(t, tt.Options{Table: tracer.GuestPtrace()}, steps...)
			if len(r.Steps) != len(steps) {
				t.Fatalf("the child made %d of %d steps: %s", len(r.Steps), len(steps), r.Stderr)
			}
			if r.Steps[0].Ret <= 0 || r.Steps[2].Ret != 0 || r.Steps[3].Errno() != unix.ENOSYS || r.Steps[4].Ret <= 0 {
				t.Errorf("getppid %d, install %d, then getppid %d, getpid %d; want >0, 0, ENOSYS, >0",
					r.Steps[0].Ret, r.Steps[2].Ret, r.Steps[3].Ret, r.Steps[4].Ret)
			}
			if s, ok := r.EntryOf(2); !ok || s.Answered {
				t.Errorf("the install: stopped %v, answered %v; want a stop, run by the kernel", ok, s.Answered)
			}
			o := tt.Oracle(t, tt.OracleOptions{Root: "/"}, steps...)
			if len(o) != len(steps) || o[3].Errno() != unix.ENOSYS || o[2].Ret != 0 {
				t.Errorf("the kernel: %+v", o)
			}
		})
	}
}
