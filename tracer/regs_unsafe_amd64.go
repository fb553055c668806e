package tracer

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// getRegs reads the registers of stopped thread tid.
func getRegs(tid int, r *Regs) error {
	return ptracePtr(unix.PTRACE_GETREGS, tid, 0, unsafe.Pointer(&r.r))
}

// putRegs writes back the registers of stopped thread tid.
func putRegs(tid int, r *Regs) error {
	return ptracePtr(unix.PTRACE_SETREGS, tid, 0, unsafe.Pointer(&r.r))
}

// maxPokes is how many changed registers putChangedRegs writes one by one:
// a PTRACE_POKEUSER of one register costs about a quarter of a
// PTRACE_SETREGS, which also writes back the segment registers and bases
// (docs/performance.md).
const maxPokes = 3

// nregs is the number of 64-bit words of the register set.
const nregs = int(unsafe.Sizeof(unix.PtraceRegs{}) / 8)

// putChangedRegs writes the registers of stopped thread tid that differ
// between was (what getRegs read at this stop, the kernel's values) and r:
// one PTRACE_POKEUSER each when at most maxPokes changed, else
// PTRACE_SETREGS.
func putChangedRegs(tid int, was, r *Regs) error {
	a := (*[nregs]uint64)(unsafe.Pointer(&was.r))
	b := (*[nregs]uint64)(unsafe.Pointer(&r.r))
	var idx [maxPokes]int
	n := 0
	for i := range b {
		if a[i] != b[i] {
			if n == maxPokes {
				return putRegs(tid, r)
			}
			idx[n] = i
			n++
		}
	}
	for _, i := range idx[:n] {
		if err := ptrace(unix.PTRACE_POKEUSR, tid, uintptr(i*8), uintptr(b[i])); err != nil {
			return err
		}
	}
	return nil
}
