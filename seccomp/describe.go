package seccomp

import (
	"fmt"
	"sort"
	"strings"
)

// Describe returns a human-readable summary of what Build(goarch, p) does:
// per host ABI, each traced syscall with its name, number and whether the
// tracer gets only the entry or also the exit, each refused one with its
// errno, each whose action depends on an argument (Policy.ArgRules) with
// both actions; with a Default other than Allow, the allowed syscalls by name and
// the default; unsupported ABIs; and the trampoline page. It is what `droidroot debug filter` prints.
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
		var nrs, allowed []int
		traced, refused := 0, 0
		for nr := range p.ArgRules[abi] {
			if _, ok := rules[nr]; !ok {
				nrs = append(nrs, nr)
			}
		}
		for nr, act := range rules {
			_, checked := p.ArgRules[abi][nr]
			switch {
			case act == Allow && !checked:
				allowed = append(allowed, nr)
			default:
				nrs = append(nrs, nr)
				if act == TraceEntry || act == TraceExit {
					traced++
				}
				if _, ok := act.Errno(); ok {
					refused++
				}
			}
		}
		sort.Ints(nrs)
		sort.Ints(allowed)
		fmt.Fprintf(&sb, "%s (arch %#x", abi.Name, abi.AuditArch)
		if abi.NrBit != 0 {
			fmt.Fprintf(&sb, ", nr | %#x", abi.NrBit)
		}
		fmt.Fprintf(&sb, "): %d traced, %d refused, ", traced, refused)
		if n := len(p.ArgRules[abi]); n > 0 {
			fmt.Fprintf(&sb, "%d by argument, ", n)
		}
		fmt.Fprintf(&sb, "%d intervals\n", runsOf(p, abi))
		for _, nr := range nrs {
			act, ok := rules[nr]
			if !ok {
				act = p.Default
			}
			fmt.Fprintf(&sb, "  %-24s %6d  %s", abi.nameOr(nr, "?"), nr, act)
			if r, ok := p.ArgRules[abi][nr]; ok {
				if r.Mask != 0 {
					fmt.Fprintf(&sb, "; %s if args[%d] & %#x", r.Action, r.Arg, r.Mask)
				} else {
					fmt.Fprintf(&sb, "; %s if %d <= args[%d] <= %d", r.Action, r.Min, r.Arg, r.Max)
				}
			}
			sb.WriteString("\n")
		}
		if p.Default != Allow {
			head := fmt.Sprintf("  allowed (%d):", len(allowed))
			sb.WriteString(head)
			col := len(head)
			for _, nr := range allowed {
				name := abi.nameOr(nr, fmt.Sprint(nr))
				if col+1+len(name) > 78 {
					sb.WriteString("\n   ")
					col = 3
				}
				sb.WriteString(" " + name)
				col += 1 + len(name)
			}
			fmt.Fprintf(&sb, "\n  every other number: %s\n", p.Default)
		}
	}
	fmt.Fprintf(&sb, "unknown arch: every syscall traps with data %#x (ENOSYS)\n", DataUnknownArch)
	if p.Trampoline != 0 && p.TrampolineCalls != nil {
		fmt.Fprintf(&sb, "trampoline: these traced syscalls with ip in [%#x, %#x) are allowed:",
			p.Trampoline, p.Trampoline+TrampolineSize)
		writeCheckedCalls(&sb, goarch, p, p.TrampolineCalls)
	} else if p.Trampoline != 0 {
		fmt.Fprintf(&sb, "trampoline: traced syscalls of supported ABIs with ip in [%#x, %#x) are allowed\n",
			p.Trampoline, p.Trampoline+TrampolineSize)
	} else {
		sb.WriteString("trampoline: none\n")
	}
	if l := p.Loader; l.Hi != 0 {
		fmt.Fprintf(&sb, "loader: these traced syscalls with ip in [%#x, %#x) are allowed:", l.Lo, l.Hi)
		writeCheckedCalls(&sb, goarch, p, p.LoaderCalls)
	}
	return sb.String()
}

// writeCheckedCalls ends a line of Describe with the calls of each host ABI
// that calls marks and p traces (an instruction-pointer check's calls), by
// number.
func writeCheckedCalls(sb *strings.Builder, goarch string, p Policy, calls map[*ABI]map[int]bool) {
	for _, abi := range HostABIs(goarch) {
		var nrs []int
		for nr, on := range calls[abi] {
			if act, ok := p.Rules[abi][nr]; on && ok && (act == TraceEntry || act == TraceExit) {
				nrs = append(nrs, nr)
			}
		}
		sort.Ints(nrs)
		for _, nr := range nrs {
			fmt.Fprintf(sb, " %s %s (%d)", abi.Name, abi.nameOr(nr, "?"), nr)
		}
	}
	sb.WriteString("\n")
}

// runsOf is the number of runs of equal action in the search tree Build
// makes for abi under p (rules, Default; a number with an ArgRule is a
// run of its own); 1 for an ABI without rules.
func runsOf(p Policy, abi *ABI) int {
	rules, ok := p.Rules[abi]
	if !ok {
		return 1
	}
	ars := p.ArgRules[abi]
	if len(ars) == 0 {
		return len(intervals(rules, abi.NrBit, -1, p.Default))
	}
	r := make(map[int]Action, len(rules)+len(ars))
	for nr, act := range rules {
		r[nr] = act
	}
	i := 0
	for nr := range ars {
		r[nr] = argCheck | Action(i)
		i++
	}
	return len(intervals(r, abi.NrBit, -1, p.Default))
}
