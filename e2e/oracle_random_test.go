//go:build linux

package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The random oracle: where the .ops files are written by hand, each one a question somebody
// thought of, TestOracleRandom asks what nobody thought of. randomOps makes a sequence of
// pathprobe operations from a seed, over the oracle guest's tree (test/rootfs/fixture.sh and
// the binds of oracleGuest): paths put together from its names, its symlinks, its binds, "..",
// "." and names the sequence itself creates, with trailing slashes, from the cwd, from "/" and
// from descriptors; reads, and changes inside the writable places (/fx/scratch and the binds);
// now and then an exec, a unix socket, an xattr or a statfs.
// It runs under the chroot oracle and under droidroot like an .ops file; the transcripts must be
// the same. A failure names its seed: DROIDROOT_ORACLE_SEED=N runs that one (the ops are saved
// with DROIDROOT_ORACLE_OUT), DROIDROOT_ORACLE_SEEDS=K runs K seeds from it, and
// DROIDROOT_ORACLE_OPS=N makes each sequence N ops long (250), and DROIDROOT_ORACLE_FILE=F runs
// the ops file F instead (a failing sequence cut down by hand).

// randomDirs are directories of the oracle guest that ops start from or cd into. Not
// /mnt/alias: a bind of the rootfs's /fx/dir, a directory with two guest paths, which droidroot
// knows by its rootfs path when it is reached through a descriptor or the cwd (architecture.md's
// known differences). No cwd or descriptor is made there (noAlias), and no symlink leads there.
var randomDirs = []string{
	"/", "/fx", "/fx/dir", "/fx/dir/sub", "/fx/dir/sub/deep", "/fx/scratch", "/fx/empty", "/fx/mp",
	"/mnt", "/mnt/b1", "/mnt/b1/sub", "/mnt/b1/nested", "/mnt/b2", "/mnt/b2/sub",
	"/fx/abs", "/fx/rel", "/fx/bindlink", "/fx/bindlink-rel", "/fx/mplink", "/fx/dir/sub/up",
}

// randomNames are names found in those directories (or not: a name is tried anywhere).
var randomNames = []string{
	"fx", "dir", "file", "sub", "deep", "f2", "hard", "abs", "rel", "relup", "up", "root", "deeplink",
	"dotdot", "absdotdot", "dangling", "dangling-rel", "loop1", "self", "chain1", "filelink",
	"bindlink", "bindlink-rel", "mplink", "trailing", "scratch", "empty", "mp", "m", "mnt", "b1", "b2",
	"f", "g", "g1", "nested", "n", "alias", "hostabs", "escape", "etc", "hostname", "ro",
	"with space", "nonexistent",
}

// randomWritable are the directories where the ops create, rename and remove.
var randomWritable = []string{"/fx/scratch", "/mnt/b1", "/mnt/b1/nested", "/mnt/b2/sub", "/fx/mp"}

// randomNew are the names the ops create.
var randomNew = []string{"a", "b", "c", "d"}

// randomExec are programs and scripts of the fixture (test/rootfs/fixture.sh) to exec.
var randomExec = []string{
	"/fx/exec/script.sh", "/fx/exec/script-arg", "/fx/exec/nested", "/fx/exec/link", "/fx/exec/abslink",
	"/fx/exec/show", "/fx/exec/showlink", "/fx/exec/deep4", "/fx/exec/badinterp", "/fx/exec/garbage",
	"/fx/exec/noexec", "/progs/pathprobe", "/fx/dir", "exec/show", "../fx/exec/script.sh",
}

// opGen makes one random sequence.
type opGen struct {
	r     *rand.Rand
	fds   map[int]bool // descriptor slots open (the probe's "fd N")
	lines []string
}

func (g *opGen) pick(s []string) string { return s[g.r.IntN(len(s))] }
func (g *opGen) chance(p float64) bool  { return g.r.Float64() < p }

// quote writes s as one pathprobe token.
func quote(s string) string {
	if s == "" || strings.ContainsAny(s, " \t\n\"\\{#") {
		return strconv.Quote(s) // pathprobe takes \" \\ and \xHH inside quotes
	}
	return s
}

// name is a component: a fixture name, a created one, "." or "..".
func (g *opGen) name() string {
	switch n := g.r.IntN(10); {
	case n < 5:
		return g.pick(randomNames)
	case n < 7:
		return g.pick(randomNew)
	case n < 8:
		return "."
	default:
		return ".."
	}
}

// path is a random path: absolute from a known directory or "/", or relative to the cwd or a
// descriptor, with zero to three more components and sometimes a trailing or doubled slash.
func (g *opGen) path(relative bool) string {
	var p string
	if !relative && g.chance(0.7) {
		p = g.pick(randomDirs)
	}
	for i := g.r.IntN(4); i > 0; i-- {
		sep := "/"
		if g.chance(0.05) {
			sep = "//"
		}
		if p == "" {
			sep = ""
		} else if strings.HasSuffix(p, "/") {
			sep = sep[1:]
		}
		p += sep + g.name()
	}
	if p == "" {
		p = g.name()
	}
	if g.chance(0.12) && !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return p
}

// newPath names a place to create: a new name in a writable directory, absolute or relative
// to the cwd, sometimes through a symlink or ".." on the way, or any path.
func (g *opGen) newPath() string { return g.newPathIn(10) }

// renameFrom is a path to rename: a newPath, but never any path, which may name a directory
// that holds a bind point (/mnt, /fx): the kernel moves the mounts with it, droidroot's binds
// stay at their guest paths, as proot's do (docs/architecture.md's known differences).
func (g *opGen) renameFrom() string { return g.newPathIn(9) }

func (g *opGen) newPathIn(cases int) string {
	switch n := g.r.IntN(cases); {
	case n < 5:
		return g.pick(randomWritable) + "/" + g.pick(randomNew)
	case n < 7:
		return g.pick(randomNew)
	case n < 8:
		return g.pick(randomWritable) + "/" + g.pick(randomNew) + "/" + g.pick(randomNew)
	case n < 9:
		return g.pick([]string{"/fx/bindlink", "/fx/mplink", "/fx/dir/sub/up/scratch", "/mnt/b2/sub/../sub"}) + "/" + g.pick(randomNew)
	default:
		return g.path(false)
	}
}

// slot is an open descriptor slot, or "cwd".
func (g *opGen) slot() string {
	var open []int
	for n := 20; n < 24; n++ {
		if g.fds[n] {
			open = append(open, n)
		}
	}
	if len(open) == 0 || g.chance(0.25) {
		return "cwd"
	}
	return strconv.Itoa(open[g.r.IntN(len(open))])
}

func (g *opGen) add(f string, a ...any) { g.lines = append(g.lines, fmt.Sprintf(f, a...)) }

// noAlias is a path from mk that does not name /mnt/alias's bind on the way (see randomDirs).
func noAlias(mk func() string) string {
	for {
		if p := mk(); !strings.Contains(p, "alias") {
			return p
		}
	}
}

// op appends one random operation.
func (g *opGen) op() {
	p := func() string { return quote(g.path(false)) }
	switch n := g.r.IntN(100); {
	case n < 14:
		g.add("%s %s", g.pick([]string{"stat", "lstat"}), p())
	case n < 18:
		g.add("%s %s", g.pick([]string{"statx", "lstatx"}), p())
	case n < 24:
		g.add("readlink %s", p())
	case n < 28:
		g.add("access %s %s", p(), g.pick([]string{"f", "r", "w", "x", "rw"}))
	case n < 30:
		g.add("%s %s %s", g.pick([]string{"eaccess", "laccess"}), p(), g.pick([]string{"f", "r", "x"}))
	case n < 36:
		g.add("open %s %s", p(), g.pick([]string{"rdonly", "rdonly,directory", "path", "rdonly,nofollow", "path,nofollow", "wronly,creat", "rdwr,creat,excl", "wronly,trunc"}))
	case n < 39:
		g.add("openat2 %s %s %s", p(), g.pick([]string{"rdonly", "path", "rdonly,directory"}),
			g.pick([]string{"none", "beneath", "inroot", "nosymlinks", "nomagiclinks", "noxdev", "inroot,nosymlinks"}))
	case n < 43:
		g.add("ls %s", p())
	case n < 45:
		g.add("cat %s", p())
	case n < 48:
		g.add("realpath %s", p())
	case n < 57:
		fd := g.slot()
		rel := quote(g.path(g.chance(0.8)))
		switch k := g.r.IntN(8); k {
		case 0, 1:
			g.add("at %s %s %s", fd, g.pick([]string{"stat", "lstat", "statx"}), rel)
		case 2:
			g.add("at %s readlink %s", fd, rel)
		case 3:
			g.add("at %s open %s %s", fd, rel, g.pick([]string{"rdonly", "rdonly,directory", "path", "wronly,creat"}))
		case 4:
			g.add("at %s access %s %s", fd, rel, g.pick([]string{"f", "r", "x"}))
		case 5:
			g.add("at %s mkdir %s", fd, quote(g.pick(randomNew)))
		case 6:
			g.add("at %s %s %s", fd, g.pick([]string{"unlink", "rmdir"}), quote(g.pick(randomNew)))
		default:
			g.add("at %s empty \"\"", fd)
		}
	case n < 59:
		g.add("getcwd")
	case n < 64:
		if g.chance(0.6) {
			g.add("cd %s", quote(g.pick(randomDirs)))
		} else {
			g.add("cd %s", noAlias(p))
		}
	case n < 65:
		g.add("fchdir %s", g.slot())
	case n < 70:
		slot := 20 + g.r.IntN(4)
		g.fds[slot] = true // a failed open leaves the slot as it was: "at" then says EBADF both ways
		dir := noAlias(func() string { return g.path(false) })
		if g.chance(0.6) {
			dir = g.pick(randomDirs)
		}
		g.add("fd %d %s %s", slot, quote(dir), g.pick([]string{"rdonly,directory", "path", "rdonly"}))
	case n < 71:
		slot := 20 + g.r.IntN(4)
		g.fds[slot] = false
		g.add("close %d", slot)
	case n < 77:
		g.add("mkdir %s", quote(g.newPath()))
	case n < 80:
		g.add("%s %s", g.pick([]string{"rmdir", "unlink"}), quote(g.newPath()))
	case n < 85:
		g.add("rename %s %s", quote(g.renameFrom()), quote(g.newPath()))
	case n < 87:
		g.add("link %s %s", quote(g.newPath()), quote(g.newPath()))
	case n < 92:
		target := noAlias(func() string { return g.path(g.chance(0.5)) })
		g.add("symlink %s %s", quote(target), quote(g.newPath()))
	case n < 95:
		g.add("write %s %s", quote(g.newPath()), quote("x\n"))
	case n < 97:
		g.add("truncate %s %d", quote(g.newPath()), g.r.IntN(3))
	default:
		g.add("chmod %s %s", quote(g.newPath()), g.pick([]string{"0755", "0600", "0444"}))
	}
}

// rareOp appends one of the rarer operations: exec (programs, scripts, symlinks to them, and
// whatever a random path names), unix sockets, xattrs, statfs, a cd into a made directory.
func (g *opGen) rareOp() {
	switch n := g.r.IntN(10); {
	case n < 3:
		p := g.pick(randomExec)
		if g.chance(0.3) {
			p = g.path(false)
		}
		args := g.pick([]string{"", " x", " argv", " getcwd"})
		if p == "/progs/pathprobe" {
			args = g.pick([]string{" argv", " getcwd", " \"readlink /proc/self/exe\""})
		}
		g.add("exec %s%s", quote(p), args)
	case n < 4:
		// A symlink to a program, then its exec (the link's own name is argv[0]). Not to
		// the probe itself: a later write through the link would find the running probe's
		// file, which the kernel refuses (ETXTBSY) for a program it exec'd, and droidroot's
		// loader maps (architecture.md's known differences).
		link := g.pick(randomWritable) + "/" + g.pick(randomNew)
		target := g.pick(randomExec)
		for target == "/progs/pathprobe" || target == "/fx/exec/abslink" { // the latter links to the former
			target = g.pick(randomExec)
		}
		g.add("symlink %s %s", quote(target), quote(link))
		g.add("exec %s x", quote(link))
	case n < 6:
		p := g.newPath()
		g.add("bind %s", quote(p))
		g.add("connect %s", quote(g.pick([]string{p, g.newPath()})))
		if g.chance(0.5) {
			g.add("closesocks")
		}
	case n < 7:
		g.add("%s %s user.x", g.pick([]string{"getxattr", "lgetxattr"}), quote(g.path(false)))
	case n < 8:
		g.add("setxattr %s user.x v", quote(g.newPath()))
	case n < 9:
		g.add("statfs %s", quote(g.path(false)))
	default:
		g.add("cd %s", quote(noAlias(g.newPath)))
	}
}

// randomOps returns an ops file of n random operations for seed.
func randomOps(seed uint64, n int) string {
	g := &opGen{r: rand.New(rand.NewPCG(seed, 0x6f7261636c65)), fds: map[int]bool{}}
	g.add("# random ops, seed %d", seed)
	for len(g.lines) <= n {
		if g.chance(0.08) {
			g.rareOp()
		} else {
			g.op()
		}
	}
	return strings.Join(g.lines, "\n") + "\n"
}

// TestRandomOpsDeterministic checks the generator itself: a seed always makes the same file,
// two seeds differ, and every line is one pathprobe knows (the probe's UNKNOWN-OP would fail
// the oracle run, but only as root).
func TestRandomOpsDeterministic(t *testing.T) {
	a, b := randomOps(7, 300), randomOps(7, 300)
	if a != b {
		t.Fatal("randomOps(7) differs between two calls")
	}
	if randomOps(8, 300) == a {
		t.Fatal("randomOps(8) == randomOps(7)")
	}
	known := map[string]bool{}
	for _, op := range strings.Fields("stat lstat statx lstatx readlink access eaccess laccess open openat2 ls cat realpath at getcwd cd fchdir fd close mkdir rmdir unlink rename link symlink write truncate chmod exec bind connect closesocks getxattr lgetxattr setxattr statfs #") {
		known[op] = true
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(a), "\n") {
		op, _, _ := strings.Cut(line, " ")
		if !known[op] {
			t.Errorf("unknown op in %q", line)
		}
		seen[op] = true
	}
	for _, op := range []string{"stat", "at", "rename", "symlink", "cd", "fd", "exec", "bind"} {
		if !seen[op] {
			t.Errorf("300 ops of seed 7 have no %s", op)
		}
	}
}

// TestOracleRandom compares droidroot with the chroot oracle on random op sequences, for each
// probe variant (static: every call a stop; dynamic: the fast path answers most).
func TestOracleRandom(t *testing.T) {
	needRoot(t)
	base := rootfs(t, "busybox")
	droidrootBin(t)
	first, count := uint64(1), 8
	if s := os.Getenv("DROIDROOT_ORACLE_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("DROIDROOT_ORACLE_SEED=%q: %v", s, err)
		}
		first, count = v, 1
	}
	if s := os.Getenv("DROIDROOT_ORACLE_SEEDS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("DROIDROOT_ORACLE_SEEDS=%q: want a positive number", s)
		}
		count = v
	}
	length := 250
	if s := os.Getenv("DROIDROOT_ORACLE_OPS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("DROIDROOT_ORACLE_OPS=%q: want a positive number", s)
		}
		length = v
	}
	type opsRun struct{ name, ops string }
	var runs []opsRun
	for seed := first; seed < first+uint64(count); seed++ {
		runs = append(runs, opsRun{fmt.Sprintf("random%d", seed), randomOps(seed, length)})
	}
	if f := os.Getenv("DROIDROOT_ORACLE_FILE"); f != "" {
		// An ops file of one's own (a failing seed's, cut down by hand).
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		runs = []opsRun{{strings.TrimSuffix(filepath.Base(f), ".ops"), string(b)}}
	}
	for _, run := range runs {
		name, ops := run.name, run.ops
		if dir := os.Getenv("DROIDROOT_ORACLE_OUT"); dir != "" {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name+".ops"), []byte(ops), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, prog := range []string{"pathprobe", "pathprobe.dyn"} {
			t.Run(prog+"/"+name, func(t *testing.T) {
				t.Parallel()
				want := probe(t, "chroot", viaChroot, base, prog, name, ops)
				got := probe(t, "droidroot", viaDroidroot, base, prog, name, ops)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("droidroot differs from the chroot oracle on %s (DROIDROOT_ORACLE_SEED=N runs randomN; -chroot +droidroot):\n%s", name, diff)
				}
			})
		}
	}
}
