package loader

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
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

// TestBinary checks the committed loaders: static, non-PIE, at LoadAddress, small.
func TestBinary(t *testing.T) {
	machines := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	for goarch, machine := range machines {
		t.Run(goarch, func(t *testing.T) {
			bin, err := Binary(goarch)
			if err != nil {
				t.Fatal(err)
			}
			if len(bin) > 8192 {
				t.Errorf("size %d bytes, want a few KiB", len(bin))
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
			const limit = LoadAddress + 1<<20
			if f.Entry < LoadAddress || f.Entry >= limit {
				t.Errorf("entry %#x outside [%#x, %#x)", f.Entry, LoadAddress, uint64(limit))
			}
			stack := false
			for _, p := range f.Progs {
				switch p.Type {
				case elf.PT_INTERP, elf.PT_DYNAMIC, elf.PT_TLS:
					t.Errorf("has %v", p.Type)
				case elf.PT_LOAD:
					if p.Vaddr < LoadAddress || p.Vaddr+p.Memsz > limit {
						t.Errorf("PT_LOAD at %#x+%#x outside [%#x, %#x)", p.Vaddr, p.Memsz, LoadAddress, uint64(limit))
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
	if _, err := Binary("riscv64"); err == nil {
		t.Error("Binary(riscv64) succeeded")
	}
}

func TestExtract(t *testing.T) {
	dir := t.TempDir()
	p1, err := Extract(dir, "amd64")
	if err != nil {
		t.Fatal(err)
	}
	p2, err := Extract(dir, "arm64")
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
		want, _ := Binary(goarch)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: content differs from Binary(%q)", p, goarch)
		}
	}

	// Reused as is: same path, same inode.
	before, _ := os.Stat(p1)
	again, err := Extract(dir, "amd64")
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
	if _, err := Extract(dir, "amd64"); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p1); !bytes.Equal(got, loaderAMD64) {
		t.Error("damaged file not replaced")
	}

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
	p, err := Extract("", "arm64")
	if err != nil || filepath.Dir(p) != tmp {
		t.Errorf("Extract with TMPDIR = %q, %v; want a file in %q", p, err, tmp)
	}

	if _, err := Extract(dir, "mips"); err == nil {
		t.Error("Extract(mips) succeeded")
	}
}
