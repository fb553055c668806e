package emul

import (
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
	table := Table(Config{Identity: &Identity{UID: 1000, GID: 1000}})
	for _, n := range []string{"fstat", "stat", "newfstatat", "fstatat", "statx", "fchown", "fchmod", "fsetxattr", "mknodat", "faccessat"} {
		if h, ok := table[n]; ok && h.Exit == nil {
			t.Errorf("-i: %s has no exit handler (owner or privilege fix-up)", n)
		}
	}
	if _, ok := Table(Config{EmulateSetID: true})["fstat"]; ok {
		t.Error("fstat is traced with set*id emulation alone (only -0/-i needs it)")
	}
}
