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
	// Identity is -0 / -i: the guest's ids (nil: the real ones). It turns
	// on the set*id emulation too, and the owner and privilege fix-ups of
	// file calls (ident.go).
	Identity *Identity
	// EmulateSetID answers the set*id family, setgroups and get*id in the
	// tracer, starting from the real ids (Android blocks set*id).
	EmulateSetID bool
	// SysVIPC answers msg*/sem*/shm* in the tracer for the whole tree
	// (termux proot's --sysvipc; Android forbids them to apps).
	SysVIPC bool
	// EmulateRobustList answers set_robust_list/get_robust_list per thread
	// and does the kernel's owner-died handling at thread exit.
	EmulateRobustList bool
	// EmulateAt2 answers faccessat2, fchmodat2, openat2 and close_range in
	// the tracer with calls Android allows (see at2.go); openat2 honours
	// every RESOLVE_* flag with or without it.
	EmulateAt2 bool
	// Uname is the -k / --kernel-release emulation (nil: none): uname,
	// sethostname, setdomainname and /proc/sys/kernel's names.
	Uname *Uname
	// Link2Symlink emulates hard links (-l/--link2symlink): see
	// link2symlink.go.
	Link2Symlink bool
	// L2SDir is PROOT_L2S_DIR, the host directory where -l keeps the
	// shared data of linked files ("": a .l2s directory at the root of
	// each mount).
	L2SDir string
	// FailLink makes every real link the tracer would let the kernel (or
	// itself) make fail with EPERM, as on Android app storage: a test
	// switch (DROIDROOT_FAIL_LINK=1).
	FailLink bool
	// HideOwnFiles hides droidroot's files from directory listings (-H).
	HideOwnFiles bool
	// TmpDir is where droidroot writes its files (PROOT_TMP_DIR): the
	// generated /proc mount tables, and what -H hides.
	TmpDir string
	// PortShift moves AF_INET/AF_INET6 ports below 1024 up by 2000 (-p).
	PortShift bool
	// LstatLinkSize makes lstat of a symlink report the length of its
	// guest readlink result as st_size (-L).
	LstatLinkSize bool
	// AshmemMemfd emulates /dev/ashmem with memfd_create (--ashmem-memfd).
	AshmemMemfd bool
	// Qemu is the -q/--qemu command (host path and arguments) that runs
	// ELF programs of another architecture; nil for none.
	Qemu []string
	// Android is the Android app policy droidroot runs under (simulated by
	// --android-policy, or a real device's), nil if none: every call it
	// blocks gets a handler that answers it at its SIGSYS stop (rewrite,
	// emulation or the kernel's answer; see android.go). It turns on the
	// switches below.
	Android *seccomp.AndroidPolicy
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
	t := tracer.Table{
		// open and friends
		"open":     pathHandler(p(0, openFollow(1))),
		"creat":    pathHandler(p(0, always)),
		"openat":   pathHandler(at(0, 1, openFollow(2))),
		"openat2":  openat2Handler(cfg.EmulateAt2),
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
	extend(t, cfg)
	activeUname.Store(cfg.Uname)
	if cfg.Uname != nil {
		for name, h := range cfg.Uname.handlers() {
			t[name] = h
		}
	}
	if cfg.EmulateAt2 {
		for name, h := range at2Handlers() {
			t[name] = h
		}
	}
	if cfg.SysVIPC {
		addSysvIPC(t, cfg.TmpDir)
	}
	if cfg.EmulateRobustList {
		addRobustList(t)
	}
	addIdentity(t, cfg)
	if cfg.Android != nil {
		addAndroid(cfg, t) // last: it sees the other emulations
	}
	return t
}
