#!/bin/bash
# fetch.sh - download (once) and unpack the Debian arm64 packages the arm64 e2e stage needs.
#
# usage: test/arm64/fetch.sh [CACHE_DIR]
#   CACHE_DIR  default ${DROIDROOT_CACHE:-/var/cache/droidroot}/arm64
#
# Packages (bookworm, arm64):
#   kernel          linux-image-6.1.0-N-arm64: the one linux-image-arm64 depends on when the cache
#                   is first filled (or $DROIDROOT_ARM64_KERNEL, a package name, to pin another)
#   busybox-static  the initramfs's /bin/busybox and the test rootfs's
#   libc6           ld-linux-aarch64.so.1 + libc.so.6 for dynamic test programs
#   libgcc-s1       libgcc_s.so.1 (pthread_cancel / unwinding in dynamic programs)
#   host tools      bash, coreutils, util-linux (unshare), mount (mount, umount) and the
#                   libraries they need (libtinfo6 libmount1 libblkid1 libselinux1 libpcre2-8-0
#                   libacl1 libattr1 libgmp10): the VM's "host" side must run what the x86_64
#                   host runs for the e2e tests, e.g. test/oracle/chroot.sh (bash, `realpath
#                   -e`, `rm --one-file-system`, `unshare --root`, `mount --make-rprivate`),
#                   which busybox cannot; run.sh lays them over the initramfs's busybox
#   $DROIDROOT_ARM64_EXTRA_PKGS  more packages (blank-separated), fetched and unpacked alike
#
# Cache layout (everything below CACHE_DIR):
#   debs/NAME_VERSION_arm64.deb   what apt-get download fetched; never fetched again while present
#   extract/KEY/                  dpkg-deb -x of the .deb (KEY = kernel, or the package name);
#                                 for the kernel only ./boot (the rest is 300 MB of modules an
#                                 initramfs-only VM does not load)
#   extract/KEY.stamp             the .deb file name KEY was unpacked from (re-unpacked on change)
#   Image                         the kernel, an uncompressed arm64 Image (qemu -kernel takes it)
#   Image.release                 "linux-image-6.1.0-N-arm64 VERSION" of the Image
#   manifest                      "KEY PACKAGE VERSION" per package, for logs and cache keys
#
# apt is touched only when a .deb is missing: then arm64 is added to dpkg's architectures (once)
# and `apt-get update` runs when apt does not know the arm64 packages yet. A warm cache needs no
# network and no apt at all. A lock serialises concurrent runs on one CACHE_DIR; downloads and
# unpacking go to temporary names first, so an interrupted run leaves nothing half-done behind.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

if [[ $# -gt 1 || ${1:-} == -h || ${1:-} == --help ]]; then
	echo "usage: $0 [CACHE_DIR]" >&2
	exit 2
fi
cache=$(realpath -m -- "${1:-$(arm64_cache_default)}")
mkdir -p -- "$cache/debs" "$cache/extract"

exec 9>"$cache/.lock"
flock 9

# Packages other than the kernel: KEY = Debian package name.
# shellcheck disable=SC2206 # a blank-separated list
plain_pkgs=(busybox-static libc6 libgcc-s1
	bash coreutils util-linux mount
	libtinfo6 libmount1 libblkid1 libselinux1 libpcre2-8-0 libacl1 libattr1 libgmp10
	${DROIDROOT_ARM64_EXTRA_PKGS:-})
kernel_re='^linux-image-6\.1\.0-[0-9]+-arm64$'

# cached_deb NAME: the cached .deb of package NAME, if any (newest version when several).
cached_deb() {
	local f
	f=$(find "$cache/debs" -maxdepth 1 -name "${1}_*_arm64.deb" -printf '%f\n' | sort -V | tail -n1)
	[[ -n $f ]] && echo "$cache/debs/$f"
}

# cached_kernel_deb: the cached linux-image-6.1.0-N-arm64 .deb (not -cloud, -rt, -unsigned, -dbg).
cached_kernel_deb() {
	local f name
	while read -r f; do
		name=${f%%_*}
		if [[ $name =~ $kernel_re ]]; then echo "$cache/debs/$f"; fi
	done < <(find "$cache/debs" -maxdepth 1 -name 'linux-image-*_arm64.deb' -printf '%f\n' | sort -V) |
		tail -n1
}

apt_ready=0
# ensure_apt: make apt able to download arm64 packages (only called when something is missing).
ensure_apt() {
	[[ $apt_ready == 1 ]] && return 0
	[[ $(id -u) == 0 ]] || die "a download is needed and that takes root (dpkg --add-architecture, apt-get)"
	local update=0
	if ! dpkg --print-foreign-architectures | grep -qx arm64; then
		say "adding arm64 to dpkg's architectures"
		dpkg --add-architecture arm64
		update=1
	fi
	if [[ $update == 0 ]] && ! apt-cache show busybox-static:arm64 >/dev/null 2>&1; then
		update=1
	fi
	if [[ $update == 1 ]]; then
		say "apt-get update (arm64 package lists)"
		apt-get update -q || die "apt-get update failed"
	fi
	apt_ready=1
}

# resolve_kernel: the kernel package to download.
resolve_kernel() {
	if [[ -n ${DROIDROOT_ARM64_KERNEL:-} ]]; then
		echo "$DROIDROOT_ARM64_KERNEL"
		return
	fi
	local k
	# The current bookworm ABI is what the linux-image-arm64 meta-package depends on ...
	k=$(apt-cache depends linux-image-arm64:arm64 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-image-[^:]*\).*/\1/p' | grep -E "$kernel_re" | head -n1 || true)
	# ... or, should the meta-package move on from 6.1, the newest 6.1.0-N-arm64 there is.
	if [[ -z $k ]]; then
		k=$(apt-cache search --names-only 'linux-image-6\.1\.0-[0-9]+-arm64$' | cut -d' ' -f1 |
			grep -E "$kernel_re" | sort -V | tail -n1 || true)
	fi
	[[ -n $k ]] || die "no linux-image-6.1.0-*-arm64 package known to apt"
	echo "$k"
}

# download PACKAGE...: apt-get download PACKAGE:arm64... into debs/ (via a temporary directory),
# in one apt run (each run re-reads the package lists: seconds on a busy machine).
download() {
	local tmp
	ensure_apt
	tmp=$(mktemp -d "$cache/debs/.dl.XXXXXX")
	say "downloading $*"
	# Root's apt drops to the _apt user for downloads, which cannot write here: stay root.
	if ! (cd "$tmp" && apt-get download -q -o APT::Sandbox::User=root "${@/%/:arm64}"); then
		rm -rf -- "$tmp"
		die "apt-get download $* failed"
	fi
	mv -f -- "$tmp"/*.deb "$cache/debs/"
	rm -rf -- "$tmp"
}

# Leftovers of interrupted runs (we hold the lock).
rm -rf -- "$cache"/debs/.dl.* "$cache"/extract/.tmp.* "$cache"/.Image.*

# 1. Downloads, only of what is missing.
deb_kernel=$(cached_kernel_deb || true)
if [[ -n ${DROIDROOT_ARM64_KERNEL:-} && -n $deb_kernel &&
	$(basename -- "$deb_kernel") != "${DROIDROOT_ARM64_KERNEL}"_* ]]; then
	deb_kernel=$(cached_deb "$DROIDROOT_ARM64_KERNEL" || true)
fi
missing=()
if [[ -z $deb_kernel ]]; then
	ensure_apt
	kpkg=$(resolve_kernel)
	missing+=("$kpkg")
fi
for pkg in "${plain_pkgs[@]}"; do
	cached_deb "$pkg" >/dev/null || missing+=("$pkg")
done
if [[ ${#missing[@]} -gt 0 ]]; then
	download "${missing[@]}"
fi
if [[ -z $deb_kernel ]]; then
	deb_kernel=$(cached_deb "$kpkg") || die "download of $kpkg left no .deb"
fi
declare -A debs=([kernel]=$deb_kernel)
for pkg in "${plain_pkgs[@]}"; do
	debs[$pkg]=$(cached_deb "$pkg") || die "download of $pkg left no .deb"
done

# 2. Unpack each .deb once (again only when the cached .deb changed).
for key in kernel "${plain_pkgs[@]}"; do
	deb=${debs[$key]}
	dst=$cache/extract/$key
	if [[ -d $dst && -f $dst.stamp && $(cat "$dst.stamp") == "$(basename -- "$deb")" ]]; then
		continue
	fi
	say "unpacking $(basename -- "$deb") into extract/$key"
	tmp=$(mktemp -d "$cache/extract/.tmp.XXXXXX")
	if [[ $key == kernel ]]; then
		dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" ./boot
	else
		dpkg-deb -x "$deb" "$tmp"
	fi
	rm -f -- "$dst.stamp"
	rm -rf -- "$dst"
	mv -T -- "$tmp" "$dst"
	chmod 755 "$dst"
	basename -- "$deb" >"$dst.stamp"
done

# 3. The kernel Image. Debian's arm64 vmlinuz is an uncompressed Image ("ARM\x64" magic at 0x38);
# should a later package ship it gzip-compressed, decompress it (qemu's -kernel wants an Image).
declare -A pkgver
for key in kernel "${plain_pkgs[@]}"; do
	# shellcheck disable=SC2016 # dpkg-query format, not shell
	pkgver[$key]=$(dpkg-deb --showformat='${Package} ${Version}' -W "${debs[$key]}")
done
read -r kpkg kver <<<"${pkgver[kernel]}"
vmlinuz=$(find "$cache/extract/kernel/boot" -maxdepth 1 -name 'vmlinuz-*' | head -n1)
[[ -n $vmlinuz ]] || die "no boot/vmlinuz-* in $deb_kernel"
if [[ ! -f $cache/Image || ! -f $cache/Image.release || $(cat "$cache/Image.release") != "$kpkg $kver" ]]; then
	tmp=$(mktemp "$cache/.Image.XXXXXX")
	case $(head -c 2 -- "$vmlinuz" | od -An -tx1 | tr -d ' \n') in
	1f8b) gzip -dc -- "$vmlinuz" >"$tmp" ;;
	*) cp -- "$vmlinuz" "$tmp" ;;
	esac
	if [[ $(od -An -c -j56 -N4 -- "$tmp" | tr -d ' \n') != 'ARMd' ]]; then
		rm -f -- "$tmp"
		die "$vmlinuz is not an arm64 Image (no ARM\\x64 magic at 0x38)"
	fi
	chmod 644 "$tmp"
	mv -f -- "$tmp" "$cache/Image"
	echo "$kpkg $kver" >"$cache/Image.release"
fi
grep -qx 'CONFIG_SECCOMP_FILTER=y' "$cache"/extract/kernel/boot/config-* ||
	loud "$kpkg has no CONFIG_SECCOMP_FILTER=y: seccomp tests will fail in the VM"

# 4. The manifest.
{
	for key in kernel "${plain_pkgs[@]}"; do
		printf '%s %s\n' "$key" "${pkgver[$key]}"
	done
} >"$cache/manifest.tmp"
mv -f -- "$cache/manifest.tmp" "$cache/manifest"

# Sanity: the files the other scripts take from here.
for f in Image extract/busybox-static/bin/busybox \
	extract/libc6/lib/aarch64-linux-gnu/libc.so.6 \
	extract/libc6/lib/ld-linux-aarch64.so.1; do
	[[ -e $cache/$f || -L $cache/$f ]] || die "missing $cache/$f after fetch"
done
is_arm64_elf "$cache/extract/busybox-static/bin/busybox" || die "extract/busybox-static/bin/busybox is not arm64"
say "ready in $cache: $(tr '\n' ';' <"$cache/manifest" | sed 's/;$//; s/;/; /g')"
