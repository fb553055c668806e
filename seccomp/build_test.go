package seccomp

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// TestVM runs the programs in x/net/bpf's VM for every host ABI of both
// GOARCHes, every number from 0 (NrBit set for x32) to the table's highest
// + 64, several policies and instruction pointers around the trampoline.
// In ARM's million-number hole between its regular and private (0xf0000+)
// numbers it probes one instruction pointer per number. -short skips it
// (skipArchIndependent).
func TestVM(t *testing.T) {
	skipArchIndependent(t)
	type trampCase struct {
		t   uint64
		ips []uint64
	}
	around := func(T uint64) []uint64 { return []uint64{T - 1, T, T + TrampolineSize - 1, T + TrampolineSize} }
	for _, goarch := range goarches {
		for _, np := range policies {
			tramps := []trampCase{
				{0, append(around(0), around(trampolineT)...)},
				{trampolineT, around(trampolineT)},
				{trampolineT, around(trampolineT)},                                                             // with TrampolineCalls: see below
				{trampolineT, append(around(trampolineT), loaderL.Lo-1, loaderL.Lo, loaderL.Hi-1, loaderL.Hi)}, // and LoaderCalls
				{0, []uint64{trampolineT, loaderL.Lo - 1, loaderL.Lo, loaderL.Hi - 1, loaderL.Hi}},             // LoaderCalls alone
			}
			if np.name == "realistic" {
				tramps = append(tramps,
					trampCase{0xfffff000, around(0xfffff000)},                       // ends at 4 GiB
					trampCase{0xffff_ffff_ffff_f000, around(0xffff_ffff_ffff_f000)}, // last page
					trampCase{0x1000, around(0x1000)},                               // high word 0
					trampCase{0x1_0000_0000, around(0x1_0000_0000)},                 // low word 0
				)
			}
			for i, tc := range tramps {
				name := fmt.Sprintf("%s/%s/T=%#x", goarch, np.name, tc.t)
				switch i {
				case 2:
					name += "/calls"
				case 3, 4:
					name += "/loader"
				}
				t.Run(name, func(t *testing.T) {
					p := np.policy(goarch)
					p.Trampoline = tc.t
					if i == 3 || i == 4 {
						// Every fifth traced number of every ABI has the
						// loader's check (some the trampoline's too).
						p.Loader, p.LoaderCalls = loaderL, everyNthTraced(p, 5)
					}
					if i == 2 || i == 3 {
						// Every third traced number of every ABI has the check.
						p.TrampolineCalls = everyNthTraced(p, 3)
					}
					prog := mustBuild(t, goarch, p)
					vm, err := bpf.NewVM(prog)
					if err != nil {
						t.Fatalf("NewVM: %v", err)
					}
					probe := func(arch, nr uint32, ip uint64, args [6]uint64) verdict {
						ret, err := vm.Run(seccompData(nr, arch, ip, args))
						if err != nil {
							t.Fatalf("Run(arch %#x nr %#x ip %#x): %v", arch, nr, ip, err)
						}
						return toVerdict(uint32(ret))
					}
					type result struct {
						ABI  string
						Nr   uint32
						IP   uint64
						Args [6]uint64
						Want verdict
						Got  verdict
					}
					var bad []result
					for _, abi := range HostABIs(goarch) {
						lo, hi := nrRange(abi)
						for nr := lo; nr <= hi; nr++ {
							ips := tc.ips
							if !nearTable(abi, nr) {
								// ARM's hole between its regular and private numbers:
								// one instruction pointer per number, in turn.
								ips = ips[int(nr)%len(ips):][:1]
							}
							for _, ip := range ips {
								for _, args := range argsFor(abi, p, nr) {
									want := expectABI(abi, p, nr, ip, args)
									if got := probe(abi.AuditArch, nr, ip, args); got != want {
										bad = append(bad, result{abi.Name, nr, ip, args, want, got})
									}
								}
							}
						}
					}
					if len(bad) > 0 {
						if len(bad) > 40 {
							t.Errorf("%d wrong verdicts, the first 40 follow", len(bad))
							bad = bad[:40]
						}
						want := make([]result, len(bad))
						for i, r := range bad {
							want[i], want[i].Got = r, r.Want
						}
						t.Errorf("verdicts (-want +got):\n%s", cmp.Diff(want, bad))
					}
					// Numbers outside the tables, and arches of no host ABI.
					odd := []uint32{0x3fffffff, 0x40000000, 0x7fffffff, 0x80000000, 0xbfffffff, 0xc0000000, 0xfffffffe, 0xffffffff}
					for _, arch := range archesToProbe() {
						for _, nr := range append(odd, 0, 1, 2, 59, 221) {
							for _, ip := range tc.ips {
								want := expect(goarch, p, arch, nr, ip, junkArgs)
								if got := probe(arch, nr, ip, junkArgs); got != want {
									t.Errorf("arch %#x nr %#x ip %#x: got %v, want %v", arch, nr, ip, got, want)
								}
							}
						}
					}
				})
			}
		}
	}
}

// everyNthTraced marks, per ABI of p's rules, the traced numbers that are
// multiples of n (TrampolineCalls or LoaderCalls for a policy's tests).
func everyNthTraced(p Policy, n int) map[*ABI]map[int]bool {
	out := map[*ABI]map[int]bool{}
	for abi, rules := range p.Rules {
		calls := map[int]bool{}
		for nr, act := range rules {
			if (act == TraceEntry || act == TraceExit) && nr%n == 0 {
				calls[nr] = true
			}
		}
		out[abi] = calls
	}
	return out
}

// nearTable reports whether nr (NrBit included) is within 64 of a number
// of abi's table.
func nearTable(abi *ABI, nr uint32) bool {
	nrs := sortedTables[abi]
	n := int(nr - abi.NrBit)
	i := sort.SearchInts(nrs, n-64) // first number >= n-64
	return i < len(nrs) && nrs[i] <= n+64
}

var sortedTables = func() map[*ABI][]int {
	m := map[*ABI][]int{}
	for _, a := range allABIs {
		m[a] = a.sortedNumbers()
	}
	return m
}()

func TestIntervals(t *testing.T) {
	tests := []struct {
		name  string
		rules map[int]Action
		bit   uint32
		want  []interval
	}{
		{"empty", nil, 0, []interval{{0, Allow}}},
		{"only allow", map[int]Action{3: Allow}, 0, []interval{{0, Allow}}},
		{"one", map[int]Action{3: TraceEntry}, 0, []interval{{0, Allow}, {3, TraceEntry}, {4, Allow}}},
		{"zero", map[int]Action{0: TraceExit}, 0, []interval{{0, TraceExit}, {1, Allow}}},
		{"run merges", map[int]Action{3: TraceEntry, 4: TraceEntry, 5: TraceExit, 7: TraceExit},
			0, []interval{{0, Allow}, {3, TraceEntry}, {5, TraceExit}, {6, Allow}, {7, TraceExit}, {8, Allow}}},
		{"top", map[int]Action{0xffffffff: TraceEntry}, 0, []interval{{0, Allow}, {0xffffffff, TraceEntry}}},
		{"x32", map[int]Action{0: TraceEntry, 2: TraceEntry}, x32SyscallBit,
			[]interval{{0x40000000, TraceEntry}, {0x40000001, Allow}, {0x40000002, TraceEntry}, {0x40000003, Allow}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, intervals(tt.rules, tt.bit, -1, Allow), cmp.AllowUnexported(interval{})); diff != "" {
				t.Errorf("intervals (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBuildErrors(t *testing.T) {
	tests := []struct {
		name   string
		goarch string
		p      Policy
		want   string
	}{
		{"goarch", "riscv64", Policy{}, "unsupported GOARCH"},
		{"foreign ABI", "amd64", Policy{Rules: map[*ABI]map[int]Action{AArch64: {}}}, "not an ABI of amd64"},
		{"foreign ABI arm64", "arm64", Policy{Rules: map[*ABI]map[int]Action{X32: {}}}, "not an ABI of arm64"},
		{"negative", "amd64", Policy{Rules: map[*ABI]map[int]Action{X86_64: {-1: TraceEntry}}}, "out of range"},
		{"x32 bit", "amd64", Policy{Rules: map[*ABI]map[int]Action{X32: {0x40000000: TraceEntry}}}, "out of range"},
		{"action", "amd64", Policy{Rules: map[*ABI]map[int]Action{X86_64: {1: 7}}}, "invalid action"},
		{"errno 0", "amd64", Policy{Rules: map[*ABI]map[int]Action{X86_64: {1: Errno(0)}}}, "invalid action"},
		{"errno too big", "amd64", Policy{Rules: map[*ABI]map[int]Action{X86_64: {1: Errno(4096)}}}, "invalid action"},
		{"default", "amd64", Policy{Rules: map[*ABI]map[int]Action{X86_64: {}}, Default: 9}, "invalid default action"},
		{"alignment", "arm64", Policy{Trampoline: 0x1234}, "not 4 KiB-aligned"},
		{"loader empty", "arm64", Policy{Loader: IPRange{0x2000, 0x2000}}, "loader range"},
		{"loader 4 GiB", "arm64", Policy{Loader: IPRange{0xffff_f000, 0x1_0000_1000}}, "loader range"},
		{"arg rule ABI", "amd64", Policy{Rules: map[*ABI]map[int]Action{X86_64: {}}, ArgRules: map[*ABI]map[int]ArgRule{I386: {1: {Mask: 1, Action: TraceEntry}}}}, "ArgRules for ABI"},
		{"arg rule nr", "amd64", Policy{Rules: map[*ABI]map[int]Action{X86_64: {}}, ArgRules: map[*ABI]map[int]ArgRule{X86_64: {-1: {Mask: 1, Action: TraceEntry}}}}, "out of range"},
		{"arg rule arg", "amd64", Policy{Rules: map[*ABI]map[int]Action{X86_64: {}}, ArgRules: map[*ABI]map[int]ArgRule{X86_64: {1: {Arg: 6, Mask: 1, Action: TraceEntry}}}}, "argument 6"},
		{"arg rule mask", "amd64", Policy{Rules: map[*ABI]map[int]Action{X86_64: {}}, ArgRules: map[*ABI]map[int]ArgRule{X86_64: {1: {Action: TraceEntry}}}}, "empty mask"},
		{"arg rule action", "amd64", Policy{Rules: map[*ABI]map[int]Action{X86_64: {}}, ArgRules: map[*ABI]map[int]ArgRule{X86_64: {1: {Mask: 1, Action: 7}}}}, "invalid action"},
		{"too long", "arm64", Policy{Rules: map[*ABI]map[int]Action{AArch64: denseRules(6000)}}, "BPF_MAXINSNS"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Build(tt.goarch, tt.p)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Build error = %v, want one containing %q", err, tt.want)
			}
		})
	}
	if _, err := Build("amd64", Policy{Rules: map[*ABI]map[int]Action{X86_64: denseRules(5000)}}); !errors.Is(err, errTooLong) {
		t.Errorf("huge policy: error %v, want errTooLong", err)
	}
}

// TestJumpReach checks the assembled form of the largest policies: every
// conditional offset fits in 8 bits (Assemble would fail otherwise) and
// the program is within BPF_MAXINSNS.
func TestJumpReach(t *testing.T) {
	skipArchIndependent(t)
	for _, goarch := range goarches {
		for _, np := range policies {
			for _, T := range []uint64{0, trampolineT} {
				p := np.policy(goarch)
				p.Trampoline = T
				prog := mustBuild(t, goarch, p)
				raw := mustAssemble(t, prog)
				far := 0
				for pc, ins := range raw {
					if ins.Code == opJa {
						far++
					}
					if ins.Code&0x07 == 0x05 && ins.Code != opJa && (pc+1+int(ins.Jt) >= len(raw) || pc+1+int(ins.Jf) >= len(raw)) {
						t.Errorf("%s/%s: jump at %d leaves the program", goarch, np.name, pc)
					}
				}
				t.Logf("%s %-28s T=%#-14x %4d instructions, %3d ja", goarch, np.name, T, len(raw), far)
			}
		}
	}
}

func TestDisassembleDescribe(t *testing.T) {
	p := Policy{Rules: map[*ABI]map[int]Action{
		X86_64: {110: TraceEntry, 121: TraceExit},
		X32:    {39: TraceEntry},
	}, Trampoline: trampolineT}
	prog := mustBuild(t, "amd64", p)
	dis := Disassemble(prog)
	for _, want := range []string{
		"; arch", "AUDIT_ARCH x86_64", "AUDIT_ARCH i386", "x32 (X32_SYSCALL_BIT)",
		"x86_64 getppid (110)", "x32 getpid (39)", "instruction_pointer (high)",
		"TRACE entry", "TRACE exit", "TRAP unsupported ABI", "TRAP unknown arch", "ALLOW",
	} {
		if !strings.Contains(dis, want) {
			t.Errorf("Disassemble lacks %q:\n%s", want, dis)
		}
	}
	if n := strings.Count(dis, "\n"); n != len(prog) {
		t.Errorf("Disassemble: %d lines for %d instructions", n, len(prog))
	}
	desc := Describe("amd64", p)
	for _, want := range []string{"getppid", "110  entry", "getpgid", "121  exit", "i386 (arch 0x40000003): unsupported", "x32 (arch 0xc000003e, nr | 0x40000000): 1 traced", "trampoline"} {
		if !strings.Contains(desc, want) {
			t.Errorf("Describe lacks %q:\n%s", want, desc)
		}
	}
	t.Logf("\n%s\n%s", desc, dis)
}

// TestArgRule: droidroot's one argument rule, clone traced when its flags
// have CLONE_UNTRACED, in the VM and in Disassemble and Describe; ordinary
// clones (and a bit in the high word, which the kernel ignores) are allowed.
func TestArgRule(t *testing.T) {
	for _, goarch := range goarches {
		abi := NativeABI(goarch)
		clone, _ := abi.Nr("clone")
		p := Policy{Rules: map[*ABI]map[int]Action{abi: {clone: Allow}}, Default: Errno(unix.ENOSYS),
			ArgRules: cloneUntracedRule(goarch), AllowSkipped: true}
		prog := mustBuild(t, goarch, p)
		vm, err := bpf.NewVM(prog)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			flags uint64
			want  verdict
		}{
			{uint64(unix.SIGCHLD), verdict{"ALLOW", 0}},
			{unix.CLONE_VM | unix.CLONE_FS | unix.CLONE_FILES | unix.CLONE_SIGHAND | unix.CLONE_THREAD |
				unix.CLONE_SYSVSEM | unix.CLONE_SETTLS | unix.CLONE_PARENT_SETTID | unix.CLONE_CHILD_CLEARTID, verdict{"ALLOW", 0}},
			{unix.CLONE_UNTRACED | uint64(unix.SIGCHLD), verdict{"TRACE", DataEntry}},
			{unix.CLONE_UNTRACED | unix.CLONE_VM | unix.CLONE_VFORK, verdict{"TRACE", DataEntry}},
			{unix.CLONE_UNTRACED << 32, verdict{"ALLOW", 0}},
		} {
			args := junkArgs
			args[0] = tc.flags
			ret, err := vm.Run(seccompData(uint32(clone), abi.AuditArch, 0, args))
			if err != nil {
				t.Fatal(err)
			}
			if got := toVerdict(uint32(ret)); got != tc.want {
				t.Errorf("%s: clone(%#x): %v, want %v", goarch, tc.flags, got, tc.want)
			}
		}
		dis := Disassemble(prog)
		for _, want := range []string{"args[0] (low)", "jset #0x800000"} {
			if !strings.Contains(dis, want) {
				t.Errorf("%s: Disassemble lacks %q:\n%s", goarch, want, dis)
			}
		}
		desc := Describe(goarch, p)
		if want := fmt.Sprintf("  %-24s %6d  allow; entry if args[0] & 0x800000", "clone", clone); !strings.Contains(desc, want) {
			t.Errorf("%s: Describe lacks %q:\n%s", goarch, want, desc)
		}
		if !strings.Contains(desc, "0 traced, 0 refused, 1 by argument, 3 intervals") || strings.Contains(desc, "allowed (1)") {
			t.Errorf("%s: Describe lists clone as allowed:\n%s", goarch, desc)
		}
	}
}

// TestErrnoAction checks Errno's actions: names, the kernel return value,
// and what Disassemble and Describe say of a policy that refuses calls and
// answers every unclassified number with ENOSYS.
func TestErrnoAction(t *testing.T) {
	for _, tt := range []struct {
		act  Action
		str  string
		ret  uint32
		errn unix.Errno
	}{
		{Allow, "allow", retAllow, 0},
		{Trap, "trap", retTrap, 0},
		{Errno(unix.EPERM), "errno EPERM", 0x00050001, unix.EPERM},
		{Errno(unix.ENOSYS), "errno ENOSYS", 0x00050026, unix.ENOSYS},
		{Errno(4000), "errno 4000", 0x00050fa0, 4000},
	} {
		if got := tt.act.String(); got != tt.str {
			t.Errorf("%#x: String() = %q, want %q", uint32(tt.act), got, tt.str)
		}
		if got := tt.act.ret(); got != tt.ret {
			t.Errorf("%v: ret() = %#x, want %#x", tt.act, got, tt.ret)
		}
		if e, ok := tt.act.Errno(); e != tt.errn || ok != (tt.errn != 0) {
			t.Errorf("%v: Errno() = %v, %v", tt.act, e, ok)
		}
	}
	if _, ok := Errno(0).Errno(); ok {
		t.Error("Errno(0) is an errno action")
	}

	getppid, mount := 110, 165
	p := Policy{Rules: map[*ABI]map[int]Action{X86_64: {
		0: Allow, getppid: TraceEntry, mount: Errno(unix.EPERM),
	}}, Default: Errno(unix.ENOSYS), AllowSkipped: true}
	prog := mustBuild(t, "amd64", p)
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatal(err)
	}
	for nr, want := range map[uint32]verdict{
		0: {"ALLOW", 0}, 110: {"TRACE", DataEntry}, 165: {"ERRNO", uint32(unix.EPERM)},
		1: {"ERRNO", uint32(unix.ENOSYS)}, 464: {"ERRNO", uint32(unix.ENOSYS)},
		1000: {"ERRNO", uint32(unix.ENOSYS)}, 0x3fffffff: {"ERRNO", uint32(unix.ENOSYS)},
		0xffffffff: {"ALLOW", 0}, 0x40000000: {"TRAP", DataUnsupportedABI},
	} {
		ret, err := vm.Run(seccompData(nr, auditArchX86_64, 0, junkArgs))
		if err != nil {
			t.Fatal(err)
		}
		if got := toVerdict(uint32(ret)); got != want {
			t.Errorf("nr %#x: %v, want %v", nr, got, want)
		}
	}
	dis := Disassemble(prog)
	for _, want := range []string{"ERRNO EPERM", "ERRNO ENOSYS", "x86_64 mount (165)"} {
		if !strings.Contains(dis, want) {
			t.Errorf("Disassemble lacks %q:\n%s", want, dis)
		}
	}
	desc := Describe("amd64", p)
	for _, want := range []string{"1 traced, 1 refused", "mount                       165  errno EPERM", "allowed (1): read", "every other number: errno ENOSYS"} {
		if !strings.Contains(desc, want) {
			t.Errorf("Describe lacks %q:\n%s", want, desc)
		}
	}
	t.Logf("\n%s\n%s", desc, dis)
}

func TestABIs(t *testing.T) {
	got := map[string][]string{}
	for _, g := range append(goarches, "386") {
		for _, a := range HostABIs(g) {
			got[g] = append(got[g], a.Name)
		}
		if n := NativeABI(g); n != nil {
			got[g+" native"] = []string{n.Name}
		}
	}
	want := map[string][]string{
		"amd64": {"x86_64", "i386", "x32"}, "amd64 native": {"x86_64"},
		"arm64": {"aarch64", "arm"}, "arm64 native": {"aarch64"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("HostABIs/NativeABI (-want +got):\n%s", diff)
	}
	for _, c := range []struct {
		abi  *ABI
		name string
		nr   int
	}{{X86_64, "getppid", 110}, {I386, "getppid", 64}, {X32, "getppid", 110}, {AArch64, "getppid", 173}, {ARM, "getppid", 64}, {ARM, "set_tls", 0xf0005}} {
		if nr, ok := c.abi.Nr(c.name); !ok || nr != c.nr {
			t.Errorf("%s.Nr(%q) = %d, %v; want %d", c.abi.Name, c.name, nr, ok, c.nr)
		}
	}
	if _, ok := AArch64.Nr("open"); ok {
		t.Errorf("aarch64 has no open")
	}
}
