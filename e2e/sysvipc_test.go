//go:build linux

package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// ipcProgs returns a guest (the busybox rootfs) in which the probes of test/progs named in names
// are at /mnt/b2/NAME (static) and /mnt/b2/NAME.dyn (dynamic): compiled now with the host's gcc
// (the rootfs has the host's glibc), or, without gcc (the arm64 VM), taken from the rootfs's
// /progs where its recipe compiled them.
func ipcProgs(t *testing.T, names ...string) guest {
	t.Helper()
	g := busyboxGuest(t)
	dir := t.TempDir()
	gcc, err := exec.LookPath("gcc")
	for _, name := range names {
		for _, v := range []struct{ suffix, flag string }{{"", "-static"}, {".dyn", ""}} {
			out := filepath.Join(dir, name+v.suffix)
			if err == nil {
				args := []string{"-O2", "-g0", "-Wall", "-Wextra", "-Werror", "-pthread", "-o", out, repoPath(t, "test/progs/"+name+".c")}
				if v.flag != "" {
					args = append(args, v.flag)
				}
				if b, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
					t.Fatalf("gcc %s: %v\n%s", name, err, b)
				}
				continue
			}
			src := filepath.Join(g.Root, "progs", name+v.suffix)
			if _, err := os.Stat(src); err != nil {
				missing(t, "no gcc and no %s in the rootfs (rebuild it with test/mkrootfs.sh busybox)", src)
			}
			copyTree(t, src, out)
		}
	}
	g.Binds = append(g.Binds, dir+":/mnt/b2")
	return g
}

// withSysvipc runs cmd in g under droidroot --sysvipc.
func withSysvipc(t testing.TB, g guest, stdin string, cmd ...string) result {
	t.Helper()
	argv := droidrootArgs(droidrootBin(t), g, cmd...)
	argv = append([]string{argv[0], argv[1], "--sysvipc"}, argv[2:]...)
	return run(t, stdin, argv...)
}

// TestSysvIPC: semaphores (errnos, a producer/consumer over shared memory with blocking semop,
// SEM_UNDO at exit, IPC_RMID waking a sleeper with EIDRM, EINTR from a handled signal and from
// a stop, an ignored SIGCHLD not ending the wait) and shared memory across fork (nattch,
// deferred IPC_RMID, shmdt) and message queues (type selection, blocked receivers and senders,
// a stopped receiver sleeping on, EIDRM),
// answered by droidroot --sysvipc, must print what the kernel prints in a
// real chroot; and the calls must really be answered by the tracer.
func TestSysvIPC(t *testing.T) {
	needRoot(t)
	g := ipcProgs(t, "sysvipc")
	for _, prog := range []string{"/mnt/b2/sysvipc", "/mnt/b2/sysvipc.dyn"} {
		t.Run(filepath.Base(prog), func(t *testing.T) {
			want := viaChroot(t, g, "", prog)
			if want.Code != 0 || want.Stderr != "" {
				t.Fatalf("native run failed: %s", want)
			}
			got := withSysvipc(t, g, "", prog)
			if got.Code != 0 || got.Stdout != want.Stdout || got.Stderr != "" {
				t.Errorf("droidroot --sysvipc:\n%s\nwant (the kernel's):\n%s", got, want)
			}
			if w := viaChroot(t, g, "", prog, "where"); w.Stdout != "kernel\n" {
				t.Errorf("natively the set is not in /proc/sysvipc/sem: %s", w)
			}
			if w := withSysvipc(t, g, "", prog, "where"); w.Stdout != "tracer\n" {
				t.Errorf("with --sysvipc the kernel holds the set (not emulated): %s", w)
			}
		})
	}
}

// TestRobustList: set_robust_list/get_robust_list answered per thread, and robust mutexes whose
// owner is killed (SIGKILL while another process waits), exits, or is a thread that ends, with
// the emulation (DROIDROOT_EMULATE_ROBUST=1: the kernel never sees the lists) and without it,
// must print what a native run prints.
func TestRobustList(t *testing.T) {
	needRoot(t)
	g := ipcProgs(t, "robust")
	for _, prog := range []string{"/mnt/b2/robust", "/mnt/b2/robust.dyn"} {
		t.Run(filepath.Base(prog), func(t *testing.T) {
			want := viaChroot(t, g, "", prog)
			if want.Code != 0 || want.Stderr != "" {
				t.Fatalf("native run failed: %s", want)
			}
			for _, emulate := range []string{"0", "1"} {
				t.Setenv("DROIDROOT_EMULATE_ROBUST", emulate)
				got := viaDroidroot(t, g, "", prog)
				if got.Code != 0 || got.Stdout != want.Stdout || got.Stderr != "" {
					t.Errorf("droidroot, DROIDROOT_EMULATE_ROBUST=%s:\n%s\nwant (native):\n%s", emulate, got, want)
				}
			}
		})
	}
}
