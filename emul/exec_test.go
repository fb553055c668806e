package emul

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/tracer"
)

func TestParseShebang(t *testing.T) {
	long := "#!/bin/" + strings.Repeat("x", 300)
	tests := []struct {
		in          string
		interp, arg string
		ok          bool
	}{
		{"#!/bin/sh\necho", "/bin/sh", "", true},
		{"#! /bin/sh -e \nx", "/bin/sh", "-e", true},
		{"#!/usr/bin/env python3 -u -x\n", "/usr/bin/env", "python3 -u -x", true},
		{"#!\t/bin/echo\t one  arg \t\n", "/bin/echo", "one  arg", true},
		{"#!/bin/sh", "/bin/sh", "", true},
		{"#!\n", "", "", false},
		{"#!   \n", "", "", false},
		{long[:256], "", "", false}, // interpreter name truncated by the 256-byte buffer
		// No newline in the buffer: its last byte is never part of the line (a
		// 300-byte argument after "#!/bin/echo " is 243 bytes under Linux 6.18).
		{"#!/bin/sh " + strings.Repeat("a", 300), "/bin/sh", strings.Repeat("a", 255-len("#!/bin/sh ")), true},
		{"#!/bin/echo " + strings.Repeat("x", 300), "/bin/echo", strings.Repeat("x", 243), true},
		// ... nor the blank that would end a name there.
		{"#!/" + strings.Repeat("n", 252) + " ", "", "", false},
		{"#!/" + strings.Repeat("n", 251) + " x", "/" + strings.Repeat("n", 251), "", true},
		// A NUL ends the search for the newline, the name and the argument.
		{"#!/bin/echo\x00 arg\n", "/bin/echo", "", true},
		{"#!/bin/echo a\x00b\n", "/bin/echo", "a", true},
		{"#!   \x00/bin/sh\n", "", "", true}, // an empty name: the kernel opens the cwd, EACCES
		{"#!", "", "", true},
		{"#! \t", "", "", true},
		{"#!/bin/sh\t\t\n", "/bin/sh", "", true},
		{"#!/bin/sh \r\n", "/bin/sh", "\r", true},
		{"#!/bin/sh\r\n", "/bin/sh\r", "", true},
	}
	for _, tt := range tests {
		hd := []byte(tt.in)
		if len(hd) > binprmBufSize {
			hd = hd[:binprmBufSize]
		}
		interp, arg, ok := parseShebang(hd)
		if interp != tt.interp || arg != tt.arg || ok != tt.ok {
			t.Errorf("parseShebang(%.40q) = %q, %q, %v; want %q, %q, %v", tt.in, interp, arg, ok, tt.interp, tt.arg, tt.ok)
		}
	}
}

// testELF builds a 64-bit little-endian ELF image for elfInterp: a header,
// the program headers at 64 and the interpreter string after them; change
// edits the bytes before they are returned.
func testELF(interp string, change func(b []byte)) []byte {
	le := binary.LittleEndian
	b := make([]byte, 64+2*56)
	copy(b, elf.ELFMAG)
	b[elf.EI_CLASS], b[elf.EI_DATA], b[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), 1
	le.PutUint16(b[16:], uint16(elf.ET_DYN))
	le.PutUint16(b[18:], uint16(tracer.ELFMachine))
	le.PutUint32(b[20:], uint32(elf.EV_CURRENT))
	le.PutUint64(b[32:], 64) // e_phoff
	le.PutUint16(b[54:], 56) // e_phentsize
	le.PutUint16(b[56:], 2)  // e_phnum
	le.PutUint32(b[64:], uint32(elf.PT_LOAD))
	if interp != "" {
		p := b[64+56:]
		le.PutUint32(p, uint32(elf.PT_INTERP))
		le.PutUint64(p[8:], uint64(len(b)))       // p_offset
		le.PutUint64(p[32:], uint64(len(interp))) // p_filesz
		b = append(b, interp...)
	}
	if change != nil {
		change(b)
	}
	return b
}

// TestELFInterp: elfInterp checks what the kernel's ELF loader checks, in
// its order and with its errnos, and nothing it does not read (section
// headers that debug/elf refuses, which the kernel runs).
func TestELFInterp(t *testing.T) {
	le := binary.LittleEndian
	const ld = "/lib/ld-linux.so.2\x00"
	tests := []struct {
		name   string
		image  []byte
		interp string
		errno  unix.Errno
	}{
		{"dynamic", testELF(ld, nil), "/lib/ld-linux.so.2", 0},
		{"static", testELF("", nil), "", 0},
		{"section headers past the end", testELF(ld, func(b []byte) {
			le.PutUint64(b[40:], 1<<40) // e_shoff
			le.PutUint16(b[58:], 64)    // e_shentsize
			le.PutUint16(b[60:], 9)     // e_shnum
			le.PutUint16(b[62:], 3)     // e_shstrndx
		}), "/lib/ld-linux.so.2", 0},
		{"e_version 0 (debug/elf refuses it)", testELF(ld, func(b []byte) { le.PutUint32(b[20:], 0) }), "/lib/ld-linux.so.2", 0},
		{"executable", testELF(ld, func(b []byte) { le.PutUint16(b[16:], uint16(elf.ET_EXEC)) }), "/lib/ld-linux.so.2", 0},
		{"relocatable", testELF(ld, func(b []byte) { le.PutUint16(b[16:], uint16(elf.ET_REL)) }), "", unix.ENOEXEC},
		{"another machine", testELF(ld, func(b []byte) { le.PutUint16(b[18:], uint16(elf.EM_RISCV)) }), "", unix.ENOEXEC},
		{"32-bit", testELF(ld, func(b []byte) { b[elf.EI_CLASS] = byte(elf.ELFCLASS32) }), "", unix.ENOEXEC},
		{"program header size", testELF(ld, func(b []byte) { le.PutUint16(b[54:], 64) }), "", unix.ENOEXEC},
		{"no program headers", testELF(ld, func(b []byte) { le.PutUint16(b[56:], 0) }), "", unix.ENOEXEC},
		{"program headers past the end", testELF(ld, func(b []byte) { le.PutUint64(b[32:], 4096) }), "", unix.EIO},
		{"interpreter not NUL-terminated", testELF("/lib/ld", nil), "", unix.ENOEXEC},
		{"interpreter of one byte", testELF("\x00", nil), "", unix.ENOEXEC},
		{"interpreter past the end", testELF(ld, func(b []byte) { le.PutUint64(b[64+56+8:], 1<<20) }), "", unix.EIO},
		{"short header", []byte(elf.ELFMAG + "\x02\x01"), "", unix.ENOEXEC},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			interp, errno := elfInterp(bytes.NewReader(tc.image))
			if interp != tc.interp || errno != tc.errno {
				t.Errorf("elfInterp = %q, %v; want %q, %v", interp, errno, tc.interp, tc.errno)
			}
		})
	}
}

// TestExecEvents: a file held for a process's loader (heldExec) stays open
// through the exec it was opened for and is closed at the process's next
// exec, or when the process is gone, or at once when the exec fails
// (dropHeld); other processes' are left alone.
func TestExecEvents(t *testing.T) {
	open := func() *os.File {
		f, err := os.Open("/dev/null")
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	closed := func(f *os.File) bool { return f.Close() != nil }
	e := &Emulation{execHeld: map[int]*heldFile{}}
	a, b := open(), open()
	e.execHeld[10], e.execHeld[20] = &heldFile{f: a}, &heldFile{f: b}
	e.execEvents(&tracer.Event{Kind: tracer.EventExec, Pid: 10, Tid: 10})
	if e.execHeld[10] == nil {
		t.Fatal("closed at the exec it was held for")
	}
	e.execEvents(&tracer.Event{Kind: tracer.EventThreadGone, Pid: 10, Tid: 11})
	e.execEvents(&tracer.Event{Kind: tracer.EventExec, Pid: 10, Tid: 10})
	if e.execHeld[10] != nil || !closed(a) {
		t.Error("not closed at the process's next exec")
	}
	e.execEvents(&tracer.Event{Kind: tracer.EventProcessGone, Pid: 20, Tid: 20})
	if e.execHeld[20] != nil || !closed(b) {
		t.Error("not closed when its process is gone")
	}
	e.execEvents(&tracer.Event{Kind: tracer.EventExec, Pid: 30, Tid: 30}) // none held: nothing happens
	// An exec that fails before the loader runs drops it at once.
	c := open()
	e.execHeld[40] = &heldFile{f: c}
	e.dropHeld(40)
	if e.execHeld[40] != nil || !closed(c) {
		t.Error("dropHeld left it open")
	}
}

// TestScriptArgv: a #! script's interpreter gets the interpreter, its
// optional argument and the script's name in place of argv[0], then the
// guest's own arguments, left where they are in guest memory.
func TestScriptArgv(t *testing.T) {
	guest := []execArg{{s: "./s", addr: 0x1000}, {addr: 0x2000}, {addr: 0x3000}}
	for _, tc := range []struct {
		name               string
		argv               []execArg
		interp, arg, name2 string
		want               []execArg
	}{
		{"plain", guest, "/bin/sh", "", "./s",
			[]execArg{{s: "/bin/sh"}, {s: "./s"}, {addr: 0x2000}, {addr: 0x3000}}},
		{"with an argument", guest, "/usr/bin/env", "python3 -u", "/dev/fd/3/s",
			[]execArg{{s: "/usr/bin/env"}, {s: "python3 -u"}, {s: "/dev/fd/3/s"}, {addr: 0x2000}, {addr: 0x3000}}},
		{"argv[0] only", guest[:1], "/bin/sh", "", "./s", []execArg{{s: "/bin/sh"}, {s: "./s"}}},
		{"empty argv", nil, "/bin/sh", "", "./s", []execArg{{s: "/bin/sh"}, {s: "./s"}}},
		{"again, for a script's script", []execArg{{s: "/a/b"}, {s: "./s"}, {addr: 0x2000}}, "/a/c", "", "/a/b",
			[]execArg{{s: "/a/c"}, {s: "/a/b"}, {s: "./s"}, {addr: 0x2000}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := scriptArgv(tc.argv, tc.interp, tc.arg, tc.name2)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(execArg{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
