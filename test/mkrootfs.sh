#!/bin/bash
# mkrootfs.sh - build (or reuse from cache) a test rootfs for droidroot's e2e tests.
#
# usage: test/mkrootfs.sh [-f] KIND [OUT]
#   KIND  busybox | debian | debian-arm64  (the recipe is test/rootfs/KIND.sh)
#   OUT   target directory, default ${DROIDROOT_CACHE:-/var/cache/droidroot}/KIND
#   -f    rebuild even if the cache is up to date
#
# Cache rule: OUT is reused when OUT.stamp holds the hash of the recipe's inputs (this driver,
# the recipe, the files the recipe lists with `inputs`, and the host tool versions it reports).
# Otherwise the rootfs is built in a temporary sibling of OUT and renamed into place, so an
# interrupted build never leaves a half-built rootfs at OUT. A lock file serialises concurrent
# builds of the same OUT. Must run as root (debootstrap, chroot, file ownership).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
force=0
if [[ ${1:-} == -f ]]; then force=1; shift; fi
if [[ $# -lt 1 || $# -gt 2 ]]; then
	echo "usage: $0 [-f] busybox|debian|debian-arm64 [OUT]" >&2
	exit 2
fi
kind=$1
recipe=$here/rootfs/$kind.sh
[[ -f $recipe ]] || { echo "mkrootfs: unknown rootfs kind '$kind' (no $recipe)" >&2; exit 2; }
cache=${DROIDROOT_CACHE:-/var/cache/droidroot}
out=${2:-$cache/$kind}
out=$(realpath -m -- "$out")
[[ $(id -u) == 0 ]] || { echo "mkrootfs: must run as root" >&2; exit 1; }

mkdir -p -- "$(dirname -- "$out")"

# The recipe answers `inputs` with the files and tool versions its output depends on.
# Contents only, not paths: the same checkout elsewhere reuses the cache.
key=$( {
	cat "$0" "$recipe"
	"$recipe" inputs "$here"
} | sha256sum | cut -d' ' -f1)

# Serialise builders of the same OUT (fd 9 stays open until we exit).
exec 9>"$out.lock"
flock 9

# remove_tree DIR: unmount anything a killed build left mounted below DIR, then delete it
# without ever crossing into another filesystem (a leftover /proc mount must not be walked).
remove_tree() {
	local d=$1 m
	[[ -e $d ]] || return 0
	while read -r m; do
		[[ $m == "$d"/* ]] && { umount -l -- "$m" 2>/dev/null || true; }
	done < <(findmnt -rno TARGET | sort -r)
	rm -rf --one-file-system -- "$d"
}

# Leftovers of interrupted runs (we hold the lock, so nobody is using them).
for stale in "$out".tmp.* "$out".old.*; do
	[[ -e $stale ]] && remove_tree "$stale"
done

if [[ $force == 0 && -d $out && -f $out.stamp && $(cat "$out.stamp") == "$key" ]]; then
	echo "mkrootfs: $kind rootfs at $out is up to date (key ${key:0:12})"
	exit 0
fi

tmp=$(mktemp -d "$out.tmp.XXXXXX")
chmod 755 "$tmp"
trap 'remove_tree "$tmp"' EXIT

echo "mkrootfs: building $kind rootfs into $tmp (key ${key:0:12})"
start=$SECONDS
"$recipe" build "$here" "$tmp" "$cache"

# Swap into place: the stamp goes first (a missing stamp means "rebuild"), then the directory.
rm -f -- "$out.stamp"
if [[ -e $out ]]; then mv -T -- "$out" "$out.old.$$"; fi
mv -T -- "$tmp" "$out"
trap - EXIT
echo "$key" >"$out.stamp.tmp" && mv -f -- "$out.stamp.tmp" "$out.stamp"
remove_tree "$out.old.$$"
echo "mkrootfs: $kind rootfs ready at $out in $((SECONDS - start)) s"
