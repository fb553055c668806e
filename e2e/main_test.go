//go:build linux

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"

	"github.com/droidroot/droidroot/seccomp"
)

// wrapAndroidEnv makes the test binary a wrapper instead of a test run: it puts itself under
// the app seccomp policy of the Android release the variable names and execs its arguments
// with DROIDROOT_ANDROID_POLICY unset, as an app process starts a Linux build of droidroot
// it ships (see androidWrapped). What it execs must not be a glibc program: glibc's start-up
// makes calls the policy traps, and nothing would answer them.
const wrapAndroidEnv = "DROIDROOT_E2E_WRAP_ANDROID"

func TestMain(m *testing.M) {
	if v := os.Getenv(wrapAndroidEnv); v != "" {
		os.Unsetenv(wrapAndroidEnv)
		os.Unsetenv("DROIDROOT_ANDROID_POLICY")
		p, err := seccomp.LoadAndroidPolicy(v)
		if err == nil {
			err = p.Install(runtime.GOARCH)
		}
		if err == nil {
			err = syscall.Exec(os.Args[1], os.Args[1:], os.Environ())
		}
		fmt.Fprintf(os.Stderr, "e2e android wrapper: %v\n", err)
		os.Exit(125)
	}
	os.Exit(m.Run())
}

// androidWrapped returns argv run under Android release version's app policy, installed
// around it by this test binary (wrapAndroidEnv), not by droidroot. argv[0] is looked up in
// PATH here: the wrapper must not (Go's LookPath makes a call the policy traps).
func androidWrapped(t testing.TB, version string, argv ...string) []string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	prog, err := exec.LookPath(argv[0])
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"env", wrapAndroidEnv + "=" + version, self, prog}, argv[1:]...)
}
