// Package emul holds droidroot's per-syscall handlers. Its Table is the
// single source of truth for what the seccomp filter traps: a syscall is
// traced iff it has a handler here.
package emul

import (
	"runtime"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/pathmap"
	"github.com/droidroot/droidroot/seccomp"
	"github.com/droidroot/droidroot/tracer"
)

func itoa(i int) string { return strconv.Itoa(i) }

// nativeNr returns the number of syscall name on the host's native ABI.
func nativeNr(name string) (int, bool) {
	return seccomp.NativeABI(runtime.GOARCH).Nr(name)
}

const (
	atSymlinkNofollow = unix.AT_SYMLINK_NOFOLLOW
	atSymlinkFollow   = unix.AT_SYMLINK_FOLLOW
	atEmptyPath       = unix.AT_EMPTY_PATH
	inDontFollow      = unix.IN_DONT_FOLLOW
	fanMarkDontFollow = 0x04
)

// Config selects the optional behaviours of the handler table: the proot
// extensions and emulations a command line turns on. The zero Config is
// plain path translation.
type Config struct {
	// Android is the Android app policy droidroot runs under (simulated by
	// --android-policy, or a real device's), nil if none: every call it
	// blocks gets a handler that answers it at its SIGSYS stop (rewrite,
	// emulation or the kernel's answer; see android.go). It turns on the
	// switches below.
	Android *seccomp.AndroidPolicy
	// SysVIPC answers SysV IPC (msg*, sem*, shm*) in the tracer (termux
	// proot's --sysvipc).
	SysVIPC bool
	// EmulateRobustList answers set_robust_list/get_robust_list per thread
	// in the tracer and does the owner-died work at thread exit.
	EmulateRobustList bool
	// EmulateSetID answers the set*id family, setgroups and get*id in the
	// tracer against the identity model.
	EmulateSetID bool
	// EmulateAt2 answers faccessat2, fchmodat2 and close_range in the
	// tracer with allowed calls and exact errnos.
	EmulateAt2 bool
}

// WithAndroid returns cfg with policy p active and the emulations Android
// needs switched on.
func (cfg Config) WithAndroid(p *seccomp.AndroidPolicy) Config {
	cfg.Android = p
	if p != nil {
		cfg.SysVIPC = true
		cfg.EmulateRobustList = true
		cfg.EmulateSetID = true
		cfg.EmulateAt2 = true
	}
	return cfg
}

// Table returns the handlers of every syscall droidroot translates, by
// name, for the behaviours cfg turns on. Names that do not exist on an
// architecture (open on arm64) are ignored there.
func Table(cfg Config) tracer.Table {
	socks := newSockets()
	newfstatat := pathHandler(at(0, 1, unlessFlag(3, atSymlinkNofollow)).empty(3, atEmptyPath))
	tbl := tracer.Table{
		// open and friends
		"open":     pathHandler(p(0, openFollow(1))),
		"creat":    pathHandler(p(0, always)),
		"openat":   pathHandler(at(0, 1, openFollow(2))),
		"openat2":  openat2Handler,
		"truncate": pathHandler(p(0, always)),
		// stat family
		"stat":       pathHandler(p(0, always)),
		"lstat":      pathHandler(p(0, never)),
		"newfstatat": newfstatat,
		"fstatat":    newfstatat, // arm64's name for the same call
		"statx":      pathHandler(at(0, 1, unlessFlag(2, atSymlinkNofollow)).empty(2, atEmptyPath)),
		"statfs":     pathHandler(p(0, always)),
		// access
		"access":     pathHandler(p(0, always)),
		"faccessat":  pathHandler(at(0, 1, always)),
		"faccessat2": pathHandler(at(0, 1, unlessFlag(3, atSymlinkNofollow)).empty(3, atEmptyPath)),
		// links
		"readlink":   readlinkHandler(p(0, never), 1, 2),
		"readlinkat": readlinkHandler(at(0, 1, never).empty(emptyAlways, 0), 2, 3),
		"symlink":    pathHandler(p(1, entry)),
		"symlinkat":  pathHandler(at(1, 2, entry)),
		"link":       entryHandler(p(0, never), p(1, entry)),
		"linkat":     entryHandler(at(0, 1, ifFlag(4, atSymlinkFollow)).empty(4, atEmptyPath), at(2, 3, entry)),
		"unlink":     entryHandler(p(0, entry)),
		"unlinkat":   entryHandler(at(0, 1, entry)),
		"rename":     entryHandler(p(0, entry), p(1, entry)),
		"renameat":   entryHandler(at(0, 1, entry), at(2, 3, entry)),
		"renameat2":  entryHandler(at(0, 1, entry), at(2, 3, entry)),
		// directories
		"mkdir":   pathHandler(p(0, entry)),
		"mkdirat": pathHandler(at(0, 1, entry)),
		"rmdir":   entryHandler(p(0, entry)),
		"mknod":   pathHandler(p(0, entry)),
		"mknodat": pathHandler(at(0, 1, entry)),
		"chdir":   chdirHandler,
		"fchdir":  fchdirHandler,
		"getcwd":  {Enter: getcwd},
		"chroot":  chrootHandler,
		// attributes
		"chmod":     pathHandler(p(0, always)),
		"fchmodat":  pathHandler(at(0, 1, always)),
		"fchmodat2": pathHandler(at(0, 1, unlessFlag(3, atSymlinkNofollow)).empty(3, atEmptyPath)),
		"chown":     pathHandler(p(0, always)),
		"lchown":    pathHandler(p(0, never)),
		"fchownat":  pathHandler(at(0, 1, unlessFlag(4, atSymlinkNofollow)).empty(4, atEmptyPath)),
		"utime":     pathHandler(p(0, always)),
		"utimes":    pathHandler(p(0, always)),
		"futimesat": pathHandler(at(0, 1, always)),
		"utimensat": pathHandler(at(0, 1, unlessFlag(3, atSymlinkNofollow)).null()),
		// extended attributes
		"setxattr":     pathHandler(p(0, always)),
		"lsetxattr":    pathHandler(p(0, never)),
		"getxattr":     pathHandler(p(0, always)),
		"lgetxattr":    pathHandler(p(0, never)),
		"listxattr":    pathHandler(p(0, always)),
		"llistxattr":   pathHandler(p(0, never)),
		"removexattr":  pathHandler(p(0, always)),
		"lremovexattr": pathHandler(p(0, never)),
		// watches and handles
		"inotify_add_watch": pathHandler(p(1, unlessFlag(2, inDontFollow))),
		"fanotify_mark":     pathHandler(at(3, 4, unlessFlag(1, fanMarkDontFollow)).null()),
		"name_to_handle_at": pathHandler(at(0, 1, ifFlag(4, atSymlinkFollow)).empty(4, atEmptyPath)),
		// privileged
		"acct":    pathHandler(p(0, always).null()),
		"swapon":  pathHandler(p(0, always)),
		"swapoff": pathHandler(p(0, always)),
		// exec
		"execve":   execHandler(false),
		"execveat": execHandler(true),
		// AF_UNIX sockets
		"bind":        socks.unixAddrHandler(1, 2, pathmap.Entry),
		"connect":     socks.unixAddrHandler(1, 2, pathmap.Follow),
		"sendto":      socks.unixAddrHandler(4, 5, pathmap.Follow),
		"sendmsg":     socks.sendmsgHandler(),
		"getsockname": socks.sockNameHandler(1, 2),
		"getpeername": socks.sockNameHandler(1, 2),
		"accept":      socks.sockNameHandler(1, 2),
		"accept4":     socks.sockNameHandler(1, 2),
	}
	if cfg.Android != nil {
		addAndroid(cfg, tbl) // last: it sees the other emulations
	}
	return tbl
}
