package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/loader"
	"github.com/droidroot/droidroot/seccomp"
)

// androidEnv is the environment variable equivalent of --android-policy
// (the option wins).
const androidEnv = "DROIDROOT_ANDROID_POLICY"

// androidPolicy returns the Android policy droidroot runs under: the one
// --android-policy or $DROIDROOT_ANDROID_POLICY names (simulated: simulate
// is true), "device" for the one it runs under, else the device's own on
// Android or when a probe finds that calls Android blocks trap (a Linux
// build started inside an app), else nil. "off" (or "none") means none,
// even on a device.
func androidPolicy(o *Options) (p *seccomp.AndroidPolicy, simulate bool, err error) {
	v, from := o.AndroidPolicy, "--android-policy"
	if v == "" {
		v, from = os.Getenv(androidEnv), androidEnv
	}
	switch strings.ToLower(v) {
	case "off", "none":
		return nil, false, nil
	case "device":
		return seccomp.DeviceAndroidPolicy(), false, nil
	case "":
		if runningOnAndroid() || underAndroidFilter() {
			return seccomp.DeviceAndroidPolicy(), false, nil
		}
		return nil, false, nil
	}
	p, err = seccomp.LoadAndroidPolicy(v)
	if err != nil {
		return nil, false, fmt.Errorf("%s=%s: %v", from, v, err)
	}
	return p, true, nil
}

// runningOnAndroid reports whether droidroot runs on an Android device,
// under the app seccomp policy.
func runningOnAndroid() bool {
	if runtime.GOOS == "android" {
		return true
	}
	var st unix.Stat_t
	return os.Getenv("ANDROID_ROOT") != "" && unix.Stat("/system/build.prop", &st) == nil
}

// installAndroid puts droidroot itself, every thread of it (TSYNC), under
// the filter that reproduces p, as Android does to an app process; the
// guests inherit it and stage 2 stacks droidroot's own filter on top.
func installAndroid(p *seccomp.AndroidPolicy) error { return p.Install(runtime.GOARCH) }

// underAndroidFilter reports whether droidroot runs under a seccomp filter it
// did not install that traps what Android's app policy blocks. A filter
// alone says little (Docker, Flatpak, systemd and a nested droidroot install
// them too), and a trapped call would kill droidroot's own Go runtime: a
// child, droidroot's libc-free loader as loader.ProbeName, makes such a call,
// and a death by SIGSYS answers.
func underAndroidFilter() bool {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil || !strings.Contains(string(status), "\nSeccomp:\t2\n") {
		return false
	}
	tmpDir := tmpDirOf()
	probe, err := loader.Extract(tmpDir, runtime.GOARCH, 0)
	if err != nil {
		return false
	}
	pid, err := syscall.ForkExec(probe, []string{loader.ProbeName}, &syscall.ProcAttr{Env: []string{}})
	if err != nil {
		return false
	}
	var ws syscall.WaitStatus
	for {
		_, err = syscall.Wait4(pid, &ws, 0, nil)
		if err != syscall.EINTR {
			break
		}
	}
	return err == nil && ws.Signaled() && ws.Signal() == syscall.SIGSYS
}
