//go:build linux

package e2e

import (
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// androidPolicies are the policies the Android tests run under; "off" is none (it overrides
// $DROIDROOT_ANDROID_POLICY, with which the whole suite may run).
var androidPolicies = []string{"off", "12", "16"}

// viaDroidrootPolicy runs cmd in g under droidroot --android-policy=policy; a policy ending
// in "/ptrace" runs in ptrace-only mode (PROOT_NO_SECCOMP=1).
func viaDroidrootPolicy(t testing.TB, g guest, policy, stdin string, cmd ...string) result {
	t.Helper()
	argv := droidrootArgs(droidrootBin(t), g, cmd...)
	policy, ptraceOnly := strings.CutSuffix(policy, "/ptrace")
	argv = append(argv[:2], append([]string{"--android-policy=" + policy}, argv[2:]...)...)
	if ptraceOnly {
		argv = append([]string{"env", "PROOT_NO_SECCOMP=1"}, argv...)
	}
	return run(t, stdin, argv...)
}

// androidProbes returns a directory with test/progs/androidprobe.c built static
// (androidprobe) and dynamic (androidprobe.dyn): see progsDir.
func androidProbes(t *testing.T) string {
	t.Helper()
	return progsDir(t, "androidprobe")
}

// TestAndroidProbe runs the probe of every call droidroot answers for Android (static and
// dynamic) under Android 12's and 16's policy and without one, in ptrace-only mode under 16,
// and under the chroot oracle: the same output everywhere (the answers the policy changes on
// purpose are not printed).
func TestAndroidProbe(t *testing.T) {
	needRoot(t)
	probes := androidProbes(t)
	for _, prog := range []string{"androidprobe", "androidprobe.dyn"} {
		t.Run(prog, func(t *testing.T) {
			var want result
			for i, pol := range append([]string{"chroot"}, append(androidPolicies, "16/ptrace")...) {
				g := busyboxGuest(t)
				g.Binds = append(g.Binds, probes+":/mnt/b2")
				var res result
				if pol == "chroot" {
					res = viaChroot(t, g, "", "/mnt/b2/"+prog, "/tmp")
				} else {
					res = viaDroidrootPolicy(t, g, pol, "", "/mnt/b2/"+prog, "/tmp")
				}
				res.Stderr = "" // droidroot's notes (e.g. on syscall(-1)) go there
				if res.Code != 0 || len(res.Stdout) < 100 {
					t.Fatalf("%s: %s", pol, res)
				}
				if i == 0 {
					want = res
				} else if diff := cmp.Diff(want.Stdout, res.Stdout); diff != "" {
					t.Errorf("--android-policy=%s differs from the chroot oracle (-chroot +droidroot):\n%s", pol, diff)
				}
			}
		})
	}
}

// TestAndroidPolicyDetected: droidroot started inside an app's seccomp filter it did not
// install (a launcher shipping the Linux build; here this test binary installs Android 12's or
// 16's policy and execs droidroot with no --android-policy) finds out that calls Android
// blocks trap, takes the device policy, and the guest's blocked calls are answered as on a
// phone: the probe program's answers are the chroot oracle's.
func TestAndroidPolicyDetected(t *testing.T) {
	needRoot(t)
	probes := androidProbes(t)
	g := busyboxGuest(t)
	g.Binds = append(g.Binds, probes+":/mnt/b2")
	want := viaChroot(t, g, "", "/mnt/b2/androidprobe", "/tmp")
	if want.Code != 0 || len(want.Stdout) < 100 {
		t.Fatalf("chroot: %s", want)
	}
	for _, version := range []string{"12", "16"} {
		t.Run(version, func(t *testing.T) {
			argv := droidrootArgs(droidrootBin(t), g, "/mnt/b2/androidprobe", "/tmp")
			res := run(t, "", androidWrapped(t, version, argv...)...)
			if res.Code != 0 {
				t.Fatalf("under Android %s's policy: %s", version, res)
			}
			if diff := cmp.Diff(want.Stdout, res.Stdout); diff != "" {
				t.Errorf("under Android %s's policy, not told (-chroot +droidroot):\n%s", version, diff)
			}
		})
	}
}

// TestAndroidOwnSIGSYS: a guest's own seccomp filter traps a call Android allows (RET_DATA 0)
// and one Android blocks (RET_DATA 42); under the policy both SIGSYS reach the guest's handler
// untouched, as without it.
func TestAndroidOwnSIGSYS(t *testing.T) {
	probes := androidProbes(t)
	want := "getppid: sigsys nr getppid errno 0 code 1\naccept: sigsys nr accept errno 42 code 1\ngetpid still works: 1\n"
	for _, pol := range androidPolicies {
		g := busyboxGuest(t)
		g.Binds = append(g.Binds, probes+":/mnt/b2")
		res := viaDroidrootPolicy(t, g, pol, "", "/mnt/b2/androidprobe.dyn", "sigsys")
		if res.Stdout != want || res.Code != 0 {
			t.Errorf("--android-policy=%s: %s\nwant stdout:\n%s", pol, res, want)
		}
	}
}

// TestAndroidDebian runs real programs under Android 12's and 16's policy in the debian rootfs
// (python3, git, tar and a pthread-heavy program): the same output as without a policy.
func TestAndroidDebian(t *testing.T) {
	needRoot(t)
	rootfs(t, "debian")
	scripts := map[string]string{
		"python3": `python3 -c '
import json, sqlite3, email, unittest, os, subprocess, select, time
c = sqlite3.connect("/tmp/db")
c.execute("create table t(x)"); c.execute("insert into t values (42)"); c.commit()
print("ok", json.dumps(c.execute("select x from t").fetchall()), os.getcwd())
print(subprocess.run(["sh", "-c", "echo child"], capture_output=True).stdout)
print(select.select([], [], [], 0.01))'`,
		"git": gitEnv + `set -e
git init -q -b main repo; cd repo
git config user.email t@example.com; git config user.name T
echo hi >f; mkdir d; ln -s ../f d/l
git add -A; git commit -q -m first
git log --format='%H %s'; git status --porcelain`,
		"tar": `set -e
mkdir -p src/d; echo a >src/a; ln -s a src/l; ln src/a src/h; echo b >src/d/b
tar -czf a.tgz src; mkdir out; tar -C out -xzf a.tgz
diff -r src out/src && echo same; tar -tzf a.tgz | sort`,
		"threads": `/mnt/progs/threads.dyn -t 8 -n ` + strconv.Itoa(threadRounds(200)) + ` /usr/bin/python3 /bin/sh /tmp /etc/alternatives/awk`,
	}
	for _, name := range []string{"python3", "git", "tar", "threads"} {
		t.Run(name, func(t *testing.T) {
			var want result
			for i, pol := range androidPolicies {
				g := debianGuest(t)
				g.Binds = append(g.Binds, rootfs(t, "busybox")+"/progs:/mnt/progs")
				res := viaDroidrootPolicy(t, g, pol, "", "/bin/bash", "-c", scripts[name])
				if res.Code != 0 || res.Stdout == "" {
					t.Fatalf("--android-policy=%s: %s", pol, res)
				}
				if i == 0 {
					want = res
				} else if diff := cmp.Diff(want.String(), res.String()); diff != "" {
					t.Errorf("--android-policy=%s differs from no policy (-off +%s):\n%s", pol, pol, diff)
				}
			}
		})
	}
}

// TestAndroidPolicyOption: a bad version is one clear line; the environment variable works
// and the option overrides it.
func TestAndroidPolicyOption(t *testing.T) {
	g := busyboxGuest(t)
	res := viaDroidrootPolicy(t, g, "11", "", "/bin/true")
	if res.Code != 1 || res.Stderr != "droidroot: --android-policy=11: unknown Android version \"11\" (want one of 12, 12L, 13, 14, 15, 15qpr2, 16)\n" {
		t.Errorf("bad version: %s", res)
	}
	// rseq(NULL, 0, 0, 0): ENOSYS under a policy, EINVAL from the kernel without one.
	probes := androidProbes(t)
	g.Binds = append(g.Binds, probes+":/mnt/b2")
	bin := droidrootBin(t)
	for _, tc := range []struct{ env, option, want string }{
		{"16", "", "rseq = -1 ENOSYS\n"},
		{"12", "off", "rseq = -1 EINVAL\n"},
		{"off", "13", "rseq = -1 ENOSYS\n"},
	} {
		argv := droidrootArgs(bin, g, "/mnt/b2/androidprobe", "rseq")
		if tc.option != "" {
			argv = append(argv[:2], append([]string{"--android-policy=" + tc.option}, argv[2:]...)...)
		}
		res := run(t, "", append([]string{"env", "DROIDROOT_ANDROID_POLICY=" + tc.env}, argv...)...)
		if res.Stdout != tc.want || res.Code != 0 {
			t.Errorf("DROIDROOT_ANDROID_POLICY=%s --android-policy=%s: %s\nwant stdout %q", tc.env, tc.option, res, tc.want)
		}
	}
}

// TestFastPathLegacyPolls: Android's x86_64 policy blocks poll, epoll_wait and dup2, which glibc's
// wrappers make there (wineserver waits in epoll_wait between any two requests: each was a
// SIGSYS stop). Under the policy the fast path library makes ppoll, epoll_pwait and dup3 in-process:
// androidprobe.dyn's libc calls (ready, timeout, EINVAL, EBADF, EFAULT; TestAndroidProbe holds
// their answers to the chroot's) are counted answered, and only its syscall(2) calls of the
// legacy numbers stop.
func TestFastPathLegacyPolls(t *testing.T) {
	needRoot(t)
	if runtime.GOARCH != "amd64" {
		t.Skip("arm64 has no poll or epoll_wait call: glibc makes ppoll and epoll_pwait")
	}
	probes := androidProbes(t)
	g := busyboxGuest(t)
	g.Binds = append(g.Binds, probes+":/mnt/b2")
	for _, pol := range []string{"12", "16"} {
		res := runExt(t, []string{"DROIDROOT_STOPS=1", "DROIDROOT_FASTPATH_STATS=1", "DROIDROOT_FASTPATH=1"},
			[]string{"--android-policy=" + pol}, g, "", "/mnt/b2/androidprobe.dyn", "/tmp")
		if res.Code != 0 {
			t.Fatalf("--android-policy=%s: %s", pol, res)
		}
		counts, _ := fastPathCounters(res.Stderr)
		rows := stopCensus(t, res.Stderr)
		// 4 epoll_wait, 4 poll and 6 dup2 through libc; 2 epoll_wait, 2 poll and 4 dup2
		// through syscall(2).
		if counts["legacy answered"] != 14 || rows["sigsys epoll_wait"] != 2 || rows["sigsys poll"] != 2 || rows["sigsys dup2"] != 4 {
			t.Errorf("--android-policy=%s: legacy %d answered in-process, want 14; SIGSYS stops of epoll_wait %d, poll %d and dup2 %d, want 2, 2 and 4\n%s",
				pol, counts["legacy answered"], rows["sigsys epoll_wait"], rows["sigsys poll"], rows["sigsys dup2"], res.Stderr)
		}
	}
}

// TestFastPathEaccessAndroid: Android's policy blocks faccessat2, so libc's
// eaccess (faccessat with AT_EACCESS) was a SIGSYS stop before glibc's own
// fallback; the library answers it as faccessat where the ids and
// capabilities make that the same check, and asks for them through its
// trampoline (the policy's set*id emulation traps getresuid, getresgid and
// capget elsewhere): no stop at all. Under emulated ids (-0) only F_OK is
// answered so (glibc's realpath checks "dir/" that way: Wine's 65 SIGSYS
// stops a start): its AT_EACCESS changes only which ids search the path,
// the effective ones the library's own lookup uses.
func TestFastPathEaccessAndroid(t *testing.T) {
	needRoot(t)
	g := busyboxGuest(t)
	for _, tc := range []struct {
		opts, ops       []string
		ok, enoent, ans int
	}{
		{nil, []string{"eaccess /progs/pathprobe.dyn x", "eaccess /etc r", "eaccess /nope f"}, 6, 3, 9},
		{[]string{"-0"}, []string{"eaccess /progs/pathprobe.dyn f", "eaccess /etc/ f", "eaccess /nope/x f"}, 6, 3, 9},
	} {
		ops := strings.Repeat(strings.Join(tc.ops, "\n")+"\n", 3)
		res := runExt(t, []string{"DROIDROOT_STOPS=1", "DROIDROOT_FASTPATH_STATS=1", "DROIDROOT_FASTPATH=1"},
			append([]string{"--android-policy=16"}, tc.opts...), g, ops, "/progs/pathprobe.dyn", "-f", "-")
		if res.Code != 0 || strings.Count(res.Stdout, "-> ok") != tc.ok || strings.Count(res.Stdout, "-> ENOENT") != tc.enoent {
			t.Fatalf("%v --android-policy=16: %s", tc.opts, res)
		}
		counts, _ := fastPathCounters(res.Stderr)
		rows := stopCensus(t, res.Stderr)
		for _, row := range []string{"sigsys faccessat2", "seccomp faccessat2", "seccomp getresuid", "seccomp getresgid", "seccomp capget", "sigsys capget"} {
			if rows[row] != 0 {
				t.Errorf("%v: %d stops of %s, want none\n%s", tc.opts, rows[row], row, res.Stderr)
			}
		}
		if counts["access answered"] != tc.ans {
			t.Errorf("%v: access answered in-process %d times, want %d\n%s", tc.opts, counts["access answered"], tc.ans, res.Stderr)
		}
	}
}

// TestAndroidGroupExitWhileCloning: a thread group dies of SIGPIPE while two threads create
// threads (test/progs/exitrace.c). A new thread may then reach its exit before its creator's
// clone event reaches droidroot (the kernel kills the creator in its clone, which skips the
// event): droidroot held it stopped waiting for that event, so the group never finished
// exiting and droidroot waited for good (14 runs of 30 under Android 16's policy, where
// glibc's clone3 is a SIGSYS stop before its clone; Go's os tests hung the same way).
func TestAndroidGroupExitWhileCloning(t *testing.T) {
	needRoot(t)
	g := busyboxGuest(t)
	const sigpipeExit = 128 + 13 // killed by SIGPIPE
	for _, prog := range []string{"/progs/exitrace", "/progs/exitrace.dyn"} {
		for i := range 10 {
			if res := viaDroidrootPolicy(t, g, "16", "", prog); res.Code != sigpipeExit {
				t.Fatalf("%s, run %d: %s\nwant exit %d (SIGPIPE)", prog, i, res, sigpipeExit)
			}
		}
	}
}
