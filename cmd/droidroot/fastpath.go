package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/droidroot/droidroot/emul"
	"github.com/droidroot/droidroot/fastpath"
	"github.com/droidroot/droidroot/pathmap"
	"github.com/droidroot/droidroot/seccomp"
	"golang.org/x/sys/unix"
)

// defaultFastPathTTL is how long the library trusts a verified parent
// directory before it verifies it again (DROIDROOT_FASTPATH_TTL_MS).
const defaultFastPathTTL = 200 * time.Millisecond

// fastPathOn tells whether the run uses the fast path library: not with
// --no-fastpath, DROIDROOT_FASTPATH=0 or without seccomp (PROOT_NO_SECCOMP:
// every call stops anyway).
func fastPathOn(o *Options, noSeccomp bool) bool {
	return !o.NoFastPath && os.Getenv("DROIDROOT_FASTPATH") != "0" && !noSeccomp
}

// fastPathLibrary returns the library's host file: DROIDROOT_FASTPATH_LIB,
// else libdroidroot-fastpath.so beside PROOT_LOADER (on Android the app's
// native library directory: the only place it may be mapped executable
// from), else the embedded one written into tmpDir. "" when there is none.
func fastPathLibrary(tmpDir string) string {
	if p := os.Getenv("DROIDROOT_FASTPATH_LIB"); p != "" {
		if _, err := os.Stat(p); err != nil {
			warnf("DROIDROOT_FASTPATH_LIB=%s: %v (the fast path is off)", p, err)
			return ""
		}
		return p
	}
	if l := os.Getenv("PROOT_LOADER"); l != "" {
		p := filepath.Join(filepath.Dir(l), fastpath.FileName)
		if _, err := os.Stat(p); err != nil {
			return "" // a launcher without the library: tracer only
		}
		return p
	}
	p, err := fastpath.Extract(tmpDir, runtime.GOARCH)
	if err != nil {
		warnf("cannot write the fast path library into %s: %v (the fast path is off)", tmpDir, err)
		return ""
	}
	return p
}

// fastPathTTL is DROIDROOT_FASTPATH_TTL_MS (0: verify on every call).
func fastPathTTL() time.Duration {
	if v := os.Getenv("DROIDROOT_FASTPATH_TTL_MS"); v != "" {
		if ms, err := strconv.ParseUint(v, 10, 32); err == nil {
			return time.Duration(ms) * time.Millisecond
		}
		warnf("DROIDROOT_FASTPATH_TTL_MS=%s is not a number of milliseconds (using %v)", v, defaultFastPathTTL)
	}
	return defaultFastPathTTL
}

// futexWaitvEmulated tells whether the library answers futex_waitv:
// DROIDROOT_FUTEX_WAITV=emulate, or by default when an Android policy (the
// device's or a reproduced one) blocks the kernel's; "native" and "off"
// leave it to the kernel or to the tracer (ENOSYS under Android's policy).
func futexWaitvEmulated(android *seccomp.AndroidPolicy) bool {
	switch v := os.Getenv("DROIDROOT_FUTEX_WAITV"); v {
	case "emulate":
		return true
	case "native", "off":
		return false
	case "":
	default:
		warnf("DROIDROOT_FUTEX_WAITV=%s: want native, emulate or off (using the default)", v)
	}
	if android == nil {
		return false
	}
	nr, _ := seccomp.NativeABI(runtime.GOARCH).Nr("futex_waitv")
	return android.Device() || android.Blocks(seccomp.NativeABI(runtime.GOARCH), nr)
}

// openat2Allowed tells whether the library may make openat2 (it opens a
// file and refuses a symlink in one call): not where an Android policy (the
// device's or a reproduced one) blocks it, which would make every such call
// a SIGSYS stop.
func openat2Allowed(android *seccomp.AndroidPolicy) bool {
	if android == nil {
		return true
	}
	nr, _ := seccomp.NativeABI(runtime.GOARCH).Nr("openat2")
	return !android.Device() && !android.Blocks(seccomp.NativeABI(runtime.GOARCH), nr)
}

// fastPathConfig is the library's configuration for a run with mapper m,
// whose merged /etc/ld.so.preload files and futex_waitv registry (when
// waitv) go into dir; openat2: the library may make openat2.
func fastPathConfig(m *pathmap.Mapper, dir string, waitv, openat2 bool) *emul.FastPath {
	lib := fastpath.Config{
		Trampoline: fastpath.ChooseTrampoline(),
		TTLNanos:   uint64(fastPathTTL()),
		Root:       m.Root(),
	}
	if os.Getenv("DROIDROOT_FASTPATH_STATS") == "1" {
		lib.Flags |= fastpath.FlagStats
	}
	if openat2 {
		lib.Flags |= fastpath.FlagOpenat2
	}
	for _, b := range m.Bindings() {
		lib.Binds = append(lib.Binds, fastpath.Bind{Guest: b.Guest, Host: b.Host})
	}
	lib.BindParents = bindParents(m)
	if waitv {
		if reg, err := fastpath.NewRegistry(dir); err == nil {
			lib.Registry = reg
			lib.Flags |= fastpath.FlagWaitv
		} else {
			warnf("cannot make the futex_waitv registry in %s: %v (futex_waitv stays unanswered)", dir, err)
		}
	}
	if empty, err := fastpath.NewEmpty(dir); err == nil {
		lib.Empty = empty
	}
	if changes, err := fastpath.NewChanges(dir); err == nil {
		lib.Changes = changes
	}
	var st unix.Stat_t
	if unix.Stat("/proc/self", &st) == nil {
		lib.ProcDev = st.Dev
	}
	return &emul.FastPath{Lib: lib, Dir: dir}
}

// bindParents are the host directories of every proper guest ancestor of
// every bind point, as the tracer resolves them (virtual directories
// included). The library's own bind adds /.droidroot only: the library
// checks that name itself, so the root stays answerable where no other
// bind makes it a parent.
func bindParents(m *pathmap.Mapper) []fastpath.DevIno {
	self := pathmap.Proc{Pid: os.Getpid(), Tid: os.Getpid()}
	seen := map[fastpath.DevIno]bool{}
	var out []fastpath.DevIno
	for _, b := range m.Bindings() {
		if b.Guest == "/" {
			continue
		}
		for a := filepath.Dir(b.Guest); ; a = filepath.Dir(a) {
			if !(b.Guest == fastpath.GuestPath && a == "/") {
				if r, err := m.Lookup(self, "/", a, pathmap.Follow); err == nil {
					var st unix.Stat_t
					if unix.Stat(r.Host, &st) == nil && !seen[fastpath.DevIno{Dev: st.Dev, Ino: st.Ino}] {
						di := fastpath.DevIno{Dev: st.Dev, Ino: st.Ino}
						seen[di] = true
						out = append(out, di)
					}
				}
			}
			if a == "/" || a == "." {
				break
			}
		}
	}
	return out
}
