#!/bin/bash
# run.sh - time path calls natively (chroot), under Debian's proot and under droidroot, in
# one run, with interleaved rounds, and print medians and ratios.
#
# usage: test/bench/run.sh [ROUNDS]     (as root; needs bin/droidroot, proot, gcc and the
#                                       debian test rootfs: make build rootfs)
#
# Rows: one call each (stat of a deep path, open+close, access, stat of a missing file,
# readlink /proc/self/exe, getcwd), fork+exec+wait, python3 start-up, and the floor: a
# do-nothing droidroot handler for getppid (one RET_TRACE stop with a register get and set).
# Debian's proot runs with seccomp disabled here (its seccomp mode needs a newer proot), so
# it stops twice per syscall.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
rounds=${1:-5}
rootfs=${DROIDROOT_ROOTFS_DEBIAN:-${DROIDROOT_CACHE:-/var/cache/droidroot}/debian}
dr=${DROIDROOT_BIN:-$repo/bin/droidroot}
[[ -x $rootfs/usr/bin/python3 ]] || { echo "bench: no debian rootfs at $rootfs (make rootfs)" >&2; exit 1; }
[[ -x $dr ]] || { echo "bench: no droidroot at $dr (make build)" >&2; exit 1; }
command -v proot >/dev/null || { echo "bench: no proot (apt-get install proot)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O2 -static -o "$work/callbench" "$here/callbench.c"

# Each runner takes: COMMAND... (a guest command, with /bench holding callbench).
# shellcheck disable=SC2016 # the inner script expands its own arguments
native() { unshare -m bash -c 'w=$1 r=$2; shift 2; mount --bind "$w" "$r/mnt" && mount -t proc proc "$r/proc" && exec chroot "$r" "$@"' _ "$work" "$rootfs" "${@/\/bench\//\/mnt\/}"; }
proot_() { PROOT_NO_SECCOMP=1 proot -r "$rootfs" -w / -b /proc -b "$work:/bench" "$@"; }
droidroot() { "$dr" run -r "$rootfs" -w / -b /proc -b "$work:/bench" -- "$@"; }
floor() { "$dr" debug floor -r "$rootfs" -w / -b /proc -b "$work:/bench" -- "$@"; }

calls=(stat:20000 open:10000 access:20000 missing:20000 readlink:20000 getcwd:20000 forkexec:300)
out=$work/results
: >"$out"
for ((r = 1; r <= rounds; r++)); do
	echo "bench: round $r of $rounds" >&2
	for c in "${calls[@]}"; do
		mode=${c%%:*} n=${c#*:}
		for runner in native proot_ droidroot; do
			v=$($runner /bench/callbench "$mode" "$n" 2>/dev/null | awk '{print $2}') || true
			echo "$mode $runner ${v:-nan}" >>"$out"
		done
	done
	echo "floor droidroot $(floor /bench/callbench getppid 20000 | awk '{print $2}')" >>"$out"
	echo "floor native $(native /bench/callbench getppid 20000 | awk '{print $2}')" >>"$out"
	for runner in native proot_ droidroot; do
		t0=$(date +%s%N)
		for _ in 1 2 3; do $runner /usr/bin/python3 -c 'import json, os, re, email, unittest' >/dev/null; done
		echo "python3 $runner $((($(date +%s%N) - t0) / 3000))" >>"$out"
	done
done

# Median per (row, runner), then ratios to native and to the floor.
awk -v rounds="$rounds" '
function median(key,   n, i, j, t, a) {
	n = split(vals[key], a, " ")
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
	return a[int((n + 1) / 2)]
}
{ vals[$1 " " $2] = vals[$1 " " $2] " " $3; if (!($1 in seen)) { seen[$1] = 1; order[++rows] = $1 } }
END {
	fl = median("floor droidroot")
	printf "| call (us/op, median of %d) | native | proot | droidroot | droidroot/native | droidroot/proot | droidroot/floor |\n", rounds
	print "|---|---|---|---|---|---|---|"
	for (i = 1; i <= rows; i++) {
		r = order[i]
		if (r == "floor") { printf "| floor: trap + get/set regs (getppid) | %.2f | | %.2f | %.1fx | | 1.00x |\n", median("floor native"), fl, fl / median("floor native"); continue }
		nat = median(r " native"); pr = median(r " proot_"); d = median(r " droidroot")
		printf "| %s | %.2f | %.2f | %.2f | %.1fx | %.2fx | %.2fx |\n", r, nat, pr, d, d / nat, d / pr, d / fl
	}
}' "$out"
echo "(python3 is microseconds per start-up with 5 imports; forkexec is one fork+exec+wait of /bin/true)"
