package seccomp

import "golang.org/x/sys/unix"

// rawSyscallCode makes the system call whose number is in X0 with a first
// argument of 0: "mov x8, x0; mov x0, #0; svc #0; ret".
var rawSyscallCode = []byte{
	0xe8, 0x03, 0x00, 0xaa, // mov x8, x0 (orr x8, xzr, x0)
	0x00, 0x00, 0x80, 0xd2, // mov x0, #0 (movz)
	0x01, 0x00, 0x00, 0xd4, // svc #0
	0xc0, 0x03, 0x5f, 0xd6, // ret
}

func syscallNr(regs *unix.PtraceRegs) uint64 { return regs.Regs[8] }
