//go:build linux

package bench

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// TestDrbenchCalls runs every call of the embedded drbench natively, briefly: each must
// succeed and print a positive rate.
func TestDrbenchCalls(t *testing.T) {
	dir := t.TempDir()
	prog, err := PrepareTree(dir, runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range callRows {
		names = append(names, c.id)
	}
	out, err := runCapture(exec.Command(prog, "calls", dir, "2000", strings.Join(names, ",")))
	if err != nil {
		t.Fatal(err)
	}
	m, err := parseSamples(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if s, ok := m[n]; !ok || s.usPerOp() <= 0 {
			t.Errorf("%s: %v %v", n, s, ok)
		}
	}
	out, err = runCapture(exec.Command(prog, "par", dir, "20000", "3"))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := parSample(out); err != nil || v <= 0 {
		t.Errorf("par: %v, %v", v, err)
	}
	if _, err := runCapture(exec.Command(prog, "calls", dir, "1000", "nosuchcall")); err == nil || !strings.Contains(err.Error(), "unknown call nosuchcall") {
		t.Errorf("unknown call: %v", err)
	}
	// A failing call spoils only its own row: drbench goes on with the next.
	if err := os.RemoveAll(filepath.Join(dir, "scratch")); err != nil {
		t.Fatal(err)
	}
	out, err = runCapture(exec.Command(prog, "calls", dir, "1000", "mkdir,rename,stat"))
	if err == nil {
		t.Errorf("calls with a failing call exited 0")
	}
	m, failed, perr := parseSamplesFailed(out)
	if perr != nil || failed["mkdir"] == nil || failed["rename"] == nil || m["stat"].n == 0 {
		t.Errorf("after failing calls: samples %v failed %v (%v)", m, failed, perr)
	}
}

// TestMechanisms runs each mechanism once, briefly, with this process as tracer or
// supervisor: each must give a positive cost (SYNC_WAKE_UP may be missing).
func TestMechanisms(t *testing.T) {
	dir := t.TempDir()
	prog, err := PrepareTree(dir, runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	cpus := cpuSet()
	for _, m := range mechRows() {
		if m.notBuilt || m.inSection != "" || (m.twoCPUs && len(cpus) < 2) || m.run == nil {
			continue // droidroot-floor needs a droidroot: e2e's TestBench* run it
		}
		s, err := m.run(prog, cpus, 3000)
		if m.id == "notify-sync" && errors.Is(err, errNotAvailable) {
			t.Logf("%s: %v", m.id, err)
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", m.id, err)
			continue
		}
		if s.usPerOp() <= 0 {
			t.Errorf("%s: %v us", m.id, s.usPerOp())
		}
		t.Logf("%s: %s us", m.id, strconv.FormatFloat(s.usPerOp(), 'f', 2, 64))
	}
	// RET_TRACE without a tracer answers ENOSYS: drbench must refuse to time that.
	if _, err := mechDirect(prog, "trace", -1, 1000); err == nil || !strings.Contains(err.Error(), "not traced") {
		t.Errorf("trace without a tracer: %v", err)
	}
}
