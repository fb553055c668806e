package tracer

import (
	"encoding/binary"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// filterBytes assembles a classic BPF program as struct sock_filter[].
func filterBytes(t *testing.T, insns ...bpf.Instruction) []byte {
	t.Helper()
	raw, err := bpf.Assemble(insns)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 8*len(raw))
	for i, r := range raw {
		binary.LittleEndian.PutUint16(b[8*i:], r.Op)
		b[8*i+2], b[8*i+3] = r.Jt, r.Jf
		binary.LittleEndian.PutUint32(b[8*i+4:], r.K)
	}
	return b
}

// nrFilter answers ret for syscall nr of the native arch, allow otherwise.
func nrFilter(t *testing.T, nr int, ret uint32) *guestFilter {
	f := newGuestFilter(filterBytes(t,
		bpf.LoadAbsolute{Off: 4, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: ptAuditArch, SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
		bpf.LoadAbsolute{Off: 0, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(nr), SkipFalse: 1},
		bpf.RetConstant{Val: ret},
		bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
	))
	if f == nil {
		t.Fatal("the filter does not decode")
	}
	return f
}

// TestGuestVerdict: the guest's filters answer as the kernel's stack does:
// the strictest action wins (KILL_PROCESS, 0x80000000, is the strictest:
// actions compare as signed), and among equal actions the newest filter's
// data.
func TestGuestVerdict(t *testing.T) {
	var r Regs
	r.SetNr(39)
	older := nrFilter(t, 39, unix.SECCOMP_RET_TRACE|1)
	newer := nrFilter(t, 39, unix.SECCOMP_RET_TRACE|2)
	errno := nrFilter(t, 39, unix.SECCOMP_RET_ERRNO|1)
	kill := nrFilter(t, 39, unix.SECCOMP_RET_KILL_PROCESS)
	other := nrFilter(t, 40, unix.SECCOMP_RET_TRACE|3)
	for _, tc := range []struct {
		name string
		fs   []*guestFilter
		want uint32
	}{
		{"one", []*guestFilter{older}, unix.SECCOMP_RET_TRACE | 1},
		{"the newest among equals", []*guestFilter{newer, older}, unix.SECCOMP_RET_TRACE | 2},
		{"the strictest", []*guestFilter{newer, errno, older}, unix.SECCOMP_RET_ERRNO | 1},
		{"kill process", []*guestFilter{errno, kill}, unix.SECCOMP_RET_KILL_PROCESS},
		{"another call's", []*guestFilter{other}, unix.SECCOMP_RET_ALLOW},
		{"an undecodable one is left out", []*guestFilter{nil, older}, unix.SECCOMP_RET_TRACE | 1},
	} {
		if got, ok := guestVerdict(tc.fs, &r); !ok || got != tc.want {
			t.Errorf("%s: %#x %v, want %#x", tc.name, got, ok, tc.want)
		}
	}
	if _, ok := guestVerdict(nil, &r); ok {
		t.Error("no filter: a verdict")
	}
}

// TestSeccompData: a filter reads struct seccomp_data's native words: the
// number, the arch, both halves of the instruction pointer and of an
// argument.
func TestSeccompData(t *testing.T) {
	var r Regs
	r.SetNr(7)
	r.SetPC(0x1122334455667788)
	r.SetArg(firstKeptArg+1, 0xaabbccdd00000001)
	for _, tc := range []struct {
		off  uint32
		want uint32
	}{{0, 7}, {4, ptAuditArch}, {8, 0x55667788}, {12, 0x11223344},
		{16 + 8*uint32(firstKeptArg+1), 1}, {20 + 8*uint32(firstKeptArg+1), 0xaabbccdd}} {
		f := newGuestFilter(filterBytes(t,
			bpf.LoadAbsolute{Off: tc.off, Size: 4},
			bpf.JumpIf{Cond: bpf.JumpEqual, Val: tc.want, SkipTrue: 1},
			bpf.RetConstant{Val: unix.SECCOMP_RET_ALLOW},
			bpf.RetConstant{Val: unix.SECCOMP_RET_TRACE},
		))
		if got, _ := guestVerdict([]*guestFilter{f}, &r); got != unix.SECCOMP_RET_TRACE {
			t.Errorf("the word at %d is not %#x", tc.off, tc.want)
		}
	}
}

// TestSyscallInfoSeccomp: PTRACE_GET_SYSCALL_INFO at a seccomp stop: op 3,
// the number, the arguments and the filter's data, 84 bytes.
func TestSyscallInfoSeccomp(t *testing.T) {
	var r Regs
	r.SetNr(80)
	for i := 0; i < 6; i++ {
		r.SetArg(i, uint64(0x100+i))
	}
	b := syscallInfo(ptSeccomp, &r, 0x42)
	le := binary.LittleEndian
	if len(b) != 84 || b[0] != syscallInfoSeccomp || le.Uint64(b[24:]) != 80 ||
		le.Uint64(b[32+8*(firstKeptArg+1):]) != uint64(0x100+firstKeptArg+1) || le.Uint32(b[80:]) != 0x42 {
		t.Errorf("seccomp: %x", b)
	}
}

// TestMayTrace: a filter that never answers RET_TRACE (a sandbox's) makes
// no verdict run; one that returns its accumulator may.
func TestMayTrace(t *testing.T) {
	errno := nrFilter(t, 39, unix.SECCOMP_RET_ERRNO|1)
	trace := nrFilter(t, 39, unix.SECCOMP_RET_TRACE)
	retA := newGuestFilter(filterBytes(t, bpf.LoadConstant{Dst: bpf.RegA, Val: unix.SECCOMP_RET_ALLOW}, bpf.RetA{}))
	if mayTrace([]*guestFilter{errno}) || !mayTrace([]*guestFilter{errno, trace}) || !mayTrace([]*guestFilter{retA}) || mayTrace(nil) {
		t.Error("wrong")
	}
}
