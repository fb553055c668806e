#!/bin/bash
# run-vm.sh - boot the arm64 test VM (qemu-system-aarch64, TCG) and judge it by its console.
#
# usage: test/arm64/run-vm.sh --kernel IMAGE --initrd INITRD [--timeout SECONDS]
#                             [--append EXTRA] [--log FILE] [--mem MB] [--smp N]
#   --timeout  wall-clock limit of the VM in seconds (default 600); then qemu is killed
#   --append   extra kernel command line: KEY=VALUE words become environment variables of /init
#              (and of the tests); `-- CMD ARGS...` makes /init run CMD instead of the tests
#   --log      where the console goes (default: a temporary file, kept and named on failure)
#   --mem/--smp  guest RAM (default 1024) and CPUs (default 2)
#
# The console is copied to stdout and to the log as it comes. Exit status 0 only when the log's
# last end marker line is exactly `DROIDROOT-ARM64-END status=0` (test/arm64/init.sh prints it);
# a non-zero status, no marker (kernel panic, init died) or the timeout give 1 and the last 50
# console lines. Prints the boot-to-poweroff time.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

usage() {
	echo "usage: $0 --kernel IMAGE --initrd INITRD [--timeout SECONDS] [--append EXTRA]" \
		"[--log FILE] [--mem MB] [--smp N]" >&2
	exit 2
}
kernel='' initrd='' timeout=600 append='' log='' mem=1024 smp=2
while [[ $# -gt 0 ]]; do
	[[ $# -ge 2 ]] || usage
	case $1 in
	--kernel) kernel=$2 ;;
	--initrd) initrd=$2 ;;
	--timeout) timeout=$2 ;;
	--append) append=$2 ;;
	--log) log=$2 ;;
	--mem) mem=$2 ;;
	--smp) smp=$2 ;;
	*) usage ;;
	esac
	shift 2
done
[[ -n $kernel && -n $initrd ]] || usage
[[ -f $kernel ]] || die "--kernel $kernel: no such file"
[[ -f $initrd ]] || die "--initrd $initrd: no such file"
[[ $timeout =~ ^[0-9]+$ && $timeout -gt 0 ]] || die "--timeout $timeout: want a positive number of seconds"
qemu=$(command -v qemu-system-aarch64) || die "no qemu-system-aarch64 (apt-get install qemu-system-arm)"

keep_log=1
if [[ -z $log ]]; then
	log=$(mktemp /tmp/droidroot-arm64-console.XXXXXX.log)
	keep_log=0
fi
mkdir -p -- "$(dirname -- "$log")"

# TCG on every host (no KVM: CI runners are x86_64). -nic none: the tests need only lo, and
# virt's default NIC needs efi-virtio.rom, which a --no-install-recommends qemu lacks. pauth-impdef: QEMU's cheap pointer-auth
# algorithm instead of the architected QARMA, which is ~2x slower to emulate (REFERENCE.md 7).
# shellcheck disable=SC2054 # the comma belongs to -cpu's value
cmd=(
	"$qemu" -M virt -cpu max,pauth-impdef=on -smp "$smp" -m "$mem"
	-nographic -no-reboot -nic none
	-kernel "$kernel" -initrd "$initrd"
	-append "console=ttyAMA0 panic=-1 quiet${append:+ $append}"
)
say "booting:$(printf ' %q' "${cmd[@]}")"
say "console log: $log (timeout ${timeout}s)"

start=$(date +%s.%N)
qrc=0
# stdin from /dev/null: no terminal games, and no one can type into the guest. -k: if qemu
# ignores SIGTERM, SIGKILL 10 s later. The console goes to the log and to our stdout.
timeout -k 10 "$timeout" "${cmd[@]}" </dev/null 2>&1 | tee -- "$log" || qrc=${PIPESTATUS[0]}
end=$(date +%s.%N)
elapsed=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')

# The serial console ends lines with CR LF; the last marker line wins (a test that printed the
# marker text earlier cannot fake success, because init prints the real one last).
marker=$(tr -d '\r' <"$log" | grep -a '^DROIDROOT-ARM64-END status=' | tail -n1 || true)
guest_uptime=$(tr -d '\r' <"$log" | sed -n 's/^DROIDROOT-ARM64-UPTIME \(.*\)$/\1/p' | tail -n1)

# running_tests: the test binary and the tests (go test -v's `=== RUN` lines) that had started
# and not finished when the console stopped: what a timeout interrupted.
running_tests() {
	tr -d '\r' <"$log" | awk '
		/^=== DROIDROOT-ARM64-RUN / { bin = $3; delete run; n = 0 }
		/^=== DROIDROOT-ARM64-RESULT / { bin = "" }
		/^=== (RUN|CONT) / { if (!($3 in run)) order[++n] = $3; run[$3] = 1 }
		/^ *--- (PASS|FAIL|SKIP): / { delete run[$3] }
		END {
			if (bin == "") exit
			s = ""
			for (i = 1; i <= n; i++) if (order[i] in run) s = s " " order[i]
			printf "%s.test%s\n", bin, (s == "" ? " (between tests)" : ":" s)
		}'
}

fail() {
	say "FAILED: $*"
	local r
	r=$(running_tests)
	if [[ -n $r ]]; then say "running when it stopped: $r"; fi
	say "last 50 console lines:"
	tail -n 50 -- "$log" | tr -d '\r' | sed 's/^/    | /' >&2
	say "full console log kept at $log"
	exit 1
}

if [[ $qrc == 124 || $qrc == 137 ]]; then
	fail "VM timed out after ${timeout}s (qemu killed)"
fi
if [[ -z $marker ]]; then
	fail "no 'DROIDROOT-ARM64-END status=' line on the console (qemu exit $qrc, ${elapsed}s)"
fi
if [[ $marker != 'DROIDROOT-ARM64-END status=0' ]]; then
	fail "guest reported '$marker' (${elapsed}s)"
fi
if [[ $qrc != 0 ]]; then
	say "note: qemu exited $qrc after the end marker"
fi
say "PASS: guest reported status=0; boot to poweroff ${elapsed}s (guest uptime ${guest_uptime:-?})"
if [[ $keep_log == 0 ]]; then rm -f -- "$log"; fi
exit 0
