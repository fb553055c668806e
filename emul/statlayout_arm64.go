package emul

import "github.com/droidroot/droidroot/tracer"

// struct stat of arm64 (the generic layout, include/uapi/asm-generic/stat.h).
const (
	statNlinkOff  = 20
	statNlinkSize = 4
	statModeOff   = 16
	statSizeOff   = 48
)

// syscallInsnLen is the length of the svc instruction (restarts).
const syscallInsnLen = 4

// restartAtExit makes a thread at a syscall-exit stop run the same call
// again with its entry arguments: x0 (which holds the result) gets the
// first argument back and pc goes back to the svc; x8 still holds the
// number.
func restartAtExit(c *tracer.Call) {
	c.Return(int64(c.Arg(0)))
	c.Regs.SetPC(c.Regs.PC() - syscallInsnLen)
}
