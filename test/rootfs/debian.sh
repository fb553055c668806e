#!/bin/bash
# debian.sh - recipe for the `debian` test rootfs (called by test/mkrootfs.sh).
#
#   debian.sh inputs HERE          print what the result depends on (hashed into the cache key)
#   debian.sh build HERE DIR CACHE build the rootfs into the empty directory DIR
#   debian.sh mirror               print the Debian mirror the builds use
#
# A Debian 12 minbase system with python3, git, tar, findutils, gcc, libc6-dev, strace,
# gdb-minimal (/usr/bin/gdb; the full gdb's libsource-highlight does not configure in minbase),
# libpython3.11-testsuite (CPython's own tests, which e2e TestPythonSuite runs), dbus-daemon and
# libglib2.0-bin (a session bus, libdbus's dbus-send and GLib's gdbus: e2e TestIdentityDBus):
# a real glibc userland for the e2e tests. Downloaded .debs are kept in CACHE/debs so rebuilds are
# quicker. The mirror comes from DROIDROOT_DEBIAN_MIRROR, else this machine's apt sources.
set -euo pipefail

suite=bookworm
include=python3,git,tar,findutils,gcc,libc6-dev,strace,gdb-minimal,libpython3.11-testsuite,dbus-daemon,libglib2.0-bin

mirror() {
	if [[ -n ${DROIDROOT_DEBIAN_MIRROR:-} ]]; then echo "$DROIDROOT_DEBIAN_MIRROR"; return; fi
	local m=""
	if [[ -f /etc/apt/sources.list.d/debian.sources ]]; then
		# First "URIs:" of a stanza whose URI ends in /debian (not debian-security).
		m=$(awk '$1 == "URIs:" && $2 ~ /\/debian\/?$/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources)
	fi
	if [[ -z $m ]]; then
		echo "debian.sh: no Debian mirror in /etc/apt/sources.list.d/debian.sources; set DROIDROOT_DEBIAN_MIRROR" >&2
		return 1
	fi
	echo "$m"
}

case ${1:-} in
mirror)
	mirror
	;;
inputs)
	echo "suite=$suite include=$include variant=minbase"
	;;
build)
	dir=$3 cache=$4
	# Refuse anything but the empty directory mkrootfs.sh made for us.
	if [[ ! -d $dir || -n $(ls -A -- "$dir") ]]; then
		echo "debian.sh: build target '$dir' is not an empty directory" >&2
		exit 2
	fi
	mkdir -p "$cache/debs"
	debootstrap --variant=minbase --include="$include" --cache-dir="$cache/debs" \
		"$suite" "$dir" "$(mirror)"
	# Keep the image small and the tests independent of the build machine.
	rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
	echo droidroot-debian >"$dir/etc/hostname"
	# Mount points the tests bind onto (they must exist for the chroot oracle).
	mkdir -p "$dir/mnt/progs" "$dir/mnt/work"
	;;
*)
	echo "usage: $0 inputs HERE | build HERE DIR CACHE | mirror" >&2
	exit 2
	;;
esac
