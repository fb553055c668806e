package loader

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestEncode(t *testing.T) {
	le := binary.LittleEndian
	tests := []struct {
		name   string
		script Script
	}{
		{"dynamic", Script{Program: "/data/rootfs/usr/bin/ls", Interp: "/data/rootfs/lib/ld-linux-aarch64.so.1", ExecFn: "/usr/bin/ls"}},
		{"static", Script{Program: "/data/rootfs/bin/busybox", ExecFn: "/bin/sh"}},
		{"empty execfn", Script{Program: "/p"}},
		{"ids", Script{Program: "/p", ExecFn: "/bin/id", IDs: &IDs{UID: 1000, EUID: 0, GID: 0xfffffffe, EGID: 7, Secure: true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const sp = 0x7ffc_1234_5670
			b := tt.script.Encode(sp)
			if len(b)%16 != 0 {
				t.Errorf("len = %d, not a multiple of 16", len(b))
			}
			if got := string(b[:8]); got != "DIDROOT1" {
				t.Errorf("magic bytes = %q, want DIDROOT1", got)
			}
			if got := le.Uint64(b[0:]); got != Magic {
				t.Errorf("magic = %#x, want %#x", got, Magic)
			}
			if got := le.Uint64(b[8:]); got != uint64(len(b)) {
				t.Errorf("size = %d, want %d", got, len(b))
			}
			if got := le.Uint64(b[16:]); got != sp {
				t.Errorf("original_sp = %#x, want %#x", got, uint64(sp))
			}
			wantFlags, minOff := uint64(0), uint64(HeaderSize)
			if id := tt.script.IDs; id != nil {
				wantFlags, minOff = FlagIDs, HeaderSize+IDsSize
				var got [5]uint64
				for i := range got {
					got[i] = le.Uint64(b[HeaderSize+8*i:])
				}
				if want := [5]uint64{uint64(id.UID), uint64(id.EUID), uint64(id.GID), uint64(id.EGID), 1}; got != want {
					t.Errorf("ids = %v, want %v", got, want)
				}
			}
			if got := le.Uint64(b[48:]); got != wantFlags {
				t.Errorf("flags = %#x, want %#x", got, wantFlags)
			}
			str := func(field int) (string, bool) {
				off := le.Uint64(b[field:])
				if off == 0 {
					return "", false
				}
				if off < minOff || off >= uint64(len(b)) {
					t.Fatalf("offset at %d = %d, outside [%d, %d)", field, off, minOff, len(b))
				}
				s, _, ok := strings.Cut(string(b[off:]), "\x00")
				if !ok {
					t.Fatalf("string at %d not terminated", off)
				}
				return s, true
			}
			if s, ok := str(24); !ok || s != tt.script.Program {
				t.Errorf("program = %q, %v; want %q", s, ok, tt.script.Program)
			}
			if s, ok := str(32); s != tt.script.Interp || ok != (tt.script.Interp != "") {
				t.Errorf("interp = %q, present %v; want %q", s, ok, tt.script.Interp)
			}
			if s, ok := str(40); !ok || s != tt.script.ExecFn {
				t.Errorf("execfn = %q, %v; want %q", s, ok, tt.script.ExecFn)
			}
		})
	}
}

func TestAddress(t *testing.T) {
	for _, sp := range []uint64{0x7ffc_0000_0000, 0x7ffc_0000_0008, 0xffff_f000_1238} {
		for _, n := range []int{HeaderSize, 100, 4096 + 7} {
			a := Address(sp, n)
			if a%16 != 0 || a+uint64(n)+ScriptGap > sp || sp-a > ScriptGap+uint64(n)+15 {
				t.Errorf("Address(%#x, %d) = %#x", sp, n, a)
			}
		}
	}
}

// TestBinary checks the committed loaders: static, non-PIE, at their variant's
// Load address, small.
func TestBinary(t *testing.T) {
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	for goarch, machine := range machines {
		for variant, v := range Variants {
			testBinary(t, goarch, machine, variant, v.Load)
		}
	}
	if _, err := Binary("riscv64", 0); err == nil {
		t.Error("Binary(riscv64) succeeded")
	}
	if _, err := Binary("amd64", len(Variants)); err == nil {
		t.Error("Binary(amd64, len(Variants)) succeeded")
	}
}

func testBinary(t *testing.T, goarch string, machine elf.Machine, variant int, load uint64) {
	t.Run(fmt.Sprintf("%s-%d", goarch, variant), func(t *testing.T) {
		bin, err := Binary(goarch, variant)
		if err != nil {
			t.Fatal(err)
		}
		if len(bin) > 12288 {
			t.Errorf("size %d bytes, want a few KiB (three pages at most)", len(bin))
		}
		f, err := elf.NewFile(bytes.NewReader(bin))
		if err != nil {
			t.Fatal(err)
		}
		if f.Class != elf.ELFCLASS64 || f.Data != elf.ELFDATA2LSB || f.Machine != machine {
			t.Errorf("class %v data %v machine %v", f.Class, f.Data, f.Machine)
		}
		if f.Type != elf.ET_EXEC {
			t.Errorf("type %v, want ET_EXEC", f.Type)
		}
		limit := load + ImageSpan
		if f.Entry < load || f.Entry >= limit {
			t.Errorf("entry %#x outside [%#x, %#x)", f.Entry, load, limit)
		}
		stack := false
		for _, p := range f.Progs {
			switch p.Type {
			case elf.PT_INTERP, elf.PT_DYNAMIC, elf.PT_TLS:
				t.Errorf("has %v", p.Type)
			case elf.PT_LOAD:
				if p.Vaddr < load || p.Vaddr+p.Memsz > limit {
					t.Errorf("PT_LOAD at %#x+%#x outside [%#x, %#x)", p.Vaddr, p.Memsz, load, limit)
				}
				if p.Flags&elf.PF_W != 0 && p.Flags&elf.PF_X != 0 {
					t.Errorf("PT_LOAD at %#x is writable and executable", p.Vaddr)
				}
			case elf.PT_GNU_STACK:
				stack = true
				if p.Flags&elf.PF_X != 0 {
					t.Error("PT_GNU_STACK asks for an executable stack")
				}
			}
		}
		if !stack {
			t.Error("no PT_GNU_STACK")
		}
	})
}

// TestFreeVariant: the first variant whose image and scratch area are free in
// a maps file, as a droidroot nested one, two and three deep sees them.
func TestFreeVariant(t *testing.T) {
	const tail = "7ffc8d755000-7ffc8d777000 rw-p 00000000 00:00 0                          [stack]\n"
	mapping := func(lo, hi uint64, name string) string {
		return fmt.Sprintf("%x-%x r-xp 00000000 fe:00 42 %s\n", lo, hi, name)
	}
	v0, v1 := Variants[0], Variants[1]
	for _, c := range []struct {
		name, maps string
		want       int
	}{
		{"not nested", "400000-4a5000 r-xp 00000000 fe:00 1 /usr/bin/droidroot\n" + tail, 0},
		{"empty", "", 0},
		{"nested", mapping(v0.Scratch, v0.Scratch+ScratchSize, "/memfd:droidroot-scratch (deleted)") +
			mapping(v0.Load, v0.Load+0x2000, "/tmp/droidroot-loader-amd64-x") + tail, 1},
		{"nested, the outer scratch area missing", mapping(v0.Load, v0.Load+0x2000, "/tmp/l") + tail, 1},
		{"nested, only the outer scratch area", mapping(v0.Scratch, v0.Scratch+ScratchSize, "/memfd:x") + tail, 1},
		{"a mapping at the end of variant 0's image", mapping(v0.Load+ImageSpan-0x1000, v0.Load+ImageSpan, "x"), 1},
		{"a mapping right after variant 0's image", mapping(v0.Load+ImageSpan, v0.Load+ImageSpan+0x1000, "[heap]"), 0},
		{"two deep", mapping(v0.Load, v0.Load+0x2000, "a") + mapping(v1.Scratch, v1.Scratch+ScratchSize, "b"), 2},
		{"four deep", mapping(Variants[2].Load, Variants[2].Load+0x1000, "c") + mapping(v0.Load, v0.Load+0x2000, "a") +
			mapping(v1.Load, v1.Load+0x2000, "b"), -1},
		{"one mapping over all", mapping(0x1000000000, 0x3000000000, "big"), -1},
		{"garbage", "not a maps file\n-\nzz-yy\n", 0},
	} {
		if got := freeVariant([]byte(c.maps)); got != c.want {
			t.Errorf("%s: got %d, want %d", c.name, got, c.want)
		}
	}
	if v := FreeVariant(); v != 0 {
		t.Errorf("FreeVariant() in the test process = %d; want 0", v)
	}
	// The kernel's view, with no /proc needed: a page mapped inside variant 0's
	// image, then inside variant 1's scratch area.
	for _, c := range []struct {
		at   uint64
		want int
	}{{v0.Load + ImageSpan - 0x1000, 1}, {v1.Scratch, 2}} {
		p, _, errno := unix.Syscall6(unix.SYS_MMAP, uintptr(c.at), 0x1000, unix.PROT_READ,
			unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED_NOREPLACE, ^uintptr(0), 0)
		if errno != 0 || p != uintptr(c.at) {
			t.Fatalf("mmap at %#x: %#x, %v", c.at, p, errno)
		}
		defer unix.Syscall(unix.SYS_MUNMAP, p, 0x1000, 0)
		if v := FreeVariant(); v != c.want {
			t.Errorf("FreeVariant() with a page mapped at %#x = %d; want %d", c.at, v, c.want)
		}
	}
	for i, v := range Variants {
		if got, ok := VariantAt(v.Load); !ok || got != v {
			t.Errorf("VariantAt(%#x) = %v, %v; want variant %d", v.Load, got, ok, i)
		}
	}
	if _, ok := VariantAt(0x400000); ok {
		t.Error("VariantAt(0x400000) found a variant")
	}
}

func TestExtract(t *testing.T) {
	dir := t.TempDir()
	p1, err := Extract(dir, "amd64", 0)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := Extract(dir, "arm64", 0)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(p1) != dir || p1 == p2 || !strings.HasPrefix(filepath.Base(p1), "droidroot-loader-amd64-") {
		t.Errorf("paths %q, %q", p1, p2)
	}
	for goarch, p := range map[string]string{"amd64": p1, "arm64": p2} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != 0o755 {
			t.Errorf("%s: mode %v, want 0755", p, fi.Mode())
		}
		got, _ := os.ReadFile(p)
		want, _ := Binary(goarch, 0)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: content differs from Binary(%q)", p, goarch)
		}
	}

	// Reused as is: same path, same inode.
	before, _ := os.Stat(p1)
	again, err := Extract(dir, "amd64", 0)
	if err != nil || again != p1 {
		t.Fatalf("second Extract = %q, %v; want %q", again, err, p1)
	}
	if after, _ := os.Stat(p1); !os.SameFile(before, after) {
		t.Error("second Extract rewrote an identical file")
	}

	// A damaged file is replaced.
	if err := os.WriteFile(p1, []byte("junk"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Extract(dir, "amd64", 0); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p1); !bytes.Equal(got, mustBinary(t, "amd64", 0)) {
		t.Error("damaged file not replaced")
	}

	// A variant is a file of its own.
	p3, err := Extract(dir, "amd64", 1)
	if err != nil || p3 == p1 || !bytes.Equal(must(os.ReadFile(p3)), mustBinary(t, "amd64", 1)) {
		t.Errorf("Extract(amd64, 1) = %q, %v: want another file with variant 1", p3, err)
	}
	os.Remove(p3)

	// No temporary files are left behind.
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("dir holds %v, want just the two loaders", names)
	}

	// os.TempDir() is the default directory.
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	p, err := Extract("", "arm64", 0)
	if err != nil || filepath.Dir(p) != tmp {
		t.Errorf("Extract with TMPDIR = %q, %v; want a file in %q", p, err, tmp)
	}

	if _, err := Extract(dir, "mips", 0); err == nil {
		t.Error("Extract(mips) succeeded")
	}
}

func mustBinary(t *testing.T, goarch string, variant int) []byte {
	t.Helper()
	b, err := Binary(goarch, variant)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func must(b []byte, err error) []byte {
	if err != nil {
		return nil
	}
	return b
}
