// Package fastpath holds droidroot's fast path: a small C library (one per
// architecture, built from csrc/ and embedded here) that ld.so preloads into
// every dynamically linked glibc guest process, and the Go side of its
// protocol with the tracer.
//
// The library answers the common path calls (stat, lstat, fstatat, statx,
// fstat, access, open, readlink, the write family and their glibc aliases,
// and the same calls made through syscall(), openat2 included) inside the
// guest process when it can prove the tracer would answer them the same
// way, and otherwise makes the ordinary system call, which droidroot's
// filter traps as before. See docs/fastpath.md.
//
// Protocol:
//
//  1. droidroot binds the library file at GuestPath and serves the guest's
//     /etc/ld.so.preload with that path added (MergePreload) to the first
//     reader of each exec'd program: ld.so.
//  2. The library's constructor makes the droidroot_fastpath call
//     (SyscallNr): droidroot_fastpath(buf, size, &enabled, &cwd, CwdSize,
//     &guard).
//     The tracer writes the session's configuration (Config.Encode) into
//     buf and returns its length, or fails the call with ENOSYS when the
//     fast path is off for that process. It remembers &enabled and writes
//     0 there when the process installs a seccomp filter of its own, and
//     &cwd, where it publishes its getcwd answers (CwdHostOff), and &guard,
//     the descriptor guard word (FlagFDGuard).
//  3. The library maps the trampoline page of its own file at
//     Config.Trampoline (MAP_FIXED_NOREPLACE); the filter lets the calls
//     TrampolineCalls names through from that page untraced.
//
// The binaries in bin/ are committed so that building droidroot needs no C
// toolchain; after changing csrc/ run "make fastpath" at the repository root.
package fastpath

import (
	"bytes"
	"crypto/sha256"
	_ "embed" // for the prebuilt libraries
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

//go:embed bin/libdroidroot-fastpath-amd64.so
var libAMD64 []byte

//go:embed bin/libdroidroot-fastpath-arm64.so
var libARM64 []byte

// SyscallNr is the number of the droidroot_fastpath call on every ABI: one
// no kernel has, which only droidroot's tracer answers.
const SyscallNr = 25714

// SyscallName is the handler table's name of the droidroot_fastpath call.
const SyscallName = "droidroot_fastpath"

// GuestPath is where guests see the library: a bind of its host file.
const GuestPath = "/.droidroot/libdroidroot-fastpath.so"

// FileName is the library's file name beside PROOT_LOADER on Android.
const FileName = "libdroidroot-fastpath.so"

// TrampolineCalls are the syscalls the library makes through its
// trampoline page, by native name: the filter lets exactly these through
// from the page.
var TrampolineCalls = []string{"openat", "openat2", "newfstatat", "fstatat", "statx", "faccessat", "faccessat2", "readlinkat", "fstat", "close",
	"mkdirat", "unlinkat", "renameat2", "symlinkat", "linkat", "fchmodat", "fchownat", "utimensat", "truncate", "mknodat",
	"getcwd", "getdents64", "sendmsg", "sendto", "connect", "bind", "getsockname", "getpeername", "accept4", "recvfrom", "getxattr", "setxattr", "listxattr", "removexattr", "fstatfs", "getresuid", "getresgid", "capget", "wait4"}

// The cwd record (fastpath.c's struct fp_cwd), which the handshake's
// fourth argument points at: seq (uint32), the waits word at CwdWaitsOff
// (uint32, then 8 bytes of padding), the ids record at CwdIDsOff, the host path's and the guest path's lengths at
// CwdLenOff (uint32 each, then 8 bytes of padding), the host path at
// CwdHostOff and the guest path at CwdGuestOff, each at most CwdMax-1
// bytes. The tracer writes it after it answered a getcwd: seq 0, the
// lengths and the paths (one write from CwdLenOff, which leaves the ids
// record as it is), then a seq it never wrote before.
//
// The ids record (struct fp_ids, IDsSize bytes, with FlagGetIDs): its own
// seq, then uid, euid, suid, gid, egid and sgid (uint32 each) and 4 bytes
// of padding. The tracer writes it at the handshake (the ids, then a seq
// it never wrote before) when every thread of the process has the same
// emulated ids, and writes its seq 0 before any set*id call of the
// process's threads (or of a process sharing its memory) runs. A library
// whose handshake gives a record smaller than CwdSize gets neither record
// written.
//
// The waits word: WaitsOwn while the process traces nobody (a guest's
// ptrace), written at the handshake; 0 (the library's own start) from the
// moment it traces someone (tracer.EventGuestTracer), before any emulated
// stop is pending. The library makes a wait4 with WNOHANG in-process only
// while the word is WaitsOwn, before and after the call.
const (
	CwdWaitsOff = 4
	WaitsOwn    = 1
	CwdIDsOff   = 16
	IDsSize     = 32
	CwdLenOff   = CwdIDsOff + IDsSize
	CwdHostOff  = CwdLenOff + 16
	CwdMax      = 4096
	CwdGuestOff = CwdHostOff + CwdMax
	CwdSize     = CwdGuestOff + CwdMax
)

// Library returns the library for goarch.
func Library(goarch string) ([]byte, error) {
	switch goarch {
	case "amd64":
		return libAMD64, nil
	case "arm64":
		return libARM64, nil
	}
	return nil, fmt.Errorf("fastpath: no library for GOARCH %q (have amd64, arm64)", goarch)
}

// Extract writes the library for goarch into dir (os.TempDir() if empty)
// under a name derived from its content, unless it is there already, and
// returns its path.
//
// The name is the library's GNU build ID (a SHA-1 of the linker's output,
// in its first page), so that naming it reads one page of the embedded
// bytes, not all of them (about 50 page faults of droidroot's own binary at
// each start); a library without one is named by its SHA-256. A file
// already at the name is taken as it is when it can only have been written
// so, by this user: a regular file of the library's size, owned by the
// effective user and writable by nobody else (another user cannot make a
// file of ours, in a sticky /tmp or anywhere), as Extract writes it through
// a temporary file renamed into place, or by root. Anything else is written
// again; where it cannot be replaced (another user's, in a sticky /tmp), the
// library goes to a name with the effective uid appended.
func Extract(dir, goarch string) (string, error) {
	lib, err := Library(goarch)
	if err != nil {
		return "", err
	}
	if dir == "" {
		dir = os.TempDir()
	}
	id := BuildID(lib)
	if id == "" {
		sum := sha256.Sum256(lib)
		id = hex.EncodeToString(sum[:8])
	}
	path := filepath.Join(dir, "droidroot-fastpath-"+goarch+"-"+id+".so")
	// Another user's copy at the name (a shared /tmp), which this user can
	// neither trust nor replace (sticky): a name of this user's own.
	own := filepath.Join(dir, "droidroot-fastpath-"+goarch+"-"+id+"-"+strconv.Itoa(os.Geteuid())+".so")
	for _, p := range []string{path, own} {
		if ours(p, int64(len(lib))) {
			return p, nil
		}
	}
	tmp, err := os.CreateTemp(dir, ".droidroot-fastpath-*")
	if err != nil {
		return "", fmt.Errorf("fastpath: extract: %w", err)
	}
	defer os.Remove(tmp.Name()) // fails harmlessly once renamed
	_, err = tmp.Write(lib)
	if err == nil {
		err = tmp.Chmod(0o755)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
		if errors.Is(err, fs.ErrPermission) {
			err, path = os.Rename(tmp.Name(), own), own
		}
	}
	if err != nil {
		return "", fmt.Errorf("fastpath: extract: %w", err)
	}
	return path, nil
}

// ours tells whether path is a regular file of size bytes that only this
// process's effective user (or root, who can change any of its files
// anyway) can have written: owned by either, writable by nobody else.
func ours(path string, size int64) bool {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != size || fi.Mode().Perm()&0o022 != 0 {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && (int(st.Uid) == os.Geteuid() || st.Uid == 0)
}

// BuildID returns the GNU build ID of ELF image lib in hex (the first 16
// digits), or "" if it has none. Only the headers and the note are read.
func BuildID(lib []byte) string {
	le := binary.LittleEndian
	if len(lib) < 64 || !bytes.HasPrefix(lib, []byte("\x7fELF\x02\x01")) {
		return ""
	}
	phoff, phnum := le.Uint64(lib[32:]), int(le.Uint16(lib[56:]))
	if le.Uint16(lib[54:]) != 56 || phoff > uint64(len(lib)) || uint64(len(lib))-phoff < uint64(phnum)*56 {
		return ""
	}
	for k := 0; k < phnum; k++ {
		ph := lib[phoff+uint64(k)*56:]
		if le.Uint32(ph) != 4 { // PT_NOTE
			continue
		}
		off, size := le.Uint64(ph[8:]), le.Uint64(ph[32:])
		if off > uint64(len(lib)) || size > uint64(len(lib))-off {
			return ""
		}
		for n := lib[off : off+size]; len(n) >= 12; {
			namesz, descsz, typ := uint64(le.Uint32(n)), uint64(le.Uint32(n[4:])), le.Uint32(n[8:])
			nameEnd := 12 + (namesz+3)&^3
			end := nameEnd + (descsz+3)&^3
			if end > uint64(len(n)) {
				return ""
			}
			if typ == 3 && namesz == 4 && string(n[12:16]) == "GNU\x00" && descsz >= 8 { // NT_GNU_BUILD_ID
				return hex.EncodeToString(n[nameEnd : nameEnd+8])
			}
			n = n[end:]
		}
	}
	return ""
}

// Trampoline address range: 64 KiB-aligned addresses in [4 GiB, 256 GiB),
// inside the smallest user address space of both architectures (arm64 with
// 39-bit addresses: 512 GiB), above where programs and the heap start and
// below where mmap places libraries top-down.
const (
	trampolineLo    = 4 << 30
	trampolineHi    = 256 << 30
	trampolineAlign = 64 << 10
)

// The loader's variants and scratch areas (loader.Variants: 108 to 128 GiB)
// and the brk heap after variant 0 are left out of the trampoline's range.
const (
	loaderAreaLo = 108 << 30
	loaderAreaHi = 132 << 30
)

// ChooseTrampoline returns a random trampoline address for a session:
// 64 KiB-aligned (it maps on 4, 16 and 64 KiB page kernels), outside the
// loaders' area, and different per session, so that a nested droidroot's
// library never shares the outer one's page.
func ChooseTrampoline() uint64 {
	n := uint64(trampolineHi-trampolineLo) / trampolineAlign
	for {
		a := trampolineLo + rand.Uint64N(n)*trampolineAlign
		if a < loaderAreaLo || a >= loaderAreaHi {
			return a
		}
	}
}

// Flag bits of Config.Flags (fastpath.c's DR_FP_*).
const (
	FlagStats     = 1 << 0  // print per-call counters at exit
	FlagL2S       = 1 << 1  // -l
	FlagLstatSize = 1 << 2  // -L
	FlagOwner     = 1 << 3  // -0/-i: stat owners real -> fake
	FlagAshmem    = 1 << 4  // --ashmem-memfd
	FlagIDs       = 1 << 5  // emulated credentials: access's EACCES, chmod, chown go to the tracer
	FlagNoLink    = 1 << 6  // link goes to the tracer (links refused on purpose)
	FlagWaitv     = 1 << 7  // futex_waitv answered in the library (Registry)
	FlagFDGuard   = 1 << 8  // the filter traps changes to FDBase..FDEnd-1 (the guard word)
	FlagOpenat2   = 1 << 9  // the library may make openat2 (no Android policy blocks it)
	FlagDirs      = 1 << 10 // not -H: the library may make directory streams (where libc's fstat of one is a stop, and -l's getdents64)
	FlagLegacy    = 1 << 11 // the app policy blocks x86_64's poll, epoll_wait and dup2: the library makes ppoll, epoll_pwait and dup3
	FlagPortShift = 1 << 12 // -p: the tracer shifts AF_INET ports, so addressed sends go to it
	FlagTrampOpen = 1 << 13 // a test switch: the trampoline page is mapped from an open of the library's file, as before Linux 5.13
	FlagGetIDs    = 1 << 14 // the tracer emulates the ids: the library answers get*id from the cwd record's ids while published
)

// The library keeps its verified directories' descriptors at numbers
// FDBase to FDEnd-1 (fastpath.c's FP_FD_BASE and FP_FD_END). With
// FlagFDGuard, droidroot's filter traps every close, dup2 and dup3 onto one
// of them (and every close_range), and the tracer changes the process's
// guard word (the handshake's sixth argument) before the kernel runs it:
// while the word is even and unchanged since a directory was verified, its
// descriptor is still the one verified, and the library uses it without
// checking it by dev/ino first. An odd word (a process sharing the memory
// but not the descriptor table: vfork; or the table shared with another
// memory) makes the library check every use.
const (
	FDBase = 768
	FDEnd  = 848
)

// Bind is one bind as the library sees it.
type Bind struct{ Guest, Host string }

// Config is what the library learns at its handshake.
type Config struct {
	// Trampoline is the trampoline page's address (ChooseTrampoline).
	Trampoline uint64
	// TTLNanos bounds how long a verified parent directory is trusted
	// without verifying it again; 0 verifies on every call.
	TTLNanos uint64
	// Flags are the Flag* bits.
	Flags uint32
	// RealUID, RealGID, FakeUID, FakeGID: with FlagOwner, stat results
	// owned by the real ids show the fake ones.
	RealUID, RealGID, FakeUID, FakeGID uint32
	// Root is the rootfs's host path; Binds the binds, in any order (the
	// library picks the longest guest prefix, the last one on a tie). The
	// library takes these host paths as the kernel prints them, "" for one
	// that does not open (WithKernelForms).
	Root  string
	Binds []Bind
	// BindParents are the host directories (by device and inode) that are
	// a proper guest ancestor of a bind point: a relative name under one
	// of them may be a bind point or lead to one, so it goes to the tracer.
	BindParents []DevIno
	// ProcDev is the host procfs's device: relative names under a /proc
	// directory go to the tracer.
	ProcDev uint64
	// Registry is the host path of the session's futex_waitv registry
	// (FlagWaitv; NewRegistry), "" for none.
	Registry string
	// Empty is the host path of an empty directory of droidroot's
	// (NewEmpty), "" for none: a call whose parent directory the library
	// proves missing is made under it, so that the kernel answers it as
	// for a missing directory while walking nothing of the guest's.
	Empty string
	// Changes is the host path of the session's change counter (NewChanges),
	// "" for none: a 4 KiB file every guest process maps shared, whose first
	// 32-bit word the library and the tracer increment after each rename or
	// removal, so that every process's cached directories are verified again
	// on their next use (otherwise another process's change to them is seen
	// within the TTL).
	Changes string
}

// ChangesSize is the size of the change counter's file (Config.Changes).
const ChangesSize = 4096

// NewChanges creates the session's change counter file in dir (Config.Changes)
// and returns its path.
func NewChanges(dir string) (string, error) { return newSharedFile(dir, "changes-", ChangesSize) }

// NewEmpty makes the empty directory of Config.Empty in dir (mode 0555:
// nothing is ever created in it) and returns its path.
func NewEmpty(dir string) (string, error) {
	p := filepath.Join(dir, "empty")
	if err := os.Mkdir(p, 0o755); err != nil {
		return "", err
	}
	if err := os.Chmod(p, 0o555); err != nil {
		return "", err
	}
	return p, nil
}

// RegistrySize is the size of the futex_waitv registry file (waitv.c's
// struct fw_registry: a 16-byte header, 1024 states of 4 bytes and key
// summaries of 8, and 1024 slots of 16 + 128 * 24 bytes).
const RegistrySize = 16 + 1024*4 + 1024*8 + 1024*(16+128*24)

// NewRegistry creates the session's futex_waitv registry: an empty file of
// RegistrySize bytes in dir that every guest process maps shared.
func NewRegistry(dir string) (string, error) { return newSharedFile(dir, "futex-waitv-", RegistrySize) }

// newSharedFile creates an empty file of size bytes in dir, named from
// pattern as os.CreateTemp names it, for guest processes to map shared.
func newSharedFile(dir, pattern string, size int64) (string, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// DevIno identifies a host directory.
type DevIno struct{ Dev, Ino uint64 }

// Header constants (fastpath.c's struct dr_fp_hdr).
const (
	magic   = 0x50465244 // "DRFP"
	version = 2
	hdrSize = 64
)

// ErrTooLarge is returned by Encode when the configuration does not fit the
// library's buffer (64 KiB).
var ErrTooLarge = errors.New("fastpath: configuration larger than 64 KiB")

// maxSize is the library's buffer size; maxBinds its bind table's.
const (
	maxSize    = 64 << 10
	maxBinds   = 256
	maxParents = 1024
)

// Encode returns the handshake's answer: a header, the BindParents as
// {dev, ino} pairs, then NUL-terminated strings: GuestPath, Root, Registry,
// Empty, and per bind its guest and host paths. The handshake may add one
// more string, the header's size covering it: the process's program, where
// the library answers readlink("/proc/self/exe") (emul's handshakeBlob).
func (c Config) Encode() ([]byte, error) {
	if len(c.Binds) > maxBinds {
		return nil, fmt.Errorf("fastpath: %d binds, the library takes at most %d", len(c.Binds), maxBinds)
	}
	if len(c.BindParents) > maxParents {
		return nil, fmt.Errorf("fastpath: %d bind parents, the library takes at most %d", len(c.BindParents), maxParents)
	}
	var strs bytes.Buffer
	for _, s := range append([]string{GuestPath, c.Root, c.Registry, c.Empty, c.Changes}, bindStrings(c.Binds)...) {
		strs.WriteString(s)
		strs.WriteByte(0)
	}
	size := hdrSize + 16*len(c.BindParents) + strs.Len()
	if size > maxSize {
		return nil, ErrTooLarge
	}
	b := make([]byte, hdrSize, size)
	le := binary.LittleEndian
	le.PutUint32(b[0:], magic)
	le.PutUint32(b[4:], version)
	le.PutUint32(b[8:], uint32(size))
	le.PutUint32(b[12:], c.Flags)
	le.PutUint64(b[16:], c.Trampoline)
	le.PutUint64(b[24:], c.TTLNanos)
	le.PutUint32(b[32:], c.RealUID)
	le.PutUint32(b[36:], c.RealGID)
	le.PutUint32(b[40:], c.FakeUID)
	le.PutUint32(b[44:], c.FakeGID)
	le.PutUint32(b[48:], uint32(len(c.Binds)))
	le.PutUint32(b[52:], uint32(len(c.BindParents)))
	le.PutUint64(b[56:], c.ProcDev)
	for _, p := range c.BindParents {
		b = le.AppendUint64(le.AppendUint64(b, p.Dev), p.Ino)
	}
	return append(b, strs.Bytes()...), nil
}

func bindStrings(bs []Bind) []string {
	var s []string
	for _, b := range bs {
		s = append(s, b.Guest, b.Host)
	}
	return s
}

// MergePreload returns the /etc/ld.so.preload that ld.so reads: the guest's
// own (guest, possibly empty) with every line kept in order, then the
// library's guest path, unless the guest already lists it.
func MergePreload(guest []byte) []byte {
	out := append([]byte(nil), guest...)
	for _, f := range bytes.FieldsFunc(guest, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == ':' }) {
		if string(f) == GuestPath {
			return out
		}
	}
	if len(out) > 0 && out[len(out)-1] != '\n' {
		out = append(out, '\n')
	}
	return append(append(out, GuestPath...), '\n')
}
