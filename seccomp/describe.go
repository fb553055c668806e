package seccomp

import (
	"fmt"
	"sort"
	"strings"
)

// Describe returns a human-readable summary of what Build(goarch, p) traces:
// per host ABI, each traced syscall with its name, number and whether the
// tracer gets only the entry or also the exit; unsupported ABIs; and the
// trampoline page. It is what `droidroot debug filter` prints.
func Describe(goarch string, p Policy) string {
	var sb strings.Builder
	abis := HostABIs(goarch)
	if abis == nil {
		fmt.Fprintf(&sb, "unsupported GOARCH %q\n", goarch)
		return sb.String()
	}
	for _, abi := range abis {
		rules, supported := p.Rules[abi]
		if !supported {
			fmt.Fprintf(&sb, "%s (arch %#x): unsupported, every syscall traps with data %#x (ENOSYS)\n",
				abi.Name, abi.AuditArch, DataUnsupportedABI)
			continue
		}
		var nrs []int
		for nr, act := range rules {
			if act != Allow {
				nrs = append(nrs, nr)
			}
		}
		sort.Ints(nrs)
		fmt.Fprintf(&sb, "%s (arch %#x", abi.Name, abi.AuditArch)
		if abi.NrBit != 0 {
			fmt.Fprintf(&sb, ", nr | %#x", abi.NrBit)
		}
		fmt.Fprintf(&sb, "): %d traced, %d intervals\n", len(nrs), len(intervals(rules, abi.NrBit, -1)))
		for _, nr := range nrs {
			name := abi.name(nr)
			if name == "" {
				name = "?"
			}
			fmt.Fprintf(&sb, "  %-24s %6d  %s\n", name, nr, rules[nr])
		}
	}
	fmt.Fprintf(&sb, "unknown arch: every syscall traps with data %#x (ENOSYS)\n", DataUnknownArch)
	if p.Trampoline != 0 {
		fmt.Fprintf(&sb, "trampoline: traced syscalls of supported ABIs with ip in [%#x, %#x) are allowed\n",
			p.Trampoline, p.Trampoline+TrampolineSize)
	} else {
		sb.WriteString("trampoline: none\n")
	}
	return sb.String()
}
