package emul

import (
	"os"
	"sync/atomic"
	"testing"

	"github.com/droidroot/droidroot/fastpath"
)

// TestWaitvRegistry: the tracer's side of the futex_waitv registry keeps
// waitv.c's layout and protocol: a claimed slot raises the high-water mark,
// a wake moves a WAITING slot with the word's key to WOKEN+index (counting
// it, at most up to the count), never one with another key, and frees the
// slot of a dead waiter instead of counting it; leave returns the index a
// waker set, or the error.
func TestWaitvRegistry(t *testing.T) {
	if fwSlotsOff+fwSlotSize*fwSlots != fastpath.RegistrySize {
		t.Fatalf("registry layout: %d bytes, fastpath.RegistrySize %d", fwSlotsOff+fwSlotSize*fwSlots, fastpath.RegistrySize)
	}
	path, err := fastpath.NewRegistry(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	reg, err := mapWaitvRegistry(path)
	if err != nil {
		t.Fatal(err)
	}
	self, tid := uint32(os.Getpid()), uint32(os.Getpid())
	word := func(i uint64) waitvKey { return waitvKey{1, 2, 4 * i} }
	publish := func(pid, tid uint32, keys ...waitvKey) (int, uint32) {
		s := reg.claim()
		if s < 0 {
			t.Fatal("no free slot")
		}
		reg.setSlot(s, pid, tid, keys)
		var b uint64
		for _, k := range keys {
			b |= k.bloom()
		}
		reg.setBloom(s, b)
		w := atomic.LoadUint32(reg.state(s))&^0xff | fwWaiting
		atomic.StoreUint32(reg.state(s), w)
		return s, w
	}
	a, wa := publish(self, tid, word(0), word(1), word(2))
	b, wb := publish(self, tid, word(5), word(2))
	c, wc := publish(self, tid, word(7))
	if hw := atomic.LoadUint32(reg.hiwater()); hw < uint32(c+1) {
		t.Errorf("hiwater %d after claiming slot %d", hw, c)
	}
	for _, tc := range []struct {
		name    string
		key     waitvKey
		k, n    int64
		want    int64
		changed []int
	}{
		{"no waiter", word(9), 0, 10, 0, nil},
		{"kernel woke enough", word(2), 1, 1, 1, nil},
		{"wake one of two", word(2), 0, 1, 1, []int{a}},
		{"the other", word(2), 0, 5, 1, []int{b}},
	} {
		before := [3]uint32{atomic.LoadUint32(reg.state(a)), atomic.LoadUint32(reg.state(b)), atomic.LoadUint32(reg.state(c))}
		if got := reg.wake(tc.key, tc.k, tc.n); got != tc.want {
			t.Errorf("%s: wake = %d, want %d", tc.name, got, tc.want)
		}
		for i, s := range []int{a, b, c} {
			moved := atomic.LoadUint32(reg.state(s)) != before[i]
			want := false
			for _, x := range tc.changed {
				want = want || x == s
			}
			if moved != want {
				t.Errorf("%s: slot %d changed %v, want %v", tc.name, s, moved, want)
			}
		}
	}
	if r := reg.leave(a, wa, -110); r != 2 {
		t.Errorf("leave of slot woken through its third word = %d, want index 2", r)
	}
	if r := reg.leave(b, wb, -110); r != 1 {
		t.Errorf("leave of slot woken through its second word = %d, want index 1", r)
	}
	if r := reg.leave(c, wc, -110); r != -110 {
		t.Errorf("leave of a slot nobody woke = %d, want the error", r)
	}
	// A dead waiter is freed, not counted.
	d, _ := publish(0x7ffffff0, 0x7ffffff0, word(3))
	if got := reg.wake(word(3), 0, 1); got != 0 {
		t.Errorf("wake of a dead waiter's word = %d, want 0", got)
	}
	if st := atomic.LoadUint32(reg.state(d)) & 0xff; st != fwFree {
		t.Errorf("dead waiter's slot state %d, want free", st)
	}
}
