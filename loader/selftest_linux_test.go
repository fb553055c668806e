package loader

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestSelftest runs the loader without a tracer, through its test-only entry
// (selftest.c, built by "make loader-selftest-<arch>"), which builds the load script
// from its argv. Other architectures run under qemu-user when it is installed:
// qemu-user cannot run a ptrace tracer, but it can run the loader, so this is how
// the arm64 loader is exercised on an x86_64 host.
func TestSelftest(t *testing.T) {
	for _, goarch := range []string{"amd64", "arm64"} {
		t.Run(goarch, func(t *testing.T) {
			tc := toolchains[goarch]
			runner := runnerFor(t, goarch)
			vdso := runner == nil // qemu-user gives no vDSO
			ps := buildProbes(t, tc)
			loader := buildSelftest(t, goarch)

			argv := []string{"guest-argv0", "two words", ""}
			for _, p := range ps.list {
				t.Run(p.name, func(t *testing.T) {
					interp := ""
					if p.dynamic {
						interp = ps.interp
					}
					execfn := "/guest/bin/probe-" + p.name
					args := append([]string{loader, p.path, interp, execfn}, argv...)
					cmd := exec.Command(args[0], args[1:]...)
					if runner != nil {
						cmd = exec.Command(runner[0], append(runner[1:], args...)...)
					}
					cmd.Env = []string{"DR_PROBE=selftest", "DR_PROBE_INTERP=" + ps.interp}
					if tc.libdir != "" && runner != nil {
						cmd.Env = append(cmd.Env, "LD_LIBRARY_PATH="+tc.libdir)
					}
					var stderr bytes.Buffer
					cmd.Stderr = &stderr
					out, err := cmd.Output()
					var ee *exec.ExitError
					if !errors.As(err, &ee) || ee.ExitCode() != 42 {
						t.Fatalf("%v: %v, want exit 42\nstderr: %s\nstdout: %s", args, err, stderr.String(), out)
					}
					checkProbe(t, string(out), probeWant{argv: argv, env: "selftest", execfn: execfn, interp: interp, vdso: vdso})
				})
			}

			t.Run("missing program", func(t *testing.T) {
				missing := filepath.Join(ps.dir, "missing")
				args := append(runner, loader, missing, "", "/x", "argv0")
				out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 127 {
					t.Errorf("%v, want exit 127", err)
				}
				if want := "droidroot loader: program: cannot open (errno 2): /x\n"; string(out) != want {
					t.Errorf("output %q, want %q", out, want)
				}
			})
		})
	}
}

// TestUntraced runs the shipped loaders with no tracer: with no script in the first
// argument register they must say so and exit 127.
func TestUntraced(t *testing.T) {
	for _, goarch := range []string{"amd64", "arm64"} {
		t.Run(goarch, func(t *testing.T) {
			path, err := Extract(t.TempDir(), goarch, 0)
			if err != nil {
				t.Fatal(err)
			}
			args := append(runnerFor(t, goarch), path, "arg")
			out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 127 {
				t.Errorf("%v, want exit 127", err)
			}
			want := "droidroot loader: no load script (the loader is started by droidroot, not directly)\n"
			if string(out) != want {
				t.Errorf("output %q, want %q", out, want)
			}
		})
	}
}

// runnerFor returns the command prefix that runs goarch programs on this machine:
// nothing for the native architecture, else qemu-user, or skips the test.
func runnerFor(t *testing.T, goarch string) []string {
	t.Helper()
	if goarch == runtime.GOARCH {
		return nil
	}
	qemu := map[string]string{"amd64": "qemu-x86_64", "arm64": "qemu-aarch64"}[goarch]
	path, err := exec.LookPath(qemu + "-static")
	if err != nil {
		path, err = exec.LookPath(qemu)
	}
	if err != nil {
		t.Skipf("cannot run %s programs: no %s", goarch, qemu)
	}
	return []string{path}
}

// buildSelftest builds the test-only loader for goarch with the Makefile, or skips.
func buildSelftest(t *testing.T, goarch string) string {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	dir := t.TempDir()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", "-s", "-C", root, "loader-selftest-"+goarch, "LOADER_SELFTEST_DIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		if strings.Contains(string(out), "not found") {
			t.Skipf("cannot build the %s loader: %s", goarch, out)
		}
		t.Fatalf("make loader-selftest-%s: %v\n%s", goarch, err, out)
	}
	return filepath.Join(dir, "loader-selftest-"+goarch)
}
