package loader

import (
	"bufio"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// These tests play the tracer's part of the protocol with ptrace: exec the loader
// traced, write the load script below sp at the exec stop, point rdi at it, and
// watch the loader's system calls until the program makes its first one.

// loaderSpan bounds the loader's text: any pc in it is the loader's.
const loaderSpan = 1 << 20

// auxv types whose values the loader may change on the original stack.
var fixedAuxv = map[uint64]string{3: "AT_PHDR", 4: "AT_PHENT", 5: "AT_PHNUM", 7: "AT_BASE", 9: "AT_ENTRY", 31: "AT_EXECFN"}

type tracedRun struct {
	stdout, stderr string
	status         syscall.WaitStatus
	sp             uint64 // the stack pointer the kernel gave the loader
	// entry holds the registers at the program's first instruction (the
	// interpreter's, if any), when runTraced was asked to single-step to it.
	entry *syscall.PtraceRegs
	// stackChanges lists the 8-byte words of the original stack (from the
	// kernel-given sp to the top of the stack) that differ between the exec stop and
	// the program's first system call (or the loader's exit_group), as "AT_x" for
	// an auxv value and "sp+N" for anything else. nil if never compared.
	stackChanges []string
}

// runTraced runs the loader with argv and env under ptrace and hands it script
// (edited by mutate, if given); a nil script leaves rdi 0. With step, it
// single-steps the loader to the program's first instruction and records the
// registers there.
func runTraced(t *testing.T, loader string, argv, env []string, script *Script, mutate func([]byte), step bool) tracedRun {
	t.Helper()
	// ptrace requests must come from the thread that is the tracer.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	rout, wout, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	rerr, werr, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	pid, err := syscall.ForkExec(loader, argv, &syscall.ProcAttr{
		Env:   env,
		Files: []uintptr{devnull.Fd(), wout.Fd(), werr.Fd()},
		Sys:   &syscall.SysProcAttr{Ptrace: true, Pdeathsig: syscall.SIGKILL},
	})
	wout.Close()
	werr.Close()
	if err != nil {
		rout.Close()
		rerr.Close()
		t.Fatalf("fork/exec %s: %v", loader, err)
	}
	stdout, stderr := readAll(rout), readAll(rerr)

	var run tracedRun
	fail := func(format string, args ...any) {
		t.Helper()
		syscall.Kill(pid, syscall.SIGKILL)
		var ws syscall.WaitStatus
		syscall.Wait4(pid, &ws, 0, nil)
		t.Fatalf(format, args...)
	}
	wait := func() {
		t.Helper()
		for {
			_, err := syscall.Wait4(pid, &run.status, syscall.WALL, nil)
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				fail("wait4: %v", err)
			}
			return
		}
	}

	wait()
	if !run.status.Stopped() || run.status.StopSignal() != syscall.SIGTRAP {
		fail("first stop: status %#x, want the SIGTRAP after exec", uint32(run.status))
	}
	var regs syscall.PtraceRegs
	if err := syscall.PtraceGetRegs(pid, &regs); err != nil {
		fail("PTRACE_GETREGS: %v", err)
	}
	if regs.Rip < LoadAddress || regs.Rip >= LoadAddress+loaderSpan {
		fail("exec stop at rip %#x, outside the loader", regs.Rip)
	}
	sp := regs.Rsp
	run.sp = sp
	stackTop, err := stackEnd(pid)
	if err != nil {
		fail("%v", err)
	}
	before, err := readMem(pid, sp, stackTop)
	if err != nil {
		fail("%v", err)
	}

	if script != nil {
		b := script.Encode(sp)
		if mutate != nil {
			mutate(b)
		}
		addr := Address(sp, len(b))
		if n, err := syscall.PtracePokeData(pid, uintptr(addr), b); err != nil || n != len(b) {
			fail("writing the script: %d bytes, %v", n, err)
		}
		regs.Rdi = addr
		if err := syscall.PtraceSetRegs(pid, &regs); err != nil {
			fail("PTRACE_SETREGS: %v", err)
		}
	}
	if err := syscall.PtraceSetOptions(pid, syscall.PTRACE_O_TRACESYSGOOD); err != nil {
		fail("PTRACE_SETOPTIONS: %v", err)
	}

	for step {
		if err := syscall.PtraceSingleStep(pid); err != nil {
			fail("PTRACE_SINGLESTEP: %v", err)
		}
		wait()
		if !run.status.Stopped() || run.status.StopSignal() != syscall.SIGTRAP {
			fail("while single-stepping the loader: status %#x", uint32(run.status))
		}
		if err := syscall.PtraceGetRegs(pid, &regs); err != nil {
			fail("PTRACE_GETREGS: %v", err)
		}
		if regs.Rip < LoadAddress || regs.Rip >= LoadAddress+loaderSpan {
			r := regs
			run.entry = &r
			// The kernel hands TF to the tracee after a single-stepped popf (it
			// takes the popf as the program setting TF itself); take it back.
			regs.Eflags &^= 0x100
			if err := syscall.PtraceSetRegs(pid, &regs); err != nil {
				fail("PTRACE_SETREGS: %v", err)
			}
			break
		}
	}

	// Follow the loader from syscall stop to syscall stop; stop following at the
	// first system call made outside it (the program's) or at its exit_group.
	sig := 0
	for {
		if err := syscall.PtraceSyscall(pid, sig); err != nil {
			fail("PTRACE_SYSCALL: %v", err)
		}
		sig = 0
		wait()
		if run.status.Exited() || run.status.Signaled() {
			break
		}
		if !run.status.Stopped() {
			continue
		}
		if run.status.StopSignal() != syscall.SIGTRAP|0x80 {
			sig = int(run.status.StopSignal()) // a real signal: deliver it
			continue
		}
		if err := syscall.PtraceGetRegs(pid, &regs); err != nil {
			fail("PTRACE_GETREGS: %v", err)
		}
		inLoader := regs.Rip >= LoadAddress && regs.Rip < LoadAddress+loaderSpan
		if inLoader && regs.Orig_rax != syscall.SYS_EXIT_GROUP {
			continue
		}
		after, err := readMem(pid, sp, stackTop)
		if err != nil {
			fail("%v", err)
		}
		run.stackChanges = stackChanges(before, after)
		if err := syscall.PtraceDetach(pid); err != nil {
			fail("PTRACE_DETACH: %v", err)
		}
		for {
			wait()
			if run.status.Exited() || run.status.Signaled() {
				break
			}
		}
		break
	}
	run.stdout, run.stderr = <-stdout, <-stderr
	return run
}

func readAll(r *os.File) <-chan string {
	c := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(r)
		r.Close()
		c <- string(b)
	}()
	return c
}

// stackEnd returns the end of pid's [stack] mapping.
func stackEnd(pid int) (uint64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasSuffix(sc.Text(), "[stack]") {
			_, end, _ := strings.Cut(strings.Fields(sc.Text())[0], "-")
			return strconv.ParseUint(end, 16, 64)
		}
	}
	return 0, fmt.Errorf("no [stack] in /proc/%d/maps", pid)
}

func readMem(pid int, from, to uint64) ([]byte, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, to-from)
	if _, err := f.ReadAt(b, int64(from)); err != nil {
		return nil, fmt.Errorf("reading stack %#x-%#x: %w", from, to, err)
	}
	return b, nil
}

// stackChanges names the words that differ between two images of the original
// stack, both starting at the kernel-given sp.
func stackChanges(before, after []byte) []string {
	le := binary.LittleEndian
	word := func(b []byte, i int) uint64 { return le.Uint64(b[8*i:]) }
	// argc, argv..., 0, envp..., 0, then (type, value) pairs up to AT_NULL.
	auxType := map[int]uint64{}
	i := 1 + int(word(before, 0)) + 1
	for word(before, i) != 0 {
		i++
	}
	for i++; 8*i+16 <= len(before) && word(before, i) != 0; i += 2 {
		auxType[i+1] = word(before, i)
	}
	changes := []string{}
	for j := 0; 8*j+8 <= len(before); j++ {
		if word(before, j) == word(after, j) {
			continue
		}
		if name, ok := fixedAuxv[auxType[j]]; ok {
			changes = append(changes, name)
		} else {
			changes = append(changes, fmt.Sprintf("sp+%d", 8*j))
		}
	}
	return changes
}

func TestTraced(t *testing.T) {
	ps := buildProbes(t, toolchains["amd64"])
	loader, err := Extract(t.TempDir(), "amd64", 0)
	if err != nil {
		t.Fatal(err)
	}
	argv := []string{"guest-argv0", "two words", "", "ünïcödé", strings.Repeat("x", 3000)}
	env := []string{"DR_PROBE=hello world", "DR_PROBE_INTERP=" + ps.interp, "PATH=/usr/bin:/bin", "EMPTY="}

	for _, p := range ps.list {
		t.Run(p.name, func(t *testing.T) {
			s := Script{Program: p.path, ExecFn: "/guest/usr/bin/probe-" + p.name}
			want := probeWant{argv: argv, env: "hello world", execfn: s.ExecFn, vdso: true}
			if p.dynamic {
				s.Interp = ps.interp
				want.interp = ps.interp
			}
			// Single-stepping the loader to the entry point takes a while: not in -short.
			run := runTraced(t, loader, argv, env, &s, nil, !testing.Short())
			if !run.status.Exited() || run.status.ExitStatus() != 42 {
				t.Fatalf("status %#x, want exit 42\nstderr: %s\nstdout: %s", uint32(run.status), run.stderr, run.stdout)
			}
			if run.stderr != "" {
				t.Errorf("stderr: %s", run.stderr)
			}
			checkProbe(t, run.stdout, want)
			if run.stackChanges == nil {
				t.Error("original stack never compared")
			}
			for _, c := range run.stackChanges {
				if strings.HasPrefix(c, "sp+") {
					t.Errorf("loader changed the original stack at %s (changes: %v)", c, run.stackChanges)
				}
			}
			t.Logf("auxv entries changed: %v", run.stackChanges)
			if !testing.Short() {
				checkEntryRegs(t, run, ps.interp, p.dynamic)
			}
		})
		// FlagExecStop without droidroot: the droidroot_execstop call fails
		// (ENOSYS) and the loader jumps itself.
		t.Run(p.name+"/execstop", func(t *testing.T) {
			s := Script{Program: p.path, ExecFn: "/guest/usr/bin/probe-" + p.name, ExecStop: true}
			want := probeWant{argv: argv, env: "hello world", execfn: s.ExecFn, vdso: true}
			if p.dynamic {
				s.Interp = ps.interp
				want.interp = ps.interp
			}
			run := runTraced(t, loader, argv, env, &s, nil, false)
			if !run.status.Exited() || run.status.ExitStatus() != 42 {
				t.Fatalf("status %#x, want exit 42\nstderr: %s\nstdout: %s", uint32(run.status), run.stderr, run.stdout)
			}
			checkProbe(t, run.stdout, want)
		})
	}
}

func TestTracedErrors(t *testing.T) {
	ps := buildProbes(t, toolchains["amd64"])
	loader, err := Extract(t.TempDir(), "amd64", 0)
	if err != nil {
		t.Fatal(err)
	}
	var static, dynamic string
	for _, p := range ps.list {
		switch p.name {
		case "static":
			static = p.path
		case "dynamic-pie":
			dynamic = p.path
		}
	}
	missing := filepath.Join(ps.dir, "no-such-program")
	text := filepath.Join(ps.dir, "text")
	os.WriteFile(text, []byte("#!/bin/sh\necho not an ELF file\n"), 0o755)
	elfBytes, err := os.ReadFile(static)
	if err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(ps.dir, "foreign")
	b := append([]byte(nil), elfBytes...)
	binary.LittleEndian.PutUint16(b[18:], 183) // e_machine = EM_AARCH64
	os.WriteFile(foreign, b, 0o755)
	short := filepath.Join(ps.dir, "short")
	os.WriteFile(short, elfBytes[:100], 0o755)

	tests := []struct {
		name    string
		script  *Script
		mutate  func([]byte)
		message string
	}{
		// Messages name the program by its guest path (ExecFn) and the interpreter by the
		// program's PT_INTERP, never by the host paths the script gives.
		{"missing program", &Script{Program: missing, ExecFn: "/bin/x"}, nil,
			"program: cannot open (errno 2): /bin/x"},
		{"missing interpreter", &Script{Program: dynamic, Interp: missing, ExecFn: "/bin/x"}, nil,
			"interpreter: cannot open (errno 2): " + ptInterp(t, dynamic)},
		{"interpreter not given", &Script{Program: dynamic, ExecFn: "/bin/x"}, nil,
			"program: has a PT_INTERP but the load script names no interpreter: /bin/x"},
		{"not ELF", &Script{Program: text, ExecFn: "/bin/x"}, nil,
			"program: not an ELF file: /bin/x"},
		{"other architecture", &Script{Program: foreign, ExecFn: "/bin/x"}, nil,
			"program: ELF file for another architecture: /bin/x"},
		{"truncated", &Script{Program: short, ExecFn: "/bin/x"}, nil,
			"program: file too short: /bin/x"},
		{"directory", &Script{Program: ps.dir, ExecFn: "/bin/x"}, nil,
			"program: cannot read (errno 21): /bin/x"},
		{"no script", nil, nil,
			"no load script (the loader is started by droidroot, not directly)"},
		{"bad magic", &Script{Program: static, ExecFn: "/bin/x"}, func(b []byte) { b[0] ^= 0xff },
			"bad load script (wrong magic)"},
		{"bad flags", &Script{Program: static, ExecFn: "/bin/x"}, func(b []byte) { b[48] = 64 },
			"bad load script (size or flags)"},
		{"offset out of range", &Script{Program: static, ExecFn: "/bin/x"},
			func(b []byte) { binary.LittleEndian.PutUint64(b[24:], uint64(len(b))) },
			"bad load script (string offset out of range)"},
		{"unterminated string", &Script{Program: static, ExecFn: "/bin/x"},
			func(b []byte) {
				for i := HeaderSize; i < len(b); i++ {
					b[i] = 'a'
				}
			},
			"bad load script (unterminated string)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run := runTraced(t, loader, []string{"argv0"}, []string{"A=b"}, tt.script, tt.mutate, false)
			if !run.status.Exited() || run.status.ExitStatus() != 127 {
				t.Errorf("status %#x, want exit 127", uint32(run.status))
			}
			if want := "droidroot loader: " + tt.message + "\n"; run.stderr != want {
				t.Errorf("stderr = %q, want %q", run.stderr, want)
			}
			if run.stdout != "" {
				t.Errorf("stdout = %q", run.stdout)
			}
			if run.stackChanges == nil || len(run.stackChanges) > 0 {
				t.Errorf("original stack changes %v, want none", run.stackChanges)
			}
		})
	}
}

// checkEntryRegs checks the registers at the program's first instruction against
// what the kernel's start_thread and ELF_PLAT_INIT give a new program: rip at the
// entry point, rsp at argc, every other general register 0 (rdx is the atexit
// pointer), no arithmetic flags and DF clear.
func checkEntryRegs(t *testing.T, run tracedRun, interp string, dynamic bool) {
	t.Helper()
	r := run.entry
	if r == nil {
		t.Fatal("program entry not reached")
	}
	vals := map[string]string{}
	for _, line := range strings.Split(run.stdout, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			vals[k] = v
		}
	}
	hex := func(key string) uint64 {
		v, err := strconv.ParseUint(strings.TrimPrefix(vals[key], "0x"), 16, 64)
		if err != nil {
			t.Fatalf("probe %s = %q", key, vals[key])
		}
		return v
	}
	want := hex("at_entry")
	if dynamic {
		f, err := elf.Open(interp)
		if err != nil {
			t.Fatal(err)
		}
		want = hex("at_base") + f.Entry
		f.Close()
	}
	if r.Rip != want {
		t.Errorf("entered at rip %#x, want %#x", r.Rip, want)
	}
	if r.Rsp != run.sp {
		t.Errorf("entered with rsp %#x, want the original sp %#x", r.Rsp, run.sp)
	}
	gprs := map[string]uint64{"rax": r.Rax, "rbx": r.Rbx, "rcx": r.Rcx, "rdx": r.Rdx, "rsi": r.Rsi, "rdi": r.Rdi,
		"rbp": r.Rbp, "r8": r.R8, "r9": r.R9, "r10": r.R10, "r11": r.R11, "r12": r.R12, "r13": r.R13,
		"r14": r.R14, "r15": r.R15}
	for name, v := range gprs {
		if v != 0 {
			t.Errorf("entered with %s = %#x, want 0", name, v)
		}
	}
	// CF PF AF ZF SF DF OF (not TF: that is the single-stepping's).
	if f := r.Eflags & 0xcd5; f != 0 {
		t.Errorf("entered with eflags %#x", r.Eflags)
	}
}

// ptInterp returns the PT_INTERP path of the ELF file path.
func ptInterp(t *testing.T, path string) string {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err != nil {
				t.Fatal(err)
			}
			return strings.TrimRight(string(b), "\x00")
		}
	}
	t.Fatalf("%s has no PT_INTERP", path)
	return ""
}
