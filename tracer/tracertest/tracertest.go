// Package tracertest runs syscall handlers against a real traced child, for
// unit tests of tracer and emul.
//
// A test describes a short sequence of syscalls (Steps); Run re-executes
// the test binary as a child that makes exactly those calls, traces it with
// a real tracer.Tracer (seccomp filter, ptrace, the production code paths)
// whose table is the one under test, and returns what the child saw (each
// call's result and the memory of its buffers), what the handlers left at
// each stop (registers at entry and after the handler, rewritten path
// arguments, the thread's guest cwd), and the child's exit status.
//
// The child is the test binary itself: the test package's TestMain must call
// Main. The Go runtime of the child makes syscalls of its own (some of them
// in the table), so the handlers under test only see the calls of the
// steps: every handler of the table is wrapped so that it runs only for
// the child's step thread between two marker calls (getpriority with a
// magic first argument) the child makes around each step. Other calls of
// the table stop as usual but pass untouched.
//
// Oracle runs the same steps without a tracer, chrooted into a real
// directory with real bind mounts (root only), so a test can compare a
// handler's answers with the kernel's.
package tracertest

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/ident"
	"github.com/droidroot/droidroot/loader"
	"github.com/droidroot/droidroot/pathmap"
	"github.com/droidroot/droidroot/seccomp"
	"github.com/droidroot/droidroot/tracer"
)

// Environment variables that make the test binary a child (see Main).
const (
	envSteps  = "DROIDROOT_TRACERTEST_STEPS"
	envOracle = "DROIDROOT_TRACERTEST_ORACLE"
	// envAndroid names the Android policy the child puts its step thread
	// under before the first step.
	envAndroid = "DROIDROOT_TRACERTEST_ANDROID"
)

// markerName is the syscall the child makes around each step; markerMagic
// is its first argument (getpriority's "which", invalid for the kernel).
const (
	markerName  = "getpriority"
	markerMagic = 0x74727474 // "ttrt"
)

// ArgKind says how the child makes one argument of a step.
type ArgKind int

const (
	// KindInt passes Val as is.
	KindInt ArgKind = iota
	// KindMem passes the address of a buffer the child allocates with
	// Data in it (zero-filled up to Size); its content after the call is
	// reported in StepResult.Mem.
	KindMem
	// KindRet passes the result of an earlier step (Val is its index).
	KindRet
	// KindStrv passes a NULL-terminated array of pointers to the
	// NUL-terminated strings Strs (an argv or envp).
	KindStrv
	// KindFprog passes a struct sock_fprog whose filter is a copy of
	// Data (8-byte struct sock_filter instructions).
	KindFprog
)

// Arg is one argument of a step's syscall.
type Arg struct {
	Kind ArgKind
	Val  uint64
	Data []byte
	Size int
	Strs []string
}

// Int is an integer argument (negative values are sign-extended, as
// AT_FDCWD must be).
func Int(v int64) Arg { return Arg{Kind: KindInt, Val: uint64(v)} }

// Str is a pointer to a NUL-terminated copy of s.
func Str(s string) Arg { return Arg{Kind: KindMem, Data: append([]byte(s), 0)} }

// In is a pointer to a copy of b (reported after the call).
func In(b []byte) Arg { return Arg{Kind: KindMem, Data: b} }

// Out is a pointer to n zero bytes (reported after the call).
func Out(n int) Arg { return Arg{Kind: KindMem, Size: n} }

// Strv is a pointer to a NULL-terminated array of strings (argv, envp).
func Strv(ss ...string) Arg { return Arg{Kind: KindStrv, Strs: ss} }

// Fprog is a pointer to a struct sock_fprog for the classic BPF program
// prog (struct sock_filter instructions, 8 bytes each): seccomp's filters.
func Fprog(prog []byte) Arg { return Arg{Kind: KindFprog, Data: prog} }

// Ret is the result of step k of the same run (k < the current step).
func Ret(k int) Arg { return Arg{Kind: KindRet, Val: uint64(k)} }

// Step is one syscall the child makes.
type Step struct {
	// Name is the syscall's name in the native ABI (see Has).
	Name string
	Args []Arg
}

// Call returns the step that makes syscall name with args.
func Call(name string, args ...Arg) Step { return Step{Name: name, Args: args} }

// Has reports whether syscall name exists on this architecture (open, stat,
// rename and others are missing on arm64).
func Has(name string) bool {
	_, ok := seccomp.NativeABI(runtime.GOARCH).Nr(name)
	return ok
}

// StepResult is what the child saw of one step.
type StepResult struct {
	// Ret is the call's result, or minus its errno.
	Ret int64
	// Mem holds the content, after the call, of each buffer argument, by
	// argument index.
	Mem map[int][]byte
}

// Errno is the step's error (0 for success).
func (r StepResult) Errno() unix.Errno {
	if r.Ret < 0 && r.Ret > -4096 {
		return unix.Errno(-r.Ret)
	}
	return 0
}

// CString returns buffer argument i up to its first NUL.
func (r StepResult) CString(i int) string {
	b := r.Mem[i]
	if n := bytes.IndexByte(b, 0); n >= 0 {
		b = b[:n]
	}
	return string(b)
}

// Stop is one stop of a step's call as a handler left it.
type Stop struct {
	// Step is the index of the step the call belongs to.
	Step int
	// Name is the syscall the handler is registered for.
	Name string
	// Exit is set for the syscall-exit stop (Handler.Exit).
	Exit bool
	// Now is set for an Exit the handler ran at entry (Call.ExitNow): no
	// stop of its own.
	Now bool
	// Entry holds the registers at the call's entry; Regs those the
	// handler left (they are what the thread continues with).
	Entry, Regs tracer.Regs
	// Answered is set when the handler answered the call at entry
	// (Call.Return): the kernel does not run it.
	Answered bool
	// Paths holds, at entry, the NUL-terminated strings the argument
	// registers the handler changed point to (the translated host paths),
	// by argument index; a changed register that does not point to
	// readable memory is left out.
	Paths map[int]string
	// Cwd is the thread's guest cwd after the handler.
	Cwd string
	// Pid and Tid identify the calling thread.
	Pid, Tid int
}

// Options is the setting of a Run.
type Options struct {
	// Table holds the handlers under test. It must not trace the marker
	// syscall (getpriority).
	Table tracer.Table
	// State is the table's per-run state (tracer.Config.State: emul's
	// Emulation, which -l, -q and -k need).
	State any
	// Mapper translates paths; nil is the identity mapping of "/".
	Mapper *pathmap.Mapper
	// Cwd is the child's initial guest cwd ("" is "/"); CwdHost its host
	// directory ("": Cwd resolved by the Mapper).
	Cwd, CwdHost string
	// Creds are the emulated credentials (tracer.Config.Creds).
	Creds *ident.Creds
	// Observe, when set, runs after each handler of a step's call, on the
	// tracer's thread, with the call (to read guest memory) and the Stop
	// recorded for it (which it may change, e.g. to keep more of the
	// call's memory in its Paths).
	Observe func(c *tracer.Call, s *Stop)
	// Android, when set, is the simulated Android app policy: the child
	// puts its step thread under that policy's filter before the first
	// step (as droidroot --android-policy puts itself), and the tracer
	// answers the calls it blocks at their SIGSYS stops
	// (tracer.Config.Android). A device policy cannot be simulated.
	Android *seccomp.AndroidPolicy
	// NoSeccomp is tracer.Config.NoSeccomp: every syscall stops twice
	// (ptrace-only mode, PROOT_NO_SECCOMP).
	NoSeccomp bool
	// YamaFile is tracer.Config.YamaFile: where the guest ptrace
	// emulation reads Yama's ptrace_scope ("": the kernel's).
	YamaFile string
	// Env is added to the child's environment.
	Env []string
	// Verbose is the tracer's log level (logged to the test on failure).
	Verbose int
	// Timeout bounds the run (0: 60 s); the child is killed after it.
	Timeout time.Duration
}

// Result is the outcome of a Run.
type Result struct {
	// Steps holds the child's view of each step, in order; it is shorter
	// than the steps when the child did not get that far.
	Steps []StepResult
	// Stops holds, in order, every stop of the steps' calls that a handler
	// of the table ran at.
	Stops []Stop
	// Status is the exit status tracer.Run returned (that of the child:
	// 0 when it made every step and reported them).
	Status int
	// Stderr is what the child wrote to its stderr; Log the tracer's log.
	Stderr, Log string
}

// StopsOf returns the stops of step k.
func (r *Result) StopsOf(k int) []Stop {
	var out []Stop
	for _, s := range r.Stops {
		if s.Step == k {
			out = append(out, s)
		}
	}
	return out
}

// EntryOf returns the entry stop of step k, if a handler ran there.
func (r *Result) EntryOf(k int) (Stop, bool) {
	for _, s := range r.Stops {
		if s.Step == k && !s.Exit {
			return s, true
		}
	}
	return Stop{}, false
}

// runMu serializes runs: a tracer waits for any child of the process.
var runMu sync.Mutex

// loaderOnce extracts the loader, which serves as the tracer's stage 2.
var (
	loaderOnce sync.Once
	loaderPath string
	loaderErr  error
)

// Loader returns the host path of droidroot's loader for this architecture
// (extracted once into the temporary directory), which Run uses as stage 2
// and as the tracer's Config.Loader.
func Loader() (string, error) {
	loaderOnce.Do(func() {
		loaderPath, loaderErr = loader.Extract(os.TempDir(), runtime.GOARCH, 0)
	})
	return loaderPath, loaderErr
}

// wireStep is a step as the child receives it.
type wireStep struct {
	Nr   int
	Args []Arg
}

// encodeSteps resolves the steps' names and encodes them for the child.
func encodeSteps(steps []Step) (string, error) {
	abi := seccomp.NativeABI(runtime.GOARCH)
	w := make([]wireStep, len(steps))
	for k, s := range steps {
		nr, ok := abi.Nr(s.Name)
		if !ok {
			return "", fmt.Errorf("step %d: no syscall %q on %s", k, s.Name, runtime.GOARCH)
		}
		if len(s.Args) > 6 {
			return "", fmt.Errorf("step %d: %d arguments", k, len(s.Args))
		}
		for i, a := range s.Args {
			if a.Kind == KindRet && int(a.Val) >= k {
				return "", fmt.Errorf("step %d: argument %d is the result of step %d, not an earlier one", k, i, a.Val)
			}
		}
		w[k] = wireStep{Nr: nr, Args: s.Args}
	}
	b, err := json.Marshal(w)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// recorder is the wrapped table's view of the child's step thread.
type recorder struct {
	tid   int // the step thread, once it made a marker call
	pid   int // its process
	step  int // the step in progress, -1 between steps
	stops []Stop
	obs   func(*tracer.Call, *Stop)
}

// armed reports whether the call is a step's.
func (r *recorder) armed(c *tracer.Call) bool { return r.step >= 0 && c.Tid() == r.tid }

func (r *recorder) record(c *tracer.Call, name string, exit bool) {
	s := Stop{Step: r.step, Name: name, Exit: exit, Now: exit && c.ExitedNow(), Entry: c.Entry, Regs: c.Regs,
		Answered: !exit && c.Answered(), Pid: c.Pid(), Tid: c.Tid()}
	if fs := c.FS(); fs != nil {
		s.Cwd = fs.Cwd
	}
	if !exit {
		for i := 0; i < 6; i++ {
			if v := c.Regs.Arg(i); v != c.Entry.Arg(i) && v > 4096 {
				if p, err := c.ReadPath(v); err == nil {
					if s.Paths == nil {
						s.Paths = map[int]string{}
					}
					s.Paths[i] = p
				}
			}
		}
	}
	if r.obs != nil {
		r.obs(c, &s)
	}
	r.stops = append(r.stops, s)
}

// wrap returns table with every handler run only for the step thread, and
// the marker handler added.
func (r *recorder) wrap(table tracer.Table) (tracer.Table, error) {
	if _, ok := table[markerName]; ok {
		return nil, fmt.Errorf("the table traces %s, tracertest's marker", markerName)
	}
	out := make(tracer.Table, len(table)+1)
	for name, h := range table {
		name, h := name, h
		w := h
		w.Enter = func(c *tracer.Call) {
			if !r.armed(c) {
				if h.Exit != nil {
					c.NoExit()
				}
				return
			}
			if h.Enter != nil {
				h.Enter(c)
			}
			r.record(c, name, false)
		}
		if h.Exit != nil {
			w.Exit = func(c *tracer.Call) {
				h.Exit(c)
				r.record(c, name, true)
			}
		}
		out[name] = w
	}
	out[markerName] = tracer.Handler{
		Enter: func(c *tracer.Call) {
			if c.Arg(0) != markerMagic {
				return
			}
			r.tid, r.pid = c.Tid(), c.Pid()
			r.step = int(int64(c.Arg(1))) - 1
			c.Return(0)
		},
		// A step that execs ends the step: the new program's calls are
		// not the handlers' to see until it makes markers of its own.
		Events: func(e *tracer.Event) {
			if e.Kind == tracer.EventExec && e.Pid == r.pid {
				r.step = -1
			}
		},
	}
	return out, nil
}

// Run makes the child execute steps under a tracer with o's table and
// returns what happened. It skips the test when this system cannot trace
// (no ptrace or seccomp), and fails it when the child did not report.
func Run(t testing.TB, o Options, steps ...Step) *Result {
	t.Helper()
	res, err := run(t, o, steps)
	if errors.Is(err, tracer.ErrPtrace) || errors.Is(err, errNoSeccomp) {
		t.Skipf("tracertest: cannot trace here: %v", err)
	}
	if err != nil {
		t.Fatalf("tracertest: %v", err)
	}
	return res
}

// Try is Run for a child that is expected not to report (killed, or
// failing before its last step): it returns the error instead of failing
// the test, with what is known (the Result is never nil).
func Try(t testing.TB, o Options, steps ...Step) (*Result, error) {
	t.Helper()
	res, err := run(t, o, steps)
	if errors.Is(err, tracer.ErrPtrace) || errors.Is(err, errNoSeccomp) {
		t.Skipf("tracertest: cannot trace here: %v", err)
	}
	if res == nil {
		res = &Result{}
	}
	return res, err
}

var errNoSeccomp = errors.New("this kernel has no seccomp filters")

func run(t testing.TB, o Options, steps []Step) (*Result, error) {
	if !seccomp.Available() {
		return nil, errNoSeccomp
	}
	spec, err := encodeSteps(steps)
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	ldr, err := Loader()
	if err != nil {
		return nil, err
	}
	m := o.Mapper
	if m == nil {
		if m, err = pathmap.New("/", nil, nil); err != nil {
			return nil, err
		}
		defer m.Close()
	}
	cwd := o.Cwd
	if cwd == "" {
		cwd = "/"
	}
	cwdHost := o.CwdHost
	if cwdHost == "" {
		if cwdHost, err = m.Resolve(pathmap.Proc{Pid: os.Getpid(), Tid: os.Getpid()}, "/", cwd, true); err != nil {
			return nil, fmt.Errorf("cwd %s: %w", cwd, err)
		}
	}
	rec := &recorder{step: -1, obs: o.Observe}
	table, err := rec.wrap(o.Table)
	if err != nil {
		return nil, err
	}
	dir := t.TempDir()
	stdout, err := os.Create(filepath.Join(dir, "stdout"))
	if err != nil {
		return nil, err
	}
	defer stdout.Close()
	stderr, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		return nil, err
	}
	defer stderr.Close()
	var log bytes.Buffer
	// asyncpreemptoff: the Go runtime's preemption signal (SIGURG, with a
	// handler) would interrupt a step's call that a handler parks or
	// restarts (TestCallPark failed 7 times in 300 in the arm64 VM).
	env := append([]string{envSteps + "=" + spec, "GOMAXPROCS=1", "GODEBUG=asyncpreemptoff=1"}, o.Env...)
	if o.Android != nil {
		if o.Android.Device() {
			return nil, errors.New("the device's Android policy cannot be simulated")
		}
		env = append(env, envAndroid+"="+o.Android.Version)
	}
	tr, err := tracer.New(tracer.Config{
		Mapper:    m,
		Cwd:       cwd,
		CwdHost:   cwdHost,
		Path:      self,
		Argv:      []string{self},
		Env:       env,
		Loader:    ldr,
		Stage2:    ldr,
		Table:     table,
		State:     o.State,
		Creds:     o.Creds,
		Android:   o.Android,
		NoSeccomp: o.NoSeccomp,
		YamaFile:  o.YamaFile,
		Verbose:   o.Verbose,
		Log:       &log,
		Stdout:    stdout,
		Stderr:    stderr,
	})
	if err != nil {
		return nil, err
	}
	timeout := o.Timeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}

	runMu.Lock()
	defer runMu.Unlock()
	type outcome struct {
		status int
		err    error
	}
	done := make(chan outcome, 1)
	// Run locks its OS thread for good: give it a goroutine of its own.
	go func() {
		st, err := tr.Run()
		done <- outcome{st, err}
	}()
	var out outcome
	select {
	case out = <-done:
	case <-time.After(timeout):
		killChildren()
		out = <-done
		if out.err == nil {
			out.err = fmt.Errorf("timed out after %v (the child was killed)", timeout)
		}
	}
	res := &Result{Stops: rec.stops, Status: out.status, Log: log.String()}
	if b, err := os.ReadFile(stderr.Name()); err == nil {
		res.Stderr = string(b)
	}
	if out.err != nil {
		return res, out.err
	}
	b, err := os.ReadFile(stdout.Name())
	if err != nil {
		return res, err
	}
	if err := json.Unmarshal(b, &res.Steps); err != nil || len(res.Steps) != len(steps) {
		return res, fmt.Errorf("the child reported no result (status %d, %v)\nstdout: %q\nstderr: %s\ntracer log: %s", out.status, err, b, res.Stderr, res.Log)
	}
	return res, nil
}

// killChildren kills every child process of this process (a run that
// timed out).
func killChildren() {
	tasks, _ := os.ReadDir("/proc/self/task")
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				unix.Kill(pid, unix.SIGKILL)
			}
		}
	}
}

// ChildEnv returns the environment entry that makes the test binary, when
// a step execs it, a child that makes steps (and reports them, in place of
// the steps of the run, which Try then tells apart by their number).
func ChildEnv(steps ...Step) (string, error) {
	spec, err := encodeSteps(steps)
	if err != nil {
		return "", err
	}
	return envSteps + "=" + spec, nil
}

// Main is the TestMain of a package that uses Run or Oracle: in the
// re-executed child it makes the steps and exits; otherwise it runs the
// tests (m.Run) and exits with their status.
func Main(m *testing.M) {
	if spec := os.Getenv(envSteps); spec != "" {
		os.Exit(child(spec, os.Getenv(envOracle)))
	}
	os.Exit(m.Run())
}

// OracleOptions sets up the kernel's own view for Oracle.
type OracleOptions struct {
	// Root is the host directory the child chroots into.
	Root string
	// Binds are bind-mounted (host onto Root+guest, which must exist)
	// in a private mount namespace before the chroot.
	Binds []pathmap.Binding
	// Cwd is the guest directory the child starts in ("" is "/").
	Cwd string
}

// wireOracle is OracleOptions as the child receives it.
type wireOracle struct {
	Root  string
	Binds []pathmap.Binding
	Cwd   string
}

// Oracle makes the child execute steps untraced, in a mount namespace of
// its own with o's binds, chrooted into o.Root: the kernel's answers for
// the guest view a Mapper of the same root and binds emulates. It needs
// root (the test is skipped otherwise).
func Oracle(t testing.TB, o OracleOptions, steps ...Step) []StepResult {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("tracertest: the kernel oracle needs root (chroot, mount namespace)")
	}
	spec, err := encodeSteps(steps)
	if err != nil {
		t.Fatalf("tracertest: %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatalf("tracertest: %v", err)
	}
	cwd := o.Cwd
	if cwd == "" {
		cwd = "/"
	}
	ob, err := json.Marshal(wireOracle{Root: o.Root, Binds: o.Binds, Cwd: cwd})
	if err != nil {
		t.Fatalf("tracertest: %v", err)
	}
	runMu.Lock()
	defer runMu.Unlock()
	cmd := exec.Command(self)
	cmd.Env = []string{envSteps + "=" + spec, envOracle + "=" + string(ob), "GOMAXPROCS=1", "GODEBUG=asyncpreemptoff=1"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: unix.CLONE_NEWNS}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	var res []StepResult
	if err == nil {
		err = json.Unmarshal(b, &res)
	}
	if err != nil || len(res) != len(steps) {
		if strings.Contains(stderr.String(), "operation not permitted") {
			t.Skipf("tracertest: oracle: %s", stderr.String())
		}
		t.Fatalf("tracertest: oracle: %v (%d results)\nstderr: %s", err, len(res), stderr.String())
	}
	return res
}
