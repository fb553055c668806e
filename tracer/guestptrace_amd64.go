package tracer

import "golang.org/x/sys/unix"

// ptAuditArch is the AUDIT_ARCH_* of native syscalls (ptrace_syscall_info.arch).
const ptAuditArch = 0xc000003e // AUDIT_ARCH_X86_64

// firstKeptArg is the first argument register the kernel leaves as the
// guest set it across a call (on x86_64 all of them: the result is rax).
const firstKeptArg = 0

// ptForward are the requests of this architecture forwarded as they are
// to the real tracee: user_regs_struct and user_fpregs_struct.
var ptForward = map[int]ptFwd{
	unix.PTRACE_GETREGS:   {size: 27 * 8},
	unix.PTRACE_SETREGS:   {size: 27 * 8, in: true},
	unix.PTRACE_GETFPREGS: {size: 512},
	unix.PTRACE_SETFPREGS: {size: 512, in: true},
}
