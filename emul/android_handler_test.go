package emul

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/seccomp"
	tt "github.com/droidroot/droidroot/tracer/tracertest"
)

// TestAndroidHandlersKernel: under Android's app policy the calls it
// blocks are rewritten to allowed ones or emulated, and answer as the
// kernel does without the policy (the legacy calls of x86_64, the new *at
// calls, set*id, pipe, dup2, poll...).
func TestAndroidHandlersKernel(t *testing.T) {
	all := []kcase{
		{name: "open dir", step: openat(cwdFD, "/dir", unix.O_RDONLY|unix.O_DIRECTORY), how: cmpSign}, // 0
		{name: "faccessat2", step: faccessat2Step(cwdFD, "/rel", unix.R_OK, 0)},
		{name: "faccessat2 nofollow", step: faccessat2Step(cwdFD, "/dangling", unix.F_OK, unix.AT_SYMLINK_NOFOLLOW)},
		{name: "faccessat2 dirfd", step: tt.Call("faccessat2", tt.Ret(0), tt.Str("file"), tt.Int(unix.W_OK), tt.Int(unix.AT_EACCESS))},
		{name: "fchmodat2", step: tt.Call("fchmodat2", cwdFD, tt.Str("/dir/file"), tt.Int(0o600), tt.Int(0))},
		{name: "fchmodat2 nofollow", step: tt.Call("fchmodat2", cwdFD, tt.Str("/rel"), tt.Int(0o600), tt.Int(unix.AT_SYMLINK_NOFOLLOW))},
		{name: "openat2", step: openat2(tt.Ret(0), "sub", unix.O_RDONLY, unix.RESOLVE_BENEATH), how: cmpSign},
		{name: "openat2 escape", step: openat2(tt.Ret(0), "../etc", unix.O_RDONLY, unix.RESOLVE_BENEATH)},
		{name: "close_range", step: tt.Call("close_range", tt.Ret(0), tt.Ret(0), tt.Int(unix.CLOSE_RANGE_CLOEXEC))},
		{name: "getfd", step: tt.Call("fcntl", tt.Ret(0), tt.Int(unix.F_GETFD), tt.Int(0))},
		{name: "setresuid same", step: tt.Call("setresuid", tt.Int(-1), tt.Int(-1), tt.Int(-1))},
		{name: "getuid", step: tt.Call("getuid")},
		{name: "setfsuid", step: tt.Call("setfsuid", tt.Int(-1))},
		{name: "setfsgid", step: tt.Call("setfsgid", tt.Int(-1))},
		{name: "robust", step: tt.Call("set_robust_list", tt.Int(0x12340), tt.Int(24))},
		{name: "robust get", step: tt.Call("get_robust_list", tt.Int(0), tt.Out(8), tt.Out(8)), mem: []int{1, 2}},
		{name: "pipe2", step: tt.Call("pipe2", tt.Out(8), tt.Int(unix.O_CLOEXEC))},
		// x86_64's legacy calls, rewritten to their *at forms.
		{name: "access", step: tt.Call("access", tt.Str("/link/file"), tt.Int(unix.R_OK))},
		{name: "access missing", step: tt.Call("access", tt.Str("/missing"), tt.Int(0))},
		{name: "stat", step: tt.Call("stat", tt.Str("/rel"), tt.Out(statBufSize)), stat: []int{1}},
		{name: "lstat", step: tt.Call("lstat", tt.Str("/rel"), tt.Out(statBufSize)), stat: []int{1}},
		{name: "mkdir", step: tt.Call("mkdir", tt.Str("/tmp/d"), tt.Int(0o700))},
		{name: "rmdir", step: tt.Call("rmdir", tt.Str("/tmp/d"))},
		{name: "creat", step: tt.Call("creat", tt.Str("/tmp/c"), tt.Int(0o600)), how: cmpSign},
		{name: "symlink", step: tt.Call("symlink", tt.Str("c"), tt.Str("/tmp/s"))},
		{name: "link", step: tt.Call("link", tt.Str("/tmp/c"), tt.Str("/tmp/h"))},
		{name: "rename", step: tt.Call("rename", tt.Str("/tmp/h"), tt.Str("/tmp/h2"))},
		{name: "unlink", step: tt.Call("unlink", tt.Str("/tmp/h2"))},
		{name: "chmod", step: tt.Call("chmod", tt.Str("/tmp/c"), tt.Int(0o640))},
		{name: "chown", step: tt.Call("chown", tt.Str("/tmp/c"), tt.Int(-1), tt.Int(-1))},
		{name: "lchown", step: tt.Call("lchown", tt.Str("/tmp/s"), tt.Int(-1), tt.Int(-1))},
		{name: "mknod", step: tt.Call("mknod", tt.Str("/tmp/f"), tt.Int(unix.S_IFIFO|0o600), tt.Int(0))},
		{name: "utimes", step: tt.Call("utimes", tt.Str("/tmp/c"), tt.Int(0))},
		{name: "utimes missing", step: tt.Call("utimes", tt.Str("/missing"), tt.Int(0))},
		{name: "utime", step: tt.Call("utime", tt.Str("/tmp/c"), tt.Int(0))},
		{name: "futimesat", step: tt.Call("futimesat", cwdFD, tt.Str("/tmp/c"), tt.Int(0))},
		{name: "pipe", step: tt.Call("pipe", tt.Out(8))},
		{name: "dup2 bad", step: tt.Call("dup2", tt.Int(999), tt.Int(998))},
		{name: "poll", step: tt.Call("poll", tt.Int(0), tt.Int(0), tt.Int(0))},
		{name: "select", step: tt.Call("select", tt.Int(0), tt.Int(0), tt.Int(0), tt.Int(0), tt.In(make([]byte, 16)))},
		{name: "alarm", step: tt.Call("alarm", tt.Int(0))},
		{name: "getpgrp", step: tt.Call("getpgrp")},
		{name: "epoll_create", step: tt.Call("epoll_create", tt.Int(1)), how: cmpSign},
		{name: "epoll_create bad", step: tt.Call("epoll_create", tt.Int(0))},
		{name: "inotify_init", step: tt.Call("inotify_init"), how: cmpSign},
		{name: "eventfd", step: tt.Call("eventfd", tt.Int(0)), how: cmpSign},
		{name: "accept bad fd", step: tt.Call("accept", tt.Int(999), tt.Int(0), tt.Int(0))},
		{name: "rseq", step: tt.Call("rseq", tt.Int(0), tt.Int(0), tt.Int(0), tt.Int(0)), how: cmpSign},
	}
	var cases []kcase
	for _, c := range all {
		if tt.Has(c.step.Name) {
			cases = append(cases, c)
		}
	}
	for _, v := range []string{"12", "16"} {
		t.Run(v, func(t *testing.T) {
			pol, err := seccomp.LoadAndroidPolicy(v)
			if err != nil {
				t.Fatal(err)
			}
			// rseq: droidroot's ENOSYS (glibc disables it), the kernel's EINVAL.
			for i := range cases {
				if cases[i].step.Name == "rseq" {
					cases[i].how = cmpNone
					cases[i].check = func(t *testing.T, g, w tt.StepResult) {
						if g.Errno() != unix.ENOSYS {
							t.Errorf("rseq under Android: %d, want ENOSYS", g.Ret)
						}
					}
				}
			}
			againstKernel(t, Config{}.WithAndroid(pol), "/", withoutMissingCalls(cases))
		})
	}
}
