#!/bin/bash
# proot-as-droidroot.sh - run the e2e tests against proot, as a baseline for droidroot:
#
#   DROIDROOT_BIN=$PWD/test/proot-as-droidroot.sh go test ./e2e
#
# Accepts droidroot's `run -r ROOT -b HOST[:GUEST]... -w CWD -- CMD ARGS...` and runs proot
# (from PATH, or $PROOT) with the same meaning.
set -euo pipefail
[[ ${1:-} == run ]] || { echo "usage: $0 run -r ROOT [-b HOST[:GUEST]]... [-w CWD] -- CMD [ARG]..." >&2; exit 2; }
shift
args=()
while [[ $# -gt 0 ]]; do
	case $1 in
	-r | -b | -w) args+=("$1" "$2"); shift 2 ;;
	--) shift; break ;;
	*) echo "$0: unknown option $1" >&2; exit 2 ;;
	esac
done
exec "${PROOT:-proot}" "${args[@]}" "$@"
