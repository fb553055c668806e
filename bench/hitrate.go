package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// HitRateSection names the section that counts, for each whole program, the
// calls the fast path library answered in-process and the stops that were
// left, in one run under droidroot with the library's counters
// (DROIDROOT_FASTPATH_STATS=1) and the tracer's census (DROIDROOT_STOPS=1):
// issue 13's "hit rate for each program". It is made once, after the timed
// rounds, and times nothing.
const HitRateSection = "hit rate of the fast path: calls in one run under droidroot"

// The hit-rate section's columns.
const (
	HitInProcess = "in-process"
	HitStops     = "stops"
	HitShare     = "in-process share (%)"
)

// callCounters are the library's counters that count a guest's calls, each
// one that would stop without the library (docs/fastpath.md, "Observing
// it"); the others count its own work (dirs, cwd, follow, pins, grants,
// stdio, fdopen, shed) or calls no filter traps (readdir: its directory
// streams' getdents).
var callCounters = map[string]bool{
	"stat": true, "lstat": true, "fstatat": true, "statx": true, "access": true, "open": true,
	"readlink": true, "mkdir": true, "unlink": true, "rename": true, "symlink": true, "link": true,
	"chmod": true, "chown": true, "utimensat": true, "truncate": true, "mknod": true, "openat2": true,
	"fstat": true, "getcwd": true, "realpath": true, "legacy": true, "sendmsg": true,
	"sendto": true, "recv": true, "xattr": true, "fstatfs": true, "statfs": true, "ids": true,
	"socket": true, "wait": true,
}

// runCounts is what one counted run printed: the calls the library answered
// in-process (summed over its processes), the tracer's stops, and of them
// the stops of a system call (the others are events: exec, fork, signals).
type runCounts struct {
	answered, stops, callStops int
}

// share is the part of the calls that either stopped or were answered
// in-process that the library answered, in percent.
func (c runCounts) share() float64 {
	if c.answered+c.callStops == 0 {
		return 0
	}
	return 100 * float64(c.answered) / float64(c.answered+c.callStops)
}

var (
	fastPathLine = regexp.MustCompile(`^droidroot-fastpath\[\d+\]: (\w+)((?: \w+=\d+)+)$`)
	censusHead   = regexp.MustCompile(`^droidroot: (\d+) stops \(DROIDROOT_STOPS=1\), by kind and call:$`)
	censusRow    = regexp.MustCompile(`^\s+(\d+)  (\S+)(?:\s+(\S+))?$`)
)

// parseCounts reads a counted run's stderr: the library's lines
// ("droidroot-fastpath[PID]: NAME answered=N REASON=M ...") and the census
// ("droidroot: N stops ..., by kind and call:", then "COUNT  KIND  CALL" or
// "COUNT  EVENT" rows). ok is false when it has no census (the run did not
// end the tracer's way).
func parseCounts(stderr []byte) (c runCounts, ok bool) {
	inCensus := false
	sc := bufio.NewScanner(bytes.NewReader(stderr))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := fastPathLine.FindStringSubmatch(line); m != nil {
			inCensus = false
			if !callCounters[m[1]] {
				continue
			}
			for _, kv := range strings.Fields(m[2]) {
				k, v, _ := strings.Cut(kv, "=")
				if n, err := strconv.Atoi(v); err == nil && k == "answered" {
					c.answered += n
				}
			}
			continue
		}
		if m := censusHead.FindStringSubmatch(line); m != nil {
			c.stops, _ = strconv.Atoi(m[1])
			c.callStops, inCensus, ok = 0, true, true
			continue
		}
		if m := censusRow.FindStringSubmatch(line); inCensus && m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil && m[3] != "" {
				c.callStops += n
			}
			continue
		}
		inCensus = false
	}
	return c, ok
}

// measureHitRates runs each whole program once more under droidroot, with
// the library's counters and the tracer's census, and makes the hit-rate
// section: one row per program, its columns the calls answered in-process,
// the stops, and the in-process share of the calls that stopped or were
// answered. A program whose droidroot cell is not measured is skipped with
// that cell's reason.
func (s *session) measureHitRates(w *wholePrograms) Section {
	sec := Section{Name: HitRateSection, Unit: "calls"}
	dr := -1
	for j, r := range s.runners {
		if r.name == "droidroot" {
			dr = j
		}
	}
	fmt.Fprintf(s.progress, "bench: counting each whole program's calls\n")
	for i, row := range wholeRows {
		cells := []Result{{Mode: HitInProcess}, {Mode: HitStops}, {Mode: HitShare}}
		set := func(state, reason string) {
			for k := range cells {
				cells[k].State, cells[k].Reason = state, reason
			}
		}
		switch {
		case dr < 0:
			set(StateNA, "no droidroot mode")
		case w.res[i][dr].State != StateOK && w.res[i][dr].State != StateFailed:
			set(w.res[i][dr].State, w.res[i][dr].Reason)
		default:
			c, err := s.countRun(s.runners[dr].command(w.argv[i]))
			if err != nil {
				set(StateFailed, err.Error())
				break
			}
			set(StateOK, "")
			for k, v := range []float64{float64(c.answered), float64(c.stops), c.share()} {
				cells[k].Samples = []float64{v}
				cells[k].finish()
			}
		}
		sec.Rows = append(sec.Rows, Row{ID: row.id, Title: row.title, Results: cells})
	}
	return sec
}

// countRun runs argv (a droidroot run command line) once with the
// library's counters and the tracer's census on, and reads them.
func (s *session) countRun(argv []string) (runCounts, error) {
	cmd := command(argv, "")
	cmd.Env = append(os.Environ(), "DROIDROOT_FASTPATH_STATS=1", "DROIDROOT_STOPS=1")
	_, stderr, err := runCaptureBoth(cmd)
	if err != nil {
		return runCounts{}, err
	}
	c, ok := parseCounts(stderr)
	if !ok {
		return runCounts{}, fmt.Errorf("droidroot printed no stop census (DROIDROOT_STOPS=1)")
	}
	return c, nil
}
