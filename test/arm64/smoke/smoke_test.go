//go:build linux && arm64

package smoke

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"unsafe"
)

// stage2Env makes the test binary, re-executed by TestSeccompTrace, install a seccomp filter and
// exec busybox instead of running tests (a Go child cannot run code between fork and exec).
const stage2Env = "DROIDROOT_SMOKE_STAGE2"

// init, not TestMain: init functions run on the main thread, the thread group leader the tracer
// follows, and the filter (per thread) must be installed by the thread that then execs.
func init() {
	if os.Getenv(stage2Env) == "1" {
		stage2() // does not return
	}
}

// busybox is the guest's /bin/busybox (the initramfs's, not the test rootfs's).
const busybox = "/bin/busybox"

func needBusybox(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(busybox); err != nil {
		t.Skipf("no %s (not in the arm64 VM?): %v", busybox, err)
	}
}

// TestHarnessSelfCheck fails on purpose when DROIDROOT_SMOKE_FAIL is set (e.g. on the kernel
// command line: `DROIDROOT_ARM64_APPEND=DROIDROOT_SMOKE_FAIL=1 test/arm64/run.sh`), to prove
// that a failing test fails the whole arm64 stage.
func TestHarnessSelfCheck(t *testing.T) {
	if v := os.Getenv("DROIDROOT_SMOKE_FAIL"); v != "" {
		t.Fatalf("deliberate failure (DROIDROOT_SMOKE_FAIL=%s)", v)
	}
}

func TestArch(t *testing.T) {
	if runtime.GOARCH != "arm64" {
		t.Fatalf("runtime.GOARCH = %q, want arm64", runtime.GOARCH)
	}
	var u syscall.Utsname
	if err := syscall.Uname(&u); err != nil {
		t.Fatal(err)
	}
	machine, release := cstr(u.Machine[:]), cstr(u.Release[:])
	t.Logf("uname: machine=%s release=%s", machine, release)
	if machine != "aarch64" {
		t.Fatalf("uname machine = %q, want aarch64", machine)
	}
}

// TestSeccompStatus: the kernel reports seccomp state (CONFIG_SECCOMP) and we start unfiltered.
func TestSeccompStatus(t *testing.T) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	var mode string
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "Seccomp") || strings.HasPrefix(line, "NoNewPrivs") {
			t.Log(line)
		}
		if v, ok := strings.CutPrefix(line, "Seccomp:"); ok {
			mode = strings.TrimSpace(v)
		}
	}
	if mode == "" {
		t.Fatal("no Seccomp: line in /proc/self/status (kernel without CONFIG_SECCOMP)")
	}
	if mode != "0" {
		t.Errorf("Seccomp: %s, want 0 (the test binary should run unfiltered)", mode)
	}
}

// TestPtraceChild traces busybox true from exec to exit, stopping at every syscall.
func TestPtraceChild(t *testing.T) {
	needBusybox(t)
	// ptrace requests must come from the thread that is the tracer (the one that forked).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	pid, err := syscall.ForkExec(busybox, []string{"true"}, &syscall.ProcAttr{
		Env:   []string{"PATH=/bin"},
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Ptrace: true},
	})
	if err != nil {
		t.Fatalf("ForkExec: %v", err)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)

	ws := wait(t, pid)
	if !ws.Stopped() || ws.StopSignal() != syscall.SIGTRAP {
		t.Fatalf("first stop: %s, want the exec SIGTRAP", describe(ws))
	}
	var regs syscall.PtraceRegs
	if err := syscall.PtraceGetRegs(pid, &regs); err != nil {
		t.Fatalf("PtraceGetRegs: %v", err)
	}
	t.Logf("after exec: pc=%#x sp=%#x", regs.Pc, regs.Sp)
	if regs.Pc == 0 || regs.Sp == 0 {
		t.Errorf("implausible registers after exec: pc=%#x sp=%#x", regs.Pc, regs.Sp)
	}
	if err := syscall.PtraceSetOptions(pid, syscall.PTRACE_O_TRACESYSGOOD|syscall.PTRACE_O_EXITKILL); err != nil {
		t.Fatalf("PtraceSetOptions: %v", err)
	}

	stops := 0
	for sig := 0; ; {
		if err := syscall.PtraceSyscall(pid, sig); err != nil {
			t.Fatalf("PtraceSyscall: %v", err)
		}
		ws = wait(t, pid)
		sig = 0
		switch {
		case ws.Exited():
			if ws.ExitStatus() != 0 {
				t.Errorf("busybox true exited %d", ws.ExitStatus())
			}
			if stops < 2 {
				t.Errorf("saw %d syscall stops, want at least entry+exit of exit_group", stops)
			}
			t.Logf("busybox true: %d syscall stops, exit 0", stops)
			return
		case ws.Signaled():
			t.Fatalf("busybox true: %s", describe(ws))
		case ws.Stopped() && ws.StopSignal() == syscall.SIGTRAP|0x80:
			stops++
		case ws.Stopped():
			sig = int(ws.StopSignal()) // a real signal: deliver it
		}
	}
}

// TestSeccompTrace is droidroot's mechanism in miniature: a child with a seccomp filter that
// returns SECCOMP_RET_TRACE for getppid execs busybox sh, whose startup calls getppid for $PPID;
// the tracer must get PTRACE_EVENT_SECCOMP with the filter's data and the syscall number in x8.
func TestSeccompTrace(t *testing.T) {
	needBusybox(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// The child is the test binary itself; its init() sees stage2Env and becomes stage 2.
	pid, err := syscall.ForkExec(exe, []string{exe}, &syscall.ProcAttr{
		Env:   []string{stage2Env + "=1", "PATH=/bin"},
		Files: []uintptr{0, w.Fd(), 2},
		Sys:   &syscall.SysProcAttr{Ptrace: true},
	})
	w.Close()
	if err != nil {
		t.Fatalf("ForkExec: %v", err)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)

	if ws := wait(t, pid); !ws.Stopped() || ws.StopSignal() != syscall.SIGTRAP {
		t.Fatalf("first stop: %s, want the exec SIGTRAP", describe(ws))
	}
	opts := syscall.PTRACE_O_TRACESECCOMP | syscall.PTRACE_O_TRACEEXEC | syscall.PTRACE_O_EXITKILL
	if err := syscall.PtraceSetOptions(pid, opts); err != nil {
		t.Fatalf("PtraceSetOptions: %v", err)
	}

	execs, seccompStops := 0, 0
	for sig := 0; ; {
		if err := syscall.PtraceCont(pid, sig); err != nil {
			t.Fatalf("PtraceCont: %v", err)
		}
		ws := wait(t, pid)
		sig = 0
		if ws.Exited() || ws.Signaled() {
			if !ws.Exited() || ws.ExitStatus() != 0 {
				t.Fatalf("stage 2: %s (exit 97-99: it could not install the filter or exec)", describe(ws))
			}
			break
		}
		if !ws.Stopped() {
			continue
		}
		if ws.StopSignal() != syscall.SIGTRAP {
			sig = int(ws.StopSignal()) // a real signal (e.g. the Go runtime's SIGURG): deliver it
			continue
		}
		switch ws.TrapCause() {
		case syscall.PTRACE_EVENT_EXEC:
			execs++
		case syscall.PTRACE_EVENT_SECCOMP:
			msg, err := syscall.PtraceGetEventMsg(pid)
			if err != nil {
				t.Fatalf("PtraceGetEventMsg: %v", err)
			}
			var regs syscall.PtraceRegs
			if err := syscall.PtraceGetRegs(pid, &regs); err != nil {
				t.Fatalf("PtraceGetRegs: %v", err)
			}
			if msg != seccompData || regs.Regs[8] != syscall.SYS_GETPPID {
				t.Errorf("seccomp stop: data %d nr %d, want %d and getppid (%d)",
					msg, regs.Regs[8], seccompData, syscall.SYS_GETPPID)
			}
			if execs > 0 { // stops before the exec would be the Go runtime of stage 2
				seccompStops++
			}
		}
	}
	out := new(bytes.Buffer)
	out.ReadFrom(r)
	t.Logf("execs=%d seccomp stops after exec=%d output=%q", execs, seccompStops, out.String())
	if execs != 1 {
		t.Errorf("saw %d exec events, want 1", execs)
	}
	if seccompStops < 1 {
		t.Errorf("no PTRACE_EVENT_SECCOMP for busybox sh's getppid (SECCOMP_RET_TRACE broken?)")
	}
	if !strings.HasPrefix(out.String(), "ppid=") || strings.TrimSpace(out.String()) == "ppid=" {
		t.Errorf("busybox sh printed %q, want ppid=N", out.String())
	}
}

// seccompData is the SECCOMP_RET_DATA of the filter's TRACE action (PTRACE_GETEVENTMSG reports it).
const seccompData = 42

// stage2 runs in the traced child: no_new_privs, a filter tracing getppid, exec busybox sh.
func stage2() {
	runtime.LockOSThread() // the filter and no_new_privs are per thread: exec from this one
	const (
		auditArchAarch64 = 0xc00000b7
		retTrace         = 0x7ff00000
		retAllow         = 0x7fff0000
		ldAbsW           = syscall.BPF_LD | syscall.BPF_W | syscall.BPF_ABS
		jeqK             = syscall.BPF_JMP | syscall.BPF_JEQ | syscall.BPF_K
		ret              = syscall.BPF_RET | syscall.BPF_K
		seccompModeFilt  = 2
	)
	filter := []syscall.SockFilter{
		{Code: ldAbsW, K: 4}, // seccomp_data.arch
		{Code: jeqK, K: auditArchAarch64, Jt: 0, Jf: 3},
		{Code: ldAbsW, K: 0}, // seccomp_data.nr
		{Code: jeqK, K: syscall.SYS_GETPPID, Jt: 0, Jf: 1},
		{Code: ret, K: retTrace | seccompData},
		{Code: ret, K: retAllow},
	}
	prog := syscall.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, syscall.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0); e != 0 {
		fail(97, "prctl(PR_SET_NO_NEW_PRIVS)", e)
	}
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_SECCOMP, seccompModeFilt,
		uintptr(unsafe.Pointer(&prog))); e != 0 {
		fail(98, "prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER)", e)
	}
	err := syscall.Exec(busybox, []string{"sh", "-c", "echo ppid=$PPID"}, []string{"PATH=/bin"})
	fail(99, "exec "+busybox, err)
}

func fail(code int, what string, err error) {
	fmt.Fprintf(os.Stderr, "smoke stage 2: %s: %v\n", what, err)
	os.Exit(code)
}

// TestRootfsProgs runs the harness's hello probe in its three link modes in the test rootfs
// (chroot, no tracer): the rootfs itself must be sound before droidroot is tested on it.
func TestRootfsProgs(t *testing.T) {
	root := os.Getenv("DROIDROOT_ROOTFS_BUSYBOX")
	if root == "" {
		t.Skip("DROIDROOT_ROOTFS_BUSYBOX not set")
	}
	if _, err := os.Stat(filepath.Join(root, "progs/hello-static")); err != nil {
		t.Skipf("no hello probe in the rootfs: %v", err)
	}
	for _, mode := range []string{"static", "static-pie", "dynamic"} {
		t.Run(mode, func(t *testing.T) {
			prog := "/progs/hello-" + mode
			cmd := exec.Command(prog, "5", "two words")
			cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root}
			cmd.Dir = "/"
			cmd.Env = []string{"PATH=/bin"}
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 5 {
				t.Fatalf("%s: err=%v, want exit status 5; output:\n%s", prog, err, out)
			}
			want := fmt.Sprintf("argv[0]=%s\nargv[1]=5\nargv[2]=two words\nexecfn=%s\n", prog, prog)
			if string(out) != want {
				t.Errorf("%s printed\n%s\nwant\n%s", prog, out, want)
			}
		})
	}
}

func wait(t *testing.T, pid int) syscall.WaitStatus {
	t.Helper()
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pid, &ws, syscall.WALL, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			t.Fatalf("wait4(%d): %v", pid, err)
		}
		return ws
	}
}

func describe(ws syscall.WaitStatus) string {
	switch {
	case ws.Exited():
		return fmt.Sprintf("exited %d", ws.ExitStatus())
	case ws.Signaled():
		return fmt.Sprintf("killed by %v", ws.Signal())
	case ws.Stopped():
		return fmt.Sprintf("stopped by %v (cause %d)", ws.StopSignal(), ws.TrapCause())
	}
	return fmt.Sprintf("status %#x", uint32(ws))
}

func cstr(b []int8) string {
	s := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		s = append(s, byte(c))
	}
	return string(s)
}
