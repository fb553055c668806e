package loader

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// toolchain builds and runs test programs for one architecture.
type toolchain struct {
	goarch string
	cc     string // C compiler for the architecture
	ldso   string // the host's dynamic linker for the architecture (copied, never used in place)
	libdir string // where that dynamic linker's libc lives, if not in its default path
}

var toolchains = map[string]toolchain{
	"amd64": {goarch: "amd64", cc: "gcc", ldso: "/lib64/ld-linux-x86-64.so.2"},
	"arm64": {goarch: "arm64", cc: "aarch64-linux-gnu-gcc", ldso: "/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1",
		libdir: "/usr/aarch64-linux-gnu/lib"},
}

// probe is testdata/probe.c built one way.
type probe struct {
	name    string
	flags   []string
	dynamic bool   // has a PT_INTERP
	path    string // the built program
}

// probeSet is every variant of the probe for one architecture, and a copy of the
// architecture's ld.so that the dynamic ones must be run with.
type probeSet struct {
	dir    string
	interp string
	list   []probe
}

// buildProbes compiles the probe variants with tc's compiler, or skips the test.
func buildProbes(t *testing.T, tc toolchain) *probeSet {
	t.Helper()
	if _, err := exec.LookPath(tc.cc); err != nil {
		t.Skipf("no %s compiler: %v", tc.goarch, err)
	}
	src, err := filepath.Abs("testdata/probe.c")
	if err != nil {
		t.Fatal(err)
	}
	ps := &probeSet{dir: t.TempDir()}
	ps.list = []probe{
		{name: "static", flags: []string{"-static"}},
		{name: "static-pie", flags: []string{"-static-pie"}},
		{name: "dynamic-pie", flags: []string{"-pie", "-fpie"}, dynamic: true},
		{name: "dynamic-exec", flags: []string{"-no-pie", "-fno-pie"}, dynamic: true},
	}
	for i := range ps.list {
		p := &ps.list[i]
		p.path = filepath.Join(ps.dir, "probe-"+p.name)
		args := append([]string{"-O1", "-o", p.path, src}, p.flags...)
		if out, err := exec.Command(tc.cc, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", tc.cc, strings.Join(args, " "), err, out)
		}
	}

	// The dynamic probes run with a copy of ld.so, so that the test can tell that the
	// interpreter named in the script (not the one in PT_INTERP) was mapped.
	ldso, err := os.ReadFile(tc.ldso)
	if err != nil {
		t.Skipf("no %s dynamic linker: %v", tc.goarch, err)
	}
	ps.interp = filepath.Join(ps.dir, "ld-copy.so")
	if err := os.WriteFile(ps.interp, ldso, 0o755); err != nil {
		t.Fatal(err)
	}
	return ps
}

// probeWant is what a probe run must report.
type probeWant struct {
	argv   []string
	env    string // value of DR_PROBE
	execfn string
	interp string // host path of the interpreter that must be mapped, "" for static
	vdso   bool   // AT_SYSINFO_EHDR must be set (not under qemu-user)
}

// checkProbe checks the output of a probe run against want.
func checkProbe(t *testing.T, out string, want probeWant) {
	t.Helper()
	vals := map[string]string{}
	var maps []string
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		if k == "map" {
			maps = append(maps, v)
			continue
		}
		vals[k] = v
	}
	if vals["malloc"] == "" {
		t.Fatalf("probe output incomplete:\n%s", out)
	}

	expect := func(key, wantv string) {
		t.Helper()
		if got, ok := vals[key]; !ok || got != wantv {
			t.Errorf("%s = %q, want %q", key, got, wantv)
		}
	}
	same := func(a, b string) {
		t.Helper()
		if vals[a] != vals[b] {
			t.Errorf("%s = %s but %s = %s", a, vals[a], b, vals[b])
		}
	}

	expect("argc", strconv.Itoa(len(want.argv)))
	for i, a := range want.argv {
		expect("argv"+strconv.Itoa(i), a)
	}
	expect("env", want.env)
	expect("execfn", want.execfn)
	same("at_phdr", "ehdr_phdr")
	same("at_phdr", "dl_phdr")
	same("at_phnum", "ehdr_phnum")
	expect("at_phent", "56")
	same("at_entry", "start")
	expect("malloc", "1")
	expect("random", "1")
	if want.vdso {
		expect("vdso", "1")
	}

	if want.interp == "" {
		expect("at_base", "0")
	} else {
		same("at_base", "interp_base")
		expect("interp_base", vals["at_base"])
		if vals["at_base"] == "0" {
			t.Error("at_base = 0 for a dynamic program")
		}
	}
	mapped := false
	for _, m := range maps {
		if m == want.interp {
			mapped = true
		} else if strings.HasPrefix(filepath.Base(m), "ld-") {
			t.Errorf("%s is mapped; only the script's interpreter %q may be", m, want.interp)
		}
	}
	if want.interp != "" && !mapped {
		t.Errorf("interpreter %s not in /proc/self/maps %q", want.interp, maps)
	}
}
