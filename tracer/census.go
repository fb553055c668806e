package tracer

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/seccomp"
)

// census counts the tracer's stops by kind (DROIDROOT_STOPS=1, a
// developer's and a launcher maintainer's tool): which calls and events of
// a workload leave the guest, to find what is worth answering elsewhere.
// Printed to stderr when the run ends, most frequent first.
type census struct {
	counts map[censusKey]int
	total  int
	// sites: also count each call by its call site (DROIDROOT_STOPS=sites,
	// census_sites.go) into bySite, naming addresses with sym.
	sites  bool
	bySite map[siteKey]int
	sym    symbolizer
}

// censusKey is one row of the census: a kind of stop and, for the kinds
// that are a system call, its number.
type censusKey struct {
	kind string // "seccomp", "sigsys", "loader", "syscall" or an event's name
	nr   int    // the system call's number; -1 for events
}

// Kinds of stops the census tells apart.
const (
	stopSeccomp = "seccomp" // a call the filter traps (PTRACE_EVENT_SECCOMP)
	stopSigsys  = "sigsys"  // a call Android's policy blocked (SIGSYS)
	stopLoader  = "loader"  // droidroot's loader opening a program it runs
	stopSyscall = "syscall" // a syscall-entry or -exit stop (PTRACE_SYSCALL)
)

// count adds one stop of kind for syscall nr (-1: not a syscall).
func (c *census) count(kind string, nr int) {
	if c == nil {
		return
	}
	if c.counts == nil {
		c.counts = map[censusKey]int{}
	}
	c.counts[censusKey{kind, nr}]++
	c.total++
}

// report prints the census, most frequent row first (ties by kind, then
// name), naming system calls by abi's table.
func (c *census) report(w io.Writer, abi *seccomp.ABI) {
	type row struct {
		kind, name string
		n          int
	}
	rows := make([]row, 0, len(c.counts))
	for k, n := range c.counts {
		name := ""
		if k.nr >= 0 {
			name = abi.SyscallName(k.nr)
		}
		rows = append(rows, row{k.kind, name, n})
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].n != rows[j].n {
			return rows[i].n > rows[j].n
		}
		if rows[i].kind != rows[j].kind {
			return rows[i].kind < rows[j].kind
		}
		return rows[i].name < rows[j].name
	})
	fmt.Fprintf(w, "droidroot: %d stops (DROIDROOT_STOPS=1), by kind and call:\n", c.total)
	for _, r := range rows {
		if r.name == "" {
			fmt.Fprintf(w, "%8d  %s\n", r.n, r.kind)
		} else {
			fmt.Fprintf(w, "%8d  %-8s  %s\n", r.n, r.kind, r.name)
		}
	}
	if c.sites {
		c.reportSites(w, abi)
	}
}

// countStop counts a stop by its wait status's signal and event: the
// events and signal-delivery stops. Calls are counted where they are
// decoded (countCall, sigsysStop).
func (t *Tracer) countStop(sig syscall.Signal, event int) {
	switch {
	case sig == unix.SIGTRAP|0x80 || sig == unix.SIGTRAP && event == unix.PTRACE_EVENT_SECCOMP:
		// a call: countCall, where its number is known
	case event != 0:
		t.census.count(eventName(event), -1)
	case sig != unix.SIGSYS:
		t.census.count("signal", -1) // a SIGSYS is sigsysStop's to count
	}
}

// countCall counts the call thread th stops at with registers r: the
// loader's opens, a filter's trap, or (ptrace-only mode, an exit wanted)
// a syscall stop.
func (t *Tracer) countCall(th *Thread, r *Regs) {
	switch {
	case th.loading && t.InLoader(r.PC()):
		t.census.count(stopLoader, r.Nr())
	case t.cfg.NoSeccomp:
		t.census.count(stopSyscall, r.Nr())
	default:
		t.census.count(stopSeccomp, r.Nr())
		if t.census.sites {
			t.census.countSite(stopSeccomp, r.Nr(), th.Tid, r.PC(), callerOf(th.Tid, r))
		}
	}
}

// eventName names a ptrace event stop for the census.
func eventName(event int) string {
	switch event {
	case unix.PTRACE_EVENT_FORK:
		return "fork"
	case unix.PTRACE_EVENT_VFORK:
		return "vfork"
	case unix.PTRACE_EVENT_CLONE:
		return "clone"
	case unix.PTRACE_EVENT_EXEC:
		return "exec"
	case unix.PTRACE_EVENT_EXIT:
		return "exit"
	case unix.PTRACE_EVENT_STOP:
		return "group-stop"
	}
	return "event" + strconv.Itoa(event)
}
