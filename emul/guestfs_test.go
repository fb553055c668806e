package emul

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/droidroot/droidroot/pathmap"
	"github.com/droidroot/droidroot/seccomp"
	"github.com/droidroot/droidroot/tracer"
	tt "github.com/droidroot/droidroot/tracer/tracertest"
	"golang.org/x/sys/unix"
)

// guestFS is a small guest tree for handler tests: a rootfs and one bind
// built in a fresh temporary directory, and the Mapper of that view.
//
//	/etc/hostname            "guest\n"
//	/dir/file                "data"
//	/dir/sub/
//	/link -> /dir            absolute symlink (guest path)
//	/rel -> dir/file
//	/escape -> ../../../../etc/hostname  (clamped at the guest root)
//	/dangling -> /nowhere
//	/loop -> loop
//	/mnt/                    bind of HOST/bind: inside "in", up -> ../etc/hostname
//	/proc/                   bind of the host's /proc
//	/tmp/
type guestFS struct {
	root, bind string
	binds      []pathmap.Binding
	m          *pathmap.Mapper
}

func newGuestFS(t *testing.T) *guestFS {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	g := &guestFS{root: filepath.Join(base, "root"), bind: filepath.Join(base, "bind")}
	for _, d := range []string{"etc", "dir/sub", "mnt", "proc", "tmp"} {
		mustMkdir(t, filepath.Join(g.root, d))
	}
	mustMkdir(t, g.bind)
	mustWrite(t, filepath.Join(g.root, "etc/hostname"), "guest\n")
	mustWrite(t, filepath.Join(g.root, "dir/file"), "data")
	mustWrite(t, filepath.Join(g.bind, "inside"), "in")
	for link, target := range map[string]string{
		"root/link":     "/dir",
		"root/rel":      "dir/file",
		"root/escape":   "../../../../etc/hostname",
		"root/dangling": "/nowhere",
		"root/loop":     "loop",
		"bind/up":       "../etc/hostname",
	} {
		if err := os.Symlink(target, filepath.Join(base, link)); err != nil {
			t.Fatal(err)
		}
	}
	g.binds = []pathmap.Binding{{Host: g.bind, Guest: "/mnt"}, {Host: "/proc", Guest: "/proc"}}
	g.m, err = pathmap.New(g.root, g.binds, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.m.Close() })
	return g
}

// addBind binds host at guest in g (the mount point made in the rootfs: a
// directory, or an empty file for a file), for the kernel's run and for
// droidroot's mapper alike.
func (g *guestFS) addBind(t *testing.T, host, guest string) {
	t.Helper()
	if st, err := os.Stat(host); err == nil && !st.IsDir() {
		mustWrite(t, filepath.Join(g.root, guest), "")
	} else {
		mustMkdir(t, filepath.Join(g.root, guest))
	}
	g.binds = append(g.binds, pathmap.Binding{Host: host, Guest: guest})
	m, err := pathmap.New(g.root, g.binds, nil)
	if err != nil {
		t.Fatal(err)
	}
	g.m.Close()
	g.m = m
}

func mustMkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t *testing.T, p, data string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// run runs steps in g under the handler table of cfg, from guest cwd.
func (g *guestFS) run(t *testing.T, cfg Config, cwd string, steps ...tt.Step) *tt.Result {
	t.Helper()
	return g.runWith(t, g.m, cfg, cwd, steps...)
}

// runCached is run with a mapper that has droidroot's lookup cache, which
// pins paths (issue 18) and so lets the tracer answer stat calls itself
// (emulStat).
func (g *guestFS) runCached(t *testing.T, cfg Config, cwd string, steps ...tt.Step) *tt.Result {
	t.Helper()
	m, err := pathmap.New(g.root, g.binds, nil, pathmap.WithCache())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	return g.runWith(t, m, cfg, cwd, steps...)
}

func (g *guestFS) runWith(t *testing.T, m *pathmap.Mapper, cfg Config, cwd string, steps ...tt.Step) *tt.Result {
	t.Helper()
	em := New(cfg)
	return tt.Run(t, tt.Options{Table: em.Table, State: em, Mapper: m, Cwd: cwd, Android: cfg.Android, Creds: InitialCreds(cfg)}, steps...)
}

// oracle runs steps in g's view made by the kernel (chroot, bind mounts).
func (g *guestFS) oracle(t *testing.T, cwd string, steps ...tt.Step) []tt.StepResult {
	t.Helper()
	return tt.Oracle(t, tt.OracleOptions{Root: g.root, Binds: g.binds, Cwd: cwd}, steps...)
}

// cmpHow says how a step's result is compared with the kernel's.
type cmpHow int

const (
	cmpRet  cmpHow = iota // the result exactly
	cmpSign               // failure and errno exactly; any success (an fd)
	cmpNone               // not compared (kcase.check judges droidroot's result alone)
)

// kcase is one step of a comparison with the kernel.
type kcase struct {
	name string
	step tt.Step
	how  cmpHow
	// mem lists buffer arguments that must match too; stat lists stat
	// buffers whose mode and size must match.
	mem, stat []int
	// check, when set, compares more (g: droidroot's, w: the kernel's).
	check func(t *testing.T, g, w tt.StepResult)
}

// againstKernel runs the cases (in order, as one child) in a fresh guestFS
// under cfg's table, and in another fresh one under the kernel's own view,
// and compares every step.
func againstKernel(t *testing.T, cfg Config, cwd string, cases []kcase) {
	t.Helper()
	againstKernelIn(t, cfg, cwd, nil, cases)
}

// againstKernelCached is againstKernel with droidroot's lookup cache
// (runCached): the tracer's answers kept while the cache's watches show
// nothing changed, and pinned paths.
func againstKernelCached(t *testing.T, cfg Config, cwd string, cases []kcase) {
	t.Helper()
	againstKernelWith(t, (*guestFS).runCached, cfg, cwd, nil, cases)
}

// againstKernelIn is againstKernel with setup run on each guestFS first.
func againstKernelIn(t *testing.T, cfg Config, cwd string, setup func(g *guestFS), cases []kcase) {
	t.Helper()
	againstKernelWith(t, (*guestFS).run, cfg, cwd, setup, cases)
}

// againstKernelWith is againstKernelIn with droidroot's run made by run.
func againstKernelWith(t *testing.T, run func(*guestFS, *testing.T, Config, string, ...tt.Step) *tt.Result, cfg Config, cwd string, setup func(g *guestFS), cases []kcase) {
	t.Helper()
	var steps []tt.Step
	for _, c := range cases {
		if !tt.Has(c.step.Name) {
			t.Fatalf("%s: no %s here: leave it out on this architecture", c.name, c.step.Name)
		}
		steps = append(steps, c.step)
	}
	gt, gk := newGuestFS(t), newGuestFS(t)
	if setup != nil {
		setup(gt)
		setup(gk)
	}
	got := run(gt, t, cfg, cwd, steps...)
	want := gk.oracle(t, cwd, steps...)
	for k, c := range cases {
		g, w := got.Steps[k], want[k]
		same := g.Ret == w.Ret
		switch c.how {
		case cmpSign:
			same = g.Ret >= 0 && w.Ret >= 0 || g.Ret == w.Ret
		case cmpNone:
			same = true
		}
		if !same {
			t.Errorf("%s (step %d, %s): droidroot %d (%v), kernel %d (%v)", c.name, k, c.step.Name, g.Ret, g.Errno(), w.Ret, w.Errno())
			continue
		}
		for _, i := range c.mem {
			if !bytes.Equal(g.Mem[i], w.Mem[i]) {
				t.Errorf("%s (step %d): buffer %d: droidroot %q, kernel %q", c.name, k, i, g.Mem[i], w.Mem[i])
			}
		}
		if c.check != nil {
			c.check(t, g, w)
		}
		for _, i := range c.stat {
			if gm, wm := statModeSize(g.Mem[i]), statModeSize(w.Mem[i]); gm != wm {
				t.Errorf("%s (step %d): stat mode/size: droidroot %v, kernel %v", c.name, k, gm, wm)
			}
		}
	}
}

// statModeSize returns st_mode and st_size of a native struct stat.
func statModeSize(b []byte) [2]uint64 {
	if len(b) < tracer.StatSizeOff+8 {
		return [2]uint64{}
	}
	return [2]uint64{uint64(binary.LittleEndian.Uint32(b[tracer.StatModeOff:])), binary.LittleEndian.Uint64(b[tracer.StatSizeOff:])}
}

// statBufSize is larger than struct stat on every architecture.
const statBufSize = 256

// kernelLacks reports whether the running kernel has no syscall name, one of the recent
// calls droidroot emulates (ENOSYS for a call with a bad fd and bad flags, which a kernel
// that has it refuses otherwise): fchmodat2 came in Linux 6.6, and the arm64 test VM runs
// 6.1. Other names are taken as present (no call is made).
func kernelLacks(name string) bool {
	switch name {
	case "fchmodat2", "faccessat2", "openat2", "close_range":
	default:
		return false
	}
	nr, ok := seccomp.NativeABI(runtime.GOARCH).Nr(name)
	if !ok {
		return true
	}
	_, _, errno := unix.Syscall6(uintptr(nr), ^uintptr(0), 0, 0, 0x8000_0000, 0, 0)
	return errno == unix.ENOSYS
}

// withoutMissingCalls replaces the cases of the calls the running kernel lacks by a call
// every kernel has (their steps keep their index): the kernel cannot be the oracle of a
// call it does not have, which droidroot may emulate.
func withoutMissingCalls(cases []kcase) []kcase {
	out := append([]kcase(nil), cases...)
	for i, c := range out {
		if kernelLacks(c.step.Name) {
			out[i] = kcase{name: c.name + " (not in this kernel)", step: tt.Call("getpid"), how: cmpSign}
		}
	}
	return out
}
