# droidroot top-level Makefile.

.PHONY: all
all: loader

# ---------------------------------------------------------------------------
# BEGIN loader section (owner: loader/; see loader/loader.go for the protocol)
#
# The loader is a tiny freestanding static ELF per architecture. The binaries in
# loader/bin are committed (embedded with //go:embed), so `go build` needs no C
# toolchain; rebuild them with `make loader` after changing loader/script.h or
# loader/csrc/*, and commit the result.
#
#   make loader            both architectures
#   make loader-amd64      loader/bin/loader-amd64 (gcc)
#   make loader-arm64      loader/bin/loader-arm64 (aarch64-linux-gnu-gcc)
#   make loader-check      fail if loader/bin differs from a fresh build
#   make loader-selftest LOADER_SELFTEST_DIR=DIR
#                          test-only builds (DIR/loader-selftest-{amd64,arm64})
#                          used by loader tests that run without a tracer
# ---------------------------------------------------------------------------

LOADER_CC_amd64    ?= gcc
LOADER_CC_arm64    ?= aarch64-linux-gnu-gcc
LOADER_STRIP_amd64 ?= strip
LOADER_STRIP_arm64 ?= aarch64-linux-gnu-strip

# 128 GiB: clear of non-PIE programs (0x400000), of the kernel's PIE and mmap bases,
# and below the 512 GiB top of a 39-bit arm64 address space.
LOADER_ADDRESS := 0x2000000000

LOADER_CFLAGS := -Os -std=gnu11 -Wall -Wextra \
	-ffreestanding -fno-builtin -fno-stack-protector -fno-tree-loop-distribute-patterns \
	-fno-asynchronous-unwind-tables -fno-unwind-tables -fvisibility=hidden \
	-ffunction-sections -mgeneral-regs-only
# x86_64's small code model without PIC assumes code below 2 GiB: compile the code
# position-independent (rip-relative) and link it at the fixed address anyway.
LOADER_CFLAGS_amd64 := -fpie
LOADER_CFLAGS_arm64 := -fno-pie -mbranch-protection=none
LOADER_LDFLAGS := -nostdlib -static -no-pie -Wl,-Ttext-segment=$(LOADER_ADDRESS) \
	-Wl,--gc-sections -Wl,--build-id=none -Wl,-z,noexecstack -Wl,-z,norelro \
	-Wl,-z,noseparate-code

LOADER_SRCS := loader/script.h $(wildcard loader/csrc/*.h) loader/csrc/loader.c \
	loader/csrc/start-x86_64.S loader/csrc/start-aarch64.S
LOADER_START_amd64 := loader/csrc/start-x86_64.S
LOADER_START_arm64 := loader/csrc/start-aarch64.S
LOADER_SELFTEST_DIR ?= /tmp/droidroot-loader-selftest

.PHONY: loader loader-amd64 loader-arm64 loader-check
.PHONY: loader-selftest loader-selftest-amd64 loader-selftest-arm64
loader: loader-amd64 loader-arm64
loader-amd64: loader/bin/loader-amd64
loader-arm64: loader/bin/loader-arm64

# $(call loader_link,arch,output,extra flags,extra sources)
define loader_link
	@mkdir -p $(dir $(2))
	$(LOADER_CC_$(1)) $(LOADER_CFLAGS) $(LOADER_CFLAGS_$(1)) $(3) $(LOADER_LDFLAGS) \
		-o $(2) $(LOADER_START_$(1)) loader/csrc/loader.c $(4) -lgcc
	$(LOADER_STRIP_$(1)) --strip-all -R .comment $(2)
endef

loader/bin/loader-%: $(LOADER_SRCS)
	$(call loader_link,$*,$@,,)

# Check that the committed loader/bin files match the sources (same toolchain).
loader-check:
	@d=$$(mktemp -d) && trap 'rm -rf "$$d"' EXIT && \
	for a in amd64 arm64; do \
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
