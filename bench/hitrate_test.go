package bench

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseCounts(t *testing.T) {
	census := "droidroot: 12 stops (DROIDROOT_STOPS=1), by kind and call:\n" +
		"       4  seccomp   newfstatat\n" +
		"       4  seccomp   openat\n" +
		"       1  exec\n" +
		"       1  sigsys    faccessat2\n" +
		"       1  seccomp   droidroot_fastpath\n" +
		"       1  vfork\n"
	tests := []struct {
		name   string
		stderr string
		want   runCounts
		ok     bool
	}{
		{"census only (a static program)", census, runCounts{stops: 12, callStops: 10}, true},
		{"the library's calls, not its own work",
			"droidroot-fastpath[77]: stat answered=64 dots=6 symlink=2\n" +
				"droidroot-fastpath[77]: open answered=22 proc=1\n" +
				"droidroot-fastpath[77]: dirs answered=145 unverified=18\n" + // its cache: not calls
				"droidroot-fastpath[77]: grants answered=2\n" +
				"droidroot-fastpath[77]: readdir answered=44\n" + // getdents: never a stop
				"droidroot-fastpath[78]: lstat answered=1029\n" +
				"droidroot-fastpath[78]: wait flags=1\n" +
				census,
			runCounts{answered: 64 + 22 + 1029, stops: 12, callStops: 10}, true},
		{"the guest's own output around them",
			"tar: Removing leading `/' from member names\n" +
				"droidroot-fastpath[5]: fstatat answered=2021\n" +
				census +
				"       7  not a census row after the census\n",
			runCounts{answered: 2021, stops: 12, callStops: 10}, true},
		{"a guest line that looks like a census row before the census",
			"       9  seccomp   openat\n" + census,
			runCounts{stops: 12, callStops: 10}, true},
		{"no census: the run did not end the tracer's way",
			"droidroot-fastpath[5]: stat answered=3\n",
			runCounts{answered: 3}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseCounts([]byte(tt.stderr))
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(runCounts{})); diff != "" || ok != tt.ok {
				t.Errorf("parseCounts: ok %v (want %v), diff (-want +got):\n%s", ok, tt.ok, diff)
			}
		})
	}
}

func TestRunCountsShare(t *testing.T) {
	tests := []struct {
		c    runCounts
		want float64
	}{
		{runCounts{}, 0},
		{runCounts{answered: 0, stops: 2, callStops: 1}, 0},
		{runCounts{answered: 3, stops: 9, callStops: 1}, 75},
		{runCounts{answered: 5, stops: 5}, 100}, // only events stopped
	}
	for _, tt := range tests {
		if got := tt.c.share(); got != tt.want {
			t.Errorf("%+v.share() = %v, want %v", tt.c, got, tt.want)
		}
	}
}

func TestCallsCell(t *testing.T) {
	for _, tt := range []struct {
		v    float64
		want string
	}{{6833, "6833"}, {0, "0"}, {95.66, "95.7"}, {3, "3"}} {
		r := Result{Mode: HitInProcess, State: StateOK, Samples: []float64{tt.v}}
		r.finish()
		if got := r.cell("calls"); got != tt.want {
			t.Errorf("cell of %v = %q, want %q", tt.v, got, tt.want)
		}
	}
}

func TestWholeProgramCandidates(t *testing.T) {
	if got := WholeProgramCandidates("git"); !cmp.Equal(got, []string{"/usr/bin/git", "/bin/git"}) {
		t.Errorf("git: %v", got)
	}
	if got := WholeProgramCandidates("startup"); got != nil {
		t.Errorf("startup (drbench itself): %v, want none", got)
	}
}
