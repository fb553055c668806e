package tracer

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/seccomp"
)

// Stage2Name is argv[0] of the stage 2 that installs the filter and execs
// the guest: droidroot's loader (loader/csrc/loader.c, stage2_main), or,
// for a loader that is not droidroot's own, droidroot re-executed, whose
// main calls Stage2 when it sees the name.
const Stage2Name = "droidroot-stage2"

// Stage2 runs in the freshly started child: it waits on fd 3 until the
// tracer has attached and sent the filter, installs it and execs the guest
// program (os.Args[1]) with argv os.Args[2:]. The exec itself is the first
// traced call, so the guest path is translated like any other exec. A
// program the kernel cannot exec (ENOEXEC: a script without #!) runs as
// /bin/sh os.Args[1] os.Args[3:]..., as execvp runs it. It must run on the
// process's main thread, the one the tracer seized (the caller's init locks
// it there: runtime.LockOSThread); elsewhere it exits 125.
func Stage2() {
	f := os.NewFile(3, "stage2")
	var hdr [4]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		// The tracer died before attaching: never run untraced.
		os.Exit(125)
	}
	n := binary.LittleEndian.Uint32(hdr[:])
	raw := make([]byte, n)
	if _, err := io.ReadFull(f, raw); err != nil {
		os.Exit(125)
	}
	f.Close()
	if unix.Gettid() != unix.Getpid() {
		// Not the thread the tracer seized (main's init locks it there):
		// a filter installed here would not be the exec's.
		fmt.Fprintf(os.Stderr, "droidroot: stage 2 runs on thread %d, not its main thread %d\n", unix.Gettid(), unix.Getpid())
		os.Exit(125)
	}
	if n > 0 {
		prog := make([]unix.SockFilter, n/8)
		for i := range prog {
			prog[i] = unix.SockFilter{
				Code: binary.LittleEndian.Uint16(raw[8*i:]),
				Jt:   raw[8*i+2],
				Jf:   raw[8*i+3],
				K:    binary.LittleEndian.Uint32(raw[8*i+4:]),
			}
		}
		if err := seccomp.Install(prog, 0); err != nil {
			fmt.Fprintf(os.Stderr, "droidroot: %v\n", err)
			os.Exit(125)
		}
	}
	if len(os.Args) < 3 {
		os.Exit(125)
	}
	err := syscall.Exec(os.Args[1], os.Args[2:], os.Environ())
	if err == syscall.ENOEXEC {
		// A script without #!: run it with /bin/sh, as execvp does.
		syscall.Exec("/bin/sh", append([]string{"/bin/sh", os.Args[1]}, os.Args[3:]...), os.Environ())
	}
	fmt.Fprintf(os.Stderr, "droidroot: %s: %v\n", os.Args[1], err)
	switch err {
	case syscall.ENOENT:
		os.Exit(127)
	default:
		os.Exit(126)
	}
}
