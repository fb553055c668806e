package tracer

// ptAuditArch is the AUDIT_ARCH_* of native syscalls (ptrace_syscall_info.arch).
const ptAuditArch = 0xc00000b7 // AUDIT_ARCH_AARCH64

// firstKeptArg is the first argument register the kernel leaves as the
// guest set it across a call (on arm64 x0 carries the result).
const firstKeptArg = 1

// ptForward are the requests of this architecture forwarded as they are
// to the real tracee: none (arm64 has only the register-set requests).
var ptForward = map[int]ptFwd{}
