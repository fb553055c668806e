# shellcheck shell=bash
# lib.sh - helpers shared by the arm64 harness scripts (sourced, not executed).
#
# Every script of test/arm64 prefixes its messages with its own name ($arm64_prog) so that the
# interleaved output of one `make test-arm64` run says which step spoke.

arm64_prog=${arm64_prog:-$(basename -- "$0" .sh)}

# The cache root of all droidroot test artifacts (shared with test/mkrootfs.sh).
arm64_cache_default() { echo "${DROIDROOT_CACHE:-/var/cache/droidroot}/arm64"; }

say() { printf '%s: %s\n' "$arm64_prog" "$*" >&2; }
die() { say "error: $*"; exit 1; }

# loud MESSAGE...: a warning nobody can miss in a CI log.
loud() {
	local line='!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!'
	printf '%s\n' "$line" >&2
	printf '!!! %s: WARNING: %s\n' "$arm64_prog" "$*" >&2
	printf '%s\n' "$line" >&2
}

# busybox_applets BUSYBOX: print the applet paths of an arm64 busybox (bin/sh, usr/bin/awk, ...)
# relative to /. The list is a property of the binary, so ask the binary: under qemu-user when
# the host has it (qemu-user-static), else from the host's busybox when it is the same Debian
# version (the arm64 and amd64 busybox-static packages are built from one configuration).
busybox_applets() {
	local bb=$1 q
	for q in qemu-aarch64-static qemu-aarch64; do
		if command -v "$q" >/dev/null && "$q" "$bb" --list-full 2>/dev/null; then
			return 0
		fi
	done
	local host_bb
	host_bb=$(command -v busybox) || die "cannot list applets of $bb: no qemu-aarch64(-static), no host busybox"
	say "no qemu-user to ask $bb for its applets; using the host busybox's list"
	"$host_bb" --list-full
}

# install_applets ROOT BUSYBOX: /bin/busybox's applet symlinks in ROOT, absolute (-> /bin/busybox)
# like `busybox --install -s`; existing files are left alone. One perl process makes them all
# (perl-base is Essential on Debian): a shell loop forks ~800 times, minutes on a loaded CI box.
install_applets() {
	local root=$1 bb=$2
	busybox_applets "$bb" | perl -e '
		use strict; use File::Path qw(make_path);
		my $root = shift;
		while (my $a = <STDIN>) {
			chomp $a;
			next if $a eq "" || $a eq "bin/busybox" || -e "$root/$a" || -l "$root/$a";
			(my $d = "$root/$a") =~ s{/[^/]*$}{};
			make_path($d);
			symlink("/bin/busybox", "$root/$a") or die "symlink $root/$a: $!\n";
		}' "$root"
}

# is_arm64_elf FILE: true when FILE is an AArch64 ELF (e_machine 183 at offset 18).
is_arm64_elf() {
	[[ $(head -c 4 -- "$1" | od -An -tx1 | tr -d ' \n') == 7f454c46 ]] &&
		[[ $(od -An -tu2 -j18 -N2 -- "$1" | tr -d ' \n') == 183 ]]
}
