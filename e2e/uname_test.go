//go:build linux

package e2e

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// TestKernelRelease runs busybox uname, hostname and cat /proc/sys/kernel/* under -k /
// --kernel-release in both of termux proot's forms, and sethostname from the guest: the tree
// sees its own names, the host's never change.
func TestKernelRelease(t *testing.T) {
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		t.Fatal(err)
	}
	real := func(b [65]byte) string { return unix.ByteSliceToString(b[:]) }
	hostBefore, _ := os.Hostname()
	root := rootfs(t, "busybox")
	bin := droidrootBin(t)
	long := strings.Repeat("h", 65)
	for _, tc := range []struct {
		name, opt, script, want string
	}{
		{"plain", "-k", `uname -r; uname -s; uname -m; cat /proc/sys/kernel/osrelease /proc/sys/kernel/ostype`,
			"9.8.7-droid\n" + real(uts.Sysname) + "\n" + real(uts.Machine) + "\n9.8.7-droid\n" + real(uts.Sysname) + "\n"},
		{"backslash", `--kernel-release=\Linux\localhost\6.17.0\#1 SMP\aarch64\localdomain\-1\`,
			`uname -a; for f in osrelease ostype hostname domainname version; do cat /proc/sys/kernel/$f; done`,
			"Linux localhost 6.17.0 #1 SMP aarch64 GNU/Linux\n6.17.0\nLinux\nlocalhost\nlocaldomain\n#1 SMP\n"},
		{"empty fields keep the kernel's", `--kernel-release=\\\5.0\\\\-1\`, `uname -r; uname -s; uname -n`,
			"5.0\n" + real(uts.Sysname) + "\n" + real(uts.Nodename) + "\n"},
		{"sethostname", "-k", `hostname guestbox && uname -n && hostname && cat /proc/sys/kernel/hostname; hostname ` + long + `; echo "status $?"; sh -c 'uname -n'`,
			"guestbox\nguestbox\nguestbox\nstatus 1\nguestbox\n"},
		{"write /proc/sys/kernel/hostname", "-k", `echo viaproc >/proc/sys/kernel/hostname && uname -n && hostname`,
			"viaproc\nviaproc\n"},
		// The hwcap field is AT_HWCAP in every program's auxiliary vector (glibc's
		// LD_SHOW_AUXV prints it), also after an exec inside the guest.
		{"hwcap", `--kernel-release=\\\\\\\abc123\`, `LD_SHOW_AUXV=1 /progs/pathprobe.dyn </dev/null | grep -cE '^AT_HWCAP: +(0x)?abc123$'; sh -c 'LD_SHOW_AUXV=1 exec /progs/pathprobe.dyn </dev/null' | grep -cE '^AT_HWCAP: +(0x)?abc123$'`,
			"1\n1\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			argv := []string{bin, "run"}
			if tc.opt == "-k" {
				argv = append(argv, "-k", "9.8.7-droid")
			} else {
				argv = append(argv, tc.opt)
			}
			argv = append(argv, "-r", root, "-b", "/proc", "--", "/bin/sh", "-c", tc.script)
			res := run(t, "", argv...)
			if res.Code != 0 {
				t.Fatalf("%q: %s", argv, res)
			}
			if diff := cmp.Diff(tc.want, res.Stdout); diff != "" {
				t.Errorf("%s (-want +got):\n%s\nstderr: %s", tc.script, diff, res.Stderr)
			}
		})
	}
	if h, _ := os.Hostname(); h != hostBefore {
		t.Errorf("the host's name changed from %q to %q", hostBefore, h)
	}
	// A malformed hwcap field is one clear line and exit status 1.
	res := run(t, "", bin, "run", `--kernel-release=\Linux\n\1.0\v\m\d\zz\`, "-r", root, "--", "/bin/true")
	if res.Code != 1 || !strings.Contains(res.Stderr, "hwcap") || strings.Count(res.Stderr, "\n") != 1 {
		t.Errorf("bad hwcap: %s", res)
	}
}
