//go:build linux

package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIErrors: bad input gets one clear line and a non-zero exit; a
// missing bind source is a warning (as in proot), not an error.
func TestCLIErrors(t *testing.T) {
	bin := droidrootBin(t)
	root := rootfs(t, "busybox")
	proot := filepath.Join(t.TempDir(), "proot")
	if err := os.Symlink(bin, proot); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		argv   []string
		code   int
		stderr string // a substring of the only line on stderr
		stdout string
		stdin  string
	}{
		{"missing rootfs", []string{bin, "run", "-r", "/nonexistent/rootfs", "--", "/bin/true"}, 1, "rootfs /nonexistent/rootfs: no such file or directory", "", ""},
		{"rootfs is a file", []string{bin, "run", "-r", root + "/fx/dir/file", "--", "/bin/true"}, 1, "not a directory", "", ""},
		{"unknown option", []string{bin, "run", "--frobnicate", "/bin/true"}, 1, `unknown option "--frobnicate"`, "", ""},
		{"missing bind source", []string{bin, "run", "-r", root, "-b", "/nonexistent/src:/mnt/x", "--", "/bin/echo", "ran"}, 0, "warning: can't bind /nonexistent/src", "ran\n", ""},
		{"command not found", []string{bin, "run", "-r", root, "--", "no-such-command"}, 1, "no-such-command: command not found", "", ""},
		{"proot name, no command: /bin/sh as -sh", []string{proot, "-r", root}, 0, "", "-sh\n", "echo $0\n"},
		{"proot option first", []string{bin, "-r", root, "/bin/echo", "as proot"}, 0, "", "as proot\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, tc.stdin, tc.argv...)
			if res.Code != tc.code || res.Stdout != tc.stdout {
				t.Errorf("got %s\nwant exit %d, stdout %q", res, tc.code, tc.stdout)
			}
			lines := strings.Split(strings.TrimRight(res.Stderr, "\n"), "\n")
			if tc.stderr == "" {
				if res.Stderr != "" {
					t.Errorf("stderr = %q, want nothing", res.Stderr)
				}
			} else if len(lines) != 1 || !strings.Contains(lines[0], tc.stderr) {
				t.Errorf("stderr = %q, want one line containing %q", res.Stderr, tc.stderr)
			}
		})
	}
}
