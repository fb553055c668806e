package emul

import (
	"encoding/binary"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/fastpath"
	"github.com/droidroot/droidroot/seccomp"
	"github.com/droidroot/droidroot/tracer"
)

// This file answers the calls Android's app seccomp policy blocks (they
// reach the tracer as SIGSYS stops, see tracer.sigsysStop): rewrites to
// allowed equivalents, emulations, and for the rest the answer a kernel
// would give that keeps programs working. docs/android.md explains each.

// answer is a blocked call's fixed answer.
type answer struct {
	errno unix.Errno
	why   string
}

// androidAnswers is the answer for every blocked call of every release on
// x86_64 and arm64 that is neither rewritten nor emulated (androidRewrites,
// and the other emulations named in androidOthers). TestAndroidAnswers
// proves every listed name has an answer.
var androidAnswers = map[string]answer{
	// Restartable sequences and new process APIs glibc probes: ENOSYS makes
	// it fall back (rseq off for the process, clone for pthread_create).
	"rseq": {unix.ENOSYS, "glibc disables rseq; answered the same for the whole tree"},
	// Proton decides fsync vs esync on futex_waitv's probe: ENOSYS for the
	// whole tree, so wineserver and every client agree on esync.
	"futex_waitv":   {unix.ENOSYS, "Proton then uses esync"},
	"futex_wake":    {unix.ENOSYS, "futex2 calls; the classic futex is allowed"},
	"futex_wait":    {unix.ENOSYS, ""},
	"futex_requeue": {unix.ENOSYS, ""},
	// Robust lists (the ipc helper emulates them with EmulateRobustList).
	"set_robust_list": {unix.ENOSYS, "glibc ignores it"},
	"get_robust_list": {unix.ENOSYS, ""},
	// SysV IPC (emulated with SysVIPC), POSIX message queues, keys.
	"shmget": {unix.ENOSYS, ""}, "shmat": {unix.ENOSYS, ""}, "shmctl": {unix.ENOSYS, ""}, "shmdt": {unix.ENOSYS, ""},
	"semget": {unix.ENOSYS, ""}, "semop": {unix.ENOSYS, ""}, "semctl": {unix.ENOSYS, ""}, "semtimedop": {unix.ENOSYS, ""},
	"msgget": {unix.ENOSYS, ""}, "msgsnd": {unix.ENOSYS, ""}, "msgrcv": {unix.ENOSYS, ""}, "msgctl": {unix.ENOSYS, ""},
	"mq_open": {unix.ENOSYS, ""}, "mq_unlink": {unix.ENOSYS, ""}, "mq_timedsend": {unix.ENOSYS, ""},
	"mq_timedreceive": {unix.ENOSYS, ""}, "mq_notify": {unix.ENOSYS, ""}, "mq_getsetattr": {unix.ENOSYS, ""},
	"add_key": {unix.ENOSYS, ""}, "request_key": {unix.ENOSYS, ""}, "keyctl": {unix.ENOSYS, ""},
	// Identity changes (emulated with EmulateSetID): what an unprivileged
	// process gets for a change it may not make.
	"setuid": {unix.EPERM, ""}, "setgid": {unix.EPERM, ""}, "setreuid": {unix.EPERM, ""},
	"setregid": {unix.EPERM, ""}, "setresgid": {unix.EPERM, ""}, "setgroups": {unix.EPERM, ""},
	// setfsuid/setfsgid never fail: see fsidHandler.
	// New *at calls (emulated with EmulateAt2): glibc falls back on ENOSYS.
	"faccessat2":  {unix.ENOSYS, "glibc falls back to faccessat"},
	"fchmodat2":   {unix.ENOSYS, "glibc falls back to its O_PATH emulation"},
	"openat2":     {unix.ENOSYS, ""},
	"close_range": {unix.ENOSYS, "closefrom iterates /proc/self/fd"},
	// Privileged operations: the unprivileged kernel answer (the mount
	// family is in refusals).
	"swapon": {unix.EPERM, ""}, "swapoff": {unix.EPERM, ""},
	"reboot": {unix.EPERM, ""}, "sethostname": {unix.EPERM, ""}, "setdomainname": {unix.EPERM, ""},
	"settimeofday": {unix.EPERM, ""}, "clock_settime": {unix.EPERM, ""}, "adjtimex": {unix.EPERM, ""},
	"clock_adjtime": {unix.EPERM, ""}, "acct": {unix.EPERM, ""}, "vhangup": {unix.EPERM, ""},
	"syslog": {unix.EPERM, "dmesg_restrict"}, "iopl": {unix.EPERM, ""}, "ioperm": {unix.EPERM, ""},
	"init_module": {unix.EPERM, ""}, "finit_module": {unix.EPERM, ""}, "delete_module": {unix.EPERM, ""},
	"kexec_load": {unix.EPERM, ""}, "kexec_file_load": {unix.EPERM, ""},
	"fanotify_init": {unix.EPERM, ""}, "fanotify_mark": {unix.EINVAL, "no fanotify fd can exist"},
	"name_to_handle_at": {unix.EOPNOTSUPP, "the file system does not support handles"},
	"quotactl_fd":       {unix.EPERM, ""}, "lookup_dcookie": {unix.EPERM, ""},
	// Optional kernel features: ENOSYS is "not built in", which every user
	// of them handles. io_uring is in refusals.
	"io_pgetevents":           {unix.ENOSYS, ""},
	"landlock_create_ruleset": {unix.ENOSYS, "Landlock unsupported: sandboxing is best effort"},
	"landlock_add_rule":       {unix.ENOSYS, ""}, "landlock_restrict_self": {unix.ENOSYS, ""},
	"pkey_mprotect": {unix.ENOSYS, ""}, "pkey_alloc": {unix.ENOSYS, ""}, "pkey_free": {unix.ENOSYS, ""},
	"memfd_secret": {unix.ENOSYS, ""}, "mseal": {unix.ENOSYS, ""}, "map_shadow_stack": {unix.ENOSYS, ""},
	"process_mrelease": {unix.ENOSYS, ""}, "cachestat": {unix.ENOSYS, ""}, "kcmp": {unix.ENOSYS, ""},
	"mbind": {unix.ENOSYS, "libnuma: no NUMA"}, "set_mempolicy": {unix.ENOSYS, ""}, "get_mempolicy": {unix.ENOSYS, ""},
	"migrate_pages": {unix.ENOSYS, ""}, "move_pages": {unix.ENOSYS, ""}, "set_mempolicy_home_node": {unix.ENOSYS, ""},
	"remap_file_pages": {unix.ENOSYS, ""}, "lsm_get_self_attr": {unix.ENOSYS, ""},
	"lsm_set_self_attr": {unix.ENOSYS, ""}, "lsm_list_modules": {unix.ENOSYS, ""},
	"epoll_pwait2": {unix.ENOSYS, "libuv and glib fall back to epoll_pwait"},
	"uretprobe":    {unix.ENOSYS, ""}, "modify_ldt": {unix.ENOSYS, ""},
	"set_thread_area": {unix.ENOSYS, ""}, "get_thread_area": {unix.ENOSYS, ""},
	// Removed or never implemented in Linux: the kernel's own ENOSYS.
	"ustat": {unix.ENOSYS, ""}, "sysfs": {unix.ENOSYS, ""}, "_sysctl": {unix.ENOSYS, ""},
	"create_module": {unix.ENOSYS, ""}, "get_kernel_syms": {unix.ENOSYS, ""}, "query_module": {unix.ENOSYS, ""},
	"nfsservctl": {unix.ENOSYS, ""}, "getpmsg": {unix.ENOSYS, ""}, "putpmsg": {unix.ENOSYS, ""},
	"afs_syscall": {unix.ENOSYS, ""}, "tuxcall": {unix.ENOSYS, ""}, "security": {unix.ENOSYS, ""},
	"vserver": {unix.ENOSYS, ""}, "epoll_ctl_old": {unix.ENOSYS, ""}, "epoll_wait_old": {unix.ENOSYS, ""},
}

// androidOthers names the blocked calls other emulations answer when their
// switch is on and the table has a handler for them; otherwise
// androidAnswers applies.
func androidOthers(cfg Config, name string) bool {
	switch {
	case cfg.SysVIPC && (strings.HasPrefix(name, "shm") || strings.HasPrefix(name, "sem") || strings.HasPrefix(name, "msg")):
		return true
	case cfg.EmulateRobustList && strings.HasSuffix(name, "_robust_list"):
		return true
	case cfg.EmulateSetID && (strings.HasPrefix(name, "set") && (strings.HasSuffix(name, "id") || name == "setgroups")):
		return name != "sethostname" && name != "setdomainname"
	case cfg.EmulateAt2 && (name == "faccessat2" || name == "fchmodat2" || name == "openat2" || name == "close_range"):
		return true
	case cfg.EmulateSetID && (name == "capget" || name == "capset" || name == "prctl"):
		return true
	case cfg.Uname != nil && (name == "sethostname" || name == "setdomainname"):
		return true
	case name == "chroot": // chrootHandler emulates it
		return true
	}
	return false
}

// androidBlockedNames returns the names of the native calls p blocks (for
// a device policy, those some known release blocks).
func androidBlockedNames(p *seccomp.AndroidPolicy) map[string]bool {
	abi := tracer.NativeABI()
	out := map[string]bool{}
	for _, name := range p.BlockedNames(abi) {
		out[name] = true
	}
	for name, nr := range abi.Names {
		if p.Blocks(abi, nr) {
			out[name] = true
		}
	}
	return out
}

// addAndroid puts into tbl a handler for every native call cfg.Android
// blocks: a rewrite, an emulation, or its answer. tbl already holds the
// other emulations cfg turns on.
func addAndroid(cfg Config, tbl *tableBuilder) {
	for name := range androidBlockedNames(cfg.Android) {
		if _, ok := tbl.get(name); ok && androidOthers(cfg, name) {
			continue // another emulation (setfsuid with EmulateSetID, ...)
		}
		if name == "futex_waitv" && cfg.FastPath != nil && cfg.FastPath.Lib.Flags&fastpath.FlagWaitv != 0 && cfg.FastPath.Lib.Registry != "" {
			// The library answers it: so does the tracer, for the
			// processes without the library (waitv.go).
			w := newWaitvEmu(cfg.FastPath.Lib.Registry)
			tbl.e.waitv = w
			tbl.set(name, w.handler())
			tbl.set("futex", w.wakeHandler())
			continue
		}
		if h, ok := androidRewrites[name]; ok {
			tbl.set(name, h)
			continue
		}
		tbl.set(name, answerHandler(androidAnswerOf(name)))
	}
}

// androidAnswerOf returns name's answer: droidroot's own refusal when its
// filter refuses it (Android's trap wins over the filter's errno, so the
// answer must be the same), ENOSYS when not listed.
func androidAnswerOf(name string) answer {
	if a, ok := refusals[name]; ok {
		return a
	}
	if a, ok := androidAnswers[name]; ok {
		return a
	}
	return answer{unix.ENOSYS, "unknown"}
}

func answerHandler(a answer) tracer.Handler {
	return tracer.Handler{Enter: func(c *tracer.Call) { c.Fail(a.errno) }}
}

// nrOf returns the native number of name, or -1.
func nrOf(name string) int {
	if n, ok := nativeNr(name); ok {
		return n
	}
	return -1
}

// restartAs returns a handler that restarts the call as name with the
// arguments args computes from the call (nil: unchanged), or answers
// errno if args returns one.
func restartAs(name string, args func(c *tracer.Call) ([]uint64, unix.Errno)) tracer.Handler {
	return tracer.Handler{Enter: func(c *tracer.Call) {
		n := nrOf(name)
		if n < 0 {
			c.Fail(unix.ENOSYS)
			return
		}
		var a []uint64
		if args != nil {
			var errno unix.Errno
			if a, errno = args(c); errno != 0 {
				c.Fail(errno)
				return
			}
		}
		c.Restart(n, a...)
	}}
}

// shift returns args computing the new arguments: each element is either
// an argument index of the old call (0-5) or a constant (constArg(v)).
func shift(spec ...argSpec) func(c *tracer.Call) ([]uint64, unix.Errno) {
	return func(c *tracer.Call) ([]uint64, unix.Errno) {
		out := make([]uint64, len(spec))
		for i, s := range spec {
			if s.old >= 0 {
				out[i] = c.Arg(s.old)
			} else {
				out[i] = s.v
			}
		}
		return out, 0
	}
}

// argSpec is one argument of a rewritten call (see shift).
type argSpec struct {
	old int // argument index, or -1 for v
	v   uint64
}

// oldArg is argument i of the old call.
func oldArg(i int) argSpec { return argSpec{old: i} }

// constArg is the constant v (sign-extended, as a register holds it).
func constArg(v int64) argSpec { return argSpec{old: -1, v: uint64(v)} }

// fdcwdArg is AT_FDCWD.
func fdcwdArg() argSpec { return constArg(unix.AT_FDCWD) }

// errRestartNoHand is the kernel-internal ERESTARTNOHAND a syscall-exit
// stop can show.
const errRestartNoHand = 514

// zeroArg is the constant 0.
func zeroArg() argSpec { return constArg(0) }

// flagArg is the flag bits v.
func flagArg(v uint64) argSpec { return argSpec{old: -1, v: v} }

// androidRewrites are the blocked calls answered by rewriting them to an
// allowed call (restarted, so path translation happens once, at the new
// call's own stop) or by emulating them.
var androidRewrites = map[string]tracer.Handler{
	"rseq":        {Enter: func(c *tracer.Call) { c.Fail(unix.ENOSYS) }},
	"futex_waitv": {Enter: func(c *tracer.Call) { c.Fail(unix.ENOSYS) }},
	"accept":      restartAs("accept4", shift(oldArg(0), oldArg(1), oldArg(2), zeroArg())),
	"setfsuid":    fsidHandler(2),
	"setfsgid":    fsidHandler(3),
	// x86_64's legacy calls.
	"access":     restartAs("faccessat", shift(fdcwdArg(), oldArg(0), oldArg(1))),
	"stat":       restartAs("newfstatat", shift(fdcwdArg(), oldArg(0), oldArg(1), zeroArg())),
	"lstat":      restartAs("newfstatat", shift(fdcwdArg(), oldArg(0), oldArg(1), flagArg(unix.AT_SYMLINK_NOFOLLOW))),
	"mkdir":      restartAs("mkdirat", shift(fdcwdArg(), oldArg(0), oldArg(1))),
	"rmdir":      restartAs("unlinkat", shift(fdcwdArg(), oldArg(0), flagArg(unix.AT_REMOVEDIR))),
	"unlink":     restartAs("unlinkat", shift(fdcwdArg(), oldArg(0), zeroArg())),
	"rename":     restartAs("renameat", shift(fdcwdArg(), oldArg(0), fdcwdArg(), oldArg(1))),
	"link":       restartAs("linkat", shift(fdcwdArg(), oldArg(0), fdcwdArg(), oldArg(1), zeroArg())),
	"symlink":    restartAs("symlinkat", shift(oldArg(0), fdcwdArg(), oldArg(1))),
	"chmod":      restartAs("fchmodat", shift(fdcwdArg(), oldArg(0), oldArg(1))),
	"chown":      restartAs("fchownat", shift(fdcwdArg(), oldArg(0), oldArg(1), oldArg(2), zeroArg())),
	"lchown":     restartAs("fchownat", shift(fdcwdArg(), oldArg(0), oldArg(1), oldArg(2), flagArg(unix.AT_SYMLINK_NOFOLLOW))),
	"creat":      restartAs("openat", shift(fdcwdArg(), oldArg(0), flagArg(unix.O_CREAT|unix.O_WRONLY|unix.O_TRUNC), oldArg(1))),
	"mknod":      restartAs("mknodat", shift(fdcwdArg(), oldArg(0), oldArg(1), oldArg(2))),
	"utime":      utimeHandler,
	"utimes":     utimesHandler(-1, 0, 1),
	"futimesat":  utimesHandler(0, 1, 2),
	"pipe":       restartAs("pipe2", shift(oldArg(0), zeroArg())),
	"dup2":       dup2Handler,
	"poll":       pollHandler,
	"select":     selectHandler,
	"pause":      restartAs("ppoll", shift(zeroArg(), zeroArg(), zeroArg(), zeroArg(), zeroArg())),
	"alarm":      alarmHandler,
	"time":       timeHandler,
	"fork":       restartAs("clone", shift(flagArg(uint64(unix.SIGCHLD)), zeroArg(), zeroArg(), zeroArg(), zeroArg())),
	"getpgrp":    restartAs("getpgid", shift(zeroArg())),
	"epoll_wait": restartAs("epoll_pwait", shift(oldArg(0), oldArg(1), oldArg(2), oldArg(3), zeroArg(), constArg(8))),
	"epoll_create": restartAs("epoll_create1", func(c *tracer.Call) ([]uint64, unix.Errno) {
		if int32(c.Arg(0)) <= 0 {
			return nil, unix.EINVAL
		}
		return []uint64{0}, 0
	}),
	"inotify_init": restartAs("inotify_init1", shift(zeroArg())),
	"eventfd":      restartAs("eventfd2", shift(oldArg(0), zeroArg())),
	"signalfd":     restartAs("signalfd4", shift(oldArg(0), oldArg(1), oldArg(2), zeroArg())),
}

// fsidHandler answers setfsuid/setfsgid, which never fail and return the
// previous fs id: the caller's own ids are the only ones an unprivileged
// process may set, so the call changes nothing and returns the current fs
// id (field 3 of the Uid:/Gid: line of /proc/TID/status; col is its index).
func fsidHandler(col int) tracer.Handler {
	key := "Uid:"
	if col == 3 {
		key = "Gid:"
	}
	return tracer.Handler{Enter: func(c *tracer.Call) {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(c.Tid()) + "/status")
		if err != nil {
			c.Fail(unix.ESRCH)
			return
		}
		for _, line := range strings.Split(string(data), "\n") {
			if f := strings.Fields(line); len(f) == 5 && f[0] == key {
				v, _ := strconv.ParseInt(f[4], 10, 64)
				c.Return(v)
				return
			}
		}
		c.Fail(unix.ESRCH)
	}}
}

// le64 reads little-endian 64-bit words.
func le64(b []byte, i int) int64 { return int64(binary.LittleEndian.Uint64(b[8*i:])) }

func put64(b []byte, i int, v int64) { binary.LittleEndian.PutUint64(b[8*i:], uint64(v)) }

// restartReserve is the room left below the stack pointer for the handler
// of a traced call restarted with data pushed for it: the host paths it
// pushes in turn.
const restartReserve = 2*tracer.PathMax + 512

// utimeHandler rewrites utime(path, {actime, modtime}) to utimensat.
var utimeHandler = tracer.Handler{Enter: func(c *tracer.Call) {
	n := nrOf("utimensat")
	times := c.Arg(1)
	if times == 0 {
		c.Restart(n, atFDCWDReg, c.Arg(0), 0, 0)
		return
	}
	var in [16]byte
	if c.ReadMem(times, in[:]) != nil {
		c.Fail(unix.EFAULT)
		return
	}
	var ts [32]byte
	c.Reserve(restartReserve)
	put64(ts[:], 0, le64(in[:], 0))
	put64(ts[:], 2, le64(in[:], 1))
	addr, err := c.Push(ts[:])
	if err != nil {
		c.Fail(unix.EFAULT)
		return
	}
	c.Restart(n, atFDCWDReg, c.Arg(0), addr, 0)
}}

// utimesHandler rewrites utimes(path, tv[2]) and futimesat(dirfd, path,
// tv[2]) to utimensat; dirArg -1 means AT_FDCWD.
func utimesHandler(dirArg, pathArg, tvArg int) tracer.Handler {
	return tracer.Handler{Enter: func(c *tracer.Call) {
		n := nrOf("utimensat")
		dir := atFDCWDReg
		if dirArg >= 0 {
			dir = c.Arg(dirArg)
		}
		tv := c.Arg(tvArg)
		if tv == 0 {
			c.Restart(n, dir, c.Arg(pathArg), 0, 0)
			return
		}
		var in [32]byte
		if c.ReadMem(tv, in[:]) != nil {
			c.Fail(unix.EFAULT)
			return
		}
		var ts [32]byte
		c.Reserve(restartReserve)
		for i := 0; i < 2; i++ {
			sec, usec := le64(in[:], 2*i), le64(in[:], 2*i+1)
			if usec < 0 || usec >= 1000000 {
				c.Fail(unix.EINVAL)
				return
			}
			put64(ts[:], 2*i, sec)
			put64(ts[:], 2*i+1, usec*1000)
		}
		addr, err := c.Push(ts[:])
		if err != nil {
			c.Fail(unix.EFAULT)
			return
		}
		c.Restart(n, dir, c.Arg(pathArg), addr, 0)
	}}
}

// dup2Handler rewrites dup2 to dup3, except dup2(fd, fd), which returns fd
// if it is open (EBADF otherwise) where dup3 would fail with EINVAL: that
// one becomes fcntl(fd, F_GETFD), whose success is turned into fd.
var dup2Handler = tracer.Handler{Enter: func(c *tracer.Call) {
	oldfd, newfd := c.Arg(0), c.Arg(1)
	if uint32(oldfd) != uint32(newfd) {
		c.Restart(nrOf("dup3"), oldfd, newfd, 0)
		return
	}
	c.Restart(nrOf("fcntl"), oldfd, unix.F_GETFD)
	fd := int64(uint32(oldfd))
	c.AfterRestart(func(c *tracer.Call) {
		if c.Ret() >= 0 {
			c.Return(fd)
		}
	})
}}

// pollHandler rewrites poll(fds, n, ms) to ppoll(fds, n, ts, NULL, 8),
// ts NULL for a negative timeout.
var pollHandler = tracer.Handler{Enter: func(c *tracer.Call) {
	ms := int64(int32(c.Arg(2)))
	var ts uint64
	if ms >= 0 {
		var b [16]byte
		put64(b[:], 0, ms/1000)
		put64(b[:], 1, ms%1000*1000000)
		var err error
		if ts, err = c.Push(b[:]); err != nil {
			c.Fail(unix.EFAULT)
			return
		}
	}
	c.Restart(nrOf("ppoll"), c.Arg(0), c.Arg(1), ts, 0, 8)
}}

// selectHandler rewrites select(n, r, w, e, tv) to pselect6(n, r, w, e,
// ts, NULL) and, like select, writes the time left back into tv.
var selectHandler = tracer.Handler{Enter: func(c *tracer.Call) {
	n := nrOf("pselect6")
	tv := c.Arg(4)
	if tv == 0 {
		c.Restart(n, c.Arg(0), c.Arg(1), c.Arg(2), c.Arg(3), 0, 0)
		return
	}
	var in [16]byte
	if c.ReadMem(tv, in[:]) != nil {
		c.Fail(unix.EFAULT)
		return
	}
	sec, usec := le64(in[:], 0), le64(in[:], 1)
	// As fs/select.c: the microseconds may exceed a second; anything
	// negative is EINVAL.
	sec, nsec := sec+usec/1000000, usec%1000000*1000
	if sec < 0 || nsec < 0 {
		c.Fail(unix.EINVAL)
		return
	}
	var b [16]byte
	put64(b[:], 0, sec)
	put64(b[:], 1, nsec)
	ts, err := c.Push(b[:])
	if err != nil {
		c.Fail(unix.EFAULT)
		return
	}
	c.Restart(n, c.Arg(0), c.Arg(1), c.Arg(2), c.Arg(3), ts, 0)
	c.AfterRestart(func(c *tracer.Call) {
		var left [16]byte
		if c.ReadMem(ts, left[:]) != nil {
			return
		}
		var out [16]byte
		put64(out[:], 0, le64(left[:], 0))
		put64(out[:], 1, le64(left[:], 1)/1000)
		if c.WriteMem(tv, out[:]) != nil && c.Ret() == -errRestartNoHand {
			c.Fail(unix.EINTR)
		}
	})
}}

// alarmHandler rewrites alarm(s) to setitimer(ITIMER_REAL, {0, s}, &old)
// and returns old's seconds rounded as alarm does.
var alarmHandler = tracer.Handler{Enter: func(c *tracer.Call) {
	var b [64]byte // new itimerval, then old
	put64(b[:], 2, int64(uint32(c.Arg(0))))
	addr, err := c.Push(b[:])
	if err != nil {
		c.Fail(unix.EFAULT)
		return
	}
	c.Restart(nrOf("setitimer"), unix.ITIMER_REAL, addr, addr+32)
	c.AfterRestart(func(c *tracer.Call) {
		if c.Ret() < 0 {
			return
		}
		var old [32]byte
		if c.ReadMem(addr+32, old[:]) != nil {
			return
		}
		sec, usec := le64(old[:], 2), le64(old[:], 3)
		if sec == 0 && usec != 0 || usec >= 500000 {
			sec++
		}
		c.Return(sec)
	})
}}

// timeHandler answers time(tloc) with the tracer's clock, the same
// CLOCK_REALTIME the guest's would read.
var timeHandler = tracer.Handler{Enter: func(c *tracer.Call) {
	now := time.Now().Unix()
	if tloc := c.Arg(0); tloc != 0 {
		var b [8]byte
		put64(b[:], 0, now)
		if c.WriteMem(tloc, b[:]) != nil {
			c.Fail(unix.EFAULT)
			return
		}
	}
	c.Return(now)
}}
