//go:build linux

// Package e2e holds droidroot's end-to-end tests: they run the droidroot binary on real test
// rootfses and compare what guest programs see with the ground truth, a real chroot with real
// bind mounts (test/oracle/chroot.sh).
//
// Inputs, each found through an environment variable or a default:
//
//	DROIDROOT_BIN              the droidroot binary (default: bin/droidroot of the repository)
//	DROIDROOT_CACHE            rootfs cache directory (default /var/cache/droidroot)
//	DROIDROOT_ROOTFS_BUSYBOX   the busybox rootfs (default $DROIDROOT_CACHE/busybox)
//	DROIDROOT_ROOTFS_DEBIAN    the debian rootfs (default $DROIDROOT_CACHE/debian)
//	DROIDROOT_E2E_REQUIRED=1   a missing input fails the test instead of skipping it (CI sets it)
//	DROIDROOT_E2E_TIMEOUT      time limit of each command (default 60s)
//	DROIDROOT_ORACLE_OUT       a directory where the oracle tests save their transcripts (and
//	                           TestOracleRandom its op sequences)
//	DROIDROOT_ORACLE_SEED=N    TestOracleRandom runs the sequence of seed N only (a failure's),
//	DROIDROOT_ORACLE_SEEDS=K   K seeds (8 by default, from 1 or from N), of
//	DROIDROOT_ORACLE_OPS=L     L ops each (250 by default); DROIDROOT_ORACLE_FILE=F runs the ops
//	                           file F instead (a failing sequence cut down)
//	DROIDROOT_PYSUITE          CPython test modules for TestPythonSuite to run instead of its
//	                           own list (names separated by spaces or commas: "test_os
//	                           test_signal"; commas pass through DROIDROOT_ARM64_APPEND)
//	DROIDROOT_ANDROID_POLICY   run every droidroot command under this Android release's app
//	                           seccomp policy (make test-e2e-android: 12, then 16); the
//	                           TestAndroid* tests pass --android-policy themselves
//
// Test-only switches read by droidroot itself (set in a test's command line, not by CI):
//
//	DROIDROOT_EMULATE_SETID=1  answer set*id, setgroups and get*id in the tracer without -0/-i,
//	                           starting from the real ids (what Android needs; TestIdentitySetID)
//	DROIDROOT_YAMA_FILE=F      the guest ptrace emulation reads Yama's ptrace_scope from F instead
//	                           of /proc/sys/kernel/yama/ptrace_scope (a missing F: no Yama), so its
//	                           rules run on a kernel without Yama (TestPtraceYama)
//	DROIDROOT_EMULATE_ROBUST=1 emulate set_robust_list/get_robust_list as under the Android
//	                           policy (TestRobustList sets it itself)
//	DROIDROOT_EMULATE_AT2=1    droidroot answers faccessat2, fchmodat2, openat2 and close_range
//	                           itself with allowed calls, as it must under Android's policy
//	                           (emul.Config.EmulateAt2), so the emulation runs on plain Linux
//	                           and is compared with the kernel (TestEmulateAt2,
//	                           TestOracleOpenat2Emulated)
//	DROIDROOT_FAIL_LINK=1      every real link()/linkat() fails with EPERM in droidroot's
//	                           handling, as on Android app storage (TestLink2Symlink)
//	DROIDROOT_FASTPATH_REMAP=0 the fast path library maps its trampoline page from an open of
//	                           its file, as before Linux 5.13 (TestFastPathTrampolinePage)
//
// Build the rootfses with test/mkrootfs.sh busybox and test/mkrootfs.sh debian. The oracle
// tests need root (mount namespaces, chroot). Every command runs with a 60 s timeout
// (TestPythonSuite's with 3 minutes). To see
// how proot fares on the same tests: DROIDROOT_BIN=$PWD/test/proot-as-droidroot.sh.
package e2e
