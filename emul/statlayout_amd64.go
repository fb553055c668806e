package emul

import "github.com/droidroot/droidroot/tracer"

// struct stat of x86_64 (arch/x86/include/uapi/asm/stat.h).
const (
	statNlinkOff  = 16
	statNlinkSize = 8
	statModeOff   = 24
	statSizeOff   = 48
)

// syscallInsnLen is the length of the syscall instruction (restarts).
const syscallInsnLen = 2

// restartAtExit makes a thread at a syscall-exit stop run the same call
// again with its entry arguments: rax holds the number again and rip goes
// back to the syscall instruction.
func restartAtExit(c *tracer.Call) {
	c.Return(int64(c.Nr()))
	c.Regs.SetPC(c.Regs.PC() - syscallInsnLen)
}
