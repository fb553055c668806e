package tracer

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestParseMaps: file mappings only, with their range, offset and
// executable bit; anonymous and special mappings are left out.
func TestParseMaps(t *testing.T) {
	text := `5580c000-5580e000 r--p 00000000 fe:01 1234   /usr/bin/cat
5580e000-55813000 r-xp 00002000 fe:01 1234   /usr/bin/cat
7f00a000-7f00b000 rw-p 00000000 00:00 0 
7f00b000-7f00c000 r-xp 00001000 fe:01 99     /opt/a dir/lib.so
7ffd0000-7ffd1000 r-xp 00000000 00:00 0      [vdso]
`
	got := parseMaps(strings.NewReader(text))
	want := []mapping{
		{lo: 0x5580c000, hi: 0x5580e000, off: 0, path: "/usr/bin/cat"},
		{lo: 0x5580e000, hi: 0x55813000, off: 0x2000, exec: true, path: "/usr/bin/cat"},
		{lo: 0x7f00b000, hi: 0x7f00c000, off: 0x1000, exec: true, path: "/opt/a dir/lib.so"},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(mapping{})); diff != "" {
		t.Errorf("parseMaps (-want +got):\n%s", diff)
	}
}

// TestSymbolizer names addresses of a running dynamic program (sleep): the
// address of libc's getpid (from libc's own symbol table and the process's
// mappings) is "libc.so.6+0x... (getpid+0x4)" four bytes in; an address
// no file mapping holds has no name, and data is no code.
func TestSymbolizer(t *testing.T) {
	cmd := exec.Command("/bin/sleep", "10")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	defer cmd.Process.Kill()
	// The maps are read until libc's executable mapping holding getpid
	// shows: while ld.so is still mapping libc, the file's first mapping
	// covers it all, and pieces of it are executable where no code is.
	var ms []mapping
	var libc *mapping
	var s symbolizer
	var getpid uint64
	for i := 0; i < 200 && libc == nil; i++ {
		time.Sleep(10 * time.Millisecond)
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", cmd.Process.Pid))
		if err != nil {
			t.Fatal(err)
		}
		ms = parseMaps(strings.NewReader(string(b)))
		for k := range ms {
			m := &ms[k]
			if !strings.HasPrefix(filepath.Base(m.path), "libc.so") || !m.exec {
				continue
			}
			if getpid == 0 {
				for _, sym := range s.fileSyms(m.path) {
					if sym.name == "getpid" {
						getpid = sym.off
					}
				}
				if getpid == 0 {
					t.Fatalf("%s has no getpid symbol", m.path)
				}
			}
			if getpid >= m.off && getpid < m.off+(m.hi-m.lo) {
				libc = m
			}
		}
	}
	if libc == nil {
		if getpid != 0 {
			t.Fatalf("getpid at file offset %#x is in no executable mapping of libc:\n%+v", getpid, ms)
		}
		t.Skip("sleep maps no libc (a static sleep?)")
	}
	a := libc.lo + getpid - libc.off + 4
	want := fmt.Sprintf("%s+%#x (getpid+0x4)", filepath.Base(libc.path), getpid+4)
	if got := s.name(ms, a, true); got != want {
		t.Errorf("name of getpid+4 = %q, want %q", got, want)
	}
	if got := s.name(ms, 8, false); got != "" {
		t.Errorf("name of address 8 = %q, want none", got)
	}
	for _, m := range ms {
		if !m.exec {
			if got := s.name(ms, m.lo, true); got != "" {
				t.Errorf("data at %#x (%s) as code = %q, want none", m.lo, m.path, got)
			}
			break
		}
	}
}
