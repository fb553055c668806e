//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The oracle: test/progs/pathprobe runs the operations of each test/oracle/*.ops file under a
// real chroot with real bind mounts and under droidroot, in two fresh copies of the busybox
// rootfs with the same bindings; the transcripts must be identical byte for byte. pathprobe
// prints inode numbers as labels in order of appearance, so two copies of a tree compare equal
// while "same file or not" stays visible (see the comment at the top of pathprobe.c).

// probeVariants are the link modes pathprobe is built in (see test/rootfs/busybox.sh).
var probeVariants = []string{"pathprobe", "pathprobe.pie", "pathprobe.dyn"}

// oracleGuest makes a fresh copy of the busybox rootfs and fresh bind sources, and returns the
// guest that the .ops files expect (their header comments list the bindings).
func oracleGuest(t testing.TB, base string) guest {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	copyTree(t, base, root)
	b1, nested, b2, mp := filepath.Join(dir, "b1"), filepath.Join(dir, "nested"),
		filepath.Join(dir, "b2"), filepath.Join(dir, "mp")
	makeTree(t, b1, tree{
		"f":       "b1\n",
		"sub/g1":  "g1\n",
		"abs":     "->/fx/dir",       // absolute: must resolve in the guest
		"up":      "->..",            // leaves the bind: /mnt
		"rel":     "->sub",           // stays inside
		"hostabs": "->/etc/hostname", // the guest's /etc/hostname, not the host's
		"nested/": "",                // mount point of the nested bind
	})
	makeTree(t, nested, tree{"n": "n\n"})
	makeTree(t, b2, tree{
		"sub/g":  "g\n",
		"dotdot": "->../../..",
		"escape": "->../../../../../etc/hostname",
	})
	makeTree(t, mp, tree{"m": "m\n"})
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A bind deep in the rootfs, of a directory beside it (beyond-pathmax-rewrite.ops): paths
	// that cross it below a cwd deeper than PATH_MAX have a short relative host form.
	long := filepath.Join(root, "fx/long", strings.Repeat(strings.Repeat("L", 200)+"/", 9))
	for _, d := range []string{"src", "mp"} {
		if err := os.Mkdir(filepath.Join(long, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A bind whose host source path is long (beyond-pathmax-abs.ops): absolute guest paths
	// shorter than PATH_MAX below it have host paths longer than PATH_MAX.
	longSrc := filepath.Join(dir, strings.Repeat("S", 100), strings.Repeat("S", 100))
	if err := os.MkdirAll(longSrc, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "mnt/long"), 0o755); err != nil {
		t.Fatal(err)
	}
	return guest{
		Root: root,
		Binds: []string{
			"/proc",
			b1 + ":/mnt/b1",
			nested + ":/mnt/b1/nested",
			b2 + ":/mnt/b2",
			file + ":/mnt/file",
			root + "/fx/dir:/mnt/alias",
			mp + ":/fx/mp",
			filepath.Join(long, "src") + ":" + strings.TrimPrefix(filepath.Join(long, "mp"), root),
			longSrc + ":/mnt/long",
		},
		Cwd: "/",
	}
}

// opsFiles returns the oracle's .ops files by name.
func opsFiles(t testing.TB) map[string]string {
	t.Helper()
	paths, err := filepath.Glob(repoPath(t, "test/oracle/*.ops"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no test/oracle/*.ops files (%v)", err)
	}
	files := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimSuffix(filepath.Base(p), ".ops")] = string(b)
	}
	return files
}

// probe runs pathprobe variant prog on the ops file name in a fresh oracle guest and returns
// the transcript. With DROIDROOT_ORACLE_OUT=DIR set, the transcript is also saved there as
// RUNNER.PROG.NAME.txt, for reading or diffing by hand.
func probe(t testing.TB, runnerName string, r runner, base, prog, name, ops string) string {
	t.Helper()
	res := r(t, oracleGuest(t, base), ops, "/progs/"+prog, "-f", "-")
	if dir := os.Getenv("DROIDROOT_ORACLE_OUT"); dir != "" {
		p := filepath.Join(dir, runnerName+"."+prog+"."+name+".txt")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(res.Stdout+res.Stderr), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if res.Code != 0 || res.Stderr != "" {
		t.Fatalf("%s: /progs/%s -f %s.ops failed (exit 3 = malformed op line):\n%s", runnerName, prog, name, res)
	}
	return res.Stdout
}

// knownDivergences are ops files on which droidroot is known to differ from
// the kernel, with the reason. TestOracle requires them to still differ, so
// that a fix is noticed and the file moves back to the exact comparison.
var knownDivergences = map[string]string{}

// TestOracle compares droidroot with the chroot oracle on every .ops file and probe variant.
func TestOracle(t *testing.T) {
	needRoot(t)
	base := rootfs(t, "busybox")
	droidrootBin(t)
	files := opsFiles(t)
	for _, prog := range probeVariants {
		for name, ops := range files {
			t.Run(prog+"/"+name, func(t *testing.T) {
				t.Parallel()
				want := probe(t, "chroot", viaChroot, base, prog, name, ops)
				got := probe(t, "droidroot", viaDroidroot, base, prog, name, ops)
				diff := cmp.Diff(want, got)
				if reason, known := knownDivergences[name]; known {
					if diff == "" {
						t.Errorf("%s.ops now matches the chroot oracle: remove it from knownDivergences (%s)", name, reason)
					} else {
						t.Logf("known divergence on %s.ops (%s):\n%s", name, reason, diff)
					}
					return
				}
				if diff != "" {
					t.Errorf("droidroot differs from the chroot oracle on %s.ops (-chroot +droidroot):\n%s", name, diff)
				}
			})
		}
	}
}

// transcriptResults maps each op line of a transcript to its result (first occurrence).
func transcriptResults(transcript string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(transcript, "\n") {
		op, res, ok := strings.Cut(line, " -> ")
		if _, seen := m[op]; ok && !seen {
			m[op] = res
		}
	}
	return m
}

// TestOracleSelfCheck checks the oracle itself, without droidroot: two chroot runs on two
// copies give the same transcript (so the comparison in TestOracle is meaningful), and a few
// answers are what the kernel is known to give.
//
// The kernel's path semantics it checks are the same on every architecture, and TestOracle
// compares droidroot with the oracle on each: -short (the arm64 VM) leaves the self-check to
// the host run.
func TestOracleSelfCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the oracle's self-check is architecture-independent; the full (host) run does it")
	}
	needRoot(t)
	base := rootfs(t, "busybox")
	files := opsFiles(t)
	all := map[string]string{}
	for name, ops := range files {
		t.Run(name, func(t *testing.T) {
			a := probe(t, "chroot", viaChroot, base, "pathprobe", name, ops)
			b := probe(t, "chroot", viaChroot, base, "pathprobe", name, ops)
			if diff := cmp.Diff(a, b); diff != "" {
				t.Errorf("the oracle is not deterministic on %s.ops (-run1 +run2):\n%s", name, diff)
			}
			for op, res := range transcriptResults(a) {
				all[name+": "+op] = res
			}
		})
	}
	// Known kernel answers (file: op -> result).
	for op, want := range map[string]string{
		"paths: stat /fx/loop1":             "ELOOP",
		"paths: stat /fx/n1":                "ELOOP",
		"paths: stat /fx/dir/{256*n}":       "ENAMETOOLONG",
		"paths: stat /fx/filelink/":         "ENOTDIR",
		"paths: stat \"\"":                  "ENOENT",
		"paths: readlink /fx/abs":           `"/fx/dir"`,
		"paths: cat /mnt/b1/hostabs":        `"droidroot-busybox\n"`,
		"paths: cat /mnt/alias/file":        `"hello\n"`,
		"paths: stat /fx/{3000*./}dir/file": "ENAMETOOLONG",
		"proc: readlink /proc/self/exe":     `"/progs/pathprobe"`,
		"proc: readlink /proc/self/fd/21":   `"/mnt/b1/nested"`,
		"mounts: rename c /mnt/b1/c":        "EXDEV",
		"mounts: rmdir /mnt/b1":             "EBUSY",
		"nullpath: nullstat none":           "EFAULT", // NULL without AT_EMPTY_PATH, any kernel
		"nullpath: inotify 32 @bad":         "EINVAL", // the fd before the path
		"nullpath: inotify 33 @bad":         "EBADF",  // O_PATH
		"nullpath: inotify 999 @bad":        "EBADF",
		"nullpath: inotify new @bad":        "EFAULT",
		"nullpath: inotify new /mnt/b1/f":   "ok",
		"sockets: connect /tmp/s2":          `peername len=5 path="s2"`, // the binder's own (relative) path,
		"sockets: connect /tmp/{103*y}":     `peername len=111 path="/tmp/` + strings.Repeat("y", 103) + `"`,
	} {
		if got, ok := all[op]; !ok || got != want {
			t.Errorf("%s -> %s, want %s", op, got, want)
		}
	}
	// Pairs of ops that must name the same file, or different files (results include labels).
	// ".." after a symlink or a bind mount goes to the parent of where the walk really is, not
	// of the lexical path.
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"paths: stat /..", "paths: stat /", true},
		{"paths: stat /fx/dotdot/fx/dir", "paths: stat /fx/dir", true},
		{"paths: stat /fx/dir/deeplink/../..", "paths: stat /fx/dir", true},
		{"paths: stat /fx/dir/deeplink/..", "paths: stat /fx/dir", false},
		{"paths: stat /mnt/b1/..", "paths: stat /fx/bindlink/..", true},
		{"paths: stat /mnt/alias/..", "paths: stat /mnt/b1/..", true},
		{"paths: stat /mnt/alias/..", "paths: stat /fx", false},
		{"paths: stat /mnt/b1/up/b1/f", "paths: stat /mnt/b1/f", true},
		{"paths: stat /mnt/b1/nested/..", "paths: stat /mnt/b1", true},
		{"paths: stat /mnt/b2/dotdot", "paths: stat /", true},
		{"paths: stat /mnt/alias/file", "paths: stat /fx/dir/file", true},
		{"paths: stat /fx/hard", "paths: stat /fx/dir/file", true},
	} {
		a, b := all[c.a], all[c.b]
		if a == "" || b == "" || (a == b) != c.same {
			t.Errorf("%s -> %s\n%s -> %s\nwant the same file: %v", c.a, a, c.b, b, c.same)
		}
	}
}
