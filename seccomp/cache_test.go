package seccomp

import (
	"fmt"
	"math/bits"
	"testing"

	"golang.org/x/sys/unix"
)

// constWord is the data of the kernel's cache emulation: only nr and arch
// are known; run stops before asking for anything else.
func constWord(nr, arch uint32) func(uint32) uint32 {
	return func(off uint32) uint32 {
		switch off {
		case offNr:
			return nr
		case offArch:
			return arch
		}
		panic(fmt.Sprintf("constant evaluation loaded offset %d", off))
	}
}

// TestKernelCache runs the emulation of seccomp_is_const_allow
// (kernel/seccomp.c) on every (arch, nr): every Allow syscall of every ABI
// must be a constant ALLOW, and no traced one may be.
func TestKernelCache(t *testing.T) {
	skipArchIndependent(t)
	for _, goarch := range goarches {
		for _, np := range policies {
			for _, T := range []uint64{0, trampolineT} {
				t.Run(fmt.Sprintf("%s/%s/T=%#x", goarch, np.name, T), func(t *testing.T) {
					p := np.policy(goarch)
					p.Trampoline = T
					raw := mustAssemble(t, mustBuild(t, goarch, p))
					check := func(arch, nr uint32) {
						ret, _, ok := run(raw, constWord(nr, arch), true)
						constAllow := ok && ret == retAllow
						// ip 0 is outside every trampoline used here.
						want := expect(goarch, p, arch, nr, 0, junkArgs)
						wantAllow := want.Action == "ALLOW"
						if argChecked(goarch, p, arch, nr) {
							// The filter reads the argument: never constant.
							if ok {
								t.Errorf("arch %#x nr %#x: constant %#x, but it has an argument rule", arch, nr, ret)
							}
							return
						}
						if constAllow != wantAllow {
							t.Errorf("arch %#x nr %#x: constant ALLOW = %v, want %v", arch, nr, constAllow, wantAllow)
						}
						// A refusal is a constant decision too: nothing
						// but nr and arch is read on its way.
						if want.Action == "ERRNO" && (!ok || toVerdict(ret) != want) {
							t.Errorf("arch %#x nr %#x: not a constant %v (ok %v, ret %#x)", arch, nr, want, ok, ret)
						}
					}
					for _, abi := range HostABIs(goarch) {
						lo, hi := nrRange(abi)
						for nr := lo; nr <= hi; nr++ {
							check(abi.AuditArch, nr)
						}
					}
					for _, arch := range archesToProbe() {
						for _, nr := range []uint32{0, 1, 59, 0x40000000, 0x7fffffff, 0xffffffff} {
							check(arch, nr)
						}
					}
				})
			}
		}
	}
}

// argChecked reports whether (arch, nr) is a number with an ArgRule under
// p, which the filter reaches (not an unsupported ABI, not the skipped -1).
func argChecked(goarch string, p Policy, arch, nr uint32) bool {
	if p.AllowSkipped && nr == 0xffffffff && arch == HostABIs(goarch)[0].AuditArch {
		return false
	}
	for _, a := range HostABIs(goarch) {
		if a.AuditArch != arch || (hasX32(goarch, arch) && nr&x32SyscallBit != a.NrBit) {
			continue
		}
		_, ok := p.ArgRules[a][int(nr&^a.NrBit)]
		return ok
	}
	return false
}

// TestDepth bounds the instructions executed for any syscall. With m the
// number of runs of equal action in an ABI (m <= 2N+1 for N traced
// numbers; 1 for an unsupported ABI):
//
//	steps <= 2*ceil(log2 m) + 13 (+ 3 with argument rules)
//
// 4 for the arch dispatch (ld, two jeq, one ja), 2 for "ld nr" and the x32
// jset, at most ceil(log2 m) jge each possibly through one ja, and 6 for
// the instruction-pointer check and its ret. The number of jge on nr alone
// is at most ceil(log2 m).
func TestDepth(t *testing.T) {
	skipArchIndependent(t)
	for _, goarch := range goarches {
		for _, np := range policies {
			for _, T := range []uint64{0, trampolineT} {
				p := np.policy(goarch)
				p.Trampoline = T
				raw := mustAssemble(t, mustBuild(t, goarch, p))
				for _, abi := range HostABIs(goarch) {
					m := runsOf(p, abi)
					depth := bits.Len(uint(m - 1)) // ceil(log2 m)
					bound := 2*depth + 13
					if len(p.ArgRules[abi]) > 0 {
						bound += 3
					}
					lo, hi := nrRange(abi)
					maxSteps, maxTests := 0, 0
					for nr := lo; nr <= hi; nr++ {
						for _, ip := range []uint64{0, T + 8} {
							_, steps, ok := run(raw, dataWords(nr, abi.AuditArch, ip, junkArgs), false)
							if !ok {
								t.Fatalf("%s %s nr %#x: program failed", goarch, abi.Name, nr)
							}
							maxSteps = max(maxSteps, steps)
						}
						maxTests = max(maxTests, nrTests(raw, nr, abi.AuditArch))
					}
					if maxSteps > bound || maxTests > depth {
						t.Errorf("%s %s %s T=%#x: %d runs: max %d steps (bound %d), %d jge (bound %d)",
							goarch, np.name, abi.Name, T, m, maxSteps, bound, maxTests, depth)
					}
					if testing.Verbose() && T != 0 {
						t.Logf("%s %-28s %-7s runs %4d: max %2d steps (bound %2d), max %2d jge (ceil log2 = %d)",
							goarch, np.name, abi.Name, m, maxSteps, bound, maxTests, depth)
					}
				}
			}
		}
	}
}

// nrTests counts the jge instructions executed for (arch, nr).
func nrTests(raw []unix.SockFilter, nr, arch uint32) int {
	n := 0
	a := uint32(0)
	onNr := false // A holds the number (not an argument an ArgRule tests)
	for pc := 0; pc < len(raw); pc++ {
		ins := raw[pc]
		switch ins.Code {
		case opLdWAbs:
			a = dataWords(nr, arch, 0, junkArgs)(ins.K)
			onNr = ins.K == 0
		case opRetK:
			return n
		case opJa:
			pc += int(ins.K)
		default:
			var taken bool
			switch ins.Code {
			case opJeqK:
				taken = a == ins.K
			case opJgtK:
				taken = a > ins.K
			case opJgeK:
				taken = a >= ins.K
				if onNr {
					n++
				}
			case opJsetK:
				taken = a&ins.K != 0
			}
			if taken {
				pc += int(ins.Jt)
			} else {
				pc += int(ins.Jf)
			}
		}
	}
	return n
}
