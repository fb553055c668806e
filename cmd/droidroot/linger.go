package main

import (
	"os"
	"syscall"

	"github.com/droidroot/droidroot/pathmap"
	"github.com/droidroot/droidroot/tracer"
)

// lingerClose hands the last close of m's inotify descriptor to another
// process, so that droidroot's exit does not wait for it: the kernel frees
// the watches of an inotify instance's last close after an SRCU grace period
// (10-15 ms on a virtual machine, as long as a whole short run), and a
// process's descriptors are closed before its parent sees it exit. The
// lingering process is stage 2 (stage2, or droidroot itself re-executed as
// stage 2 where that is "") holding a duplicate of the descriptor, with no
// stdin, stdout or stderr: it waits on a pipe whose both ends it holds, for
// a filter that never comes, until droidroot's end kills it (its parent
// death signal, SIGKILL), which makes the last close. It dies by a signal
// so that a tracer running droidroot (droidroot or proot, whose status is
// the last one of a process that exited normally) does not take its status
// for the run's. Nothing of the guest runs there, and it is nobody's tracee.
// m's cache is closed either way; without a cache, or if the process cannot
// start, nothing else happens.
func lingerClose(m *pathmap.Mapper, stage2 string) {
	if m == nil {
		return
	}
	defer m.Close()
	fd := m.CacheFD()
	if fd < 0 {
		return
	}
	prog := stage2
	if prog == "" {
		self, err := os.Executable()
		if err != nil {
			return
		}
		prog = self
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return
	}
	closed := ^uintptr(0) // ForkExec closes these numbers in the child
	files := []uintptr{closed, closed, closed, pr.Fd(), uintptr(fd), pw.Fd()}
	syscall.ForkExec(prog, []string{tracer.Stage2Name}, &syscall.ProcAttr{Dir: "/", Env: []string{}, Files: files,
		Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}})
	pr.Close()
	pw.Close()
}
