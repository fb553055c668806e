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
		if got := inScratch(v.addr); got != v.in {
			t.Errorf("inScratch(%#x) = %v", v.addr, got)
		}
	}
}
