//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestEmulateAt2 runs test/progs/at2probe (faccessat2, fchmodat2, openat2's struct checks,
// close_range; as root, then with different real and effective ids) natively in a chroot and
// under droidroot with DROIDROOT_EMULATE_AT2=1, where droidroot answers those calls itself
// as it must under Android's policy: the transcripts, errnos included, must be identical.
func TestEmulateAt2(t *testing.T) {
	needRoot(t)
	root := rootfs(t, "busybox")
	bin := droidrootBin(t)
	if _, err := os.Stat(filepath.Join(root, "progs/at2probe")); err != nil {
		missing(t, "%s has no /progs/at2probe: the busybox rootfs predates test/progs/at2probe.c (test/mkrootfs.sh busybox rebuilds it)", root)
	}
	for _, prog := range []string{"at2probe", "at2probe.pie", "at2probe.dyn"} {
		t.Run(prog, func(t *testing.T) {
			t.Parallel()
			g := func() guest {
				// Phase 2 runs as uid 65534: droidroot hands the kernel host paths, so
				// the bind source's parents must be searchable (t.TempDir's are 0700).
				dir, err := os.MkdirTemp("", "droidroot-at2-")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.RemoveAll(dir) })
				if err := os.Chmod(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				tmp := filepath.Join(dir, "tmp")
				makeTree(t, tmp, tree{"w/": ""})
				return guest{Root: root, Binds: []string{"/proc", "/dev", tmp + ":/tmp"}, Cwd: "/"}
			}
			want := viaChroot(t, g(), "", "/progs/"+prog, "/tmp/w")
			argv := append([]string{"env", "DROIDROOT_EMULATE_AT2=1"}, droidrootArgs(bin, g(), "/progs/"+prog, "/tmp/w")...)
			got := run(t, "", argv...)
			if want.Code != 0 || want.Stderr != "" {
				t.Fatalf("native run failed: %s", want)
			}
			if got.Code != 0 || got.Stderr != "" {
				t.Errorf("droidroot run failed: %s", got)
			}
			if strings.Contains(want.Stdout, "fchmodat2 c 0600 -> ENOSYS") {
				// A kernel before 6.6 has no fchmodat2: compare the rest.
				t.Log("this kernel has no fchmodat2: its lines are not compared")
				want.Stdout, got.Stdout = dropFchmodat2(want.Stdout), dropFchmodat2(got.Stdout)
			}
			if os.Getenv("DROIDROOT_ANDROID_POLICY") != "" {
				// Under a policy set*id is emulated: phase 2's drop to uid 1000/65534
				// changes the ids droidroot answers with, not the kernel's, so the
				// probe's own opens still run as root. Phase 1 is the comparison.
				t.Log("DROIDROOT_ANDROID_POLICY: only phase 1 (real root) is compared")
				want.Stdout, _, _ = strings.Cut(want.Stdout, "== phase 2")
				got.Stdout, _, _ = strings.Cut(got.Stdout, "== phase 2")
			}
			if diff := cmp.Diff(want.Stdout, got.Stdout); diff != "" {
				t.Errorf("emulated answers differ from the kernel's (-kernel +droidroot):\n%s", diff)
			}
		})
	}
}

// dropFchmodat2 removes at2probe's fchmodat2 lines from a transcript.
func dropFchmodat2(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(l, "fchmodat2 ") && !strings.HasPrefix(l, "  mode of ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// TestOracleOpenat2Emulated runs test/oracle/openat2.ops with openat2 emulated
// (DROIDROOT_EMULATE_AT2=1: droidroot checks the RESOLVE_* rules and the tracee makes an
// openat instead) against the chroot oracle.
func TestOracleOpenat2Emulated(t *testing.T) {
	needRoot(t)
	base := rootfs(t, "busybox")
	bin := droidrootBin(t)
	ops, ok := opsFiles(t)["openat2"]
	if !ok {
		t.Fatal("no test/oracle/openat2.ops")
	}
	emulated := func(t testing.TB, g guest, stdin string, cmd ...string) result {
		return run(t, stdin, append([]string{"env", "DROIDROOT_EMULATE_AT2=1"}, droidrootArgs(bin, g, cmd...)...)...)
	}
	for _, prog := range probeVariants {
		t.Run(prog, func(t *testing.T) {
			t.Parallel()
			want := probe(t, "chroot", viaChroot, base, prog, "openat2", ops)
			got := probe(t, "droidroot-at2", emulated, base, prog, "openat2", ops)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("emulated openat2 differs from the chroot oracle (-chroot +droidroot):\n%s", diff)
			}
		})
	}
}
