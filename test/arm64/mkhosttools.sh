#!/bin/bash
# mkhosttools.sh - a tree of Debian arm64 tools (with their shared libraries) to lay over the
# initramfs's busybox, for the "host" side of tests that need more than busybox.
#
# usage: test/arm64/mkhosttools.sh OUT [--cache DIR] [PKG:PATH]...
#   OUT          directory to (re)create, laid over the initramfs root by mkinitrd.sh --overlay
#   --cache DIR  fetch.sh's cache (default ${DROIDROOT_CACHE:-/var/cache/droidroot}/arm64)
#   PKG:PATH     the file PATH (relative, as in the package) of the unpacked package PKG, or
#   PKG:*        every program of PKG (its bin, sbin, usr/bin, usr/sbin)
#                default: what test/oracle/chroot.sh and the e2e tests use beyond busybox:
#                  bash:bin/bash  coreutils:*  util-linux:usr/bin/unshare  mount:bin/mount
#                  mount:bin/umount
#
# Each tool lands at its Debian path (replacing busybox's applet link there), and every shared
# library it needs (DT_NEEDED, transitively) is copied from the unpacked packages to
# /lib/aarch64-linux-gnu, with /lib/ld-linux-aarch64.so.1 as on Debian. A library that is in no
# unpacked package is an error naming it: add its package to fetch.sh.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

[[ $# -ge 1 && $1 != -* ]] || { echo "usage: $0 OUT [--cache DIR] [PKG:PATH]..." >&2; exit 2; }
out=$(realpath -m -- "$1")
shift
cache=$(arm64_cache_default)
if [[ ${1:-} == --cache ]]; then
	cache=$(realpath -- "$2")
	shift 2
fi
tools=("$@")
if [[ ${#tools[@]} == 0 ]]; then
	tools=(bash:bin/bash 'coreutils:*' util-linux:usr/bin/unshare mount:bin/mount mount:bin/umount)
fi
ex=$cache/extract
readelf=$(command -v aarch64-linux-gnu-readelf || command -v readelf) || die "no readelf"

rm -rf --one-file-system -- "$out"
mkdir -p -- "$out/lib/aarch64-linux-gnu"

# Where libraries can come from: every unpacked package's multiarch directories.
libdirs=()
for d in "$ex"/*/lib/aarch64-linux-gnu "$ex"/*/usr/lib/aarch64-linux-gnu; do
	[[ -d $d ]] && libdirs+=("$d")
done

declare -A have
queue=()
nprogs=0
for t in "${tools[@]}"; do
	pkg=${t%%:*} path=${t#*:}
	[[ -d $ex/$pkg ]] || die "$t: no $ex/$pkg (is $pkg in fetch.sh's package list?)"
	if [[ $path == '*' ]]; then
		paths=()
		while IFS= read -r -d '' f; do paths+=("${f#"$ex/$pkg/"}"); done < <(
			find "$ex/$pkg"/{bin,sbin,usr/bin,usr/sbin} -maxdepth 1 -type f -perm -u+x -print0 2>/dev/null)
		[[ ${#paths[@]} -gt 0 ]] || die "$t: $pkg has no programs"
	else
		paths=("$path")
	fi
	for path in "${paths[@]}"; do
		src=$ex/$pkg/$path
		[[ -f $src ]] || die "$t: no $src"
		mkdir -p -- "$out/$(dirname -- "$path")"
		cp -L -- "$src" "$out/$path"
		queue+=("$out/$path")
		nprogs=$((nprogs + 1))
	done
done

# Breadth-first over DT_NEEDED.
while [[ ${#queue[@]} -gt 0 ]]; do
	elf=${queue[0]}
	queue=("${queue[@]:1}")
	while read -r soname; do
		[[ -n $soname && -z ${have[$soname]:-} ]] || continue
		found=
		for d in "${libdirs[@]}"; do
			if [[ -e $d/$soname ]]; then found=$d/$soname; break; fi
		done
		[[ -n $found ]] || die "$(basename -- "$elf") needs $soname, which no unpacked package has (add its package to fetch.sh)"
		cp -L -- "$found" "$out/lib/aarch64-linux-gnu/$soname"
		have[$soname]=1
		queue+=("$out/lib/aarch64-linux-gnu/$soname")
	done < <("$readelf" -d -- "$elf" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
done

# The dynamic loader, at the PT_INTERP path through Debian's symlink.
cp -L -- "$ex/libc6/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1" "$out/lib/aarch64-linux-gnu/"
ln -s /lib/aarch64-linux-gnu/ld-linux-aarch64.so.1 "$out/lib/ld-linux-aarch64.so.1"
say "host tools in $out: ${tools[*]}: $nprogs programs, ${#have[@]} libraries"
