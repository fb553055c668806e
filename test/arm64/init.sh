#!/bin/sh
# init.sh - the default /init of the arm64 test VM (installed by test/arm64/mkinitrd.sh).
#
# Runs as PID 1 under busybox sh in the initramfs: mounts the API file systems, reports the
# kernel and its seccomp support, runs the tests, prints the end marker that
# test/arm64/run-vm.sh waits for, and powers the VM off:
#
#   DROIDROOT-ARM64-END status=RC     RC = 0 only when every test passed
#
# What runs, first match wins:
#   1. the words after `--` on the kernel command line (run-vm.sh --append "-- CMD ARGS...")
#   2. /droidroot/bin/run-tests.sh, when the bin directory has one
#   3. the default runner below: every /droidroot/bin/*.test with -test.v, each in its package
#      directory /droidroot/pkg/NAME (its testdata; /tmp when there is none)
#
# The tests' environment (whatever runs): DROIDROOT_BIN=/droidroot/bin/droidroot,
# DROIDROOT_ROOTFS_BUSYBOX=/droidroot/rootfs, DROIDROOT_ROOTFS_DEBIAN=/droidroot/debian (when
# shipped), DROIDROOT_E2E_REQUIRED=1, DROIDROOT_E2E_TIMEOUT=3m
# (the e2e suite's limit per command, 60 s by default, is for native speed: under TCG
# TestThreads's 50,000 traced calls take ~30 s, twice that on a busy host), unless the kernel command
# line sets them: its KEY=VALUE words (before `--`) arrive here as environment variables and
# are inherited by the tests. The default runner also reads:
#   DROIDROOT_TEST_BINS=A,B     run only these test binaries (names without .test; run.sh sets it
#                               per part of test/arm64/parts)
#   DROIDROOT_TEST_RUN=REGEXP   passed as -test.run
#   DROIDROOT_TEST_SKIP=REGEXP  passed as -test.skip
#   DROIDROOT_TEST_COUNT=N      passed as -test.count (to repeat a rare failure)
#   DROIDROOT_TEST_TIMEOUT=DUR  -test.timeout of each binary (default 30m: e2e took 3-4 min under
#                               TCG on an idle host, 2-3 times that on a busy one; run.sh's VM
#                               limit bounds the whole run)
#   DROIDROOT_TEST_SHORT=0      drop -test.short, which is on by default: under TCG a guest
#                               instruction costs ~10-50 host ones, so exhaustive arch-independent
#                               tests (BPF VM sweeps, ...) belong to the host run, and tests
#                               shorten them with testing.Short()
#
# No `set -e`: an init that exits panics the kernel, and then run-vm.sh sees no end marker.

export PATH=/bin:/sbin:/usr/bin:/usr/sbin
export HOME=/root TMPDIR=/tmp
export DROIDROOT_BIN="${DROIDROOT_BIN:-/droidroot/bin/droidroot}"
export DROIDROOT_ROOTFS_BUSYBOX="${DROIDROOT_ROOTFS_BUSYBOX:-/droidroot/rootfs}"
# The arm64 Debian rootfs, when run.sh shipped it (DROIDROOT_ARM64_DEBIAN=1).
if [ -d /droidroot/debian ] && [ -z "${DROIDROOT_ROOTFS_DEBIAN:-}" ]; then
	export DROIDROOT_ROOTFS_DEBIAN=/droidroot/debian
fi
export DROIDROOT_E2E_REQUIRED="${DROIDROOT_E2E_REQUIRED:-1}"
export DROIDROOT_E2E_TIMEOUT="${DROIDROOT_E2E_TIMEOUT:-3m}"

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts -o newinstance,ptmxmode=0666 devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t tmpfs -o mode=1777 tmpfs /tmp
# Without a /dev/console in the archive the kernel started us with no stdio: use devtmpfs's.
if ! [ -t 1 ]; then exec </dev/console >/dev/console 2>&1; fi
ip link set lo up 2>/dev/null
hostname droidroot-arm64

uptime_s() { cut -d' ' -f1 /proc/uptime; }

echo "DROIDROOT-ARM64-BEGIN uptime=$(uptime_s)s"
uname -a
grep -E '^(Seccomp|Seccomp_filters|NoNewPrivs):' /proc/self/status
# /proc/sys/kernel/seccomp exists only with CONFIG_SECCOMP_FILTER.
if [ -r /proc/sys/kernel/seccomp/actions_avail ]; then
	echo "seccomp filter actions: $(cat /proc/sys/kernel/seccomp/actions_avail)"
else
	echo "WARNING: no /proc/sys/kernel/seccomp/actions_avail: kernel without CONFIG_SECCOMP_FILTER?"
fi
echo "cpus: $(grep -c ^processor /proc/cpuinfo), $(grep MemTotal /proc/meminfo)"

# default_tests: run every test binary; status 0 only when there was one and all passed.
default_tests() {
	n=0
	failed=
	for t in /droidroot/bin/*.test; do
		[ -x "$t" ] || continue
		name=${t##*/}
		name=${name%.test}
		case ",${DROIDROOT_TEST_BINS:-$name}," in
		*",$name,"*) ;;
		*) continue ;;
		esac
		dir=/droidroot/pkg/$name
		[ -d "$dir" ] || dir=/tmp
		echo "=== DROIDROOT-ARM64-RUN $name (in $(cd -P "$dir" && pwd))"
		start=$(uptime_s)
		(
			# -P: /droidroot/pkg/NAME is a symlink into /droidroot/src, and Go's os.Getwd
			# believes $PWD; tests find the repository root as "..", so PWD must be physical.
			cd -P "$dir" || exit 1
			short=-test.short
			[ "${DROIDROOT_TEST_SHORT:-1}" = 0 ] && short=
			exec "$t" -test.v -test.timeout="${DROIDROOT_TEST_TIMEOUT:-30m}" $short \
				${DROIDROOT_TEST_RUN:+"-test.run=$DROIDROOT_TEST_RUN"} \
				${DROIDROOT_TEST_SKIP:+"-test.skip=$DROIDROOT_TEST_SKIP"} \
				${DROIDROOT_TEST_COUNT:+"-test.count=$DROIDROOT_TEST_COUNT"}
		)
		trc=$?
		echo "=== DROIDROOT-ARM64-RESULT $name rc=$trc start=${start}s end=$(uptime_s)s"
		n=$((n + 1))
		[ "$trc" = 0 ] || failed="$failed $name"
	done
	if [ "$n" = 0 ]; then
		echo "DROIDROOT-ARM64: no test binaries in /droidroot/bin"
		return 3
	fi
	if [ -n "$failed" ]; then
		echo "DROIDROOT-ARM64: FAILED:$failed (of $n test binaries)"
		return 1
	fi
	echo "DROIDROOT-ARM64: all $n test binaries passed"
	return 0
}

rc=0
if [ $# -gt 0 ]; then
	echo "=== DROIDROOT-ARM64-CMD $*"
	"$@" || rc=$?
elif [ -f /droidroot/bin/run-tests.sh ]; then
	echo "=== DROIDROOT-ARM64-CMD /droidroot/bin/run-tests.sh"
	sh /droidroot/bin/run-tests.sh || rc=$?
else
	default_tests || rc=$?
fi

echo "DROIDROOT-ARM64-UPTIME $(uptime_s)s"
echo "DROIDROOT-ARM64-END status=$rc"
# Let the UART drain before the power goes.
sleep 0.2
poweroff -f
