package tracer

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/ident"
	"github.com/droidroot/droidroot/loader"
	"github.com/droidroot/droidroot/pathmap"
	"github.com/droidroot/droidroot/seccomp"
)

// Config is everything the tracer needs to run a guest command tree.
type Config struct {
	// Mapper translates guest paths.
	Mapper *pathmap.Mapper
	// Cwd is the guest's initial current directory (absolute guest path).
	Cwd string
	// CwdHost is the host directory of Cwd.
	CwdHost string
	// Path is the guest path of the program to run; Argv its arguments
	// (Argv[0] included) and Env its environment.
	Path string
	Argv []string
	Env  []string
	// Loader is the host path of the loader executable.
	Loader string
	// Stage2 is the host path of the program that installs the filter and
	// execs the guest (see Stage2Name): droidroot's own loader, which
	// does it without a second Go runtime start. "" re-executes droidroot.
	Stage2 string
	// Table holds the syscall handlers.
	Table Table
	// Classes classifies the native calls without a handler (see Policy):
	// harmless ones run, refused ones and unknown numbers are answered
	// with an errno by the filter (in ptrace-only mode, by the tracer at
	// their entry). nil allows every call without a handler.
	Classes *Classes
	// State is the per-run state the table's handlers share (emul's
	// Emulation, built with the table), handed to them by Call.State; nil
	// for none.
	State any
	// NoSeccomp makes every syscall stop (ptrace-only mode).
	NoSeccomp bool
	// KillOnExit kills every remaining tracee when the first process exits.
	KillOnExit bool
	// Verbose is the log level (PROOT_VERBOSE / -v); below 0, warnings are
	// not printed either (WarnOnce), as proot prints only errors then.
	Verbose int
	// Spin is how long the tracer polls for the next stop before it blocks
	// in wait4, while stops come quickly (DROIDROOT_SPIN): 0 means
	// DefaultSpin, a negative value never polls.
	Spin time.Duration
	// NoScratch makes pushes go below the stack pointer, not into the
	// loader's read-only scratch area (scratch.go); DROIDROOT_SCRATCH=0.
	NoScratch bool
	// Flight turns on the flight recorder (DROIDROOT_FLIGHT=1): each
	// task's last stops, printed when the first process exits non-zero.
	Flight bool
	// Census counts the tracer's stops by kind and call and prints them
	// when the run ends (DROIDROOT_STOPS=1; census.go); CensusSites also by
	// call site (DROIDROOT_STOPS=sites; census_sites.go).
	Census, CensusSites bool
	// Log receives diagnostics; nil means os.Stderr.
	Log io.Writer
	// HWCap, when set, is the AT_HWCAP every guest program sees (-k's hwcap
	// field), written by the loader; nil keeps the kernel's.
	HWCap *uint64
	// Creds, when set, are the first guest process's emulated credentials
	// (-0 / -i, or set*id emulation), which the loader publishes in the
	// auxiliary vector; nil starts from droidroot's real ones, unpublished.
	// The tracer keeps credentials per thread and applies exec's rules;
	// handlers reach them through Call.Creds.
	Creds *ident.Creds
	// Trampoline is the address of the fast path library's trampoline page
	// for this session (see package fastpath), 0 for none: the filter lets
	// the calls whose handlers are FromTrampoline through from there.
	Trampoline uint64
	// Stdin, Stdout, Stderr are the guest's standard files (nil: ours).
	Stdin, Stdout, Stderr *os.File
	// Android is the Android app policy droidroot runs under (simulated
	// with --android-policy, or the device's own), or nil. With it, a
	// SIGSYS stop of a call the policy blocks is answered by the table's
	// handler for that call (see sigsysStop).
	Android *seccomp.AndroidPolicy
	// YamaFile is where the guest ptrace emulation reads Yama's
	// ptrace_scope ("": /proc/sys/kernel/yama/ptrace_scope; a missing file
	// means no Yama). Tests point it at a file of their own.
	YamaFile string
}

// Tracer runs and traces one guest command tree.
//
// Run owns the tracer: its exported methods other than New, Run, WarnOnce
// and WriteMem must be called on Run's OS thread, from a handler or an event
// hook (ptrace requests are refused from other threads, and the thread
// table is not locked). Tests check it (checkTracerThread).
type Tracer struct {
	cfg Config
	// osThread is the tid of the OS thread Run locked, 0 before Run.
	osThread int
	goarch   string
	handlers []*Handler // indexed by native syscall number, below denseHandlers
	// farHandlers are the handlers of numbers from denseHandlers up
	// (droidroot's own calls); handlerOf looks in both.
	farHandlers map[int]*Handler
	threads     map[int]*Thread
	// scratch is the scratch area (scratch.go), nil when off
	// (DROIDROOT_SCRATCH=0) or unavailable; freeSlots and nextSlot
	// allocate its slots.
	scratch   *scratch
	freeSlots []int
	nextSlot  int
	// first is the pid of the first guest process.
	first int
	// killed is set once --kill-on-exit has killed the rest of the tree.
	killed bool
	// loaderLo, loaderHi bound the loader's mapped image.
	loaderLo, loaderHi uint64
	// scriptArea is where the load script goes in an exec'd loader (its
	// bss), scriptAreaSize its size; 0 when the loader has none.
	scriptArea, scriptAreaSize uint64
	// spin is how long waitNext polls before it blocks (0: never);
	// spinning is set while stops come quickly.
	spin     time.Duration
	spinning bool
	// flight is the flight recorder (Config.Flight), nil when off.
	flight     *flight
	census     *census // Config.Census, nil when off
	lastStatus int
	warned     map[string]bool
	// awaiting are new tasks whose initial stop has not been reported yet
	// (see waitAwaiting).
	awaiting map[int]*Thread
	// gone: new tasks let go at their exit stop before their parent's
	// event came (goneEarly).
	gone map[int]bool
	// hooks are the Events hooks of the table (events.go).
	hooks []func(*Event)
	// exitStops is set when a hook wants EventExiting.
	exitStops bool
	// policy is the seccomp policy of Table and Classes.
	policy seccomp.Policy
	// pt is the state of guest ptrace emulation (guestptrace.go).
	pt ptState
}

// denseHandlers bounds the syscall numbers kept in Tracer.handlers: every
// kernel's native numbers are below it (x86_64 and arm64 end below 512).
const denseHandlers = 1024

// New prepares a tracer; nothing runs until Run.
func New(cfg Config) (*Tracer, error) {
	if cfg.Log == nil {
		cfg.Log = os.Stderr
	}
	t := &Tracer{cfg: cfg, goarch: runtime.GOARCH, threads: map[int]*Thread{}, warned: map[string]bool{}}
	t.spin = cfg.Spin
	if t.spin == 0 {
		t.spin = DefaultSpin
	}
	if cfg.Flight {
		t.flight = &flight{rings: map[int]*flightRing{}}
	}
	if cfg.Census || cfg.CensusSites {
		t.census = &census{sites: cfg.CensusSites}
	}
	t.policy = Policy(t.goarch, cfg.Table, cfg.Classes)
	t.policy.Trampoline = cfg.Trampoline
	abi := seccomp.NativeABI(t.goarch)
	for name, h := range cfg.Table {
		nr, ok := abi.Nr(name)
		if !ok {
			continue // not a syscall of this architecture (e.g. open on arm64)
		}
		h := h
		if nr >= denseHandlers {
			// droidroot's own calls (the fast path's handshake, 25714):
			// not a slice of that length, grown and zeroed at each start.
			if t.farHandlers == nil {
				t.farHandlers = map[int]*Handler{}
			}
			t.farHandlers[nr] = &h
			continue
		}
		if len(t.handlers) == 0 {
			t.handlers = make([]*Handler, denseHandlers)
		}
		t.handlers[nr] = &h
	}
	for _, h := range cfg.Table {
		if h.Events != nil {
			t.hooks = append(t.hooks, h.Events)
			t.exitStops = t.exitStops || h.ExitingEvents
		}
	}
	if cfg.Loader != "" {
		img, err := readLoaderImage(cfg.Loader)
		if err != nil {
			return nil, fmt.Errorf("loader %s: %w", cfg.Loader, err)
		}
		t.loaderLo, t.loaderHi = img.lo, img.hi
		t.scriptArea, t.scriptAreaSize = img.area, img.areaSize
		allowLoader(&t.policy, t.goarch, img)
	}
	if !cfg.NoScratch {
		// Where this loader maps it: its variant's address (a loader that
		// is not droidroot's own is never asked to map it).
		addr := loader.ScratchAddr
		if v, ok := loader.VariantAt(t.loaderLo); ok {
			addr = v.Scratch
		}
		t.scratch = newScratch(addr)
	}
	return t, nil
}

// loaderStack is the stack the loader is left below its script in the
// script area (it uses a few hundred bytes).
const loaderStack = 16 << 10

// loaderImage is what the tracer needs of the loader's ELF image.
type loaderImage struct {
	lo, hi         uint64          // the address range of its PT_LOAD segments
	area, areaSize uint64          // its writable, file-less segment (the script area), 0 if none
	text           seccomp.IPRange // its executable segment, whole pages
}

// AllowLoader lets the traced calls droidroot's loader makes that the
// tracer lets run as they are (loader.PassedCalls: its opens of the
// scratch area, the program and its interpreter, its prctl) through p's
// filter from the loader's code, where the loader (its ELF image) is
// droidroot's own (one of loader.Variants): no stop for them at each exec.
// Another PROOT_LOADER's calls stay traced (the tracer lets them run at
// their stops: Tracer.InLoader).
func AllowLoader(p *seccomp.Policy, goarch string, image io.ReaderAt) error {
	img, err := loaderImageOf(image)
	if err != nil {
		return err
	}
	allowLoader(p, goarch, img)
	return nil
}

func allowLoader(p *seccomp.Policy, goarch string, img loaderImage) {
	if _, own := loader.VariantAt(img.lo); !own || img.text.Hi == 0 {
		return
	}
	abi := seccomp.NativeABI(goarch)
	calls := map[int]bool{}
	for _, name := range loader.PassedCalls {
		if nr, ok := abi.Nr(name); ok {
			calls[nr] = true
		}
	}
	p.Loader, p.LoaderCalls = img.text, map[*seccomp.ABI]map[int]bool{abi: calls}
}

// readLoaderImage reads the loader's image: its address range (see
// imageRange) and its script area, a PT_LOAD that is writable and all bss
// (loader/csrc/loader.c's dr_script_area; an older or foreign PROOT_LOADER
// may have none: the script then goes below the stack pointer).
func readLoaderImage(path string) (loaderImage, error) {
	f, err := os.Open(path)
	if err != nil {
		return loaderImage{}, err
	}
	defer f.Close()
	return loaderImageOf(f)
}

// loaderImageOf is readLoaderImage of the ELF file r.
func loaderImageOf(r io.ReaderAt) (loaderImage, error) {
	var img loaderImage
	f, err := elf.NewFile(r)
	if err != nil {
		return img, err
	}
	lo, hi, err := imageRange(f)
	if err != nil {
		return img, err
	}
	img.lo, img.hi = lo, hi
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_W != 0 && p.Filesz == 0 && p.Memsz >= 4096 {
			img.area, img.areaSize = p.Vaddr, p.Memsz
		}
		if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && img.text.Hi == 0 {
			img.text = seccomp.IPRange{Lo: p.Vaddr &^ 4095, Hi: (p.Vaddr + p.Memsz + 4095) &^ 4095}
		}
	}
	return img, nil
}

// imageRange returns the address range the PT_LOAD segments of
// fixed-address ELF file f occupy.
func imageRange(f *elf.File) (lo, hi uint64, err error) {
	lo = ^uint64(0)
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD {
			continue
		}
		lo = min(lo, p.Vaddr&^4095)
		hi = max(hi, p.Vaddr+p.Memsz)
	}
	if hi == 0 || f.Type != elf.ET_EXEC {
		return 0, 0, errors.New("not a fixed-address executable")
	}
	return lo, hi, nil
}

func (t *Tracer) logf(level int, format string, args ...any) {
	if t.cfg.Verbose >= level {
		fmt.Fprintf(t.cfg.Log, "droidroot: "+format+"\n", args...)
	}
}

func (t *Tracer) warnOnce(key, format string, args ...any) {
	if t.warned[key] || t.cfg.Verbose < 0 {
		return
	}
	t.warned[key] = true
	fmt.Fprintf(t.cfg.Log, "droidroot: "+format+"\n", args...)
}

// warnf prints a diagnostic every time.
func (t *Tracer) warnf(format string, args ...any) {
	fmt.Fprintf(t.cfg.Log, "droidroot: "+format+"\n", args...)
}

// checkTracerThread makes the methods that must run on Run's OS thread
// panic when called on another: on in tests, off in droidroot (a gettid
// per call for a rule that code review and tests keep).
var checkTracerThread = false

// onTracerThread panics, when checkTracerThread is set, if the calling OS
// thread is not the one Run locked.
func (t *Tracer) onTracerThread(method string) {
	if checkTracerThread && t.osThread != 0 && unix.Gettid() != t.osThread {
		panic("tracer: " + method + " called off the tracer's thread (tid " + strconv.Itoa(unix.Gettid()) + ", tracer " + strconv.Itoa(t.osThread) + ")")
	}
}

// Process returns the traced process with thread-group id pid, or nil.
// Call it on the tracer's thread.
func (t *Tracer) Process(pid int) *Process {
	t.onTracerThread("Process")
	if th := t.threads[pid]; th != nil {
		return th.Proc
	}
	return nil
}

// InLoader reports whether pc is in the image of the session's loader
// (its variant's address range).
func (t *Tracer) InLoader(pc uint64) bool { return pc >= t.loaderLo && pc < t.loaderHi }

// WarnOnce prints a diagnostic the first time key is seen.
func (t *Tracer) WarnOnce(key, format string, args ...any) { t.warnOnce(key, format, args...) }

// ThreadFS returns the filesystem context of traced thread tid, or nil.
// Call it on the tracer\'s thread.
func (t *Tracer) ThreadFS(tid int) *FS {
	t.onTracerThread("ThreadFS")
	if th := t.threads[tid]; th != nil {
		return th.FS
	}
	return nil
}
