//go:build linux

package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/droidroot/droidroot/loader"
	"github.com/droidroot/droidroot/tmpdir"
)

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := exec.Command("cat", "/proc/"+strconv.Itoa(pid)+"/stat").Output()
	return err == nil && !strings.Contains(string(b), ") Z ")
}

// waitGone waits up to d for pid to disappear.
func waitGone(pid int, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if !alive(pid) {
			return true
		}
	}
	return false
}

// startBackground starts droidroot on a shell that leaves a background
// sleep behind and prints its pid (a host pid: droidroot adds no pid
// namespace).
func startBackground(t *testing.T, extra ...string) (*exec.Cmd, int) {
	t.Helper()
	return startBackgroundIn(t, busyboxGuest(t), nil, extra...)
}

// startBackgroundIn is startBackground in g, with env added to the guest
// environment.
func startBackgroundIn(t *testing.T, g guest, env []string, extra ...string) (*exec.Cmd, int) {
	t.Helper()
	argv := droidrootArgs(droidrootBin(t), g, "/bin/sh", "-c", "sleep 60 & echo $!; exec sleep 60")
	argv = append(argv[:2], append(extra, argv[2:]...)...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(guestEnv(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		t.Fatalf("reading the background pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || !alive(pid) {
		cmd.Process.Kill()
		t.Fatalf("background pid %q is not running", line)
	}
	return cmd, pid
}

// TestTracerDeathKillsTracees: when droidroot dies (SIGKILL, no chance to
// clean up), PTRACE_O_EXITKILL takes every tracee with it: nothing keeps
// running untranslated.
func TestTracerDeathKillsTracees(t *testing.T) {
	cmd, pid := startBackground(t)
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	if !waitGone(pid, 5*time.Second) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("tracee %d survived its tracer", pid)
	}
}

// TestKillOnExit: with --kill-on-exit, the remaining processes die when the
// first one exits, and droidroot returns its status at once.
func TestKillOnExit(t *testing.T) {
	cmd, pid := startBackground(t, "--kill-on-exit")
	// The first process is the foreground sleep; end it.
	parent := 0
	if b, err := exec.Command("cat", "/proc/"+strconv.Itoa(pid)+"/stat").Output(); err == nil {
		f := strings.Fields(string(b)[strings.LastIndexByte(string(b), ')')+2:])
		parent, _ = strconv.Atoi(f[1])
	}
	if parent <= 1 {
		cmd.Process.Kill()
		t.Fatalf("cannot find the first process (parent of %d)", pid)
	}
	syscall.Kill(parent, syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		if code := cmd.ProcessState.ExitCode(); code != 128+int(syscall.SIGTERM) {
			t.Errorf("droidroot exited %d, want %d", code, 128+int(syscall.SIGTERM))
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("droidroot did not return after the first process died")
	}
	if !waitGone(pid, 5*time.Second) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("background process %d survived --kill-on-exit", pid)
	}
}

// TestWaitsForBackground: without --kill-on-exit droidroot, like proot,
// waits for every process, and returns the status of the last one.
func TestWaitsForBackground(t *testing.T) {
	g := busyboxGuest(t)
	start := time.Now()
	res := viaDroidroot(t, g, "", "/bin/sh", "-c", "(sleep 1; exit 4) & exit 2")
	if el := time.Since(start); el < time.Second {
		t.Errorf("droidroot returned after %v, before its background process ended", el)
	}
	if res.Code != 4 {
		t.Errorf("exit status %d, want 4 (the last process to exit)", res.Code)
	}
}

// TestExitStatus: droidroot exits with the status of the last process that exited normally,
// as proot does (a shell's killed background job does not replace the shell's own status),
// and with 128+N when the first process dies by signal N and nothing exits after it, as a
// shell reports it. The chroot runs give the reference.
func TestExitStatus(t *testing.T) {
	g := busyboxGuest(t)
	for _, tc := range []struct {
		name, script string
		want         int
	}{
		{"killed background job", "sleep 10 & kill $!; exit 3", 3},
		{"plain exit", "exit 5", 5},
		{"first process killed", "kill -9 $$", 137},
		{"first process terminated, a child exits after it", "(sleep 0.3; exit 7) & kill -TERM $$", 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := viaDroidroot(t, g, "", "/bin/sh", "-c", tc.script)
			if res.Code != tc.want {
				t.Errorf("exit status %d, want %d\n%s", res.Code, tc.want, res)
			}
		})
	}
}

// TestJobControlOfANewChild: a child stopped and continued just after its fork, before it
// has run (a shell's "job & kill -STOP $!; kill -CONT $!"), runs on, as without droidroot.
// SIGCONT makes a seized tracee trap at once, stopped or not, with the status of a new task's
// initial stop, which droidroot had taken for that stop reported late and left stopped: the
// shell's wait never returned.
func TestJobControlOfANewChild(t *testing.T) {
	g := busyboxGuest(t)
	script := `i=0; while [ $i -lt 20 ]; do sleep 5 & kill -STOP $!; kill -CONT $!; kill $!; wait $!; echo -n "$? "; i=$((i+1)); done; echo`
	want := strings.Repeat("143 ", 20) + "\n"
	res := viaDroidroot(t, g, "", "/bin/sh", "-c", script)
	if res.Code != 0 || res.Stdout != want {
		t.Errorf("got %q, want %q\n%s", res.Stdout, want, res)
	}
}

// TestSignalsReachTheGuest: droidroot survives the asynchronous signals a terminal or a
// launcher sends (Ctrl-C's SIGINT to the foreground process group, SIGHUP when the terminal
// closes, SIGTERM), as proot does, so the guest decides what they mean; and the guest starts
// with every disposition at its default (droidroot catches them, and caught dispositions do
// not survive exec: it ignores only what droidroot's parent ignored), so a shell's trap runs.
func TestSignalsReachTheGuest(t *testing.T) {
	g := busyboxGuest(t)
	script := `grep -E '^Sig(Ign|Cgt)' /proc/self/status
trap 'echo int' INT; trap 'echo hup' HUP; trap 'echo term' TERM
echo ready
i=0; while [ $i -lt 40 ]; do sleep 0.05; i=$((i+1)); done; echo done`
	cmd := exec.Command(droidrootBin(t), droidrootArgs(droidrootBin(t), g, "/bin/sh", "-c", script)[1:]...)
	cmd.Env = guestEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	r := bufio.NewReader(out)
	var got []string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("guest output ended before 'ready': %q, %v; stderr %q", got, err, stderr.String())
		}
		got = append(got, strings.TrimSuffix(line, "\n"))
		if line == "ready\n" {
			break
		}
	}
	// Ctrl-C: the whole foreground process group; then droidroot alone.
	syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
	time.Sleep(200 * time.Millisecond)
	syscall.Kill(cmd.Process.Pid, syscall.SIGHUP)
	syscall.Kill(cmd.Process.Pid, syscall.SIGTERM)
	syscall.Kill(cmd.Process.Pid, syscall.SIGQUIT)
	rest, _ := io.ReadAll(r)
	got = append(got, strings.Split(strings.TrimSuffix(string(rest), "\n"), "\n")...)
	err = cmd.Wait()
	// The guest ignores what droidroot's parent ignored (this test's process: whatever
	// started the suite may ignore some), as any program would, and nothing more.
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	var sigIgn string
	for _, line := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(line, "SigIgn:") {
			sigIgn = line
		}
	}
	want := []string{sigIgn, "SigCgt:\t0000000000000000", "ready", "int", "done"}
	if diff := cmp.Diff(want, got); diff != "" || err != nil {
		t.Errorf("guest output (-want +got):\n%s\nexit: %v, stderr: %q", diff, err, stderr.String())
	}
}

// TestLargeArgs: an exec with about 1 MB of arguments (16,000 of 61 bytes, under the
// kernel's limits) runs, as the first command and as an exec inside the guest. After such an
// exec the kernel maps no stack below the stack pointer, where the load script once went.
func TestLargeArgs(t *testing.T) {
	g := busyboxGuest(t)
	args := make([]string, 16000)
	for i := range args {
		args[i] = strings.Repeat("x", 55) + fmt.Sprintf("%05d", i)
	}
	want := strings.Join(args, " ") + "\n"
	for _, tc := range []struct {
		name string
		cmd  []string
	}{
		{"first command", []string{"/bin/echo"}},
		{"exec in the guest", []string{"/bin/sh", "-c", `exec /bin/echo "$@"`, "sh"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := viaDroidroot(t, g, "", append(tc.cmd, args...)...)
			if res.Code != 0 || res.Stdout != want {
				t.Errorf("exit %d, stdout %d bytes (want %d), stderr %q", res.Code, len(res.Stdout), len(want), res.Stderr)
			}
		})
	}
}

// TestLoaderMessagesNameGuestPaths: when the loader cannot load a program (here, one whose
// PT_INTERP names a file that is not ELF), its message names guest paths, never droidroot's
// host paths into the rootfs or a bind.
func TestLoaderMessagesNameGuestPaths(t *testing.T) {
	g := busyboxGuest(t)
	prog, err := os.ReadFile(filepath.Join(g.Root, "progs/pathprobe.dyn"))
	if err != nil {
		t.Fatal(err)
	}
	// Same length, NUL-padded: /fx/dir/file is a text file in the rootfs.
	bad := "/fx/dir/file" + strings.Repeat("\x00", len(glibc.Interp)-len("/fx/dir/file"))
	patched := bytes.Replace(prog, []byte(glibc.Interp+"\x00"), []byte(bad+"\x00"), 1)
	if bytes.Equal(patched, prog) {
		t.Fatalf("no PT_INTERP %q in pathprobe.dyn", glibc.Interp)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "badinterp"), patched, 0o755); err != nil {
		t.Fatal(err)
	}
	g.Binds = append(g.Binds, dir+":/mnt/bad")
	res := viaDroidroot(t, g, "", "/mnt/bad/badinterp")
	want := "droidroot loader: interpreter: not an ELF file: /fx/dir/file\n"
	if res.Code == 0 || res.Stderr != want {
		t.Errorf("got %s\nwant a failure and stderr %q", res, want)
	}
	if strings.Contains(res.Stderr, g.Root) || strings.Contains(res.Stderr, dir) {
		t.Errorf("a host path in the message: %q", res.Stderr)
	}
}

// TestOracleNoSeccomp runs oracle ops in ptrace-only mode (PROOT_NO_SECCOMP=1,
// also the fallback on kernels without seccomp filters): every syscall stops
// at entry and exit, and the answers must still be the kernel's.
func TestOracleNoSeccomp(t *testing.T) {
	needRoot(t)
	base := rootfs(t, "busybox")
	files := opsFiles(t)
	for _, name := range []string{"paths", "exec", "cwd", "openat2"} {
		t.Run(name, func(t *testing.T) {
			want := probe(t, "chroot", viaChroot, base, "pathprobe.dyn", name, files[name])
			t.Setenv("PROOT_NO_SECCOMP", "1")
			got := probe(t, "droidroot", viaDroidroot, base, "pathprobe.dyn", name, files[name])
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ptrace-only droidroot differs from the chroot oracle on %s.ops (-chroot +droidroot):\n%s", name, diff)
			}
		})
	}
}

// TestStage2: droidroot's own loader is stage 2 (it installs the filter and execs the
// command); with a PROOT_LOADER that is not byte for byte droidroot's, droidroot re-executes
// itself as stage 2 instead. Both install the filter and report exec errors alike.
func TestStage2(t *testing.T) {
	bin := droidrootBin(t)
	g := busyboxGuest(t)
	own, err := loader.Binary(runtime.GOARCH, 0)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	same, other := filepath.Join(dir, "same"), filepath.Join(dir, "other")
	if err := os.WriteFile(same, own, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other, append(append([]byte{}, own...), 0), 0o755); err != nil {
		t.Fatal(err)
	}
	scripts := t.TempDir()
	for name, text := range map[string]string{
		"plain":       "echo plain \"$0\" \"$@\"\n",
		"blank-bang":  "#!  \t\necho blank-bang \"$0\" \"$@\"\n",
		"not-a-shell": "\x01\x02binary?\n",
	} {
		if err := os.WriteFile(filepath.Join(scripts, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []string{"", same, other} {
		env := []string{"env", "PROOT_LOADER=" + l}
		if l == "" {
			env = []string{"env", "-u", "PROOT_LOADER"}
		}
		// The first command starts as execvp starts it: a script without #! (or with
		// only blanks after it) runs with /bin/sh, as proot, env and nohup run it.
		for _, s := range []struct{ name, stdout string }{
			{"plain", "plain /s/plain a b\n"},
			{"blank-bang", "blank-bang /s/blank-bang a b\n"},
		} {
			res := run(t, "", append(env, bin, "run", "-r", g.Root, "-b", scripts+":/s", "--", "/s/"+s.name, "a", "b")...)
			if res.Code != 0 || res.Stdout != s.stdout {
				t.Errorf("PROOT_LOADER=%q, script %s: %s\nwant stdout %q", l, s.name, res, s.stdout)
			}
		}
		res := run(t, "", append(env, bin, "run", "-r", g.Root, "-b", scripts+":/s", "--", "/s/not-a-shell")...)
		if res.Code == 0 || !strings.Contains(res.Stderr, "/s/not-a-shell") {
			t.Errorf("PROOT_LOADER=%q, a binary file /bin/sh cannot run: %s\nwant sh's failure", l, res)
		}
		res = run(t, "", append(env, bin, "run", "-r", g.Root, "-b", "/proc", "--", "/bin/sh", "-c", "echo ok; grep ^Seccomp: /proc/self/status")...)
		if res.Code != 0 || res.Stdout != "ok\nSeccomp:\t2\n" {
			t.Errorf("PROOT_LOADER=%q: %s\nwant ok and a seccomp filter", l, res)
		}
		res = run(t, "", append(env, bin, "run", "-r", g.Root, "--", "/etc/passwd")...)
		if res.Code != 126 || res.Stderr != "droidroot: /etc/passwd: permission denied\n" {
			t.Errorf("PROOT_LOADER=%q, a file that is not executable: %s\nwant exit 126 and the kernel's error", l, res)
		}
	}
}

// runDir is tmpdir.Dir's directory in tmp, where sessions keep theirs.
func runDir(tmp string) string {
	return filepath.Join(tmp, tmpdir.DirPrefix+strconv.Itoa(os.Geteuid()))
}

// sessionDirs lists the directories droidroot's sessions keep in tmp
// (in runDir), sorted.
func sessionDirs(t *testing.T, tmp string) []string {
	t.Helper()
	ents, err := os.ReadDir(runDir(tmp))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestKilledSessionSwept: the directories a session keeps in PROOT_TMP_DIR
// outlive a droidroot killed with SIGKILL (what Android does to an app),
// and the next session removes them once they are older than
// tmpdir.MinAge; a live session's stay, whatever their age.
func TestKilledSessionSwept(t *testing.T) {
	tmp := t.TempDir()
	env := []string{"PROOT_TMP_DIR=" + tmp}
	g := busyboxGuest(t) // with binds: a bind points' tree
	killed, _ := startBackgroundIn(t, g, env)
	dead := sessionDirs(t, tmp)
	live, livePid := startBackgroundIn(t, g, env)
	defer func() {
		live.Process.Kill()
		live.Wait()
		waitGone(livePid, 5*time.Second)
	}()
	alive := sessionDirs(t, tmp)
	if len(dead) == 0 || len(alive) != 2*len(dead) {
		t.Fatalf("sessions' directories: %v then %v, want some, then twice as many", dead, alive)
	}
	killed.Process.Signal(syscall.SIGKILL)
	killed.Wait()
	if got := sessionDirs(t, tmp); !cmp.Equal(got, alive) {
		t.Fatalf("after SIGKILL: %v, want %v (left behind)", got, alive)
	}
	old := time.Now().Add(-2 * tmpdir.MinAge)
	for _, d := range alive {
		if err := os.Chtimes(filepath.Join(runDir(tmp), d), old, old); err != nil {
			t.Fatal(err)
		}
	}
	argv := droidrootArgs(droidrootBin(t), g, "/bin/true")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(guestEnv(), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("a session after: %v\n%s", err, out)
	}
	var want []string
	for _, d := range alive {
		if !slices.Contains(dead, d) {
			want = append(want, d)
		}
	}
	if diff := cmp.Diff(want, sessionDirs(t, tmp)); diff != "" {
		t.Errorf("after the next session (-want +got; the killed session's swept, the live one's kept):\n%s", diff)
	}
}
