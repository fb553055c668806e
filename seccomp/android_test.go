package seccomp

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/net/bpf"
)

// androidSpec reads a list file independently of LoadAndroidPolicy: the
// listed numbers and N of "every number above N is trapped too".
func androidSpec(t *testing.T, branch, suffix string) (map[uint32]bool, uint32) {
	t.Helper()
	data, err := os.ReadFile("android/" + branch + "_" + suffix + ".tsv")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[uint32]bool{}
	above := -1
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(line)
		if f[0] == "#" {
			for i := range f {
				if f[i] == "above" {
					above, _ = strconv.Atoi(f[i+1])
				}
			}
			continue
		}
		n, err := strconv.Atoi(f[0])
		if err != nil {
			t.Fatalf("%s: %q", branch, line)
		}
		listed[uint32(n)] = true
	}
	if above < 0 {
		t.Fatalf("%s_%s: no header", branch, suffix)
	}
	return listed, uint32(above)
}

// TestAndroidPolicyVM runs the filter of every release on both hosts in
// the BPF VM and in the kernel-like interpreter: every number of every
// ABI gets the action its list says, x32 and foreign arches trap, and
// every allowed call is a constant ALLOW for the kernel's action cache.
func TestAndroidPolicyVM(t *testing.T) {
	for _, goarch := range goarches {
		for _, b := range androidBranches {
			t.Run(goarch+"/"+b.version, func(t *testing.T) {
				ap, err := LoadAndroidPolicy(b.version)
				if err != nil {
					t.Fatal(err)
				}
				pol, err := ap.Policy(goarch)
				if err != nil {
					t.Fatal(err)
				}
				prog := mustBuild(t, goarch, pol)
				raw := mustAssemble(t, prog)
				vm, err := bpf.NewVM(prog)
				if err != nil {
					t.Fatal(err)
				}
				check := func(what string, arch, nr uint32, trap bool) {
					ret, err := vm.Run(seccompData(nr, arch, 0x1234, junkArgs))
					if err != nil {
						t.Fatal(err)
					}
					want := uint32(retAllow)
					if trap {
						want = retTrap
					}
					if uint32(ret) != want {
						t.Errorf("%s nr %#x: VM returned %#x, want %#x", what, nr, ret, want)
					}
					got, _, ok := run(raw, dataWords(nr, arch, 0x1234, junkArgs), !trap)
					if !ok || got != want {
						t.Errorf("%s nr %#x: interpreter returned %#x ok=%v (constant ALLOW expected for allowed calls), want %#x", what, nr, got, ok, want)
					}
				}
				odd := []uint32{0x3fffffff, 0x7fffffff, 0x80000000, 0xbfffffff, 0xfffffffe, 0xffffffff, 0xf0000, 0xf0005, 0xf0006}
				for _, abi := range HostABIs(goarch) {
					suffix, listed := androidListABI[abi]
					if !listed { // x32: every number traps
						for _, nr := range []uint32{0, 1, 2, 21, 59, 512, 547, 0x3fffffff} {
							check("x32", abi.AuditArch, nr|abi.NrBit, true)
						}
						continue
					}
					blocked, above := androidSpec(t, b.branch, suffix)
					nrs := append([]uint32{}, odd...)
					for nr := uint32(0); nr <= above+64; nr++ {
						nrs = append(nrs, nr)
					}
					for _, nr := range nrs {
						if abi == X86_64 && nr&x32SyscallBit != 0 {
							continue // x32
						}
						check(abi.Name, abi.AuditArch, nr, blocked[nr] || nr > above)
						if got := ap.Blocks(abi, int(int32(nr))); got != (blocked[nr] || nr > above) {
							t.Errorf("%s: Blocks(%#x) = %v", abi.Name, nr, got)
						}
					}
				}
				// x32 numbers under the x86_64 arch, and foreign arches.
				if goarch == "amd64" {
					for _, nr := range []uint32{0x40000000, 0x40000002, 0x40000200, 0x7fffffff, 0xc0000000} {
						check("x32", auditArchX86_64, nr, true)
					}
				}
				for _, arch := range archesToProbe() {
					native := false
					for _, abi := range HostABIs(goarch) {
						native = native || abi.AuditArch == arch
					}
					if !native {
						for _, nr := range []uint32{0, 1, 59, 221, 0xffffffff} {
							check(fmt.Sprintf("arch %#x", arch), arch, nr, true)
						}
					}
				}
			})
		}
	}
}

// TestAndroidVersions checks the accepted names and the release facts
// the docs rely on.
func TestAndroidVersions(t *testing.T) {
	if _, err := LoadAndroidPolicy("11"); err == nil {
		t.Error("version 11 accepted")
	}
	for _, tc := range []struct {
		version, name string
		abi           *ABI
		blocked       bool
	}{
		{"12", "clone3", AArch64, true},
		{"14", "clone3", AArch64, true},
		{"15", "clone3", AArch64, false},
		{"16", "clone3", X86_64, false},
		{"12", "close_range", X86_64, true},
		{"13", "close_range", X86_64, false},
		{"16", "rseq", AArch64, true},
		{"16", "accept", AArch64, true},
		{"16", "accept4", AArch64, false},
		{"12l", "stat", X86_64, true},
		{"13", "stat", X86_64, false},
		{"16", "access", X86_64, true},
		{"16", "faccessat", X86_64, false},
		{"16", "newfstatat", X86_64, false},
		{"16", "epoll_pwait", X86_64, false},
		{"16", "inotify_init1", X86_64, false},
		{"16", "pidfd_open", X86_64, false},
	} {
		p, err := LoadAndroidPolicy(tc.version)
		if err != nil {
			t.Fatal(err)
		}
		nr, ok := tc.abi.Nr(tc.name)
		if !ok {
			t.Fatalf("no %s on %s", tc.name, tc.abi)
		}
		if got := p.Blocks(tc.abi, nr); got != tc.blocked {
			t.Errorf("Android %s %s %s: blocked = %v, want %v", tc.version, tc.abi, tc.name, got, tc.blocked)
		}
	}
	d := DeviceAndroidPolicy()
	if !d.Device() || len(d.BlockedNames(AArch64)) < 100 {
		t.Errorf("device policy: %d names", len(d.BlockedNames(AArch64)))
	}
	// The device policy blocks what any release blocks.
	for _, name := range []string{"clone3", "bpf", "close_range", "rseq", "access"} {
		abi := AArch64
		if name == "access" {
			abi = X86_64
		}
		if nr, _ := abi.Nr(name); !d.Blocks(abi, nr) {
			t.Errorf("device policy allows %s", name)
		}
	}
	if nr, _ := AArch64.Nr("openat"); d.Blocks(AArch64, nr) {
		t.Error("device policy blocks openat")
	}
	if _, err := d.Policy("arm64"); err == nil {
		t.Error("the device policy was simulated")
	}
}
