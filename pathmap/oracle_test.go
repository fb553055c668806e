package pathmap

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// The oracle test compares Resolve with the kernel itself: a re-executed
// copy of the test binary unshares its mount namespace, bind-mounts the same
// bindings into the rootfs, chroots into it and runs the same probes
// natively. Before that (in the same process, namespace private but nothing
// mounted yet, so the rootfs is exactly what pathmap sees) it runs every
// probe through pathmap.Lookup followed by the same system call on the host
// path. Both answers must be identical: errno, st_ino, st_dev, file type
// (and the link target for readlink).
//
// The bindings are mounted with MS_BIND|MS_REC (rbind): pathmap hands host
// paths to the host kernel, which sees every mount below a binding's source
// (devpts under /dev, ...), and so does proot.
//
// Mount points that do not exist (/sdcard, /a/b/c, /etc/resolv.conf,
// /libalias, /mnt/inner) are created by the child only after the pathmap
// side has run; they are removed with the temporary tree. The directories
// this creates for /a and /a/b are real in the oracle but virtual for
// pathmap (stand-in directory): for results with Result.Virtual only errno
// and file type are compared.

const oracleEnv = "PATHMAP_ORACLE_CHILD"

type oracleProbe struct {
	Op   string // lstat, stat, readlink, mkdir, rmdir, unlink
	Cwd  string // guest cwd ("" = "/")
	Path string // "FD" is replaced with a directory fd of /usr/lib
}

type oracleAnswer struct {
	Errno   string
	Ino     uint64
	Dev     uint64
	Type    uint32
	Link    string
	Host    string `json:",omitempty"`
	Virtual bool   `json:",omitempty"`
}

type oracleConfig struct {
	Cache  bool // pathmap side WithCache, warmed by a first pass
	Root   string
	VDir   string
	Binds  []Binding
	Probes []oracleProbe
}

type oracleOutput struct {
	Pathmap []oracleAnswer
	Kernel  []oracleAnswer
}

func oracleProbes(rt *realTree) []oracleProbe {
	paths := []string{
		"", "/", "//", "/.", "/..", "/../..", "/usr", "/usr/", "/usr/.", "/usr/..", "/usr//bin///sh",
		"/usr/bin/sh", "/usr/bin/sh/", "/usr/bin/sh/.", "/usr/bin/sh/..", "/usr/bin/sh/x",
		"/bin", "/bin/", "/bin/sh", "/bin/.", "/bin/..", "/bin/../lib", "/lib", "/lib/", "/lib/libc.so",
		"/lib/..", "/lib/../..", "/etc/link-out", "/etc/link-out/", "/etc/link-out/etc/group",
		"/dangling", "/dangling/", "/dangling/x", "/dangling-dir", "/dangling-dir/", "/dangling/..",
		"/loop1", "/loop1/", "/loop1/x", "/self-loop", "/self-loop/.", "/c0", "/c0/", "/c1", "/d0", "/d0/x",
		"/to-sdcard", "/to-sdcard/", "/to-sdcard/a.txt", "/to-sdcard-rel", "/to-sdcard-rel/a.txt",
		"/to-sdcard/..", "/to-dev-null", "/to-dev-null/", "/dev", "/dev/", "/dev/..", "/dev/null",
		"/dev/null/", "/dev/null/x", "/dev/null/..", "/dev/pts", "/dev/fd", "/dev/fd/", "/dev/fd/0",
		"/dev/stdin", "/up", "/up/etc/group", "/usr/lib/up2", "/usr/lib/up2/usr", "/usr/lib/abs-bin",
		"/file-link", "/file-link/", "/file-link/.", "/slashlink", "/slashlink/", "/rootlink",
		"/rootlink/", "/rootlink/..", "/rootlink/etc", "/dotdotlink", "/dotdotlink/",
		"/sdcard", "/sdcard/", "/sdcard/.", "/sdcard/..", "/sdcard/Download/../..", "/sdcard/escape",
		"/sdcard/escape/etc/group", "/sdcard/rel-up", "/sdcard/rel-up/usr", "/sdcard/to-lib",
		"/sdcard/to-lib/libc.so", "/sdcard/Download/to-group", "/sdcard/Download/a.txt",
		"/sdcard/Download/a.txt/", "/sdcard/Download/a.txt/..", "/sdcard/missing", "/sdcard/missing/x",
		"/mnt", "/mnt/", "/mnt/g", "/mnt/dir", "/mnt/dir/..", "/mnt/inner", "/mnt/inner/f",
		"/mnt/inner/..", "/mnt/inner/../..", "/mnt/inner/up", "/mnt/inner/up/etc", "/to-mnt-inner",
		"/a", "/a/", "/a/b", "/a/b/", "/a/b/c", "/a/b/c/", "/a/b/c/f", "/a/b/c/up", "/a/b/c/up/group",
		"/a/b/c/..", "/a/b/c/../..", "/a/b/c/../../..", "/a/b/c/../../../etc/group", "/a/zzz",
		"/a/zzz/", "/a/b/c/f/", "/to-virtual", "/to-virtual/", "/to-virtual-dir", "/to-virtual-dir/",
		"/to-virtual-dir/c/f", "/etc/passwd", "/etc/passwd/", "/etc/passwd/x", "/etc/passwd/..",
		"/etc/resolv.conf", "/etc/resolv.conf/..", "/libalias", "/libalias/", "/libalias/libc.so",
		"/libalias/..", "/libalias/up2", "/to-libalias", "/to-file-slash", "/to-host-escape",
		"/to-host-escape/group", "/home/u/rel", "/home/u/rel/", "/home/u/rel/libc.so",
		"/home/u/dotdot-link", "/home/u/dotdot-link/..", "/home/u/dotdot-link/u/.profile",
		"/proc/self", "/proc/self/", "/proc/self/status", "/proc/thread-self", "/proc/thread-self/",
		"/proc/thread-self/status", "/proc/mounts", "/proc/self/exe", "/proc/self/cwd",
		"/proc/self/cwd/", "/proc/self/cwd/etc/group", "/proc/self/cwd/usr/..", "/proc/self/fd/FD",
		"/proc/self/fd/FD/", "/proc/self/fd/FD/libc.so", "/proc/self/fd/FD/..", "/to-proc-self",
		"/to-proc-self/status", "/proc/self/fd", "/proc/self/fd/",
		"/nonexistent", "/nonexistent/", "/nonexistent/x", "/nonexistent/..", "/empty/..",
		"/empty/../..", "/empty/.", "/tmp/" + strings.Repeat("n", 255), "/tmp/" + strings.Repeat("n", 256),
		"/" + strings.Repeat("n", 256) + "/x", "/tmp/" + strings.Repeat("n", 256) + "/",
		rt.deep, rt.deep + "/", rt.deep + "/..", rt.deep + "/../f",
		"/esc/abs", "/esc/abs/etc", "/esc/rel", "/esc/rel/usr", "/esc/host-etc", "/esc/host-etc/passwd",
		"/esc/host-tmp", "/esc/into-bind", "/esc/into-bind/", "/esc/bind-dotdot", "/esc/loop-dir",
		"/esc/dot/dot/dotdot", "/esc/dot/dot/dotdot/", "/esc/slash", "/esc/slash/usr", "/esc/empty-dotdot",
		"/esc/virtual-up", "/esc/virtual-up/etc", "/esc/deep", "/esc/deep/etc", "/sdcard/host-up",
		"/sdcard/host-up/etc", "/a/b/c/sib", "/a/b/c/sib/", "/a/b/c/sib/..",
	}
	// Exactly PathMax-1 and PathMax bytes.
	for _, n := range []int{PathMax - 1, PathMax} {
		tail := "etc/group"
		p := "/" + strings.Repeat("./", (n-1-len(tail))/2)
		p += strings.Repeat("/", n-len(p)-len(tail)) + tail
		paths = append(paths, p)
	}
	var probes []oracleProbe
	for _, p := range paths {
		probes = append(probes, oracleProbe{Op: "lstat", Path: p}, oracleProbe{Op: "stat", Path: p})
	}
	for _, c := range [][2]string{
		{"/home/u", "../../etc/group"}, {"/sdcard/Download", "../.."}, {"/sdcard", ".."},
		{"/sdcard", "to-lib/libc.so"}, {"/mnt/inner", "../g"}, {"/mnt/inner", "up/etc"},
		{"/a/b/c", "../../../usr"}, {"/a/b/c", "f"}, {"/a/b/c", "up/group"}, {"/libalias", "../etc"},
		{"/libalias", "up2"}, {"/home/u", "rel/libc.so"}, {"/usr", "bin/sh"}, {"/home/u", "."},
		{"/home/u", ""}, {"/home/u", "dotdot-link/.."}, {"/usr/lib", "../../bin/"},
		{"/a/b", "c/f"}, {"/a/b", ".."}, {"/a", "b/c/up/group"}, {"/a/b", "../../usr"}, {"/esc", "dot/rel"},
	} {
		probes = append(probes, oracleProbe{Op: "lstat", Cwd: c[0], Path: c[1]},
			oracleProbe{Op: "stat", Cwd: c[0], Path: c[1]})
	}
	for _, p := range []string{"/bin", "/bin/", "/dangling", "/lib", "/usr", "/sdcard/escape",
		"/nonexistent", "/dev/fd", "/to-proc-self", "/proc/self", "/proc/self/", "/slashlink/",
		"/c0", "/home/u/rel", "/proc/mounts", "/libalias/up2"} {
		probes = append(probes, oracleProbe{Op: "readlink", Path: p})
	}
	// Calls on the entry itself, all of which must fail.
	for _, p := range []string{"/bin/", "/dangling/", "/usr/..", "/usr/.", "/", "/etc/group/x",
		"/nonexistent/x", "/loop1/x", "/sdcard/Download", "/bin/sh", "/a/b/c/f", "/to-sdcard/",
		"/dangling-dir/"} {
		probes = append(probes, oracleProbe{Op: "mkdir", Path: p})
	}
	for _, p := range []string{"/bin/", "/etc/..", "/etc/.", "/", "/etc/group/", "/usr",
		"/sdcard/Download", "/a/b/c/..", "/dangling", "/nonexistent", "/to-sdcard/", "/lib/",
		"/sdcard/..", "/etc/group/.", "/mnt/inner/.."} {
		probes = append(probes, oracleProbe{Op: "rmdir", Path: p})
	}
	for _, p := range []string{"/bin/", "/usr/..", "/usr", "/", "/etc/group/", "/nonexistent",
		"/usr/bin/x/y", "/dangling/", "/sdcard/Download/", "/.", "/lib/"} {
		probes = append(probes, oracleProbe{Op: "unlink", Path: p})
	}
	return probes
}

func TestOracle(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the oracle needs root (mount namespaces, bind mounts, chroot)")
	}
	t.Run("uncached", func(t *testing.T) { testOracle(t, false) })
	t.Run("cached", func(t *testing.T) { testOracle(t, true) })
}

func testOracle(t *testing.T, cache bool) {
	rt := newRealTree(t)
	cfg := oracleConfig{Cache: cache, Root: rt.root, VDir: rt.vdir, Binds: rt.binds, Probes: oracleProbes(rt)}
	cfgPath := filepath.Join(rt.base, "oracle.json")
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), oracleEnv+"="+cfgPath)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "oracle: unshare") {
			t.Skipf("no mount namespaces here: %s", out)
		}
		t.Fatalf("oracle child: %v\n%s", err, out)
	}
	var res oracleOutput
	rb, err := os.ReadFile(cfgPath + ".out")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(rb, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Pathmap) != len(cfg.Probes) || len(res.Kernel) != len(cfg.Probes) {
		t.Fatalf("got %d/%d answers for %d probes", len(res.Pathmap), len(res.Kernel), len(cfg.Probes))
	}
	bad, virtual := 0, 0
	for i, p := range cfg.Probes {
		pm, k := res.Pathmap[i], res.Kernel[i]
		same := pm.Errno == k.Errno && pm.Type == k.Type && pm.Link == k.Link
		if pm.Virtual {
			virtual++
		} else {
			same = same && pm.Ino == k.Ino && pm.Dev == k.Dev
		}
		if !same {
			bad++
			pm.Host = ""
			t.Errorf("%s(cwd %q, %.80q):\n  kernel  %+v\n  pathmap %+v (host %q)", p.Op, p.Cwd, p.Path, k, pm, res.Pathmap[i].Host)
		}
	}
	t.Logf("%d probes, %d differ, %d on virtual directories (errno and type only)", len(cfg.Probes), bad, virtual)
}

// oracleChild runs in the re-executed test binary.
func oracleChild(cfgPath string) {
	if err := runOracleChild(cfgPath); err != nil {
		fmt.Fprintln(os.Stderr, "oracle:", err)
		os.Exit(2)
	}
	os.Exit(0)
}

func runOracleChild(cfgPath string) error {
	// The mount namespace and the root are per thread once unshared: stay
	// on this thread for good.
	runtime.LockOSThread()
	b, err := os.ReadFile(cfgPath)
	if err != nil {
		return err
	}
	var cfg oracleConfig
	if err := json.Unmarshal(b, &cfg); err != nil {
		return err
	}
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("unshare: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("unshare: make-rprivate: %w", err)
	}
	if err := unix.Chdir(cfg.Root); err != nil {
		return err
	}
	fd, err := unix.Open(cfg.Root+"/usr/lib", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	for i := range cfg.Probes {
		cfg.Probes[i].Path = strings.ReplaceAll(cfg.Probes[i].Path, "FD", strconv.Itoa(fd))
	}

	// 1. pathmap, on the untouched rootfs.
	opts := []Option{WithVirtualDir(cfg.VDir)}
	if cfg.Cache {
		opts = append(opts, WithCache())
	}
	m, err := New(cfg.Root, cfg.Binds, nil, opts...)
	if err != nil {
		return err
	}
	if cfg.Cache && !m.Cached() {
		return fmt.Errorf("WithCache: no cache")
	}
	pr := Proc{Pid: os.Getpid(), Tid: unix.Gettid()}
	if cfg.Cache {
		// Warm the cache: the answers below then come from it (and from
		// its invalidations after any probe that changed the tree).
		for _, p := range cfg.Probes {
			cwd := p.Cwd
			if cwd == "" {
				cwd = "/"
			}
			for _, f := range []Flags{0, Follow, Entry} {
				m.Lookup(pr, cwd, p.Path, f)
			}
		}
	}
	var out oracleOutput
	for _, p := range cfg.Probes {
		cwd := p.Cwd
		if cwd == "" {
			cwd = "/"
		}
		var flags Flags
		switch p.Op {
		case "stat":
			flags = Follow
		case "mkdir", "rmdir", "unlink":
			flags = Entry
		}
		r, err := m.Lookup(pr, cwd, p.Path, flags)
		var a oracleAnswer
		if err != nil {
			a = oracleAnswer{Errno: errName(err)}
		} else {
			a = probe(p.Op, r.Host)
		}
		a.Host, a.Virtual = r.Host, r.Virtual
		out.Pathmap = append(out.Pathmap, a)
	}
	if cfg.Cache {
		if st := m.CacheStats(); st.Hits == 0 {
			return fmt.Errorf("the cache was not used: %+v", st)
		}
	}
	m.Close()

	// 2. The same in a chroot with real bind mounts, parents first.
	binds := append([]Binding(nil), cfg.Binds...)
	sort.SliceStable(binds, func(i, j int) bool {
		return strings.Count(binds[i].Guest, "/") < strings.Count(binds[j].Guest, "/")
	})
	for _, bd := range binds {
		target := cfg.Root + bd.Guest
		if _, err := os.Lstat(target); errors.Is(err, os.ErrNotExist) {
			st, err := os.Stat(bd.Host)
			if err != nil {
				return err
			}
			if st.IsDir() {
				err = os.MkdirAll(target, 0o755)
			} else if err = os.MkdirAll(filepath.Dir(target), 0o755); err == nil {
				err = os.WriteFile(target, nil, 0o644)
			}
			if err != nil {
				return err
			}
		}
		if err := unix.Mount(bd.Host, target, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("mount --rbind %s %s: %w", bd.Host, target, err)
		}
	}
	// Opened now: the file is outside the rootfs.
	outF, err := os.Create(cfgPath + ".out")
	if err != nil {
		return err
	}
	defer outF.Close()
	if err := unix.Chroot(cfg.Root); err != nil {
		return err
	}
	for _, p := range cfg.Probes {
		cwd := p.Cwd
		if cwd == "" {
			cwd = "/"
		}
		if err := unix.Chdir(cwd); err != nil {
			return fmt.Errorf("chdir %s: %w", cwd, err)
		}
		out.Kernel = append(out.Kernel, probe(p.Op, p.Path))
	}
	return json.NewEncoder(outF).Encode(out)
}

// probe runs op on path and describes the outcome.
func probe(op, path string) oracleAnswer {
	var err error
	var a oracleAnswer
	var st unix.Stat_t
	switch op {
	case "lstat", "stat":
		if op == "lstat" {
			err = unix.Lstat(path, &st)
		} else {
			err = unix.Stat(path, &st)
		}
		if err == nil {
			a.Ino, a.Dev, a.Type = st.Ino, st.Dev, st.Mode&syscall.S_IFMT
		}
	case "readlink":
		buf := make([]byte, PathMax)
		var n int
		n, err = unix.Readlink(path, buf)
		if err == nil {
			a.Link = string(buf[:n])
		}
	case "mkdir":
		err = unix.Mkdir(path, 0o755)
	case "rmdir":
		err = unix.Rmdir(path)
	case "unlink":
		err = unix.Unlink(path)
	default:
		err = syscall.ENOSYS
	}
	if err == nil {
		a.Errno = "OK"
	} else {
		a.Errno = errName(err)
	}
	return a
}
