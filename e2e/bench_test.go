//go:build linux

package e2e

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/droidroot/droidroot/bench"
)

// runBench runs `droidroot bench ARGS --json` and decodes the report. The bench measures
// by time, so it is slow under TCG (the arm64 VM): the timeout is generous. Its progress
// lines go to stderr.
func runBench(t *testing.T, args ...string) *bench.Report {
	t.Helper()
	timeout := max(2*cmdTimeout, 3*time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	argv := append([]string{"bench", "--json"}, args...)
	cmd := exec.CommandContext(ctx, droidrootBin(t), argv...)
	cmd.Env = guestEnv()
	cmd.Dir = "/"
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	start := time.Now()
	err := cmd.Run()
	t.Logf("droidroot %s: %v", strings.Join(argv, " "), time.Since(start).Round(time.Millisecond))
	if ctx.Err() != nil {
		t.Fatalf("timed out after %v\n--- stderr:\n%s", timeout, stderr.String())
	}
	if err != nil {
		t.Fatalf("droidroot bench: %v\n--- stderr:\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "bench: round 1/") || !strings.Contains(stderr.String(), "bench: done") {
		t.Errorf("no progress on stderr:\n%s", stderr.String())
	}
	var rep bench.Report
	dec := json.NewDecoder(&stdout)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("stdout is not a JSON report: %v\n%s", err, stdout.String())
	}
	return &rep
}

// wantRows is every row of a report, by section.
func wantRows(ncpu int) map[string][]string {
	threads, libcThreads := []string{}, []string{}
	for _, n := range bench.ThreadCounts(ncpu) {
		threads = append(threads, "threads-"+strconv.Itoa(n))
		libcThreads = append(libcThreads, "libc-threads-"+strconv.Itoa(n))
	}
	calls := []string{"stat", "lstat", "open", "access", "fstatat", "missing", "readlink", "getcwd", "uname", "chdir",
		"mkdir", "rename", "symlink", "thread", "forkexec"}
	return map[string][]string{
		"mechanism": {"native", "seccomp-allow", "seccomp-nocache", "ptrace-same", "ptrace-other", "ptrace-unpinned",
			"ptrace-regs-same", "ptrace-regs-other", "ptrace-regs-unpinned", "droidroot-floor", "sigsys", "fault", "notify-same",
			"notify-other", "notify-unpinned", "notify-sync", "fastpath"},
		"call":                      calls,
		bench.FloorSection:          calls,
		"throughput":                threads,
		bench.LibcSection:           {"stat", "lstat", "open", "access", "fstatat", "missing", "waitv"},
		"whole program":             {"startup", "python3", "tar", "find", "git"},
		bench.InSessionSection:      {"startup", "python3", "tar", "find", "git"},
		bench.LibcThroughputSection: libcThreads,
		bench.HitRateSection:        {"startup", "python3", "tar", "find", "git"},
	}
}

// checkReport checks that rep is well formed: header filled in, every row present with a
// result per mode, numbers positive and ordered, ratios consistent with the medians; and
// that what must work on any Linux did (mustOK: section -> row ids -> modes).
func checkReport(t *testing.T, rep *bench.Report, modes []string, rounds int, mustOK map[string]map[string][]string) {
	t.Helper()
	h := rep.Header
	if h.Droidroot == "" || h.Kernel == "" || h.Kernel == "unknown" || h.CPUs < 1 || h.CPUModel == "" || h.Arch != runtime.GOARCH || h.AndroidPolicy == "" {
		t.Errorf("header incomplete: %+v", h)
	}
	if strings.Join(h.Modes, ",") != strings.Join(modes, ",") || h.Rounds != rounds {
		t.Errorf("header modes %v rounds %d, want %v and %d", h.Modes, h.Rounds, modes, rounds)
	}
	want := wantRows(h.CPUs)
	// Two floor sections: against a minimal tracer and against droidroot's own loop.
	if len(rep.Sections) != len(want)+1 {
		t.Errorf("%d sections, want %d", len(rep.Sections), len(want)+1)
	}
	for _, s := range rep.Sections {
		name := strings.SplitN(s.Name, ",", 2)[0]
		ids, ok := want[name]
		if !ok {
			t.Errorf("unexpected section %q", s.Name)
			continue
		}
		var got []string
		for _, r := range s.Rows {
			got = append(got, r.ID)
		}
		if strings.Join(got, " ") != strings.Join(ids, " ") {
			t.Errorf("section %s rows\n got %v\nwant %v", name, got, ids)
		}
		for _, r := range s.Rows {
			sectionModes := modes
			switch name {
			case "mechanism":
				sectionModes = []string{bench.MechanismMode}
			case bench.FloorSection:
				sectionModes = modes[1:] // no native column
			case bench.LibcSection, bench.LibcThroughputSection:
				sectionModes = append(append([]string(nil), modes...), bench.NoFastPathMode)
			case bench.HitRateSection:
				sectionModes = []string{bench.HitInProcess, bench.HitStops, bench.HitShare}
			}
			samples := rounds
			if name == bench.InSessionSection {
				samples = rounds * bench.RunsPerRound
			}
			if len(r.Results) != len(sectionModes) {
				t.Errorf("%s/%s: %d results, want %d", name, r.ID, len(r.Results), len(sectionModes))
				continue
			}
			for i, res := range r.Results {
				if res.Mode != sectionModes[i] {
					t.Errorf("%s/%s: result %d is mode %q, want %q", name, r.ID, i, res.Mode, sectionModes[i])
				}
				for _, m := range mustOK[name][r.ID] {
					if m == res.Mode && res.State != bench.StateOK {
						t.Errorf("%s/%s under %s: %s (%s), want ok", name, r.ID, m, res.State, res.Reason)
					}
				}
				switch {
				case name == bench.HitRateSection && res.State == bench.StateOK:
					// Counts of one run: whole numbers, a share in percent.
					if len(res.Samples) != 1 || res.Samples[0] < 0 || res.Ratio != 0 ||
						(res.Mode != bench.HitShare && res.Samples[0] != math.Trunc(res.Samples[0])) ||
						(res.Mode == bench.HitShare && res.Samples[0] > 100) {
						t.Errorf("%s/%s %s: samples %v ratio %v", name, r.ID, res.Mode, res.Samples, res.Ratio)
					}
					continue
				case name == bench.FloorSection && res.State == bench.StateOK:
					// Differences of noisy times: any finite number (uname's is ~0).
					for _, v := range res.Samples {
						if math.IsNaN(v) || math.IsInf(v, 0) {
							t.Errorf("%s/%s %s: sample %v", name, r.ID, res.Mode, v)
						}
					}
					if len(res.Samples) != rounds || !(res.Min <= res.Median && res.Median <= res.Max) || res.Ratio != 0 {
						t.Errorf("%s/%s %s: %d samples (want %d), min %v median %v max %v, ratio %v", name, r.ID, res.Mode, len(res.Samples), rounds, res.Min, res.Median, res.Max, res.Ratio)
					}
					continue
				}
				switch res.State {
				case bench.StateOK:
					if len(res.Samples) != samples {
						t.Errorf("%s/%s %s: %d samples, want %d", name, r.ID, res.Mode, len(res.Samples), samples)
					}
					for _, v := range res.Samples {
						if !(v > 0) || math.IsInf(v, 0) {
							t.Errorf("%s/%s %s: sample %v", name, r.ID, res.Mode, v)
						}
					}
					if !(res.Min > 0 && res.Min <= res.Median && res.Median <= res.Max) {
						t.Errorf("%s/%s %s: min %v median %v max %v", name, r.ID, res.Mode, res.Min, res.Median, res.Max)
					}
					if res.Spread != (res.Max > 1.5*res.Min) {
						t.Errorf("%s/%s %s: spread %v with min %v max %v", name, r.ID, res.Mode, res.Spread, res.Min, res.Max)
					}
					ref := r.Results[0]
					if name == "mechanism" {
						ref = s.Rows[0].Results[0]
					}
					if ref.State == bench.StateOK {
						if w := res.Median / ref.Median; math.Abs(res.Ratio-w) > 1e-9*w {
							t.Errorf("%s/%s %s: ratio %v, want median/reference %v", name, r.ID, res.Mode, res.Ratio, w)
						}
					}
				case bench.StateNA, bench.StateSkipped, bench.StateFailed:
					if res.Reason == "" {
						t.Errorf("%s/%s %s: state %s without a reason", name, r.ID, res.Mode, res.State)
					}
				case bench.StateNotBuiltYet:
					if r.ID != "fastpath" {
						t.Errorf("%s/%s %s: not built yet?", name, r.ID, res.Mode)
					}
				default:
					t.Errorf("%s/%s %s: unknown state %q", name, r.ID, res.Mode, res.State)
				}
			}
		}
	}
}

// mustWork lists what works on any Linux with seccomp (kernel >= 5.0 for user
// notification): each mechanism except the other-CPU rows (one CPU), SYNC_WAKE_UP
// (kernel 6.6) and the fast path, every call and thread count in modes, and the
// start-up row (also counted: the hit rate section).
func mustWork(ncpu int, modes ...string) map[string]map[string][]string {
	m := map[string]map[string][]string{"mechanism": {}, "call": {}, "throughput": {}, "whole program": {}, bench.LibcSection: {},
		bench.HitRateSection: {"startup": {bench.HitInProcess, bench.HitStops, bench.HitShare}}}
	for _, id := range []string{"native", "seccomp-allow", "seccomp-nocache", "ptrace-same", "ptrace-unpinned",
		"ptrace-regs-same", "ptrace-regs-unpinned", "droidroot-floor", "sigsys", "fault", "notify-same", "notify-unpinned"} {
		m["mechanism"][id] = []string{bench.MechanismMode}
	}
	for _, id := range wantRows(ncpu)["call"] {
		m["call"][id] = modes
	}
	for _, id := range wantRows(ncpu)["throughput"] {
		m["throughput"][id] = modes
	}
	m["whole program"]["startup"] = modes
	// The fast path's calls: natively (the host's glibc), under droidroot
	// with the library and without it.
	for _, id := range []string{"stat", "open", "access", "fstatat", "missing"} {
		m[bench.LibcSection][id] = []string{"native", "droidroot", bench.NoFastPathMode}
	}
	return m
}

// TestBenchQuickJSON runs `droidroot bench --quick --json` on the host (rootfs /) and checks
// the report is well formed; not how fast anything is.
func TestBenchQuickJSON(t *testing.T) {
	rounds := 3
	args := []string{"--quick"}
	if testing.Short() { // the arm64 VM: slow TCG
		rounds = 2
		args = append(args, "--rounds", "2")
	}
	rep := runBench(t, args...)
	checkReport(t, rep, []string{"native", "droidroot"}, rounds, mustWork(rep.Header.CPUs, "native", "droidroot"))
	if !rep.Header.Quick || rep.Header.Rootfs != "/" {
		t.Errorf("header quick %v rootfs %q, want true and /", rep.Header.Quick, rep.Header.Rootfs)
	}
	checkHitRates(t, rep)
}

// glibcDynamic tells whether the first of paths present on the host is a
// program glibc's ld.so loads (PT_INTERP names ld-linux): the fast path
// library is loaded into it. A static one (the arm64 VM's busybox) is not.
func glibcDynamic(paths []string) bool {
	for _, p := range paths {
		f, err := elf.Open(p)
		if err != nil {
			if _, serr := os.Stat(p); serr == nil {
				return false // there, but no ELF file
			}
			continue
		}
		defer f.Close()
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				b := make([]byte, prog.Filesz)
				if _, err := prog.ReadAt(b, 0); err == nil && strings.Contains(string(b), "ld-linux") {
					return true
				}
			}
		}
		return false
	}
	return false
}

// checkHitRates checks the hit rate section's counts: the static start-up
// program loads no library (none in-process, its exec's stops), and each
// program measured that glibc's ld.so loads (the host's) has calls answered
// in-process; none has where the suite runs with the library off
// (DROIDROOT_FASTPATH=0, make test-e2e-nofastpath, which the bench's
// droidroot runs inherit).
func checkHitRates(t *testing.T, rep *bench.Report) {
	t.Helper()
	off := os.Getenv("DROIDROOT_FASTPATH") == "0"
	for _, s := range rep.Sections {
		if s.Name != bench.HitRateSection {
			continue
		}
	rows:
		for _, r := range s.Rows {
			v := map[string]float64{}
			for _, res := range r.Results {
				if res.State != bench.StateOK {
					continue rows // checked by checkReport: here only measured rows
				}
				v[res.Mode] = res.Median
			}
			in, stops := v[bench.HitInProcess], v[bench.HitStops]
			switch {
			case r.ID == "startup" && (in != 0 || stops < 1):
				t.Errorf("%s: %v in-process, %v stops; want none in-process (a static program), and its exec's stops", r.ID, in, stops)
			case off && in != 0:
				t.Errorf("%s: %v in-process with DROIDROOT_FASTPATH=0", r.ID, in)
			case !off && r.ID != "startup" && glibcDynamic(bench.WholeProgramCandidates(r.ID)) && (in < 1 || v[bench.HitShare] <= 0):
				t.Errorf("%s: %v in-process (share %v%%): the library answered nothing", r.ID, in, v[bench.HitShare])
			}
		}
		return
	}
	t.Errorf("no section %q", bench.HitRateSection)
}

// TestBenchRootfsCompare runs the bench in the busybox rootfs (the work tree and /proc bound
// in) and, where Debian's proot is installed, under --compare proot=... too, which binds the
// work directory with {dir}.
func TestBenchRootfsCompare(t *testing.T) {
	root := rootfs(t, "busybox")
	modes := []string{"native", "droidroot"}
	args := []string{"--quick", "--rounds", "1", "-r", root}
	if p, err := exec.LookPath("proot"); err == nil && runtime.GOARCH == "amd64" {
		// Debian's proot 5.1 needs PROOT_NO_SECCOMP=1 (see docs/performance.md).
		args = append(args, "--compare", "proot=env PROOT_NO_SECCOMP=1 "+p+" -r "+root+" -b {dir} -b /proc")
		modes = append(modes, "proot")
	} else {
		t.Logf("no proot here (or not x86_64): --compare is not tested")
	}
	rep := runBench(t, args...)
	must := mustWork(rep.Header.CPUs, modes...)
	checkReport(t, rep, modes, 1, must)
	var whole bench.Section
	for _, s := range rep.Sections {
		if s.Name == bench.InSessionSection {
			whole = s
		}
	}
	if len(whole.Rows) == 0 {
		t.Fatalf("no section %q", bench.InSessionSection)
	}
	for _, r := range whole.Rows {
		switch r.ID {
		case "tar", "find":
			// A native chroot cannot see the work tree; under droidroot it is bound in.
			// (Skipped when the rootfs lacks the applet.)
			if r.Results[1].State == bench.StateSkipped {
				continue
			}
			if r.Results[0].State != bench.StateNA {
				t.Errorf("%s native: %s, want n/a", r.ID, r.Results[0].State)
			}
			if r.Results[1].State != bench.StateOK {
				t.Errorf("%s droidroot: %s (%s), want ok", r.ID, r.Results[1].State, r.Results[1].Reason)
			}
		case "python3", "git":
			if r.Results[1].State != bench.StateSkipped {
				t.Errorf("%s droidroot in busybox: %s, want skipped", r.ID, r.Results[1].State)
			}
		}
	}
}

// TestBenchBadInput: bad options get one clear line.
func TestBenchBadInput(t *testing.T) {
	bin := droidrootBin(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--compare", "proot"}, "want NAME=COMMAND"},
		{[]string{"bench", "--json", "--markdown"}, "exclude each other"},
		{[]string{"bench", "-r", "/nonexistent-rootfs"}, "is not a directory"},
		{[]string{"bench", "extra"}, "takes no arguments"},
		{[]string{"bench", "--compare", "x=/nonexistent/proot -r /"}, "command /nonexistent/proot not found"},
	} {
		res := run(t, "", append([]string{bin}, tt.args...)...)
		lines := strings.Split(strings.TrimSpace(res.Stderr), "\n")
		if res.Code == 0 || len(lines) != 1 || !strings.Contains(lines[0], tt.want) {
			t.Errorf("droidroot %v: want one stderr line with %q and a failure; got %s", tt.args, tt.want, res)
		}
	}
}
