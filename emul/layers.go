package emul

import (
	"path/filepath"

	"github.com/droidroot/droidroot/tracer"
)

// layer is one option's change to the table: it replaces or wraps the
// handlers of declared syscalls, or adds the calls it emulates whole. Its
// state lives in the Emulation or in its handlers' closures.
type layer struct {
	name  string
	on    func(cfg Config) bool
	apply func(e *Emulation, b *tableBuilder)
}

// layerOrder is the order New applies the layers in: a later layer sees
// (and may wrap or replace) what the earlier ones set. TestLayers pins
// which layer wins for each syscall under each option.
var layerOrder = []layer{
	{"link2symlink", func(c Config) bool { return c.Link2Symlink || c.FailLink }, applyLink2Symlink},
	{"stat-patch", func(c Config) bool { return c.Link2Symlink || c.LstatLinkSize }, applyStatPatch},
	{"port-shift", func(c Config) bool { return c.PortShift }, applyPortShift},
	{"ashmem-memfd", func(c Config) bool { return c.AshmemMemfd }, func(_ *Emulation, b *tableBuilder) {
		b.set("ioctl", ashmemIoctl)
	}},
	{"hide", func(c Config) bool { return c.Link2Symlink || c.HideOwnFiles }, applyHide},
	{"uname", func(c Config) bool { return c.Uname != nil }, func(e *Emulation, b *tableBuilder) {
		for name, h := range e.cfg.Uname.handlers() {
			b.set(name, h)
		}
	}},
	{"at2", func(c Config) bool { return c.EmulateAt2 }, func(_ *Emulation, b *tableBuilder) {
		for name, h := range at2Handlers() {
			b.set(name, h)
		}
	}},
	{"sysvipc", func(c Config) bool { return c.SysVIPC }, func(e *Emulation, b *tableBuilder) {
		addSysvIPC(b, e.cfg.sessionDir())
	}},
	{"robust-list", func(c Config) bool { return c.EmulateRobustList }, func(_ *Emulation, b *tableBuilder) {
		addRobustList(b)
	}},
	{"identity", func(c Config) bool { return c.Identity != nil || c.EmulateSetID }, func(e *Emulation, b *tableBuilder) {
		addIdentity(b, e.cfg)
	}},
	{"ptrace", func(c Config) bool { return c.GuestPtrace }, applyGuestPtrace},
	{"real-ids", func(c Config) bool { return c.RealIDs && c.Identity == nil && !c.EmulateSetID && c.Android == nil }, applyRealIDs},
	{"fastpath", func(c Config) bool { return c.FastPath != nil }, applyFastPath},
	// Last: it sees the other emulations (androidOthers).
	{"android", func(c Config) bool { return c.Android != nil }, func(e *Emulation, b *tableBuilder) {
		addAndroid(e.cfg, b)
	}},
}

// applyGuestPtrace: ptrace and the wait family emulated between guest
// processes (tracer.GuestPtrace). Its prctl handler (PR_SET_PTRACER,
// PR_SET_SECCOMP) and seccomp handler (the guest's own filters) follow an
// earlier layer's (the declaration's seccomp, identity's prctl), unless
// that one answered the call, and the filter stops what either asks for.
func applyGuestPtrace(_ *Emulation, b *tableBuilder) {
	for name, h := range tracer.GuestPtrace() {
		if old, ok := b.get(name); ok {
			h = chainHandlers(old, h)
		}
		b.set(name, h)
	}
}

// chainHandlers is one handler doing a's work, then b's when a did not
// answer the call (entry), or both (exit).
func chainHandlers(a, b tracer.Handler) tracer.Handler {
	h := a
	if a.Enter != nil && b.Enter != nil {
		h.Enter = func(c *tracer.Call) {
			a.Enter(c)
			if !c.Answered() {
				b.Enter(c)
			}
		}
	} else if b.Enter != nil {
		h.Enter = b.Enter
	}
	if a.Exit != nil && b.Exit != nil {
		h.Exit = func(c *tracer.Call) {
			a.Exit(c)
			b.Exit(c)
		}
	} else if b.Exit != nil {
		h.Exit = b.Exit
	}
	h.TraceIf = mergeTraceIf(a.TraceIf, b.TraceIf)
	return h
}

// mergeTraceIf is the TraceIf of a handler that serves two: the calls
// either stops (nil, every call, unless both test the same argument).
func mergeTraceIf(a, b *tracer.ArgMask) *tracer.ArgMask {
	if a == nil || b == nil || a.Arg != b.Arg || a.Mask == 0 || b.Mask == 0 {
		return nil // (a range merges with nothing)
	}
	return &tracer.ArgMask{Arg: a.Arg, Mask: a.Mask | b.Mask}
}

// applyLink2Symlink: -l's hard links made of symlinks (link2symlink.go),
// and FailLink's refused links (a test switch) through the same link
// handlers.
func applyLink2Symlink(e *Emulation, b *tableBuilder) {
	cfg := e.cfg
	l2s := &link2symlink{on: cfg.Link2Symlink, dir: cfg.L2SDir, fail: cfg.FailLink}
	if cfg.L2SDir != "" {
		l2s.dir = filepath.Clean(cfg.L2SDir)
	}
	if cfg.Link2Symlink {
		e.l2s = l2s
	}
	for _, name := range []string{"link", "linkat"} {
		d := b.decl(name)
		b.set(name, l2s.linkHandler(d.args[0].rawName(), d.args[1], d.flagsArg))
	}
	if !cfg.Link2Symlink {
		return
	}
	for _, name := range []string{"unlink", "unlinkat"} {
		d := b.decl(name)
		b.set(name, l2s.unlinkHandler(d.args[0], d.flagsArg))
	}
	for _, name := range []string{"rename", "renameat", "renameat2"} {
		d := b.decl(name)
		b.set(name, l2s.renameHandler(d.args[0], d.args[1], d.flagsArg))
	}
}

// applyStatPatch: stat results of -l's linked files (one inode, their link
// count) and -L's symlink sizes. fstat is patched for -l only.
func applyStatPatch(e *Emulation, b *tableBuilder) {
	s := statPatcher{l2s: e.cfg.Link2Symlink, lsize: e.cfg.LstatLinkSize}
	for _, name := range []string{"stat", "lstat", "newfstatat", "fstatat", "statx"} {
		d := b.decl(name)
		b.set(name, s.handler(d.args[0], d.stat))
	}
	if e.cfg.Link2Symlink {
		d := b.decl("fstat")
		b.set("fstat", statPatcher{l2s: true}.handler(d.args[0], d.stat))
	}
}

// applyPortShift: -p wraps the socket address handlers.
func applyPortShift(_ *Emulation, b *tableBuilder) {
	for _, c := range []struct {
		name            string
		addrArg, lenArg int
		bind            bool
	}{{"bind", 1, 2, true}, {"connect", 1, 2, false}, {"sendto", 4, 5, false}} {
		h, _ := b.get(c.name)
		b.set(c.name, portShiftHandler(h, c.addrArg, c.lenArg, c.bind))
	}
}

// applyHide: -H hides .proot* and droidroot's own files, -l its data
// files, from directory listings.
func applyHide(e *Emulation, b *tableBuilder) {
	h := hider{l2s: e.cfg.Link2Symlink, proot: e.cfg.HideOwnFiles}
	if e.cfg.TmpDir != "" {
		if d, err := filepath.EvalSymlinks(e.cfg.TmpDir); err == nil {
			h.tmpDir = d
		}
	}
	b.set("getdents64", h.getdentsHandler())
}
