// Package smoke is the arm64 VM harness's own test: it proves, inside the qemu-system-aarch64
// guest that test/arm64/run.sh boots, that the guest is what droidroot's arm64 tests need (an
// aarch64 kernel with ptrace, seccomp filters and SECCOMP_RET_TRACE, and a test rootfs whose
// three link modes run), before droidroot's own test binaries are trusted to mean anything.
//
// The tests are built for linux/arm64 only (smoke_test.go); on other architectures the package
// has no tests, so `go test ./...` on an x86_64 host just lists it.
package smoke
