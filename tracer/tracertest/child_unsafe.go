package tracertest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/seccomp"
)

// child makes the steps of spec (and, with an oracle spec, first enters
// the oracle's chroot), prints their results as JSON on stdout and returns
// the exit status.
func child(spec, oracle string) int {
	runtime.LockOSThread()
	raw, err := base64.StdEncoding.DecodeString(spec)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tracertest child: %v\n", err)
		return 2
	}
	var steps []wireStep
	if err := json.Unmarshal(raw, &steps); err != nil {
		fmt.Fprintf(os.Stderr, "tracertest child: %v\n", err)
		return 2
	}
	traced := oracle == ""
	if !traced {
		if err := enterOracle(oracle); err != nil {
			fmt.Fprintf(os.Stderr, "tracertest child: oracle: %v\n", err)
			return 2
		}
	}
	if v := os.Getenv(envAndroid); v != "" && traced {
		if err := installAndroid(v); err != nil {
			fmt.Fprintf(os.Stderr, "tracertest child: %v\n", err)
			return 2
		}
	}
	// Every buffer is made before the first step: between the markers the
	// step thread runs no Go code that could make a syscall.
	bufs := make([][6][]byte, len(steps))
	for k, s := range steps {
		for i, a := range s.Args {
			if a.Kind == KindMem {
				b := make([]byte, max(a.Size, len(a.Data), 1))
				copy(b, a.Data)
				bufs[k][i] = b
			}
		}
	}
	// String arrays: the strings, and the pointer arrays (the GC does not
	// move the strings, which strs keeps alive).
	strs := make([][6][][]byte, len(steps))
	ptrs := make([][6][]uintptr, len(steps))
	for k, s := range steps {
		for i, a := range s.Args {
			if a.Kind == KindFprog {
				b := append([]byte(nil), a.Data...)
				strs[k][i] = [][]byte{b}
				ptrs[k][i] = []uintptr{uintptr(len(b) / 8), uintptr(unsafe.Pointer(&b[0]))}
			}
			if a.Kind == KindStrv {
				ptrs[k][i] = make([]uintptr, len(a.Strs)+1)
				for j, str := range a.Strs {
					b := append([]byte(str), 0)
					strs[k][i] = append(strs[k][i], b)
					ptrs[k][i][j] = uintptr(unsafe.Pointer(&b[0]))
				}
			}
		}
	}
	rets := make([]int64, len(steps))
	for k, s := range steps {
		var a [6]uintptr
		for i, arg := range s.Args {
			switch arg.Kind {
			case KindInt:
				a[i] = uintptr(arg.Val)
			case KindMem:
				a[i] = uintptr(unsafe.Pointer(&bufs[k][i][0]))
			case KindRet:
				a[i] = uintptr(rets[arg.Val])
			case KindStrv, KindFprog:
				a[i] = uintptr(unsafe.Pointer(&ptrs[k][i][0]))
			}
		}
		if traced {
			syscall.RawSyscall(unix.SYS_GETPRIORITY, markerMagic, uintptr(k+1), 0)
		}
		r1, _, errno := syscall.Syscall6(uintptr(s.Nr), a[0], a[1], a[2], a[3], a[4], a[5])
		if traced {
			syscall.RawSyscall(unix.SYS_GETPRIORITY, markerMagic, 0, 0)
		}
		if errno != 0 {
			rets[k] = -int64(errno)
		} else {
			rets[k] = int64(r1)
		}
		runtime.KeepAlive(bufs[k])
		runtime.KeepAlive(strs[k])
		runtime.KeepAlive(ptrs[k])
	}
	out := make([]StepResult, len(steps))
	for k, s := range steps {
		out[k].Ret = rets[k]
		for i, a := range s.Args {
			if a.Kind == KindMem {
				if out[k].Mem == nil {
					out[k].Mem = map[int][]byte{}
				}
				out[k].Mem[i] = bufs[k][i][:max(a.Size, len(a.Data))]
			}
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tracertest child: %v\n", err)
		return 2
	}
	if _, err := os.Stdout.Write(b); err != nil {
		return 2
	}
	return 0
}

// enterOracle makes the mounts of the oracle spec in this process's own
// mount namespace (the parent unshared it), chroots and changes directory.
func enterOracle(spec string) error {
	var o wireOracle
	if err := json.Unmarshal([]byte(spec), &o); err != nil {
		return err
	}
	if err := unix.Mount("", "/", "", unix.MS_PRIVATE|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("making / private: %w", err)
	}
	for _, b := range o.Binds {
		if err := unix.Mount(b.Host, o.Root+b.Guest, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s on %s: %w", b.Host, o.Root+b.Guest, err)
		}
	}
	if err := unix.Chroot(o.Root); err != nil {
		return fmt.Errorf("chroot %s: %w", o.Root, err)
	}
	return unix.Chdir(o.Cwd)
}

// installAndroid puts the calling thread (the step thread) under the app
// filter of Android release version.
func installAndroid(version string) error {
	p, err := seccomp.LoadAndroidPolicy(version)
	if err != nil {
		return err
	}
	pol, err := p.Policy(runtime.GOARCH)
	if err != nil {
		return err
	}
	prog, err := seccomp.Build(runtime.GOARCH, pol)
	if err != nil {
		return err
	}
	raw, err := seccomp.Assemble(prog)
	if err != nil {
		return err
	}
	return seccomp.Install(raw, 0)
}
