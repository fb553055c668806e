package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseCompare(t *testing.T) {
	tests := []struct {
		in      string
		want    Compare
		wantErr string
	}{
		{in: "proot=proot -r /", want: Compare{Name: "proot", Command: []string{"proot", "-r", "/"}}},
		{in: `p=env PROOT_NO_SECCOMP=1 proot -b "/a b:/c" -r '/x y'`, want: Compare{Name: "p", Command: []string{"env", "PROOT_NO_SECCOMP=1", "proot", "-b", "/a b:/c", "-r", "/x y"}}},
		{in: "proot", wantErr: "want NAME=COMMAND"},
		{in: "=proot", wantErr: "want NAME=COMMAND"},
		{in: "proot=  ", wantErr: "want NAME=COMMAND"},
		{in: "native=proot", wantErr: "is taken"},
		{in: "p=proot 'x", wantErr: "unterminated"},
	}
	for _, tt := range tests {
		got, err := ParseCompare(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseCompare(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseCompare(%q): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("ParseCompare(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestKernelVersion(t *testing.T) {
	tests := []struct {
		in           string
		major, minor int
		ok           bool
		cache, sync  bool
	}{
		{"6.18.44-fc-v782", 6, 18, true, true, true},
		{"6.6.30-android15-8-g1", 6, 6, true, true, true},
		{"6.1.0-21-arm64", 6, 1, true, true, false},
		{"5.10.198-android12-9", 5, 10, true, false, false},
		{"5.11", 5, 11, true, true, false},
		{"4.19.113", 4, 19, true, false, false},
		{"weird", 0, 0, false, false, false},
	}
	for _, tt := range tests {
		x, y, ok := KernelVersion(tt.in)
		if x != tt.major || y != tt.minor || ok != tt.ok {
			t.Errorf("KernelVersion(%q) = %d, %d, %v; want %d, %d, %v", tt.in, x, y, ok, tt.major, tt.minor, tt.ok)
		}
		if got := atLeast(tt.in, 5, 11); got != tt.cache {
			t.Errorf("atLeast(%q, 5, 11) = %v", tt.in, got)
		}
		if got := atLeast(tt.in, 6, 6); got != tt.sync {
			t.Errorf("atLeast(%q, 6, 6) = %v", tt.in, got)
		}
	}
}

func TestResultFinish(t *testing.T) {
	tests := []struct {
		samples          []float64
		min, median, max float64
		spread           bool
	}{
		{[]float64{3}, 3, 3, 3, false},
		{[]float64{5, 1, 3}, 1, 3, 5, true},
		{[]float64{4, 2, 3, 5}, 2, 3.5, 5, true},
		{[]float64{10, 11, 12}, 10, 11, 12, false},
	}
	for _, tt := range tests {
		r := Result{State: StateOK, Samples: tt.samples}
		r.finish()
		if r.Min != tt.min || r.Median != tt.median || r.Max != tt.max || r.Spread != tt.spread {
			t.Errorf("finish(%v) = %v/%v/%v spread %v; want %v/%v/%v spread %v", tt.samples, r.Min, r.Median, r.Max, r.Spread, tt.min, tt.median, tt.max, tt.spread)
		}
		if diff := cmp.Diff(tt.samples, r.Samples); diff != "" {
			t.Errorf("finish reordered the samples: %s", diff)
		}
	}
	r := Result{State: StateOK}
	r.finish()
	if r.State != StateFailed {
		t.Errorf("finish with no samples: state %q, want %q", r.State, StateFailed)
	}
}

func TestThreadCounts(t *testing.T) {
	for _, tt := range []struct {
		ncpu int
		want []int
	}{{1, []int{1, 2, 4, 8}}, {2, []int{1, 2, 4, 8}}, {6, []int{1, 2, 4, 8, 6}}, {8, []int{1, 2, 4, 8}}, {12, []int{1, 2, 4, 8, 12}}} {
		if diff := cmp.Diff(tt.want, ThreadCounts(tt.ncpu)); diff != "" {
			t.Errorf("ThreadCounts(%d) (-want +got):\n%s", tt.ncpu, diff)
		}
	}
}

func TestParseSamples(t *testing.T) {
	got, err := parseSamples([]byte("stat 100 250000\nopen 10 50000\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]sample{"stat": {100, 250000}, "open": {10, 50000}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(sample{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if us := got["stat"].usPerOp(); us != 2.5 {
		t.Errorf("usPerOp = %v, want 2.5", us)
	}
	for _, bad := range []string{"stat 100\n", "stat x 5\n", "stat 0 5\n", "stat 5 0\n"} {
		if _, err := parseSamples([]byte(bad)); err == nil {
			t.Errorf("parseSamples(%q) accepted", bad)
		}
	}
	m, failed, err := parseSamplesFailed([]byte("stat 1 2\nmkdir failed 2\nforkexec failed 1256\n"))
	if err != nil || len(m) != 1 || len(failed) != 2 {
		t.Fatalf("parseSamplesFailed: %v %v %v", m, failed, err)
	}
	if got := failed["mkdir"].Error(); got != "failed: no such file or directory" {
		t.Errorf("mkdir: %q", got)
	}
	if got := failed["forkexec"].Error(); got != "the child failed with wait status 0x100" {
		t.Errorf("forkexec: %q", got)
	}
	if v, err := parSample([]byte("par 2 1000 500000000\n")); err != nil || v != 2000 {
		t.Errorf("parSample = %v, %v; want 2000", v, err)
	}
}

func TestReportFormats(t *testing.T) {
	res := Result{Mode: "droidroot", State: StateOK, Samples: []float64{40, 42, 80}}
	res.finish()
	res.Ratio = ratio(res.Median, 2)
	rep := &Report{
		Header: Header{Droidroot: "1.0", Kernel: "6.6.0", Arch: "arm64", CPUModel: "x", CPUs: 8, Rounds: 3, Modes: []string{"native", "droidroot"}},
		Sections: []Section{{Name: "call", Unit: "us", Rows: []Row{{ID: "stat", Title: "stat of a deep path", Results: []Result{
			{Mode: "native", State: StateOK, Median: 2, Min: 2, Max: 2, Samples: []float64{2}},
			res,
		}}, {ID: "python3", Title: "python3", Results: []Result{{Mode: "native", State: StateSkipped, Reason: "no python3"}}}}}},
	}
	var text, md, js bytes.Buffer
	rep.Text(&text)
	rep.Markdown(&md)
	if err := rep.JSON(&js); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"stat of a deep path", "42.0 [40.0-80.0] 21x ~", "skipped (no python3)", "droidroot 1.0; kernel 6.6.0 (arm64), 8 CPU(s)"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text output lacks %q:\n%s", want, text.String())
		}
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown output lacks %q:\n%s", want, md.String())
		}
	}
	if !strings.Contains(md.String(), "| call (us) | native | droidroot |\n|---|---|---|") {
		t.Errorf("markdown table head missing:\n%s", md.String())
	}
	var back Report
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rep, &back); diff != "" {
		t.Errorf("JSON round trip (-want +got):\n%s", diff)
	}
}

func TestInRootfs(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"bin", "usr/bin"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(root, "bin/busybox"), nil, 0o755))
	must(os.Symlink("/bin/busybox", filepath.Join(root, "bin/tar")))           // absolute: inside root
	must(os.Symlink("../../bin/busybox", filepath.Join(root, "usr/bin/find"))) // relative
	must(os.Symlink("/nonexistent-host-file", filepath.Join(root, "bin/gone")))
	must(os.Symlink("loop", filepath.Join(root, "bin/loop")))
	for _, tt := range []struct {
		guest string
		want  bool
	}{{"/bin/busybox", true}, {"/bin/tar", true}, {"/usr/bin/find", true}, {"/bin/gone", false}, {"/bin/loop", false}, {"/bin", false}, {"/usr/bin/python3", false}} {
		if got := inRootfs(root, tt.guest); got != tt.want {
			t.Errorf("inRootfs(%s) = %v, want %v", tt.guest, got, tt.want)
		}
	}
}

// TestFloorSection: each round's call cost over native, in units of that
// round's floor cost over a native syscall.
func TestFloorSection(t *testing.T) {
	ok := func(mode string, s ...float64) Result {
		r := Result{Mode: mode, State: StateOK, Samples: s}
		r.finish()
		return r
	}
	mechs := []mechRow{{id: "native"}, {id: "ptrace-same"}, {id: FloorMech}}
	mechRes := []Result{ok("", 1, 2), ok("", 9, 9), ok("", 21, 32)}
	calls := [][]Result{
		{ok("native", 2, 3), ok("droidroot", 27, 48), ok("proot", 62, 93)},
		{ok("native", 2, 3), {Mode: "droidroot", State: StateFailed}, ok("proot", 5)},
	}
	s, found := floorSection(FloorMech, mechs, mechRes, []string{"stat", "open"}, []string{"stat", "open"}, calls)
	if !found {
		t.Fatal("no section")
	}
	got := map[string][]float64{}
	for _, r := range s.Rows {
		for _, res := range r.Results {
			got[r.ID+" "+res.Mode] = res.Samples
			if res.State != StateOK {
				got[r.ID+" "+res.Mode] = []float64{-1}
			}
		}
	}
	want := map[string][]float64{
		"stat droidroot": {1.25, 1.5}, // (27-2)/(21-1), (48-3)/(32-2)
		"stat proot":     {3, 3},
		"open droidroot": {-1},
		"open proot":     {-1}, // one round only
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, found := floorSection(FloorMech, mechs[:2], mechRes[:2], nil, nil, nil); found {
		t.Error("a section without the floor row")
	}
	if _, found := floorSection(DroidrootFloorMech, mechs, mechRes, nil, nil, nil); found {
		t.Error("a section against droidroot's floor, which was not measured")
	}
	// droidroot's own floor row, when measured, makes a second section.
	mechs = append(mechs, mechRow{id: DroidrootFloorMech})
	mechRes = append(mechRes, ok("", 11, 12))
	s, _ = floorSection(DroidrootFloorMech, mechs, mechRes, []string{"stat"}, []string{"stat"}, calls[:1])
	if got := s.Rows[0].Results[0].Samples; !cmp.Equal(got, []float64{2.5, 4.5}) { // (27-2)/(11-1), (48-3)/(12-2)
		t.Errorf("against droidroot's floor: %v, want [2.5 4.5]", got)
	}
	if !strings.Contains(s.Name, "debug floor") {
		t.Errorf("section name %q does not say which floor", s.Name)
	}
}
