package emul

import (
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/fastpath"
	"github.com/droidroot/droidroot/seccomp"
	tt "github.com/droidroot/droidroot/tracer/tracertest"
)

// TestFutexWaitvHandler: under Android's policy, with the session's
// futex_waitv emulation on, the tracer answers futex_waitv (for processes
// without the fast path library) as the kernel does without the policy:
// the argument checks in the kernel's order, EAGAIN, and timeouts on both
// clocks for one word (the kernel's own FUTEX_WAIT_BITSET) and several (a
// registry slot; its mapping injected into the process). Without the
// emulation the answer stays ENOSYS.
func TestFutexWaitvHandler(t *testing.T) {
	const words = 0x7e0000000000            // a page of words the first step maps
	waitv := func(ws ...[3]uint64) tt.Arg { // {uaddr, val, flags}
		b := make([]byte, 24*len(ws))
		for i, w := range ws {
			binary.LittleEndian.PutUint64(b[24*i:], w[1])
			binary.LittleEndian.PutUint64(b[24*i+8:], w[0])
			binary.LittleEndian.PutUint32(b[24*i+16:], uint32(w[2]))
		}
		return tt.In(b)
	}
	ts := func(sec, nsec int64) tt.Arg {
		b := make([]byte, 16)
		binary.LittleEndian.PutUint64(b, uint64(sec))
		binary.LittleEndian.PutUint64(b[8:], uint64(nsec))
		return tt.In(b)
	}
	call := func(w tt.Arg, n, flags int64, to tt.Arg, clk int64) tt.Step {
		return tt.Call("futex_waitv", w, tt.Int(n), tt.Int(flags), to, tt.Int(clk))
	}
	const u32, priv = 2, 2 | 128
	mono, real := int64(unix.CLOCK_MONOTONIC), int64(unix.CLOCK_REALTIME)
	w0, w1 := [3]uint64{words, 0, u32}, [3]uint64{words + 4, 0, u32}
	past := ts(0, 0)
	cases := []kcase{
		{name: "map words", step: tt.Call("mmap", tt.Int(words), tt.Int(4096), tt.Int(unix.PROT_READ|unix.PROT_WRITE),
			tt.Int(unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED_NOREPLACE), tt.Int(-1), tt.Int(0))},
		{name: "probe", step: call(tt.Int(0), 0, 0, tt.Int(0), 0)},
		{name: "flags 1", step: call(waitv(w0, w1), 2, 1, past, mono)},
		{name: "nr 129", step: call(waitv(w0, w1), 129, 0, past, mono)},
		{name: "bad clock", step: call(waitv(w0, w1), 2, 0, past, int64(unix.CLOCK_BOOTTIME))},
		{name: "timeout EFAULT", step: call(waitv(w0, w1), 2, 0, tt.Int(16), mono)},
		{name: "timeout invalid", step: call(waitv(w0, w1), 2, 0, ts(0, 1e9), mono)},
		{name: "waiters EFAULT", step: call(tt.Int(16), 2, 0, past, mono)},
		{name: "without FUTEX_32", step: call(waitv(w0, [3]uint64{words + 4, 0, 0}), 2, 0, past, mono)},
		{name: "unknown flag", step: call(waitv(w0, [3]uint64{words + 4, 0, u32 | 0x1000}), 2, 0, past, mono)},
		{name: "unaligned", step: call(waitv(w0, [3]uint64{words + 5, 0, u32}), 2, 0, past, mono)},
		{name: "word EFAULT", step: call(waitv(w0, [3]uint64{32, 0, u32}), 2, 0, past, mono)},
		{name: "differs, 1 word", step: call(waitv([3]uint64{words, 5, u32}), 1, 0, past, mono)},
		{name: "differs, 2 words", step: call(waitv(w0, [3]uint64{words + 4, 5, u32}), 2, 0, past, mono)},
		{name: "timeout, 1 word", step: call(waitv(w0), 1, 0, past, mono)},
		{name: "timeout, 1 private word, realtime", step: call(waitv([3]uint64{words, 0, priv}), 1, 0, past, real)},
		{name: "timeout, 2 words", step: call(waitv(w0, w1), 2, 0, past, mono)},
		{name: "timeout, 2 words, realtime", step: call(waitv(w0, [3]uint64{words + 4, 0, priv}), 2, 0, past, real)},
		{name: "timeout, 128 words", step: call(waitv(func() [][3]uint64 {
			var ws [][3]uint64
			for i := uint64(0); i < 128; i++ {
				ws = append(ws, [3]uint64{words + 4*i, 0, u32})
			}
			return ws
		}()...), 128, 0, past, mono)},
	}
	pol, err := seccomp.LoadAndroidPolicy("16")
	if err != nil {
		t.Fatal(err)
	}
	reg, err := fastpath.NewRegistry(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	on := Config{FastPath: &FastPath{Lib: fastpath.Config{Flags: fastpath.FlagWaitv, Registry: reg}, Dir: t.TempDir()}}.WithAndroid(pol)
	againstKernel(t, on, "/", cases)

	g := newGuestFS(t)
	r := g.run(t, Config{}.WithAndroid(pol), "/", call(tt.Int(0), 0, 0, tt.Int(0), 0))
	if e := r.Steps[0].Errno(); e != unix.ENOSYS {
		t.Errorf("futex_waitv without the emulation: %v, want ENOSYS", e)
	}
}
