# droidroot top-level Makefile.
#
#   make              build bin/droidroot for this machine
#   make cross        bin/droidroot-linux-amd64, -linux-arm64 and -android-arm64
#   make test         unit tests, then the end-to-end suite on x86_64 (needs root
#                     and the test rootfses: make rootfs)
#   make test-e2e-nofastpath  the end-to-end suite with the fast path library off
#   make test-e2e-android  the end-to-end suite under Android 12's and 16's
#                     app seccomp policy
#   make test-arm64   the arm64 suite in a qemu-system-aarch64 VM
#   make rootfs       build (or reuse) the cached test rootfses
#   make loader       rebuild the embedded C loaders

export PATH := /usr/local/go/bin:$(PATH)
GO ?= go
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
# urfave_cli_no_docs: leave out urfave/cli's man page and Markdown generators (droidroot has
# no use for them), whose Markdown library's package init costs ~2 ms at every start.
GOFLAGS_BUILD := -trimpath -tags urfave_cli_no_docs -ldflags "-s -w -X main.version=$(VERSION)"
DROIDROOT_CACHE ?= /var/cache/droidroot
export DROIDROOT_CACHE

.PHONY: all build cross test test-unit test-e2e test-e2e-nofastpath test-e2e-android test-arm64 rootfs vet clean
all: build

build:
	$(GO) build $(GOFLAGS_BUILD) -o bin/droidroot ./cmd/droidroot

cross:
	GOOS=linux GOARCH=amd64 CGO_ENABLED=0 $(GO) build $(GOFLAGS_BUILD) -o bin/droidroot-linux-amd64 ./cmd/droidroot
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(GOFLAGS_BUILD) -o bin/droidroot-linux-arm64 ./cmd/droidroot
	GOOS=android GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(GOFLAGS_BUILD) -o bin/droidroot-android-arm64 ./cmd/droidroot

vet:
	test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }
	$(GO) vet ./...
	GOARCH=arm64 $(GO) vet ./...

rootfs:
	test/mkrootfs.sh busybox
	test/mkrootfs.sh debian

test: vet build test-unit test-e2e test-e2e-nofastpath

test-unit:
	$(GO) test -count=1 $$($(GO) list ./... | grep -v /e2e)

test-e2e: build
	DROIDROOT_BIN=$(CURDIR)/bin/droidroot $(GO) test -count=1 -timeout 30m ./e2e/

# The whole suite with the fast path library off (DROIDROOT_FASTPATH=0):
# every path call goes to the tracer, as before the library.
test-e2e-nofastpath: build
	DROIDROOT_FASTPATH=0 DROIDROOT_BIN=$(CURDIR)/bin/droidroot $(GO) test -count=1 -timeout 30m ./e2e/

# The whole suite with droidroot (and its guests) under Android 12's and
# Android 16's app seccomp policy (--android-policy, see docs/android.md).
test-e2e-android: build
	DROIDROOT_ANDROID_POLICY=12 DROIDROOT_BIN=$(CURDIR)/bin/droidroot $(GO) test -count=1 -timeout 30m ./e2e/
	DROIDROOT_ANDROID_POLICY=16 DROIDROOT_BIN=$(CURDIR)/bin/droidroot $(GO) test -count=1 -timeout 30m ./e2e/

test-arm64:
	test/arm64/run.sh

clean:
	rm -rf bin

# ---------------------------------------------------------------------------
# csrc/ holds what droidroot's freestanding C programs (the loader, drbench) share:
# the raw syscalls and syscall numbers of each architecture (arch-*.h, found
# with -Icsrc) and the start code (start-*.S: _start, with the loader's entry
# and dr_jump under -DDR_LOADER, else dr_main's entry and dr_thread).
# ---------------------------------------------------------------------------

CSRC_CFLAGS := -Icsrc
CSRC_SRCS := $(wildcard csrc/*.h) csrc/start-x86_64.S csrc/start-aarch64.S
CSRC_START_amd64 := csrc/start-x86_64.S
CSRC_START_arm64 := csrc/start-aarch64.S

# ---------------------------------------------------------------------------
# BEGIN loader section (owner: loader/; see loader/loader.go for the protocol)
#
# The loader is a tiny freestanding static ELF per architecture. The binaries in
# loader/bin are committed (embedded with //go:embed), so `go build` needs no C
# toolchain; rebuild them with `make loader` after changing loader/script.h,
# loader/csrc/* or csrc/*, and commit the result.
#
#   make loader            both architectures, every variant
#   make loader-amd64      loader/bin/loader-amd64{,-1,-2} (gcc)
#   make loader-arm64      loader/bin/loader-arm64{,-1,-2} (aarch64-linux-gnu-gcc)
#   make loader-check      fail if loader/bin differs from a fresh build
#   make loader-selftest LOADER_SELFTEST_DIR=DIR
#                          test-only builds (DIR/loader-selftest-{amd64,arm64})
#                          used by loader tests that run without a tracer
# ---------------------------------------------------------------------------

LOADER_CC_amd64    ?= gcc
LOADER_CC_arm64    ?= aarch64-linux-gnu-gcc
LOADER_STRIP_amd64 ?= strip
LOADER_STRIP_arm64 ?= aarch64-linux-gnu-strip

# Variant 0 at 128 GiB: clear of non-PIE programs (0x400000), of the kernel's PIE and mmap
# bases, and below the 512 GiB top of a 39-bit arm64 address space; its scratch area
# (script.h) 4 GiB below it. A droidroot nested in droidroot runs the first variant whose
# addresses are free in its own process (loader.Variants), so variants 1 and 2 are linked
# 8 and 16 GiB lower: three sessions deep, each loader and scratch area beside the others.
LOADER_ADDRESS_0 := 0x2000000000
LOADER_SCRATCH_0 := 0x1f00000000
LOADER_ADDRESS_1 := 0x1e00000000
LOADER_SCRATCH_1 := 0x1d00000000
LOADER_ADDRESS_2 := 0x1c00000000
LOADER_SCRATCH_2 := 0x1b00000000
LOADER_VARIANTS := 1 2

LOADER_CFLAGS := -Os -std=gnu11 -Wall -Wextra \
	-ffreestanding -fno-builtin -fno-stack-protector -fno-tree-loop-distribute-patterns \
	-fno-asynchronous-unwind-tables -fno-unwind-tables -fvisibility=hidden \
	-ffunction-sections -mgeneral-regs-only
# x86_64's small code model without PIC assumes code below 2 GiB: compile the code
# position-independent (rip-relative) and link it at the fixed address anyway.
LOADER_CFLAGS_amd64 := -fpie
LOADER_CFLAGS_arm64 := -fno-pie -mbranch-protection=none
LOADER_LDFLAGS := -nostdlib -static -no-pie \
	-Wl,--gc-sections -Wl,--build-id=none -Wl,-z,noexecstack -Wl,-z,norelro \
	-Wl,-z,noseparate-code

LOADER_SRCS := loader/script.h loader/csrc/loader.c $(CSRC_SRCS)
LOADER_SELFTEST_DIR ?= /tmp/droidroot-loader-selftest

.PHONY: loader loader-amd64 loader-arm64 loader-check
.PHONY: loader-selftest loader-selftest-amd64 loader-selftest-arm64
loader: loader-amd64 loader-arm64
loader-amd64: loader/bin/loader-amd64 $(LOADER_VARIANTS:%=loader/bin/loader-amd64-%)
loader-arm64: loader/bin/loader-arm64 $(LOADER_VARIANTS:%=loader/bin/loader-arm64-%)

# $(call loader_link,arch,output,extra flags,extra sources[,variant])
define loader_link
	@mkdir -p $(dir $(2))
	$(LOADER_CC_$(1)) $(LOADER_CFLAGS) $(LOADER_CFLAGS_$(1)) $(CSRC_CFLAGS) -DDR_LOADER $(3) \
		-DDR_SCRATCH_ADDR=$(LOADER_SCRATCH_$(or $(5),0))ULL \
		$(LOADER_LDFLAGS) -Wl,-Ttext-segment=$(LOADER_ADDRESS_$(or $(5),0)) \
		-o $(2) $(CSRC_START_$(1)) loader/csrc/loader.c $(4) -lgcc
	$(LOADER_STRIP_$(1)) --strip-all -R .comment $(2)
endef

loader/bin/loader-%: $(LOADER_SRCS)
	$(call loader_link,$*,$@,,)

# The nested variants, here and (for loader-check) in LOADER_SELFTEST_DIR.
define loader_variant
loader/bin/loader-$(1)-$(2) $$(LOADER_SELFTEST_DIR)/loader-$(1)-$(2): $$(LOADER_SRCS)
	$$(call loader_link,$(1),$$@,,,$(2))
endef
$(foreach a,amd64 arm64,$(foreach v,$(LOADER_VARIANTS),$(eval $(call loader_variant,$(a),$(v)))))

# Check that the committed loader/bin files match the sources (same toolchain).
loader-check:
	@d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && \
	for a in amd64 $(LOADER_VARIANTS:%=amd64-%) arm64 $(LOADER_VARIANTS:%=arm64-%); do \
		$(MAKE) -s --no-print-directory LOADER_SELFTEST_DIR="$$d" "$$d/loader-$$a" >/dev/null || exit 1; \
		cmp loader/bin/loader-$$a "$$d/loader-$$a" || { echo "loader/bin/loader-$$a is stale: run make loader"; exit 1; }; \
	done; echo "loader binaries up to date"

loader-selftest: loader-selftest-amd64 loader-selftest-arm64
loader-selftest-amd64: $(LOADER_SELFTEST_DIR)/loader-selftest-amd64
loader-selftest-arm64: $(LOADER_SELFTEST_DIR)/loader-selftest-arm64

$(LOADER_SELFTEST_DIR)/loader-selftest-%: $(LOADER_SRCS) loader/csrc/selftest.c
	$(call loader_link,$*,$@,-DDR_SELFTEST,loader/csrc/selftest.c)

# A fresh build of the shipped loader elsewhere (for loader-check).
$(LOADER_SELFTEST_DIR)/loader-%: $(LOADER_SRCS)
	$(call loader_link,$*,$@,,)

# END loader section
# ---------------------------------------------------------------------------

# ---------------------------------------------------------------------------
# BEGIN bench section (owner: bench/; see bench/csrc/drbench.c for the protocol)
#
# drbench is the freestanding guest program of `droidroot bench`, one per
# architecture, committed in bench/bin and embedded (go:embed) like the loader.
#
#   make drbench           both architectures
#   make drbench-check     fail if bench/bin differs from a fresh build
# ---------------------------------------------------------------------------

DRBENCH_SRCS := bench/csrc/drbench.c $(CSRC_SRCS)
DRBENCH_CFLAGS := -O2 -std=gnu11 -Wall -Wextra \
	-ffreestanding -fno-builtin -fno-stack-protector -fno-tree-loop-distribute-patterns \
	-fno-asynchronous-unwind-tables -fno-unwind-tables -fvisibility=hidden \
	-ffunction-sections -mgeneral-regs-only
# arm64: inline atomics (the outline ones need getauxval from a libc).
DRBENCH_CFLAGS_arm64 := -mno-outline-atomics
DRBENCH_LDFLAGS := -nostdlib -static -no-pie -Wl,--gc-sections -Wl,--build-id=none \
	-Wl,-z,noexecstack -Wl,-z,norelro

# drbench-libc is the same program built as a dynamic glibc program (-DDR_LIBC) whose
# calls go through libc's syscall(): the bench's fast path section runs it.
DRBENCH_LIBC_CFLAGS := -O2 -std=gnu11 -Wall -Wextra -DDR_LIBC -fno-stack-protector \
	-fno-tree-loop-distribute-patterns -fno-asynchronous-unwind-tables -ffile-prefix-map=$(CURDIR)=.
DRBENCH_LIBC_LDFLAGS := -Wl,--build-id=none -Wl,-z,noexecstack -Wl,--hash-style=both

.PHONY: drbench drbench-check
drbench: bench/bin/drbench-amd64 bench/bin/drbench-arm64 bench/bin/drbench-libc-amd64 bench/bin/drbench-libc-arm64

# $(call drbench_libc_link,arch,output)
define drbench_libc_link
	@mkdir -p $(dir $(2))
	$(LOADER_CC_$(1)) $(DRBENCH_LIBC_CFLAGS) $(FASTPATH_CFLAGS_$(1)) $(CSRC_CFLAGS) $(DRBENCH_LIBC_LDFLAGS) \
		-o $(2) bench/csrc/drbench.c
	$(LOADER_STRIP_$(1)) --strip-all -R .comment $(2)
endef

bench/bin/drbench-libc-%: $(DRBENCH_SRCS)
	$(call drbench_libc_link,$*,$@)

# $(call drbench_link,arch,output)
define drbench_link
	@mkdir -p $(dir $(2))
	$(LOADER_CC_$(1)) $(DRBENCH_CFLAGS) $(LOADER_CFLAGS_$(1)) $(DRBENCH_CFLAGS_$(1)) $(CSRC_CFLAGS) \
		$(DRBENCH_LDFLAGS) -o $(2) $(CSRC_START_$(1)) bench/csrc/drbench.c -lgcc
	$(LOADER_STRIP_$(1)) --strip-all -R .comment $(2)
endef

bench/bin/drbench-%: $(DRBENCH_SRCS)
	$(call drbench_link,$*,$@)

drbench-check:
	@d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && \
	for a in amd64 arm64; do \
		$(MAKE) -s --no-print-directory DRBENCH_CHECK_DIR="$$d" "$$d/drbench-$$a" >/dev/null || exit 1; \
		cmp bench/bin/drbench-$$a "$$d/drbench-$$a" || { echo "bench/bin/drbench-$$a is stale: run make drbench"; exit 1; }; \
		$(MAKE) -s --no-print-directory DRBENCH_CHECK_DIR="$$d" "$$d/drbench-libc-$$a" >/dev/null || exit 1; \
		cmp bench/bin/drbench-libc-$$a "$$d/drbench-libc-$$a" || { echo "bench/bin/drbench-libc-$$a is stale: run make drbench"; exit 1; }; \
	done; echo "drbench binaries up to date"

$(DRBENCH_CHECK_DIR)/drbench-libc-%: $(DRBENCH_SRCS)
	$(call drbench_libc_link,$*,$@)

$(DRBENCH_CHECK_DIR)/drbench-%: $(DRBENCH_SRCS)
	$(call drbench_link,$*,$@)

# END bench section
# ---------------------------------------------------------------------------

# ---------------------------------------------------------------------------
# BEGIN fastpath section (owner: fastpath/; see fastpath/csrc/fastpath.c)
#
# The fast path library is a small shared object per architecture that ld.so
# preloads into guest processes. It links against the guest's libc.so.6 and
# may import only public symbols no newer than GLIBC_2.17 (fastpath-check
# verifies it). Its trampoline page sits alone in a 64 KiB-aligned block of
# the file, so the library can map it on 4, 16 and 64 KiB page kernels.
#
#   make fastpath          both architectures (fastpath/bin, committed)
#   make fastpath-check    fail if fastpath/bin differs from a fresh build, or
#                          imports a symbol newer than GLIBC_2.17
# ---------------------------------------------------------------------------

FASTPATH_SRCS := fastpath/csrc/fastpath.c fastpath/csrc/waitv.c fastpath/csrc/tramp-x86_64.S fastpath/csrc/tramp-aarch64.S $(CSRC_SRCS)
FASTPATH_CFLAGS := -O2 -std=gnu11 -Wall -Wextra -fPIC -shared -fno-stack-protector \
	-fno-tree-loop-distribute-patterns -fvisibility=hidden -fno-plt \
	-fno-asynchronous-unwind-tables -ffile-prefix-map=$(CURDIR)=.
FASTPATH_CFLAGS_arm64 := -mno-outline-atomics
FASTPATH_LDFLAGS := -Wl,-z,max-page-size=65536 -Wl,-z,noseparate-code -Wl,-z,noexecstack -Wl,-z,now -Wl,--build-id=sha1 \
	-Wl,--hash-style=both -Wl,-soname,libdroidroot-fastpath.so
FASTPATH_TRAMP_amd64 := fastpath/csrc/tramp-x86_64.S
FASTPATH_TRAMP_arm64 := fastpath/csrc/tramp-aarch64.S

.PHONY: fastpath fastpath-check
fastpath: fastpath/bin/libdroidroot-fastpath-amd64.so fastpath/bin/libdroidroot-fastpath-arm64.so

# $(call fastpath_link,arch,output)
define fastpath_link
	@mkdir -p $(dir $(2))
	$(LOADER_CC_$(1)) $(FASTPATH_CFLAGS) $(FASTPATH_CFLAGS_$(1)) $(CSRC_CFLAGS) $(FASTPATH_LDFLAGS) \
		-o $(2) fastpath/csrc/fastpath.c $(FASTPATH_TRAMP_$(1))
	$(LOADER_STRIP_$(1)) --strip-unneeded -R .comment $(2)
endef

fastpath/bin/libdroidroot-fastpath-%.so: $(FASTPATH_SRCS)
	$(call fastpath_link,$*,$@)

fastpath-check:
	@d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && \
	for a in amd64 arm64; do \
		$(MAKE) -s --no-print-directory FASTPATH_CHECK_DIR="$$d" "$$d/libdroidroot-fastpath-$$a.so" >/dev/null || exit 1; \
		cmp fastpath/bin/libdroidroot-fastpath-$$a.so "$$d/libdroidroot-fastpath-$$a.so" || { echo "fastpath/bin/libdroidroot-fastpath-$$a.so is stale: run make fastpath"; exit 1; }; \
		bad=$$(objdump -T fastpath/bin/libdroidroot-fastpath-$$a.so | awk '/GLIBC_/ { for (i = 1; i <= NF; i++) if ($$i ~ /GLIBC_/) { v = $$i; gsub(/[()]/, "", v); split(substr(v, 7), p, "."); if (p[1] > 2 || (p[1] == 2 && p[2] > 17)) print v, $$NF } }'); \
		[ -z "$$bad" ] || { echo "libdroidroot-fastpath-$$a.so imports symbols newer than GLIBC_2.17: $$bad"; exit 1; }; \
	done; echo "fastpath libraries up to date, imports no newer than GLIBC_2.17"

$(FASTPATH_CHECK_DIR)/libdroidroot-fastpath-%.so: $(FASTPATH_SRCS)
	$(call fastpath_link,$*,$@)

# END fastpath section
# ---------------------------------------------------------------------------
