package main

import (
	"os"

	"github.com/droidroot/droidroot/emul"
	"github.com/droidroot/droidroot/tmpdir"
)

// cleanups run when the guest tree has finished.
var cleanups []func()

// at2Config fills the -k / --kernel-release and the *at2 emulation parts
// of the handler configuration. DROIDROOT_EMULATE_AT2=1 (a test switch)
// turns on the emulation of faccessat2, fchmodat2, openat2 and close_range
// that an Android policy needs. -k's files go into cfg.SessionDir. It
// returns a non-zero status after printing why it cannot.
func at2Config(o *Options, cfg *emul.Config) int {
	if os.Getenv("DROIDROOT_EMULATE_AT2") == "1" {
		cfg.EmulateAt2 = true
	}
	if o.KernelRelease == "" && !o.KernelReleaseSet {
		return 0
	}
	u, err := emul.ParseKernelRelease(o.KernelRelease)
	if err != nil {
		return errorf("%v", err)
	}
	dir, err := tmpdir.Make(cfg.SessionDir, "uts")
	if err != nil {
		return errorf("cannot create the -k files in %s: %v (set PROOT_TMP_DIR to a writable directory)", cfg.SessionDir, err)
	}
	cleanups = append(cleanups, func() { tmpdir.Remove(dir) })
	if err := u.Setup(dir); err != nil {
		return errorf("cannot write the -k files in %s: %v (set PROOT_TMP_DIR to a writable directory)", dir, err)
	}
	cfg.Uname = u
	return 0
}
