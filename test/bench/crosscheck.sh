#!/bin/bash
# crosscheck.sh - check `droidroot bench` against an independent measurement: callbench.c
# (glibc, static, its own loop and clock) natively and under `droidroot run -r /`, and
# `droidroot debug floor` (droidroot's own tracer answering getppid with a register get and
# set), interleaved round by round with `droidroot bench --rounds 1`. Prints the
# medians side by side (microseconds per call).
#
# usage: test/bench/crosscheck.sh [ROUNDS]     (needs bin/droidroot, gcc and python3)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
rounds=${1:-5}
dr=${DROIDROOT_BIN:-$repo/bin/droidroot}
[[ -x $dr ]] || { echo "crosscheck: no droidroot at $dr (make build)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -O2 -static -o "$work/callbench" "$here/callbench.c"
# callbench stats /usr/share/doc/libc6/copyright: a path 4 directories deep, like drbench's.
[[ -e /usr/share/doc/libc6/copyright ]] || { echo "crosscheck: no /usr/share/doc/libc6/copyright" >&2; exit 1; }

out=$work/results
for ((r = 1; r <= rounds; r++)); do
	echo "crosscheck: round $r of $rounds" >&2
	for mode in stat open access missing readlink getcwd; do
		echo "$mode callbench-native $("$work/callbench" "$mode" 20000 | awk '{print $2}')" >>"$out"
		echo "$mode callbench-droidroot $("$dr" run -r / -- "$work/callbench" "$mode" 5000 | awk '{print $2}')" >>"$out"
	done
	echo "floor callbench-floor $("$dr" debug floor -r / -- "$work/callbench" getppid 5000 | awk '{print $2}')" >>"$out"
	"$dr" bench --rounds 1 --json 2>/dev/null | python3 -c '
import json, sys
rep = json.load(sys.stdin)
names = {"stat": "stat", "open": "open", "access": "access", "missing": "missing", "readlink": "readlink", "getcwd": "getcwd"}
for s in rep["sections"]:
    for row in s["rows"]:
        if s["name"] == "call" and row["id"] in names:
            for res in row["results"]:
                if res["state"] == "ok":
                    print(row["id"], "bench-" + res["mode"], res["median"])
        if s["name"].startswith("mechanism") and row["id"] in ("ptrace-regs-unpinned", "native"):
            print("floor" if row["id"] != "native" else "getppid", "bench-mechanism", row["results"][0]["median"])
' >>"$out"
done
python3 - "$out" <<'PY'
import sys, statistics, collections
v = collections.defaultdict(list)
for line in open(sys.argv[1]):
    row, who, x = line.split()
    v[(row, who)].append(float(x))
med = lambda k: statistics.median(v[k]) if v[k] else float("nan")
print("| call (us, median) | callbench native | drbench native | callbench droidroot | drbench droidroot |")
print("|---|---|---|---|---|")
for row in ["stat", "open", "access", "missing", "readlink", "getcwd"]:
    print(f"| {row} | {med((row, 'callbench-native')):.2f} | {med((row, 'bench-native')):.2f} | {med((row, 'callbench-droidroot')):.1f} | {med((row, 'bench-droidroot')):.1f} |")
print(f"| floor: droidroot debug floor (getppid) vs mechanism ptrace + regs, unpinned | | | {med(('floor', 'callbench-floor')):.1f} | {med(('floor', 'bench-mechanism')):.1f} |")
PY
