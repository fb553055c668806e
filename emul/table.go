// Package emul holds droidroot's per-syscall handlers. Its Table is the
// single source of truth for what the seccomp filter traces: a syscall is
// traced (SECCOMP_RET_TRACE) iff it has a handler here.
package emul

import (
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/seccomp"
	"github.com/droidroot/droidroot/tracer"
)

func itoa(i int) string { return strconv.Itoa(i) }

// nativeNr returns the number of syscall name on the host's native ABI.
func nativeNr(name string) (int, bool) {
	return tracer.NativeABI().Nr(name)
}

const (
	atSymlinkNofollow = unix.AT_SYMLINK_NOFOLLOW
	atSymlinkFollow   = unix.AT_SYMLINK_FOLLOW
	atEmptyPath       = unix.AT_EMPTY_PATH
	inDontFollow      = unix.IN_DONT_FOLLOW
	fanMarkDontFollow = 0x04
)

// Config selects the optional behaviours of the handler table: the proot
// extensions and emulations a command line turns on. The zero Config is
// plain path translation.
type Config struct {
	// Identity is -0 / -i: the guest's ids (nil: the real ones). It turns
	// on the set*id emulation too, and the owner and privilege fix-ups of
	// file calls (ident.go).
	Identity *Identity
	// EmulateSetID answers the set*id family, setgroups and get*id in the
	// tracer, starting from the real ids (Android blocks set*id).
	EmulateSetID bool
	// RealIDs says that the guest's set*id calls change its real ids
	// (droidroot runs as root): without the identity emulation they are
	// then traced, to stop pinning the paths of a thread that may no
	// longer follow the tracer's /proc/<pid>/fd (pincreds.go).
	RealIDs bool
	// NoPin hands host paths to the kernel as before pinning (a switch to
	// measure what pinning costs, DROIDROOT_PIN=0; it brings the
	// directory-swap race back, docs/security.md).
	NoPin bool
	// SysVIPC answers msg*/sem*/shm* in the tracer for the whole tree
	// (termux proot's --sysvipc; Android forbids them to apps).
	SysVIPC bool
	// EmulateRobustList answers set_robust_list/get_robust_list per thread
	// and does the kernel's owner-died handling at thread exit.
	EmulateRobustList bool
	// EmulateAt2 answers faccessat2, fchmodat2, openat2 and close_range in
	// the tracer with calls Android allows (see at2.go); openat2 honours
	// every RESOLVE_* flag with or without it.
	EmulateAt2 bool
	// Uname is the -k / --kernel-release emulation (nil: none): uname,
	// sethostname, setdomainname and /proc/sys/kernel's names.
	Uname *Uname
	// Link2Symlink emulates hard links (-l/--link2symlink): see
	// link2symlink.go.
	Link2Symlink bool
	// L2SDir is PROOT_L2S_DIR, the host directory where -l keeps the
	// shared data of linked files ("": a .l2s directory at the root of
	// each mount).
	L2SDir string
	// FailLink makes every real link the tracer would let the kernel (or
	// itself) make fail with EPERM, as on Android app storage: a test
	// switch (DROIDROOT_FAIL_LINK=1).
	FailLink bool
	// TrampolineByOpen makes the fast path library map its trampoline page
	// from an open of its file (a stop), as where the kernel cannot remap
	// the page ld.so mapped (before Linux 5.13): a test switch
	// (DROIDROOT_FASTPATH_REMAP=0).
	TrampolineByOpen bool
	// HideOwnFiles hides droidroot's files from directory listings (-H).
	HideOwnFiles bool
	// TmpDir is where droidroot writes its files (PROOT_TMP_DIR): the
	// generated /proc mount tables, and what -H hides.
	TmpDir string
	// SessionDir is where the session makes its own directories
	// (tmpdir.Make: SysV shared memory's files, the socket aliases), ""
	// for TmpDir.
	SessionDir string
	// PortShift moves AF_INET/AF_INET6 ports below 1024 up by 2000 (-p).
	PortShift bool
	// LstatLinkSize makes lstat of a symlink report the length of its
	// guest readlink result as st_size (-L).
	LstatLinkSize bool
	// AshmemMemfd emulates /dev/ashmem with memfd_create (--ashmem-memfd).
	AshmemMemfd bool
	// Qemu is the -q/--qemu command (host path and arguments) that runs
	// ELF programs of another architecture; nil for none.
	Qemu []string
	// Android is the Android app policy droidroot runs under (simulated by
	// --android-policy, or a real device's), nil if none: every call it
	// blocks gets a handler that answers it at its SIGSYS stop (rewrite,
	// emulation or the kernel's answer; see android.go). It turns on the
	// switches below.
	Android *seccomp.AndroidPolicy
	// FastPath turns on the fast path library's support (its handshake,
	// the merged /etc/ld.so.preload, the trampoline's calls); nil: off.
	FastPath *FastPath
	// GuestPtrace emulates ptrace between guest processes (strace, gdb
	// inside the guest; tracer.GuestPtrace, docs/ptrace.md): ptrace,
	// wait4 and waitid are traced.
	GuestPtrace bool
}

// WithAndroid returns cfg with policy p active and the emulations Android
// needs switched on.
func (cfg Config) WithAndroid(p *seccomp.AndroidPolicy) Config {
	cfg.Android = p
	if p != nil {
		cfg.SysVIPC = true
		cfg.EmulateRobustList = true
		cfg.EmulateSetID = true
		cfg.EmulateAt2 = true
	}
	return cfg
}

// Emulation is the handler table of one run and the state its handlers
// share (what -l, -q and -k keep), built by New from a Config. Hand both to
// the tracer: Table as tracer.Config.Table, the Emulation itself as
// tracer.Config.State, where handlers find it (emulationOf).
type Emulation struct {
	// Table holds the handlers, by syscall name.
	Table tracer.Table
	// layers lists, per syscall, "base" when it is declared and then each
	// layer that replaced or wrapped its handler, in the order applied.
	layers map[string][]string
	cfg    Config
	views  *procViews    // the guest's /proc mount tables and /dev/ashmem
	socks  *sockets      // AF_UNIX address translation
	l2s    *link2symlink // -l, nil when off
	qemu   *qemu         // -q, nil when off
	uname  *Uname        // -k, nil when off
	// execFiles keeps what exec read of programs and interpreters
	// (execfiles.go), made on first use.
	execFiles *execFiles
	// fastPath is the fast path layer's state, nil when off.
	fastPath *fastPathState
	// realIDs: the threads whose paths are not pinned (pincreds.go).
	realIDs *realIDs
	// waitv answers futex_waitv for library-less processes, nil when the
	// session does not emulate it (waitv.go).
	waitv *waitvEmu
	// execHeld: files droidroot opened for a process's loader (heldExec).
	execHeld map[int]*heldFile
	// execGrew holds the threads whose exec growStack grew the stack
	// for, until that exec's next try.
	execGrew map[int]bool
	// dac: a fake root's mode override (dac.go), nil when off.
	dac *dacOverride
	// dirGuests: the guest paths of dirfds' host directories (path.go).
	dirGuests dirGuests
}

// New builds the handler table for cfg: every declared syscall's base
// handler (declarations.go), then each layer cfg turns on, in layerOrder.
func New(cfg Config) *Emulation {
	e := &Emulation{
		layers: map[string][]string{},
		cfg:    cfg,
		views:  &procViews{tmpDir: cfg.TmpDir, ashmem: cfg.AshmemMemfd},
		socks:  newSockets(cfg.sessionDir()),
		uname:  cfg.Uname,
	}
	if len(cfg.Qemu) > 0 {
		e.qemu = &qemu{cmd: cfg.Qemu}
	}
	e.socks.creds = newSockCreds(cfg)
	b := &tableBuilder{t: tracer.Table{}, e: e, decls: declarations(), layer: "base"}
	for name, d := range b.decls {
		if d.base == nil {
			continue // only a layer traces it (fstat, ioctl, getdents64)
		}
		b.set(name, d.base(e, d))
	}
	for _, l := range layerOrder {
		if l.on(cfg) {
			b.layer = l.name
			l.apply(e, b)
		}
	}
	e.Table = b.t
	return e
}

// Table returns New(cfg).Table: the handlers alone, for callers that need
// no per-run state (the seccomp filter's view, tests of the table's shape).
// A table whose -l, -q or -k handlers run needs its Emulation as the
// tracer's State.
func Table(cfg Config) tracer.Table { return New(cfg).Table }

// sessionDir is SessionDir, or TmpDir where it is not set.
func (c Config) sessionDir() string {
	if c.SessionDir != "" {
		return c.SessionDir
	}
	return c.TmpDir
}

// Close removes the files e made for the session (the unix socket
// aliases' directory) once no guest process is left to use them.
func (e *Emulation) Close() { e.socks.removeAliases() }

// Config returns the configuration e was built from.
func (e *Emulation) Config() Config { return e.cfg }

// Layers returns, for each syscall with a handler, the layers that made
// it: "base" first when it is declared, then each option's layer that
// replaced or wrapped it, in order (the last one wins where they replace).
func (e *Emulation) Layers() map[string][]string {
	out := make(map[string][]string, len(e.layers))
	for name, ls := range e.layers {
		out[name] = append([]string(nil), ls...)
	}
	return out
}

// emulationOf returns the Emulation of c's run (a zero one when the tracer
// has none: every option off).
func emulationOf(c *tracer.Call) *Emulation {
	if e, ok := c.State().(*Emulation); ok && e != nil {
		return e
	}
	return &noEmulation
}

var noEmulation Emulation

// tableBuilder assembles a table layer by layer, recording which layer set
// each handler.
type tableBuilder struct {
	t     tracer.Table
	e     *Emulation
	decls map[string]decl
	layer string // the layer being applied
}

// decl returns the declaration of name, which must exist.
func (b *tableBuilder) decl(name string) decl {
	d, ok := b.decls[name]
	if !ok {
		panic("emul: layer " + b.layer + " uses undeclared syscall " + name)
	}
	return d
}

// get returns the handler of name so far.
func (b *tableBuilder) get(name string) (tracer.Handler, bool) {
	h, ok := b.t[name]
	return h, ok
}

// set makes h the handler of name, on behalf of the current layer.
func (b *tableBuilder) set(name string, h tracer.Handler) {
	b.t[name] = h
	if ls := b.e.layers[name]; len(ls) == 0 || ls[len(ls)-1] != b.layer {
		b.e.layers[name] = append(ls, b.layer)
	}
}
