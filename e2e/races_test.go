//go:build linux

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestRaces: the races between droidroot's check of a path and the kernel's use of it (issue
// 18), each with a real guest program (test/progs/races.c) whose one thread reads a decoy in
// the guest while another changes what its path means, counting the reads that reached a
// canary file in a host directory outside the rootfs (a chroot never gives one):
//
//   - swap-abs, swap-rel: a directory on the path swapped with a symlink to the host directory
//     (renameat2 RENAME_EXCHANGE) between droidroot's lookup and the kernel's walk; fixed by
//     handing the kernel the last component below the parent directory the lookup found, held
//     open by droidroot (pathmap's PinnedName).
//   - rewrite: a relative path droidroot left in guest memory for the kernel to read again,
//     rewritten by the other thread in between; fixed by the same (it is no longer left there).
//   - push: the host path droidroot writes into guest memory, overwritten by the other thread
//     before the kernel reads it; fixed by writing it into the loader's read-only scratch area
//     (tracer/scratch.go).
//   - swap-last: the file the lookup found swapped with a symlink to the host file before the
//     kernel follows the last component; fixed by handing the kernel the file itself, pinned
//     (pathmap.Mapper.PinnedFile; the library's pin_last where openat2 is refused).
//   - access-last: swap-last for access(X_OK), which the library made below the name's
//     verified parent after an lstat found no symlink there, following one swapped in since
//     (session 14); fixed by checking the pinned file (the library's access_pinned).
//   - appear: the name missing (or a file) at the lookup, a symlink to the host file when the
//     kernel follows it; fixed by handing the kernel a missing name below a removed directory,
//     where nothing appears (PinnedFile), and the file pinned as for swap-last.
//
// Before, each reached the host hundreds to thousands of times a second. With the fast path
// library on and off (where every call is the tracer's), static and dynamic. About a second
// each (half with -short, the arm64 VM, which also leaves out the dynamic program without the
// library).
func TestRaces(t *testing.T) {
	needRoot(t)
	progs := progsDir(t, "races")
	secs := "1"
	if testing.Short() {
		secs = "0.5"
	}
	// A short host path: the push attack writes it over the pushed path when it fits.
	hostDir, err := os.MkdirTemp("/tmp", "drh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(hostDir) })
	// Executable, where the decoy is not (access-last).
	if err := os.WriteFile(filepath.Join(hostDir, "canary"), []byte("host"), 0o755); err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`^(\S+) host=(\d+) decoy=(\d+) other=(\d+)\n$`)
	for _, mode := range []string{"swap-abs", "swap-rel", "rewrite", "push", "swap-last", "access-last", "appear"} {
		for _, c := range []struct{ name, prog, fastpath string }{
			{"static", "races", "0"},
			{"dyn-nofastpath", "races.dyn", "0"},
			{"dyn-fastpath", "races.dyn", "1"},
		} {
			t.Run(mode+"/"+c.name, func(t *testing.T) {
				if testing.Short() && c.name == "dyn-nofastpath" {
					t.Skip("-short: the static program's run is the tracer's alone already")
				}
				g := busyboxGuest(t)
				g.Binds = append(g.Binds, progs+":/mnt/b2")
				argv := droidrootArgs(droidrootBin(t), g, "/mnt/b2/"+c.prog, mode, hostDir, "/tmp/rc", secs)
				// A starved reader (the arm64 VM on a busy machine has
				// seen 2 reads in a run, before and after session 12's
				// changes) runs again, up to 4 runs in all, until its
				// decoy reads are enough to judge; no run may read the
				// host's file.
				var host, decoy, other int
				for runs := 0; runs < 4 && decoy < 10; runs++ {
					res := run(t, "", append([]string{"env", "DROIDROOT_FASTPATH=" + c.fastpath}, argv...)...)
					m := line.FindStringSubmatch(res.Stdout)
					if res.Code != 0 || m == nil || m[1] != mode {
						t.Fatalf("%s", res)
					}
					h, _ := strconv.Atoi(m[2])
					d, _ := strconv.Atoi(m[3])
					o, _ := strconv.Atoi(m[4])
					t.Logf("run %d: %d reads: %d host, %d decoy, %d other", runs+1, h+d+o, h, d, o)
					host, decoy, other = host+h, decoy+d, other+o
				}
				msg := fmt.Sprintf("%d reads: %d host, %d decoy, %d other", host+decoy+other, host, decoy, other)
				if host != 0 {
					t.Errorf("%s: the guest read the host's file", msg)
				}
				if decoy < 10 {
					t.Errorf("%s: too few decoy reads to judge", msg)
				}
			})
		}
	}
}

// TestProcFdClosed: where guest processes may not follow droidroot's /proc/<pid>/fd (an SELinux
// or hidepid policy, simulated here by droidroot making itself not dumpable, with the guest
// running without CAP_SYS_PTRACE), the loader cannot map the scratch area, and the names pinned
// below droidroot's descriptors would fail the same way (EACCES): such a process gets its
// paths as host paths, and every call works, absolute and relative, static and dynamic.
func TestProcFdClosed(t *testing.T) {
	needRoot(t)
	g := busyboxGuest(t)
	argv := droidrootArgs(droidrootBin(t), g, "/bin/sh", "-c",
		"cat /fx/dir/file && cd /fx/dir && cat file sub/deep/f2 && ls -d sub && /progs/pathprobe.dyn 'stat /fx/dir/file' 'cd /fx' 'stat dir/file' | sed 's/ino=@[0-9]*//'")
	res := runAs(t, nobodyCred, "", append([]string{"env", "DROIDROOT_TEST_NONDUMPABLE=1"}, argv...)...)
	want := "hello\nhello\ndeep\nsub\n"
	if res.Code != 0 || !strings.HasPrefix(res.Stdout, want) || strings.Count(res.Stdout, "reg mode=0100644") != 2 {
		t.Fatalf("guest calls with droidroot's /proc/<pid>/fd closed to it: %s\nwant stdout starting %q and two stat results", res, want)
	}
}
