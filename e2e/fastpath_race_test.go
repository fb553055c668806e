package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// raceScript (SECONDS PAUSE LEVEL SWAPPER) swaps /tmp/race/d between a
// directory and a symlink to another directory (renameat2 RENAME_EXCHANGE,
// the fast path's own rename) every PAUSE seconds in one process while
// another stats a file through it, d/f (LEVEL parent) or d/x/f (ancestor),
// both for SECONDS seconds, and prints the swaps' times and each stat's
// [start, end] and inode as JSON. With SWAPPER "host" the guest does not
// swap: the test does, on the host, outside droidroot.
const raceScript = `
import ctypes, json, multiprocessing as mp, os, sys, time
secs, pause, level, swapper_at = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4]
libc = ctypes.CDLL(None, use_errno=True)
# level "parent": d is the file's directory; "ancestor": d is its
# grandparent (the file is d/x/f), whose rename its directory does not see.
sub = "/x" if level == "ancestor" else ""
os.makedirs("/tmp/race/a" + sub, exist_ok=True)
os.makedirs("/tmp/race/b" + sub, exist_ok=True)
open("/tmp/race/a" + sub + "/f", "w").close()
open("/tmp/race/b" + sub + "/f", "w").close()
a = os.stat("/tmp/race/a" + sub + "/f").st_ino
b = os.stat("/tmp/race/b" + sub + "/f").st_ino
os.rename("/tmp/race/a", "/tmp/race/d")
os.symlink("/tmp/race/b", "/tmp/race/s")
target = "/tmp/race/d" + sub + "/f"

def swapper(q):
    out, end = [], time.monotonic() + secs
    while swapper_at == "guest" and time.monotonic() < end:
        t0 = time.monotonic()
        if libc.renameat2(-100, b"/tmp/race/d", -100, b"/tmp/race/s", 2) != 0:
            raise OSError(ctypes.get_errno(), "renameat2")
        out.append((t0, time.monotonic()))
        time.sleep(pause)
    q.put(out)

def checker(q):
    out, end = [], time.monotonic() + secs
    while time.monotonic() < end:
        t0 = time.monotonic()
        try:
            r = os.stat(target).st_ino
        except OSError as e:
            r = -e.errno
        out.append((t0, time.monotonic(), r))
    q.put(out)

qs, qc = mp.Queue(), mp.Queue()
ps, pc = mp.Process(target=swapper, args=(qs,)), mp.Process(target=checker, args=(qc,))
ps.start(); pc.start()
swaps, stats = qs.get(), qc.get()
ps.join(); pc.join()
print(json.dumps({"a": a, "b": b, "swaps": swaps, "stats": stats}))
`

// hostTmp is the host directory bound at g's /tmp.
func hostTmp(g guest) string {
	for _, b := range g.Binds {
		if h, ok := strings.CutSuffix(b, ":/tmp"); ok {
			return h
		}
	}
	return filepath.Join(g.Root, "tmp")
}

// swapOnHost swaps tmp/race/d and tmp/race/s (RENAME_EXCHANGE) every pause
// seconds from the moment raceScript made them until stop, and returns each
// swap's [start, end] on CLOCK_MONOTONIC (python's time.monotonic).
func swapOnHost(t *testing.T, tmp, pause string, stop chan bool) [][2]float64 {
	p, err := strconv.ParseFloat(pause, 64)
	if err != nil {
		t.Error(err)
		return nil
	}
	now := func() float64 {
		var ts unix.Timespec
		unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
		return float64(ts.Sec) + float64(ts.Nsec)/1e9
	}
	d, s := filepath.Join(tmp, "race/d"), filepath.Join(tmp, "race/s")
	var out [][2]float64
	for {
		select {
		case <-stop:
			return out
		case <-time.After(time.Duration(p * float64(time.Second))):
		}
		if _, err := os.Lstat(s); err != nil {
			continue // not made yet
		}
		t0 := now()
		if err := unix.Renameat2(unix.AT_FDCWD, d, unix.AT_FDCWD, s, unix.RENAME_EXCHANGE); err != nil {
			t.Errorf("host swap: %v", err)
			return out
		}
		out = append(out, [2]float64{t0, now()})
	}
}

// raceResult is raceScript's output.
type raceResult struct {
	A, B  int64
	Swaps [][2]float64
	Stats [][3]float64
}

// staleness returns, for the stats, how many answers no kernel could have
// given during their call (stale) and how long before its call each one
// stopped being true (the largest), how many named neither file (wrong),
// and how many of those were ENOENT (enoent).
func (r raceResult) staleness() (stale int, worst float64, wrong, enoent int) {
	// The state after k swaps is a's inode for even k, b's for odd k;
	// swap k happened within Swaps[k].
	for _, s := range r.Stats {
		t0, t1, ino := s[0], s[1], int64(s[2])
		var want int
		switch ino {
		case r.A:
			want = 0
		case r.B:
			want = 1
		default:
			wrong++
			if ino == -2 {
				enoent++
			}
			continue
		}
		// Swaps started before t1 (the state during the call may be any
		// from the last one finished before t0 to the last started before t1).
		lo, hi := 0, 0
		for k, sw := range r.Swaps {
			if sw[1] <= t0 {
				lo = k + 1
			}
			if sw[0] <= t1 {
				hi = k + 1
			}
		}
		possible := false
		for k := lo; k <= hi; k++ {
			if k%2 == want {
				possible = true
			}
		}
		if possible {
			continue
		}
		stale++
		// The last time the answer was true: the end of the last state with
		// that parity before lo, i.e. the start of the swap that left it.
		for k := lo - 1; k >= 0; k-- {
			if k%2 == want && k < len(r.Swaps) {
				worst = max(worst, t0-r.Swaps[k][0])
				break
			}
		}
	}
	return stale, worst, wrong, enoent
}

// TestFastPathRace swaps a directory with a symlink to another directory
// while another process stats a file through it: with the library's parent
// cache off (TTL 0), every answer is one the kernel could have given during
// the call; with a TTL, answers are at most that late; never a file outside
// the two (a host path, or ENOENT from following the guest symlink on the
// host).
func TestFastPathRace(t *testing.T) {
	needRoot(t)
	secs := "2"
	if testing.Short() {
		secs = "1"
	}
	for _, c := range []struct {
		ttl   int    // DROIDROOT_FASTPATH_TTL_MS
		pause string // seconds between swaps
		level string
		host  bool // the swaps are made on the host, outside droidroot
		late  bool // answers up to the TTL late are expected
	}{
		{0, "0.003", "parent", false, false},
		{0, "0.003", "ancestor", false, false},
		// A guest's rename counts in the session's change counter: every
		// process verifies again on its next call.
		{100, "0.003", "parent", false, false},
		{100, "0.05", "ancestor", false, false},
		// The host's renames are seen within the TTL.
		{0, "0.01", "parent", true, false},
		{100, "0.25", "parent", true, true},
		{100, "0.25", "ancestor", true, true},
	} {
		where := "guest"
		if c.host {
			where = "host"
		}
		t.Run(fmt.Sprintf("ttl=%dms/%s/%s", c.ttl, c.level, where), func(t *testing.T) {
			g := debianGuest(t)
			argv := droidrootArgs(droidrootBin(t), g, "/usr/bin/python3", "-c", raceScript, secs, c.pause, c.level, where)
			var hostSwaps [][2]float64
			stop, swapped := make(chan bool), make(chan bool)
			if c.host {
				go func() { hostSwaps = swapOnHost(t, hostTmp(g), c.pause, stop); close(swapped) }()
			} else {
				close(swapped)
			}
			res := run(t, "", append([]string{"env", "DROIDROOT_FASTPATH=1", fmt.Sprintf("DROIDROOT_FASTPATH_TTL_MS=%d", c.ttl)}, argv...)...)
			close(stop)
			<-swapped
			if res.Code != 0 {
				t.Fatalf("%s", res)
			}
			var r raceResult
			if err := json.NewDecoder(strings.NewReader(res.Stdout)).Decode(&r); err != nil {
				t.Fatalf("output: %v\n%s", err, res)
			}
			if c.host {
				r.Swaps = hostSwaps
			}
			if len(r.Swaps) < 3 || len(r.Stats) < 100 {
				t.Fatalf("too few swaps (%d) or stats (%d) to judge", len(r.Swaps), len(r.Stats))
			}
			stale, worst, wrong, enoent := r.staleness()
			t.Logf("%d swaps, %d stats: %d stale (worst %.1f ms late), %d wrong (%d ENOENT)", len(r.Swaps), len(r.Stats), stale, worst*1000, wrong, enoent)
			// ENOENT is the tracer's own race (issue 18): a call the
			// library leaves to it (its check saw the swap) is resolved,
			// then the kernel follows the new symlink on the host side.
			// Anything else would be a file the guest cannot name.
			if wrong != enoent {
				t.Errorf("%d answers named neither directory's file (and were not ENOENT)", wrong-enoent)
			}
			// The bound: the TTL, plus scheduling slack for the check.
			if limit := float64(c.ttl)/1000 + 0.05; worst > limit {
				t.Errorf("answers up to %.1f ms late; the bound is %d ms (+50 ms slack)", worst*1000, c.ttl)
			}
			if !c.late && stale != 0 {
				t.Errorf("%d answers no kernel could have given", stale)
			}
		})
	}
}
