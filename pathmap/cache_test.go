package pathmap

import (
	"fmt"
	"math/rand/v2"
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
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// The lookup cache must never change an answer: every test here compares a
// Mapper made WithCache with an uncached one (whose answers come straight
// from the host, so a fresh one and an old one are the same) after
// changing the host tree in the ways that matter.

// newCached is New with WithCache; the Mapper is closed after the test.
func newCached(t testing.TB, root string, binds []Binding, opts ...Option) *Mapper {
	t.Helper()
	m, err := New(root, binds, nil, append(opts, WithCache())...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if !m.Cached() {
		t.Fatal("WithCache: no cache (inotify unavailable?)")
	}
	return m
}

// lookupOutcome is everything Lookup answers.
type lookupOutcome struct {
	Result
	Err string
}

func outcome(m *Mapper, pr Proc, cwd, p string, f Flags) lookupOutcome {
	r, err := m.Lookup(pr, cwd, p, f)
	return lookupOutcome{Result: r, Err: errName(err)}
}

type cacheProbe struct {
	cwd, p string
	flags  Flags
}

func (p cacheProbe) String() string { return fmt.Sprintf("Lookup(%q, %q, %v)", p.cwd, p.p, p.flags) }

// sameAnswers checks that cached answers every probe exactly like
// uncached; it returns the number of differences.
func sameAnswers(t *testing.T, step string, cached, uncached *Mapper, probes []cacheProbe) int {
	t.Helper()
	// With Proc{}, /proc/thread-self is read by the host thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	bad := 0
	for _, p := range probes {
		want := outcome(uncached, Proc{}, p.cwd, p.p, p.flags)
		got := outcome(cached, Proc{}, p.cwd, p.p, p.flags)
		if diff := cmp.Diff(want, got); diff != "" {
			bad++
			t.Errorf("%s: %v: cached differs from uncached (-uncached +cached):\n%s", step, p, diff)
		}
	}
	return bad
}

var allFlagSets = []Flags{0, Follow, Entry, Follow | WantGuest, WantGuest}

func probesFor(paths []string, cwds ...string) []cacheProbe {
	if len(cwds) == 0 {
		cwds = []string{"/"}
	}
	var ps []cacheProbe
	for _, cwd := range cwds {
		for _, p := range paths {
			for _, f := range allFlagSets {
				ps = append(ps, cacheProbe{cwd, p, f})
			}
		}
	}
	return ps
}

func sh(t *testing.T, script string) {
	t.Helper()
	if out, err := exec.Command("sh", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("sh -c %q: %v\n%s", script, err, out)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestCacheMutations changes a real tree between lookups in every way that
// can change an answer, from this process and from another one, and checks
// after each change that the cached Mapper answers exactly what a fresh
// uncached Mapper answers (and that the change did change some answer, so
// that a stale cache would have been caught).
func TestCacheMutations(t *testing.T) {
	rt := newRealTree(t)
	R, B := rt.root, rt.base
	mkTree(t, R,
		"m/a/b/c/file", "m/a/b/c/sub/", "m/a/b/link -> c", "m/x -> a/b", "m/dir/sub/f",
		"m/abs -> /m/a/b/c", "m/dirlink -> a/b", "m/d2/f", "m/fifo-later",
	)
	cached := newCached(t, R, rt.binds, WithVirtualDir(rt.vdir))
	stale := rt.mapper(t) // uncached: for when New cannot run (rootfs renamed away)
	fresh := func() *Mapper {
		if m, err := New(R, rt.binds, nil, WithVirtualDir(rt.vdir)); err == nil {
			return m
		}
		return stale
	}
	probes := probesFor([]string{
		"/m/a/b/c/file", "/m/a/b/c/file/", "/m/a/b/c", "/m/a/b/c/", "/m/a/b/c/sub/..", "/m/a/b/link/file",
		"/m/a/b/link/", "/m/x/c/file", "/m/x/c/../c/file", "/m/x/", "/m/abs/file", "/m/abs/sub/",
		"/m/new", "/m/new/", "/m/new/x", "/m/new/x/y", "/m/dir/sub/f", "/m/dir/sub/", "/m/dir",
		"/m/dir/", "/m/dirlink/c/file", "/m/a/..", "/m/d2/", "/m/d2/f", "/m/fifo-later/",
		"/usr/bin/sh", "/bin/sh", "/lib/libc.so", "/sdcard/Download/a.txt", "/sdcard/escape/etc/group",
		"/mnt/inner/f", "/a/b/c/f", "/to-sdcard/a.txt", "/etc/passwd", "/libalias/libc.so",
	})
	probes = append(probes, probesFor([]string{"b/c/file", "../a/b/link/file", "x/c/sub/"}, "/m/a", "/m")...)

	// Warm the cache, and check it is used.
	if sameAnswers(t, "initial", cached, fresh(), probes) > 0 {
		t.FailNow()
	}
	sameAnswers(t, "initial, from the cache", cached, fresh(), probes)
	if st := cached.CacheStats(); st.Hits == 0 || st.Entries == 0 {
		t.Fatalf("the cache is not used: %+v", st)
	}

	steps := []struct {
		name    string
		change  func(t *testing.T)
		changes []cacheProbe // an answer each must change (nil: none need to)
	}{
		{"create a missing directory", func(t *testing.T) { must(t, os.Mkdir(R+"/m/new", 0o755)) },
			[]cacheProbe{{"/", "/m/new/..", Follow}}},
		{"create a missing file", func(t *testing.T) { must(t, os.WriteFile(R+"/m/new/x", nil, 0o644)) },
			[]cacheProbe{{"/", "/m/new/x/", Follow}}},
		{"delete a file", func(t *testing.T) { must(t, os.Remove(R+"/m/a/b/c/file")) },
			[]cacheProbe{{"/", "/m/a/b/c/file/", Follow}}},
		{"recreate it as a directory", func(t *testing.T) { must(t, os.Mkdir(R+"/m/a/b/c/file", 0o755)) },
			[]cacheProbe{{"/", "/m/a/b/c/file/..", Follow}}},
		{"replace a directory by a symlink (exchange)", func(t *testing.T) {
			must(t, os.Symlink("a/b", R+"/m/swap"))
			must(t, unix.Renameat2(unix.AT_FDCWD, R+"/m/swap", unix.AT_FDCWD, R+"/m/dir", unix.RENAME_EXCHANGE))
		}, []cacheProbe{{"/", "/m/dir/sub/f", Follow}}},
		{"replace a directory by a symlink (rename over the moved-away name)", func(t *testing.T) {
			must(t, os.Rename(R+"/m/a/b/c", R+"/m/c.old"))
			must(t, os.Symlink("../../d2", R+"/m/tmp-link"))
			must(t, os.Rename(R+"/m/tmp-link", R+"/m/a/b/c"))
		}, []cacheProbe{{"/", "/m/a/b/c/", 0}, {"/", "/m/a/b/link/", 0}}},
		{"retarget a symlink (rm + ln -s)", func(t *testing.T) {
			must(t, os.Remove(R+"/m/x"))
			must(t, os.Symlink("swap", R+"/m/x"))
		}, []cacheProbe{{"/", "/m/x/", 0}}},
		{"retarget a symlink (rename a new one over it)", func(t *testing.T) {
			must(t, os.Symlink("a/b", R+"/m/x.new"))
			must(t, os.Rename(R+"/m/x.new", R+"/m/x"))
		}, []cacheProbe{{"/", "/m/x/", 0}}},
		{"rename a parent directory away", func(t *testing.T) { must(t, os.Rename(R+"/m/a", R+"/m/a.away")) },
			[]cacheProbe{{"/", "/m/dirlink/c/file", Follow}}},
		{"rename it back", func(t *testing.T) { must(t, os.Rename(R+"/m/a.away", R+"/m/a")) },
			[]cacheProbe{{"/", "/m/dirlink/c/file", Follow}}},
		{"chmod 000 an intermediate directory", func(t *testing.T) { must(t, os.Chmod(R+"/m/a", 0)) }, nil},
		{"chmod it back", func(t *testing.T) { must(t, os.Chmod(R+"/m/a", 0o755)) }, nil},
		{"touch and chmod a file", func(t *testing.T) {
			must(t, os.Chtimes(R+"/m/d2/f", time.Now(), time.Now()))
			must(t, os.Chmod(R+"/m/d2/f", 0o600))
		}, nil},
		{"replace a directory by a file", func(t *testing.T) {
			must(t, os.RemoveAll(R+"/m/d2"))
			must(t, os.WriteFile(R+"/m/d2", nil, 0o644))
		}, []cacheProbe{{"/", "/m/d2/", 0}}},
		{"replace a file by a fifo", func(t *testing.T) {
			must(t, os.Remove(R+"/m/fifo-later"))
			must(t, unix.Mkfifo(R+"/m/fifo-later", 0o644))
		}, nil},
		{"another process: delete a directory, put a symlink in its place", func(t *testing.T) {
			sh(t, "rm -rf "+R+"/m/new && ln -s /m/a/b "+R+"/m/new")
		}, []cacheProbe{{"/", "/m/new/", Follow | WantGuest}}},
		{"another process: rename a directory away", func(t *testing.T) {
			sh(t, "mv "+R+"/m/a "+R+"/m/a.away")
		}, []cacheProbe{{"/", "/m/new/", Follow}}},
		{"another process: rename it back and retarget a symlink", func(t *testing.T) {
			sh(t, "mv "+R+"/m/a.away "+R+"/m/a && rm "+R+"/m/abs && ln -s /m/a/b/link "+R+"/m/abs")
		}, []cacheProbe{{"/", "/m/new/", Follow}, {"/", "/m/abs/file", Follow}}},
		{"another process: chmod 000 and back", func(t *testing.T) {
			sh(t, "chmod 000 "+R+"/m/a/b && chmod 755 "+R+"/m/a/b")
		}, nil},
		{"rename the rootfs away", func(t *testing.T) { must(t, os.Rename(R, R+".away")) },
			[]cacheProbe{{"/", "/usr/bin/sh", Follow}}},
		{"rename it back", func(t *testing.T) { must(t, os.Rename(R+".away", R)) },
			[]cacheProbe{{"/", "/usr/bin/sh", Follow}}},
		{"rename an ancestor of the rootfs away", func(t *testing.T) { must(t, os.Rename(B, B+".away")) },
			[]cacheProbe{{"/", "/usr/bin/sh", Follow}}},
		{"rename it back", func(t *testing.T) { must(t, os.Rename(B+".away", B)) },
			[]cacheProbe{{"/", "/usr/bin/sh", Follow}}},
		{"rename a binding's source away", func(t *testing.T) { must(t, os.Rename(B+"/sd", B+"/sd.away")) },
			[]cacheProbe{{"/", "/sdcard/Download/a.txt", Follow}}},
		{"put another directory in its place", func(t *testing.T) { mkTree(t, B, "sd/Download/") },
			[]cacheProbe{{"/", "/sdcard/Download/to-group", Follow}}},
		{"and the original back", func(t *testing.T) {
			must(t, os.RemoveAll(B+"/sd"))
			must(t, os.Rename(B+"/sd.away", B+"/sd"))
		}, []cacheProbe{{"/", "/sdcard/Download/to-group", Follow}}},
		{"another process: replace the rootfs's /usr/lib", func(t *testing.T) {
			sh(t, "mv "+R+"/usr/lib "+R+"/usr/lib.old && mkdir "+R+"/usr/lib && ln -s ../lib.old/libc.so "+R+"/usr/lib/libc.so")
		}, []cacheProbe{{"/", "/lib/libc.so", Follow}}},
	}
	for _, s := range steps {
		before := make([]lookupOutcome, len(s.changes))
		for i, p := range s.changes {
			before[i] = outcome(cached, Proc{}, p.cwd, p.p, p.flags)
		}
		s.change(t)
		u := fresh()
		if sameAnswers(t, s.name, cached, u, probes) > 0 {
			continue
		}
		// Once more: the answers now come from the cache.
		sameAnswers(t, s.name+" (again)", cached, u, probes)
		for i, p := range s.changes {
			if after := outcome(u, Proc{}, p.cwd, p.p, p.flags); after == before[i] {
				t.Errorf("%s: %v did not change (%+v): the step tests nothing", s.name, p, after)
			}
		}
		checkLive(t, s.name, cached, probes, func() *Mapper {
			m, err := New(R, rt.binds, nil, WithVirtualDir(rt.vdir), WithCache())
			if err != nil {
				return nil // the rootfs is away
			}
			return m
		})
		if testing.Verbose() {
			t.Logf("%s: %+v", s.name, cached.CacheStats())
		}
	}
	st := cached.CacheStats()
	t.Logf("%+v", st)
	if st.Invalidations == 0 {
		t.Errorf("no invalidation at all: %+v", st)
	}
}

// checkLive checks that an old cache is as effective as a fresh one after
// changes (none of its directories stuck as unwatchable): once warmed, both
// answer probes with the same number of system calls.
func checkLive(t *testing.T, step string, old *Mapper, probes []cacheProbe, mkFresh func() *Mapper) {
	t.Helper()
	fresh := mkFresh()
	if fresh == nil {
		return
	}
	defer fresh.Close()
	pass := func(m *Mapper) uint64 {
		st0 := m.CacheStats()
		for _, p := range probes {
			m.Lookup(Proc{}, p.cwd, p.p, p.flags)
		}
		st := m.CacheStats()
		return st.Misses + st.Uncached - st0.Misses - st0.Uncached
	}
	pass(fresh)
	pass(fresh)
	pass(old)
	for try := 0; ; try++ {
		r0 := old.CacheStats().Resets + fresh.CacheStats().Resets
		a, b := pass(old), pass(fresh)
		if a == b {
			return
		}
		if r1 := old.CacheStats().Resets + fresh.CacheStats().Resets; r1 == r0 || try > 0 {
			t.Errorf("%s: the cache asks the host %d times for the probes, a fresh one %d", step, a, b)
			return
		}
		// A mount change somewhere emptied a cache meanwhile: again.
		pass(old)
		pass(fresh)
	}
}

// TestCacheRandom makes random changes to a small tree (this process and,
// now and then, another one) and compares random lookups of the cached and
// an uncached Mapper after each. PATHMAP_CACHE_SEED=n picks another run;
// PATHMAP_CACHE_STEPS=n makes it longer.
func TestCacheRandom(t *testing.T) {
	seed := uint64(1)
	if s := os.Getenv("PATHMAP_CACHE_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	steps := 1500
	if testing.Short() {
		steps = 300
	}
	if s := os.Getenv("PATHMAP_CACHE_STEPS"); s != "" {
		steps, _ = strconv.Atoi(s)
	}
	rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	rt := newRealTree(t)
	R := rt.root
	mkTree(t, R, "r/a/b/c", "r/b/", "r/l -> a")
	cached := newCached(t, R, rt.binds, WithVirtualDir(rt.vdir))
	uncached := rt.mapper(t)

	names := []string{"a", "b", "c", "l"}
	comps := []string{"a", "b", "c", "l", "a", "b", ".", "..", "x"}
	targets := []string{"a", "b", "../b", "/r/a/b", "c/", "..", ".", "/r", "nonexistent", "/r/l", "l/a", "/etc/group",
		"/sdcard", "../../usr"}
	randRel := func() string { // a path of 1..3 names below /r
		n := 1 + rng.IntN(3)
		var p []string
		for i := 0; i < n; i++ {
			p = append(p, names[rng.IntN(len(names))])
		}
		return strings.Join(p, "/")
	}
	var log []string
	do := func(desc string, err error) {
		s := desc
		if err != nil {
			s += ": " + errName(err)
		}
		log = append(log, s)
	}
	for step := 0; step < steps; step++ {
		a, b := R+"/r/"+randRel(), R+"/r/"+randRel()
		switch op := rng.IntN(10); op {
		case 0:
			do("mkdir "+a, os.Mkdir(a, 0o755))
		case 1:
			do("create "+a, os.WriteFile(a, nil, 0o644))
		case 2:
			tg := targets[rng.IntN(len(targets))]
			do("symlink "+a+" -> "+tg, os.Symlink(tg, a))
		case 3:
			do("rm -rf "+a, os.RemoveAll(a))
		case 4, 5:
			do("rename "+a+" "+b, os.Rename(a, b))
		case 6:
			do("exchange "+a+" "+b, unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE))
		case 7:
			mode := []os.FileMode{0, 0o755, 0o311, 0o644}[rng.IntN(4)]
			do(fmt.Sprintf("chmod %o %s", mode, a), os.Chmod(a, mode))
		case 8:
			if rng.IntN(8) == 0 {
				script := fmt.Sprintf("mv %s %s 2>/dev/null; mkdir -p %s 2>/dev/null; true", a, b, a)
				do("sh -c "+script, exec.Command("sh", "-c", script).Run())
			}
		case 9:
			if rng.IntN(20) == 0 { // back to a tree with content
				do("reset", os.RemoveAll(R+"/r"))
				mkTree(t, R, "r/a/b/c", "r/b/", "r/l -> a")
			}
		}
		for i := 0; i < 8; i++ {
			n := 1 + rng.IntN(5)
			var parts []string
			for j := 0; j < n; j++ {
				parts = append(parts, comps[rng.IntN(len(comps))])
			}
			p := strings.Join(parts, "/")
			cwd := "/r"
			if rng.IntN(2) == 0 {
				p, cwd = "/r/"+p, "/"
			}
			if rng.IntN(4) == 0 {
				p += "/"
			}
			f := allFlagSets[rng.IntN(len(allFlagSets))]
			want := outcome(uncached, Proc{}, cwd, p, f)
			got := outcome(cached, Proc{}, cwd, p, f)
			if diff := cmp.Diff(want, got); diff != "" {
				if len(log) > 30 {
					log = log[len(log)-30:]
				}
				t.Fatalf("seed %d, step %d: Lookup(%q, %q, %v): cached differs (-uncached +cached):\n%s\nlast changes:\n  %s",
					seed, step, cwd, p, f, diff, strings.Join(log, "\n  "))
			}
		}
	}
	st := cached.CacheStats()
	t.Logf("seed %d, %d steps: %+v", seed, steps, st)
	if st.Hits == 0 || st.Invalidations == 0 {
		t.Errorf("the cache was not exercised: %+v", st)
	}
}

// TestCacheConcurrent looks up from several goroutines while the tree
// changes (for the race detector), then checks the answers once it stops.
func TestCacheConcurrent(t *testing.T) {
	rt := newRealTree(t)
	R := rt.root
	mkTree(t, R, "m/a/b/c/file", "m/x -> a/b")
	cached := newCached(t, R, rt.binds, WithVirtualDir(rt.vdir))
	probes := probesFor([]string{"/m/a/b/c/file", "/m/x/c/file", "/m/a/b/c/", "/bin/sh", "/m/y/c"})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, p := range probes {
					cached.Lookup(Proc{}, p.cwd, p.p, p.flags)
				}
			}
		}()
	}
	for i := 0; i < 200; i++ {
		os.Rename(R+"/m/a", R+"/m/y")
		os.Rename(R+"/m/y", R+"/m/a")
		os.Remove(R + "/m/x")
		os.Symlink([]string{"a/b", "y"}[i%2], R+"/m/x")
	}
	close(stop)
	wg.Wait()
	sameAnswers(t, "after the changes", cached, rt.mapper(t), probes)
}

// TestCacheProc: nothing below /proc is cached. The host's /proc/self and
// /proc/thread-self (Proc{} makes the walk read them) name whoever reads
// them, and a process's directory vanishes when it is reaped, without any
// inotify event: a cached answer would be wrong.
func TestCacheProc(t *testing.T) {
	for _, tc := range []struct {
		name  string
		root  string
		binds []Binding
	}{
		{"rootfs /", "/", nil},
		{"/proc bound", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, binds := tc.root, tc.binds
			if root == "" {
				rt := newRealTree(t)
				root, binds = rt.root, rt.binds
			}
			cached := newCached(t, root, binds)
			uncached, err := New(root, binds, nil)
			if err != nil {
				t.Fatal(err)
			}
			// thread-self from two threads.
			tids := make([]string, 2)
			hosts := make([]string, 2)
			for i := range tids {
				done := make(chan struct{})
				go func() {
					defer close(done)
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					for j := 0; j < 3; j++ { // the second and third from the cache, if it were
						hosts[i], _ = cached.Resolve(Proc{}, "/", "/proc/thread-self/stat", true)
					}
					tids[i] = strconv.Itoa(unix.Gettid())
				}()
				<-done
			}
			for i := range tids {
				want := fmt.Sprintf("/proc/%d/task/%s/stat", os.Getpid(), tids[i])
				if hosts[i] != want {
					t.Errorf("thread %s: /proc/thread-self/stat -> %q, want %q", tids[i], hosts[i], want)
				}
			}
			// self for two tracee pids.
			for _, pid := range []int{os.Getpid(), os.Getppid()} {
				pr := Proc{Pid: pid}
				for j := 0; j < 2; j++ {
					r1, e1 := cached.Lookup(pr, "/", "/proc/self/status", Follow)
					r2, e2 := uncached.Lookup(pr, "/", "/proc/self/status", Follow)
					if r1 != r2 || e1 != e2 || r1.Host != fmt.Sprintf("/proc/%d/status", pid) {
						t.Errorf("pid %d: /proc/self/status: cached %+v %v, uncached %+v %v", pid, r1, e1, r2, e2)
					}
				}
			}
			// A process's directory before and after it is reaped.
			cmd := exec.Command("sleep", "60")
			must(t, cmd.Start())
			probes := probesFor([]string{fmt.Sprintf("/proc/%d/fdinfo/0", cmd.Process.Pid),
				fmt.Sprintf("/proc/%d/task/%d/", cmd.Process.Pid, cmd.Process.Pid)})
			sameAnswers(t, "child running", cached, uncached, probes)
			sameAnswers(t, "child running", cached, uncached, probes)
			cmd.Process.Kill()
			cmd.Wait()
			if sameAnswers(t, "child reaped", cached, uncached, probes) == 0 {
				if _, err := uncached.Resolve(Proc{}, "/", probes[0].p, true); err != syscall.ENOENT {
					t.Errorf("%s after the child is reaped: %v, want ENOENT", probes[0].p, err)
				}
			}
			// Nor /dev/pts, /sys.
			cached.Resolve(Proc{}, "/", "/dev/pts/ptmx", true)
			cached.Resolve(Proc{}, "/", "/sys/kernel/mm/x", true)
			c := cached.cache
			c.mu.Lock()
			defer c.mu.Unlock()
			for k := range c.entries {
				for _, pfx := range []string{"/proc/", "/dev/pts/", "/sys/"} {
					if strings.HasPrefix(k, pfx) {
						t.Errorf("%q is cached", k)
					}
				}
			}
			for _, d := range []string{"/proc", "/dev/pts", "/sys"} {
				if n := c.dirs[d]; n != nil && n.cacheable {
					t.Errorf("directory %s holds cached entries", d)
				}
			}
		})
	}
}

// TestCacheLimits: with tiny limits the cache empties itself again and
// again, and still answers right.
func TestCacheLimits(t *testing.T) {
	rt := newRealTree(t)
	cached := newCached(t, rt.root, rt.binds, WithVirtualDir(rt.vdir), withCacheLimits(6, 10))
	uncached := rt.mapper(t)
	var paths []string
	for i, p := range oracleProbes(rt) {
		// -short (the arm64 VM, where every reset's inotify and fd work is
		// ~20 times dearer under TCG): a quarter of the paths, resets still
		// happening many times over.
		if testing.Short() && i%4 != 0 {
			continue
		}
		if p.Cwd == "" && !strings.Contains(p.Path, "FD") && !strings.HasPrefix(p.Path, "/proc") {
			paths = append(paths, p.Path)
		}
	}
	probes := probesFor(paths)
	sameAnswers(t, "first", cached, uncached, probes)
	sameAnswers(t, "second", cached, uncached, probes)
	st := cached.CacheStats()
	if st.Resets == 0 || st.Dirs > 6+20 || st.Entries > 10+1 {
		t.Errorf("limits not applied: %+v", st)
	}
	t.Logf("%+v", st)
}

// TestCacheClose: a closed Mapper keeps working, without its cache.
func TestCacheClose(t *testing.T) {
	rt := newRealTree(t)
	cached := newCached(t, rt.root, rt.binds, WithVirtualDir(rt.vdir))
	probes := probesFor([]string{"/bin/sh", "/usr/lib/libc.so", "/sdcard/Download/a.txt"})
	sameAnswers(t, "open", cached, rt.mapper(t), probes)
	cached.Close()
	if cached.Cached() {
		t.Error("Cached() after Close")
	}
	must(t, os.Remove(rt.root+"/bin"))
	sameAnswers(t, "closed", cached, rt.mapper(t), probes)
	cached.Close()
	// Other FS: WithCache is ignored.
	m, err := New("/r", nil, nullFS{}, WithCache())
	if err != nil || m.Cached() {
		t.Errorf("WithCache with a custom FS: %v, cached %v", err, m.Cached())
	}
}

const childEnv = "PATHMAP_CACHE_CHILD"

// runChild runs test name of this binary in a new process: through
// unshare(1) for a new mount namespace, or as another user.
func runChild(t *testing.T, name, arg string, cmdPrefix []string, cred *syscall.Credential, bin string) {
	t.Helper()
	if bin == "" {
		bin = os.Args[0]
	}
	args := append(append([]string(nil), cmdPrefix...), bin, "-test.run=^"+name+"$", "-test.v", "-test.count=1")
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), childEnv+"="+arg)
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+name) {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	t.Logf("%s", out)
}

// TestCacheMounts: a mount or unmount anywhere is seen (mountinfo poll),
// and empties the cache. Run in a private mount namespace.
func TestCacheMounts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (mount namespaces)")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare(1)")
	}
	if err := exec.Command("unshare", "-m", "--propagation", "private", "true").Run(); err != nil {
		t.Skipf("no mount namespaces here: %v", err)
	}
	runChild(t, "TestCacheMountsChild", "mounts", []string{"unshare", "-m", "--propagation", "private"}, nil, "")
}

func TestCacheMountsChild(t *testing.T) {
	if os.Getenv(childEnv) != "mounts" {
		t.Skip("run by TestCacheMounts")
	}
	rt := newRealTree(t)
	R := rt.root
	mkTree(t, R, "m/a/b/c/file", "m/x -> a/b", "other/b/c/other-file", "other/b/to-file -> c/other-file")
	cached := newCached(t, R, rt.binds, WithVirtualDir(rt.vdir))
	uncached := rt.mapper(t)
	probes := probesFor([]string{"/m/a/b/c/file", "/m/x/c/file", "/m/a/b/to-file", "/m/a/b/c/", "/m/a/b/c/other-file",
		"/m/x/to-file", "/usr/bin/sh", "/m/a/new"})
	step := func(name string) {
		sameAnswers(t, name, cached, uncached, probes)
		sameAnswers(t, name+" (again)", cached, uncached, probes)
	}
	step("initial")
	must(t, unix.Mount(R+"/other", R+"/m/a", "", unix.MS_BIND, ""))
	step("bind mount over an intermediate directory")
	must(t, unix.Unmount(R+"/m/a", 0))
	step("unmounted")
	must(t, unix.Mount("tmpfs", R+"/m/a/b", "tmpfs", 0, ""))
	step("tmpfs over an intermediate directory")
	must(t, os.WriteFile(R+"/m/a/new", nil, 0o644))
	must(t, os.Mkdir(R+"/m/a/b/c", 0o755))
	step("changes around and inside the tmpfs")
	must(t, unix.Unmount(R+"/m/a/b", 0))
	step("tmpfs unmounted")
	if st := cached.CacheStats(); st.Resets < 4 {
		t.Errorf("mount changes not seen: %+v", st)
	}
}

// TestCacheNotRoot: as an ordinary user, permission changes turn lookups
// into EACCES and back; the cache must follow (inotify IN_ATTRIB).
func TestCacheNotRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a child as another user")
	}
	dir, err := os.MkdirTemp("", "pathmap-notroot-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "pathmap.test")
	b, err := os.ReadFile(os.Args[0])
	must(t, err)
	must(t, os.WriteFile(bin, b, 0o755))
	must(t, os.Chmod(dir, 0o755))
	must(t, os.Chown(dir, 65534, 65534))
	runChild(t, "TestCacheNotRootChild", dir, nil, &syscall.Credential{Uid: 65534, Gid: 65534}, bin)
	runChild(t, "TestCacheSearchChild", dir, nil, &syscall.Credential{Uid: 65534, Gid: 65534}, bin)
}

// TestCacheSearchChild: the search of a directory that the walk checks
// itself ("." and "..") is remembered (no system call the second time) and
// forgotten at the first lookup after a chmod of the directory or of an
// ancestor, even when that check is the walk's first use of the cache.
func TestCacheSearchChild(t *testing.T) {
	dir := os.Getenv(childEnv)
	if dir == "" || os.Geteuid() == 0 {
		t.Skip("run by TestCacheNotRoot")
	}
	R := filepath.Join(dir, "s", "root")
	mkTree(t, R, "a/b/f")
	m := newCached(t, R, nil)
	pr := Proc{Pid: os.Getpid()}
	dot := func(step string, want error) {
		t.Helper()
		before := m.CacheStats()
		_, err := m.Lookup(pr, "/a/b", ".", Follow)
		if err != want {
			t.Fatalf("%s: Lookup(\".\") in /a/b: %v, want %v", step, err, want)
		}
		if st := m.CacheStats(); step == "again" && (st.Misses+st.Uncached != before.Misses+before.Uncached || st.Hits == before.Hits) {
			t.Errorf("%s: the search was not remembered: %+v", step, m.CacheStats())
		}
	}
	dot("first", nil)
	dot("again", nil)
	for _, s := range []struct {
		path string
		mode os.FileMode
		want error
	}{
		{R + "/a/b", 0o644, syscall.EACCES}, {R + "/a/b", 0o755, nil},
		{R + "/a", 0o600, syscall.EACCES}, {R + "/a", 0o755, nil},
		{R, 0o644, syscall.EACCES}, {R, 0o755, nil},
	} {
		must(t, os.Chmod(s.path, s.mode))
		dot(fmt.Sprintf("chmod %o %s", s.mode, s.path), s.want)
		if s.want == nil && s.path != R {
			// The answer made before the chmod's own event was read
			// is dropped with it: the next lookup asks again. (Below
			// the rootfs's own directory, which the cache keeps
			// chained, a node that could not be watched while it was
			// unsearchable stays unwatched: correct, not remembered.)
			dot("settle", nil)
			dot("again", nil)
		}
	}
}

func TestCacheNotRootChild(t *testing.T) {
	dir := os.Getenv(childEnv)
	if dir == "" || os.Geteuid() == 0 {
		t.Skip("run by TestCacheNotRoot")
	}
	base := filepath.Join(dir, "t")
	R := base + "/root"
	mkTree(t, R, "usr/bin/sh", "m/a/b/c/file", "m/x -> a/b", "m/a/b/l -> c/file")
	binds := []Binding{{Host: base + "/sd", Guest: "/sdcard"}}
	mkTree(t, base, "sd/d/f")
	cached := newCached(t, R, binds)
	uncached, err := New(R, binds, nil)
	must(t, err)
	probes := probesFor([]string{"/m/a/b/c/file", "/m/x/c/file", "/m/a/b/l", "/m/a/b/c/", "/m/a/b/", "/m/a",
		"/usr/bin/sh", "/sdcard/d/f", "/m/a/b/c/missing",
		// "." and "..": the walk checks the search of their directory
		// (remembered by the cache: cache.search).
		"/m/a/b/c/.", "/m/a/b/c/..", "/m/a/b/./c/file", "/m/a/b/c/../l", "/sdcard/d/.", "/m/."})
	probes = append(probes, probesFor([]string{"c/file", "l", "c/.", "c/..", "."}, "/m/a/b")...)
	denied := false
	for _, s := range []struct {
		path string
		mode os.FileMode
	}{
		{"", 0}, {R + "/m/a", 0}, {R + "/m/a", 0o755}, {R + "/m/a/b", 0o644}, {R + "/m/a/b", 0o311},
		{R + "/m/a/b", 0o755}, {R + "/m/a/b/c", 0o600}, {R + "/m/a/b/c", 0o755}, {R + "/m", 0o111},
		{R + "/m", 0o755}, {R, 0o700}, {R, 0}, {R, 0o755}, {base, 0}, {base, 0o755},
		{base + "/sd/d", 0o644}, {base + "/sd/d", 0o755},
	} {
		name := "initial"
		if s.path != "" {
			name = fmt.Sprintf("chmod %o %s", s.mode, s.path)
			must(t, os.Chmod(s.path, s.mode))
		}
		sameAnswers(t, name, cached, uncached, probes)
		sameAnswers(t, name+" (again)", cached, uncached, probes)
		if _, err := uncached.Resolve(Proc{}, "/", "/m/a/b/c/file", true); err == syscall.EACCES {
			denied = true
		}
	}
	if !denied {
		t.Error("no EACCES seen: the test tests nothing")
	}
	// A parent that cannot be watched (write and search, no read): the
	// rootfs in it is still watched, and renaming the rootfs away and back
	// is seen through the rootfs's own watch (IN_MOVE_SELF), and so is
	// replacing it by another tree.
	must(t, os.Chmod(base, 0o311))
	sameAnswers(t, "parent 0311", cached, uncached, probes)
	sameAnswers(t, "parent 0311 (again)", cached, uncached, probes)
	if st := cached.CacheStats(); st.Entries == 0 {
		t.Errorf("nothing cached below an unreadable parent: %+v", st)
	}
	for _, s := range []struct{ name, script string }{
		{"rootfs renamed away", "mv root root.away"},
		{"another rootfs in its place", "mkdir -p root/m/a/b/c root/usr/bin && ln -s c root/m/a/b/l && ln -s /m/a/b root/m/x"},
		{"the original back", "rm -rf root && mv root.away root"},
		{"its /m renamed away", "mv root/m root/m.away"},
		{"and back", "mv root/m.away root/m"},
	} {
		sh(t, "cd "+base+" && "+s.script)
		sameAnswers(t, s.name, cached, uncached, probes)
		sameAnswers(t, s.name+" (again)", cached, uncached, probes)
	}
	must(t, os.Chmod(base, 0o755))
	t.Logf("%+v", cached.CacheStats())
}

// TestCacheEquivalentOnRealTree runs the fixed real-tree expectations and
// the oracle's probe paths through both Mappers.
func TestCacheEquivalentOnRealTree(t *testing.T) {
	rt := newRealTree(t)
	cached := newCached(t, rt.root, rt.binds, WithVirtualDir(rt.vdir))
	uncached := rt.mapper(t)
	var probes []cacheProbe
	for _, p := range oracleProbes(rt) {
		if strings.Contains(p.Path, "FD") {
			continue
		}
		cwd := p.Cwd
		if cwd == "" {
			cwd = "/"
		}
		for _, f := range allFlagSets {
			probes = append(probes, cacheProbe{cwd, p.Path, f})
		}
	}
	for i := 0; i < 3; i++ {
		sameAnswers(t, fmt.Sprintf("pass %d", i), cached, uncached, probes)
	}
	t.Logf("%d probes: %+v", len(probes), cached.CacheStats())
}

// TestCacheFoldEvents: an event about a name also drops the names a
// case-insensitive directory (ext4/f2fs/tmpfs casefold, XFS ASCII-CI) would
// take for it, and everything on filesystems with other aliases (vfat).
// The kernel here may have no case-insensitive filesystem: the events are
// made up and fed to the cache directly.
func TestCacheFoldEvents(t *testing.T) {
	rt := newRealTree(t)
	R := rt.root
	mkTree(t, R, "m/ci/Readme", "m/ci/a", "m/ci/sub/f", "m/ci/SubDir/f", "m/ci/subdir/g")
	cached := newCached(t, R, rt.binds, WithVirtualDir(rt.vdir))
	c := cached.cache
	names := []string{"readme", "README", "Readme", "a", "other", "é", "K", "\u212a", "sub/f", "SubDir/f", "subdir/g"}
	fill := func() {
		for _, n := range names {
			cached.Resolve(Proc{}, "/", "/m/ci/"+n, true)
		}
	}
	cachedNames := func() []string {
		c.mu.Lock()
		defer c.mu.Unlock()
		var got []string
		for _, n := range names {
			if c.entries[R+"/m/ci/"+n] != nil {
				got = append(got, n)
			}
		}
		return got
	}
	event := func(name string, mask uint32) {
		c.mu.Lock()
		defer c.mu.Unlock()
		d := c.dirs[R+"/m/ci"]
		if d == nil || d.wd < 0 {
			t.Fatal("m/ci is not watched")
		}
		n := (len(name) + 1 + 15) / 16 * 16
		buf := make([]byte, unix.SizeofInotifyEvent+n)
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[0]))
		ev.Wd, ev.Mask, ev.Len = d.wd, mask, uint32(n)
		copy(buf[unix.SizeofInotifyEvent:], name)
		c.handle(buf)
	}
	setFoldAll := func(v bool) {
		fill()
		c.mu.Lock()
		defer c.mu.Unlock()
		d := c.dirs[R+"/m/ci"]
		if d == nil {
			t.Fatal("m/ci is not watched")
		}
		d.foldAll = v
	}
	for _, tc := range []struct {
		event   string
		foldAll bool
		want    []string // still cached after the event
	}{
		{"README", false, []string{"a", "other", "K", "sub/f", "SubDir/f", "subdir/g"}},
		{"readme", false, []string{"a", "other", "K", "sub/f", "SubDir/f", "subdir/g"}},
		{"k", false, []string{"readme", "README", "Readme", "a", "other", "sub/f", "SubDir/f", "subdir/g"}},
		{"SUBDIR", false, []string{"readme", "README", "Readme", "a", "other", "K", "sub/f"}},
		{"Sub", false, []string{"readme", "README", "Readme", "a", "other", "K", "SubDir/f", "subdir/g"}},
		{"é", false, nil},
		{"zzz", true, nil},
		{"zzz", false, []string{"readme", "README", "Readme", "a", "other", "K", "sub/f", "SubDir/f", "subdir/g"}},
	} {
		setFoldAll(tc.foldAll)
		fill()
		fill()
		if got := cachedNames(); len(got) != len(names) {
			t.Fatalf("before %q: cached %q, want all of %q", tc.event, got, names)
		}
		event(tc.event, unix.IN_CREATE)
		if diff := cmp.Diff(tc.want, cachedNames()); diff != "" {
			t.Errorf("after an event about %q (foldAll %v): cached names (-want +got):\n%s", tc.event, tc.foldAll, diff)
		}
	}
	setFoldAll(false)
	// And the answers are still right.
	sameAnswers(t, "after the made-up events", cached, rt.mapper(t), probesFor(names, "/m/ci"))
}

// TestCacheBatch: the lookups of one batch check for changes once; a new
// batch checks again and sees a change made between the two.
func TestCacheBatch(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(root+"/a/b", 0o755); err != nil {
		t.Fatal(err)
	}
	m := newCached(t, root, nil)
	look := func(b *Batch, p string) string {
		r, err := m.Lookup(Proc{Batch: b}, "/", p, Follow)
		if err != nil {
			t.Fatalf("Lookup(%s): %v", p, err)
		}
		return r.Host
	}
	look(nil, "/a/b/c") // fill the cache
	syncs := m.CacheStats().Syncs
	var b Batch
	look(&b, "/a/b/c")
	look(&b, "/a/b/d")
	if n := m.CacheStats().Syncs - syncs; n != 1 {
		t.Errorf("two lookups in one batch: %d checks for changes, want 1", n)
	}
	// b becomes a symlink to x: what the cache knew of b is stale.
	if err := os.Rename(root+"/a/b", root+"/a/x"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("x", root+"/a/b"); err != nil {
		t.Fatal(err)
	}
	if got, want := look(&Batch{}, "/a/b/c"), root+"/a/x/c"; got != want {
		t.Errorf("a new batch after a change: %q, want %q", got, want)
	}
}

// TestCacheStickyDir: a sticky, world-writable directory (a /tmp) under a watched parent is
// watched without IN_ATTRIB (whose cost is a walk over every name the kernel caches in it),
// the others with it; a change of its own attributes is still seen, through its parent's
// watch, and drops what the cache holds below it.
func TestCacheStickyDir(t *testing.T) {
	root := t.TempDir()
	tmp := filepath.Join(root, "tmp")
	must(t, os.MkdirAll(filepath.Join(tmp, "d"), 0o755))
	must(t, unix.Chmod(tmp, 0o1777)) // os.Chmod takes the sticky bit as os.ModeSticky
	must(t, os.WriteFile(filepath.Join(tmp, "d", "f"), []byte("f"), 0o644))
	m := newCached(t, root, nil)
	if _, err := m.Lookup(Proc{}, "/", "/tmp/d/f", Follow); err != nil {
		t.Fatal(err)
	}
	masks := watchMasks(t, m.cache.ifd)
	for _, c := range []struct {
		path   string
		attrib bool
	}{{root, true}, {tmp, false}, {filepath.Join(tmp, "d"), true}} {
		var st unix.Stat_t
		must(t, unix.Stat(c.path, &st))
		mask, ok := masks[st.Ino]
		if !ok {
			t.Errorf("%s is not watched (watches: %v)", c.path, masks)
			continue
		}
		if got := mask&unix.IN_ATTRIB != 0; got != c.attrib {
			t.Errorf("%s: watch mask %#x, IN_ATTRIB %v, want %v", c.path, mask, got, c.attrib)
		}
	}
	node := func() *dirNode {
		m.cache.mu.Lock()
		defer m.cache.mu.Unlock()
		return m.cache.dirs[filepath.Join(tmp, "d")]
	}
	before := node()
	if before == nil {
		t.Fatal("no node for /tmp/d")
	}
	must(t, unix.Chmod(tmp, 0o1770))
	if _, err := m.Lookup(Proc{}, "/", "/tmp/d/f", Follow); err != nil {
		t.Fatal(err)
	}
	// The change was seen if the lookup after it made /tmp/d's node again.
	if node() == before {
		t.Errorf("chmod of the sticky directory was not seen: the node below it was kept")
	}
}

// watchMasks reads the watches of inotify descriptor fd from /proc/self/fdinfo: inode -> mask.
func watchMasks(t *testing.T, fd int) map[uint64]uint32 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/fdinfo/" + strconv.Itoa(fd))
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint64]uint32{}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "inotify ") {
			continue
		}
		var ino uint64
		var mask uint32
		for _, f := range strings.Fields(line) {
			if v, ok := strings.CutPrefix(f, "ino:"); ok {
				ino, _ = strconv.ParseUint(v, 16, 64)
			}
			if v, ok := strings.CutPrefix(f, "mask:"); ok {
				m, _ := strconv.ParseUint(v, 16, 32)
				mask = uint32(m)
			}
		}
		out[ino] = mask
	}
	return out
}
