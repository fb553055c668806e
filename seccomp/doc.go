// Package seccomp builds and installs the seccomp BPF program every guest
// process of droidroot runs. It decides, per system call ABI and number,
// which calls reach the ptrace tracer (SECCOMP_RET_TRACE, seen by the
// tracer as a PTRACE_EVENT_SECCOMP stop), which run untraced
// (SECCOMP_RET_ALLOW), which the filter refuses itself with a fixed errno
// (SECCOMP_RET_ERRNO: Errno actions, and Policy.Default for the numbers
// no rule lists), and which are trapped (SECCOMP_RET_TRAP: the calls
// of ABIs droidroot does not translate, which the tracer answers with
// ENOSYS at their SIGSYS stop, and under an Android policy its blocked
// calls).
//
// # Program layout
//
// One classic BPF program covers every ABI of the host (HostABIs):
//
//	ld  [4]                      ; seccomp_data.arch
//	jeq AUDIT_ARCH_X86_64 -> A   ; one test per host arch (amd64: X86_64, I386;
//	jeq AUDIT_ARCH_I386   -> B   ;                         arm64: AARCH64, ARM)
//	ret TRAP|DataUnknownArch     ; arch of no host ABI
//	A: ld [0]                    ; seccomp_data.nr
//	   jset X32_SYSCALL_BIT -> x32 tree, else x86_64 tree
//	   x86_64 tree
//	   x32 tree
//	B: ld [0]
//	   i386 tree
//	argument checks: ld args[i] (low word); jset mask -> a target, else another
//	shared targets: ret ALLOW; ret TRAP|DataUnsupportedABI;
//	   ret ERRNO|e for each errno used; entry block; exit block
//
// Each ABI's tree is a balanced binary search over the runs of consecutive
// numbers that share an action (untraced gaps included): every inner node
// is one "jge #first-number-of-the-right-half", so the number of tests
// before any decision is ceil(log2(runs)), about log2(2N) for N traced
// calls. Leaves are jumps to the shared targets, or, for a number with an
// ArgRule (Policy.ArgRules: clone with CLONE_UNTRACED), to its argument
// check, which jumps to the target of the rule's action or of the number's
// own; an ABI the policy has no rules for is a single jump to
// "ret TRAP|DataUnsupportedABI", so nothing of an unknown ABI is ever
// allowed silently.
//
// Conditional jumps reach at most 255 instructions ahead. The assembler
// (see resolve) redirects a jump that is too far to an equivalent
// instruction within reach, or inserts one right after it: a copy of the
// target when that is a "ret", else a "ja" (which has a 32-bit offset). So
// any program the policy needs assembles, and each test on a path costs at
// most one extra "ja".
//
// The entry and exit blocks are "ret TRACE|DataEntry" and
// "ret TRACE|DataExit". With a trampoline page T (Policy.Trampoline) they
// first read instruction_pointer (high word, then low word) and return
// ALLOW if T <= ip < T+4096: the tracer can make a traced call from its
// own page in the tracee without stopping itself.
//
// # The kernel's action cache
//
// Since Linux 5.11 the kernel emulates each new filter for every syscall
// number of the native and compat arch with the arguments unknown; a call
// whose result is ALLOW without reading anything but nr and arch is cached
// and later skips the filter entirely. The program therefore reads the
// instruction pointer only after the number dispatch and only on the path
// of a traced call: every Allow call of every ABI is a constant ALLOW
// (only "ld nr/arch", "jeq/jge/jset #k", "ja" and "ret #k" on its path);
// an Errno call is a constant decision the same way (the kernel caches
// only ALLOW, but the filter still reads nothing else for it). A number
// with an ArgRule reads its argument on its own branch only: that number
// is not cached (the filter runs at each of its calls, a few
// instructions), every other one is.
// x32 numbers are above the kernel's cache range and always run the
// filter; that costs a few instructions, not a tracer stop.
//
// # Installing
//
// Install sets no_new_privs and loads the filter with seccomp(2); it must
// run in the process that is about to exec the guest (droidroot's stage
// 2). Available probes for filter support without installing anything;
// without it droidroot falls back to ptrace alone (ErrUnavailable).
package seccomp
