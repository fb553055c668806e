#!/bin/sh
# fixture.sh - the awkward-path fixture tree of the busybox test rootfs.
#
# Runs INSIDE the rootfs at build time (chroot ROOT /bin/sh /fixture.sh), with busybox, so all
# absolute symlinks are guest paths. test/oracle/*.ops refer to these names: keep them in step.
set -eu

# /fx: a small tree with every kind of symlink a path walker must get right.
mkdir -p /fx/dir/sub/deep /fx/empty /fx/scratch /fx/mp /fx/ro
printf 'hello\n' >/fx/dir/file
printf 'deep\n' >/fx/dir/sub/deep/f2
ln /fx/dir/file /fx/hard                       # a hard link: same inode, nlink 2
ln -s /fx/dir /fx/abs                          # absolute symlink to a directory
ln -s dir /fx/rel                              # relative symlink
ln -s ../fx/dir /fx/relup                      # relative through the parent
ln -s ../.. /fx/dir/sub/up                     # points back to /fx
ln -s / /fx/dir/sub/root                       # to the root
ln -s sub/deep /fx/dir/deeplink                # so deeplink/.. is /fx/dir/sub, not /fx/dir
ln -s ../../../../../../.. /fx/dotdot          # climbs above / (must stop at the root)
ln -s /../../fx/dir /fx/absdotdot              # absolute, with .. at the root
ln -s /nonexistent/x /fx/dangling              # dangling absolute
ln -s nowhere /fx/dangling-rel                 # dangling relative
ln -s loop2 /fx/loop1                          # a loop: ELOOP
ln -s loop1 /fx/loop2
ln -s self /fx/self                            # a self loop
ln -s chain2 /fx/chain1                        # a chain that ends at a file
ln -s chain3 /fx/chain2
ln -s /fx/dir/file /fx/chain3
ln -s dir/file /fx/filelink                    # symlink to a file (filelink/ -> ENOTDIR)
ln -s /etc /fx/etc-abs
ln -s /proc/self /fx/proc-self
ln -s /proc/self/cwd /fx/cwdlink
ln -s /mnt/b1 /fx/bindlink                     # symlinks into bind mounts
ln -s ../mnt/b2/sub /fx/bindlink-rel
ln -s mp /fx/mplink
ln -s "" /fx/emptylink 2>/dev/null || true     # Linux refuses empty targets: stays absent
ln -s /fx/dir/ /fx/trailing                    # target with a trailing slash

# 41 links in a row: one more than the kernel follows (40), so ELOOP; and 40 that still work.
i=1
while [ $i -le 41 ]; do
	ln -s "n$((i + 1))" "/fx/n$i"
	i=$((i + 1))
done
ln -s dir/file /fx/n42
i=1
while [ $i -le 39 ]; do
	ln -s "m$((i + 1))" "/fx/m$i"
	i=$((i + 1))
done
ln -s dir/file /fx/m40

# Awkward names.
printf 'space\n' >"/fx/dir/with space"
printf 'colon\n' >/fx/dir/x:y
printf 'dash\n' >/fx/dir/-dash
printf 'hidden\n' >/fx/dir/.hidden
printf 'utf8\n' >"/fx/dir/$(printf '\303\274n\303\257c\303\266d\303\251')"
name255=$(printf '%0255d' 0 | tr 0 n)
printf 'long name\n' >"/fx/dir/$name255"

# A deep tree: 9 components of 200 characters (guest path ~1.8 KiB; the ops lengthen it).
c200=$(printf '%0200d' 0 | tr 0 L)
mkdir /fx/long
cd /fx/long
i=1
while [ $i -le 9 ]; do
	mkdir "$c200"
	cd "$c200"
	i=$((i + 1))
done
printf 'bottom\n' >bottom
ln -s /fx/dir bottom-abs
ln -s ../../../../../../../../../../dir bottom-rel   # 10 levels up is /fx
cd /

# Read-only and unreadable bits (root ignores most, but the kernel's answer is the oracle).
printf 'ro\n' >/fx/ro/file
chmod 0444 /fx/ro/file
chmod 0555 /fx/ro
printf 'x\n' >/fx/dir/exec
chmod 0755 /fx/dir/exec

# Programs for exec.ops: scripts (with and without an argument, nested, too deeply nested),
# files exec refuses (no x bit, no format, missing interpreter).
mkdir /fx/exec
# shellcheck disable=SC2016 # the script expands $0 and $* when it runs
printf '#!/bin/sh\necho "script $0 $*"\n' >/fx/exec/script.sh
printf '#!  /bin/echo   one arg  \n' >/fx/exec/script-arg
printf '#!/fx/exec/script.sh\n' >/fx/exec/nested
printf '#!/fx/exec/deep1\n' >/fx/exec/deep2
printf '#!/fx/exec/deep2\n' >/fx/exec/deep3
printf '#!/fx/exec/deep3\n' >/fx/exec/deep4
printf '#!/fx/exec/deep4\n' >/fx/exec/deep5
printf '#!/fx/exec/script.sh\n' >/fx/exec/deep1
printf '#!/nonexistent/interp\n' >/fx/exec/badinterp
printf '#!\n' >/fx/exec/emptyinterp
printf 'just text, no format\n' >/fx/exec/garbage
printf '#!/bin/sh\necho no\n' >/fx/exec/noexec
# execat.ops: a script whose interpreter prints the argv and AT_EXECFN it was given.
printf '#!/progs/pathprobe argv\n' >/fx/exec/show
chmod 0755 /fx/exec/*
chmod 0644 /fx/exec/noexec
ln -s script.sh /fx/exec/link
ln -s /progs/pathprobe /fx/exec/abslink
ln -s show /fx/exec/showlink

# Mount points the e2e tests bind onto (they must exist for the chroot oracle).
mkdir -p /mnt/b1 /mnt/b2 /mnt/alias /mnt/empty
: >/mnt/file
