package emul

import (
	"encoding/binary"
	"fmt"
	"testing"

	"golang.org/x/sys/unix"

	tt "github.com/droidroot/droidroot/tracer/tracertest"
)

// openHowBuf is a struct open_how.
func openHowBuf(flags, mode, resolve uint64) (tt.Arg, tt.Arg) {
	b := make([]byte, 24)
	binary.LittleEndian.PutUint64(b, flags)
	binary.LittleEndian.PutUint64(b[8:], mode)
	binary.LittleEndian.PutUint64(b[16:], resolve)
	return tt.In(b), tt.Int(24)
}

func openat2(dirfd tt.Arg, path string, flags, resolve uint64) tt.Step {
	how, n := openHowBuf(flags|unix.O_CLOEXEC, 0, resolve)
	return tt.Call("openat2", dirfd, tt.Str(path), how, n)
}

func faccessat2Step(dirfd tt.Arg, path string, mode, flags int64) tt.Step {
	return tt.Call("faccessat2", dirfd, tt.Str(path), tt.Int(mode), tt.Int(flags))
}

// TestAt2HandlersKernel: faccessat2, fchmodat2, openat2 (every RESOLVE_*
// flag) and close_range answer as the kernel does, translated or
// emulated (EmulateAt2, for Android, which blocks them).
func TestAt2HandlersKernel(t *testing.T) {
	rd := uint64(unix.O_RDONLY)
	cases := []kcase{
		{name: "faccessat2", step: faccessat2Step(cwdFD, "/etc/hostname", unix.R_OK, 0)},
		{name: "faccessat2 write", step: faccessat2Step(cwdFD, "/etc/hostname", unix.W_OK, unix.AT_EACCESS)},
		{name: "faccessat2 exec", step: faccessat2Step(cwdFD, "/etc/hostname", unix.X_OK, 0)},
		{name: "faccessat2 dir exec", step: faccessat2Step(cwdFD, "/dir", unix.X_OK, 0)},
		{name: "faccessat2 missing", step: faccessat2Step(cwdFD, "/missing", unix.F_OK, 0)},
		{name: "faccessat2 dangling nofollow", step: faccessat2Step(cwdFD, "/dangling", unix.F_OK, unix.AT_SYMLINK_NOFOLLOW)},
		{name: "faccessat2 dangling", step: faccessat2Step(cwdFD, "/dangling", unix.F_OK, 0)},
		{name: "faccessat2 bad flags", step: faccessat2Step(cwdFD, "/dir", unix.F_OK, 0x8000)},
		{name: "faccessat2 bad mode", step: faccessat2Step(cwdFD, "/dir", 8, 0)},
		{name: "faccessat2 empty", step: faccessat2Step(cwdFD, "", unix.F_OK, 0)},
		{name: "faccessat2 empty path", step: faccessat2Step(cwdFD, "", unix.F_OK, unix.AT_EMPTY_PATH)},
		{name: "faccessat2 bind", step: faccessat2Step(cwdFD, "/mnt/inside", unix.R_OK|unix.W_OK, 0)},
		{name: "fchmodat2", step: tt.Call("fchmodat2", cwdFD, tt.Str("/dir/file"), tt.Int(0o600), tt.Int(0))},
		{name: "fchmodat2 symlink nofollow", step: tt.Call("fchmodat2", cwdFD, tt.Str("/rel"), tt.Int(0o600), tt.Int(unix.AT_SYMLINK_NOFOLLOW))},
		{name: "fchmodat2 file nofollow", step: tt.Call("fchmodat2", cwdFD, tt.Str("/dir/file"), tt.Int(0o640), tt.Int(unix.AT_SYMLINK_NOFOLLOW))},
		{name: "fchmodat2 missing", step: tt.Call("fchmodat2", cwdFD, tt.Str("/missing"), tt.Int(0o600), tt.Int(0))},
		{name: "fchmodat2 bad flags", step: tt.Call("fchmodat2", cwdFD, tt.Str("/dir/file"), tt.Int(0o600), tt.Int(0x8000))},
		{name: "stat after fchmodat2", step: fstatat(cwdFD, "/dir/file", 0), stat: []int{2}},
		{name: "openat2", step: openat2(cwdFD, "/etc/hostname", rd, 0), how: cmpSign}, // 18
		{name: "read", step: tt.Call("read", tt.Ret(18), tt.Out(16), tt.Int(16)), mem: []int{1}},
		{name: "close_range one", step: tt.Call("close_range", tt.Ret(18), tt.Ret(18), tt.Int(0))},
		{name: "closed", step: tt.Call("close", tt.Ret(18))},
		{name: "openat2 dir", step: openat2(cwdFD, "/dir", rd|unix.O_DIRECTORY, 0), how: cmpSign}, // 22
		{name: "beneath", step: openat2(tt.Ret(22), "file", rd, unix.RESOLVE_BENEATH), how: cmpSign},
		{name: "beneath dotdot", step: openat2(tt.Ret(22), "../etc/hostname", rd, unix.RESOLVE_BENEATH)},
		{name: "beneath absolute", step: openat2(tt.Ret(22), "/etc/hostname", rd, unix.RESOLVE_BENEATH)},
		{name: "in root absolute", step: openat2(tt.Ret(22), "/file", rd, unix.RESOLVE_IN_ROOT), how: cmpSign},
		{name: "in root dotdot", step: openat2(tt.Ret(22), "../../file", rd, unix.RESOLVE_IN_ROOT), how: cmpSign},
		{name: "in root missing", step: openat2(tt.Ret(22), "/etc/hostname", rd, unix.RESOLVE_IN_ROOT)},
		{name: "no symlinks", step: openat2(cwdFD, "/rel", rd, unix.RESOLVE_NO_SYMLINKS)},
		{name: "no symlinks dir", step: openat2(cwdFD, "/link/file", rd, unix.RESOLVE_NO_SYMLINKS)},
		{name: "no symlinks plain", step: openat2(cwdFD, "/dir/file", rd, unix.RESOLVE_NO_SYMLINKS), how: cmpSign},
		{name: "no xdev", step: openat2(cwdFD, "/mnt/inside", rd, unix.RESOLVE_NO_XDEV)},
		{name: "no xdev same", step: openat2(cwdFD, "/dir/file", rd, unix.RESOLVE_NO_XDEV), how: cmpSign},
		{name: "no magiclinks", step: openat2(cwdFD, "/proc/self/cwd", rd, unix.RESOLVE_NO_MAGICLINKS)},
		{name: "magiclink", step: openat2(cwdFD, "/proc/self/cwd", rd, 0), how: cmpSign},
		{name: "nofollow", step: openat2(cwdFD, "/rel", rd|unix.O_NOFOLLOW, 0)},
		{name: "bad resolve", step: openat2(cwdFD, "/dir", rd, 0x1000)},
		{name: "mode without create", step: tt.Call("openat2", cwdFD, tt.Str("/dir/file"), openHowArg(rd, 0o644, 0), tt.Int(24))},
		{name: "small how", step: tt.Call("openat2", cwdFD, tt.Str("/dir/file"), openHowArg(rd, 0, 0), tt.Int(8))},
		{name: "create beneath", step: openat2(tt.Ret(22), "new", unix.O_CREAT|unix.O_WRONLY, unix.RESOLVE_BENEATH), how: cmpSign},
		{name: "empty", step: openat2(cwdFD, "", rd, 0)},
		{name: "close_range bad", step: tt.Call("close_range", tt.Int(10), tt.Int(9), tt.Int(0))},
		{name: "close_range bad flags", step: tt.Call("close_range", tt.Int(900), tt.Int(901), tt.Int(0x80))},
		{name: "close_range cloexec", step: tt.Call("close_range", tt.Ret(22), tt.Ret(22), tt.Int(unix.CLOSE_RANGE_CLOEXEC))},
		{name: "getfd", step: tt.Call("fcntl", tt.Ret(22), tt.Int(unix.F_GETFD), tt.Int(0))},
		{name: "close_range none open", step: tt.Call("close_range", tt.Int(900), tt.Int(950), tt.Int(0))},
	}
	for _, emulate := range []bool{false, true} {
		t.Run(fmt.Sprintf("emulate=%v", emulate), func(t *testing.T) {
			againstKernel(t, Config{EmulateAt2: emulate}, "/", withoutMissingCalls(cases))
		})
	}
}

// TestOpenat2RemovedCwd: openat2 of "." in a cwd that was removed opens it, as the kernel
// does, whatever RESOLVE_* flags ask (found by e2e's TestOracleRandom: ENOENT, the tracer
// looked the cwd's old path up); "/" and "/./", all slashes and dots too, but absolute, open
// the guest's root (listed: its names are not the host root's).
func TestOpenat2RemovedCwd(t *testing.T) {
	rd := uint64(unix.O_RDONLY | unix.O_DIRECTORY)
	cases := []kcase{
		{name: "mkdir", step: tt.Call("mkdirat", cwdFD, tt.Str("/tmp/gone"), tt.Int(0o755))},
		{name: "chdir", step: chdir("/tmp/gone")},
		{name: "rmdir", step: tt.Call("unlinkat", cwdFD, tt.Str("/tmp/gone"), tt.Int(unix.AT_REMOVEDIR))},
		{name: "dot", step: openat2(cwdFD, ".", rd, 0), how: cmpSign},
		{name: "dot in root", step: openat2(cwdFD, ".", rd, unix.RESOLVE_IN_ROOT), how: cmpSign},
		{name: "dot beneath", step: openat2(cwdFD, "./.", rd, unix.RESOLVE_BENEATH|unix.RESOLVE_NO_SYMLINKS), how: cmpSign},
		{name: "a name there", step: openat2(cwdFD, "x", rd, unix.RESOLVE_BENEATH)},
		// Slashes and dots but absolute: the guest's root, never the host's.
		{name: "root", step: openat2(cwdFD, "/", rd, 0), how: cmpSign},                          // 7
		{name: "list root", step: tt.Call("getdents64", tt.Ret(7), tt.Out(4096), tt.Int(4096))}, // its names' length
		{name: "root dot", step: openat2(cwdFD, "/./", rd, unix.RESOLVE_NO_XDEV), how: cmpSign}, // 9
		{name: "list root dot", step: tt.Call("getdents64", tt.Ret(9), tt.Out(4096), tt.Int(4096))},
	}
	for _, emulate := range []bool{false, true} {
		t.Run(fmt.Sprintf("emulate=%v", emulate), func(t *testing.T) {
			againstKernel(t, Config{EmulateAt2: emulate}, "/", withoutMissingCalls(cases))
		})
	}
}

func openHowArg(flags, mode, resolve uint64) tt.Arg {
	a, _ := openHowBuf(flags, mode, resolve)
	return a
}
