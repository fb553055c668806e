package pathmap

import (
	"errors"
	"os"
	"path"
	"strings"
	"syscall"
	"testing"
)

// fuzzCwds are the guest directories a fuzz input may start from.
var fuzzCwds = []string{"/", "/usr/lib", "/sdcard/Download", "/a/b", "/a/b/c", "/mnt/inner",
	"/libalias", "/home/u", "/a", "/esc"}

// FuzzResolve checks that no guest path, however built, resolves to a host
// path outside the rootfs, the binding sources and the stand-in directory:
// lexically (the result must be clean and below one of them) and on the
// host (no ancestor of the result below that base is a symlink, and a
// followed result is not one either). It also checks that the canonical
// guest path of a result resolves to the same host path again.
//
// Seeds run in every `go test`; `go test -fuzz=FuzzResolve ./pathmap/`
// explores further.
func FuzzResolve(f *testing.F) {
	rt := newRealTree(f)
	// No /dev or /proc bindings: every result must stay inside the tree.
	var binds []Binding
	for _, b := range rt.binds {
		if b.Host != "/dev" && b.Host != "/proc" {
			binds = append(binds, b)
		}
	}
	m, err := New(rt.root, binds, nil, WithVirtualDir(rt.vdir))
	if err != nil {
		f.Fatal(err)
	}
	// The same with the lookup cache: it must answer every input exactly
	// like m (the tree does not change here, so most of its answers are
	// hits).
	mc, err := New(rt.root, binds, nil, WithVirtualDir(rt.vdir), WithCache())
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { mc.Close() })
	bases := []string{m.Root(), m.VirtualDir()}
	for _, b := range m.Bindings() {
		bases = append(bases, b.Host)
	}

	seeds := []string{"", "/", ".", "..", "//", "/./../", "esc", "esc/abs", "esc/rel/", "esc/host-etc/passwd",
		"esc/host-tmp/..", "esc/into-bind/etc", "esc/bind-dotdot", "esc/loop-dir", "esc/dot/dot/dotdot",
		"esc/slash/..", "esc/empty-dotdot/..", "esc/virtual-up/usr", "esc/deep/x",
		"/sdcard/host-up/etc", "/a/b/c/sib/g", "/a/b/c/sib/..", "../../../../etc/passwd",
		"/to-host-escape/../../..", "/sdcard/rel-up/../../..", "/libalias/up2/libalias/..",
		"/a/b/c/../../../../..", "/a/zzz", "/a/b/zzz/", "/mnt/inner/up/", "/proc/self/fd/0",
		"/dev/null", "/usr/lib/abs-bin/", "/home/u/dotdot-link/dotdot-link", "/c0/", "/d0",
		"/loop1/..", "/esc/rel/esc/rel/esc/abs", "esc//.//..//esc/dot/", "/etc/passwd/..",
		"/etc/resolv.conf/", "/a/b/c/f/", "/to-virtual-dir/../..", "/to-sdcard-rel/../..",
		"x\x00/../..", strings.Repeat("../", 100) + "etc", rt.deep + "/../../..",
	}
	for i, s := range seeds {
		for fl := 0; fl < 8; fl++ {
			f.Add(s, uint8(i), uint8(fl))
		}
	}
	f.Fuzz(func(t *testing.T, p string, cwdSel, flagBits uint8) {
		cwd := fuzzCwds[int(cwdSel)%len(fuzzCwds)]
		flags := Flags(flagBits) & (Follow | Entry | WantGuest)
		r, err := m.Lookup(Proc{}, cwd, p, flags)
		for i := 0; i < 2; i++ {
			rc, errc := mc.Lookup(Proc{}, cwd, p, flags)
			if rc != r || errName(errc) != errName(err) {
				t.Fatalf("Lookup(%q, %q, %v): uncached %+v %v, cached %+v %v", cwd, p, flags, r, err, rc, errc)
			}
		}
		if err != nil {
			var e syscall.Errno
			if !errors.As(err, &e) {
				t.Fatalf("Lookup(%q, %q): non-errno error %v", cwd, p, err)
			}
			return
		}
		if r.Magic {
			t.Fatalf("Lookup(%q, %q) = magic %q without procfs", cwd, p, r.Host)
		}
		checkContained(t, bases, cwd, p, flags, r)

		// The canonical guest path leads to the same host path.
		if flags&WantGuest != 0 && flags&Entry == 0 && !r.Virtual {
			if r.Guest == "" || path.Clean(r.Guest) != r.Guest || !strings.HasPrefix(r.Guest, "/") {
				t.Fatalf("Lookup(%q, %q).Guest = %q, not canonical", cwd, p, r.Guest)
			}
			r2, err := m.Lookup(Proc{}, "/", r.Guest, flags)
			if err != nil || strings.TrimSuffix(r2.Host, "/") != strings.TrimSuffix(r.Host, "/") {
				t.Fatalf("Lookup(%q, %q) = %q via guest %q; again: %q, %v", cwd, p, r.Host, r.Guest, r2.Host, err)
			}
		}
	})
}

func checkContained(t *testing.T, bases []string, cwd, p string, flags Flags, r Result) {
	t.Helper()
	h := r.Host
	if flags&Entry != 0 {
		if h == "/" {
			if i := strings.IndexByte(p, 0); i >= 0 {
				p = p[:i]
			}
			if strings.Trim(p, "/") != "" {
				t.Fatalf("Lookup(%q, %q, Entry) = %q", cwd, p, h)
			}
			return
		}
		// Entry keeps a final "." or ".." for the kernel, which never looks
		// it up for those calls: check the directory before it.
		if strings.HasSuffix(h, "/.") || strings.HasSuffix(h, "/..") {
			h = h[:strings.LastIndexByte(h, '/')]
		}
	}
	trailing := len(h) > 1 && strings.HasSuffix(h, "/")
	h = strings.TrimSuffix(h, "/")
	if path.Clean(h) != h {
		t.Fatalf("Lookup(%q, %q, %v) = %q: not clean", cwd, p, flags, r.Host)
	}
	base := ""
	for _, b := range bases {
		if h == b || strings.HasPrefix(h, b+"/") {
			if len(b) > len(base) {
				base = b
			}
		}
	}
	if base == "" {
		t.Fatalf("Lookup(%q, %q, %v) = %q: outside the rootfs and bindings", cwd, p, flags, r.Host)
	}
	// No symlink between the base and the result.
	for a := path.Dir(h); len(a) > len(base); a = path.Dir(a) {
		st, err := os.Lstat(a)
		if err == nil && st.Mode()&os.ModeSymlink != 0 {
			t.Fatalf("Lookup(%q, %q, %v) = %q: ancestor %q is a symlink", cwd, p, flags, r.Host, a)
		}
	}
	followed := flags&Entry == 0 && (flags&Follow != 0 || trailing)
	if followed {
		if st, err := os.Lstat(h); err == nil && st.Mode()&os.ModeSymlink != 0 {
			t.Fatalf("Lookup(%q, %q, %v) = %q: a symlink, not followed", cwd, p, flags, r.Host)
		}
	}
}
