package emul

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/seccomp"
	"github.com/droidroot/droidroot/tracer"
)

// TestClassification enumerates every number of both native ABIs: each
// name of the table is translated (a handler in the default table),
// refused or harmless, exactly one of them; every other number, above the
// newest included, is answered ENOSYS by the filter; and the calls that
// reach files untranslated are never allowed.
func TestClassification(t *testing.T) {
	tbl := Table(Config{})
	known := map[string]bool{}
	for _, goarch := range []string{"amd64", "arm64"} {
		abi := seccomp.NativeABI(goarch)
		p := tracer.Policy(goarch, tbl, Classes())
		action := func(nr int) seccomp.Action {
			if act, ok := p.Rules[abi][nr]; ok {
				return act
			}
			return p.Default
		}
		counts := map[string]int{}
		for name, nr := range abi.Names {
			known[name] = true
			// A call traced only by argument keeps its class: clone
			// (harmless, but for CLONE_UNTRACED) and the AF_UNIX address
			// calls (translated, but their lengths that name no path).
			h, inTable := tbl[name]
			byArg := inTable && h.TraceIf != nil
			translated := inTable && (!byArg || !harmless[name])
			_, refused := refusals[name]
			classes := 0
			for _, in := range []bool{translated, refused, harmless[name]} {
				if in {
					classes++
				}
			}
			if classes != 1 {
				t.Errorf("%s: %s (%d) is in %d classes (translated %v, refused %v, harmless %v), want 1",
					goarch, name, nr, classes, translated, refused, harmless[name])
			}
			act := action(nr)
			switch e, isErrno := act.Errno(); {
			case translated && !byArg && act != seccomp.TraceEntry && act != seccomp.TraceExit,
				translated && byArg && act != seccomp.Allow,
				refused && (!isErrno || e != refusals[name].errno),
				harmless[name] && act != seccomp.Allow:
				t.Errorf("%s: %s (%d): filter action %v", goarch, name, nr, act)
			}
			switch {
			case translated:
				counts["traced"]++
			case refused:
				counts["refused"]++
			default:
				counts["allowed"]++
			}
		}
		t.Logf("%s: %d numbers: %d traced, %d refused, %d allowed", goarch, len(abi.Names),
			counts["traced"], counts["refused"], counts["allowed"])
		for nr := 0; nr <= 0x1000; nr++ {
			if _, ok := abi.Numbers[nr]; !ok && action(nr) != seccomp.Errno(unix.ENOSYS) {
				t.Errorf("%s: unknown number %d: %v, want errno ENOSYS", goarch, nr, action(nr))
			}
		}
		if p.Default != seccomp.Errno(unix.ENOSYS) {
			t.Errorf("%s: default %v, want errno ENOSYS", goarch, p.Default)
		}
		for name, want := range map[string]seccomp.Action{
			"getxattrat": seccomp.Errno(unix.ENOSYS), "setxattrat": seccomp.Errno(unix.ENOSYS),
			"open_tree": seccomp.Errno(unix.EPERM), "open_tree_attr": seccomp.Errno(unix.EPERM),
			"fsopen": seccomp.Errno(unix.EPERM), "mount": seccomp.Errno(unix.EPERM),
			"io_uring_setup": seccomp.Errno(unix.ENOSYS), "clone3": seccomp.Errno(unix.ENOSYS),
			"read": seccomp.Allow, "mmap": seccomp.Allow, "clone": seccomp.Allow, "futex": seccomp.Allow,
			"rt_sigreturn": seccomp.Allow, "exit_group": seccomp.Allow, "wait4": seccomp.Allow,
			"openat": seccomp.TraceEntry, "execve": seccomp.TraceEntry, // traced (entry or exit)
		} {
			nr, ok := abi.Nr(name)
			if !ok {
				t.Fatalf("%s: no %s", goarch, name)
			}
			if got := action(nr); got != want && !(want == seccomp.TraceEntry && got == seccomp.TraceExit) {
				t.Errorf("%s: %s: %v, want %v", goarch, name, got, want)
			}
		}
		// clone: allowed (forks and threads cost no stop), traced only with
		// CLONE_UNTRACED, which its handler takes out.
		cloneNr, _ := abi.Nr("clone")
		if got, want := p.ArgRules[abi][cloneNr], (seccomp.ArgRule{Arg: 0, Mask: unix.CLONE_UNTRACED, Action: seccomp.TraceEntry}); got != want {
			t.Errorf("%s: clone's argument rule %+v, want %+v", goarch, got, want)
		}
		// bind, connect and sendto: traced only with an address length
		// that can hold an AF_UNIX path (3 to 110 bytes), so send() costs
		// no stop; bind's exit stop renames a long path's socket.
		// recvfrom: only when it asks for the sender's name, which its
		// exit maps.
		for name, want := range map[string]seccomp.ArgRule{
			"bind":     {Arg: 2, Min: 3, Max: 110, Action: seccomp.TraceExit},
			"connect":  {Arg: 2, Min: 3, Max: 110, Action: seccomp.TraceEntry},
			"sendto":   {Arg: 5, Min: 3, Max: 110, Action: seccomp.TraceEntry},
			"recvfrom": {Arg: 4, Mask: 0xffffffff, Action: seccomp.TraceExit},
		} {
			nr, _ := abi.Nr(name)
			if got := p.ArgRules[abi][nr]; got != want {
				t.Errorf("%s: %s's argument rule %+v, want %+v", goarch, name, got, want)
			}
		}
		if len(p.ArgRules[abi]) != 5 {
			t.Errorf("%s: argument rules %v, want clone's, bind's, connect's, sendto's and recvfrom's only", goarch, p.ArgRules[abi])
		}
		// file_getattr and file_setattr (Linux 6.17), not in the tables.
		for _, nr := range []int{468, 469, 1000} {
			if got := action(nr); got != seccomp.Errno(unix.ENOSYS) {
				t.Errorf("%s: %d: %v, want errno ENOSYS", goarch, nr, got)
			}
		}
	}
	for name := range harmless {
		if !known[name] {
			t.Errorf("harmless %s is a syscall of neither native ABI", name)
		}
	}
	for name := range refusals {
		if !known[name] {
			t.Errorf("refused %s is a syscall of neither native ABI", name)
		}
		if a := androidAnswerOf(name); a.errno != refusals[name].errno {
			t.Errorf("%s: Android answers %v, the filter %v", name, a.errno, refusals[name].errno)
		}
	}
}

// TestClassificationLayers checks that the layers only turn harmless or
// refused calls into translated ones: with every option on, each traced
// call is still a known one.
func TestClassificationLayers(t *testing.T) {
	tbl := Table(Config{Link2Symlink: true, LstatLinkSize: true, PortShift: true, HideOwnFiles: true,
		AshmemMemfd: true, Uname: &Uname{}, EmulateAt2: true, SysVIPC: true, EmulateRobustList: true,
		EmulateSetID: true, Identity: &Identity{UID: 4242, GID: 4242}, TmpDir: t.TempDir()})
	for name := range tbl {
		_, refused := refusals[name]
		if _, ok := declarations()[name]; !ok && !harmless[name] && !refused {
			if _, ok := tracer.NativeABI().Nr(name); ok {
				t.Errorf("%s has a handler under an option but no class without it", name)
			}
		}
	}
}
