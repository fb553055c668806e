// Package bench measures what a trap costs on the device at hand: per mechanism
// (ptrace, seccomp user notification, in-process SIGSYS, ...), per call (native,
// under droidroot and under other tracers), as throughput of several threads, and for
// whole programs. It is the engine of `droidroot bench`.
//
// The calls are made by drbench, a freestanding static program (bench/csrc, with the
// arch headers and start code of csrc/ it shares with the loader; one
// per architecture, embedded from bench/bin), so the measurements need no compiler
// and no rootfs on the device, and the measuring program cannot die of the seccomp
// SIGSYS a Go program cannot take. The Go side prepares a work tree, runs drbench
// natively, under droidroot and under --compare commands, and is itself the tracer or
// the notification supervisor for the mechanism rows.
//
// After changing bench/csrc or csrc run "make drbench" at the repository root and
// commit bench/bin (after changing csrc, "make loader" and loader/bin too).
package bench

import (
	_ "embed" // the prebuilt drbench programs
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

//go:embed bin/drbench-amd64
var drbenchAmd64 []byte

//go:embed bin/drbench-arm64
var drbenchArm64 []byte

//go:embed bin/drbench-libc-amd64
var drbenchLibcAmd64 []byte

//go:embed bin/drbench-libc-arm64
var drbenchLibcArm64 []byte

// LibcProgram returns drbench built as a dynamic glibc program for goarch
// (its calls go through libc's syscall(), which droidroot's fast path
// library serves; it needs glibc 2.34 or newer where it runs).
func LibcProgram(goarch string) ([]byte, error) {
	switch goarch {
	case "amd64":
		return drbenchLibcAmd64, nil
	case "arm64":
		return drbenchLibcArm64, nil
	}
	return nil, fmt.Errorf("bench: no drbench-libc program for %s", goarch)
}

// Program returns the drbench executable for goarch (amd64 or arm64).
func Program(goarch string) ([]byte, error) {
	switch goarch {
	case "amd64":
		return drbenchAmd64, nil
	case "arm64":
		return drbenchArm64, nil
	}
	return nil, fmt.Errorf("bench: no drbench program for %s", goarch)
}

// Tree file counts: the tar and find rows walk TreeDirs directories of TreeFiles files each.
const (
	TreeDirs  = 20
	TreeFiles = 50
)

// PrepareTree writes drbench for goarch into dir and makes the tree its calls use:
// dir/d/e/e/p/dir/{file, link -> file}, dir/scratch and dir/files (the tar/find tree).
// It returns the path of the program.
func PrepareTree(dir, goarch string) (string, error) {
	prog, err := Program(goarch)
	if err != nil {
		return "", err
	}
	deep := filepath.Join(dir, "d", "e", "e", "p", "dir")
	for _, d := range []string{deep, filepath.Join(dir, "scratch")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
	}
	if err := os.WriteFile(filepath.Join(deep, "file"), []byte("drbench\n"), 0o644); err != nil {
		return "", err
	}
	if err := os.Symlink("file", filepath.Join(deep, "link")); err != nil && !os.IsExist(err) {
		return "", err
	}
	block := make([]byte, 1024)
	for i := range block {
		block[i] = byte('a' + i%26)
	}
	for d := 0; d < TreeDirs; d++ {
		sub := filepath.Join(dir, "files", "dir"+strconv.Itoa(d))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return "", err
		}
		for f := 0; f < TreeFiles; f++ {
			if err := os.WriteFile(filepath.Join(sub, "file"+strconv.Itoa(f)), block, 0o644); err != nil {
				return "", err
			}
		}
	}
	path := filepath.Join(dir, "drbench")
	if err := os.WriteFile(path, prog, 0o755); err != nil {
		return "", err
	}
	return path, nil
}
