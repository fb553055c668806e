package tracer

import (
	"sort"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/seccomp"
)

// This file: the seccomp policy derived from the handler table and the
// classification of the calls without a handler.

// Classes classifies the native syscalls the handler table has no handler
// for. A name the table has a handler for is traced whatever Classes says.
type Classes struct {
	// Harmless names the calls that run untraced: they name no file.
	Harmless map[string]bool
	// Refused maps the calls droidroot refuses on purpose to the errno
	// the filter answers them with (SECCOMP_RET_ERRNO: no tracer stop).
	Refused map[string]unix.Errno
}

// Policy is the seccomp policy derived from the handler table: the
// filter traces exactly the syscalls that have handlers (those with
// Handler.TraceIf only when their argument says so), and lets those
// marked FromTrampoline through from the trampoline page (which the caller
// sets: Policy.Trampoline). With classes, it
// allows the harmless calls, answers the refused ones with their errno and
// every other number of the native ABI (one no table names, or above the
// newest) with ENOSYS; without (nil), every call without a handler is
// allowed.
func Policy(goarch string, table Table, classes *Classes) seccomp.Policy {
	abi := seccomp.NativeABI(goarch)
	rules := map[int]seccomp.Action{}
	p := seccomp.Policy{Rules: map[*seccomp.ABI]map[int]seccomp.Action{abi: rules}, AllowSkipped: true}
	if classes != nil {
		p.Default = seccomp.Errno(unix.ENOSYS)
		for name := range classes.Harmless {
			if nr, ok := abi.Nr(name); ok {
				rules[nr] = seccomp.Allow
			}
		}
		for name, errno := range classes.Refused {
			if nr, ok := abi.Nr(name); ok {
				rules[nr] = seccomp.Errno(errno)
			}
		}
	}
	for name, h := range table {
		nr, ok := abi.Nr(name)
		if !ok || h.Untraced {
			continue
		}
		if h.FromTrampoline {
			if p.TrampolineCalls == nil {
				p.TrampolineCalls = map[*seccomp.ABI]map[int]bool{abi: {}}
			}
			p.TrampolineCalls[abi][nr] = true
		}
		act := seccomp.TraceEntry
		if h.Exit != nil {
			act = seccomp.TraceExit
		}
		if h.TraceIf != nil {
			// Traced by argument; otherwise its class's action, allowed
			// without one (a translated call whose other calls name
			// nothing to translate: send() is sendto without an address).
			if p.ArgRules == nil {
				p.ArgRules = map[*seccomp.ABI]map[int]seccomp.ArgRule{abi: {}}
			}
			p.ArgRules[abi][nr] = seccomp.ArgRule{Arg: h.TraceIf.Arg, Mask: h.TraceIf.Mask, Min: h.TraceIf.Min, Max: h.TraceIf.Max, Action: act}
			if _, ok := rules[nr]; !ok && classes != nil {
				rules[nr] = seccomp.Allow
			}
			continue
		}
		rules[nr] = act
	}
	return p
}

// refusal returns the errno p answers native number nr with, if p refuses
// it: what the tracer answers in ptrace-only mode, where no filter does.
func refusal(p seccomp.Policy, goarch string, nr int) (unix.Errno, bool) {
	if nr < 0 {
		return 0, false // a skipped call, or the guest's syscall(-1)
	}
	act, ok := p.Rules[seccomp.NativeABI(goarch)][nr]
	if !ok {
		act = p.Default
	}
	return act.Errno()
}

// TracedNames lists the syscall names of table that exist on goarch, sorted.
func TracedNames(goarch string, table Table) []string {
	abi := seccomp.NativeABI(goarch)
	var names []string
	for name := range table {
		if _, ok := abi.Nr(name); ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}
