//go:build linux

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// cmdTimeout bounds every command a test runs: 60 s, or $DROIDROOT_E2E_TIMEOUT (a Go
// duration, for slow machines).
var cmdTimeout = func() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("DROIDROOT_E2E_TIMEOUT")); err == nil && d > 0 {
		return d
	}
	return 60 * time.Second
}()

// required reports whether missing inputs must fail the tests (CI) rather than skip them.
func required() bool { return os.Getenv("DROIDROOT_E2E_REQUIRED") == "1" }

// missing skips the test, or fails it when DROIDROOT_E2E_REQUIRED=1, so that CI can never pass
// by silently skipping.
func missing(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if required() {
		t.Fatalf("%s (DROIDROOT_E2E_REQUIRED=1)", msg)
	}
	t.Skip(msg)
}

// repoPath returns the absolute path of rel, relative to the repository root (the parent of
// this package's directory, where `go test` runs).
func repoPath(t testing.TB, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", rel))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// droidrootBin returns the droidroot binary: $DROIDROOT_BIN, else bin/droidroot of the repo.
func droidrootBin(t testing.TB) string {
	t.Helper()
	p := os.Getenv("DROIDROOT_BIN")
	if p == "" {
		p = repoPath(t, "bin/droidroot")
	}
	p, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil || !st.Mode().IsRegular() || st.Mode()&0o111 == 0 {
		missing(t, "droidroot binary %s not found or not executable (build it, or set DROIDROOT_BIN)", p)
	}
	return p
}

func cacheDir() string {
	if d := os.Getenv("DROIDROOT_CACHE"); d != "" {
		return d
	}
	return "/var/cache/droidroot"
}

// glibcArch describes where this architecture's glibc lives in a rootfs (Debian's multiarch
// layout): the multiarch directory, the dynamic loader's file name in it, and PT_INTERP, the
// path dynamic programs ask for (a symlink to the file in the multiarch directory).
type glibcArch struct {
	Multiarch string // "/lib/x86_64-linux-gnu"
	LdSo      string // "ld-linux-x86-64.so.2"
	Interp    string // "/lib64/ld-linux-x86-64.so.2"
}

// glibc is the layout of the host's architecture: the test rootfses are built for it
// (test/rootfs/busybox.sh on x86_64, test/arm64/mkrootfs.sh on arm64).
var glibc = map[string]glibcArch{
	"amd64": {"/lib/x86_64-linux-gnu", "ld-linux-x86-64.so.2", "/lib64/ld-linux-x86-64.so.2"},
	"arm64": {"/lib/aarch64-linux-gnu", "ld-linux-aarch64.so.1", "/lib/ld-linux-aarch64.so.1"},
}[runtime.GOARCH]

// rootfsMarkers are files each kind of rootfs must have to be usable.
var rootfsMarkers = map[string][]string{
	"busybox": {"bin/busybox", "progs/pathprobe", "progs/pathprobe.dyn", "progs/threads",
		strings.TrimPrefix(glibc.Multiarch, "/") + "/libc.so.6", "fx/dir/file"},
	"debian": {"usr/bin/python3", "usr/bin/git", "usr/bin/gcc", "usr/bin/tar", "usr/bin/find"},
}

// rootfs returns the real (symlink-free) path of the test rootfs of this kind ("busybox" or
// "debian"): $DROIDROOT_ROOTFS_<KIND>, else <cache>/<kind>.
func rootfs(t testing.TB, kind string) string {
	t.Helper()
	p := os.Getenv("DROIDROOT_ROOTFS_" + strings.ToUpper(kind))
	if p == "" && kind == "debian" && runtime.GOARCH == "arm64" {
		// Not missing(): DROIDROOT_E2E_REQUIRED=1 in the arm64 VM must not fail on it. Setting
		// DROIDROOT_ROOTFS_DEBIAN makes the tests run (and required) on arm64 too.
		t.Skip("the arm64 Debian rootfs is not built yet (test/arm64 has no debian recipe); set DROIDROOT_ROOTFS_DEBIAN to run the Debian tests on arm64")
	}
	if p == "" {
		p = filepath.Join(cacheDir(), kind)
	}
	for _, m := range rootfsMarkers[kind] {
		if _, err := os.Lstat(filepath.Join(p, m)); err != nil {
			missing(t, "%s rootfs %s is missing %s (run test/mkrootfs.sh %s, or set DROIDROOT_ROOTFS_%s)",
				kind, p, m, kind, strings.ToUpper(kind))
		}
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return real
}

// needRoot skips (or fails, in CI) tests that need root for chroot and mount namespaces.
func needRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		missing(t, "needs root (chroot, mount namespaces)")
	}
}

// guestEnv is the environment of every guest command: fixed, so output does not depend on the
// caller's, plus the caller's DROIDROOT_* and PROOT_* variables (debug switches).
func guestEnv() []string {
	env := []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/root",
		"LANG=C",
		"LC_ALL=C",
		"TERM=dumb",
		"TZ=UTC",
		"PYTHONDONTWRITEBYTECODE=1",
	}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "DROIDROOT_") || strings.HasPrefix(kv, "PROOT_") {
			env = append(env, kv)
		}
	}
	return env
}

// result is what a finished command left behind.
type result struct {
	Stdout, Stderr string
	// Code is the exit status, or 128+N for a death by signal N (as a shell reports it).
	Code int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout:\n%s--- stderr:\n%s", r.Code, r.Stdout, r.Stderr)
}

// run runs argv with stdin, the guest environment and a timeout of cmdTimeout. The command
// gets its own process group, which is killed as a whole on timeout (tracer and tracees). It
// fails the test only when the command could not be run or timed out.
func run(t testing.TB, stdin string, argv ...string) result {
	t.Helper()
	return runAs(t, nil, stdin, argv...)
}

// runAs is run with the credentials cred (nil: ours).
func runAs(t testing.TB, cred *syscall.Credential, stdin string, argv ...string) result {
	t.Helper()
	return runWithin(t, cmdTimeout, cred, stdin, argv...)
}

// runWithin is runAs with the time limit limit.
func runWithin(t testing.TB, limit time.Duration, cred *syscall.Credential, stdin string, argv ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = guestEnv()
	cmd.Dir = "/"
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err := cmd.Run()
	res := result{Stdout: stdout.String(), Stderr: stderr.String()}
	if ctx.Err() != nil {
		t.Fatalf("timed out after %v: %q\n%s", limit, argv, res)
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		ws := ee.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			res.Code = 128 + int(ws.Signal())
		} else {
			res.Code = ws.ExitStatus()
		}
	default:
		t.Fatalf("running %q: %v", argv, err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Logf("slow: %q took %v", argv, d.Round(time.Millisecond))
	}
	return res
}

// guest describes a guest environment the same way to both runners: a rootfs, bindings
// ("HOST" or "HOST:GUEST", in order) and a working directory.
type guest struct {
	Root  string
	Binds []string
	Cwd   string
	// Timeout bounds each command in the guest (0: cmdTimeout).
	Timeout time.Duration
}

// limit is the time limit of a command in g.
func (g guest) limit() time.Duration {
	if g.Timeout > 0 {
		return g.Timeout
	}
	return cmdTimeout
}

// runner runs a command in a guest: the chroot oracle or droidroot.
type runner func(t testing.TB, g guest, stdin string, cmd ...string) result

// viaChroot runs cmd in g with the kernel's own semantics (test/oracle/chroot.sh). It never
// writes to g.Root itself; mount points must exist.
func viaChroot(t testing.TB, g guest, stdin string, cmd ...string) result {
	t.Helper()
	argv := []string{repoPath(t, "test/oracle/chroot.sh")}
	if g.Cwd != "" {
		argv = append(argv, "-w", g.Cwd)
	}
	argv = append(argv, g.Root)
	argv = append(argv, g.Binds...)
	argv = append(argv, "--")
	return runWithin(t, g.limit(), nil, stdin, append(argv, cmd...)...)
}

// droidrootArgs is the droidroot command line for cmd in g.
func droidrootArgs(bin string, g guest, cmd ...string) []string {
	argv := []string{bin, "run", "-r", g.Root}
	for _, b := range g.Binds {
		argv = append(argv, "-b", b)
	}
	if g.Cwd != "" {
		argv = append(argv, "-w", g.Cwd)
	}
	argv = append(argv, "--")
	return append(argv, cmd...)
}

// viaDroidroot runs cmd in g under droidroot.
func viaDroidroot(t testing.TB, g guest, stdin string, cmd ...string) result {
	t.Helper()
	return runWithin(t, g.limit(), nil, stdin, droidrootArgs(droidrootBin(t), g, cmd...)...)
}

// runners are the two ways of running a guest, by name, oracle first.
var runners = []struct {
	Name string
	Run  runner
}{
	{"chroot", viaChroot},
	{"droidroot", viaDroidroot},
}

// copyTree copies src to dst (which must not exist) with cp -a: modes, owners, times, links.
func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", "--", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -a %s %s: %v\n%s", src, dst, err, out)
	}
}

// tree describes files to create: path -> content. A content starting with "->" makes a
// symlink to the rest, a path ending in "/" a directory.
type tree map[string]string

// fixedTime is the mtime of everything makeTree creates, so that `ls -l` output is stable.
var fixedTime = time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)

// makeTree creates the tree under dir (created if needed); every file, symlink and directory
// gets the times fixedTime.
func makeTree(t testing.TB, dir string, files tree) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case strings.HasSuffix(name, "/"):
			err = os.MkdirAll(p, 0o755)
		case strings.HasPrefix(content, "->"):
			err = os.Symlink(strings.TrimPrefix(content, "->"), p)
		default:
			err = os.WriteFile(p, []byte(content), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// Times last, deepest first (creating entries changes a directory's mtime).
	var all []string
	err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		all = append(all, p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := []unix.Timespec{unix.NsecToTimespec(fixedTime.UnixNano()), unix.NsecToTimespec(fixedTime.UnixNano())}
	for i := len(all) - 1; i >= 0; i-- {
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, all[i], ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			t.Fatalf("setting times of %s: %v", all[i], err)
		}
	}
}

// threadRounds is how many rounds a threaded guest program runs: n, or a third of it with
// -short (the arm64 VM, where TCG makes a traced call ~20 times dearer), the same races in
// fewer rounds.
func threadRounds(n int) int {
	if testing.Short() {
		return max(n/3, 1)
	}
	return n
}

// progsDir returns a directory with test/progs/NAME.c built static (NAME) and dynamic
// (NAME.dyn), as test/rootfs/busybox.sh builds the probes: the busybox rootfs's own /progs
// when it has them, else built here with the host's gcc (the busybox rootfs carries the host's
// glibc), for a rootfs cached before NAME.c existed. Bind it into a busybox guest.
func progsDir(t *testing.T, name string) string {
	t.Helper()
	root := rootfs(t, "busybox")
	if _, err := os.Stat(filepath.Join(root, "progs", name+".dyn")); err == nil {
		return filepath.Join(root, "progs")
	}
	dir := t.TempDir()
	src := repoPath(t, "test/progs/"+name+".c")
	for _, m := range []struct{ out, flag string }{{name, "-static"}, {name + ".dyn", ""}} {
		args := []string{"-O2", "-g0", "-Wall", "-Wextra", "-Werror", "-pthread", "-o", filepath.Join(dir, m.out), src}
		if m.flag != "" {
			args = append([]string{m.flag}, args...)
		}
		if out, err := exec.Command("gcc", args...).CombinedOutput(); err != nil {
			missing(t, "cannot build %s (gcc %v): %v\n%s", name, args, err, out)
		}
	}
	return dir
}
