package emul

import (
	"encoding/binary"
	"os"
	"runtime"
	"testing"
	"unsafe"

	"github.com/droidroot/droidroot/fastpath"
	"github.com/droidroot/droidroot/tracer"
)

// TestFastPathWaitsEvent: the event of a process's first tracee
// (tracer.EventGuestTracer) writes 0 into the waits word of its cwd
// record (the library's waits go to the tracer from then on); another
// process's word stays. This process's own memory stands in for a guest's.
func TestFastPathWaitsEvent(t *testing.T) {
	rec := make([]byte, fastpath.CwdIDsOff)
	binary.LittleEndian.PutUint32(rec[fastpath.CwdWaitsOff:], fastpath.WaitsOwn)
	other := append([]byte(nil), rec...)
	pid := os.Getpid()
	s := &fastPathState{procs: map[int]*fastPathProc{
		pid:     {cwd: uint64(uintptr(unsafe.Pointer(&rec[0])))},
		pid + 1: {cwd: uint64(uintptr(unsafe.Pointer(&other[0])))},
	}}
	s.events(&tracer.Event{Kind: tracer.EventGuestTracer, Tid: pid, Pid: pid})
	if got := binary.LittleEndian.Uint32(rec[fastpath.CwdWaitsOff:]); got != 0 {
		t.Errorf("after EventGuestTracer: waits word %d, want 0", got)
	}
	if got := binary.LittleEndian.Uint32(other[fastpath.CwdWaitsOff:]); got != fastpath.WaitsOwn {
		t.Errorf("another process's word %d, want %d", got, fastpath.WaitsOwn)
	}
	runtime.KeepAlive(rec)
	runtime.KeepAlive(other)
}
