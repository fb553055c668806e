package tracer

import (
	"debug/elf"

	"github.com/droidroot/droidroot/seccomp"
)

// This file and abi_amd64.go hold the facts of the host's syscall ABI that
// handlers need: the same names on each architecture.

// NativeABI returns the seccomp ABI of the host's native syscalls (aarch64).
func NativeABI() *seccomp.ABI { return seccomp.AArch64 }

// ELFMachine32 is the ELF machine of the host's 32-bit (compat) programs.
const ELFMachine32 = elf.EM_ARM

// ELFMachine is the ELF machine of the host's native programs.
const ELFMachine = elf.EM_AARCH64

// SyscallInsnLen is the length of the instruction that enters the kernel
// (svc).
const SyscallInsnLen = 4

// OLargefile is the kernel's O_LARGEFILE (golang.org/x/sys says 0 on 64-bit
// ABIs, as glibc does, but openat2 checks the kernel's bit).
const OLargefile = 0x20000

// The fields of struct stat that handlers patch, as arm64 lays it out (the
// generic layout, include/uapi/asm-generic/stat.h): offsets and sizes in
// bytes.
const (
	StatNlinkOff  = 20
	StatNlinkSize = 4
	StatModeOff   = 16
	// StatUIDOff is where st_uid lies (st_gid follows): st_dev, st_ino
	// (8 bytes each), st_mode, st_nlink (4 each).
	StatUIDOff  = 24
	StatSizeOff = 48
)

// RestartAtExit makes a thread at a syscall-exit stop run the same call
// again with its entry arguments: x0 (which holds the result) gets the
// first argument back and pc goes back to the svc; x8 still holds the
// number.
func (c *Call) RestartAtExit() {
	c.Return(int64(c.Arg(0)))
	c.Regs.SetPC(c.Regs.PC() - SyscallInsnLen)
}

// RestartAtExitAs makes a thread at a syscall-exit stop execute its svc
// again, with the argument registers as the handler set them, as call nr:
// pc goes back to the svc and x8 still holds the number, which nr must be
// (the number the guest's instruction named; x86_64 writes it back).
func (c *Call) RestartAtExitAs(nr int) {
	c.Regs.SetPC(c.Regs.PC() - SyscallInsnLen)
}
