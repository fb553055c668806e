package emul

import (
	"fmt"
	"testing"

	"github.com/droidroot/droidroot/seccomp"
	"github.com/droidroot/droidroot/tracer"
)

// TestAndroidAnswers proves that every call any release blocks, on x86_64
// and arm64, has a defined answer: a rewrite or emulation, a fixed errno,
// or another helper's emulation behind its switch.
func TestAndroidAnswers(t *testing.T) {
	for _, v := range seccomp.AndroidVersions() {
		p, err := seccomp.LoadAndroidPolicy(v)
		if err != nil {
			t.Fatal(err)
		}
		for _, abi := range []*seccomp.ABI{seccomp.X86_64, seccomp.AArch64} {
			for _, name := range p.BlockedNames(abi) {
				_, rw := androidRewrites[name]
				_, ans := androidAnswers[name]
				_, ref := refusals[name]
				if !rw && !ans && !ref && name != "chroot" {
					t.Errorf("Android %s %s: %s has no answer", v, abi, name)
				}
			}
		}
	}
}

// androidPolicy is release v's policy, or with "device" the one droidroot
// takes on a device (every call some release blocks).
func androidPolicy(t *testing.T, v string) *seccomp.AndroidPolicy {
	t.Helper()
	if v == "device" {
		return seccomp.DeviceAndroidPolicy()
	}
	p, err := seccomp.LoadAndroidPolicy(v)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAndroidTable checks that the table under each policy has a handler
// for every blocked native call (so a SIGSYS never falls to the tracer's
// safety net) and keeps the path handlers of calls Android allows.
func TestAndroidTable(t *testing.T) {
	abi := tracer.NativeABI()
	for _, v := range append(seccomp.AndroidVersions(), "device") {
		p := androidPolicy(t, v)
		tbl := Table(Config{}.WithAndroid(p))
		for name := range androidBlockedNames(p) {
			if _, ok := tbl[name]; !ok {
				t.Errorf("%s: no handler for blocked %s", v, name)
			}
		}
		if v != "device" {
			for name, nr := range abi.Names {
				if p.Blocks(abi, nr) && !androidBlockedNames(p)[name] {
					t.Errorf("%s: %s (%d) blocked but not in the blocked names", v, name, nr)
				}
			}
		}
		for _, name := range []string{"openat", "newfstatat", "execve", "connect", "accept4", "readlinkat"} {
			if _, ok := nativeNr(name); !ok {
				continue
			}
			if p.Blocks(abi, nr0(name)) {
				t.Errorf("%s: %s blocked", v, name)
			}
			if _, ok := tbl[name]; !ok {
				t.Errorf("%s: path handler of %s lost", v, name)
			}
		}
	}
	if _, ok := Table(Config{})["rseq"]; ok {
		t.Error("rseq traced without a policy")
	}
}

func nr0(name string) int { n, _ := nativeNr(name); return n }

// TestAndroidKeepsOtherEmulations: with its switch on, another helper's
// handler for a blocked call stays in the table; with it off, droidroot's
// answer replaces it.
func TestAndroidKeepsOtherEmulations(t *testing.T) {
	p, err := seccomp.LoadAndroidPolicy("16")
	if err != nil {
		t.Fatal(err)
	}
	marker := func(c *tracer.Call) {}
	for _, tc := range []struct {
		name string
		cfg  Config
		keep bool
	}{
		{"setfsuid", Config{EmulateSetID: true}, true},
		{"setfsuid", Config{}, false},
		{"semget", Config{SysVIPC: true}, true},
		{"set_robust_list", Config{EmulateRobustList: true}, true},
		{"faccessat2", Config{EmulateAt2: true}, true},
		{"faccessat2", Config{}, false},
		{"rseq", Config{EmulateAt2: true, SysVIPC: true, EmulateSetID: true, EmulateRobustList: true}, false},
	} {
		b := &tableBuilder{t: tracer.Table{tc.name: {Enter: marker}}, e: &Emulation{layers: map[string][]string{}}, layer: "android"}
		cfg := tc.cfg
		cfg.Android = p
		addAndroid(cfg, b)
		kept := fmt.Sprintf("%p", b.t[tc.name].Enter) == fmt.Sprintf("%p", marker)
		if kept != tc.keep {
			t.Errorf("%s with %+v: kept = %v, want %v", tc.name, tc.cfg, kept, tc.keep)
		}
	}
}
