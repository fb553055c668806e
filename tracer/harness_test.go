package tracer_test

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/tracer"
	"github.com/droidroot/droidroot/tracer/tracertest"
)

func TestMain(m *testing.M) { tracertest.Main(m) }

func TestHarnessReturn(t *testing.T) {
	tab := tracer.Table{"getppid": {Enter: func(c *tracer.Call) { c.Return(42) }}}
	r := tracertest.Run(t, tracertest.Options{Table: tab},
		tracertest.Call("getppid"),
		tracertest.Call("getpid"))
	if r.Steps[0].Ret != 42 {
		t.Errorf("getppid = %d, want 42", r.Steps[0].Ret)
	}
	_ = unix.EPERM
	t.Logf("%+v", r)
}
