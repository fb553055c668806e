package tracer

import (
	"testing"

	"github.com/droidroot/droidroot/loader"
)

// TestScratchSlots: slots are unique among live threads, slot 0 (the magic) is never handed
// out, a freed slot is reused, and allocation stops at the area's end (pushes then go below
// the stack pointer).
func TestScratchSlots(t *testing.T) {
	tr := &Tracer{}
	seen := map[int]bool{}
	var ths []*Thread
	for {
		s := tr.allocSlot()
		if s == 0 {
			break
		}
		if seen[s] || s >= scratchSlots {
			t.Fatalf("slot %d handed out twice or past the area (%d slots)", s, scratchSlots)
		}
		seen[s] = true
		ths = append(ths, &Thread{slot: s})
	}
	if len(seen) != scratchSlots-1 {
		t.Fatalf("%d slots handed out, want %d", len(seen), scratchSlots-1)
	}
	tr.freeSlot(ths[7])
	if s := tr.allocSlot(); s != 8 {
		t.Errorf("after freeing slot 8: got %d", s)
	}
	for _, v := range []struct {
		addr uint64
		in   bool
	}{
		{loader.ScratchAddr, false}, // the magic
		{loader.ScratchAddr + loader.ScratchSlot, true},
		{loader.ScratchAddr + loader.ScratchSize - 1, true},
		{loader.ScratchAddr + loader.ScratchSize, false},
		{0x7ffc00000000, false},
	} {
		if got := (&scratch{addr: loader.ScratchAddr}).has(v.addr); got != v.in {
			t.Errorf("has(%#x) = %v", v.addr, got)
		}
		v1 := loader.Variants[1].Scratch - loader.ScratchAddr
		if got := (&scratch{addr: loader.Variants[1].Scratch}).has(v.addr + v1); got != v.in {
			t.Errorf("variant 1: has(%#x) = %v", v.addr+v1, got)
		}
	}
}

// TestScratchMissing: only a process droidroot's loader was asked to map the scratch area in,
// and that has no cookie there, counts as missing it (stage 2 and a foreign loader never map
// it); while the loader runs nothing is settled.
func TestScratchMissing(t *testing.T) {
	tr := &Tracer{scratch: &scratch{}}
	for _, tc := range []struct {
		name    string
		asked   bool
		state   uint8
		loading bool
		want    bool
	}{
		{"asked, missing", true, scratchNo, false, true},
		{"asked, mapped", true, scratchYes, false, false},
		{"not asked (stage 2, a foreign loader)", false, scratchNo, false, false},
		{"asked, loader still running", true, scratchUnknown, true, false},
	} {
		p := &Process{scratch: tc.state, scratchAsked: tc.asked}
		c := &Call{t: tr, th: &Thread{Proc: p, loading: tc.loading}}
		if got := c.ScratchMissing(); got != tc.want {
			t.Errorf("%s: ScratchMissing() = %v, want %v", tc.name, got, tc.want)
		}
		if tc.loading && p.scratch != scratchUnknown {
			t.Errorf("%s: the state was settled while the loader runs", tc.name)
		}
	}
}
