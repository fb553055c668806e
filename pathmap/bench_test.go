package pathmap

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func benchTree(b *testing.B, opts ...Option) (*realTree, *Mapper) {
	b.Helper()
	rt := newRealTree(b)
	mkTree(b, rt.root,
		"usr/share/doc/pkg/sub/file",
		"usr/lib/x86_64-linux-gnu/pkg/sub/file",
	)
	m, err := New(rt.root, rt.binds, nil, append(opts, WithVirtualDir(rt.vdir))...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	return rt, m
}

func benchResolve(b *testing.B, p string, follow bool, opts ...Option) {
	_, m := benchTree(b, opts...)
	if _, err := m.Resolve(Proc{}, "/", p, follow); err != nil {
		b.Fatal(err)
	}
	st0 := m.CacheStats()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := m.Resolve(Proc{}, "/", p, follow); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportSyscalls(b, m, st0)
}

// reportSyscalls reports the system calls per lookup of a cached Mapper,
// as the cache counts them (it makes every system call of the walk).
func reportSyscalls(b *testing.B, m *Mapper, st0 CacheStats) {
	if st := m.CacheStats(); st.Enabled {
		b.ReportMetric(float64(st.Syscalls-st0.Syscalls)/float64(b.N), "syscalls/op")
		b.ReportMetric(float64(st.Hits-st0.Hits)/float64(b.N), "hits/op")
	}
}

// A 6-component path of plain directories, final followed: 6 readlink(2).
func BenchmarkResolve6(b *testing.B) { benchResolve(b, "/usr/share/doc/pkg/sub/file", true) }

// The same unfollowed (lstat, unlink, ...): the last lookup is the kernel's.
func BenchmarkResolve6NoFollow(b *testing.B) { benchResolve(b, "/usr/share/doc/pkg/sub/file", false) }

// Merged /usr: the first component is a symlink (lib -> /usr/lib).
func BenchmarkResolve6Symlink(b *testing.B) {
	benchResolve(b, "/lib/x86_64-linux-gnu/pkg/sub/file", true)
}

// The same with the lookup cache: one epoll_pwait(2) that finds nothing.
func BenchmarkResolve6Cached(b *testing.B) {
	benchResolve(b, "/usr/share/doc/pkg/sub/file", true, WithCache())
}

func BenchmarkResolve6SymlinkCached(b *testing.B) {
	benchResolve(b, "/lib/x86_64-linux-gnu/pkg/sub/file", true, WithCache())
}

func BenchmarkResolveDotDotCached(b *testing.B) {
	benchResolve(b, "/usr/lib/x86_64-linux-gnu/../../share/doc/pkg/sub/file", true, WithCache())
}

// A cached walk whose directory changes at every iteration (a file is
// created and removed next to the last component): the worst case, every
// lookup reads two inotify events and misses once.
func BenchmarkResolve6CachedChurn(b *testing.B) {
	rt, m := benchTree(b, WithCache())
	p := "/usr/share/doc/pkg/sub/file"
	churn := rt.root + "/usr/share/doc/pkg/sub/churn"
	st0 := m.CacheStats()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if err := unix.Mknod(churn, unix.S_IFREG|0o644, 0); err != nil {
			b.Fatal(err)
		}
		unix.Unlink(churn)
		b.StartTimer()
		if _, err := m.Resolve(Proc{}, "/", p, true); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportSyscalls(b, m, st0)
}

// Into a binding: the mount point costs no system call.
func BenchmarkResolveBind(b *testing.B) { benchResolve(b, "/sdcard/Download/a.txt", true) }

// With "..": an lstat instead of a readlink before it.
func BenchmarkResolveDotDot(b *testing.B) {
	benchResolve(b, "/usr/lib/x86_64-linux-gnu/../../share/doc/pkg/sub/file", true)
}

// The same 6-component lookup, concurrently from all CPUs (the Mapper is
// shared, walkers are pooled).
func BenchmarkResolve6Parallel(b *testing.B) { benchResolve6Parallel(b) }

func BenchmarkResolve6ParallelCached(b *testing.B) { benchResolve6Parallel(b, WithCache()) }

func benchResolve6Parallel(b *testing.B, opts ...Option) {
	_, m := benchTree(b, opts...)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := m.Resolve(Proc{}, "/", "/usr/share/doc/pkg/sub/file", true); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// Baseline: what the classic scheme costs in system calls alone, one
// unix.Lstat per component prefix (proot's way), without any translation.
func BenchmarkBaselineLstat6(b *testing.B) {
	rt, _ := benchTree(b)
	comps := strings.Split("usr/share/doc/pkg/sub/file", "/")
	var prefixes []string
	p := rt.root
	for _, c := range comps {
		p += "/" + c
		prefixes = append(prefixes, p)
	}
	var st unix.Stat_t
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, q := range prefixes {
			if err := unix.Lstat(q, &st); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkToGuest(b *testing.B) {
	rt, m := benchTree(b)
	h := rt.root + "/usr/share/doc/pkg/sub/file"
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, ok := m.ToGuest(h); !ok {
			b.Fatal("not mapped")
		}
	}
}

// TestResolveAllocs pins the allocation budget: the returned string only.
func TestResolveAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations are not stable under the race detector")
	}
	forBothModes(t, testResolveAllocs)
}

func testResolveAllocs(t *testing.T, opts ...Option) {
	rt := newRealTree(t)
	mkTree(t, rt.root, "usr/share/doc/pkg/sub/file")
	m, err := New(rt.root, rt.binds, nil, append(opts, WithVirtualDir(rt.vdir))...)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for _, p := range []string{"/usr/share/doc/pkg/sub/file", "/bin/sh", "/sdcard/Download/a.txt",
		"/usr/lib/../share/doc/", "/a/b/c/f", "/nonexistent"} {
		for _, follow := range []bool{false, true} {
			m.Resolve(Proc{}, "/", p, follow) // fill the cache, if any
			n := testing.AllocsPerRun(100, func() {
				if _, err := m.Resolve(Proc{}, "/", p, follow); err != nil {
					t.Fatal(err)
				}
			})
			if n > 1 {
				t.Errorf("Resolve(%q, %v): %v allocations, want at most 1", p, follow, n)
			}
		}
	}
}

// nullFS answers without system calls: every path is a directory, nothing
// is a symlink. It shows the cost of the translation itself.
type nullFS struct{}

func (nullFS) Lstat(string) (uint32, error)    { return unix.S_IFDIR, nil }
func (nullFS) Readlink(string) (string, error) { return "", unix.EINVAL }

// The walk without the kernel: (ns/op of Resolve6) - (this) is the time
// spent in system calls. The 6 allocations are the FS's string arguments,
// which HostFS avoids.
func BenchmarkResolve6NullFS(b *testing.B) {
	m, err := New("/r", []Binding{{Host: "/sd", Guest: "/sdcard"}}, nullFS{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := m.Resolve(Proc{}, "/", "/usr/share/doc/pkg/sub/file", true); err != nil {
			b.Fatal(err)
		}
	}
}

// A cached lookup and the pinned name of its result (what a translated call
// hands the kernel): the pinned parent is a map lookup, no system call.
func BenchmarkPinnedName(b *testing.B) {
	_, m := benchTree(b, WithCache())
	r, err := m.Resolve(Proc{}, "/", "/usr/share/doc/pkg/sub/file", true)
	if err != nil {
		b.Fatal(err)
	}
	if _, pin, _ := m.PinnedName(r); pin != Pinned {
		b.Fatal("not pinned")
	}
	st0 := m.CacheStats()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, pin, _ := m.PinnedName(r); pin != Pinned {
			b.Fatal("not pinned")
		}
	}
	b.StopTimer()
	reportSyscalls(b, m, st0)
}

// BenchmarkPinnedFile is PinnedFile of a file its cache entry keeps pinned, and its release.
func BenchmarkPinnedFile(b *testing.B) {
	_, m := benchTree(b, WithCache())
	r, err := m.Resolve(Proc{}, "/", "/usr/share/doc/pkg/sub/file", true)
	if err != nil {
		b.Fatal(err)
	}
	st0 := m.CacheStats()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, fd, pin, _ := m.PinnedFile(r)
		if pin != Pinned || fd < 0 {
			b.Fatal("not pinned")
		}
		m.ReleaseFile(fd)
	}
	b.StopTimer()
	reportSyscalls(b, m, st0)
}
