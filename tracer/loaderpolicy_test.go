package tracer

import (
	"bytes"
	"debug/elf"
	"os"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/droidroot/droidroot/loader"
	"github.com/droidroot/droidroot/seccomp"
)

// TestAllowLoader: each variant of droidroot's own loader gets the filter's
// loader check for loader.PassedCalls over its executable segment, which
// holds its entry point; another fixed-address program (a PROOT_LOADER that
// is not droidroot's) and a position-independent one leave the policy alone.
func TestAllowLoader(t *testing.T) {
	abi := seccomp.NativeABI(runtime.GOARCH)
	openat, _ := abi.Nr("openat")
	prctl, _ := abi.Nr("prctl")
	for v := range loader.Variants {
		bin, err := loader.Binary(runtime.GOARCH, v)
		if err != nil {
			t.Fatal(err)
		}
		var p seccomp.Policy
		if err := AllowLoader(&p, runtime.GOARCH, bytes.NewReader(bin)); err != nil {
			t.Fatalf("variant %d: %v", v, err)
		}
		f, err := elf.NewFile(bytes.NewReader(bin))
		if err != nil {
			t.Fatal(err)
		}
		l := p.Loader
		if l.Lo%4096 != 0 || l.Hi%4096 != 0 || l.Lo < loader.Variants[v].Load || l.Hi > loader.Variants[v].Load+loader.ImageSpan ||
			f.Entry < l.Lo || f.Entry >= l.Hi {
			t.Errorf("variant %d: loader range [%#x, %#x), entry %#x, load %#x", v, l.Lo, l.Hi, f.Entry, loader.Variants[v].Load)
		}
		if diff := cmp.Diff(map[*seccomp.ABI]map[int]bool{abi: {openat: true, prctl: true}}, p.LoaderCalls); diff != "" {
			t.Errorf("variant %d: LoaderCalls (-want +got):\n%s", v, diff)
		}
		if _, err := seccomp.Build(runtime.GOARCH, p); err != nil {
			t.Errorf("variant %d: %v", v, err)
		}
	}
	// Not droidroot's loader: a static program at its own address.
	static, err := os.ReadFile("../bench/bin/drbench-" + runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	var p seccomp.Policy
	if err := AllowLoader(&p, runtime.GOARCH, bytes.NewReader(static)); err != nil || p.Loader != (seccomp.IPRange{}) || p.LoaderCalls != nil {
		t.Errorf("a foreign loader: %v, range %+v, calls %v", err, p.Loader, p.LoaderCalls)
	}
	// Position-independent (Debian's programs are): no fixed range at all.
	pie, err := os.Open("/bin/true")
	if err != nil {
		t.Skip(err)
	}
	defer pie.Close()
	if f, err := elf.NewFile(pie); err != nil || f.Type != elf.ET_DYN {
		t.Skipf("/bin/true is not position-independent here (%v)", err)
	}
	if err := AllowLoader(&p, runtime.GOARCH, pie); err == nil {
		t.Errorf("/bin/true (position-independent) is taken as a loader")
	}
}
