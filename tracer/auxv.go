package tracer

import (
	"encoding/binary"
	"errors"
)

// This file: the auxiliary vector a guest reads in /proc/PID/auxv.
//
// The kernel's /proc/PID/auxv is the vector it built for droidroot's
// loader (AT_ENTRY, AT_PHDR, AT_BASE of the loader). The loader rewrites
// the vector on the stack for the program it maps (loader.c), where a
// kernel exec would have put the program's: Auxv reads it there, from the
// stack pointer the exec gave the loader (argc, argv..., 0, envp..., 0,
// then the pairs).

// maxAuxv bounds the pairs read (the kernel has about 20, AT_VECTOR_SIZE 50).
const maxAuxv = 64

// maxStackPtrs bounds the argv and envp pointers skipped.
const maxStackPtrs = 1 << 20

var errNoAuxv = errors.New("auxiliary vector not known")

// Auxv returns the auxiliary vector of the program traced process pid runs,
// as /proc/PID/auxv shows it (pairs up to and with AT_NULL), read from the
// process's stack. Call it on the tracer's thread.
func (t *Tracer) Auxv(pid int) ([]byte, error) {
	t.onTracerThread("Auxv")
	th := t.threads[pid]
	if th == nil || th.Proc == nil || th.Proc.auxvSP == 0 {
		return nil, errNoAuxv
	}
	return readAuxv(th.Tid, th.Proc.auxvSP)
}

// readAuxv reads the auxiliary vector from the stack of task tid whose
// exec left sp at argc.
func readAuxv(tid int, sp uint64) ([]byte, error) {
	le := binary.LittleEndian
	var w [8]byte
	word := func(addr uint64) (uint64, error) {
		if n, err := readMem(tid, addr, w[:]); err != nil || n != 8 {
			if err == nil {
				err = errNoAuxv
			}
			return 0, err
		}
		return le.Uint64(w[:]), nil
	}
	argc, err := word(sp)
	if err != nil {
		return nil, err
	}
	if argc > maxStackPtrs {
		return nil, errNoAuxv
	}
	p := sp + 8 + (argc+1)*8 // envp
	// Skip envp in chunks.
	buf := make([]byte, 4096)
	for skipped := 0; ; {
		n, err := readMem(tid, p, buf)
		if n < 8 {
			if err == nil {
				err = errNoAuxv
			}
			return nil, err
		}
		i := 0
		for ; i+8 <= n; i += 8 {
			if le.Uint64(buf[i:]) == 0 {
				break
			}
		}
		p += uint64(i)
		skipped += i / 8
		if i+8 <= n {
			p += 8 // the envp terminator
			break
		}
		if skipped > maxStackPtrs {
			return nil, errNoAuxv
		}
	}
	out := make([]byte, 16*maxAuxv)
	n, err := readMem(tid, p, out)
	if n < 16 && err != nil {
		return nil, err
	}
	for i := 0; i+16 <= n; i += 16 {
		if le.Uint64(out[i:]) == 0 { // AT_NULL
			return out[:i+16], nil
		}
	}
	return nil, errNoAuxv
}
