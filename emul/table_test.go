package emul

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/fastpath"
	"github.com/droidroot/droidroot/seccomp"
	"github.com/droidroot/droidroot/tracer"
)

// TestTableNames checks every handler names a real syscall of a host ABI,
// and that each architecture traces the calls its libc makes for paths.
func TestTableNames(t *testing.T) {
	table := Table(Config{})
	for name := range table {
		_, amd := seccomp.NativeABI("amd64").Nr(name)
		_, arm := seccomp.NativeABI("arm64").Nr(name)
		if !amd && !arm {
			t.Errorf("handler %q is not a syscall on amd64 or arm64", name)
		}
	}
	must := map[string][]string{
		"amd64": {"open", "openat", "stat", "lstat", "newfstatat", "statx", "access", "faccessat", "faccessat2",
			"readlink", "readlinkat", "execve", "execveat", "getcwd", "chdir", "rename", "renameat2", "unlink", "unlinkat",
			"mkdir", "mkdirat", "symlink", "link", "linkat", "bind", "connect"},
		"arm64": {"openat", "fstatat", "statx", "faccessat", "faccessat2", "readlinkat", "execve", "execveat",
			"getcwd", "chdir", "renameat", "renameat2", "unlinkat", "mkdirat", "symlinkat", "linkat", "bind", "connect"},
	}
	for goarch, names := range must {
		abi := seccomp.NativeABI(goarch)
		for _, n := range names {
			if _, ok := abi.Nr(n); !ok {
				t.Errorf("%s: %q is not in the syscall table", goarch, n)
				continue
			}
			if _, ok := table[n]; !ok {
				t.Errorf("%s: no handler for %q", goarch, n)
			}
		}
	}
}

// TestLayers pins, for each option, which syscalls its layer changes and in what order the
// layers apply: the last replacing layer's handler is the one that runs. A syscall whose
// layers are only "base" is left out of want.
func TestLayers(t *testing.T) {
	l2sNames := map[string][]string{
		"link": {"base", "link2symlink"}, "linkat": {"base", "link2symlink"},
		"unlink": {"base", "link2symlink"}, "unlinkat": {"base", "link2symlink"},
		"rename": {"base", "link2symlink"}, "renameat": {"base", "link2symlink"}, "renameat2": {"base", "link2symlink"},
		"stat": {"base", "stat-patch"}, "lstat": {"base", "stat-patch"}, "newfstatat": {"base", "stat-patch"},
		"fstatat": {"base", "stat-patch"}, "statx": {"base", "stat-patch"}, "fstat": {"stat-patch"},
		"getdents64": {"hide"},
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		want map[string][]string
	}{
		{"none", Config{}, map[string][]string{}},
		{"-l", Config{Link2Symlink: true}, l2sNames},
		{"FailLink", Config{FailLink: true}, map[string][]string{
			"link": {"base", "link2symlink"}, "linkat": {"base", "link2symlink"},
		}},
		{"-L", Config{LstatLinkSize: true}, map[string][]string{
			"stat": {"base", "stat-patch"}, "lstat": {"base", "stat-patch"}, "newfstatat": {"base", "stat-patch"},
			"fstatat": {"base", "stat-patch"}, "statx": {"base", "stat-patch"},
		}},
		{"-p", Config{PortShift: true}, map[string][]string{
			"bind": {"base", "port-shift"}, "connect": {"base", "port-shift"}, "sendto": {"base", "port-shift"},
		}},
		{"-H", Config{HideOwnFiles: true}, map[string][]string{"getdents64": {"hide"}}},
		{"--ashmem-memfd", Config{AshmemMemfd: true}, map[string][]string{"ioctl": {"ashmem-memfd"}}},
		{"-k", Config{Uname: &Uname{}}, map[string][]string{
			"uname": {"uname"}, "sethostname": {"uname"}, "setdomainname": {"uname"},
		}},
		{"at2", Config{EmulateAt2: true}, map[string][]string{
			"faccessat2": {"base", "at2"}, "fchmodat2": {"base", "at2"}, "close_range": {"at2"},
		}},
		{"guest ptrace", Config{GuestPtrace: true}, map[string][]string{
			"ptrace": {"ptrace"}, "wait4": {"ptrace"}, "waitid": {"ptrace"}, "droidroot_execstop": {"ptrace"},
			"prctl": {"ptrace"}, "seccomp": {"base", "ptrace"},
		}},
		{"robust list", Config{EmulateRobustList: true}, map[string][]string{
			"set_robust_list": {"robust-list"}, "get_robust_list": {"robust-list"},
		}},
		// A fake non-root identity: the credentials, and the owner fix-ups of stat
		// results (after -l's stat patching, which it wraps).
		{"-i with -l", Config{Identity: &Identity{UID: 4242, GID: 4242}, Link2Symlink: true}, func() map[string][]string {
			w := map[string][]string{}
			for k, v := range l2sNames {
				w[k] = v
			}
			for _, n := range []string{"stat", "lstat", "newfstatat", "fstatat", "statx", "fstat"} {
				w[n] = append(append([]string(nil), w[n]...), "identity")
			}
			for _, n := range []string{"getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid",
				"setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setfsuid", "setfsgid",
				"getgroups", "setgroups", "capget", "capset", "prctl", "getsockopt"} {
				w[n] = []string{"identity"}
			}
			return w
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string][]string{}
			for name, ls := range New(tc.cfg).Layers() {
				if len(ls) != 1 || ls[0] != "base" {
					got[name] = ls
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("layers (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLayersAndroid: the Android layer comes last; it replaces the handlers of the calls
// the policy blocks except those another enabled emulation answers itself.
func TestLayersAndroid(t *testing.T) {
	p, err := seccomp.LoadAndroidPolicy("16")
	if err != nil {
		t.Fatal(err)
	}
	got := New(Config{Link2Symlink: true}.WithAndroid(p)).Layers()
	for name, want := range map[string][]string{
		"rseq":            {"android"},
		"faccessat2":      {"base", "at2"},
		"set_robust_list": {"robust-list"},
		"semget":          {"sysvipc"},
		"chroot":          {"base"},
		"accept":          {"base", "android"},
	} {
		if diff := cmp.Diff(want, got[name]); diff != "" {
			t.Errorf("%s: layers (-want +got):\n%s", name, diff)
		}
	}
}

// TestPrctlTraceIf: the layers that trace prctl share one handler, and the filter stops
// the options each of them needs: PR_SET_PTRACER and PR_SET_SECCOMP for guest ptrace,
// PR_SET_SECCOMP for the fast path, every option for the identity's KEEPCAPS.
func TestPrctlTraceIf(t *testing.T) {
	fp := func() *FastPath { return &FastPath{Lib: fastpath.Config{Root: "/"}, Dir: t.TempDir()} }
	for _, tc := range []struct {
		name string
		cfg  Config
		want *tracer.ArgMask
	}{
		{"ptrace", Config{GuestPtrace: true}, &tracer.ArgMask{Arg: 0, Mask: 0x40000010}},
		{"ptrace, fast path", Config{GuestPtrace: true, FastPath: fp()}, &tracer.ArgMask{Arg: 0, Mask: 0x40000010}},
		{"fast path", Config{FastPath: fp()}, &tracer.ArgMask{Arg: 0, Mask: 0x10}},
		{"ptrace, set*id", Config{GuestPtrace: true, EmulateSetID: true}, nil},
		{"ptrace, set*id, fast path", Config{GuestPtrace: true, EmulateSetID: true, FastPath: fp()}, nil},
	} {
		h, ok := New(tc.cfg).Table["prctl"]
		if !ok {
			t.Errorf("%s: no prctl handler", tc.name)
			continue
		}
		if diff := cmp.Diff(tc.want, h.TraceIf); diff != "" {
			t.Errorf("%s: TraceIf (-want +got):\n%s", tc.name, diff)
		}
	}
	// unix.PR_SET_PTRACER has the bit, PR_SET_SECCOMP and PR_SET_NAME have neither.
	if unix.PR_SET_PTRACER&0x40000000 == 0 || unix.PR_SET_SECCOMP&0x40000000 != 0 || unix.PR_SET_NAME&0x40000010 != 0 {
		t.Error("the prctl bits are wrong")
	}
}
