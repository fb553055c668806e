package tracer_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/ident"
	"github.com/droidroot/droidroot/seccomp"
	"github.com/droidroot/droidroot/tracer"
	tt "github.com/droidroot/droidroot/tracer/tracertest"
)

func TestMain(m *testing.M) { tt.Main(m) }

// nr returns the native number of syscall name.
func nr(t *testing.T, name string) int {
	t.Helper()
	n, ok := seccomp.NativeABI(runtime.GOARCH).Nr(name)
	if !ok {
		t.Fatalf("no syscall %s on %s", name, runtime.GOARCH)
	}
	return n
}

// TestCallReturn: a handler's answer at entry is what the guest sees and
// the kernel does not run the call.
func TestCallReturn(t *testing.T) {
	cases := []struct {
		name   string
		answer func(c *tracer.Call)
		want   int64
	}{
		{"return", func(c *tracer.Call) { c.Return(42) }, 42},
		{"negative", func(c *tracer.Call) { c.Return(-int64(unix.EACCES)) }, -int64(unix.EACCES)},
		{"fail", func(c *tracer.Call) { c.Fail(unix.ENOTDIR) }, -int64(unix.ENOTDIR)},
		{"fail0", func(c *tracer.Call) { c.Fail0(0) }, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tab := tracer.Table{"getppid": {Enter: tc.answer}}
			r := tt.Run(t, tt.Options{Table: tab}, tt.Call("getppid"), tt.Call("getppid"))
			for k := range r.Steps {
				if r.Steps[k].Ret != tc.want {
					t.Errorf("step %d: getppid = %d, want %d", k, r.Steps[k].Ret, tc.want)
				}
				s, ok := r.EntryOf(k)
				if !ok || !s.Answered || s.Regs.Ret() != tc.want {
					t.Errorf("step %d: stop %+v: want an answered entry with result %d", k, s, tc.want)
				}
			}
			if r.Status != 0 {
				t.Errorf("exit status %d", r.Status)
			}
		})
	}
}

// TestCallUntouched: a handler that changes nothing lets the kernel run
// the call (getppid is this process, the child's parent).
func TestCallUntouched(t *testing.T) {
	ran := 0
	tab := tracer.Table{"getppid": {Enter: func(c *tracer.Call) { ran++ }}}
	r := tt.Run(t, tt.Options{Table: tab}, tt.Call("getppid"))
	if got := r.Steps[0].Ret; got != int64(os.Getpid()) {
		t.Errorf("getppid = %d, want %d", got, os.Getpid())
	}
	if ran != 1 {
		t.Errorf("the handler ran %d times for the step, want 1 (the Go runtime's own calls must not reach it)", ran)
	}
	s, ok := r.EntryOf(0)
	if !ok || s.Answered || s.Regs != s.Entry {
		t.Errorf("stop %+v: want untouched registers", s)
	}
}

// TestCallSetArgPush: a path argument rewritten to a string pushed below
// the stack is what the kernel sees; the guest's buffer is untouched.
func TestCallSetArgPush(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.WriteFile(real, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tab := tracer.Table{"faccessat": {Enter: func(c *tracer.Call) {
		p, err := c.ReadPath(c.Arg(1))
		if err != nil || p != "/nonexistent/redirect-me" {
			return
		}
		addr, err := c.PushString(real)
		if err != nil {
			c.Fail(unix.EIO)
			return
		}
		c.SetArg(1, addr)
	}}}
	r := tt.Run(t, tt.Options{Table: tab},
		tt.Call("faccessat", tt.Int(unix.AT_FDCWD), tt.Str("/nonexistent/redirect-me"), tt.Int(unix.F_OK), tt.Int(0)),
		tt.Call("faccessat", tt.Int(unix.AT_FDCWD), tt.Str("/nonexistent/other"), tt.Int(unix.F_OK), tt.Int(0)))
	if r.Steps[0].Ret != 0 {
		t.Errorf("faccessat of the redirected path = %d, want 0", r.Steps[0].Ret)
	}
	if r.Steps[1].Errno() != unix.ENOENT {
		t.Errorf("faccessat of a missing path = %d, want ENOENT", r.Steps[1].Ret)
	}
	if got := r.Steps[0].CString(1); got != "/nonexistent/redirect-me" {
		t.Errorf("the guest's path buffer reads %q after the call", got)
	}
	s, _ := r.EntryOf(0)
	if s.Paths[1] != real {
		t.Errorf("rewritten path %q, want %q", s.Paths[1], real)
	}
	if a := s.Regs.Arg(1); a >= s.Entry.SP()-tracer.RedZone || a < s.Entry.SP()-tracer.RedZone-4096 {
		t.Errorf("pushed string at %#x, want just below sp %#x - red zone", a, s.Entry.SP())
	}
}

// TestCallPushStrings: several strings pushed at once each read back.
func TestCallPushStrings(t *testing.T) {
	var got []string
	tab := tracer.Table{"getppid": {Enter: func(c *tracer.Call) {
		addrs, err := c.PushStrings("a", "", "ccc")
		if err != nil {
			c.Fail(unix.EIO)
			return
		}
		for _, a := range addrs {
			s, err := c.ReadPath(a)
			if err != nil {
				c.Fail(unix.EIO)
				return
			}
			got = append(got, s)
		}
		c.Return(int64(len(addrs)))
	}}}
	r := tt.Run(t, tt.Options{Table: tab}, tt.Call("getppid"))
	if r.Steps[0].Ret != 3 || strings.Join(got, ",") != "a,,ccc" {
		t.Errorf("PushStrings read back %q (ret %d), want a,,ccc", got, r.Steps[0].Ret)
	}
}

// TestCallReadPath: the kernel's limits for a path argument.
func TestCallReadPath(t *testing.T) {
	answer := func(c *tracer.Call) {
		p, err := c.ReadPath(c.Arg(1))
		if err != nil {
			c.Fail(err.(unix.Errno))
			return
		}
		c.Return(int64(len(p)))
	}
	long := strings.Repeat("x", tracer.PathMax+10)
	cases := []struct {
		name string
		arg  tt.Arg
		want int64
	}{
		{"short", tt.Str("abc"), 3},
		{"empty", tt.Str(""), 0},
		{"max", tt.Str(strings.Repeat("y", tracer.PathMax-1)), tracer.PathMax - 1},
		{"too long", tt.Str(long), -int64(unix.ENAMETOOLONG)},
		{"null", tt.Int(0), -int64(unix.EFAULT)},
		{"bad pointer", tt.Int(8), -int64(unix.EFAULT)},
	}
	var steps []tt.Step
	for _, tc := range cases {
		steps = append(steps, tt.Call("faccessat", tt.Int(unix.AT_FDCWD), tc.arg, tt.Int(0), tt.Int(0)))
	}
	r := tt.Run(t, tt.Options{Table: tracer.Table{"faccessat": {Enter: answer}}}, steps...)
	for k, tc := range cases {
		if r.Steps[k].Ret != tc.want {
			t.Errorf("%s: ReadPath answer %d, want %d", tc.name, r.Steps[k].Ret, tc.want)
		}
	}
}

// TestCallPrefetchPaths: two path arguments read with one call read as
// ReadPath reads them one by one.
func TestCallPrefetchPaths(t *testing.T) {
	answer := func(c *tracer.Call) {
		c.PrefetchPaths(c.Arg(1), c.Arg(3))
		a, err := c.ReadPath(c.Arg(1))
		if err != nil {
			c.Fail(err.(unix.Errno))
			return
		}
		b, err := c.ReadPath(c.Arg(3))
		if err != nil {
			c.Fail(err.(unix.Errno))
			return
		}
		c.Return(int64(len(a)*10000 + len(b)))
	}
	r := tt.Run(t, tt.Options{Table: tracer.Table{"renameat2": {Enter: answer}}},
		tt.Call("renameat2", tt.Int(unix.AT_FDCWD), tt.Str("abcd"), tt.Int(unix.AT_FDCWD), tt.Str("xy"), tt.Int(0)),
		tt.Call("renameat2", tt.Int(unix.AT_FDCWD), tt.Str(strings.Repeat("p", 5000)), tt.Int(unix.AT_FDCWD), tt.Str("xy"), tt.Int(0)),
		tt.Call("renameat2", tt.Int(unix.AT_FDCWD), tt.Str("same"), tt.Int(unix.AT_FDCWD), tt.Int(0), tt.Int(0)))
	want := []int64{40002, -int64(unix.ENAMETOOLONG), -int64(unix.EFAULT)}
	for k, w := range want {
		if r.Steps[k].Ret != w {
			t.Errorf("step %d: %d, want %d", k, r.Steps[k].Ret, w)
		}
	}
}

// TestCallMem: ReadMem and WriteMem reach the guest's buffers.
func TestCallMem(t *testing.T) {
	tab := tracer.Table{
		// getcwd answered from the tracer: the guest's buffer gets it.
		"getcwd": {Enter: func(c *tracer.Call) {
			if err := c.WriteMem(c.Arg(0), []byte("/fake\x00")); err != nil {
				c.Fail(unix.EFAULT)
				return
			}
			c.Return(6)
		}},
		// getrandom answered with the sum of the buffer's bytes.
		"getrandom": {Enter: func(c *tracer.Call) {
			b := make([]byte, c.Arg(1))
			if err := c.ReadMem(c.Arg(0), b); err != nil {
				c.Fail(unix.EFAULT)
				return
			}
			sum := int64(0)
			for _, x := range b {
				sum += int64(x)
			}
			c.Return(sum)
		}},
	}
	r := tt.Run(t, tt.Options{Table: tab},
		tt.Call("getcwd", tt.Out(64), tt.Int(64)),
		tt.Call("getrandom", tt.In([]byte{1, 2, 3, 250}), tt.Int(4), tt.Int(0)),
		tt.Call("getcwd", tt.Int(16), tt.Int(64)),
		tt.Call("getrandom", tt.Int(16), tt.Int(4), tt.Int(0)))
	if r.Steps[0].Ret != 6 || r.Steps[0].CString(0) != "/fake" {
		t.Errorf("getcwd = %d %q, want 6 /fake", r.Steps[0].Ret, r.Steps[0].CString(0))
	}
	if r.Steps[1].Ret != 256 {
		t.Errorf("getrandom = %d, want 256", r.Steps[1].Ret)
	}
	for k := 2; k < 4; k++ {
		if r.Steps[k].Errno() != unix.EFAULT {
			t.Errorf("step %d: bad address: %d, want EFAULT", k, r.Steps[k].Ret)
		}
	}
}

// TestCallStageMem: a result staged at entry (StageMem) and patched by
// the Exit that ExitNow runs at once reaches guest memory in one write,
// patches included, in one stop; a read reaching past it sees it written;
// a bad buffer answers EFAULT.
func TestCallStageMem(t *testing.T) {
	tab := tracer.Table{"getcwd": {
		Enter: func(c *tracer.Call) {
			c.StageMem(c.Arg(0), []byte("/fake/dir\x00"))
			c.Return(10)
			c.ExitNow()
		},
		Exit: func(c *tracer.Call) {
			if c.Arg(1) == 64 {
				b := make([]byte, 4)
				if err := c.ReadMem(c.Arg(0)+1, b); err != nil || string(b) != "fake" {
					c.Fail(unix.EIO)
					return
				}
				if err := c.WriteMem(c.Arg(0)+1, []byte("real")); err != nil {
					c.Fail(unix.EIO)
				}
				return
			}
			// A read past the staged bytes: they are in guest memory first.
			b := make([]byte, 12)
			if err := c.ReadMem(c.Arg(0), b); err != nil || string(b[:10]) != "/fake/dir\x00" {
				c.Fail(unix.EIO)
			}
		},
	}}
	r := tt.Run(t, tt.Options{Table: tab},
		tt.Call("getcwd", tt.Out(64), tt.Int(64)),
		tt.Call("getcwd", tt.Out(64), tt.Int(63)),
		tt.Call("getcwd", tt.Int(16), tt.Int(64)))
	if r.Steps[0].Ret != 10 || r.Steps[0].CString(0) != "/real/dir" {
		t.Errorf("patched: getcwd = %d %q, want 10 /real/dir", r.Steps[0].Ret, r.Steps[0].CString(0))
	}
	if st := r.StopsOf(0); len(st) != 2 || !st[0].Answered || !st[1].Now {
		t.Errorf("patched: stops %+v, want the entry answered and its Exit run then", st)
	}
	if r.Steps[1].Ret != 10 || r.Steps[1].CString(0) != "/fake/dir" {
		t.Errorf("read past it: getcwd = %d %q, want 10 /fake/dir", r.Steps[1].Ret, r.Steps[1].CString(0))
	}
	if r.Steps[2].Errno() != unix.EFAULT {
		t.Errorf("bad buffer: getcwd = %d, want EFAULT", r.Steps[2].Ret)
	}
}

// TestCallExit: the Exit handler sees the kernel's result and the Data of
// its Enter; NoExit cancels it.
func TestCallExit(t *testing.T) {
	exits := 0
	tab := tracer.Table{"getppid": {
		Enter: func(c *tracer.Call) {
			if c.Arg(0) == 7 {
				c.NoExit()
			}
			c.Data = int64(5)
		},
		Exit: func(c *tracer.Call) {
			exits++
			c.Return(c.Ret() + c.Data.(int64))
		},
	}}
	r := tt.Run(t, tt.Options{Table: tab}, tt.Call("getppid"), tt.Call("getppid", tt.Int(7)))
	if got, want := r.Steps[0].Ret, int64(os.Getpid()+5); got != want {
		t.Errorf("getppid with Exit = %d, want %d", got, want)
	}
	if got, want := r.Steps[1].Ret, int64(os.Getpid()); got != want {
		t.Errorf("getppid with NoExit = %d, want %d", got, want)
	}
	if exits != 1 {
		t.Errorf("Exit ran %d times, want 1", exits)
	}
	st := r.StopsOf(0)
	if len(st) != 2 || !st[1].Exit || st[1].Regs.Ret() != int64(os.Getpid()+5) {
		t.Errorf("stops of step 0: %+v, want entry and exit", st)
	}
}

// TestCallSetNr: the kernel runs the call the handler switched to.
func TestCallSetNr(t *testing.T) {
	getpid := nr(t, "getpid")
	tab := tracer.Table{"getppid": {Enter: func(c *tracer.Call) { c.SetNr(getpid) }}}
	r := tt.Run(t, tt.Options{Table: tab}, tt.Call("getppid"))
	s, _ := r.EntryOf(0)
	if r.Steps[0].Ret != int64(s.Pid) || s.Pid == os.Getpid() {
		t.Errorf("getppid as getpid = %d, want the child's pid %d", r.Steps[0].Ret, s.Pid)
	}
	if s.Regs.Nr() != getpid || s.Entry.Nr() != nr(t, "getppid") {
		t.Errorf("registers: entry nr %d, left %d", s.Entry.Nr(), s.Regs.Nr())
	}
}

// TestCallRestart: Restart at a seccomp stop runs the new call through the
// filters again; AfterRestart sees its result.
func TestCallRestart(t *testing.T) {
	getpid := nr(t, "getpid")
	tab := tracer.Table{"getppid": {Enter: func(c *tracer.Call) {
		c.Restart(getpid)
		if c.Arg(0) == 1 {
			c.AfterRestart(func(c *tracer.Call) { c.Return(c.Ret() * 2) })
		}
	}}}
	r := tt.Run(t, tt.Options{Table: tab}, tt.Call("getppid"), tt.Call("getppid", tt.Int(1)))
	s, _ := r.EntryOf(0)
	if r.Steps[0].Ret != int64(s.Pid) {
		t.Errorf("getppid restarted as getpid = %d, want %d", r.Steps[0].Ret, s.Pid)
	}
	if r.Steps[1].Ret != 2*int64(s.Pid) {
		t.Errorf("with AfterRestart = %d, want %d", r.Steps[1].Ret, 2*s.Pid)
	}
}

// TestCallRun: injected syscalls run in the thread, their results reach
// the continuation, and the call's answer is the continuation's.
func TestCallRun(t *testing.T) {
	getpid, getppid := nr(t, "getpid"), nr(t, "getppid")
	tab := tracer.Table{
		"getppid": {Enter: func(c *tracer.Call) {
			c.Run(getpid, [6]uint64{}, func(c *tracer.Call, pid int64) {
				c.Run(getppid, [6]uint64{}, func(c *tracer.Call, ppid int64) {
					c.Return(pid*1000000 + ppid)
				})
			})
		}},
		// A continuation that neither answers nor runs: ENOSYS.
		"getpgid": {Enter: func(c *tracer.Call) {
			c.Run(getpid, [6]uint64{}, func(c *tracer.Call, ret int64) {})
		}},
	}
	r := tt.Run(t, tt.Options{Table: tab}, tt.Call("getppid", tt.Int(11), tt.Int(12)), tt.Call("getpgid", tt.Int(0)))
	s, _ := r.EntryOf(0)
	if got, want := r.Steps[0].Ret, int64(s.Pid)*1000000+int64(os.Getpid()); got != want {
		t.Errorf("injected getpid, getppid: %d, want %d", got, want)
	}
	if r.Steps[1].Errno() != unix.ENOSYS {
		t.Errorf("unanswered Run: %d, want ENOSYS", r.Steps[1].Ret)
	}
}

// TestCallPark: a parked call ends at its timeout with the end function's
// answer.
func TestCallPark(t *testing.T) {
	var ends []tracer.ParkEnd
	tab := tracer.Table{"getppid": {Enter: func(c *tracer.Call) {
		c.Park(&unix.Timespec{Nsec: 5e6}, func(e tracer.ParkEnd) int64 {
			ends = append(ends, e)
			return -int64(unix.ETIMEDOUT)
		})
	}}}
	r := tt.Run(t, tt.Options{Table: tab}, tt.Call("getppid"))
	if r.Steps[0].Errno() != unix.ETIMEDOUT || len(ends) != 1 || ends[0] != tracer.ParkTimeout {
		t.Errorf("parked call: %d, ends %v: want ETIMEDOUT after ParkTimeout", r.Steps[0].Ret, ends)
	}
}

// TestCallParkWake: a parked call woken by another call's handler gets
// the woken value.
func TestCallParkWake(t *testing.T) {
	// Wake runs on the tracer's thread, from the handler that parks the
	// call (before the thread sleeps): the ppoll is interrupted at once
	// and the call gets the woken value, not the 30 s timeout.
	var tr *tracer.Tracer
	tab := tracer.Table{"getppid": {Enter: func(c *tracer.Call) {
		tr = c.Tracer()
		tid := c.Tid()
		c.Park(&unix.Timespec{Sec: 30}, func(e tracer.ParkEnd) int64 { return -int64(unix.ETIMEDOUT) })
		tr.Wake(tid, 77)
	}}}
	r := tt.Run(t, tt.Options{Table: tab}, tt.Call("getppid"))
	if r.Steps[0].Ret != 77 {
		t.Errorf("woken call = %d, want 77", r.Steps[0].Ret)
	}
}

// TestCallCreds: a handler sees the run's emulated credentials.
func TestCallCreds(t *testing.T) {
	creds := ident.Real()
	creds.UID, creds.EUID = 1234, 1234
	tab := tracer.Table{"getuid": {Enter: func(c *tracer.Call) {
		if !c.CredsEmulated() {
			c.Fail(unix.EPERM)
			return
		}
		c.Return(int64(c.Creds().UID))
	}}}
	r := tt.Run(t, tt.Options{Table: tab, Creds: &creds}, tt.Call("getuid"))
	if r.Steps[0].Ret != 1234 {
		t.Errorf("getuid = %d, want 1234", r.Steps[0].Ret)
	}
	r = tt.Run(t, tt.Options{Table: tab}, tt.Call("getuid"))
	if r.Steps[0].Errno() != unix.EPERM {
		t.Errorf("getuid without emulated creds = %d, want EPERM from the handler", r.Steps[0].Ret)
	}
}

// TestTracerState: what a handler can ask the tracer about the caller.
func TestTracerState(t *testing.T) {
	var got struct {
		proc    bool
		fs      bool
		creds   bool
		traced  bool
		threads int
		listed  bool
		cwd     string
	}
	tab := tracer.Table{"getppid": {Enter: func(c *tracer.Call) {
		tr := c.Tracer()
		got.proc = tr.Process(c.Pid()) == c.Proc() && c.Proc().Pid == c.Pid()
		got.fs = tr.ThreadFS(c.Tid()) == c.FS()
		got.creds = tr.ThreadCreds(c.Tid()) == c.Creds()
		got.traced = tr.Traced(c.Tid()) && !tr.Traced(-5) && tr.Process(-5) == nil && tr.ThreadFS(-5) == nil && tr.ThreadCreds(-5) == nil
		got.threads = tr.NumThreads()
		tr.Threads(func(tid, pid int) { got.listed = got.listed || tid == c.Tid() && pid == c.Pid() })
		got.cwd = c.FS().Cwd
		c.Return(int64(c.Nr()))
	}}}
	r := tt.Run(t, tt.Options{Table: tab, Cwd: "/tmp"}, tt.Call("getppid"))
	if r.Steps[0].Ret != int64(nr(t, "getppid")) {
		t.Errorf("Nr = %d", r.Steps[0].Ret)
	}
	if !got.proc || !got.fs || !got.creds || !got.traced || !got.listed || got.threads < 1 || got.cwd != "/tmp" {
		t.Errorf("tracer state seen by the handler: %+v", got)
	}
}

// TestEvents: the Events hook of a table sees the child's exec and exit.
func TestEvents(t *testing.T) {
	for _, exiting := range []bool{false, true} {
		kinds := map[tracer.EventKind]int{}
		tab := tracer.Table{"getppid": {
			Enter:         func(c *tracer.Call) {},
			Events:        func(e *tracer.Event) { kinds[e.Kind]++ },
			ExitingEvents: exiting,
		}}
		tt.Run(t, tt.Options{Table: tab}, tt.Call("getppid"))
		// The exec of stage 2 itself is seen too when PTRACE_SEIZE lands
		// after exec closed stage 2's close-on-exec pipe (ForkExec has
		// returned) but before its PTRACE_EVENT_EXEC (about 1 run in 20).
		if n := kinds[tracer.EventExec]; n < 1 || n > 2 || kinds[tracer.EventProcessGone] != 1 || kinds[tracer.EventThreadGone] < 1 || kinds[tracer.EventFork] < 1 {
			t.Errorf("ExitingEvents %v: events %v: want the child's exec (and maybe stage 2's), one process gone, the Go runtime's threads", exiting, kinds)
		}
		if exiting && kinds[tracer.EventExiting] < 1 || !exiting && kinds[tracer.EventExiting] != 0 {
			t.Errorf("ExitingEvents %v: %d EventExiting", exiting, kinds[tracer.EventExiting])
		}
	}
}

// TestNoSeccomp: the same handlers in ptrace-only mode.
func TestNoSeccomp(t *testing.T) {
	tab := tracer.Table{"getppid": {
		Enter: func(c *tracer.Call) {
			if c.Arg(0) == 1 {
				c.Return(42)
			}
		},
		Exit: func(c *tracer.Call) { c.Return(c.Ret() + 1) },
	}}
	r := tt.Run(t, tt.Options{Table: tab, NoSeccomp: true}, tt.Call("getppid", tt.Int(1)), tt.Call("getppid"))
	if r.Steps[0].Ret != 42 {
		t.Errorf("answered getppid = %d, want 42", r.Steps[0].Ret)
	}
	if r.Steps[1].Ret != int64(os.Getpid()+1) {
		t.Errorf("getppid with Exit = %d, want %d", r.Steps[1].Ret, os.Getpid()+1)
	}
}

// TestAndroidSigsys: a call the Android policy blocks reaches its handler
// at the SIGSYS stop: answered, rewritten (SetNr, with an Exit), or ENOSYS.
func TestAndroidSigsys(t *testing.T) {
	pol, err := seccomp.LoadAndroidPolicy("16")
	if err != nil {
		t.Fatal(err)
	}
	faccessat := nr(t, "faccessat")
	dir := t.TempDir()
	tab := tracer.Table{
		"faccessat2": {
			Enter: func(c *tracer.Call) {
				if !c.AtSIGSYS() || c.Android() != pol {
					c.Fail(unix.EPROTO)
					return
				}
				switch c.Arg(3) {
				case 1: // answered
					c.Return(7)
				case 2: // rewritten
					c.SetArg(3, 0)
					c.SetNr(faccessat)
				case 3: // rewritten with KeepArgs: the guest keeps the 0
					c.SetArg(3, 0)
					c.KeepArgs()
					c.Return(8)
				}
			},
			Exit: func(c *tracer.Call) { c.Return(c.Ret() + 100) },
		},
	}
	step := func(flags int64) tt.Step {
		return tt.Call("faccessat2", tt.Int(unix.AT_FDCWD), tt.Str(dir), tt.Int(unix.F_OK), tt.Int(flags))
	}
	r := tt.Run(t, tt.Options{Table: tab, Android: pol}, step(1), step(2), step(0), step(3))
	want := []int64{7, 100, -int64(unix.ENOSYS), 8}
	for k, w := range want {
		if r.Steps[k].Ret != w {
			t.Errorf("step %d: faccessat2 = %d, want %d", k, r.Steps[k].Ret, w)
		}
	}
	for k := range want {
		if s, ok := r.EntryOf(k); !ok || s.Name != "faccessat2" {
			t.Errorf("step %d: no SIGSYS stop of faccessat2: %+v", k, r.StopsOf(k))
		}
	}
}

// TestAndroidUnhandled: a blocked call without a handler gets ENOSYS (the
// signal is suppressed).
func TestAndroidUnhandled(t *testing.T) {
	pol, err := seccomp.LoadAndroidPolicy("16")
	if err != nil {
		t.Fatal(err)
	}
	tab := tracer.Table{"getppid": {Enter: func(c *tracer.Call) {}}}
	r := tt.Run(t, tt.Options{Table: tab, Android: pol}, tt.Call("faccessat2", tt.Int(unix.AT_FDCWD), tt.Str("/"), tt.Int(0), tt.Int(0)))
	if r.Steps[0].Errno() != unix.ENOSYS || r.Status != 0 {
		t.Errorf("an unhandled blocked call: %d, status %d; want ENOSYS", r.Steps[0].Ret, r.Status)
	}
}
