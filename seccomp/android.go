package seccomp

import (
	"bufio"
	"embed"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The blocked-syscall lists of Android's app seccomp policy, one file per
// AOSP branch and ABI (see android/README.md for how they were made).
//
//go:embed android/*.tsv
var androidLists embed.FS

// androidBranches maps the version names --android-policy accepts to the
// AOSP branch whose lists they use, in release order.
var androidBranches = []struct{ version, branch string }{
	{"12", "android12-release"},
	{"12L", "android12L-release"},
	{"13", "android13-release"},
	{"14", "android14-release"},
	{"15", "android15-release"},
	{"15qpr2", "android15-qpr2-release"},
	{"16", "main"},
}

// AndroidVersions returns the version names LoadAndroidPolicy accepts, in
// release order.
func AndroidVersions() []string {
	var out []string
	for _, b := range androidBranches {
		out = append(out, b.version)
	}
	return out
}

// androidListABI maps the ABIs to the suffix of their list files.
var androidListABI = map[*ABI]string{X86_64: "x86_64", I386: "x86", AArch64: "arm64", ARM: "arm"}

// AndroidPolicy is the app seccomp policy of one Android release: which
// system calls trap (SECCOMP_RET_TRAP, a SIGSYS with si_errno 0) for each
// ABI a device runs.
type AndroidPolicy struct {
	// Version is the release ("12", ..., "16"), or "device" for the policy
	// of the device droidroot runs on, whose release is not known.
	Version string
	// Branch is the AOSP branch the lists come from ("" for "device").
	Branch  string
	blocked map[*ABI]map[int]string // listed blocked numbers and their names
	from    map[*ABI]int            // every number >= from[abi] traps
	device  bool
}

// LoadAndroidPolicy returns the app policy of release version (one of
// AndroidVersions, case-insensitive).
func LoadAndroidPolicy(version string) (*AndroidPolicy, error) {
	for _, b := range androidBranches {
		if !strings.EqualFold(b.version, version) {
			continue
		}
		p := &AndroidPolicy{Version: b.version, Branch: b.branch, blocked: map[*ABI]map[int]string{}, from: map[*ABI]int{}}
		for abi, suffix := range androidListABI {
			name := "android/" + b.branch + "_" + suffix + ".tsv"
			data, err := androidLists.ReadFile(name)
			if err != nil {
				return nil, fmt.Errorf("seccomp: embedded list %s: %w", name, err)
			}
			m, from, err := parseAndroidList(string(data))
			if err != nil {
				return nil, fmt.Errorf("seccomp: embedded list %s: %w", name, err)
			}
			p.blocked[abi], p.from[abi] = m, from
		}
		return p, nil
	}
	return nil, fmt.Errorf("unknown Android version %q (want one of %s)", version, strings.Join(AndroidVersions(), ", "))
}

// DeviceAndroidPolicy is the policy of a real Android device whose release
// droidroot does not know: the device's own filter traps, nothing is
// simulated, and what it blocks is taken as the union over every known
// release (a number any of them blocks).
func DeviceAndroidPolicy() *AndroidPolicy {
	d := &AndroidPolicy{Version: "device", blocked: map[*ABI]map[int]string{}, from: map[*ABI]int{}, device: true}
	for _, v := range AndroidVersions() {
		p, err := LoadAndroidPolicy(v)
		if err != nil {
			panic(err) // embedded data: covered by tests
		}
		for abi, list := range p.blocked {
			if d.blocked[abi] == nil {
				d.blocked[abi] = map[int]string{}
				d.from[abi] = p.from[abi]
			}
			for nr, name := range list {
				d.blocked[abi][nr] = name
			}
			d.from[abi] = min(d.from[abi], p.from[abi])
		}
	}
	return d
}

// Device reports whether p stands for a real device's own policy.
func (p *AndroidPolicy) Device() bool { return p.device }

// parseAndroidList reads "number<TAB>name" lines and the header's "every
// number above N is trapped too".
func parseAndroidList(s string) (map[int]string, int, error) {
	m := map[int]string{}
	from := -1
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "#"); ok {
			if _, after, ok := strings.Cut(rest, "every number above "); ok {
				n, err := strconv.Atoi(strings.Fields(after)[0])
				if err != nil {
					return nil, 0, fmt.Errorf("bad header %q", line)
				}
				from = n + 1
			}
			continue
		}
		nrs, name, ok := strings.Cut(line, "\t")
		nr, err := strconv.Atoi(nrs)
		if !ok || err != nil || nr < 0 || name == "" {
			return nil, 0, fmt.Errorf("bad line %q", line)
		}
		m[nr] = name
	}
	if from < 0 {
		return nil, 0, fmt.Errorf("no \"every number above N\" header")
	}
	return m, from, nil
}

// Blocks reports whether the policy traps syscall nr (as in
// seccomp_data.nr) of abi under its arch: a listed number, or any number
// from TrapFrom(abi) on (on x86_64 that includes every x32 number, which
// carries bit 30). For a device policy: a number some release blocks.
func (p *AndroidPolicy) Blocks(abi *ABI, nr int) bool {
	if _, listed := p.blocked[abi][nr]; listed {
		return true
	}
	return nr < 0 || nr >= p.from[abi]
}

// TrapFrom returns the first number from which every number of abi traps.
func (p *AndroidPolicy) TrapFrom(abi *ABI) int { return p.from[abi] }

// BlockedNames returns the names of the listed blocked syscalls of abi,
// sorted; for a device policy, the union over every known release.
func (p *AndroidPolicy) BlockedNames(abi *ABI) []string {
	set := map[string]bool{}
	for _, n := range p.blocked[abi] {
		set[n] = true
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Blocked returns the listed blocked numbers of abi and their names (a
// copy).
func (p *AndroidPolicy) Blocked(abi *ABI) map[int]string {
	out := map[int]string{}
	for nr, n := range p.blocked[abi] {
		out[nr] = n
	}
	return out
}

// Policy returns the filter that reproduces p on a host of goarch: every
// listed number and every number from TrapFrom on traps for the native
// and compat ABIs; every other ABI (x32) and arch traps entirely.
func (p *AndroidPolicy) Policy(goarch string) (Policy, error) {
	if p.Device() {
		return Policy{}, fmt.Errorf("seccomp: the device policy cannot be simulated")
	}
	pol := Policy{Rules: map[*ABI]map[int]Action{}, TrapFrom: map[*ABI]int{}, TrapForeign: true}
	for _, abi := range HostABIs(goarch) {
		list, ok := p.blocked[abi]
		if !ok {
			continue // x32: foreign
		}
		rules := map[int]Action{}
		for nr := range list {
			rules[nr] = Trap
		}
		pol.Rules[abi] = rules
		pol.TrapFrom[abi] = p.from[abi]
	}
	return pol, nil
}

// String returns "Android VERSION (BRANCH)".
func (p *AndroidPolicy) String() string {
	if p.Device() {
		return "the device's Android policy"
	}
	return "Android " + p.Version + " (" + p.Branch + ")"
}

// Install puts the calling process, every thread of it (TSYNC), under the
// filter that reproduces p on goarch, as Android does to an app process;
// children and their execs inherit it. It sets no_new_privs.
func (p *AndroidPolicy) Install(goarch string) error {
	pol, err := p.Policy(goarch)
	if err != nil {
		return err
	}
	prog, err := Build(goarch, pol)
	if err != nil {
		return fmt.Errorf("building the %s filter: %w", p, err)
	}
	raw, err := Assemble(prog)
	if err != nil {
		return fmt.Errorf("assembling the %s filter: %w", p, err)
	}
	if err := Install(raw, unix.SECCOMP_FILTER_FLAG_TSYNC); err != nil {
		return fmt.Errorf("installing the %s filter: %w", p, err)
	}
	return nil
}
