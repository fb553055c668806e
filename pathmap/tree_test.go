package pathmap

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// realTree is a tree of real files, symlinks and directories in a
// temporary directory, used by the real-filesystem tests, the oracle, the
// fuzz test and the benchmarks.
type realTree struct {
	base  string // the temporary directory (canonical)
	root  string // the rootfs
	vdir  string // stand-in for virtual directories
	binds []Binding
	// deep is a guest path of about 3600 bytes to a file.
	deep string
}

// mkTree creates entries below dir: "d/" a directory, "f" a file,
// "l -> target" a symlink.
func mkTree(t testing.TB, dir string, entries ...string) {
	t.Helper()
	for _, e := range entries {
		var err error
		switch {
		case strings.Contains(e, " -> "):
			name, target, _ := strings.Cut(e, " -> ")
			p := filepath.Join(dir, name)
			if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
				err = os.Symlink(target, p)
			}
		case strings.HasSuffix(e, "/"):
			err = os.MkdirAll(filepath.Join(dir, e), 0o755)
		default:
			p := filepath.Join(dir, e)
			if err = os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
				err = os.WriteFile(p, []byte(e), 0o644)
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

func newRealTree(t testing.TB) *realTree {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	rt := &realTree{base: base, root: base + "/root", vdir: base + "/vdir"}
	mkTree(t, rt.root,
		"usr/bin/sh", "usr/lib/libc.so", "usr/share/doc/", "etc/group", "etc/passwd",
		"home/u/.profile", "tmp/", "mnt/", "proc/", "dev/", "empty/",
		"bin -> usr/bin",
		"lib -> /usr/lib",
		"etc/link-out -> /../../..",
		"dangling -> /nonexistent",
		"dangling-dir -> /nonexistent/",
		"loop1 -> loop2",
		"loop2 -> loop1",
		"self-loop -> self-loop",
		"to-sdcard -> /sdcard/Download",
		"to-sdcard-rel -> sdcard/Download/",
		"to-dev-null -> /dev/null",
		"up -> ../../..",
		"file-link -> etc/group",
		"slashlink -> usr/",
		"rootlink -> /",
		"dotdotlink -> usr/lib/..",
		"to-virtual -> /a/b/c/f",
		"to-virtual-dir -> /a/b",
		"to-proc-self -> /proc/self",
		"to-mnt-inner -> mnt/inner/../inner/f",
		"usr/lib/up2 -> ../../..",
		"usr/lib/abs-bin -> /bin/sh",
		"home/u/rel -> ../../usr/./lib//",
		"home/u/dotdot-link -> ..",
		"to-file-slash -> etc/group/",
		"to-host-escape -> ../../../../../../../../etc",
		"to-libalias -> libalias/libc.so",
		"esc/abs -> /../../../../..",
		"esc/rel -> ../../../../../../..",
		"esc/host-etc -> /etc",
		"esc/host-tmp -> ../../../../../tmp",
		"esc/into-bind -> ../sdcard/../sdcard/rel-up/../..",
		"esc/bind-dotdot -> /mnt/inner/../../..",
		"esc/loop-dir -> ../esc/loop-dir/x",
		"esc/dot -> .",
		"esc/dotdot -> ..",
		"esc/slash -> ///",
		"esc/empty-dotdot -> ./../..//./",
		"esc/virtual-up -> /a/b/../../..",
		"esc/deep -> ../usr/lib/up2/usr/lib/up2/esc/rel",
	)
	for i := 0; i < 39; i++ {
		mkTree(t, rt.root, fmt.Sprintf("c%d -> c%d", i, i+1))
	}
	mkTree(t, rt.root, "c39 -> etc/group")
	for i := 0; i < 40; i++ {
		mkTree(t, rt.root, fmt.Sprintf("d%d -> d%d", i, i+1))
	}
	mkTree(t, rt.root, "d40 -> etc/group")

	// A deep directory: 14 components of 250 bytes.
	deep := "/long"
	for i := 0; i < 14; i++ {
		deep += "/" + strings.Repeat(string(rune('a'+i)), 250)
	}
	mkTree(t, rt.root, deep[1:]+"/f")
	rt.deep = deep + "/f"

	mkTree(t, base,
		"sd/Download/a.txt",
		"sd/escape -> /../..",
		"sd/rel-up -> ../../..",
		"sd/to-lib -> ../usr/lib",
		"sd/Download/to-group -> ../../etc/group",
		"optA/g",
		"optA/dir/",
		"optB/f",
		"optB/up -> ../..",
		"datax/f",
		"datax/up -> ../../../etc",
		"datax/sib -> ../optA",
		"sd/host-up -> ../../../../..",
		"hostfile",
		"resolv",
		"vdir/",
	)
	rt.binds = []Binding{
		{Host: base + "/sd", Guest: "/sdcard"},
		{Host: "/dev", Guest: "/dev"},
		{Host: "/proc", Guest: "/proc"},
		{Host: base + "/optA", Guest: "/mnt"},
		{Host: base + "/optB", Guest: "/mnt/inner"},
		{Host: base + "/datax", Guest: "/a/b/c"},
		{Host: base + "/hostfile", Guest: "/etc/passwd"},
		{Host: base + "/resolv", Guest: "/etc/resolv.conf"},
		{Host: rt.root + "/usr/lib", Guest: "/libalias"},
	}
	return rt
}

func (rt *realTree) mapper(t testing.TB) *Mapper {
	t.Helper()
	m, err := New(rt.root, rt.binds, nil, WithVirtualDir(rt.vdir))
	if err != nil {
		t.Fatal(err)
	}
	return m
}
