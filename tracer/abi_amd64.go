package tracer

import (
	"debug/elf"

	"github.com/droidroot/droidroot/seccomp"
)

// This file and abi_arm64.go hold the facts of the host's syscall ABI that
// handlers need: the same names on each architecture.

// NativeABI returns the seccomp ABI of the host's native syscalls (x86_64).
func NativeABI() *seccomp.ABI { return seccomp.X86_64 }

// ELFMachine32 is the ELF machine of the host's 32-bit (compat) programs.
const ELFMachine32 = elf.EM_386

// ELFMachine is the ELF machine of the host's native programs.
const ELFMachine = elf.EM_X86_64

// SyscallInsnLen is the length of the instruction that enters the kernel
// (syscall).
const SyscallInsnLen = 2

// OLargefile is the kernel's O_LARGEFILE (golang.org/x/sys says 0 on 64-bit
// ABIs, as glibc does, but openat2 checks the kernel's bit).
const OLargefile = 0x8000

// The fields of struct stat that handlers patch, as x86_64 lays it out
// (arch/x86/include/uapi/asm/stat.h): offsets and sizes in bytes.
const (
	StatNlinkOff  = 16
	StatNlinkSize = 8
	StatModeOff   = 24
	// StatUIDOff is where st_uid lies (st_gid follows): st_dev, st_ino,
	// st_nlink (8 bytes each), st_mode (4).
	StatUIDOff  = 28
	StatSizeOff = 48
)

// RestartAtExit makes a thread at a syscall-exit stop run the same call
// again with its entry arguments: rax holds the number again and rip goes
// back to the syscall instruction.
func (c *Call) RestartAtExit() {
	c.Return(int64(c.Nr()))
	c.Regs.SetPC(c.Regs.PC() - SyscallInsnLen)
}

// RestartAtExitAs makes a thread at a syscall-exit stop execute its syscall
// instruction again, with the argument registers as the handler set them,
// as call nr: rip goes back to the instruction and rax, which holds the
// result, gets nr. nr must be the number the guest's instruction named
// (arm64 leaves the number register as it is).
func (c *Call) RestartAtExitAs(nr int) {
	c.Regs.SetPC(c.Regs.PC() - SyscallInsnLen)
	c.Return(int64(nr)) // rax holds the number the instruction takes
}
