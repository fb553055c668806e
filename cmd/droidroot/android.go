package main

import (
	"fmt"
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/seccomp"
)

// androidEnv is the environment variable equivalent of --android-policy
// (the option wins).
const androidEnv = "DROIDROOT_ANDROID_POLICY"

// androidPolicy returns the Android policy droidroot runs under: the one
// --android-policy or $DROIDROOT_ANDROID_POLICY names (simulated: simulate
// is true), else on Android the device's own, else nil. "off" (or "none")
// means none, even on a device.
func androidPolicy(o *Options) (p *seccomp.AndroidPolicy, simulate bool, err error) {
	v, from := o.AndroidPolicy, "--android-policy"
	if v == "" {
		v, from = os.Getenv(androidEnv), androidEnv
	}
	switch strings.ToLower(v) {
	case "off", "none":
		return nil, false, nil
	case "":
		if runningOnAndroid() {
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
func installAndroid(p *seccomp.AndroidPolicy) error {
	pol, err := p.Policy(runtime.GOARCH)
	if err != nil {
		return err
	}
	prog, err := seccomp.Build(runtime.GOARCH, pol)
	if err != nil {
		return fmt.Errorf("building the %s filter: %w", p, err)
	}
	raw, err := seccomp.Assemble(prog)
	if err != nil {
		return fmt.Errorf("assembling the %s filter: %w", p, err)
	}
	if err := seccomp.Install(raw, unix.SECCOMP_FILTER_FLAG_TSYNC); err != nil {
		return fmt.Errorf("installing the %s filter: %w", p, err)
	}
	return nil
}
