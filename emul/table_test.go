package emul

import (
	"testing"

	"github.com/droidroot/droidroot/seccomp"
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
