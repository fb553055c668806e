package emul

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	tt "github.com/droidroot/droidroot/tracer/tracertest"
)

// direntNames returns the names in a getdents64 buffer of n bytes.
func direntNames(b []byte, n int) []string {
	var names []string
	for off := 0; off+19 < n; {
		reclen := int(binary.LittleEndian.Uint16(b[off+16:]))
		if reclen == 0 {
			break
		}
		name := b[off+19 : off+reclen]
		if i := strings.IndexByte(string(name), 0); i >= 0 {
			name = name[:i]
		}
		names = append(names, string(name))
		off += reclen
	}
	sort.Strings(names)
	return names
}

// TestGetdentsHider: -H leaves termux's .proot* names out of listings,
// -l its link data files; without them a listing is the kernel's.
func TestGetdentsHider(t *testing.T) {
	g := newGuestFS(t)
	for _, name := range []string{".proot-meta", "keep", ".l2s.data0001", "zz"} {
		mustWrite(t, filepath.Join(g.root, "tmp", name), "")
	}
	steps := []tt.Step{
		openat(cwdFD, "/tmp", unix.O_RDONLY|unix.O_DIRECTORY),
		tt.Call("getdents64", tt.Ret(0), tt.Out(4096), tt.Int(4096)),
		tt.Call("getdents64", tt.Ret(0), tt.Out(4096), tt.Int(4096)),
		tt.Call("getdents64", tt.Int(999), tt.Out(4096), tt.Int(4096)),
	}
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{}, ".,..,.l2s.data0001,.proot-meta,keep,zz"},
		{Config{HideOwnFiles: true, TmpDir: os.TempDir()}, ".,..,keep,zz"},
		{Config{Link2Symlink: true}, ".,..,.proot-meta,keep,zz"},
	}
	for _, c := range cases {
		r := g.run(t, c.cfg, "/", steps...)
		n := int(r.Steps[1].Ret)
		if n <= 0 {
			t.Errorf("%+v: getdents64 = %d", c.cfg, n)
			continue
		}
		if got := strings.Join(direntNames(r.Steps[1].Mem[1], n), ","); got != c.want {
			t.Errorf("-H %v -l %v: listing %s, want %s", c.cfg.HideOwnFiles, c.cfg.Link2Symlink, got, c.want)
		}
		if r.Steps[2].Ret != 0 || r.Steps[3].Errno() != unix.EBADF {
			t.Errorf("%+v: end of listing %d, bad fd %d", c.cfg, r.Steps[2].Ret, r.Steps[3].Ret)
		}
	}
}
