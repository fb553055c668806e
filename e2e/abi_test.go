//go:build linux

package e2e

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestUnsupportedABI: a syscall through an ABI droidroot does not translate
// (x32 on x86_64) reaches the tracer, which answers ENOSYS and says so once.
func TestUnsupportedABI(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("a 64-bit arm64 process cannot make AArch32 syscalls")
	}
	res := viaDroidroot(t, busyboxGuest(t), "", "/progs/abi32")
	if want := "x32 getpid -> -38\nx32 getpid -> -38\n"; res.Stdout != want || res.Code != 0 {
		t.Errorf("got %s\nwant exit 0, stdout:\n%s", res, want)
	}
	if n := strings.Count(res.Stderr, "does not support yet"); n != 1 {
		t.Errorf("stderr says %d times that the ABI is unsupported, want once:\n%s", n, res.Stderr)
	}
}

// TestProgram32: a 32-bit program (i386 on x86_64, AArch32 on arm64) cannot run under
// droidroot: it says so, naming the guest path, with PROOT_LOADER_32 set (as termux
// launchers set it) or not, instead of failing obscurely.
func TestProgram32(t *testing.T) {
	g := busyboxGuest(t)
	machine := map[string]uint16{"amd64": 3, "arm64": 40}[runtime.GOARCH] // EM_386, EM_ARM
	hdr := make([]byte, 52)
	copy(hdr, "\x7fELF\x01\x01\x01")           // ELFCLASS32, little-endian, version 1
	binary.LittleEndian.PutUint16(hdr[16:], 2) // ET_EXEC
	binary.LittleEndian.PutUint16(hdr[18:], machine)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "prog32"), hdr, 0o755); err != nil {
		t.Fatal(err)
	}
	g.Binds = append(g.Binds, dir+":/mnt/32")
	for _, env := range [][]string{nil, {"PROOT_LOADER_32=/nonexistent/loader32"}} {
		res := run(t, "", append(append([]string{"env"}, env...), droidrootArgs(droidrootBin(t), g, "/mnt/32/prog32")...)...)
		if res.Code == 0 || !strings.Contains(res.Stderr, "/mnt/32/prog32: a 32-bit program: droidroot runs 64-bit programs only") {
			t.Errorf("%v: %s\nwant a failure that says why", env, res)
		}
	}
}
