#!/bin/bash
# mkinitrd.sh - pack the arm64 test VM's initramfs (newc cpio; gzip when OUT ends in .gz).
#
# usage: test/arm64/mkinitrd.sh OUT.cpio[.gz] --bin DIR --rootfs DIR [--init SCRIPT]
#                               [--add SRC:DEST]... [--overlay DIR]... [--busybox FILE]
#                               [--cache DIR]
#   --bin DIR       copied to /droidroot/bin: the droidroot binary, the *.test binaries and,
#                   optionally, run-tests.sh (all arm64)
#   --rootfs DIR    copied to /droidroot/rootfs: the guest test rootfs (test/arm64/mkrootfs.sh)
#   --init SCRIPT   /init (default: test/arm64/init.sh)
#   --add SRC:DEST  also copy the tree SRC to DEST (absolute), e.g. package testdata for the
#                   default runner: --add pkgdir:/droidroot/pkg
#   --overlay DIR   lay DIR over the initramfs root after busybox (its files replace applet
#                   links of the same path), e.g. Debian's bash/mount/unshare from mkhosttools.sh
#   --busybox FILE  the arm64 static busybox for /bin (default: fetch.sh's, in the cache)
#   --cache DIR     fetch.sh's cache (default ${DROIDROOT_CACHE:-/var/cache/droidroot}/arm64)
#   --append FILE   append the ready-made (uncompressed newc) cpio archive FILE: the kernel
#                   unpacks concatenated archives in order (run.sh's cached Debian rootfs)
#
# Archive layout:
#   /init                     the init script (busybox sh)
#   /bin/busybox + applets    absolute symlinks to /bin/busybox, as `busybox --install -s` makes
#   /proc /sys /dev /tmp /root /etc/{passwd,group}   (init mounts proc, sysfs, devtmpfs, tmpfs)
#   /dev/console              char 5:1, so the kernel can give /init its stdio (root only)
#   /droidroot/bin            --bin
#   /droidroot/rootfs         --rootfs
#
# Everything is owned by root in the archive, the file list is sorted and gzip stores no name or
# time (the archive still records each file's mtime). GNU cpio is used when installed, else
# busybox's (busybox-static is a dependency anyway).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

usage() {
	echo "usage: $0 OUT.cpio.gz --bin DIR --rootfs DIR [--init SCRIPT] [--add SRC:DEST]..." \
		"[--overlay DIR]... [--busybox FILE] [--cache DIR]" >&2
	exit 2
}
[[ $# -ge 1 && $1 != -* ]] || usage
out=$(realpath -m -- "$1")
shift
bin='' rootfs='' init=$here/init.sh busybox='' cache=$(arm64_cache_default)
adds=()
overlays=()
appends=()
while [[ $# -gt 0 ]]; do
	[[ $# -ge 2 ]] || usage
	case $1 in
	--bin) bin=$2 ;;
	--rootfs) rootfs=$2 ;;
	--init) init=$2 ;;
	--add) adds+=("$2") ;;
	--append) appends+=("$2") ;;
	--overlay) overlays+=("$2") ;;
	--busybox) busybox=$2 ;;
	--cache) cache=$2 ;;
	*) usage ;;
	esac
	shift 2
done
[[ -n $bin && -n $rootfs ]] || usage
busybox=${busybox:-$cache/extract/busybox-static/bin/busybox}
[[ -d $bin ]] || die "--bin $bin: not a directory"
[[ -d $rootfs ]] || die "--rootfs $rootfs: not a directory"
[[ -f $init ]] || die "--init $init: no such file"
[[ -f $busybox ]] || die "$busybox missing: run test/arm64/fetch.sh first or pass --busybox"
is_arm64_elf "$busybox" || die "$busybox is not an arm64 ELF"
for a in "${adds[@]}"; do
	[[ $a == *:/* && -e ${a%%:*} ]] || die "--add $a: want SRC:/DEST with an existing SRC"
done
for o in "${overlays[@]}"; do
	[[ -d $o ]] || die "--overlay $o: not a directory"
done

if command -v cpio >/dev/null && cpio --version 2>/dev/null | grep -q GNU; then
	cpio_out=(cpio --quiet -o -H newc -R 0:0)
else
	command -v busybox >/dev/null || die "need cpio or busybox to write the archive"
	cpio_out=(busybox cpio -o -H newc -R 0:0)
fi

mkdir -p -- "$(dirname -- "$out")"
stage=$(mktemp -d "$out.stage.XXXXXX")
trap 'rm -rf --one-file-system -- "$stage" "$out.tmp"' EXIT
chmod 755 "$stage"

# The initramfs's own root: busybox, mount points, /init.
mkdir -p "$stage"/{bin,sbin,usr/bin,usr/sbin,etc,proc,sys,dev,tmp,root,droidroot}
chmod 1777 "$stage/tmp"
chmod 0700 "$stage/root"
cp -- "$busybox" "$stage/bin/busybox"
chmod 755 "$stage/bin/busybox"
install_applets "$stage" "$busybox"
install -m 755 -- "$init" "$stage/init"
# Overlays replace applet links: --remove-destination unlinks first, so nothing is ever written
# through a link (they are absolute: /bin/busybox would be the host's).
for o in "${overlays[@]}"; do
	cp -a --remove-destination -- "$(realpath -- "$o")/." "$stage/"
done
for f in passwd group; do
	if [[ -f $rootfs/etc/$f ]]; then cp -- "$rootfs/etc/$f" "$stage/etc/$f"; fi
done
[[ -f $stage/etc/passwd ]] || echo 'root:x:0:0:root:/root:/bin/sh' >"$stage/etc/passwd"
[[ -f $stage/etc/group ]] || echo 'root:x:0:' >"$stage/etc/group"
if [[ $(id -u) == 0 ]]; then
	mknod -m 600 "$stage/dev/console" c 5 1
else
	say "not root: no /dev/console in the archive (init falls back to devtmpfs's)"
fi

# The payload. cp -a keeps modes, symlinks and hard links within each tree.
cp -a -- "$(realpath -- "$bin")" "$stage/droidroot/bin"
cp -a -- "$(realpath -- "$rootfs")" "$stage/droidroot/rootfs"
for a in "${adds[@]}"; do
	dest=$stage/${a#*:}
	mkdir -p -- "$(dirname -- "$dest")"
	rm -rf -- "$dest"
	cp -a -- "$(realpath -- "${a%%:*}")" "$dest"
done
chmod 755 "$stage/droidroot/bin" "$stage/droidroot/rootfs"

# Warn about non-arm64 executables in bin (an amd64 test binary would fail with ENOEXEC inside).
for f in "$stage"/droidroot/bin/*; do
	if [[ -f $f && -x $f && $(head -c 4 -- "$f") == $'\x7fELF' ]] && ! is_arm64_elf "$f"; then
		die "$(basename -- "$f") in --bin is an ELF but not arm64"
	fi
done

compress=(cat)
[[ $out == *.gz ]] && compress=(gzip -6 -n)
for a in "${appends[@]}"; do
	[[ -f $a ]] || die "--append $a: no such file"
done
{
	(cd "$stage" && find . -mindepth 1 -printf '%P\n' | LC_ALL=C sort | "${cpio_out[@]}")
	cat -- "${appends[@]}" </dev/null
} | "${compress[@]}" >"$out.tmp"
mv -f -- "$out.tmp" "$out"
say "wrote $out ($(du -h -- "$out" | cut -f1), $(du -sh --apparent-size -- "$stage" | cut -f1) unpacked)"
