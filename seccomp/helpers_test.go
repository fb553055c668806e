package seccomp

import (
	"encoding/binary"
	"fmt"
	"sort"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

var goarches = []string{"amd64", "arm64"}

// trampolineT is the trampoline page most tests use: high word non-zero.
const trampolineT = 0x7f12_3456_7000

// loaderL is a loader's code range of the tests (another 4 GiB word than
// trampolineT's).
var loaderL = IPRange{0x1f_0000_0000, 0x1f_0000_3a40}

// seccompData returns struct seccomp_data laid out for x/net/bpf's VM,
// which loads 32-bit words big-endian: each word of the little-endian
// kernel struct is written big-endian at its offset, so that the VM's
// "ld [off]" yields the value the kernel's would.
func seccompData(nr, arch uint32, ip uint64, args [6]uint64) []byte {
	b := make([]byte, sizeData)
	put := func(off int, v uint32) { binary.BigEndian.PutUint32(b[off:], v) }
	put64 := func(off int, v uint64) { put(off, uint32(v)); put(off+4, uint32(v>>32)) }
	put(offNr, nr)
	put(offArch, arch)
	put64(offIPLow, ip)
	for i, a := range args {
		put64(offArgs+8*i, a)
	}
	return b
}

// junkArgs are argument values no decision may depend on, except that of
// a number with an ArgRule (argSets probes those).
var junkArgs = [6]uint64{0xdeadbeef_cafebabe, 0, 1, 0xffffffff_ffffffff, 0x40000000, trampolineT}

// argSets are the arguments tests probe a number with an ArgRule with:
// no bit set, every bit set, each bit alone in every argument's low word
// (and in the high words, which the rule ignores), and junkArgs.
var argSets = func() [][6]uint64 {
	sets := [][6]uint64{{}, {^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}, junkArgs}
	for bit := 0; bit < 64; bit++ {
		var a [6]uint64
		for i := range a {
			a[i] = 1 << bit
		}
		sets = append(sets, a)
	}
	return sets
}()

// argsFor returns the argument sets to probe number nr (NrBit included)
// of abi with under p: argSets when it has an ArgRule, else junkArgs.
func argsFor(abi *ABI, p Policy, nr uint32) [][6]uint64 {
	if r, ok := p.ArgRules[abi][int(nr&^abi.NrBit)]; ok {
		if r.Mask != 0 {
			return argSets
		}
		// A range: its bounds and their neighbours, with junk above the
		// low word too.
		out := append([][6]uint64(nil), argSets...)
		for _, v := range []uint64{uint64(r.Min) - 1, uint64(r.Min), uint64(r.Min) + 1, uint64(r.Max) - 1, uint64(r.Max), uint64(r.Max) + 1} {
			a := junkArgs
			a[r.Arg] = 0xdead_0000_0000_0000 | uint64(uint32(v))
			out = append(out, a)
		}
		return out
	}
	return [][6]uint64{junkArgs}
}

// verdict is a filter result split for readable diffs.
type verdict struct {
	Action string // "ALLOW", "TRACE", "TRAP", "ERRNO" or "other:0x..."
	Data   uint32
}

func (v verdict) String() string { return fmt.Sprintf("%s|%#x", v.Action, v.Data) }

func toVerdict(ret uint32) verdict {
	switch ret &^ retData {
	case retAllow:
		return verdict{"ALLOW", ret & retData}
	case retTrace:
		return verdict{"TRACE", ret & retData}
	case retTrap:
		return verdict{"TRAP", ret & retData}
	case retErrno:
		return verdict{"ERRNO", ret & retData}
	}
	return verdict{fmt.Sprintf("other:%#x", ret&^retData), ret & retData}
}

// expect is the specification of the filter, written independently of
// Build: the verdict for one syscall on a host of goarch under p.
func expect(goarch string, p Policy, arch, nr uint32, ip uint64, args [6]uint64) verdict {
	var abi *ABI
	for _, a := range HostABIs(goarch) {
		switch {
		case a.AuditArch != arch:
		case !hasX32(goarch, arch): // the only ABI of its arch: every number
			abi = a
		case nr&x32SyscallBit == a.NrBit: // x86_64 or x32
			abi = a
		}
	}
	if abi == nil {
		return verdict{"TRAP", DataUnknownArch}
	}
	if p.AllowSkipped && nr == 0xffffffff && arch == HostABIs(goarch)[0].AuditArch {
		return verdict{"ALLOW", 0}
	}
	return expectABI(abi, p, nr, ip, args)
}

// expectABI is expect for a syscall known to be of abi: the action of its
// number (Rules, else Default), or of its ArgRule when the argument's low
// word has a bit of the mask; the trampoline check for a traced call.
func expectABI(abi *ABI, p Policy, nr uint32, ip uint64, args [6]uint64) verdict {
	rules, ok := p.Rules[abi]
	if !ok {
		return verdict{"TRAP", DataUnsupportedABI}
	}
	act, listed := rules[int(nr&^abi.NrBit)]
	if !listed {
		act = p.Default
	}
	if r, ok := p.ArgRules[abi][int(nr&^abi.NrBit)]; ok && r.matches(args[r.Arg]) {
		act = r.Action
	}
	if e, ok := act.Errno(); ok {
		return verdict{"ERRNO", uint32(e)}
	}
	if act == Allow {
		return verdict{"ALLOW", 0}
	}
	checked := p.TrampolineCalls == nil || p.TrampolineCalls[abi][int(nr&^abi.NrBit)]
	if p.Trampoline != 0 && checked && ip >= p.Trampoline && ip-p.Trampoline < TrampolineSize {
		return verdict{"ALLOW", 0}
	}
	if p.Loader.Hi != 0 && p.LoaderCalls[abi][int(nr&^abi.NrBit)] && ip >= p.Loader.Lo && ip < p.Loader.Hi {
		return verdict{"ALLOW", 0}
	}
	if act == TraceExit {
		return verdict{"TRACE", DataExit}
	}
	return verdict{"TRACE", DataEntry}
}

func hasX32(goarch string, arch uint32) bool {
	for _, a := range HostABIs(goarch) {
		if a.AuditArch == arch && a.NrBit != 0 {
			return true
		}
	}
	return false
}

// --- policies ---

// realisticNames are the calls a path-translating tracer stops at; those
// in exitNames also need their exit.
var realisticNames = []string{
	"open", "openat", "openat2", "creat", "stat", "lstat", "newfstatat", "fstatat64", "stat64",
	"lstat64", "statx", "access", "faccessat", "faccessat2", "readlink", "readlinkat", "execve",
	"execveat", "chdir", "getcwd", "mkdir", "mkdirat", "rmdir", "unlink", "unlinkat", "rename",
	"renameat", "renameat2", "link", "linkat", "symlink", "symlinkat", "chmod", "fchmodat",
	"fchmodat2", "chown", "chown32", "lchown", "lchown32", "fchownat", "truncate", "truncate64",
	"utimensat", "utimes", "mknod", "mknodat", "statfs", "statfs64", "inotify_add_watch",
	"bind", "connect", "getsockname", "getpeername", "socketcall", "uname", "accept",
	"setxattr", "getxattr", "listxattr", "removexattr", "chroot", "mount", "umount2",
}

var exitNames = map[string]bool{
	"getcwd": true, "readlink": true, "readlinkat": true, "getsockname": true,
	"getpeername": true, "uname": true, "socketcall": true, "execve": true, "execveat": true,
}

func realisticRules(a *ABI) map[int]Action {
	m := map[int]Action{}
	for _, name := range realisticNames {
		if nr, ok := a.Nr(name); ok {
			m[nr] = TraceEntry
			if exitNames[name] {
				m[nr] = TraceExit
			}
		}
	}
	return m
}

// alternatingRules traces every syscall of a's table, alternating entry
// and exit in number order.
func alternatingRules(a *ABI) map[int]Action {
	m := map[int]Action{}
	for i, nr := range a.sortedNumbers() {
		m[nr] = TraceEntry + Action(i%2)
	}
	return m
}

// denseRules traces every number from 0 to limit (holes of the table
// included), alternating entry and exit: the most runs a policy can have.
func denseRules(limit int) map[int]Action {
	m := map[int]Action{}
	for nr := 0; nr <= limit; nr++ {
		m[nr] = TraceEntry + Action(nr%2)
	}
	return m
}

// classifiedRules are realisticRules plus every other even number of a's
// table allowed and every number divisible by 3 refused with EPERM (traced
// numbers keep their action), as droidroot's classified policy looks.
func classifiedRules(a *ABI) map[int]Action {
	m := realisticRules(a)
	for nr := range a.Numbers {
		if _, traced := m[nr]; traced {
			continue
		}
		switch {
		case nr%3 == 0:
			m[nr] = Errno(unix.EPERM)
		case nr%2 == 0:
			m[nr] = Allow
		}
	}
	return m
}

// maxRegularNr is the highest table number below ARM's private range.
func maxRegularNr(a *ABI) int {
	m := 0
	for nr := range a.Numbers {
		if nr < 0xf0000 {
			m = max(m, nr)
		}
	}
	return m
}

// cloneUntracedRule is droidroot's ArgRule: the native clone traced when
// its flags (argument 0) have CLONE_UNTRACED.
func cloneUntracedRule(goarch string) map[*ABI]map[int]ArgRule {
	abi := NativeABI(goarch)
	nr, _ := abi.Nr("clone")
	return map[*ABI]map[int]ArgRule{abi: {nr: {Arg: 0, Mask: unix.CLONE_UNTRACED, Action: TraceEntry}}}
}

// someArgRules puts an ArgRule on every 5th number of a's table and on the
// first and last numbers: argument nr%6, one or a few bits, each action in
// turn, over numbers whose own action is each of them too.
func someArgRules(a *ABI) map[int]ArgRule {
	acts := []Action{TraceEntry, Errno(unix.EPERM), Allow, TraceExit, Errno(unix.ENOSYS)}
	nrs := a.sortedNumbers()
	m := map[int]ArgRule{}
	for i, nr := range nrs {
		if i%5 == 0 || i == len(nrs)-1 {
			mask := uint32(1) << (nr % 32)
			if i%3 == 0 {
				mask |= 0x00800000
			}
			r := ArgRule{Arg: nr % 6, Mask: mask, Action: acts[(i/5)%len(acts)]}
			if i%4 == 1 {
				// A range instead: [Min, Max], from 0 on every other time.
				r.Mask, r.Min, r.Max = 0, mask&^0x00800000, mask|0xff
				if i%8 == 1 {
					r.Min = 0
				}
			}
			m[nr] = r
		}
	}
	return m
}

type namedPolicy struct {
	name   string
	policy func(goarch string) Policy
}

func rulesFor(goarch string, f func(*ABI) map[int]Action, skip ...*ABI) map[*ABI]map[int]Action {
	r := map[*ABI]map[int]Action{}
	for _, a := range HostABIs(goarch) {
		if !containsABI(skip, a) {
			r[a] = f(a)
		}
	}
	return r
}

// policies are the policies most tests run, without trampoline.
var policies = []namedPolicy{
	{"no-rules", func(string) Policy { return Policy{} }},
	{"empty", func(g string) Policy {
		return Policy{Rules: rulesFor(g, func(*ABI) map[int]Action { return map[int]Action{} })}
	}},
	{"realistic", func(g string) Policy { return Policy{Rules: rulesFor(g, realisticRules, X32)} }},
	{"realistic-compat-unsupported", func(g string) Policy {
		return Policy{Rules: rulesFor(g, realisticRules, I386, X32, ARM)}
	}},
	{"droidroot", func(g string) Policy { // tracer.Policy's shape: native rules only, -1 allowed
		return Policy{Rules: rulesFor(g, realisticRules, I386, X32, ARM), AllowSkipped: true}
	}},
	{"droidroot-allowlist", func(g string) Policy { // with a classification: unknown numbers ENOSYS
		return Policy{Rules: rulesFor(g, classifiedRules, I386, X32, ARM), AllowSkipped: true, Default: Errno(unix.ENOSYS),
			ArgRules: cloneUntracedRule(g)}
	}},
	{"arg-rules", func(g string) Policy { // ArgRules on every ABI, every argument, every action
		p := Policy{Rules: rulesFor(g, classifiedRules), Default: Errno(unix.ENOSYS), ArgRules: map[*ABI]map[int]ArgRule{}}
		for abi := range p.Rules {
			p.ArgRules[abi] = someArgRules(abi)
		}
		return p
	}},
	{"errno-default-everywhere", func(g string) Policy {
		return Policy{Rules: rulesFor(g, classifiedRules), Default: Errno(unix.EPERM)}
	}},
	{"native-unsupported", func(g string) Policy {
		return Policy{Rules: rulesFor(g, realisticRules, NativeABI(g))}
	}},
	{"all-alternating", func(g string) Policy { return Policy{Rules: rulesFor(g, alternatingRules)} }},
	{"all-entry", func(g string) Policy {
		return Policy{Rules: rulesFor(g, func(a *ABI) map[int]Action {
			m := map[int]Action{}
			for nr := range a.Numbers {
				m[nr] = TraceEntry
			}
			return m
		})}
	}},
	{"dense-alternating", func(g string) Policy {
		return Policy{Rules: rulesFor(g, func(a *ABI) map[int]Action { return denseRules(maxRegularNr(a) + 1) })}
	}},
}

func mustBuild(t testing.TB, goarch string, p Policy) []bpf.Instruction {
	t.Helper()
	prog, err := Build(goarch, p)
	if err != nil {
		t.Fatalf("Build(%s): %v", goarch, err)
	}
	return prog
}

func mustAssemble(t testing.TB, prog []bpf.Instruction) []unix.SockFilter {
	t.Helper()
	raw, err := Assemble(prog)
	if err != nil {
		t.Fatalf("Assemble: %v", err)
	}
	return raw
}

// nrRange returns the numbers to probe for a: 0 .. max+64 (NrBit set).
func nrRange(a *ABI) (lo, hi uint32) {
	return a.NrBit, a.NrBit + uint32(a.maxNr()) + 64
}

// --- a kernel-like interpreter of the assembled program ---

// Classic BPF opcodes (include/uapi/linux/filter.h).
const (
	opLdWAbs = 0x20 // BPF_LD | BPF_W | BPF_ABS
	opRetK   = 0x06 // BPF_RET | BPF_K
	opJa     = 0x05 // BPF_JMP | BPF_JA
	opJeqK   = 0x15
	opJgtK   = 0x25
	opJgeK   = 0x35
	opJsetK  = 0x45
	opAndK   = 0x54 // BPF_ALU | BPF_AND | BPF_K
)

// run interprets prog like the kernel, on the little-endian seccomp_data
// given by word(off). If constOnly, a load of anything but nr and arch, or
// any opcode seccomp_is_const_allow does not know, stops with ok=false:
// that is the kernel's action-cache emulation. It returns the return
// value and the number of instructions executed.
func run(prog []unix.SockFilter, word func(off uint32) uint32, constOnly bool) (ret uint32, steps int, ok bool) {
	var a uint32
	for pc := 0; pc < len(prog); pc++ {
		steps++
		ins := prog[pc]
		switch ins.Code {
		case opLdWAbs:
			if constOnly && ins.K != offNr && ins.K != offArch {
				return 0, steps, false
			}
			a = word(ins.K)
		case opRetK:
			return ins.K, steps, true
		case opJa:
			pc += int(ins.K)
		case opJeqK, opJgtK, opJgeK, opJsetK:
			var taken bool
			switch ins.Code {
			case opJeqK:
				taken = a == ins.K
			case opJgtK:
				taken = a > ins.K
			case opJgeK:
				taken = a >= ins.K
			case opJsetK:
				taken = a&ins.K != 0
			}
			if taken {
				pc += int(ins.Jt)
			} else {
				pc += int(ins.Jf)
			}
		case opAndK:
			a &= ins.K
		default:
			return 0, steps, false
		}
	}
	return 0, steps, false // ran off the end
}

// dataWords returns word(off) for seccomp_data {nr, arch, ip, args}.
func dataWords(nr, arch uint32, ip uint64, args [6]uint64) func(uint32) uint32 {
	return func(off uint32) uint32 {
		switch {
		case off == offNr:
			return nr
		case off == offArch:
			return arch
		case off == offIPLow:
			return uint32(ip)
		case off == offIPHigh:
			return uint32(ip >> 32)
		case off >= offArgs && off < sizeData:
			v := args[(off-offArgs)/8]
			if (off-offArgs)%8 == 4 {
				v >>= 32
			}
			return uint32(v)
		}
		panic(fmt.Sprintf("load of offset %d", off))
	}
}

// unknownArches are arch values that match no host ABI of either GOARCH.
var unknownArches = []uint32{0, 0xffffffff, 0x3e, 0x40000000 | 0x3e, 0x80000000 | auditArchI386, 0xc0000015 /* ppc64le */}

// archesToProbe returns the arch values tests feed a filter for goarch:
// those of both GOARCHes (the other's are unknown to it) and junk.
func archesToProbe() []uint32 {
	seen := map[uint32]bool{}
	var out []uint32
	for _, a := range append(append([]uint32{}, unknownArches...), auditArchX86_64, auditArchI386, auditArchAArch64, auditArchARM) {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// skipArchIndependent skips, with -short (the arm64 VM, under TCG), a test that runs filters
// of both architectures through a BPF interpreter in Go: its answers do not depend on the
// machine it runs on, and the full host run checks every case.
func skipArchIndependent(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: filters of both architectures in a Go BPF interpreter, the same on every host; the full host run checks them")
	}
}
