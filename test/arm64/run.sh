#!/bin/bash
# run.sh - droidroot's arm64 end-to-end stage: the one entry point of `make test-arm64`.
#
# usage: test/arm64/run.sh            (from anywhere; run as root)
#        test/arm64/run.sh --rootfs-only   steps 1 and 2 only: the arm64 busybox test rootfs, which
#                                          the host e2e suite's TestQemu runs through qemu-user
#
# Steps:
#   1. fetch.sh: Debian arm64 kernel, busybox-static, libc6, libgcc-s1 (cached, never twice)
#   2. the guest test rootfs (mkrootfs.sh), cached in CACHE/rootfs until its inputs change
#   3. cross-build with GOOS=linux GOARCH=arm64 CGO_ENABLED=0:
#        bin/droidroot                    ./cmd/droidroot
#        bin/NAME.test                    go test -c of each package in $DROIDROOT_ARM64_PKGS
#      a package that does not build fails the stage (a test that cannot be built is a test that
#      fails); DROIDROOT_ARM64_STRICT=0 skips it instead, with a loud warning (work in progress)
#   4. the initramfs (mkinitrd.sh): busybox with Debian's bash, mount, umount and unshare laid
#      over it (mkhosttools.sh: the e2e tests' host side runs test/oracle/chroot.sh, as on
#      x86_64), bin/, the rootfs, and /droidroot/src, the repository's
#      non-Go files (testdata, test/oracle, ...); /droidroot/pkg/NAME -> /droidroot/src/PKGDIR is
#      where NAME.test runs, as `go test` runs a test binary in its package directory
#   5. run-vm.sh once per part of test/arm64/parts: boot, run that part's tests (init.sh), pass
#      only on `DROIDROOT-ARM64-END status=0`; then per part the verdicts, the slowest tests and
#      the time used of its limit
#
# Environment:
#   DROIDROOT_CACHE          cache root (default /var/cache/droidroot); this stage uses .../arm64
#   DROIDROOT_ARM64_PKGS     packages to test, blank-separated (default: ./e2e ./seccomp ./tracer
#                            ./pathmap ./emul ./loader); ./test/arm64/smoke is always added
#   DROIDROOT_ARM64_STRICT   1 (default): any build failure fails the stage; 0: skip what does not
#                            build, loudly
#   DROIDROOT_ARM64_DEBIAN   1 (default): also build (test/mkrootfs.sh debian-arm64, cached) and
#                            ship the arm64 Debian rootfs as /droidroot/debian, so the Debian e2e
#                            tests run (python3, git, tar, gcc; the VM gets 3 GiB); 0: leave it out
#   DROIDROOT_ARM64_PARTS    comma-separated parts of test/arm64/parts to run (default: all); each
#                            part is one VM boot with its own time limit (see that file)
#   DROIDROOT_ARM64_TIMEOUT  VM wall-clock limit in seconds of a custom run (below; default 840)
#   DROIDROOT_ARM64_APPEND   extra kernel command line (KEY=VALUE -> test environment; see
#                            init.sh), added to every part's; with DROIDROOT_TEST_RUN=,
#                            DROIDROOT_TEST_SKIP= or `-- CMD` it makes one custom VM boot with every
#                            test binary instead of the parts (e.g. DROIDROOT_TEST_RUN=TestFoo)
#   DROIDROOT_ARM64_WORK     work directory (default: a new /tmp/droidroot-arm64.XXXXXX, deleted
#                            after a pass unless DROIDROOT_ARM64_KEEP=1, kept after a failure)
#   DROIDROOT_ARM64_LOG      also copy the console logs here, part after part (a CI artifact)
#   GO                       the go command (default: go in PATH, else /usr/local/go/bin/go)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

rootfs_only=0
case $* in
'') ;;
--rootfs-only) rootfs_only=1 ;;
*) echo "usage: $0 [--rootfs-only] (configured by environment variables, see the header)" >&2; exit 2 ;;
esac
[[ $(id -u) == 0 ]] || die "must run as root (apt, chroot, mknod)"

cache=$(arm64_cache_default)
# Set but empty: only the smoke test.
# shellcheck disable=SC2206 # word splitting is the point
pkgs=(${DROIDROOT_ARM64_PKGS-./e2e ./seccomp ./tracer ./pathmap ./emul ./loader})
pkgs=(./test/arm64/smoke "${pkgs[@]}")
strict=${DROIDROOT_ARM64_STRICT:-1}
vm_timeout=${DROIDROOT_ARM64_TIMEOUT:-840}
GO=${GO:-$(command -v go || echo /usr/local/go/bin/go)}
[[ -x $GO ]] || die "no go command (set GO=)"

if [[ -n ${DROIDROOT_ARM64_WORK:-} ]]; then
	work=$(realpath -m -- "$DROIDROOT_ARM64_WORK")
	# Only ever empty a directory this script made (it leaves a marker there).
	if [[ -d $work && -n $(ls -A -- "$work") && ! -f $work/.droidroot-arm64-work ]]; then
		die "DROIDROOT_ARM64_WORK=$work is a non-empty directory this script did not make"
	fi
	rm -rf --one-file-system -- "$work"
	mkdir -p -- "$work"
else
	work=$(mktemp -d /tmp/droidroot-arm64.XXXXXX)
fi
: >"$work/.droidroot-arm64-work"
t0=$SECONDS
step() { say "[$((SECONDS - t0))s] $*"; }
step "work directory $work"

# 1. Downloads.
step "fetch"
"$here/fetch.sh" "$cache"

# 2. The guest test rootfs, rebuilt only when an input changed. The lock also covers its use by
# mkinitrd.sh, so a concurrent run cannot swap it out from under the copy.
progdirs=("$here/progs")
[[ -d $repo/test/progs ]] && progdirs+=("$repo/test/progs")
fixture=$repo/test/rootfs/fixture.sh
rootfs_args=(--cache "$cache")
for d in "${progdirs[@]}"; do rootfs_args+=(--progs "$d"); done
[[ -f $fixture ]] && rootfs_args+=(--fixture "$fixture")
key=$( {
	sha256sum "$here/mkrootfs.sh" "$here/lib.sh"
	grep -E '^(busybox-static|libc6|libgcc-s1) ' "$cache/manifest"
	[[ -f $fixture ]] && sha256sum "$fixture"
	for d in "${progdirs[@]}"; do sha256sum "$d"/*.c 2>/dev/null || true; done
	aarch64-linux-gnu-gcc -dumpfullversion
	dpkg-query -W -f '${Version}\n' busybox-static || true
} | sha256sum | cut -d' ' -f1)
exec 8>"$cache/rootfs.lock"
flock 8
if [[ -d $cache/rootfs && -f $cache/rootfs.stamp && $(cat "$cache/rootfs.stamp") == "$key" ]]; then
	step "rootfs: cached ($cache/rootfs, key ${key:0:12})"
else
	step "rootfs: building $cache/rootfs (key ${key:0:12})"
	rm -f -- "$cache/rootfs.stamp"
	"$here/mkrootfs.sh" "$cache/rootfs" "${rootfs_args[@]}"
	echo "$key" >"$cache/rootfs.stamp"
fi

if [[ $rootfs_only == 1 ]]; then
	step "rootfs only: done ($cache/rootfs)"
	rm -rf --one-file-system -- "$work"
	exit 0
fi

# 3. Cross-builds.
mkdir -p "$work/bin"
export GOOS=linux GOARCH=arm64 CGO_ENABLED=0
# -s -w: no symbol table or DWARF (a smaller initramfs); file:line in failures come from pclntab.
# urfave_cli_no_docs: as the Makefile builds droidroot (no man page generator, a faster start).
goflags=(-trimpath -tags=urfave_cli_no_docs -ldflags=-s\ -w)
cd "$repo"
skipped=()
step "go build ./cmd/droidroot"
if ! "$GO" build "${goflags[@]}" -o "$work/bin/droidroot" ./cmd/droidroot; then
	skipped+=(./cmd/droidroot)
	rm -f -- "$work/bin/droidroot"
fi
declare -A names
for p in "${pkgs[@]}"; do
	rel=${p#./}
	name=$(basename -- "$rel")
	[[ -z ${names[$name]:-} ]] || die "test binary name '$name' of $p clashes with ${names[$name]}"
	names[$name]=$rel
	if [[ ! -d $rel ]]; then
		skipped+=("$p (no such directory)")
		continue
	fi
	step "go test -c $p"
	if ! "$GO" test -c "${goflags[@]}" -o "$work/bin/$name.test" "$p"; then
		skipped+=("$p")
		rm -f -- "$work/bin/$name.test"
	elif [[ ! -f $work/bin/$name.test ]]; then
		say "$p has no tests"
	fi
done
if [[ ${#skipped[@]} -gt 0 ]]; then
	if [[ $strict == 1 ]]; then
		die "these did not build for arm64: ${skipped[*]} (DROIDROOT_ARM64_STRICT=0 skips them instead)"
	fi
	loud "NOT BUILT for arm64, so NOT TESTED in the VM: ${skipped[*]} (DROIDROOT_ARM64_STRICT=0)"
fi
[[ -f $work/bin/smoke.test ]] || die "the harness's own smoke test did not build"
if [[ -f $here/run-tests.sh ]]; then
	install -m 755 -- "$here/run-tests.sh" "$work/bin/run-tests.sh"
fi

# The repository's non-Go files (git's view: tracked or untracked-but-not-ignored; read-only git).
step "source tree for the tests' working directories"
mkdir -p "$work/src" "$work/pkg"
repo_files() {
	if git -C "$repo" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git -C "$repo" ls-files -z -c -o --exclude-standard
	else
		find . -path ./.git -prune -o -type f -printf '%P\0'
	fi
}
repo_files | { grep -zEv '(\.go$|^test/arm64/)' || true; } | xargs -0 -r cp --parents -a -t "$work/src" --
for name in "${!names[@]}"; do
	if [[ -f $work/bin/$name.test ]]; then
		mkdir -p -- "$work/src/${names[$name]}"
		ln -s "/droidroot/src/${names[$name]}" "$work/pkg/$name"
	fi
done

# 3b. The arm64 Debian rootfs (built once through qemu-user, then cached by test/mkrootfs.sh).
debian_args=() vm_mem=1024
if [[ ${DROIDROOT_ARM64_DEBIAN:-1} == 1 ]]; then
	step "debian-arm64 rootfs"
	debian=${DROIDROOT_CACHE:-/var/cache/droidroot}/debian-arm64
	"$repo/test/mkrootfs.sh" debian-arm64 "$debian"
	# Its cpio archive (paths droidroot/debian/..., owners kept) is cached next to it, made
	# again only when the rootfs was rebuilt: copying 400 MB into every initramfs is slow.
	if [[ ! -f $debian.cpio || ! -f $debian.cpio.stamp || $(cat "$debian.cpio.stamp") != $(cat "$debian.stamp") ]]; then
		step "debian-arm64 cpio archive"
		rm -f -- "$debian.cpio.stamp"
		# shellcheck disable=SC2016 # the inner script expands its own arguments
		unshare -m bash -euc 'stage=$(mktemp -d) && mkdir -p "$stage/droidroot/debian" &&
			mount --bind "$1" "$stage/droidroot/debian" && cd "$stage" &&
			find droidroot/debian | LC_ALL=C sort | cpio --quiet -o -H newc >"$2.tmp" &&
			mv -f -- "$2.tmp" "$2"' _ "$debian" "$debian.cpio"
		cp -- "$debian.stamp" "$debian.cpio.stamp"
	fi
	debian_args=(--append "$debian.cpio")
	vm_mem=3072
fi

# 4. The initramfs: uncompressed (.cpio), since the kernel unpacks it far faster under TCG than
# it would gunzip it. Parts without the Debian rootfs boot the base archive; the others the same
# archive with the Debian one appended (the kernel unpacks concatenated archives in turn).
step "initramfs"
"$here/mkhosttools.sh" "$work/hosttools" --cache "$cache"
install -m 644 -- "$here/parts" "$work/bin/parts"
"$here/mkinitrd.sh" "$work/initrd.cpio" --cache "$cache" --bin "$work/bin" \
	--rootfs "$cache/rootfs" --overlay "$work/hosttools" \
	--add "$work/src:/droidroot/src" --add "$work/pkg:/droidroot/pkg"
if [[ ${#debian_args[@]} -gt 0 ]]; then
	cat -- "$work/initrd.cpio" "${debian_args[1]}" >"$work/initrd-debian.cpio"
fi
flock -u 8

# 5. The VMs: one boot per part of test/arm64/parts (see its header), each with its own time
# limit; or one boot running everything when DROIDROOT_ARM64_APPEND chooses the tests or the
# command itself (DROIDROOT_TEST_RUN=..., `-- CMD`).
built=()
for f in "$work/bin"/*.test; do [[ -f $f ]] && built+=("$(basename -- "$f" .test)"); done
declare -a part_names part_timeouts part_debian part_bins part_env
if [[ ${DROIDROOT_ARM64_APPEND:-} =~ (DROIDROOT_TEST_RUN=|DROIDROOT_TEST_SKIP=|(^|[[:space:]])--([[:space:]]|$)) ]]; then
	part_names=(all) part_timeouts=("$vm_timeout") part_bins=("") part_env=("")
	part_debian=("$([[ ${#debian_args[@]} -gt 0 ]] && echo yes || echo no)")
else
	# shellcheck disable=SC2207 # one word per line of output, none with blanks
	mapfile -t plines < <(grep -Ev '^[[:space:]]*(#|$)' "$here/parts")
	wanted=,${DROIDROOT_ARM64_PARTS:-},
	for line in "${plines[@]}"; do
		read -r name limit_s deb bins runre penv extra <<<"$line"
		[[ -n $runre && -z $extra ]] || die "test/arm64/parts: bad line: $line"
		[[ -z $penv || $penv == - || $penv =~ ^[A-Z_][A-Z0-9_]*=[^,]*(,[A-Z_][A-Z0-9_]*=[^,]*)*$ ]] ||
			die "test/arm64/parts: bad ENV in line: $line"
		[[ $wanted == ,, || $wanted == *",$name,"* ]] || continue
		# Only the binaries that were built.
		keep=()
		IFS=, read -r -a want_bins <<<"$bins"
		for b in "${want_bins[@]}"; do
			for h in "${built[@]}"; do [[ $b == "$h" ]] && keep+=("$b"); done
		done
		[[ ${#keep[@]} -gt 0 ]] || continue
		env="DROIDROOT_TEST_BINS=$(IFS=,; echo "${keep[*]}")"
		if [[ $runre == rest ]]; then
			# Skip what the other parts of the same binaries run.
			others=()
			for other in "${plines[@]}"; do
				read -r _ _ _ obins orun oenv _ <<<"$other"
				# A part with an ENV repeats tests in another setting: they still run here.
				[[ -n $oenv && $oenv != - ]] && continue
				[[ $obins == "$bins" && $orun != rest && $orun != - ]] && others+=("$orun")
			done
			if [[ ${#others[@]} -gt 0 ]]; then
				env+=" DROIDROOT_TEST_SKIP=$(IFS='|'; echo "${others[*]}")"
			fi
		elif [[ $runre != - ]]; then
			env+=" DROIDROOT_TEST_RUN=$runre"
		fi
		[[ -z $penv || $penv == - ]] || env+=" ${penv//,/ }"
		# Go's own timeout first: its panic names the tests that were running.
		env+=" DROIDROOT_TEST_TIMEOUT=$((limit_s - 60))s"
		[[ ${#debian_args[@]} -gt 0 ]] || deb=no
		part_names+=("$name") part_timeouts+=("$limit_s") part_debian+=("$deb") part_bins+=("$bins")
		part_env+=("$env")
	done
	[[ ${#part_names[@]} -gt 0 ]] || die "no part of test/arm64/parts selected (DROIDROOT_ARM64_PARTS=${DROIDROOT_ARM64_PARTS:-})"
fi

rc=0
summary=()
[[ -z ${DROIDROOT_ARM64_LOG:-} ]] || { mkdir -p -- "$(dirname -- "$DROIDROOT_ARM64_LOG")"; : >"$DROIDROOT_ARM64_LOG"; }
for i in "${!part_names[@]}"; do
	name=${part_names[$i]} limit=${part_timeouts[$i]}
	initrd=$work/initrd.cpio mem=1024
	if [[ ${part_debian[$i]} == yes ]]; then initrd=$work/initrd-debian.cpio mem=$vm_mem; fi
	append="${part_env[$i]}${DROIDROOT_ARM64_APPEND:+ $DROIDROOT_ARM64_APPEND}"
	append=${append# }
	log=$work/console-$name.log
	step "VM part '$name' (${part_bins[$i]:-all tests}; timeout ${limit}s${append:+; $append})"
	t_part=$SECONDS
	prc=0
	"$here/run-vm.sh" --kernel "$cache/Image" --initrd "$initrd" --timeout "$limit" --mem "$mem" \
		--log "$log" ${append:+--append "$append"} || prc=$?
	took=$((SECONDS - t_part))
	if [[ -n ${DROIDROOT_ARM64_LOG:-} ]]; then
		printf '==== part %s\n' "$name" >>"$DROIDROOT_ARM64_LOG"
		cat -- "$log" >>"$DROIDROOT_ARM64_LOG"
	fi
	# Per-binary results, from the default runner's lines, and the tests' own verdicts (go test
	# -v: top-level `--- PASS: TestX (1.23s)`, subtests indented by four spaces per level).
	tr -d '\r' <"$log" | sed -n 's/^=== DROIDROOT-ARM64-RESULT /  /p' >&2 || true
	# A binary that panicked (a -test.timeout included) prints no verdict for the tests it was
	# running; Go's timeout panic lists them under "running tests:".
	tr -d '\r' <"$log" | awk -v part="$name" '
		/^--- (PASS|FAIL|SKIP): / { top[$2]++; if ($2 == "FAIL:") failed = failed " " $3
			d = $4; gsub(/[()s]/, "", d); times[++n] = sprintf("%8.1f s  %s %s", d, $3, $2) }
		/^    +--- (PASS|FAIL|SKIP): / { sub_[$2]++ }
		/^panic: / { panics = panics " [" $0 "]" }
		/^running tests:$/ { running = 1; next }
		running && /^\t/ { sub(/^\t+/, ""); stuck = stuck " " $0; next }
		{ running = 0 }
		/^=== DROIDROOT-ARM64-RESULT / && $4 != "rc=0" { badbins = badbins " " $3 " (" $4 ")" }
		END {
			if (stuck != "") printf "  still running at the test timeout:%s\n", stuck
			if (top["PASS:"] + top["FAIL:"] + top["SKIP:"] == 0) exit
			printf "  part %s: tests: %d passed, %d failed, %d skipped (subtests: %d passed, %d failed, %d skipped)\n",
				part, top["PASS:"], top["FAIL:"], top["SKIP:"], sub_["PASS:"], sub_["FAIL:"], sub_["SKIP:"]
			if (failed != "") printf "  failed:%s\n", failed
			if (panics != "") printf "  panicked:%s\n", panics
			if (badbins != "") printf "  failing test binaries:%s\n", badbins
			# The slowest tests of the part, so a slow test is seen before it is a timeout.
			cmd = "sort -rn | head -n 8"
			printf "  slowest tests of part %s:\n", part
			for (i = 1; i <= n; i++) print times[i] | cmd
			close(cmd)
		}' >&2 || true
	verdict=passed
	if [[ $prc != 0 ]]; then verdict=FAILED; rc=1; fi
	summary+=("$(printf '%-12s %-6s %4d s of %4d s (%d%%)' "$name" "$verdict" "$took" "$limit" $((100 * took / limit)))")
	if ((2 * took > limit)); then
		say "warning: part '$name' took ${took}s, more than half of its ${limit}s limit (test/arm64/parts)"
	fi
done
step "parts:"
for l in "${summary[@]}"; do printf '  %s\n' "$l" >&2; done
if [[ $rc != 0 ]]; then
	step "arm64 stage FAILED; work directory kept: $work"
	exit 1
fi
if [[ ${#skipped[@]} -gt 0 ]]; then
	loud "arm64 stage passed, but WITHOUT: ${skipped[*]}"
fi
step "arm64 stage passed"
if [[ ${DROIDROOT_ARM64_KEEP:-0} != 1 && -z ${DROIDROOT_ARM64_WORK:-} ]]; then
	rm -rf --one-file-system -- "$work"
fi
exit 0
