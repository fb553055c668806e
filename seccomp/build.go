package seccomp

import (
	"sort"

	"golang.org/x/net/bpf"
)

// Offsets in struct seccomp_data (little-endian hosts).
const (
	offNr     = 0  // int nr
	offArch   = 4  // __u32 arch
	offIPLow  = 8  // __u64 instruction_pointer, low word
	offIPHigh = 12 // instruction_pointer, high word
	offArgs   = 16 // __u64 args[6]
	sizeData  = 64 // sizeof(struct seccomp_data)
)

// interval is a run [lo, next interval's lo) of syscall numbers (as seen in
// seccomp_data.nr, NrBit included) that share an action.
type interval struct {
	lo  uint32
	act Action
}

// intervals returns the runs of equal action that partition [bit, 2^32)
// for the rules of an ABI whose numbers carry bit; numbers without a rule
// get def. Neighbouring runs have different actions. If trapFrom >= 0,
// every number from trapFrom|bit up to 2^32 traps.
func intervals(rules map[int]Action, bit uint32, trapFrom int, def Action) []interval {
	nrs := make([]int, 0, len(rules))
	for nr, act := range rules {
		if act != def && (trapFrom < 0 || nr < trapFrom) {
			nrs = append(nrs, nr)
		}
	}
	sort.Ints(nrs)
	var out []interval
	next := uint64(bit) // first number not covered by out
	add := func(v uint64, act Action) {
		if v > next { // numbers without a rule before v
			if len(out) == 0 || out[len(out)-1].act != def {
				out = append(out, interval{lo: uint32(next), act: def})
			}
		}
		if len(out) == 0 || out[len(out)-1].act != act {
			out = append(out, interval{lo: uint32(v), act: act})
		}
		next = v + 1
	}
	for _, nr := range nrs {
		add(uint64(nr)|uint64(bit), rules[nr])
	}
	if trapFrom >= 0 {
		add(uint64(trapFrom)|uint64(bit), Trap)
		next = 1 << 32
	}
	if next <= 0xffffffff && (len(out) == 0 || out[len(out)-1].act != def) || len(out) == 0 {
		out = append(out, interval{lo: uint32(next), act: def})
	}
	return out
}

// builder emits one filter program.
type builder struct {
	asm        assembler
	trampoline uint64
	loader     IPRange
	// trampAll: every traced call has the trampoline check (a policy
	// without TrampolineCalls).
	trampAll bool
	// Shared targets, emitted at the end of the program if used.
	allow, unsupported, trap *label
	// traced are the traced targets, by action: TraceEntry or TraceExit,
	// with traceTramp and traceLoader for the instruction-pointer checks.
	traced map[Action]*label
	// errnos are the targets of the Errno actions, by action.
	errnos map[Action]*label
	used   map[*label]bool
	// args are the argument checks of Policy.ArgRules, emitted after the
	// search trees; argCheck|i is the internal action of args[i].
	args []argBlock
}

// argBlock is the code of one number's ArgRule: "ld args[arg] (low word);
// jset mask -> set's target, else -> clear's", both shared targets; with
// no mask "jge min, then jgt max -> clear's, else set's".
type argBlock struct {
	l          *label
	arg        int
	mask       uint32
	min, max   uint32
	set, clear Action
}

// Build returns the seccomp filter program for a host of the given GOARCH
// ("amd64" or "arm64") enforcing p. See the package documentation for the
// layout. It fails if p names an ABI that is not one of HostABIs(goarch),
// an out-of-range number or action, a trampoline that is not 4 KiB-aligned,
// or if the program would exceed BPF_MAXINSNS.
func Build(goarch string, p Policy) ([]bpf.Instruction, error) {
	abis := HostABIs(goarch)
	if err := p.validate(goarch, abis); err != nil {
		return nil, err
	}
	b := &builder{trampoline: p.Trampoline, loader: p.Loader, trampAll: p.Trampoline != 0 && p.TrampolineCalls == nil,
		errnos: map[Action]*label{}, used: map[*label]bool{}, traced: map[Action]*label{}}
	a := &b.asm
	b.allow, b.unsupported, b.trap = a.newLabel(), a.newLabel(), a.newLabel()
	foreign := b.unsupported
	if p.TrapForeign {
		foreign = b.trap
	}

	// Group the ABIs by audit arch, in HostABIs order (native first), and
	// plan one search tree per ABI.
	type group struct {
		arch  uint32
		abis  []*ABI
		trees []*tree
		start *label
	}
	var groups []*group
	for _, abi := range abis {
		var g *group
		for _, h := range groups {
			if h.arch == abi.AuditArch {
				g = h
			}
		}
		if g == nil {
			g = &group{arch: abi.AuditArch}
			groups = append(groups, g)
		}
		var t *tree
		if rules, supported := p.Rules[abi]; supported {
			from, ok := p.TrapFrom[abi]
			if !ok {
				from = -1
			}
			t = b.plan(intervals(b.argRules(p, abi, markedRules(p, abi, rules)), abi.NrBit, from, p.Default))
		} else {
			t = &tree{target: foreign}
			b.used[foreign] = true
		}
		g.abis = append(g.abis, abi)
		g.trees = append(g.trees, t)
	}
	for _, g := range groups {
		switch {
		case len(g.abis) == 1 && g.trees[0].leaf():
			g.start = g.trees[0].target // one action for the whole ABI
		case len(g.abis) == 1, len(g.abis) == 2 && g.abis[0].NrBit == 0 && g.abis[1].NrBit != 0:
			g.start = a.newLabel()
		default:
			panic("seccomp: internal error: unexpected ABI group")
		}
	}

	// Arch dispatch.
	a.load(offArch)
	for _, g := range groups {
		a.jump(bpf.JumpEqual, g.arch, g.start, nil)
	}
	if p.TrapForeign {
		a.ret(retTrap)
	} else {
		a.ret(retTrap | DataUnknownArch)
	}

	// One section per arch: load nr, split by NrBit if the arch has two
	// ABIs, then the search trees.
	for _, g := range groups {
		if len(g.abis) == 1 && g.trees[0].leaf() {
			continue
		}
		a.bind(g.start)
		a.load(offNr)
		if p.AllowSkipped && g == groups[0] {
			a.jump(bpf.JumpEqual, 0xffffffff, b.allow, nil)
			b.used[b.allow] = true
		}
		if len(g.abis) == 2 {
			a.jump(bpf.JumpBitsSet, g.abis[1].NrBit, g.trees[1].entry(), g.trees[0].entry())
		}
		for _, t := range g.trees {
			b.emitTree(t)
		}
	}

	// Argument checks, then the shared targets they and the trees jump to.
	for _, blk := range b.args {
		if b.used[blk.l] {
			a.bind(blk.l)
			a.load(offArgs + 8*uint32(blk.arg))
			if blk.mask != 0 {
				a.jump(bpf.JumpBitsSet, blk.mask, b.actionTarget(blk.set), b.actionTarget(blk.clear))
				continue
			}
			if blk.min > 0 {
				a.jump(bpf.JumpGreaterOrEqual, blk.min, nil, b.actionTarget(blk.clear))
			}
			a.jump(bpf.JumpGreaterThan, blk.max, b.actionTarget(blk.clear), b.actionTarget(blk.set))
		}
	}
	if b.used[b.allow] {
		a.bind(b.allow)
		a.ret(retAllow)
	}
	if b.used[b.unsupported] {
		a.bind(b.unsupported)
		a.ret(retTrap | DataUnsupportedABI)
	}
	if b.used[b.trap] {
		a.bind(b.trap)
		a.ret(retTrap)
	}
	errnos := make([]Action, 0, len(b.errnos))
	for act := range b.errnos {
		errnos = append(errnos, act)
	}
	sort.Slice(errnos, func(i, j int) bool { return errnos[i] < errnos[j] })
	for _, act := range errnos {
		a.bind(b.errnos[act])
		a.ret(act.ret())
	}
	traced := make([]Action, 0, len(b.traced))
	for act := range b.traced {
		traced = append(traced, act)
	}
	sort.Slice(traced, func(i, j int) bool { return traced[i] < traced[j] })
	for _, act := range traced {
		b.emitTraced(b.traced[act], act)
	}

	return a.resolve()
}

// tree is a binary search tree over intervals: a leaf jumps to target; an
// inner node tests nr >= split and goes right if so, left otherwise.
type tree struct {
	target      *label // leaf: shared action target
	split       uint32
	left, right *tree
	start       *label // inner node: bound to its first instruction
}

func (t *tree) leaf() bool { return t.left == nil }

// entry returns the label where evaluation of t starts.
func (t *tree) entry() *label {
	if t.leaf() {
		return t.target
	}
	return t.start
}

// plan builds a balanced tree over iv: depth ceil(log2(len(iv))).
func (b *builder) plan(iv []interval) *tree {
	if len(iv) == 1 {
		return &tree{target: b.actionTarget(iv[0].act)}
	}
	mid := len(iv) / 2
	return &tree{
		split: iv[mid].lo,
		left:  b.plan(iv[:mid]),
		right: b.plan(iv[mid:]),
		start: b.asm.newLabel(),
	}
}

// Internal action bits of TraceEntry and TraceExit, never in a Policy:
// the call is allowed from the trampoline page (Policy.TrampolineCalls),
// from the loader's code (Policy.LoaderCalls).
const (
	traceTramp  Action = 1 << 15
	traceLoader Action = 1 << 14
)

// markedRules returns abi's rules with the traced calls that
// Policy.TrampolineCalls and Policy.LoaderCalls name marked for their
// instruction-pointer checks.
func markedRules(p Policy, abi *ABI, rules map[int]Action) map[int]Action {
	tramp, load := p.TrampolineCalls[abi], p.LoaderCalls[abi]
	if p.Trampoline == 0 {
		tramp = nil
	}
	if p.Loader.Hi == 0 {
		load = nil
	}
	if len(tramp) == 0 && len(load) == 0 {
		return rules
	}
	out := make(map[int]Action, len(rules))
	for nr, act := range rules {
		if act == TraceEntry || act == TraceExit {
			if tramp[nr] {
				act |= traceTramp
			}
			if load[nr] {
				act |= traceLoader
			}
		}
		out[nr] = act
	}
	return out
}

// argCheck marks the internal action of b.args[act&^argCheck] (a number
// with an ArgRule), never in a Policy.
const argCheck Action = 1 << 24

// argRules returns abi's rules (after trampolineRules) with each number of
// p.ArgRules[abi] given an action of its own, argCheck|i, whose target is
// b.args[i]: the rule's action when the argument has a bit of the mask (or
// lies in the range),
// the number's own (rules, else p.Default) otherwise; each with the
// trampoline check where trampolineRules gives the number one.
func (b *builder) argRules(p Policy, abi *ABI, rules map[int]Action) map[int]Action {
	ars := p.ArgRules[abi]
	if len(ars) == 0 {
		return rules
	}
	nrs := make([]int, 0, len(ars))
	for nr := range ars {
		nrs = append(nrs, nr)
	}
	sort.Ints(nrs) // the same program for the same policy
	out := make(map[int]Action, len(rules)+len(ars))
	for nr, act := range rules {
		out[nr] = act
	}
	for _, nr := range nrs {
		r := ars[nr]
		clear, ok := rules[nr]
		if !ok {
			clear = p.Default
		}
		set := markedRules(p, abi, map[int]Action{nr: r.Action})[nr]
		out[nr] = argCheck | Action(len(b.args))
		b.args = append(b.args, argBlock{l: b.asm.newLabel(), arg: r.Arg, mask: r.Mask, min: r.Min, max: r.Max, set: set, clear: clear})
	}
	return out
}

func (b *builder) actionTarget(act Action) *label {
	if act&argCheck != 0 {
		l := b.args[act&^argCheck].l
		b.used[l] = true
		return l
	}
	l := b.allow
	switch base := act &^ (traceTramp | traceLoader); {
	case base == TraceEntry || base == TraceExit:
		if l = b.traced[act]; l == nil {
			l = b.asm.newLabel()
			b.traced[act] = l
		}
	case act == Trap:
		l = b.trap
	}
	if _, ok := act.Errno(); ok {
		if l = b.errnos[act]; l == nil {
			l = b.asm.newLabel()
			b.errnos[act] = l
		}
	}
	b.used[l] = true
	return l
}

// emitTree emits t in pre-order: the test, the left subtree (reached by
// falling through), then the right subtree. Leaves emit nothing: the
// parent jumps straight to the shared target (resolve brings a copy of a
// "ret" within reach where needed).
func (b *builder) emitTree(t *tree) {
	if t.leaf() {
		return
	}
	b.asm.bind(t.start)
	b.asm.jump(bpf.JumpGreaterOrEqual, t.split, t.right.entry(), t.left.entry())
	b.emitTree(t.left)
	b.emitTree(t.right)
}

// emitTraced emits the target l of traced action act: "ret TRACE|data",
// or, where act has instruction-pointer checks (the trampoline page T,
// the loader's code L), checks that allow the call if T <= ip < T+4096 or
// L.Lo <= ip < L.Hi. Only these blocks read instruction_pointer, so
// untraced syscalls stay constant ALLOW for the kernel's action cache.
func (b *builder) emitTraced(l *label, act Action) {
	a := &b.asm
	a.bind(l)
	data := uint32(DataEntry)
	if act&^(traceTramp|traceLoader) == TraceExit {
		data = DataExit
	}
	var ranges []IPRange
	if b.trampoline != 0 && (act&traceTramp != 0 || b.trampAll) {
		ranges = append(ranges, IPRange{b.trampoline, b.trampoline + TrampolineSize})
	}
	if act&traceLoader != 0 {
		ranges = append(ranges, b.loader)
	}
	if len(ranges) == 0 {
		a.ret(retTrace | data)
		return
	}
	trace, allow := a.newLabel(), a.newLabel()
	for i, r := range ranges {
		next := trace
		if i < len(ranges)-1 {
			next = a.newLabel()
		}
		lo, size := uint32(r.Lo), r.Hi-r.Lo // in one 4 GiB word (Policy.validate)
		a.load(offIPHigh)
		a.jump(bpf.JumpEqual, uint32(r.Lo>>32), nil, next)
		a.load(offIPLow)
		switch {
		case lo == 0: // no lower test
			a.jump(bpf.JumpGreaterOrEqual, uint32(size), next, allow)
		case uint64(lo)+size <= 0xffffffff:
			a.jump(bpf.JumpGreaterOrEqual, lo, nil, next)
			a.jump(bpf.JumpGreaterOrEqual, lo+uint32(size), next, allow)
		default: // the range ends at a 4 GiB boundary: no upper test
			a.jump(bpf.JumpGreaterOrEqual, lo, allow, next)
		}
		if next != trace {
			a.bind(next)
		}
	}
	a.bind(allow)
	a.ret(retAllow)
	a.bind(trace)
	a.ret(retTrace | data)
}
