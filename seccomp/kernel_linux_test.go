//go:build linux && (amd64 || arm64)

package seccomp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// childEnv makes the test binary act as the traced child of
// TestKernelFilter.
const childEnv = "DROIDROOT_SECCOMP_TEST_CHILD"

const pageSize = 4096

// Package initialization runs on the main thread, the only one the parent
// traces (threads the Go runtime creates later are not traced), so the
// child does its work here, before the testing package starts.
func init() {
	if os.Getenv(childEnv) != "1" {
		return
	}
	runtime.LockOSThread()
	if err := kernelChild(); err != nil {
		fmt.Fprintln(os.Stderr, "seccomp test child:", err)
		os.Exit(3)
	}
	os.Exit(0)
}

// rawFunc returns a Go func value that calls the machine code at code
// (test-only trick, no assembly file needed). A func value points to a
// word holding the code address; under Go's internal register ABI the
// argument and the result travel in the first integer register (RAX on
// amd64, R0 on arm64), which is where rawSyscallCode takes the number and
// leaves the result. The code touches no register Go reserves (R14/X15 on
// amd64, R28 on arm64) and no stack.
func rawFunc(code *byte) func(nr uintptr) uintptr {
	p := unsafe.Pointer(code)
	pp := &p
	return *(*func(uintptr) uintptr)(unsafe.Pointer(&pp))
}

// kernelChild installs a filter tracing getppid (entry) and getpgid (exit)
// with a trampoline page, and getpriority (entry) when bit 30 of its second
// argument's low word is set (an ArgRule), then makes the calls
// TestKernelFilter expects.
func kernelChild() error {
	ppid := uintptr(os.Getppid())
	pgid, err := unix.Getpgid(0)
	if err != nil {
		return err
	}
	// Page 0 is the trampoline, page 1 an ordinary executable page.
	mem, err := unix.Mmap(-1, 0, 2*pageSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return err
	}
	copy(mem, rawSyscallCode)
	copy(mem[pageSize:], rawSyscallCode)
	if err := unix.Mprotect(mem, unix.PROT_READ|unix.PROT_EXEC); err != nil {
		return err
	}
	inPage, nextPage := rawFunc(&mem[0]), rawFunc(&mem[pageSize])

	native := NativeABI(runtime.GOARCH)
	getppid, _ := native.Nr("getppid")
	getpgid, _ := native.Nr("getpgid")
	getpriority, _ := native.Nr("getpriority")
	getsid, _ := native.Nr("getsid")
	prog, err := Build(runtime.GOARCH, Policy{
		Rules: map[*ABI]map[int]Action{native: {getppid: TraceEntry, getpgid: TraceExit}},
		ArgRules: map[*ABI]map[int]ArgRule{native: {
			getpriority: {Arg: 1, Mask: 1 << 30, Action: TraceEntry},
			getsid:      {Arg: 0, Min: 1000, Max: 2000, Action: TraceEntry},
		}},
		Trampoline: uint64(uintptr(unsafe.Pointer(&mem[0]))),
	})
	if err != nil {
		return err
	}
	filter, err := Assemble(prog)
	if err != nil {
		return err
	}
	if err := Install(filter, unix.SECCOMP_FILTER_FLAG_TSYNC); err != nil {
		return err
	}

	check := func(what string, got, want uintptr) error {
		if got != want {
			return fmt.Errorf("%s = %d, want %d", what, int(got), int(want))
		}
		return nil
	}
	// Untraced: no stop.
	r, _, _ := unix.RawSyscall(unix.SYS_GETPID, 0, 0, 0)
	if err := check("getpid", r, uintptr(os.Getpid())); err != nil {
		return err
	}
	// Traced, entry: a stop with DataEntry.
	r, _, _ = unix.RawSyscall(unix.SYS_GETPPID, 0, 0, 0)
	if err := check("getppid", r, ppid); err != nil {
		return err
	}
	// Traced, exit: a stop with DataExit.
	r, _, _ = unix.RawSyscall(unix.SYS_GETPGID, 0, 0, 0)
	if err := check("getpgid", r, uintptr(pgid)); err != nil {
		return err
	}
	// Traced, from the trampoline page: no stop.
	if err := check("getppid from the trampoline", inPage(unix.SYS_GETPPID), ppid); err != nil {
		return err
	}
	// Traced, from the page after it: a stop with DataExit.
	if err := check("getpgid from the next page", nextPage(unix.SYS_GETPGID), uintptr(pgid)); err != nil {
		return err
	}
	// getpriority: traced only with bit 30 of who's low word (a missing
	// process: ESRCH); the high word is not looked at (the kernel takes
	// who as an int: 0, this process).
	for _, who := range []uintptr{0, 1 << 30, 1<<62 | 1<<30, 1 << 62} {
		unix.RawSyscall(unix.SYS_GETPRIORITY, unix.PRIO_PROCESS, who, 0)
	}
	// getsid: traced only for pids 1000-2000 of the low word (the kernel
	// takes pid as an int; whatever the answer).
	for _, pid := range []uintptr{999, 1000, 2000, 2001, 1<<32 | 1500, 1<<32 | 2001} {
		unix.RawSyscall(unix.SYS_GETSID, pid, 0, 0)
	}
	// amd64: x32 has no rules, so even from the trampoline page it traps
	// (SIGSYS) with DataUnsupportedABI. The result depends on the kernel's x32
	// support and does not matter.
	if runtime.GOARCH == "amd64" {
		inPage(x32SyscallBit | 39) // x32 getpid
	}
	return nil
}

type stop struct {
	Kind string // "TRACE" (PTRACE_EVENT_SECCOMP) or "TRAP" (SIGSYS)
	Nr   uint64 // syscall number at the stop
	Data uint64 // PTRACE_GETEVENTMSG, or the SIGSYS's si_errno
}

// TestKernelFilter installs a filter in a traced child process and checks
// the PTRACE_EVENT_SECCOMP stops the kernel reports.
func TestKernelFilter(t *testing.T) {
	if !Available() {
		t.Fatal("Available() = false on a kernel with seccomp filters")
	}
	runtime.LockOSThread() // ptrace requests must come from the tracing thread
	defer runtime.UnlockOSThread()

	pid, err := syscall.ForkExec(os.Args[0], []string{os.Args[0], "-test.run=^$"}, &syscall.ProcAttr{
		Env:   append(os.Environ(), childEnv+"=1", "GODEBUG=asyncpreemptoff=1"),
		Files: []uintptr{0, 1, 2},
		Sys:   &syscall.SysProcAttr{Ptrace: true, Pdeathsig: syscall.SIGKILL},
	})
	if errors.Is(err, syscall.EPERM) {
		t.Skipf("ptrace not permitted: %v", err)
	}
	if err != nil {
		t.Fatalf("ForkExec: %v", err)
	}
	watchdog := time.AfterFunc(60*time.Second, func() { syscall.Kill(pid, syscall.SIGKILL) })
	defer watchdog.Stop()

	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, unix.WALL, nil); err != nil || !ws.Stopped() || ws.StopSignal() != unix.SIGTRAP {
		t.Fatalf("first stop: status %#x, err %v; want SIGTRAP after exec", ws, err)
	}
	if err := unix.PtraceSetOptions(pid, unix.PTRACE_O_TRACESECCOMP|unix.PTRACE_O_EXITKILL); err != nil {
		t.Fatalf("PTRACE_SETOPTIONS: %v", err)
	}
	var stops []stop
	sig := 0
	for {
		if err := unix.PtraceCont(pid, sig); err != nil {
			t.Fatalf("PTRACE_CONT: %v", err)
		}
		sig = 0
		if _, err := unix.Wait4(pid, &ws, unix.WALL, nil); err != nil {
			t.Fatalf("wait4: %v", err)
		}
		if ws.Exited() || ws.Signaled() {
			break
		}
		if !ws.Stopped() {
			t.Fatalf("unexpected wait status %#x", ws)
		}
		if ws.StopSignal() == unix.SIGSYS {
			// RET_TRAP: record the call (si_syscall) and its data
			// (si_errno), and suppress the signal.
			var si [128]byte
			if _, _, e := unix.RawSyscall6(unix.SYS_PTRACE, unix.PTRACE_GETSIGINFO, uintptr(pid), 0,
				uintptr(unsafe.Pointer(&si[0])), 0, 0); e != 0 {
				t.Fatalf("PTRACE_GETSIGINFO: %v", e)
			}
			if code := int32(binary.LittleEndian.Uint32(si[8:])); code != 1 { // SYS_SECCOMP
				t.Fatalf("SIGSYS with si_code %d, want SYS_SECCOMP", code)
			}
			stops = append(stops, stop{Kind: "TRAP",
				Nr:   uint64(binary.LittleEndian.Uint32(si[24:])),
				Data: uint64(binary.LittleEndian.Uint32(si[4:]))})
			continue
		}
		if ws.StopSignal() != unix.SIGTRAP || ws.TrapCause() != unix.PTRACE_EVENT_SECCOMP {
			sig = int(ws.StopSignal()) // a signal for the child: deliver it
			if ws.StopSignal() == unix.SIGTRAP {
				sig = 0
			}
			continue
		}
		msg, err := unix.PtraceGetEventMsg(pid)
		if err != nil {
			t.Fatalf("PTRACE_GETEVENTMSG: %v", err)
		}
		var regs unix.PtraceRegs
		if err := unix.PtraceGetRegs(pid, &regs); err != nil {
			t.Fatalf("PTRACE_GETREGS: %v", err)
		}
		stops = append(stops, stop{Kind: "TRACE", Nr: syscallNr(&regs), Data: uint64(msg)})
	}
	if !ws.Exited() || ws.ExitStatus() != 0 {
		t.Errorf("child ended with status %#x (exit status %d, signal %v), want exit 0", ws, ws.ExitStatus(), ws.Signal())
	}

	want := []stop{
		{"TRACE", unix.SYS_GETPPID, DataEntry},
		{"TRACE", unix.SYS_GETPGID, DataExit},
		{"TRACE", unix.SYS_GETPGID, DataExit}, // from the page after the trampoline
		{"TRACE", unix.SYS_GETPRIORITY, DataEntry},
		{"TRACE", unix.SYS_GETPRIORITY, DataEntry},
		{"TRACE", unix.SYS_GETSID, DataEntry},
		{"TRACE", unix.SYS_GETSID, DataEntry},
		{"TRACE", unix.SYS_GETSID, DataEntry},
	}
	if runtime.GOARCH == "amd64" {
		want = append(want, stop{"TRAP", x32SyscallBit | 39, DataUnsupportedABI})
	}
	if diff := cmp.Diff(want, stops); diff != "" {
		t.Errorf("seccomp stops (-want +got):\n%s", diff)
	}
}

func TestInstallErrors(t *testing.T) {
	if err := Install(nil, 0); err == nil {
		t.Error("Install(nil) succeeded")
	}
	if err := Install(make([]unix.SockFilter, 1), unix.SECCOMP_FILTER_FLAG_NEW_LISTENER); err == nil {
		t.Error("Install with NEW_LISTENER succeeded")
	}
}
