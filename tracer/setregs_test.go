package tracer

import (
	"bytes"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSetRegsKillsOnFailure: registers the tracer cannot write must never leave the call
// running with the guest's own arguments: setRegs kills the whole process and says so. A
// thread that is gone is not an error.
func TestSetRegsKillsOnFailure(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var log bytes.Buffer
	tr := &Tracer{cfg: Config{Log: &log}, warned: map[string]bool{}}

	pid := stoppedChild(t)
	th := &Thread{Tid: pid, Proc: &Process{Pid: pid}}
	var r Regs
	if err := getRegs(pid, &r); err != nil {
		t.Fatalf("getRegs: %v", err)
	}
	invalidRegs(&r)
	if tr.setRegs(th, &r) {
		t.Fatal("setRegs of registers the kernel refuses reported success")
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil || !ws.Signaled() || ws.Signal() != unix.SIGKILL {
		t.Errorf("after a failed setRegs: wait4 %v, status %#x; want the process killed by SIGKILL", err, uint32(ws))
	}
	if !strings.Contains(log.String(), "cannot write the registers") {
		t.Errorf("no diagnostic: %q", log.String())
	}

	// A process that is not traced by us answers ESRCH, as a thread that is gone does.
	cmd := exec.Command("/bin/sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot start sleep: %v", err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	log.Reset()
	if tr.setRegs(&Thread{Tid: cmd.Process.Pid}, &r) {
		t.Error("setRegs of an untraced process reported success")
	}
	if err := unix.Kill(cmd.Process.Pid, 0); err != nil || log.Len() != 0 {
		t.Errorf("a gone thread: process alive %v, log %q; want it left alone, silently", err == nil, log.String())
	}
}

// TestSetChangedRegs: setChangedRegs writes exactly the registers that changed since they were
// read, one at a time when few did (PTRACE_POKEUSER on amd64) and all at once otherwise, and
// fails (killing the process) as setRegs does when the kernel refuses one.
func TestSetChangedRegs(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var log bytes.Buffer
	tr := &Tracer{cfg: Config{Log: &log}, warned: map[string]bool{}}
	pid := stoppedChild(t)
	th := &Thread{Tid: pid, Proc: &Process{Pid: pid}}
	var was Regs
	if err := getRegs(pid, &was); err != nil {
		t.Fatalf("getRegs: %v", err)
	}
	for _, n := range []int{0, 1, 3, 6} {
		r := was
		for i := 0; i < n; i++ {
			r.SetArg(i, 0x1000*uint64(n)+uint64(i))
		}
		if !tr.setChangedRegs(th, &was, &r) {
			t.Fatalf("%d changed: setChangedRegs failed: %s", n, log.String())
		}
		var got Regs
		if err := getRegs(pid, &got); err != nil {
			t.Fatalf("getRegs: %v", err)
		}
		if got.r != r.r {
			t.Errorf("%d changed: read back %+v, want %+v", n, got.r, r.r)
		}
		was = got
	}
	r := was
	invalidRegs(&r)
	if tr.setChangedRegs(th, &was, &r) {
		t.Fatal("setChangedRegs of a register the kernel refuses reported success")
	}
	var ws unix.WaitStatus
	if _, err := unix.Wait4(pid, &ws, 0, nil); err != nil || !ws.Signaled() || ws.Signal() != unix.SIGKILL {
		t.Errorf("after a failed setChangedRegs: wait4 %v, status %#x; want the process killed by SIGKILL", err, uint32(ws))
	}
}
