//go:build linux

package e2e

import (
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
