package tracer

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// stoppedChild starts a traced child (PTRACE_TRACEME) from the locked
// calling thread and waits until it stops at its exec's SIGTRAP.
func stoppedChild(t *testing.T) int {
	t.Helper()
	sleep := "/bin/sleep"
	if _, err := os.Stat(sleep); err != nil {
		t.Skipf("no %s: %v", sleep, err)
	}
	cmd := exec.Command(sleep, "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start a traced child: %v", err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		unix.Kill(pid, unix.SIGKILL)
		var ws unix.WaitStatus
		unix.Wait4(pid, &ws, 0, nil)
	})
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil || !ws.Stopped() || ws.StopSignal() != unix.SIGTRAP {
		t.Fatalf("traced child: wait4: %v, status %#x, want a SIGTRAP stop", err, uint32(ws))
	}
	return pid
}

// refRegs and refSi are the reference answers, on the heap: never moved.
var (
	refRegs = new(Regs)
	refSi   = new(Siginfo)
)

// atDepth calls f with depth more small frames on the stack.
//
//go:noinline
func atDepth(depth int, f func()) {
	var pad [2]uintptr
	if depth > 0 {
		atDepth(depth-1, f)
		pad[0]++
	} else {
		f()
	}
	runtime.KeepAlive(pad)
}

// TestPtraceStackCopies checks that the ptrace requests that pass a
// pointer (registers, the syscall number on arm64, siginfo, syscall info)
// give the same answer into a stack variable at every stack depth, each
// time from a freshly shrunk stack: one of those depths makes the stack
// grow (and be copied) in the prologue of the function that issues the
// request. A uintptr made of the pointer before that point still names
// the old stack, and the kernel's answer lands there: arm64 read a call's
// number as 0 that way, and the call went untranslated.
func TestPtraceStackCopies(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	pid := stoppedChild(t)
	if err := getRegs(pid, refRegs); err != nil {
		t.Fatalf("getRegs: %v", err)
	}
	if err := getSiginfo(pid, refSi); err != nil {
		t.Fatalf("getSiginfo: %v", err)
	}
	if refSi.Signo != int32(unix.SIGTRAP) {
		t.Fatalf("siginfo signo %d, want SIGTRAP", refSi.Signo)
	}
	depths := 1500
	if testing.Short() {
		depths = 400
	}
	bad := 0
	for depth := 0; depth < depths && bad < 5; depth++ {
		runtime.GC() // shrinks this goroutine's stack back
		atDepth(depth, func() {
			var r Regs
			var si Siginfo
			if err := getRegs(pid, &r); err != nil {
				t.Errorf("depth %d: getRegs: %v", depth, err)
				bad++
				return
			}
			if r != *refRegs {
				t.Errorf("depth %d: getRegs into the stack read nr %d pc %#x, want nr %d pc %#x", depth, r.Nr(), r.PC(), refRegs.Nr(), refRegs.PC())
				bad++
			}
			if err := getSiginfo(pid, &si); err != nil || si.Signo != refSi.Signo || si.Code != refSi.Code {
				t.Errorf("depth %d: getSiginfo into the stack: %v, signo %d code %d, want %d %d", depth, err, si.Signo, si.Code, refSi.Signo, refSi.Code)
				bad++
			}
		})
	}
}

// TestFlightDump: the flight recorder keeps each task's last entries and
// prints them in the order they were recorded.
func TestFlightDump(t *testing.T) {
	tr := &Tracer{flight: &flight{rings: map[int]*flightRing{}}}
	n := len(flightRing{}.ents)
	for i := 0; i < n+3; i++ {
		tr.fly(1, "A", "%d", i)
		if i%100 == 0 {
			tr.fly(2, "B", "%d", i)
		}
	}
	var b strings.Builder
	tr.flight.dump(&b)
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if want := 1 + n + (n+2)/100 + 1; len(lines) != want {
		t.Fatalf("dump has %d lines, want %d:\n%s", len(lines), want, b.String())
	}
	if got, want := lines[1], "F 2 2 B 0"; got != want {
		t.Errorf("first entry %q, want %q (task 1's oldest entries are gone)", got, want)
	}
	if got, want := lines[len(lines)-1], fmt.Sprintf("F %d 1 A %d", n+3+(n+2)/100+1, n+2); got != want {
		t.Errorf("last entry %q, want %q", got, want)
	}
}
