//go:build linux

package e2e

import (
	"os"
	"path/filepath"
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
			if diff := cmp.Diff(want.Stdout, got.Stdout); diff != "" {
				t.Errorf("emulated answers differ from the kernel's (-kernel +droidroot):\n%s", diff)
			}
		})
	}
}
