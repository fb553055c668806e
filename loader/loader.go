// Package loader holds droidroot's program loader: a tiny freestanding static ELF
// (one per architecture, built from the C and assembly sources in this directory
// and embedded here) that the tracer runs in place of every guest program, and the
// load script the tracer hands it.
//
// Why a loader: on Android an app may not execve files in its data directory, but
// may mmap them executable. So the tracer execs the loader (which lives with the
// app's native libraries) and the loader maps the guest program and the guest's
// own PT_INTERP (from the rootfs, never the host's) the way the kernel would.
//
// Protocol:
//
//  1. The tracer rewrites the guest's execve(path, argv, envp) into
//     execve(loader, argv, envp), argv and envp unchanged.
//  2. At the PTRACE_EVENT_EXEC stop (pc at the loader's entry, sp at argc as the
//     kernel set it) the tracer writes Script.Encode(sp) at Address(sp, n) in the
//     tracee's memory and sets the first argument register (rdi on amd64, x1 on
//     arm64) to that address.
//  3. The loader maps the program and its interpreter, fixes AT_PHDR, AT_PHENT,
//     AT_PHNUM, AT_ENTRY, AT_BASE and AT_EXECFN in the auxiliary vector and jumps
//     to the interpreter's (or, for a static program, the program's) entry with
//     the original sp. On failure it prints "droidroot loader: ..." to fd 2 and
//     exits with status 127.
//
// The loader's own syscalls (openat, pread64, mmap, munmap, mprotect, close,
// writev, exit_group) take host paths and run from its text, which is mapped at
// LoadAddress; the tracer must let them through untranslated.
//
// The binaries in bin/ are committed so that building droidroot needs no C
// toolchain; after changing the C sources run "make loader" at the repository root.
package loader

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Magic is the first field of a load script: the bytes "DIDROOT1" read as a
// little-endian uint64.
const Magic uint64 = 0x31544f4f52444944

// HeaderSize is the size in bytes of the fixed part of a load script (struct
// dr_load_script in script.h): seven little-endian uint64 fields, followed by the
// NUL-terminated strings the offsets point at.
const HeaderSize = 56

// MaxScriptSize is the largest load script the loader accepts.
const MaxScriptSize = 64 * 1024

// ScriptGap is the minimum distance in bytes between the end of the load script
// and the stack pointer the kernel gave the loader.
const ScriptGap = 4096

// LoadAddress is where the loader's image (its code and read-only data, then the
// 64 KiB bss that holds the load script and the loader's stack) is linked on both
// architectures in variant 0, the one a droidroot that is not nested runs: 128 GiB,
// clear of non-PIE programs at 0x400000, of the kernel's PIE and mmap bases, and
// inside a 39-bit arm64 address space. The kernel puts the brk heap right after it.
const LoadAddress uint64 = 0x2000000000

// The scratch area (script.h's DR_SCRATCH_*): with Script.Scratch the
// loader maps ScratchSize bytes of that file at its variant's Scratch
// address (ScratchAddr in variant 0), shared and read-only; the tracer
// writes the host paths it hands the kernel into its own mapping of the
// file, one ScratchSlot-byte slot per guest thread (slot 0 holds a cookie
// it checks in each process).
const (
	ScratchAddr uint64 = 0x1f00000000
	ScratchSize uint64 = 64 << 20
	ScratchSlot uint64 = 16 << 10
)

// ImageSpan is the most address space a loader's image and bss take from its
// variant's Load address (TestBinary checks it).
const ImageSpan uint64 = 1 << 20

// Variant is one build of the loader: the same code linked at Load, mapping
// the scratch area at Scratch.
type Variant struct {
	Load, Scratch uint64
}

// PassedCalls are the traced system calls the loader makes that the
// tracer lets run as they are while a process loads (Tracer.enter): its
// opens of host paths the tracer gave it (the scratch area, the program,
// its interpreter) and prctl (the program's name; no_new_privs before the
// futex_waitv wake filter), traced under -0 and -i. The filter lets them
// through from the loader's code (tracer.AllowLoader). Not execve: stage
// 2's exec of the first program names a guest path. Keep it in step with
// csrc/loader.c.
var PassedCalls = []string{"openat", "prctl"}

// Variants are the loader's builds (the Makefile's LOADER_ADDRESS_N and
// LOADER_SCRATCH_N; bin/loader-GOARCH, bin/loader-GOARCH-N). A droidroot
// nested in droidroot runs in a process where the outer session's loader and
// scratch area are mapped, as they are in every process of its own guests:
// it takes the first variant whose addresses are free (FreeVariant), so a
// session can be nested three deep.
var Variants = []Variant{
	{LoadAddress, ScratchAddr},
	{0x1e00000000, 0x1d00000000},
	{0x1c00000000, 0x1b00000000},
}

// VariantAt returns the variant linked at load, ok false when none is (a
// loader that is not droidroot's).
func VariantAt(load uint64) (v Variant, ok bool) {
	for _, v := range Variants {
		if v.Load == load {
			return v, true
		}
	}
	return Variant{}, false
}

// FreeVariant returns the index of the first variant whose image and
// scratch area overlap nothing mapped in this process, or -1 when every
// variant's addresses are taken. It asks the kernel (rangeFree: a
// reservation there), not /proc/self/maps: a droidroot nested in a session
// whose rootfs has no /proc still sees the outer loader.
func FreeVariant() int { return firstFree(rangeFree) }

// firstFree returns the index of the first variant whose image and scratch
// area free reports free, -1 for none.
func firstFree(free func(lo, hi uint64) bool) int {
	for i, v := range Variants {
		if free(v.Load, v.Load+ImageSpan) && free(v.Scratch, v.Scratch+ScratchSize) {
			return i
		}
	}
	return -1
}

// freeVariant is FreeVariant on the text of a maps file.
func freeVariant(maps []byte) int {
	var used [][2]uint64
	for _, line := range strings.Split(string(maps), "\n") {
		lo, hi, ok := strings.Cut(strings.SplitN(line, " ", 2)[0], "-")
		if !ok {
			continue
		}
		l, err1 := strconv.ParseUint(lo, 16, 64)
		h, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 == nil && err2 == nil {
			used = append(used, [2]uint64{l, h})
		}
	}
	return firstFree(func(lo, hi uint64) bool {
		for _, u := range used {
			if u[0] < hi && lo < u[1] {
				return false
			}
		}
		return true
	})
}

// FlagScratch in a script's flags says that a little-endian uint64 follows
// the header, the ids block and AT_HWCAP (if any): the offset of
// Script.Scratch.
const FlagScratch = 16

// Script is what the tracer tells the loader to run. The paths must not contain
// NUL bytes (a path with one is cut short at it).
type Script struct {
	// Program is the host path of the program to map.
	Program string
	// Interp is the host path of the program's PT_INTERP inside the rootfs, or ""
	// for a static or static-pie program.
	Interp string
	// ExecFn is the guest path the program is published under as AT_EXECFN.
	ExecFn string
	// IDs, when set, replace the credentials in the auxiliary vector (the
	// tracer's emulated ones); nil leaves the kernel's.
	IDs *IDs
	// HWCap, when set, replaces AT_HWCAP (-k's hwcap field); nil leaves the
	// kernel's.
	HWCap *uint64
	// Scratch, when set, is the path of the file the loader maps as the
	// scratch area (flag FlagScratch): the tracer's /proc/<pid>/fd/<N>.
	Scratch string
	// Wakes are FlagWakesProgram and FlagWakesInterp: the loader installs a
	// filter that traces the FUTEX_WAKE calls made from the program's (the
	// interpreter's) code.
	Wakes uint64
	// ExecStop asks for the droidroot_execstop call at the hand-over
	// (FlagExecStop): a process a guest tracer follows.
	ExecStop bool
}

// IDs are the credentials a program reads from its auxiliary vector.
type IDs struct {
	UID, EUID, GID, EGID uint32 // AT_UID, AT_EUID, AT_GID, AT_EGID
	Secure               bool   // AT_SECURE
}

// FlagIDs in a script's flags says that IDsSize bytes of ids follow the
// header: uid, euid, gid, egid and secure as little-endian uint64s.
const FlagIDs = 1

// IDsSize is the size of the ids block that FlagIDs announces.
const IDsSize = 40

// FlagHWCap in a script's flags says that a little-endian uint64 AT_HWCAP
// follows the header and the ids block (if any).
const FlagHWCap = 2

// FlagWakesProgram and FlagWakesInterp in a script's flags make the loader
// install, before it jumps, a seccomp filter that traces (SECCOMP_RET_TRACE)
// FUTEX_WAKE calls made from the executable segments of the program and of its
// interpreter: a process without the fast path library whose wakes must reach
// the futex_waitv waiters of the session's registry. Nothing follows the
// header for them.
const (
	FlagWakesProgram = 4
	FlagWakesInterp  = 8
)

// Encode returns the load script for s in the loader's layout: the header (magic,
// size, originalSP, offsets of Program, Interp and ExecFn, flags), the ids block
// when s.IDs is set (flag FlagIDs), AT_HWCAP when s.HWCap is (flag FlagHWCap),
// the offset of Scratch when it is set (flag FlagScratch), then the
// FlagExecStop in a script's flags makes the loader call
// droidroot_execstop(entry, sp) (ExecStopNr) right before it jumps to the
// program: the tracer then jumps for it, and reports the exec stop of an
// emulated tracer there. Nothing follows the header for it.
const FlagExecStop = 32

// ExecStopNr is the number of the droidroot_execstop call on every ABI
// (seccomp.OwnSyscalls).
const ExecStopNr = 25715

// NUL-terminated strings,
// padded to a multiple of 16 bytes. originalSP is the stack
// pointer the kernel gave the loader, which points at argc.
func (s Script) Encode(originalSP uint64) []byte {
	buf := make([]byte, HeaderSize, HeaderSize+IDsSize+16+len(s.Program)+len(s.Interp)+len(s.ExecFn)+len(s.Scratch)+4+15)
	le := binary.LittleEndian
	var flags uint64
	if s.IDs != nil {
		flags = FlagIDs
		secure := uint64(0)
		if s.IDs.Secure {
			secure = 1
		}
		for _, v := range []uint64{uint64(s.IDs.UID), uint64(s.IDs.EUID), uint64(s.IDs.GID), uint64(s.IDs.EGID), secure} {
			buf = le.AppendUint64(buf, v)
		}
	}
	if s.HWCap != nil {
		flags |= FlagHWCap
		buf = le.AppendUint64(buf, *s.HWCap)
	}
	scratchAt := -1
	if s.Scratch != "" {
		flags |= FlagScratch
		scratchAt = len(buf)
		buf = le.AppendUint64(buf, 0) // the offset, once the string is placed
	}
	flags |= s.Wakes & (FlagWakesProgram | FlagWakesInterp)
	if s.ExecStop {
		flags |= FlagExecStop
	}
	put := func(str string) uint64 {
		off := uint64(len(buf))
		buf = append(buf, str...)
		buf = append(buf, 0)
		return off
	}
	program := put(s.Program)
	var interp uint64
	if s.Interp != "" {
		interp = put(s.Interp)
	}
	execfn := put(s.ExecFn)
	if scratchAt >= 0 {
		le.PutUint64(buf[scratchAt:], put(s.Scratch))
	}
	for len(buf)%16 != 0 {
		buf = append(buf, 0)
	}
	le.PutUint64(buf[0:], Magic)
	le.PutUint64(buf[8:], uint64(len(buf)))
	le.PutUint64(buf[16:], originalSP)
	le.PutUint64(buf[24:], program)
	le.PutUint64(buf[32:], interp)
	le.PutUint64(buf[40:], execfn)
	le.PutUint64(buf[48:], flags)
	return buf
}

// Address returns where to write a load script of size bytes for a loader whose
// kernel-given stack pointer is originalSP: 16-byte aligned, at least ScriptGap
// bytes below originalSP; the loader runs its own code on the stack below the
// script. The tracer uses it only for a loader without a script area (its bss,
// see the tracer's readLoaderImage): after an exec with a large argument list the
// kernel maps no stack below the initial sp.
func Address(originalSP uint64, size int) uint64 {
	return (originalSP - ScriptGap - uint64(size)) &^ 15
}

//go:embed bin
var bins embed.FS

// Binary returns the embedded loader for goarch ("amd64" or "arm64") in
// variant (an index of Variants). The caller must not modify the returned
// slice.
func Binary(goarch string, variant int) ([]byte, error) {
	if goarch != "amd64" && goarch != "arm64" {
		return nil, fmt.Errorf("loader: no loader for GOARCH %q (have amd64, arm64)", goarch)
	}
	if variant < 0 || variant >= len(Variants) {
		return nil, fmt.Errorf("loader: no variant %d (have %d)", variant, len(Variants))
	}
	name := "bin/loader-" + goarch
	if variant > 0 {
		name += "-" + strconv.Itoa(variant)
	}
	return bins.ReadFile(name)
}

// IsOwn reports whether the file at path is this droidroot's loader for
// goarch in variant (byte for byte), which can also serve as the tracer's
// stage 2.
func IsOwn(path, goarch string, variant int) bool {
	bin, err := Binary(goarch, variant)
	if err != nil {
		return false
	}
	have, err := os.ReadFile(path)
	return err == nil && bytes.Equal(have, bin)
}

// Extract writes the loader for goarch in variant into dir and returns its path,
// which is what the tracer execs. An empty dir means os.TempDir(). The file
// is named after its content (droidroot-loader-<goarch>-<sha256 prefix>), has mode
// 0755 and appears atomically (written under a temporary name, then renamed); an
// existing file with the same content and mode is reused.
//
// On Android the app's data directory is not executable; there the loader must
// instead come from the app's native library directory (PROOT_LOADER).
func Extract(dir, goarch string, variant int) (string, error) {
	bin, err := Binary(goarch, variant)
	if err != nil {
		return "", err
	}
	if dir == "" {
		dir = os.TempDir()
	}
	sum := sha256.Sum256(bin)
	path := filepath.Join(dir, "droidroot-loader-"+goarch+"-"+hex.EncodeToString(sum[:8]))

	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm() == 0o755 {
		if have, err := os.ReadFile(path); err == nil && bytes.Equal(have, bin) {
			return path, nil
		}
	}

	tmp, err := os.CreateTemp(dir, ".droidroot-loader-*")
	if err != nil {
		return "", fmt.Errorf("loader: extract: %w", err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	_, err = tmp.Write(bin)
	if err == nil {
		err = tmp.Chmod(0o755)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return "", fmt.Errorf("loader: extract: %w", err)
	}
	return path, nil
}

// ProbeName is argv[0] that makes the loader the Android policy probe: it calls
// sethostname(NULL, -1), which changes nothing (EPERM or EINVAL) but which
// every Android release's app seccomp policy traps, and exits 0. A probe killed
// by SIGSYS means the process runs under such a policy.
const ProbeName = "droidroot-probe"
