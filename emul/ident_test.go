package emul

import (
	"os"
	"testing"

	"github.com/droidroot/droidroot/seccomp"
)

// TestIdentityTable: the identity switches add handlers only when on, every one names a
// syscall of both architectures (bar the x86_64 legacy calls), and the set*id family and
// get*id are all there on both.
func TestIdentityTable(t *testing.T) {
	plain := Table(Config{})
	for _, name := range []string{"getuid", "setuid", "fstat", "prctl", "capget"} {
		if _, ok := plain[name]; ok {
			t.Errorf("%s is traced without -0/-i or set*id emulation", name)
		}
	}
	ids := []string{"getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid", "getgroups",
		"setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setfsuid", "setfsgid",
		"setgroups", "capget", "capset", "prctl"}
	for _, cfg := range []Config{{EmulateSetID: true}, {Identity: &Identity{UID: 0, GID: 0}}} {
		table := Table(cfg)
		for _, goarch := range []string{"amd64", "arm64"} {
			for _, n := range ids {
				if _, ok := seccomp.NativeABI(goarch).Nr(n); !ok {
					t.Errorf("%s: %q is not a syscall", goarch, n)
				}
				if table[n].Enter == nil {
					t.Errorf("%+v: no handler for %q", cfg, n)
				}
			}
		}
		for name := range table {
			_, amd := seccomp.NativeABI("amd64").Nr(name)
			_, arm := seccomp.NativeABI("arm64").Nr(name)
			if !amd && !arm {
				t.Errorf("handler %q is not a syscall on amd64 or arm64", name)
			}
		}
	}
	table := Table(Config{Identity: &Identity{UID: 4242, GID: 4242}})
	for _, n := range []string{"fstat", "stat", "newfstatat", "fstatat", "statx"} {
		if h, ok := table[n]; ok && h.Exit == nil {
			t.Errorf("-i 4242:4242: %s has no exit handler (owner fix-up)", n)
		}
	}
	if h := table["fchown"]; h.Exit != nil {
		t.Error("-i 4242:4242: fchown has a privilege fix-up, but a fake non-root never has privileges")
	}
	if os.Geteuid() != 0 {
		table := Table(Config{Identity: &Identity{}})
		for _, n := range []string{"fchown", "fchmod", "fsetxattr", "mknodat", "faccessat"} {
			if h := table[n]; h.Exit == nil {
				t.Errorf("-0 as a real user: %s has no privilege fix-up", n)
			}
		}
	}
	if _, ok := Table(Config{EmulateSetID: true})["fstat"]; ok {
		t.Error("fstat is traced with set*id emulation alone (only -0/-i needs it)")
	}
}
