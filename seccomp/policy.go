package seccomp

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Action says what the filter does with one system call of one ABI: one of
// the constants below, or Errno(e).
type Action uint32

const (
	// Allow lets the system call run untraced (SECCOMP_RET_ALLOW). The
	// filter reaches it by looking only at the ABI and the number, so the
	// kernel caches it as a constant decision (Linux >= 5.11).
	Allow Action = iota
	// TraceEntry stops the tracee with PTRACE_EVENT_SECCOMP and event
	// message DataEntry (SECCOMP_RET_TRACE | DataEntry).
	TraceEntry
	// TraceExit is TraceEntry with event message DataExit: the tracer also
	// wants the syscall-exit stop.
	TraceExit
	// Trap makes the kernel skip the call and send the thread a SIGSYS with
	// si_code SYS_SECCOMP and si_errno 0 (SECCOMP_RET_TRAP): what
	// Android's app filter does to the calls it blocks (see AndroidPolicy).
	Trap
)

// errnoAction marks Errno's actions; the errno is in the low 12 bits.
const errnoAction Action = 1 << 16

// maxErrno is MAX_ERRNO: the kernel clamps a SECCOMP_RET_ERRNO's data to it.
const maxErrno = 4095

// Errno returns the action that makes the filter itself answer the call
// with -e, without running it and without a tracer stop
// (SECCOMP_RET_ERRNO | e): the calls droidroot refuses on purpose. Like
// Allow it depends on the ABI and number only, so the kernel caches it as a
// constant decision. e must be in [1, 4095].
func Errno(e unix.Errno) Action { return errnoAction | Action(e) }

// Errno returns the errno of an Errno action, and whether a is one.
func (a Action) Errno() (unix.Errno, bool) {
	if a&^maxErrno != errnoAction || a&maxErrno == 0 {
		return 0, false
	}
	return unix.Errno(a & maxErrno), true
}

// valid reports whether a is one of the constants or an Errno action.
func (a Action) valid() bool {
	_, isErrno := a.Errno()
	return a <= Trap || isErrno
}

// String returns "allow", "entry", "exit", "trap" or "errno NAME" (for
// Errno(e): "errno ENOSYS", or the number if unix has no name for it).
func (a Action) String() string {
	if e, ok := a.Errno(); ok {
		return "errno " + errnoName(e)
	}
	switch a {
	case Allow:
		return "allow"
	case TraceEntry:
		return "entry"
	case TraceExit:
		return "exit"
	case Trap:
		return "trap"
	}
	return fmt.Sprintf("Action(%#x)", uint32(a))
}

// errnoName returns e's name ("EPERM"), or its number.
func errnoName(e unix.Errno) string {
	if n := unix.ErrnoName(e); n != "" {
		return n
	}
	return fmt.Sprint(int(e))
}

// RET_DATA values of the filter's results. The traced actions carry
// DataEntry or DataExit (PTRACE_GETEVENTMSG at the PTRACE_EVENT_SECCOMP
// stop; droidroot's tracer does not read it: it takes entry or exit from
// its handler table). The calls of an ABI droidroot does not translate
// are trapped (SECCOMP_RET_TRAP) with DataUnsupportedABI or
// DataUnknownArch, which the tracer finds in the SIGSYS's si_errno and
// answers with ENOSYS: so a native trap needs no request beyond the
// registers.
const (
	// DataEntry marks a syscall traced with TraceEntry.
	DataEntry = 1
	// DataExit marks a syscall traced with TraceExit.
	DataExit = 2
	// DataUnsupportedABI marks any syscall of an ABI the policy has no
	// rules for (a host ABI without an entry in Policy.Rules): trapped.
	DataUnsupportedABI = 0xffff
	// DataUnknownArch marks a syscall whose seccomp_data.arch matches no
	// ABI of the host: trapped.
	DataUnknownArch = 0xfffe
)

// Kernel return values (include/uapi/linux/seccomp.h).
const (
	retAllow = 0x7fff0000 // SECCOMP_RET_ALLOW
	retTrace = 0x7ff00000 // SECCOMP_RET_TRACE
	retTrap  = 0x00030000 // SECCOMP_RET_TRAP
	retErrno = 0x00050000 // SECCOMP_RET_ERRNO
	retData  = 0x0000ffff // SECCOMP_RET_DATA
)

// ret returns the filter's return value for a (with data for the traced
// actions).
func (a Action) ret() uint32 {
	switch a {
	case TraceEntry:
		return retTrace | DataEntry
	case TraceExit:
		return retTrace | DataExit
	case Trap:
		return retTrap
	}
	if e, ok := a.Errno(); ok {
		return retErrno | uint32(e)
	}
	return retAllow
}

// TrampolineSize is the size of the trampoline page: syscalls whose
// instruction pointer is in [Trampoline, Trampoline+TrampolineSize) are
// allowed even when traced.
const TrampolineSize = 4096

// Policy is the traced set: per ABI, syscall number -> action; a number
// absent from an ABI's map gets Default (Allow when zero).
//
// An ABI of HostABIs(goarch) without an entry in Rules (a nil map counts as
// an entry) is unsupported: every one of its syscalls traps with
// DataUnsupportedABI, whatever the instruction pointer.
type Policy struct {
	// Rules maps an ABI of the host to its syscall numbers (without
	// NrBit) and their actions.
	Rules map[*ABI]map[int]Action
	// Default is the action of every number of an ABI with rules that its
	// map does not list, up to 2^32 (numbers above the newest one a table
	// knows included). The zero value is Allow; droidroot's own policy
	// uses Errno(ENOSYS), so that a syscall nobody classified is refused.
	Default Action
	// Trampoline is the address of a 4 KiB-aligned page T: a traced
	// syscall of a supported ABI whose seccomp_data.instruction_pointer is
	// in [T, T+4096) is allowed. The instruction pointer is the address
	// after the syscall instruction. 0 disables the check. Trap rules
	// ignore it.
	Trampoline uint64
	// TrampolineCalls, when not nil, limits the trampoline check to these
	// numbers per ABI (the calls the fast path library makes from its
	// page): every other traced call is traced whatever its instruction
	// pointer. nil checks every traced call.
	TrampolineCalls map[*ABI]map[int]bool
	// Loader is the code of droidroot's loader, [Lo, Hi), in every guest
	// process at a fixed address: a traced syscall of LoaderCalls whose
	// instruction pointer is in it is allowed, as from the trampoline
	// (the loader's opens of the program, its interpreter and the scratch
	// area: host paths the tracer gave it). The zero range disables it;
	// Lo and Hi-1 must lie in one 4 GiB word.
	Loader IPRange
	// LoaderCalls names the numbers per ABI that Loader applies to.
	LoaderCalls map[*ABI]map[int]bool
	// TrapFrom maps an ABI with rules to a number n: every number >= n of
	// that ABI (NrBit included, up to 2^32) traps, whatever Rules says. An
	// absent ABI has no such limit.
	TrapFrom map[*ABI]int
	// TrapForeign makes the ABIs without rules and the unknown arches trap
	// with data 0 instead of DataUnsupportedABI / DataUnknownArch:
	// Android's filter does that to every ABI it does not list.
	TrapForeign bool
	// ArgRules maps an ABI with rules to syscall numbers whose action
	// depends on an argument (see ArgRule). The filter tests the argument
	// only on the branch of that number, after the number dispatch, so
	// every other number stays a constant decision for the kernel's
	// action cache; the number itself no longer is (the filter runs, a
	// few instructions, at each of its calls: no tracer stop).
	ArgRules map[*ABI]map[int]ArgRule
	// AllowSkipped allows number -1 (0xffffffff) of the native arch
	// before anything else: the number a tracer gives a call it skips at
	// a syscall-entry stop, after which seccomp runs (the kernel then
	// leaves the tracer's return value alone), and a guest's own
	// syscall(-1), which gets the kernel's ENOSYS. Without it -1 would
	// go down x86_64's x32 branch and trap.
	AllowSkipped bool
}

// IPRange is the instruction pointers [Lo, Hi).
type IPRange struct{ Lo, Hi uint64 }

// ArgRule gives a syscall Action instead of the action its number has
// (Rules, else Default) when any bit of Mask is set in the low 32 bits of
// argument Arg (0-5): clone with CLONE_UNTRACED in its flags, for example.
// With Mask 0 it tests a range instead: the low word lies in [Min, Max]
// (close of a descriptor in the fast path library's range, for example).
// The low word is enough for flags and descriptors the kernel reads as an
// int, and a 32-bit test is all classic BPF has.
type ArgRule struct {
	Arg      int
	Mask     uint32
	Min, Max uint32
	Action   Action
}

// matches reports whether argument value v gives the rule's action.
func (r ArgRule) matches(v uint64) bool {
	if r.Mask != 0 {
		return uint32(v)&r.Mask != 0
	}
	return uint32(v) >= r.Min && uint32(v) <= r.Max
}

// Errors of Build.
var (
	errUnknownGOARCH = errors.New("seccomp: unsupported GOARCH")
	errTooLong       = errors.New("seccomp: filter longer than BPF_MAXINSNS (4096)")
)

// ErrUnavailable is returned (wrapped) by Install when the kernel cannot
// install a seccomp filter. droidroot then falls back to stopping at every
// system call with ptrace alone, like proot with PROOT_NO_SECCOMP=1.
var ErrUnavailable = errors.New("seccomp filters are unavailable on this kernel; " +
	"droidroot falls back to tracing every system call with ptrace only (like PROOT_NO_SECCOMP=1), which is slower")

// validate checks p against the host ABIs of goarch.
func (p Policy) validate(goarch string, abis []*ABI) error {
	if abis == nil {
		return fmt.Errorf("%w %q (want amd64 or arm64)", errUnknownGOARCH, goarch)
	}
	if p.Trampoline%TrampolineSize != 0 {
		return fmt.Errorf("seccomp: trampoline %#x is not 4 KiB-aligned", p.Trampoline)
	}
	if l := p.Loader; l != (IPRange{}) && (l.Lo >= l.Hi || l.Lo>>32 != (l.Hi-1)>>32) {
		return fmt.Errorf("seccomp: loader range [%#x, %#x) is empty or crosses a 4 GiB boundary", l.Lo, l.Hi)
	}
	for abi, rules := range p.Rules {
		if !containsABI(abis, abi) {
			return fmt.Errorf("seccomp: policy has rules for ABI %v, which is not an ABI of %s", abi, goarch)
		}
		for nr, act := range rules {
			if !act.valid() {
				return fmt.Errorf("seccomp: %s syscall %d: invalid action %v", abi.Name, nr, act)
			}
			limit := int64(1) << 32
			if abi.NrBit != 0 {
				limit = int64(abi.NrBit)
			}
			if nr < 0 || int64(nr) >= limit {
				return fmt.Errorf("seccomp: %s syscall number %d out of range [0, %#x)", abi.Name, nr, limit)
			}
		}
	}
	if !p.Default.valid() {
		return fmt.Errorf("seccomp: invalid default action %v", p.Default)
	}
	for abi, rules := range p.ArgRules {
		if _, ok := p.Rules[abi]; !ok {
			return fmt.Errorf("seccomp: policy has ArgRules for ABI %v, which has no rules", abi)
		}
		for nr, r := range rules {
			limit := int64(1) << 32
			if abi.NrBit != 0 {
				limit = int64(abi.NrBit)
			}
			switch {
			case nr < 0 || int64(nr) >= limit:
				return fmt.Errorf("seccomp: %s argument rule: syscall number %d out of range [0, %#x)", abi.Name, nr, limit)
			case r.Arg < 0 || r.Arg > 5:
				return fmt.Errorf("seccomp: %s syscall %d: argument rule on argument %d (want 0-5)", abi.Name, nr, r.Arg)
			case r.Mask == 0 && (r.Max == 0 || r.Min > r.Max):
				return fmt.Errorf("seccomp: %s syscall %d: argument rule with an empty mask and range", abi.Name, nr)
			case !r.Action.valid():
				return fmt.Errorf("seccomp: %s syscall %d: argument rule: invalid action %v", abi.Name, nr, r.Action)
			}
		}
	}
	for abi, n := range p.TrapFrom {
		if _, ok := p.Rules[abi]; !ok {
			return fmt.Errorf("seccomp: policy has TrapFrom for ABI %v, which has no rules", abi)
		}
		limit := int64(1) << 32
		if abi.NrBit != 0 {
			limit = int64(abi.NrBit)
		}
		if n < 0 || int64(n) >= limit {
			return fmt.Errorf("seccomp: %s TrapFrom %d out of range [0, %#x)", abi.Name, n, limit)
		}
	}
	return nil
}

func containsABI(abis []*ABI, a *ABI) bool {
	for _, b := range abis {
		if a == b {
			return true
		}
	}
	return false
}
