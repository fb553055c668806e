#!/bin/bash
# chroot.sh - run a command in a rootfs with bind mounts using the real kernel: the ground truth
# that droidroot's translation is compared with (`droidroot run -r ROOTFS -b HOST:GUEST ...`).
#
# usage: test/oracle/chroot.sh [--copy] [-w CWD] ROOTFS [HOST[:GUEST]]... -- CMD [ARG]...
#
#   HOST[:GUEST]  bind HOST (a directory or a file) at GUEST (default: the same path), in the
#                 order given, recursively (like droidroot/proot, which see everything below
#                 HOST). GUEST is resolved inside the rootfs, so guest symlinks work as in
#                 droidroot. The mount point must exist in ROOTFS, unless --copy.
#   -w CWD        working directory inside the rootfs (default /)
#   --copy        run in a throwaway copy of ROOTFS (deleted afterwards) and create missing
#                 mount points in it; without it ROOTFS is never written to by this script
#
# If nothing is bound at /proc and ROOTFS has a /proc directory, the host's /proc is bound
# there (as with `-b /proc`: same st_dev as droidroot sees). Everything happens in a private
# mount namespace (unshare -m), so no mount outlives the command. Prints the command's output
# and exits with its status. Needs root.
set -euo pipefail

die() { echo "chroot.sh: $*" >&2; exit 2; }

if [[ ${1:-} != --in-namespace ]]; then
	copy=0 cwd=/
	while [[ $# -gt 0 ]]; do
		case $1 in
		--copy) copy=1; shift ;;
		-w) cwd=${2:?-w needs a directory}; shift 2 ;;
		*) break ;;
		esac
	done
	[[ $# -ge 1 ]] || die "usage: $0 [--copy] [-w CWD] ROOTFS [HOST[:GUEST]]... -- CMD [ARG]..."
	[[ $(id -u) == 0 ]] || die "must run as root"
	root=$(realpath -e -- "$1") || die "no rootfs $1"
	shift
	binds=()
	while [[ $# -gt 0 && $1 != -- ]]; do binds+=("$1"); shift; done
	[[ ${1:-} == -- && $# -ge 2 ]] || die "missing -- CMD"
	shift

	if [[ $copy == 0 ]]; then
		exec unshare --mount -- "$0" --in-namespace "$root" "$cwd" 0 "${binds[@]}" -- "$@"
	fi
	# With --copy we stay around to delete the copy; the command's status is passed on (a
	# death by signal N becomes 128+N, as in a shell).
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/chroot-oracle.XXXXXX")
	trap 'rm -rf --one-file-system -- "$tmp"' EXIT
	cp -a -- "$root" "$tmp/root"
	# (A waited-for background job with wait's stderr silenced, so that bash adds no "Killed"
	# notice to the command's stderr; the explicit <&0 keeps our stdin, which a background job
	# would otherwise lose.)
	unshare --mount -- "$0" --in-namespace "$tmp/root" "$cwd" 1 "${binds[@]}" -- "$@" <&0 &
	status=0
	{ wait "$!" || status=$?; } 2>/dev/null
	exit "$status"
fi

# ---- inside the private mount namespace ----
shift
root=$1 cwd=$2 copy=$3
shift 3
mount --make-rprivate /

proc_bound=0
while [[ $1 != -- ]]; do
	spec=$1
	shift
	host=${spec%%:*}
	guest=${spec#*:}
	[[ $spec == *:* ]] || guest=$host
	[[ -e $host ]] || die "bind source $host does not exist"
	[[ $guest == /* ]] || die "guest path $guest must be absolute"
	# Resolve the guest path inside the rootfs as it is now (earlier binds included), so a
	# guest symlink is followed inside the guest, never on the host.
	if ! resolved=$(chroot "$root" readlink -f -- "$guest" 2>/dev/null) || [[ ! -e $root$resolved ]]; then
		[[ $copy == 1 ]] || die "mount point $guest missing in $root (use --copy)"
		if [[ -d $host ]]; then mkdir -p -- "$root$guest"; else mkdir -p -- "$(dirname -- "$root$guest")"; : >"$root$guest"; fi
		resolved=$(chroot "$root" readlink -f -- "$guest")
	fi
	mount --rbind -- "$host" "$root$resolved"
	[[ $resolved == /proc ]] && proc_bound=1
done
shift

if [[ $proc_bound == 0 && -d $root/proc ]]; then
	mount --rbind /proc "$root/proc"
fi

exec unshare --root="$root" --wd="$cwd" -- "$@"
