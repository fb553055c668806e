package emul

import (
	"strings"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/tracer"
)

// This file classifies every native syscall of x86_64 and arm64 that
// droidroot has no handler for (docs/security.md): a call with a handler
// is translated (traced); the others are either known harmless (they name
// no file: allowed untraced) or refused on purpose (the filter answers
// them with a fixed errno, SECCOMP_RET_ERRNO). A number that is neither,
// whatever a newer kernel calls it, is answered ENOSYS by the filter, so
// no path syscall a future kernel adds runs untranslated.
// TestClassification checks that every number of both tables is one of the
// three.

// refusals are the calls droidroot refuses, with the errno the filter
// answers and why. Under an Android policy the android layer answers them
// the same (androidAnswerOf), so the guest sees one answer either way.
var refusals = map[string]answer{
	// The mount family takes host paths and changes the host's mount
	// table (a guest running as root, or root in a new user namespace):
	// the answer an unprivileged caller gets.
	"mount": {unix.EPERM, "mounts take host paths"}, "umount2": {unix.EPERM, ""},
	"pivot_root": {unix.EPERM, ""}, "open_tree": {unix.EPERM, "a detached tree of host paths"},
	"move_mount": {unix.EPERM, ""}, "fsopen": {unix.EPERM, ""}, "fsconfig": {unix.EPERM, "its source is a host path"},
	"fsmount": {unix.EPERM, ""}, "fspick": {unix.EPERM, ""}, "mount_setattr": {unix.EPERM, ""},
	"open_tree_attr": {unix.EPERM, ""},
	// The host's mount table by id (libmount falls back to
	// /proc/self/mountinfo, which droidroot shows as the guest's).
	"statmount": {unix.ENOSYS, "libmount falls back to mountinfo"}, "listmount": {unix.ENOSYS, ""},
	// io_uring's path operations (IORING_OP_OPENAT, ...) run in the kernel,
	// possibly in a SQPOLL thread at any time: they cannot be translated.
	// Android's policy blocks them too; liburing users fall back.
	"io_uring_setup": {unix.ENOSYS, "path operations run in the kernel, untranslated"},
	"io_uring_enter": {unix.ENOSYS, ""}, "io_uring_register": {unix.ENOSYS, ""},
	// The xattr *at calls (Linux 6.13) take paths; glibc does not use them
	// yet. file_getattr/file_setattr (6.17, numbers 468/469) are not in
	// the tables yet: the filter answers them ENOSYS as unknown numbers.
	"setxattrat": {unix.ENOSYS, "not translated yet"}, "getxattrat": {unix.ENOSYS, ""},
	"listxattrat": {unix.ENOSYS, ""}, "removexattrat": {unix.ENOSYS, ""},
	// clone3's flags are in guest memory, where the filter cannot check
	// CLONE_UNTRACED (cloneHandler does it for clone); glibc falls back
	// to clone on ENOSYS.
	"clone3": {unix.ENOSYS, "glibc falls back to clone"},
	// Other calls that reach files without a translated path.
	"open_by_handle_at": {unix.EPERM, "a file handle reaches any host file; needs CAP_DAC_READ_SEARCH"},
	"bpf":               {unix.EPERM, "BPF_OBJ_PIN/GET take host paths; unprivileged BPF is usually off"},
	"quotactl":          {unix.ENOSYS, "its special and quota file are host paths; as without CONFIG_QUOTACTL"},
	"uselib":            {unix.ENOSYS, "a host path; removed from Linux (CONFIG_USELIB)"},
	// Names in arm64's table that a 64-bit kernel does not implement: its
	// own ENOSYS (utimensat_time64 would take a path).
	"arch_specific_syscall": {unix.ENOSYS, "not a syscall of the 64-bit ABI"},
	"clock_gettime64":       {unix.ENOSYS, ""}, "clock_settime64": {unix.ENOSYS, ""}, "clock_adjtime64": {unix.ENOSYS, ""},
	"clock_getres_time64": {unix.ENOSYS, ""}, "clock_nanosleep_time64": {unix.ENOSYS, ""},
	"timer_gettime64": {unix.ENOSYS, ""}, "timer_settime64": {unix.ENOSYS, ""},
	"timerfd_gettime64": {unix.ENOSYS, ""}, "timerfd_settime64": {unix.ENOSYS, ""},
	"utimensat_time64": {unix.ENOSYS, ""}, "pselect6_time64": {unix.ENOSYS, ""}, "ppoll_time64": {unix.ENOSYS, ""},
	"io_pgetevents_time64": {unix.ENOSYS, ""}, "recvmmsg_time64": {unix.ENOSYS, ""},
	"mq_timedsend_time64": {unix.ENOSYS, ""}, "mq_timedreceive_time64": {unix.ENOSYS, ""},
	"semtimedop_time64": {unix.ENOSYS, ""}, "rt_sigtimedwait_time64": {unix.ENOSYS, ""},
	"futex_time64": {unix.ENOSYS, ""}, "sched_rr_get_interval_time64": {unix.ENOSYS, ""},
}

// harmless are the calls that run untraced: they name no file (they act on
// fds, memory, signals, ids, time, sockets without an address...). The
// calls some option's layer emulates (SysV IPC, set*id, robust lists,
// uname, close_range, fstat, getdents64, ioctl) are listed too: without
// the option they run as they are. The first group is in both tables, the
// second in x86_64's only.
var harmless = namesOf(`
	add_key adjtimex brk cachestat capget capset clock_adjtime clock_getres clock_gettime
	clock_nanosleep clock_settime clone close close_range copy_file_range delete_module dup
	dup3 epoll_create1 epoll_ctl epoll_pwait epoll_pwait2 eventfd2 exit exit_group fadvise64
	fallocate fanotify_init fchmod fchown fcntl fdatasync fgetxattr finit_module flistxattr
	flock fremovexattr fsetxattr fstat fsync ftruncate futex futex_requeue futex_wait
	futex_waitv futex_wake get_mempolicy get_robust_list getcpu getdents64 getegid geteuid
	getgid getgroups getitimer getpgid getpid getppid getpriority getrandom getresgid
	getresuid getrlimit getrusage getsid getsockopt gettid gettimeofday getuid init_module
	inotify_init1 inotify_rm_watch io_cancel io_destroy io_getevents io_pgetevents io_setup
	io_submit ioctl ioprio_get ioprio_set kcmp kexec_file_load kexec_load keyctl kill
	landlock_add_rule landlock_create_ruleset landlock_restrict_self listen lookup_dcookie
	lseek lsm_get_self_attr lsm_list_modules lsm_set_self_attr madvise map_shadow_stack mbind
	membarrier memfd_create memfd_secret migrate_pages mincore mlock mlock2 mlockall mmap
	move_pages mprotect mq_getsetattr mq_notify mq_open mq_timedreceive mq_timedsend mq_unlink
	mremap mseal msgctl msgget msgrcv msgsnd msync munlock munlockall munmap nanosleep
	nfsservctl perf_event_open personality pidfd_getfd pidfd_open pidfd_send_signal pipe2
	pkey_alloc pkey_free pkey_mprotect ppoll prctl pread64 preadv preadv2 prlimit64
	process_madvise process_mrelease process_vm_readv process_vm_writev pselect6 ptrace
	pwrite64 pwritev pwritev2 quotactl_fd read readahead readv reboot recvmmsg
	recvmsg remap_file_pages request_key restart_syscall rseq rt_sigaction rt_sigpending
	rt_sigprocmask rt_sigqueueinfo rt_sigreturn rt_sigsuspend rt_sigtimedwait
	rt_tgsigqueueinfo sched_get_priority_max sched_get_priority_min sched_getaffinity
	sched_getattr sched_getparam sched_getscheduler sched_rr_get_interval sched_setaffinity
	sched_setattr sched_setparam sched_setscheduler sched_yield semctl semget semop
	semtimedop sendfile sendmmsg set_mempolicy set_mempolicy_home_node set_robust_list
	set_tid_address setdomainname setfsgid setfsuid setgid setgroups sethostname setitimer
	setns setpgid setpriority setregid setresgid setresuid setreuid setrlimit setsid
	setsockopt settimeofday setuid shmat shmctl shmdt shmget shutdown sigaltstack signalfd4
	socket socketpair splice sync sync_file_range syncfs sysinfo syslog tee tgkill
	timer_create timer_delete timer_getoverrun timer_gettime timer_settime timerfd_create
	timerfd_gettime timerfd_settime times tkill umask uname unshare userfaultfd vhangup
	vmsplice wait4 waitid write writev
`, `
	_sysctl afs_syscall alarm arch_prctl create_module dup2 epoll_create epoll_ctl_old
	epoll_wait epoll_wait_old eventfd fork get_kernel_syms get_thread_area getdents getpgrp
	getpmsg inotify_init ioperm iopl modify_ldt pause pipe poll putpmsg query_module security
	select set_thread_area signalfd sysfs time tuxcall uretprobe ustat vfork vserver
`)

// cloneHandler takes CLONE_UNTRACED out of a clone's flags, so that the
// child is traced like every guest process: an untraced one would run its
// path calls untranslated, outlive droidroot and --kill-on-exit, and could
// be ptraced by the guest, which would then let its calls through. The
// filter stops only the clones that ask for it (TraceIf; clone stays
// harmless otherwise, so forks and threads cost no stop). The call then
// succeeds as it would have: the kernel lets any process pass the flag,
// a child cannot tell it is traced (its parent's ptrace of it fails, as
// for every guest process), and refusing it (EINVAL, EPERM) would make
// the program fail where the kernel and proot let it run.
var cloneHandler = tracer.Handler{
	Enter: func(c *tracer.Call) {
		if f := c.Arg(0); f&unix.CLONE_UNTRACED != 0 {
			c.SetArg(0, f&^unix.CLONE_UNTRACED)
		}
	},
	TraceIf: &tracer.ArgMask{Arg: 0, Mask: unix.CLONE_UNTRACED},
}

func namesOf(groups ...string) map[string]bool {
	out := map[string]bool{}
	for _, g := range groups {
		for _, name := range strings.Fields(g) {
			out[name] = true
		}
	}
	return out
}

// Classes returns the classification of the calls without a handler, for
// tracer.Config.Classes.
func Classes() *tracer.Classes {
	c := &tracer.Classes{Harmless: harmless, Refused: map[string]unix.Errno{}}
	for name, a := range refusals {
		c.Refused[name] = a.errno
	}
	return c
}
