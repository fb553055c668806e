package fastpath

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/droidroot/droidroot/loader"
	"github.com/droidroot/droidroot/seccomp"
)

func TestEncode(t *testing.T) {
	c := Config{Trampoline: 0x12340000, TTLNanos: 5e8, Flags: FlagStats | FlagOwner,
		RealUID: 1000, RealGID: 1001, FakeUID: 0, FakeGID: 2,
		Root: "/data/rootfs", Binds: []Bind{{"/proc", "/proc"}, {"/sdcard", "/storage/emulated/0"}},
		BindParents: []DevIno{{1, 2}, {3, 4}}, ProcDev: 22, Registry: "/tmp/reg", Empty: "/tmp/empty", Changes: "/tmp/changes"}
	b, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	hdr := map[string]uint64{
		"magic": uint64(le.Uint32(b[0:])), "version": uint64(le.Uint32(b[4:])), "size": uint64(le.Uint32(b[8:])),
		"flags": uint64(le.Uint32(b[12:])), "trampoline": le.Uint64(b[16:]), "ttl": le.Uint64(b[24:]),
		"ruid": uint64(le.Uint32(b[32:])), "rgid": uint64(le.Uint32(b[36:])), "fuid": uint64(le.Uint32(b[40:])),
		"fgid": uint64(le.Uint32(b[44:])), "nbinds": uint64(le.Uint32(b[48:])),
		"nparents": uint64(le.Uint32(b[52:])), "procdev": le.Uint64(b[56:]),
		"p0dev": le.Uint64(b[64:]), "p0ino": le.Uint64(b[72:]), "p1dev": le.Uint64(b[80:]), "p1ino": le.Uint64(b[88:]),
	}
	want := map[string]uint64{"magic": 0x50465244, "version": version, "size": uint64(len(b)), "flags": FlagStats | FlagOwner,
		"trampoline": 0x12340000, "ttl": 5e8, "ruid": 1000, "rgid": 1001, "fuid": 0, "fgid": 2, "nbinds": 2,
		"nparents": 2, "procdev": 22, "p0dev": 1, "p0ino": 2, "p1dev": 3, "p1ino": 4}
	if diff := cmp.Diff(want, hdr); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
	strs := strings.Split(strings.TrimSuffix(string(b[hdrSize+32:]), "\x00"), "\x00")
	if diff := cmp.Diff([]string{GuestPath, "/data/rootfs", "/tmp/reg", "/tmp/empty", "/tmp/changes", "/proc", "/proc", "/sdcard", "/storage/emulated/0"}, strs); diff != "" {
		t.Errorf("strings (-want +got):\n%s", diff)
	}
	many := Config{Root: "/", Binds: make([]Bind, maxBinds+1)}
	if _, err := many.Encode(); err == nil {
		t.Errorf("Encode of %d binds: no error", maxBinds+1)
	}
	if p, err := NewRegistry(t.TempDir()); err != nil {
		t.Error(err)
	} else if fi, err := os.Stat(p); err != nil || fi.Size() != RegistrySize {
		t.Errorf("NewRegistry: %v, %v", fi, err)
	}
	if p, err := NewEmpty(t.TempDir()); err != nil {
		t.Error(err)
	} else if fi, err := os.Stat(p); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o555 {
		t.Errorf("NewEmpty: %v, %v", fi, err)
	} else if ents, err := os.ReadDir(p); err != nil || len(ents) != 0 {
		t.Errorf("NewEmpty: holds %v, %v", ents, err)
	}
	if p, err := NewChanges(t.TempDir()); err != nil {
		t.Error(err)
	} else if fi, err := os.Stat(p); err != nil || fi.Size() != ChangesSize {
		t.Errorf("NewChanges: %v, %v", fi, err)
	}
	big := Config{Root: strings.Repeat("x", maxSize)}
	if _, err := big.Encode(); err != ErrTooLarge {
		t.Errorf("Encode of a 64 KiB root: %v, want ErrTooLarge", err)
	}
}

func TestMergePreload(t *testing.T) {
	line := GuestPath + "\n"
	for _, c := range []struct{ guest, want string }{
		{"", line},
		{"/usr/lib/libshim.so\n", "/usr/lib/libshim.so\n" + line},
		{"/a.so /b.so", "/a.so /b.so\n" + line},
		{"# comment\n/a.so:/b.so\n", "# comment\n/a.so:/b.so\n" + line},
		{"/a.so\n" + GuestPath + "\n", "/a.so\n" + GuestPath + "\n"}, // listed already: unchanged
	} {
		if got := string(MergePreload([]byte(c.guest))); got != c.want {
			t.Errorf("MergePreload(%q) = %q, want %q", c.guest, got, c.want)
		}
	}
}

func TestChooseTrampoline(t *testing.T) {
	seen := map[uint64]bool{}
	for i := 0; i < 1000; i++ {
		a := ChooseTrampoline()
		if a%trampolineAlign != 0 || a < trampolineLo || a >= trampolineHi || a+seccomp.TrampolineSize > 1<<39 {
			t.Fatalf("ChooseTrampoline() = %#x: not a 64 KiB-aligned address in [%#x, %#x)", a, trampolineLo, trampolineHi)
		}
		if a+seccomp.TrampolineSize > loaderAreaLo && a < loaderAreaHi {
			t.Fatalf("ChooseTrampoline() = %#x: in the loaders' area [%#x, %#x)", a, loaderAreaLo, loaderAreaHi)
		}
		seen[a] = true
	}
	// The area holds every loader variant's image and scratch area.
	for i, v := range loader.Variants {
		if v.Scratch < loaderAreaLo || v.Scratch+loader.ScratchSize > loaderAreaHi || v.Load < loaderAreaLo || v.Load+loader.ImageSpan > loaderAreaHi {
			t.Errorf("loader variant %d (%#x, scratch %#x) is outside the loaders' area", i, v.Load, v.Scratch)
		}
	}
	if len(seen) < 990 {
		t.Errorf("1000 sessions got only %d different addresses", len(seen))
	}
}

// TestSyscallNr: the handshake's number is the one seccomp gives its name.
func TestSyscallNr(t *testing.T) {
	for _, goarch := range []string{"amd64", "arm64"} {
		if nr, ok := seccomp.NativeABI(goarch).Nr(SyscallName); !ok || nr != SyscallNr {
			t.Errorf("%s: %s is %d, %v; want %d", goarch, SyscallName, nr, ok, SyscallNr)
		}
	}
}

// TestLibraries checks the committed libraries: their ELF machine, the
// symbols programs bind to, the trampoline page at a 64 KiB-aligned file
// offset equal to its address, and imports no newer than GLIBC_2.17 (the
// Makefile's fastpath-check does the same with objdump).
func TestLibraries(t *testing.T) {
	for goarch, machine := range map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64} {
		lib, err := Library(goarch)
		if err != nil {
			t.Fatal(err)
		}
		f, err := elf.NewFile(bytes.NewReader(lib))
		if err != nil {
			t.Fatalf("%s: %v", goarch, err)
		}
		if f.Machine != machine || f.Type != elf.ET_DYN {
			t.Errorf("%s: machine %v type %v", goarch, f.Machine, f.Type)
		}
		syms, err := f.DynamicSymbols()
		if err != nil {
			t.Fatalf("%s: %v", goarch, err)
		}
		exported := map[string]bool{}
		for _, s := range syms {
			if s.Section != elf.SHN_UNDEF {
				exported[s.Name] = true
				continue
			}
			if v := s.Version; v != "" && strings.HasPrefix(v, "GLIBC_") {
				var major, minor int
				if _, err := fmtSscanf(v, &major, &minor); err == nil && (major > 2 || major == 2 && minor > 17) {
					t.Errorf("%s imports %s@%s", goarch, s.Name, v)
				}
			}
		}
		for _, name := range []string{"stat", "lstat", "fstatat", "stat64", "__xstat", "__lxstat64", "__fxstatat",
			"statx", "access", "faccessat", "eaccess", "euidaccess", "open", "open64", "openat", "__open_2", "__openat64_2", "creat",
			"readlink", "readlinkat", "syscall", "fopen", "fopen64", "opendir", "mkdir", "mkdirat", "unlink", "unlinkat",
			"rmdir", "rename", "renameat", "renameat2", "symlink", "symlinkat", "link", "linkat", "chmod", "fchmodat",
			"chown", "lchown", "fchownat", "utimensat", "dup2", "dup3", "mmap", "munmap", "mremap", "dup", "fcntl", "fcntl64",
			"truncate", "truncate64", "mknod", "mknodat", "mkfifo", "mkfifoat", "__xmknod", "__xmknodat", "utimes", "lutimes",
			"utime", "fstat", "fstat64", "__fxstat", "__fxstat64", "readdir", "readdir64", "closedir", "scandir", "scandir64", "fclose", "fdopen",
			"getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid", "connect", "bind", "getsockname", "getpeername",
			// the descriptor makers that give the caches' descriptors back at EMFILE
			"socket", "socketpair", "accept", "accept4", "pipe", "pipe2", "eventfd", "signalfd", "timerfd_create",
			"epoll_create", "epoll_create1", "inotify_init", "inotify_init1"} {
			if !exported[name] {
				t.Errorf("%s does not export %s", goarch, name)
			}
		}
		// x86_64's legacy poll and epoll_wait (FlagLegacy); arm64's glibc makes ppoll and
		// epoll_pwait itself, and the library leaves them to it.
		for _, name := range []string{"poll", "__poll", "__poll_chk", "epoll_wait"} {
			if exported[name] != (goarch == "amd64") {
				t.Errorf("%s exports %s: %v, want %v", goarch, name, exported[name], goarch == "amd64")
			}
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_LOAD && p.Flags&elf.PF_X != 0 && p.Off%0x10000 != p.Vaddr%0x10000 {
				t.Errorf("%s: executable segment at offset %#x, address %#x: not congruent modulo 64 KiB", goarch, p.Off, p.Vaddr)
			}
		}
	}
}

func TestExtract(t *testing.T) {
	dir := t.TempDir()
	p, err := Extract(dir, "arm64")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(p)
	if !bytes.Equal(got, libARM64) || filepath.Dir(p) != dir || !strings.HasSuffix(p, ".so") {
		t.Errorf("Extract wrote %s (%d bytes)", p, len(got))
	}
	if q, err := Extract(dir, "arm64"); err != nil || q != p {
		t.Errorf("second Extract = %s, %v; want %s", q, err, p)
	}
	if _, err := Extract(dir, "riscv64"); err == nil {
		t.Error("Extract of riscv64: no error")
	}
	if want := "droidroot-fastpath-arm64-" + BuildID(libARM64) + ".so"; filepath.Base(p) != want {
		t.Errorf("Extract's name %s, want %s (the build ID)", filepath.Base(p), want)
	}
	// A file at the name is taken only as Extract writes it: this user's,
	// writable by nobody else, of the library's size.
	for _, tc := range []struct {
		name  string
		write func() error
	}{
		{"writable by others", func() error {
			if err := os.WriteFile(p, libARM64, 0o755); err != nil {
				return err
			}
			return os.Chmod(p, 0o777)
		}},
		{"another size", func() error { return os.WriteFile(p, libARM64[:len(libARM64)-1], 0o755) }},
		{"another user's", func() error {
			if err := os.WriteFile(p, libARM64, 0o755); err != nil {
				return err
			}
			if os.Geteuid() != 0 {
				return os.Chmod(p, 0o775) // no chown without root: group-writable stands in
			}
			return os.Chown(p, 65534, 65534)
		}},
		{"a symlink", func() error {
			os.Remove(p)
			return os.Symlink("/bin/true", p)
		}},
	} {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if err := tc.write(); err != nil {
			t.Fatal(err)
		}
		if q, err := Extract(dir, "arm64"); err != nil || q != p {
			t.Fatalf("%s: Extract = %s, %v", tc.name, q, err)
		}
		fi, err := os.Lstat(p)
		got, _ := os.ReadFile(p)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o755 || !bytes.Equal(got, libARM64) {
			t.Errorf("%s: not written again (%v, %v)", tc.name, fi.Mode(), err)
		}
	}
	// Root's copy is taken as this user's own (root can change any of its
	// files anyway).
	if os.Geteuid() == 0 {
		if err := os.Chown(p, 0, 0); err != nil {
			t.Fatal(err)
		}
		before, _ := os.Lstat(p)
		if q, err := Extract(dir, "arm64"); err != nil || q != p {
			t.Fatalf("root's copy: Extract = %s, %v", q, err)
		}
		if after, _ := os.Lstat(p); !os.SameFile(before, after) {
			t.Errorf("root's copy was written again")
		}
	}
	// A copy that can be neither trusted nor replaced (another user's in a
	// sticky /tmp; here one that is immutable): a name of this user's own.
	if err := os.Chmod(p, 0o777); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("chattr", "+i", p).CombinedOutput(); err != nil {
		t.Logf("chattr +i: %v %s: the immutable case is left out", err, out)
		return
	}
	defer exec.Command("chattr", "-i", p).Run()
	q, err := Extract(dir, "arm64")
	own := strings.TrimSuffix(p, ".so") + "-" + strconv.Itoa(os.Geteuid()) + ".so"
	if err != nil || q != own {
		t.Fatalf("Extract over an immutable copy = %s, %v; want %s", q, err, own)
	}
	if got, _ := os.ReadFile(q); !bytes.Equal(got, libARM64) {
		t.Errorf("%s: not the library", q)
	}
	if r, err := Extract(dir, "arm64"); err != nil || r != own {
		t.Errorf("Extract again = %s, %v; want %s", r, err, own)
	}
}

// TestBuildID: the embedded libraries carry a GNU build ID (the Makefile
// links them with --build-id=sha1), which BuildID reads as debug/elf does.
func TestBuildID(t *testing.T) {
	for _, lib := range [][]byte{libAMD64, libARM64} {
		f, err := elf.NewFile(bytes.NewReader(lib))
		if err != nil {
			t.Fatal(err)
		}
		sec := f.Section(".note.gnu.build-id")
		if sec == nil {
			t.Fatal("no .note.gnu.build-id section: link with -Wl,--build-id=sha1")
		}
		d, err := sec.Data()
		if err != nil || len(d) < 16+8 {
			t.Fatalf("build ID note: %d bytes, %v", len(d), err)
		}
		if got, want := BuildID(lib), hex.EncodeToString(d[16:24]); got != want {
			t.Errorf("BuildID = %q, want %q", got, want)
		}
	}
	for _, bad := range [][]byte{nil, []byte("\x7fELF"), make([]byte, 100), libAMD64[:70]} {
		if id := BuildID(bad); id != "" {
			t.Errorf("BuildID of %d bad bytes = %q", len(bad), id)
		}
	}
}

// fmtSscanf parses "GLIBC_MAJOR.MINOR[.PATCH]".
func fmtSscanf(v string, major, minor *int) (int, error) {
	return fmt.Sscanf(strings.TrimPrefix(v, "GLIBC_"), "%d.%d", major, minor)
}

// TestFDRange: the library's descriptor range (fastpath.c's FP_FD_BASE and
// FP_FD_END) is FDBase..FDEnd-1, which the filter guards, and holds every
// descriptor the library caches (its C_SLOTS directories and the empty one).
func TestFDRange(t *testing.T) {
	src, err := os.ReadFile("csrc/fastpath.c")
	if err != nil {
		t.Fatal(err)
	}
	def := func(name string) int {
		m := regexp.MustCompile(`(?m)^#define ` + name + ` (\d+)`).FindSubmatch(src)
		if m == nil {
			t.Fatalf("fastpath.c: no #define %s", name)
		}
		n, _ := strconv.Atoi(string(m[1]))
		return n
	}
	if base, end := def("FP_FD_BASE"), def("FP_FD_END"); base != FDBase || end != FDEnd {
		t.Errorf("fastpath.c: FP_FD_BASE %d, FP_FD_END %d; fastpath.go: FDBase %d, FDEnd %d", base, end, FDBase, FDEnd)
	}
	if slots := def("C_SLOTS"); slots+1 > FDEnd-FDBase {
		t.Errorf("%d cached directories and the empty one do not fit %d..%d", slots, FDBase, FDEnd-1)
	}
}

// TestFlagsMatchC: every flag of Config.Flags has the bit of its DR_FP_
// namesake in fastpath.c's enum, and the enum has no other.
func TestFlagsMatchC(t *testing.T) {
	src, err := os.ReadFile("csrc/fastpath.c")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint32{
		"DR_FP_STATS": FlagStats, "DR_FP_L2S": FlagL2S, "DR_FP_LSTAT_SIZE": FlagLstatSize, "DR_FP_OWNER": FlagOwner,
		"DR_FP_ASHMEM": FlagAshmem, "DR_FP_IDS": FlagIDs, "DR_FP_NOLINK": FlagNoLink, "DR_FP_WAITV": FlagWaitv,
		"DR_FP_FDGUARD": FlagFDGuard, "DR_FP_OPENAT2": FlagOpenat2, "DR_FP_DIRS": FlagDirs, "DR_FP_LEGACY": FlagLegacy,
		"DR_FP_PORTSHIFT": FlagPortShift, "DR_FP_TRAMP_OPEN": FlagTrampOpen, "DR_FP_GETIDS": FlagGetIDs,
	}
	got := map[string]uint32{}
	for _, m := range regexp.MustCompile(`(?m)^\s*(DR_FP_[A-Z0-9_]+) = 1 << (\d+),`).FindAllSubmatch(src, -1) {
		n, _ := strconv.Atoi(string(m[2]))
		got[string(m[1])] = 1 << n
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("fastpath.c's flags (-fastpath.go +fastpath.c):\n%s", diff)
	}
	if m := regexp.MustCompile(`(?m)^#define DR_FP_VERSION (\d+)$`).FindSubmatch(src); m == nil || string(m[1]) != strconv.Itoa(version) {
		t.Errorf("fastpath.c's DR_FP_VERSION %q, fastpath.go's version %d", m, version)
	}
	// The cwd record's layout, which fastpath.c asserts at compile time.
	offs := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^_Static_assert\(offsetof\(struct fp_cwd, (\w+)\) == (\d+) && sizeof\(struct fp_ids\) == (\d+) *&& *sizeof\(struct fp_cwd\) == (\d+),`).FindAllSubmatch(src, -1) {
		n, _ := strconv.Atoi(string(m[2]))
		offs[string(m[1])] = n
		ids, _ := strconv.Atoi(string(m[3]))
		size, _ := strconv.Atoi(string(m[4]))
		offs["sizeof fp_ids"], offs["sizeof fp_cwd"] = ids, size
	}
	wantOffs := map[string]int{"waits": CwdWaitsOff, "ids": CwdIDsOff, "hlen": CwdLenOff, "host": CwdHostOff, "guest": CwdGuestOff, "sizeof fp_ids": IDsSize, "sizeof fp_cwd": CwdSize}
	if diff := cmp.Diff(wantOffs, offs); diff != "" {
		t.Errorf("fastpath.c's cwd record (-fastpath.go +fastpath.c):\n%s", diff)
	}
}

func TestKernelForm(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(real, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ in, want string }{
		{"/", "/"},
		{real, real},
		{real + "/", real},
		{filepath.Join(dir, "link"), real},
		{filepath.Join(dir, "link", "..", "real"), real},
		{filepath.Join(real, "file"), filepath.Join(real, "file")},
		{filepath.Join(dir, "missing"), ""},
		{"", ""},
	}
	for _, tc := range tests {
		if got := KernelForm(tc.in); got != tc.want {
			t.Errorf("KernelForm(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}

	c := Config{Root: filepath.Join(dir, "link"), Binds: []Bind{{"/proc", "/proc"}, {"/x", "/proc/self/fd"},
		{"/a", filepath.Join(dir, "link")}, {"/m", filepath.Join(dir, "missing")}}}
	got := c.WithKernelForms()
	want := Config{Root: real, Binds: []Bind{{"/proc", "/proc"}, {"/x", "/proc/self/fd"}, {"/a", real}, {"/m", ""}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("WithKernelForms (-want +got):\n%s", diff)
	}
	if c.Binds[2].Host != filepath.Join(dir, "link") {
		t.Errorf("WithKernelForms changed its receiver's binds: %v", c.Binds)
	}
}

// TestArchHeaders checks every system call number the C programs define
// (csrc/arch-*.h, and fastpath.c's own for syscall()'s legacy names, with a
// trailing underscore) against the seccomp package's tables of each ABI.
func TestArchHeaders(t *testing.T) {
	def := regexp.MustCompile(`(?m)^#define SYS_(\w+) (\d+)\b`)
	check := func(abi *seccomp.ABI, file, text string) int {
		n := 0
		for _, m := range def.FindAllStringSubmatch(text, -1) {
			name := strings.TrimSuffix(m[1], "_")
			got, _ := strconv.Atoi(m[2])
			want, ok := abi.Nr(name)
			if !ok && name == "newfstatat" {
				want, ok = abi.Nr("fstatat") // arm64's name for the same call (__NR3264_fstatat)
			}
			if !ok || want != got {
				t.Errorf("%s: SYS_%s is %d, %s's %s is %d (known: %v)", file, m[1], got, abi, name, want, ok)
			}
			n++
		}
		return n
	}
	src, err := os.ReadFile("csrc/fastpath.c")
	if err != nil {
		t.Fatal(err)
	}
	own := map[string]string{}
	for _, arch := range []string{"__x86_64__", "__aarch64__"} {
		// the #if block of fastpath.c's own numbers for arch
		i := bytes.Index(src, []byte("defined("+arch+")\n#define SYS_"))
		if i < 0 {
			t.Fatalf("fastpath.c: no SYS_ block for %s", arch)
		}
		block := src[i:]
		if j := bytes.Index(block, []byte("\n#e")); j >= 0 {
			block = block[:j]
		}
		own[arch] = string(block)
	}
	for _, tc := range []struct {
		abi        *seccomp.ABI
		header, cc string
	}{{seccomp.X86_64, "arch-x86_64.h", "__x86_64__"}, {seccomp.AArch64, "arch-aarch64.h", "__aarch64__"}} {
		h, err := os.ReadFile(filepath.Join("..", "csrc", tc.header))
		if err != nil {
			t.Fatal(err)
		}
		if n := check(tc.abi, tc.header, string(h)); n < 50 {
			t.Errorf("%s: %d numbers found, want the header's whole table", tc.header, n)
		}
		if n := check(tc.abi, "fastpath.c ("+tc.cc+")", own[tc.cc]); n == 0 {
			t.Errorf("fastpath.c: no numbers of its own for %s", tc.cc)
		}
	}
}

// TestCSelfTest builds csrc/selftest.c, the unit tests of the library's pure
// functions (plain_len, bind_of's index), with the host's C compiler and runs
// it. Skipped where there is none (the functions are the same C on arm64,
// where e2e-fastpath runs the library).
func TestCSelfTest(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Skip("no C compiler (cc): ", err)
	}
	tramp := map[string]string{"amd64": "csrc/tramp-x86_64.S", "arm64": "csrc/tramp-aarch64.S"}[runtime.GOARCH]
	if tramp == "" {
		t.Skipf("no trampoline for %s", runtime.GOARCH)
	}
	bin := filepath.Join(t.TempDir(), "selftest")
	if out, err := exec.Command(cc, "-O2", "-std=gnu11", "-I../csrc", "-o", bin, "csrc/selftest.c", tramp).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cc, err, out)
	}
	out, err := exec.Command(bin).CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("selftest: %v\n%s", err, out)
	}
}
