/*
 * The load script: what the droidroot tracer hands the loader.
 *
 * Protocol (the Go side is loader.Script.Encode in loader.go; keep both in step):
 *
 *   1. The tracer turns the guest's execve(path, argv, envp) into
 *      execve(LOADER, argv, envp), with argv and envp unchanged.
 *   2. At the PTRACE_EVENT_EXEC stop (pc at the loader's entry, sp at argc as the
 *      kernel set it) the tracer writes this script at the top of the loader's script
 *      area (its bss, dr_script_area), or, for a loader without one, into the stack,
 *      16-byte aligned and at least DR_SCRIPT_GAP bytes below sp. It puts the
 *      script's address in the first argument register (rdi on x86_64, x1 on arm64: x0 gets execve's return value).
 *   3. The loader maps the program (and its interpreter), fixes the auxiliary vector
 *      in place and jumps to the entry point with sp = original_sp.
 *
 * All fields are little-endian 64-bit values. String fields are byte offsets from
 * the start of the script to NUL-terminated strings that lie inside the script.
 */
#ifndef DROIDROOT_LOADER_SCRIPT_H
#define DROIDROOT_LOADER_SCRIPT_H

#include <stdint.h>

/* "DIDROOT1": the bytes 'D','I','D','R','O','O','T','1' read as a little-endian uint64. */
#define DR_SCRIPT_MAGIC 0x31544f4f52444944ULL

/* Minimum distance between the script's end and the kernel-given sp. */
#define DR_SCRIPT_GAP 4096

/* Largest script the loader accepts (the header plus three paths of at most PATH_MAX). */
#define DR_SCRIPT_MAX (64 * 1024)

struct dr_load_script {
	uint64_t magic;       /* DR_SCRIPT_MAGIC */
	uint64_t size;        /* total bytes of the script, strings included */
	uint64_t original_sp; /* the sp the kernel gave the loader (points at argc) */
	uint64_t program;     /* offset of the HOST path of the program */
	uint64_t interp;      /* offset of the HOST path of its PT_INTERP, 0 if none
	                         (required if the program has a PT_INTERP, ignored if not) */
	uint64_t execfn;      /* offset of the GUEST path to publish as AT_EXECFN */
	uint64_t flags;       /* DR_FLAG_* bits or 0; other bits must be 0 */
};

/*
 * With DR_FLAG_IDS in flags, a struct dr_ids follows the header (before the
 * strings): the loader writes its values into AT_UID, AT_EUID, AT_GID, AT_EGID
 * and AT_SECURE (the tracer's emulated credentials, -0 / -i).
 */
#define DR_FLAG_IDS 1

struct dr_ids {
	uint64_t uid, euid, gid, egid, secure;
};

/*
 * With DR_FLAG_HWCAP in flags, a uint64_t follows the header and the ids (if any),
 * before the strings: the loader writes it into AT_HWCAP (-k's hwcap field).
 */
#define DR_FLAG_HWCAP 2

/*
 * With DR_FLAG_SCRATCH in flags, a uint64_t follows the header, the ids and the hwcap (if
 * any), before the strings: the offset of a path (the tracer's /proc/<pid>/fd/<N>) that the
 * loader opens read-only and maps, shared and read-only, as the scratch area (issue 18's third
 * race): DR_SCRATCH_SIZE bytes at DR_SCRATCH_ADDR. The tracer writes the host paths it hands
 * the kernel into its own, writable mapping of the same file, one DR_SCRATCH_SLOT-byte slot per
 * guest thread (slot 0 holds a cookie the tracer checks in each process); no guest thread can
 * write the area (its file is open read-only: mprotect cannot add PROT_WRITE). 4 GiB below the
 * loader (variant 0 is linked at 128 GiB), inside a 39-bit address space. Go mirror: loader.Variants,
 * ScratchSize, ScratchSlot, FlagScratch.
 */
#define DR_FLAG_SCRATCH 16
#ifndef DR_SCRATCH_ADDR /* the Makefile sets it per variant (loader.Variants) */
#define DR_SCRATCH_ADDR 0x1f00000000ULL
#endif
#define DR_SCRATCH_SIZE (64ULL << 20)
#define DR_SCRATCH_SLOT (16ULL << 10)

/*
 * DR_FLAG_WAKES_PROGRAM and DR_FLAG_WAKES_INTERP: before it jumps, the loader installs a
 * seccomp filter that traces (SECCOMP_RET_TRACE) the FUTEX_WAKE calls (any flags) made from
 * the executable segments of the program, and of its interpreter, as loaded: a process
 * without the fast path library (static, musl) whose wakes must also reach the futex_waitv
 * waiters the tracer and the library keep in the session's registry. Nothing follows the
 * header for them. Failing to install it is not an error.
 */
#define DR_FLAG_WAKES_PROGRAM 4
#define DR_FLAG_WAKES_INTERP 8

/*
 * DR_FLAG_EXECSTOP: right before it jumps, the loader calls droidroot_execstop(entry, sp)
 * (DR_SYS_EXECSTOP, a number no kernel has; droidroot's filter traces it). The tracer sets
 * the registers a kernel exec leaves (pc = entry, sp = the original sp, the others 0) and
 * skips the call: that stop is the exec stop an emulated tracer (issue 16) sees. The tracer
 * sets the flag only for a process a guest tracer follows. Should the call return, the loader
 * jumps as without the flag. Nothing follows the header for it. Go mirror: loader.FlagExecStop,
 * loader.ExecStopNr.
 */
#define DR_FLAG_EXECSTOP 32
#define DR_SYS_EXECSTOP 25715

/* The header is 56 bytes; the Go mirror (loader.HeaderSize) relies on it. */
typedef char dr_load_script_size_check[sizeof(struct dr_load_script) == 56 ? 1 : -1];

#endif
