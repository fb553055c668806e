package tracer

import (
	"encoding/binary"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDecodeSigsys checks the _sigsys layout: call_addr at the start of the
// union, then the syscall number (signed) and the audit arch.
func TestDecodeSigsys(t *testing.T) {
	var si Siginfo
	si.Signo, si.Errno, si.Code = 31, 42, 1
	binary.LittleEndian.PutUint64(si.Union[0:], 0x7fff_1234_5678)
	binary.LittleEndian.PutUint32(si.Union[8:], 0xffffffff)
	binary.LittleEndian.PutUint32(si.Union[12:], 0xc000003e)
	want := sigsysInfo{callAddr: 0x7fff_1234_5678, nr: -1, arch: 0xc000003e, errno: 42, code: 1}
	if diff := cmp.Diff(want, decodeSigsys(&si), cmp.AllowUnexported(sigsysInfo{})); diff != "" {
		t.Errorf("decodeSigsys (-want +got):\n%s", diff)
	}
}

// TestRestartAnswer checks the register edits of a SIGSYS answer and of a
// restart: pc at the call address or on the syscall instruction, the new
// number where the instruction reads it, the kernel's number -1.
func TestRestartAnswer(t *testing.T) {
	const addr = 0x40_1000
	var r Regs
	r.answerAt(addr)
	if r.PC() != addr {
		t.Errorf("answerAt: pc %#x", r.PC())
	}
	r.restartAt(269, addr)
	if r.PC() != addr-SyscallInsnLen || r.Nr() != -1 || r.insnNr() != 269 {
		t.Errorf("restartAt: pc %#x nr %d insn nr %d", r.PC(), r.Nr(), r.insnNr())
	}
}
