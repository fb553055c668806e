package bench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/tracer"
)

// sample is one timed loop of drbench: n iterations (or operations) in ns nanoseconds.
type sample struct {
	n, ns uint64
}

// usPerOp is the sample's cost of one iteration in microseconds.
func (s sample) usPerOp() float64 { return float64(s.ns) / 1e3 / float64(s.n) }

// parseSamples reads drbench's "NAME ITERATIONS NANOSECONDS" lines; "NAME failed N"
// lines (a call that failed with errno N, or for fork+exec a child's wait status
// 1000+N) become errors in failed.
func parseSamples(out []byte) (map[string]sample, error) {
	m, _, err := parseSamplesFailed(out)
	return m, err
}

func parseSamplesFailed(out []byte) (map[string]sample, map[string]error, error) {
	m := map[string]sample{}
	failed := map[string]error{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[1] == "failed" {
			code, err := strconv.ParseUint(f[2], 10, 64)
			if err != nil {
				return nil, nil, fmt.Errorf("drbench printed %q, want NAME failed NUMBER", sc.Text())
			}
			if code >= 1000 {
				failed[f[0]] = fmt.Errorf("the child failed with wait status %#x", code-1000)
			} else {
				failed[f[0]] = fmt.Errorf("failed: %v", syscall.Errno(code))
			}
			continue
		}
		if len(f) != 3 {
			return nil, nil, fmt.Errorf("drbench printed %q, want NAME ITERATIONS NANOSECONDS", sc.Text())
		}
		n, err1 := strconv.ParseUint(f[1], 10, 64)
		ns, err2 := strconv.ParseUint(f[2], 10, 64)
		if err1 != nil || err2 != nil || n == 0 || ns == 0 {
			return nil, nil, fmt.Errorf("drbench printed %q, want two positive numbers", sc.Text())
		}
		m[f[0]] = sample{n, ns}
	}
	return m, failed, nil
}

// cpuSet returns the CPUs this process may run on, in order.
func cpuSet() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		cpus := make([]int, runtime.NumCPU())
		for i := range cpus {
			cpus[i] = i
		}
		return cpus
	}
	var cpus []int
	for i := 0; i < len(set)*64; i++ {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus
}

// pinThread pins the calling (locked) OS thread to cpu (-1: leave it) and returns a
// function that restores its affinity.
func pinThread(cpu int) (restore func(), err error) {
	if cpu < 0 {
		return func() {}, nil
	}
	var old, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		return nil, err
	}
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return nil, err
	}
	return func() { _ = unix.SchedSetaffinity(0, &old) }, nil
}

// mechDirect runs drbench's mechanism KIND (native, allow, nocache, trap, fault) with no
// supervisor: what it costs is all in the process itself.
func mechDirect(prog, kind string, cpu, targetUS int) (sample, error) {
	out, err := runCapture(exec.Command(prog, "mech", kind, strconv.Itoa(cpu), strconv.Itoa(targetUS)))
	if err != nil {
		return sample{}, err
	}
	return oneSample(out, kind)
}

func oneSample(out []byte, name string) (sample, error) {
	m, err := parseSamples(out)
	if err != nil {
		return sample{}, err
	}
	s, ok := m[name]
	if !ok {
		return sample{}, fmt.Errorf("drbench printed no %s line", name)
	}
	return s, nil
}

// runCapture runs cmd and returns its standard output; a failure carries the last line of
// its stderr (and the output so far).
func runCapture(cmd *exec.Cmd) ([]byte, error) {
	out, _, err := runCaptureBoth(cmd)
	return out, err
}

// runCaptureBoth is runCapture that also returns the whole of cmd's stderr.
func runCaptureBoth(cmd *exec.Cmd) ([]byte, []byte, error) {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second // a killed run's children may hold the pipes
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	// A measuring run that hangs (a tracer under test that deadlocks) is
	// killed and reported as failed, so the rest of the table still comes.
	timer := time.AfterFunc(RunTimeout, func() { cmd.Process.Kill() })
	err := cmd.Wait()
	if !timer.Stop() {
		err = fmt.Errorf("%s timed out after %v (killed)", filepath.Base(cmd.Path), RunTimeout)
	}
	out := stdout.Bytes()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		if msg != "" {
			return out, stderr.Bytes(), fmt.Errorf("%v: %s", err, msg)
		}
		return out, stderr.Bytes(), err
	}
	return out, stderr.Bytes(), nil
}

// RunTimeout bounds each measuring run of a program (one row, one mode).
var RunTimeout = 2 * time.Minute

const (
	ptraceOTraceSeccomp = 0x80
	ptraceOExitKill     = 0x100000
	ptraceEventSeccomp  = 7
)

// mechTrace runs drbench's getppid loop under a RET_TRACE filter with this process
// as its tracer: every call is a seccomp stop that the tracer resumes (after a
// register get and set when regs is true). The tracer thread runs on tracerCPU and
// the tracee on traceeCPU (-1: unpinned).
func mechTrace(prog string, tracerCPU, traceeCPU int, regs bool, targetUS int) (sample, error) {
	// As droidroot's tracer: a stop must not also send this process a SIGCHLD.
	if err := tracer.QuietStops(); err != nil {
		return sample{}, err
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	restore, err := pinThread(tracerCPU)
	if err != nil {
		return sample{}, err
	}
	defer restore()

	r, w, err := os.Pipe()
	if err != nil {
		return sample{}, err
	}
	defer r.Close()
	var stderr bytes.Buffer
	errR, errW, err := os.Pipe()
	if err != nil {
		w.Close()
		return sample{}, err
	}
	defer errR.Close()
	pid, err := syscall.ForkExec(prog, []string{prog, "mech", "trace", strconv.Itoa(traceeCPU), strconv.Itoa(targetUS)},
		&syscall.ProcAttr{Files: []uintptr{0, w.Fd(), errW.Fd()}, Sys: &syscall.SysProcAttr{Ptrace: true}})
	w.Close()
	errW.Close()
	if err != nil {
		return sample{}, err
	}
	outc := make(chan []byte, 2)
	go func() { b, _ := readAll(r); outc <- b }()
	go func() { b, _ := readAll(errR); stderr.Write(b); outc <- nil }()

	var ws syscall.WaitStatus
	first := true
	var regsBuf unix.PtraceRegs
	for {
		if _, err := syscall.Wait4(pid, &ws, unix.WALL, nil); err != nil {
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
			return sample{}, err
		}
		if ws.Exited() || ws.Signaled() {
			break
		}
		if !ws.Stopped() {
			continue
		}
		sig := ws.StopSignal()
		if first {
			first = false
			if err := unix.PtraceSetOptions(pid, ptraceOTraceSeccomp|ptraceOExitKill); err != nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				return sample{}, fmt.Errorf("PTRACE_SETOPTIONS: %w", err)
			}
			sig = 0
		} else if sig == syscall.SIGTRAP && ws.TrapCause() == ptraceEventSeccomp {
			if regs {
				if err := unix.PtraceGetRegs(pid, &regsBuf); err != nil {
					return sample{}, fmt.Errorf("PTRACE_GETREGS: %w", err)
				}
				if err := unix.PtraceSetRegs(pid, &regsBuf); err != nil {
					return sample{}, fmt.Errorf("PTRACE_SETREGS: %w", err)
				}
			}
			sig = 0
		}
		if err := unix.PtraceCont(pid, int(sig)); err != nil && !errors.Is(err, syscall.ESRCH) {
			return sample{}, fmt.Errorf("PTRACE_CONT: %w", err)
		}
	}
	a, b := <-outc, <-outc
	out := append(a, b...)
	if !ws.Exited() || ws.ExitStatus() != 0 {
		return sample{}, fmt.Errorf("drbench mech trace: %v: %s", ws, strings.TrimSpace(stderr.String()))
	}
	return oneSample(out, "trace")
}

func readAll(f *os.File) ([]byte, error) {
	var b bytes.Buffer
	_, err := b.ReadFrom(f)
	return b.Bytes(), err
}

// mechNotify runs drbench's getppid loop under a SECCOMP_RET_USER_NOTIF filter; drbench
// sends the listener over a unix socket and this process answers every notification
// (with 0) from a thread on supervisorCPU; the tracee runs on traceeCPU (-1: unpinned).
// syncWake sets SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (kernel 6.6+); errNotAvailable
// when the kernel lacks it.
func mechNotify(prog string, supervisorCPU, traceeCPU int, syncWake bool, targetUS int) (sample, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return sample{}, err
	}
	ours := os.NewFile(uintptr(fds[0]), "notify-supervisor")
	theirs := os.NewFile(uintptr(fds[1]), "notify-tracee")
	defer ours.Close()
	cmd := exec.Command(prog, "mech", "notify", strconv.Itoa(traceeCPU), strconv.Itoa(targetUS))
	cmd.ExtraFiles = []*os.File{theirs}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second // a killed run's children may hold the pipes
	if err := cmd.Start(); err != nil {
		theirs.Close()
		return sample{}, err
	}
	theirs.Close()
	serr := superviseNotify(fds[0], supervisorCPU, syncWake)
	if serr != nil {
		_ = cmd.Process.Kill()
	}
	werr := cmd.Wait()
	if serr != nil {
		return sample{}, serr
	}
	if werr != nil {
		return sample{}, fmt.Errorf("drbench mech notify: %v: %s", werr, strings.TrimSpace(stderr.String()))
	}
	return oneSample(stdout.Bytes(), "notify")
}

// errNotAvailable marks a mechanism this kernel does not have.
var errNotAvailable = errors.New("not available on this kernel")

func superviseNotify(sock, cpu int, syncWake bool) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	restore, err := pinThread(cpu)
	if err != nil {
		return err
	}
	defer restore()
	listener, err := recvFD(sock)
	if err != nil {
		return fmt.Errorf("receiving the listener fd: %w", err)
	}
	defer unix.Close(listener)
	if syncWake {
		if err := notifySetFlags(listener, unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP); err != nil {
			return errNotAvailable
		}
	}
	for {
		var req seccompNotif
		if err := notifyRecv(listener, &req); err != nil {
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			return fmt.Errorf("SECCOMP_IOCTL_NOTIF_RECV: %w", err)
		}
		resp := seccompNotifResp{ID: req.ID}
		if err := notifySend(listener, &resp); err != nil && !errors.Is(err, syscall.ENOENT) {
			return fmt.Errorf("SECCOMP_IOCTL_NOTIF_SEND: %w", err)
		}
		if req.Data.Args[0] == 1 { // drbench's last call
			return nil
		}
	}
}

func recvFD(sock int) (int, error) {
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := unix.Recvmsg(sock, buf, oob, 0)
	if err != nil {
		return -1, err
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) == 0 {
		return -1, fmt.Errorf("no control message (drbench failed before sending it)")
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) == 0 {
		return -1, fmt.Errorf("no fd in the control message")
	}
	return fds[0], nil
}

// seccompData is struct seccomp_data.
type seccompData struct {
	Nr   int32
	Arch uint32
	IP   uint64
	Args [6]uint64
}

// seccompNotif is struct seccomp_notif.
type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Data  seccompData
}

// seccompNotifResp is struct seccomp_notif_resp.
type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// SECCOMP_IOCTL_NOTIF_SET_FLAGS is _IOW('!', 4, __u64).
const seccompIoctlNotifSetFlags = 0x40082104
