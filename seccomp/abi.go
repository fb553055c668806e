package seccomp

import (
	"sort"
	"strconv"

	"github.com/elastic/go-seccomp-bpf/arch"
)

// AUDIT_ARCH_* values (include/uapi/linux/audit.h) of the ABIs droidroot knows.
const (
	auditArchX86_64  = 0xc000003e
	auditArchI386    = 0x40000003
	auditArchAArch64 = 0xc00000b7
	auditArchARM     = 0x40000028
)

// x32SyscallBit is X32_SYSCALL_BIT: x32 system call numbers are the table
// numbers with this bit set, under AUDIT_ARCH_X86_64.
const x32SyscallBit = 0x40000000

// ABI is one system call ABI a guest process can use on a host.
//
// The tables (Names, Numbers) are shared with
// github.com/elastic/go-seccomp-bpf/arch and must not be modified.
type ABI struct {
	Name      string         // "x86_64", "i386", "x32", "aarch64", "arm"
	AuditArch uint32         // AUDIT_ARCH_* value seen in seccomp_data.arch
	NrBit     uint32         // 0x40000000 for x32 (X32_SYSCALL_BIT), else 0
	Names     map[string]int // syscall name -> number (without NrBit)
	Numbers   map[int]string // syscall number (without NrBit) -> name
}

// The ABIs of the hosts droidroot runs on.
var (
	// X86_64 is the native ABI of an amd64 host.
	X86_64 = newABI(arch.X86_64, auditArchX86_64, 0)
	// I386 is the 32-bit compat ABI of an amd64 host (int 0x80, sysenter,
	// or syscall from a 32-bit code segment).
	I386 = newABI(arch.I386, auditArchI386, 0)
	// X32 is the ILP32 ABI of an amd64 host: AUDIT_ARCH_X86_64 with
	// X32_SYSCALL_BIT set in the number.
	X32 = newABI(arch.X32, auditArchX86_64, x32SyscallBit)
	// AArch64 is the native ABI of an arm64 host.
	AArch64 = newABI(arch.AARCH64, auditArchAArch64, 0)
	// ARM is the AArch32 (EABI) compat ABI of an arm64 host.
	ARM = newABI(arch.ARM, auditArchARM, 0)
)

// allABIs lists every known ABI, for name lookups by audit arch.
var allABIs = []*ABI{X86_64, I386, X32, AArch64, ARM}

func newABI(info *arch.Info, auditArch, nrBit uint32) *ABI {
	if uint32(info.ID) != auditArch || uint32(info.SeccompMask) != nrBit {
		panic("seccomp: go-seccomp-bpf arch table for " + info.Name + " disagrees with droidroot")
	}
	return &ABI{
		Name:      info.Name,
		AuditArch: auditArch,
		NrBit:     nrBit,
		Names:     info.SyscallNames,
		Numbers:   info.SyscallNumbers,
	}
}

// HostABIs returns the ABIs a process can use on a host running the given
// GOARCH: X86_64, I386 and X32 for "amd64"; AArch64 and ARM for "arm64".
// It returns nil for any other GOARCH. The first ABI is the native one.
func HostABIs(goarch string) []*ABI {
	switch goarch {
	case "amd64":
		return []*ABI{X86_64, I386, X32}
	case "arm64":
		return []*ABI{AArch64, ARM}
	}
	return nil
}

// NativeABI returns the native ABI of goarch (X86_64 or AArch64), or nil if
// droidroot does not support that GOARCH.
func NativeABI(goarch string) *ABI {
	switch goarch {
	case "amd64":
		return X86_64
	case "arm64":
		return AArch64
	}
	return nil
}

// Nr returns the number of the system call called name in a (without NrBit)
// and whether a has such a system call.
//
// droidroot's own calls (OwnSyscalls) have their number in every ABI.
func (a *ABI) Nr(name string) (int, bool) {
	if nr, ok := OwnSyscalls[name]; ok {
		return nr, true
	}
	nr, ok := a.Names[name]
	return nr, ok
}

// OwnSyscalls are droidroot's own system calls, by name: numbers no kernel
// has, which only droidroot's tracer answers (the droidroot_fastpath
// handshake of the fast path library, fastpath.SyscallNr; the loader's
// droidroot_execstop, loader.ExecStopNr).
var OwnSyscalls = map[string]int{"droidroot_fastpath": 25714, "droidroot_execstop": 25715}

// String returns the ABI's name.
func (a *ABI) String() string { return a.Name }

// name returns the name of syscall nr (without NrBit), or "" if unknown.
func (a *ABI) name(nr int) string {
	for name, n := range OwnSyscalls {
		if n == nr {
			return name
		}
	}
	return a.Numbers[nr]
}

// SyscallName returns the name of syscall nr (without NrBit), droidroot's
// own numbers included, or "#nr" if a's table has none.
func (a *ABI) SyscallName(nr int) string { return a.nameOr(nr, "#"+strconv.Itoa(nr)) }

// nameOr returns the name of syscall nr, or or if unknown.
func (a *ABI) nameOr(nr int, or string) string {
	if name := a.name(nr); name != "" {
		return name
	}
	return or
}

// maxNr returns the highest number in a's table (without NrBit).
func (a *ABI) maxNr() int {
	m := 0
	for nr := range a.Numbers {
		m = max(m, nr)
	}
	return m
}

// sortedNumbers returns the numbers of a's table in increasing order.
func (a *ABI) sortedNumbers() []int {
	nrs := make([]int, 0, len(a.Numbers))
	for nr := range a.Numbers {
		nrs = append(nrs, nr)
	}
	sort.Ints(nrs)
	return nrs
}
