package tracer

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

// TestStoppedStatus: the statuses of emulated stops are the kernel's, as the
// wait macros read them.
func TestStoppedStatus(t *testing.T) {
	tests := []struct {
		name  string
		sig   unix.Signal
		event int
		want  uint32
	}{
		{"syscall stop, TRACESYSGOOD", unix.SIGTRAP | 0x80, 0, 0x857f},
		{"syscall stop", unix.SIGTRAP, 0, 0x57f},
		{"signal stop", unix.SIGSTOP, 0, 0x137f},
		{"fork event", unix.SIGTRAP, unix.PTRACE_EVENT_FORK, 0x1057f},
		{"exit event", unix.SIGTRAP, unix.PTRACE_EVENT_EXIT, 0x6057f},
		{"group stop, seized", unix.SIGSTOP, unix.PTRACE_EVENT_STOP, 0x80137f},
	}
	for _, tc := range tests {
		ws := stoppedStatus(tc.sig, tc.event)
		if uint32(ws) != tc.want || !ws.Stopped() || ws.StopSignal() != tc.sig || int(ws)>>16 != tc.event {
			t.Errorf("%s: %#x, want %#x", tc.name, uint32(ws), tc.want)
		}
	}
}

// TestSyscallInfo: PTRACE_GET_SYSCALL_INFO's answer for an emulated stop
// has the kernel's layout and sizes.
func TestSyscallInfo(t *testing.T) {
	var r Regs
	r.SetNr(80)
	for i := 0; i < 6; i++ {
		r.SetArg(i, uint64(0x100+i))
	}
	r.SetPC(0x4000)
	le := binary.LittleEndian
	b := syscallInfo(ptSyscallEntry, &r, 0)
	if len(b) != 80 || b[0] != syscallInfoEntry || le.Uint32(b[4:]) != ptAuditArch || le.Uint64(b[8:]) != 0x4000 ||
		le.Uint64(b[24:]) != 80 || le.Uint64(b[32+8*(firstKeptArg+1):]) != uint64(0x100+firstKeptArg+1) {
		t.Errorf("entry: %x", b)
	}
	tests := []struct {
		ret   int64
		isErr byte
	}{{0, 0}, {42, 0}, {-int64(unix.ENOENT), 1}, {-4095, 1}, {-4096, 0}}
	for _, tc := range tests {
		r.SetRet(tc.ret)
		b := syscallInfo(ptSyscallExit, &r, 0)
		if len(b) != 33 || b[0] != syscallInfoExit || int64(le.Uint64(b[24:])) != tc.ret || b[32] != tc.isErr {
			t.Errorf("exit %d: %x", tc.ret, b)
		}
	}
	if b := syscallInfo(ptSignal, &r, 0); len(b) != 24 || b[0] != syscallInfoNone {
		t.Errorf("signal stop: %x", b)
	}
}

// TestWaitSel: which tracees a wait names (pid, process group, __WCLONE,
// __WALL), as the kernel's eligible_child decides.
func TestWaitSel(t *testing.T) {
	pg, _ := unix.Getpgid(0)
	me := unix.Getpid()
	tests := []struct {
		name       string
		sel        waitSel
		tid, pid   int
		clone, hit bool
	}{
		{"any, a process", waitSel{idtype: unix.P_ALL}, 10, 10, false, true},
		{"any, a thread needs __WALL", waitSel{idtype: unix.P_ALL}, 11, 10, true, false},
		{"any, __WALL", waitSel{idtype: unix.P_ALL, options: unix.WALL}, 11, 10, true, true},
		{"any, __WCLONE takes only clones", waitSel{idtype: unix.P_ALL, options: unix.WCLONE}, 10, 10, false, false},
		{"any, __WCLONE", waitSel{idtype: unix.P_ALL, options: unix.WCLONE}, 11, 10, true, true},
		{"pid", waitSel{idtype: unix.P_PID, id: 10}, 10, 10, false, true},
		{"other pid", waitSel{idtype: unix.P_PID, id: 12}, 10, 10, false, false},
		{"process group", waitSel{idtype: unix.P_PGID, id: pg}, me, me, false, true},
		{"other process group", waitSel{idtype: unix.P_PGID, id: pg + 1}, me, me, false, false},
		{"pidfd: left to the kernel", waitSel{idtype: unix.P_PIDFD, id: 3}, 10, 10, false, false},
	}
	for _, tc := range tests {
		if got := tc.sel.match(tc.tid, tc.pid, tc.clone); got != tc.hit {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.hit)
		}
	}
}

// TestPtEventWanted: each ptrace event stops only under its option.
func TestPtEventWanted(t *testing.T) {
	events := map[int]int{
		unix.PTRACE_EVENT_FORK: unix.PTRACE_O_TRACEFORK, unix.PTRACE_EVENT_VFORK: unix.PTRACE_O_TRACEVFORK,
		unix.PTRACE_EVENT_CLONE: unix.PTRACE_O_TRACECLONE, unix.PTRACE_EVENT_EXEC: unix.PTRACE_O_TRACEEXEC,
		unix.PTRACE_EVENT_EXIT: unix.PTRACE_O_TRACEEXIT,
	}
	for ev, opt := range events {
		if !ptEventWanted(opt, ev) || ptEventWanted(ptraceOptionsMask&^opt, ev) {
			t.Errorf("event %d with option %#x: wrong", ev, opt)
		}
	}
}
