#!/bin/bash
# debian-arm64.sh - recipe for the `debian-arm64` test rootfs (called by test/mkrootfs.sh).
#
#   debian-arm64.sh inputs HERE          print what the result depends on (hashed into the cache key)
#   debian-arm64.sh build HERE DIR CACHE build the rootfs into the empty directory DIR
#
# The arm64 twin of debian.sh (python3, git, tar, findutils, gcc, libc6-dev, strace, gdb-minimal,
# libpython3.11-testsuite, dbus-daemon, libglib2.0-bin),
# for the arm64 VM stage (test/arm64/run.sh puts it in the initramfs). debootstrap runs the
# second stage through qemu-aarch64-static: if no binfmt_misc entry for aarch64 exists, one is
# registered for the build only (flag F: the interpreter is opened now, so it works inside the
# chroot) and removed afterwards. Documentation, manuals and locales are left out to keep the initramfs small.
set -euo pipefail

suite=bookworm
include=python3,git,tar,findutils,gcc,libc6-dev,strace,gdb-minimal,libpython3.11-testsuite,dbus-daemon,libglib2.0-bin
qemu=/usr/bin/qemu-aarch64-static
binfmt=/proc/sys/fs/binfmt_misc
entry=droidroot-aarch64

case ${1:-} in
inputs)
	echo "suite=$suite include=$include variant=minbase arch=arm64 nodoc=1"
	;;
build)
	here=$2 dir=$3 cache=$4
	if [[ ! -d $dir || -n $(ls -A -- "$dir") ]]; then
		echo "debian-arm64.sh: build target '$dir' is not an empty directory" >&2
		exit 2
	fi
	[[ -x $qemu ]] || { echo "debian-arm64.sh: no $qemu (apt-get install qemu-user-static)" >&2; exit 1; }
	if [[ ! -e $binfmt/register ]]; then
		mount -t binfmt_misc binfmt_misc "$binfmt" || {
			echo "debian-arm64.sh: cannot mount binfmt_misc (needed to run arm64 maintainer scripts)" >&2
			exit 1
		}
	fi
	registered=0
	if ! grep -qsx enabled "$binfmt"/qemu-aarch64 && ! grep -qsx enabled "$binfmt/$entry"; then
		printf ':%s:M::\\x7f\\x45\\x4c\\x46\\x02\\x01\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x02\\x00\\xb7\\x00:\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\x00\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\xfe\\xff\\xff\\xff:%s:F\n' \
			"$entry" "$qemu" >"$binfmt/register"
		registered=1
	fi
	cleanup() { if [[ $registered == 1 && -e $binfmt/$entry ]]; then echo -1 >"$binfmt/$entry"; fi; }
	trap cleanup EXIT
	mkdir -p "$cache/debs-arm64" "$dir/etc/dpkg/dpkg.cfg.d"
	# Skip docs, manuals and translations when packages are unpacked (second stage included).
	cat >"$dir/etc/dpkg/dpkg.cfg.d/01-droidroot-nodoc" <<'CFG'
path-exclude=/usr/share/doc/*
path-include=/usr/share/doc/*/copyright
path-exclude=/usr/share/man/*
path-exclude=/usr/share/info/*
path-exclude=/usr/share/locale/*
path-exclude=/usr/share/lintian/*
CFG
	# shellcheck source=test/rootfs/debian.sh
	mirror=$("$here/rootfs/debian.sh" mirror)
	debootstrap --arch=arm64 --variant=minbase --include="$include" \
		--cache-dir="$cache/debs-arm64" "$suite" "$dir" "$mirror"
	rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/* \
		"$dir"/usr/share/doc/*/changelog* "$dir"/usr/share/locale/*
	echo droidroot-debian >"$dir/etc/hostname"
	mkdir -p "$dir/mnt/progs" "$dir/mnt/work"
	;;
*)
	echo "usage: $0 inputs HERE | build HERE DIR CACHE" >&2
	exit 2
	;;
esac
