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
	// A filesystem may return a listing in several batches (9p does, in
	// the arm64 VM), and a batch may lose all but some entries to the
	// hider: read until the end and join the batches.
	const reads = 6
	steps := []tt.Step{openat(cwdFD, "/tmp", unix.O_RDONLY|unix.O_DIRECTORY)}
	for i := 0; i < reads; i++ {
		steps = append(steps, tt.Call("getdents64", tt.Ret(0), tt.Out(4096), tt.Int(4096)))
	}
	steps = append(steps, tt.Call("getdents64", tt.Int(999), tt.Out(4096), tt.Int(4096)))
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
		var names []string
		ended := false
		for i := 1; i <= reads; i++ {
			n := int(r.Steps[i].Ret)
			if n < 0 {
				t.Errorf("%+v: getdents64 #%d = %d", c.cfg, i, n)
				break
			}
			if n == 0 {
				ended = true
				break
			}
			names = append(names, direntNames(r.Steps[i].Mem[1], n)...)
		}
		sort.Strings(names)
		if got := strings.Join(names, ","); got != c.want {
			t.Errorf("-H %v -l %v: listing %s, want %s", c.cfg.HideOwnFiles, c.cfg.Link2Symlink, got, c.want)
		}
		if !ended {
			t.Errorf("%+v: listing did not end within %d reads", c.cfg, reads)
		}
		if r.Steps[reads+1].Errno() != unix.EBADF {
			t.Errorf("%+v: bad fd %d, want EBADF", c.cfg, r.Steps[reads+1].Ret)
		}
	}
}
