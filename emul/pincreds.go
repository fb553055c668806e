package emul

import "github.com/droidroot/droidroot/tracer"

// Pinned paths and real ids. The path the kernel is given for a translated
// path argument goes through the tracer's own /proc/<pid>/fd (kernelName),
// which the kernel lets a thread follow only when its filesystem ids are
// the tracer's (or it has CAP_SYS_PTRACE). A guest's set*id calls change
// its real ids only when droidroot runs as root without the identity
// emulation (Config.RealIDs): then the first such call of a thread (and
// of every thread or process it starts afterwards) turns pinning off for
// it, and its paths are handed to the kernel as host paths, as before
// (docs/security.md: the bound of the directory-swap race).

// realIDs tracks the threads that may have left the tracer's ids.
type realIDs struct {
	changed map[int]bool // by tid
}

// applyRealIDs traces the set*id family (at entry only, never answered).
func applyRealIDs(e *Emulation, b *tableBuilder) {
	r := &realIDs{changed: map[int]bool{}}
	e.realIDs = r
	mark := func(c *tracer.Call) { r.changed[c.Tid()] = true }
	for i, name := range []string{"setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setfsuid", "setfsgid"} {
		h := tracer.Handler{Enter: mark}
		if i == 0 {
			h.Events = r.events
		}
		b.set(name, h)
	}
}

func (r *realIDs) events(e *tracer.Event) {
	switch e.Kind {
	case tracer.EventFork:
		if r.changed[e.ParentTid] {
			r.changed[e.Tid] = true
		}
	case tracer.EventThreadGone:
		delete(r.changed, e.Tid)
	}
}

// unpinned tells whether the calling thread's paths must not be pinned.
func unpinned(c *tracer.Call) bool {
	r := emulationOf(c).realIDs
	return r != nil && r.changed[c.Tid()]
}
