package emul

import (
	"testing"

	"golang.org/x/sys/unix"

	tt "github.com/droidroot/droidroot/tracer/tracertest"
)

// TestMagicLinksKernel: a procfs magic link anywhere in a path (an fd of
// the guest's "/" or of a directory, /proc/self/root, a symlink to one,
// absolute or relative) leads where it leads in a chroot: ".." after it
// stays in the guest, so the bind source beside the rootfs on the host
// (HOST/bind, the parent of the rootfs's "/" being HOST) is not reached by
// any call, and a walk through the fd of a file fails with ENOTDIR.
func TestMagicLinksKernel(t *testing.T) {
	dirfd := func(path string, fd int64, k int) []kcase {
		return []kcase{
			{name: "open " + path, step: openat(cwdFD, path, unix.O_RDONLY|unix.O_DIRECTORY), how: cmpSign}, // k
			{name: "dup " + path, step: tt.Call("dup3", tt.Ret(k), tt.Int(fd), tt.Int(0))},
		}
	}
	var cases []kcase
	cases = append(cases, dirfd("/", 40, 0)...)    // 0, 1
	cases = append(cases, dirfd("/dir", 41, 2)...) // 2, 3
	cases = append(cases, dirfd("/mnt", 43, 4)...) // 4, 5
	cases = append(cases,
		kcase{name: "open file", step: openat(cwdFD, "/dir/file", unix.O_RDONLY), how: cmpSign}, // 6
		kcase{name: "dup file", step: tt.Call("dup3", tt.Ret(6), tt.Int(42), tt.Int(0))},
		// The host beside the rootfs: HOST/bind/inside.
		kcase{name: "fd root dotdot host", step: access("/proc/self/fd/40/../bind/inside")},
		kcase{name: "fd root dotdot guest", step: access("/proc/self/fd/40/../etc/hostname")},
		kcase{name: "fd root dotdot stat", step: fstatat(cwdFD, "/proc/self/fd/40/../..", 0), stat: []int{2}},
		kcase{name: "fd root ls", step: openat(cwdFD, "/proc/self/fd/40/../root", unix.O_RDONLY|unix.O_DIRECTORY)},
		kcase{name: "fd dir dotdot", step: access("/proc/self/fd/41/../etc/hostname")},
		kcase{name: "fd dir dotdot twice host", step: access("/proc/self/fd/41/../../bind/inside")},
		kcase{name: "fd dir below", step: fstatat(cwdFD, "/proc/self/fd/41/file", 0), stat: []int{2}},
		kcase{name: "fd bind dotdot", step: access("/proc/self/fd/43/../etc/hostname")},
		kcase{name: "fd bind dotdot twice", step: access("/proc/self/fd/43/../../bind/inside")},
		kcase{name: "thread-self fd", step: access("/proc/thread-self/fd/40/../bind/inside")},
		kcase{name: "fd file dotdot", step: access("/proc/self/fd/42/..")},
		kcase{name: "fd file below", step: access("/proc/self/fd/42/x")},
		kcase{name: "fd file last", step: fstatat(cwdFD, "/proc/self/fd/42", 0), stat: []int{2}},
		kcase{name: "fd closed", step: access("/proc/self/fd/44/..")},
		kcase{name: "open fd root dotdot host", step: openat(cwdFD, "/proc/self/fd/40/../bind/inside", unix.O_RDONLY)},
		kcase{name: "mkdir fd root dotdot host", step: tt.Call("mkdirat", cwdFD, tt.Str("/proc/self/fd/40/../bind/made"), tt.Int(0o755))},
		kcase{name: "create fd root dotdot host", step: openat(cwdFD, "/proc/self/fd/40/../bind/new", unix.O_WRONLY|unix.O_CREAT)},
		kcase{name: "readlink fd root", step: tt.Call("readlinkat", cwdFD, tt.Str("/proc/self/fd/40"), tt.Out(64), tt.Int(64)), mem: []int{2}},
		kcase{name: "root dotdot", step: access("/proc/self/root/../bind/inside")},
		// Symlinks to magic links, reached by absolute and relative paths.
		kcase{name: "symlink to fd", step: tt.Call("symlinkat", tt.Str("/proc/self/fd/40/.."), cwdFD, tt.Str("/tmp/fdup"))},
		kcase{name: "through it", step: access("/tmp/fdup/bind/inside")},
		kcase{name: "through it relative", step: access("tmp/fdup/bind/inside")},
		kcase{name: "symlink to root", step: tt.Call("symlinkat", tt.Str("../proc/self/root/.."), cwdFD, tt.Str("/tmp/rootup"))},
		kcase{name: "through root relative", step: access("tmp/rootup/bind/inside")},
		kcase{name: "through root relative guest", step: access("tmp/rootup/etc/hostname")},
		kcase{name: "dirfd relative", step: tt.Call("faccessat", tt.Int(41), tt.Str("../tmp/fdup/bind/inside"), tt.Int(0), tt.Int(0))},
		// chdir through one, then relative paths from there.
		kcase{name: "chdir fd dotdot", step: tt.Call("chdir", tt.Str("/proc/self/fd/41/../.."))},
		kcase{name: "getcwd", step: tt.Call("getcwd", tt.Out(256), tt.Int(256)), mem: []int{0}},
		kcase{name: "relative host", step: access("bind/inside")},
		kcase{name: "relative guest", step: access("etc/hostname")},
	)
	againstKernel(t, Config{}, "/", cases)
}
