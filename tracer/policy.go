package tracer

import (
	"sort"

	"github.com/droidroot/droidroot/seccomp"
)

// This file: the seccomp policy derived from the handler table.

// Policy is the seccomp policy derived from the handler table: the
// filter traces exactly the syscalls that have handlers.
func Policy(goarch string, table Table) seccomp.Policy {
	abi := seccomp.NativeABI(goarch)
	rules := map[int]seccomp.Action{}
	for name, h := range table {
		nr, ok := abi.Nr(name)
		if !ok {
			continue
		}
		if h.Exit != nil {
			rules[nr] = seccomp.TraceExit
		} else {
			rules[nr] = seccomp.TraceEntry
		}
	}
	return seccomp.Policy{Rules: map[*seccomp.ABI]map[int]seccomp.Action{abi: rules}, AllowSkipped: true}
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
