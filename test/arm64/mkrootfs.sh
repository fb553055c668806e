#!/bin/bash
# mkrootfs.sh - build the arm64 guest test rootfs (the arm64 twin of test/rootfs/busybox.sh).
#
# usage: test/arm64/mkrootfs.sh OUT [--cache DIR] [--progs DIR]... [--fixture FILE] [--cc CC]
#   OUT            the rootfs directory to (re)create; built beside it and renamed into place
#   --cache DIR    fetch.sh's cache (default ${DROIDROOT_CACHE:-/var/cache/droidroot}/arm64);
#                  fetch.sh must have run
#   --progs DIR    compile every DIR/*.c into /progs (repeatable; a NAME may appear only once)
#   --fixture FILE run FILE (test/rootfs/fixture.sh) inside the rootfs to make /fx (needs root:
#                  it runs under chroot with the host's busybox, so no arm64 emulation is needed)
#   --cc CC        the cross compiler (default aarch64-linux-gnu-gcc)
#
# Contents (paths inside the rootfs):
#   /bin/busybox (arm64, static) and its applet symlinks (absolute, -> /bin/busybox)
#   /etc/passwd, /etc/group, /etc/hostname, /tmp (1777), /root (0700), /proc /sys /dev /mnt
#   /lib/aarch64-linux-gnu/{ld-linux-aarch64.so.1,libc.so.6,libgcc_s.so.1}  real files (libc6:arm64)
#   /lib/ld-linux-aarch64.so.1 -> /lib/aarch64-linux-gnu/ld-linux-aarch64.so.1 (absolute; the
#     PT_INTERP of aarch64-linux-gnu-gcc's dynamic programs)
#   /progs/NAME-static      DIR/NAME.c, -static
#   /progs/NAME-static-pie  -static-pie
#   /progs/NAME-dynamic     dynamic, run by the ld.so above
#   /progs/NAME, NAME.pie, NAME.dyn  hard links to the three, the names test/rootfs/busybox.sh
#     uses on x86_64, so an e2e test can use either rootfs unchanged
#   /fx, /mnt/{b1,b2,alias,empty,file}  with --fixture
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

usage() {
	echo "usage: $0 OUT [--cache DIR] [--progs DIR]... [--fixture FILE] [--cc CC]" >&2
	exit 2
}
[[ $# -ge 1 && $1 != -* ]] || usage
out=$(realpath -m -- "$1")
shift
cache=$(arm64_cache_default)
progdirs=()
fixture=
cc=aarch64-linux-gnu-gcc
while [[ $# -gt 0 ]]; do
	case $1 in
	--cache) cache=$(realpath -- "$2"); shift 2 ;;
	--progs) progdirs+=("$(realpath -- "$2")"); shift 2 ;;
	--fixture) fixture=$(realpath -- "$2"); shift 2 ;;
	--cc) cc=$2; shift 2 ;;
	*) usage ;;
	esac
done
ex=$cache/extract
for f in "$ex/busybox-static/bin/busybox" "$ex/libc6/lib/aarch64-linux-gnu/libc.so.6"; do
	[[ -f $f ]] || die "$f missing: run test/arm64/fetch.sh $cache first"
done
command -v "$cc" >/dev/null || die "no $cc (apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross)"

# Build next to OUT, swap in at the end: a failed build never leaves a half-made OUT.
mkdir -p -- "$(dirname -- "$out")"
tmp=$(mktemp -d "$out.tmp.XXXXXX")
trap 'rm -rf --one-file-system -- "$tmp"' EXIT
chmod 755 "$tmp"
cd "$tmp"

mkdir -p bin sbin usr/bin usr/sbin etc root tmp proc sys dev mnt progs lib/aarch64-linux-gnu
chmod 1777 tmp
chmod 0700 root

# busybox and its applets.
cp -- "$ex/busybox-static/bin/busybox" bin/busybox
chmod 755 bin/busybox
install_applets "$tmp" bin/busybox

# glibc for dynamic programs: real files in the multiarch directory, the interpreter path as an
# absolute symlink (so a tracer must resolve PT_INTERP through a guest symlink, as on Debian).
multi=lib/aarch64-linux-gnu
cp -L -- "$ex/libc6/$multi/ld-linux-aarch64.so.1" "$ex/libc6/$multi/libc.so.6" "$multi/"
if [[ -f $ex/libgcc-s1/$multi/libgcc_s.so.1 ]]; then
	cp -L -- "$ex/libgcc-s1/$multi/libgcc_s.so.1" "$multi/"
fi
ln -s /lib/aarch64-linux-gnu/ld-linux-aarch64.so.1 lib/ld-linux-aarch64.so.1

cat >etc/passwd <<'PASSWD'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
PASSWD
cat >etc/group <<'GROUP'
root:x:0:
nogroup:x:65534:
GROUP
# The same name as the x86_64 busybox rootfs: the oracle tests read it through binds.
echo droidroot-busybox >etc/hostname

# Test programs, three link modes each.
declare -A seen
flags=(-O2 -g0 -Wall -Wextra -Werror -pthread)
for d in "${progdirs[@]}"; do
	[[ -d $d ]] || die "--progs $d: not a directory"
	for src in "$d"/*.c; do
		[[ -e $src ]] || continue
		name=$(basename -- "$src" .c)
		[[ -z ${seen[$name]:-} ]] || die "program name '$name' in both ${seen[$name]} and $src"
		seen[$name]=$src
		"$cc" "${flags[@]}" -static -o "progs/$name-static" "$src"
		"$cc" "${flags[@]}" -static-pie -o "progs/$name-static-pie" "$src"
		"$cc" "${flags[@]}" -o "progs/$name-dynamic" "$src"
		ln "progs/$name-static" "progs/$name"
		ln "progs/$name-static-pie" "progs/$name.pie"
		ln "progs/$name-dynamic" "progs/$name.dyn"
	done
done
say "compiled ${#seen[@]} program(s): ${!seen[*]}"

# The dynamic programs must ask for the interpreter the rootfs has.
readelf=$(command -v aarch64-linux-gnu-readelf || command -v readelf) || die "no readelf"
for p in progs/*-dynamic; do
	[[ -e $p ]] || continue
	interp=$("$readelf" -l "$p" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
	[[ $interp == /lib/ld-linux-aarch64.so.1 ]] || die "$p: PT_INTERP is '$interp', not /lib/ld-linux-aarch64.so.1"
done

# The awkward-path fixture tree, made from inside (absolute symlinks are guest paths). The
# rootfs's busybox is arm64, so the script runs under the host's static busybox, brought in
# for the occasion and removed afterwards.
if [[ -n $fixture ]]; then
	[[ $(id -u) == 0 ]] || die "--fixture needs root (chroot)"
	host_bb=$(command -v busybox) || die "--fixture needs the host's busybox (busybox-static)"
	mkdir .hostbb
	cp -- "$host_bb" .hostbb/busybox
	cp -- "$fixture" .hostbb/fixture.sh
	chroot . /.hostbb/busybox sh -c \
		'/.hostbb/busybox --install -s /.hostbb && PATH=/.hostbb exec /.hostbb/sh /.hostbb/fixture.sh'
	rm -rf .hostbb
	# busybox --install also linked the applets of the host's busybox: only /.hostbb had them.
fi

# Quick check of the three link modes when the host can run arm64 user code (qemu-user).
if command -v qemu-aarch64-static >/dev/null && [[ -e progs/hello-dynamic ]]; then
	# qemu-user's -L cannot follow the rootfs's absolute /lib/ld-linux-aarch64.so.1 symlink, so
	# the dynamic one is started through its ld.so explicitly (PT_INTERP was checked above).
	ldso=(lib/aarch64-linux-gnu/ld-linux-aarch64.so.1 --library-path lib/aarch64-linux-gnu)
	for m in static static-pie dynamic; do
		rc=0
		if [[ $m == dynamic ]]; then run=("${ldso[@]}"); else run=(); fi
		qemu-aarch64-static -L "$tmp" "${run[@]}" "progs/hello-$m" 7 >/dev/null || rc=$?
		[[ $rc == 7 ]] || die "progs/hello-$m under qemu-aarch64-static exited $rc, want 7"
	done
fi

cd /
rm -rf --one-file-system -- "$out.old"
if [[ -e $out ]]; then mv -T -- "$out" "$out.old"; fi
mv -T -- "$tmp" "$out"
trap - EXIT
rm -rf --one-file-system -- "$out.old"
say "rootfs ready at $out ($(du -sh -- "$out" | cut -f1))"
