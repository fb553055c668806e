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

// fastPathConfig is the library's configuration for a run with mapper m,
// whose merged /etc/ld.so.preload files go into dir.
func fastPathConfig(m *pathmap.Mapper, dir string) *emul.FastPath {
	lib := fastpath.Config{
		Trampoline: fastpath.ChooseTrampoline(),
		TTLNanos:   uint64(fastPathTTL()),
		Root:       m.Root(),
	}
	if os.Getenv("DROIDROOT_FASTPATH_STATS") == "1" {
		lib.Flags |= fastpath.FlagStats
	}
	for _, b := range m.Bindings() {
		lib.Binds = append(lib.Binds, fastpath.Bind{Guest: b.Guest, Host: b.Host})
	}
	return &emul.FastPath{Lib: lib, Dir: dir}
}
