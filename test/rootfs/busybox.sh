#!/bin/bash
# busybox.sh - recipe for the `busybox` test rootfs (called by test/mkrootfs.sh).
#
#   busybox.sh inputs HERE          print what the result depends on (hashed into the cache key)
#   busybox.sh build HERE DIR CACHE build the rootfs into the empty directory DIR
#
# Contents:
#   /bin/busybox (static) and its applet symlinks (absolute, -> /bin/busybox, like
#     `busybox --install -s`), /etc/passwd, /etc/group, /tmp, /root
#   the host's glibc: /lib/x86_64-linux-gnu/{ld-linux-x86-64.so.2,libc.so.6,libgcc_s.so.1} (real files) and
#     /lib64/ld-linux-x86-64.so.2 -> /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 (absolute)
#   /progs/NAME      test/progs/NAME.c, static
#   /progs/NAME.pie  static-pie
#   /progs/NAME.dyn  dynamic, using the glibc above
#   /fx              the awkward-path fixture tree made by test/rootfs/fixture.sh
#   /mnt/{b1,b2,alias,empty,file}, /proc, /sys, /dev: mount points for the tests' binds
set -euo pipefail

case ${1:-} in
inputs)
	here=$2
	for f in "$here/rootfs/fixture.sh" "$here"/progs/*.c; do
		echo "${f##*/} $(sha256sum <"$f")"
	done
	gcc -dumpfullversion
	dpkg-query -W -f '${Package} ${Version}\n' busybox-static libc6 libc6-dev libgcc-s1
	;;
build)
	here=$2 dir=$3
	if [[ ! -d $dir || -n $(ls -A -- "$dir") ]]; then
		echo "busybox.sh: build target '$dir' is not an empty directory" >&2
		exit 2
	fi
	cd "$dir"
	mkdir -p bin sbin usr/bin usr/sbin etc root tmp proc sys dev mnt progs \
		lib/x86_64-linux-gnu lib64
	chmod 1777 tmp
	chmod 0700 root

	# busybox and its applets.
	cp /bin/busybox bin/busybox
	busybox --list-full | while read -r applet; do
		[[ $applet == bin/busybox || -e $applet || -L $applet ]] && continue
		ln -s /bin/busybox "$applet"
	done

	# The host's glibc, so dynamic programs built here run in the rootfs with *its* ld.so, and
	# libgcc_s, which glibc loads to unwind a cancelled thread (cancelprobe).
	multi=/lib/x86_64-linux-gnu
	cp -L "$multi/ld-linux-x86-64.so.2" "$multi/libc.so.6" "$multi/libgcc_s.so.1" lib/x86_64-linux-gnu/
	ln -s /lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 lib64/ld-linux-x86-64.so.2

	cat >etc/passwd <<'PASSWD'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
PASSWD
	cat >etc/group <<'GROUP'
root:x:0:
nogroup:x:65534:
GROUP
	echo droidroot-busybox >etc/hostname

	# Test programs in three link modes.
	for src in "$here"/progs/*.c; do
		name=$(basename "$src" .c)
		flags=(-O2 -g0 -Wall -Wextra -Werror -pthread)
		gcc "${flags[@]}" -static -o "progs/$name" "$src"
		gcc "${flags[@]}" -static-pie -o "progs/$name.pie" "$src"
		gcc "${flags[@]}" -o "progs/$name.dyn" "$src"
	done

	# The fixture tree is made from inside, so its absolute symlinks are guest paths.
	cp "$here/rootfs/fixture.sh" fixture.sh
	chroot . /bin/sh /fixture.sh
	rm fixture.sh

	# Smoke test: the three link modes run in the rootfs.
	for m in "" .pie .dyn; do
		chroot . "/progs/pathprobe$m" "stat /fx/dir/file" >/dev/null
	done
	;;
*)
	echo "usage: $0 inputs HERE | build HERE DIR CACHE" >&2
	exit 2
	;;
esac
