package tracer

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// flight is the tracer's flight recorder, a developer's tool for rare
// races (DROIDROOT_FLIGHT=1): the last stops the tracer saw and what it did
// with each, printed to stderr when the run ends with a non-zero status
// (the one droidroot exits with). With it on, every translated call is also checked:
// the registers are read back after they are written, and the strings the
// changed arguments point to are read back too.
type flight struct {
	seq   uint64
	rings map[int]*flightRing
}

// flightRing holds one task's last entries.
type flightRing struct {
	next int
	ents [400]flightEntry
}

type flightEntry struct {
	seq  uint64
	tid  int
	what string
	text string
}

// fly records one entry when the recorder is on.
func (t *Tracer) fly(tid int, what, format string, args ...any) {
	f := t.flight
	if f == nil {
		return
	}
	f.seq++
	r := f.rings[tid]
	if r == nil {
		r = &flightRing{}
		f.rings[tid] = r
	}
	r.ents[r.next] = flightEntry{seq: f.seq, tid: tid, what: what, text: fmt.Sprintf(format, args...)}
	r.next = (r.next + 1) % len(r.ents)
}

// dump prints the recorded entries of every task, in the order they were
// recorded.
func (f *flight) dump(w io.Writer) {
	var all []*flightEntry
	for _, r := range f.rings {
		for k := range r.ents {
			if r.ents[k].seq != 0 {
				all = append(all, &r.ents[k])
			}
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].seq < all[j].seq })
	fmt.Fprintf(w, "droidroot flight recorder: %d tasks, last %d of %d entries\n", len(f.rings), len(all), f.seq)
	for _, e := range all {
		fmt.Fprintf(w, "F %d %d %s %s\n", e.seq, e.tid, e.what, e.text)
	}
}

// flyCheck reads back what enter wrote for th's call: the registers, and
// the strings of changed pointer arguments.
func (t *Tracer) flyCheck(th *Thread) {
	c := &th.call
	t.fly(th.Tid, "SET", "nr=%d x0=%#x", c.Regs.Nr(), c.Regs.Arg(0))
	var back Regs
	if err := getRegs(th.Tid, &back); err != nil {
		t.fly(th.Tid, "CHECK", "getregs: %v", err)
		return
	}
	for i := 0; i < 6; i++ {
		if back.Arg(i) != c.Regs.Arg(i) {
			t.fly(th.Tid, "MISMATCH", "arg%d wrote %#x reads %#x", i, c.Regs.Arg(i), back.Arg(i))
		}
		if c.Entry.Arg(i) != c.Regs.Arg(i) {
			s, err := "", error(nil)
			if c.Regs.Arg(i) > 0x10000 {
				s, err = readString(th.Tid, c.Regs.Arg(i), 4096, nil)
			}
			t.fly(th.Tid, "CHANGED", "arg%d %#x -> %#x %q %v%s", i, c.Entry.Arg(i), c.Regs.Arg(i), s, err, pinnedDir(s))
		}
	}
	if back.Nr() != c.Regs.Nr() {
		t.fly(th.Tid, "MISMATCH", "nr wrote %d reads %d", c.Regs.Nr(), back.Nr())
	}
}

// flyArgs describes a call's number and first four arguments, with the
// string arg1 points to (where most path calls have their path).
func (t *Tracer) flyArgs(tid int, r *Regs) string {
	s, _ := readString(tid, r.Arg(1), 256, nil)
	return fmt.Sprintf("nr=%d pc=%#x sp=%#x args=%#x,%#x,%#x,%#x a1=%q", r.Nr(), r.PC(), r.SP(), r.Arg(0), r.Arg(1), r.Arg(2), r.Arg(3), s)
}

// pinnedDir says which directory a pinned name ("/proc/<tracer>/fd/N/last",
// emul's kernelName) starts from: " (N = DIR)", or "" for other strings.
func pinnedDir(s string) string {
	pfx := "/proc/" + strconv.Itoa(os.Getpid()) + "/fd/"
	rest, ok := strings.CutPrefix(s, pfx)
	if !ok {
		return ""
	}
	n, _, _ := strings.Cut(rest, "/")
	dir, err := os.Readlink("/proc/self/fd/" + n)
	if err != nil {
		return ""
	}
	return " (" + n + " = " + strconv.Quote(dir) + ")"
}
