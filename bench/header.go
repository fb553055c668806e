package bench

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// KernelVersion parses a kernel release such as "6.6.30-android15" into major and minor.
func KernelVersion(release string) (major, minor int, ok bool) {
	a, rest, _ := strings.Cut(release, ".")
	b := rest
	if i := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		b = rest[:i]
	}
	x, err1 := strconv.Atoi(a)
	y, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return x, y, true
}

func atLeast(release string, major, minor int) bool {
	x, y, ok := KernelVersion(release)
	return ok && (x > major || x == major && y >= minor)
}

func header(o Options, root string, ncpu, rounds int) Header {
	var u unix.Utsname
	release := "unknown"
	if unix.Uname(&u) == nil {
		release = unix.ByteSliceToString(u.Release[:])
	}
	return Header{
		Droidroot:     o.Version,
		Kernel:        release,
		Arch:          runtime.GOARCH,
		CPUModel:      cpuModel(),
		CPUs:          ncpu,
		SeccompCache:  atLeast(release, 5, 11),
		SyncWakeUp:    atLeast(release, 6, 6),
		AndroidPolicy: androidPolicy(o.AndroidPolicy),
		Rootfs:        root,
		Rounds:        rounds,
		Quick:         o.Quick,
	}
}

// cpuModel reads /proc/cpuinfo: "model name" (x86), else the arm64 implementer and
// part numbers (and "Hardware" where the kernel gives it).
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	fields := map[string]string{}
	parts := map[string]bool{}
	var partOrder []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if _, seen := fields[k]; !seen {
			fields[k] = v
		}
		if k == "CPU part" && !parts[v] {
			parts[v] = true
			partOrder = append(partOrder, v)
		}
	}
	if m := fields["model name"]; m != "" {
		return m
	}
	if len(partOrder) > 0 {
		s := fmt.Sprintf("implementer %s, part %s", fields["CPU implementer"], strings.Join(partOrder, "/"))
		if h := fields["Hardware"]; h != "" {
			s = h + " (" + s + ")"
		}
		return s
	}
	return "unknown"
}

// androidPolicy says whether an Android app policy is simulated (--android-policy) or
// looks present: this process already runs under a seccomp filter, as every app does.
func androidPolicy(simulated string) string {
	if simulated != "" {
		return "simulated: Android " + simulated + " (droidroot runs get --android-policy=" + simulated + ")"
	}
	b, err := os.ReadFile("/proc/self/status")
	if err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "Seccomp:"); ok && strings.TrimSpace(v) == "2" {
				what := "detected: this process runs under a seccomp filter"
				if runtime.GOOS == "android" {
					what += " (an Android app's policy)"
				}
				return what
			}
		}
	}
	return "none detected"
}
