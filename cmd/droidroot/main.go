// Command droidroot runs a command tree inside a guest Linux rootfs with
// bind mounts, translating every path the guest uses, like proot. Started
// as "proot" or "libproot.so", or with a proot option first, it accepts
// termux proot's command line unchanged.
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/droidroot/droidroot/emul"
	"github.com/droidroot/droidroot/fastpath"
	"github.com/droidroot/droidroot/loader"
	"github.com/droidroot/droidroot/seccomp"
	"github.com/droidroot/droidroot/tmpdir"
	"github.com/droidroot/droidroot/tracer"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// init keeps stage 2 (droidroot re-executed to install the filter and exec
// the guest, tracer.Stage2) on the startup thread, the one the tracer
// seized: init functions run there, and main then too. Without it the
// goroutine may resume on a thread the runtime made before the seize after
// its blocking read of the filter, install the filter there and exec from a
// thread no tracer watches (the kernel fails the traced execve with
// ENOSYS), or move between the install and the exec.
func init() {
	if filepath.Base(os.Args[0]) == tracer.Stage2Name {
		runtime.LockOSThread()
	}
}

func main() {
	base := filepath.Base(os.Args[0])
	if base == tracer.Stage2Name {
		tracer.Stage2()
		return
	}
	if base == "proot" || base == "libproot.so" || (len(os.Args) > 1 && IsProotOption(os.Args[1])) {
		os.Exit(prootMain(os.Args[1:]))
	}
	app := &cli.App{
		Name:  "droidroot",
		Usage: "run a command tree in a guest Linux rootfs with bind mounts (a proot replacement)",
		Commands: []*cli.Command{
			{
				Name:            "run",
				Usage:           "run CMD in the guest rootfs; options are proot's (-r ROOT, -b HOST[:GUEST], -w CWD, ...)",
				ArgsUsage:       "[options] [--] [CMD [ARGS...]]",
				SkipFlagParsing: true,
				Action: func(c *cli.Context) error {
					os.Exit(prootMain(c.Args().Slice()))
					return nil
				},
			},
			benchCommand,
			{
				Name:  "version",
				Usage: "print the version",
				Action: func(c *cli.Context) error {
					fmt.Printf("droidroot %s (%s/%s)\n", version, runtime.GOOS, runtime.GOARCH)
					return nil
				},
			},
			{
				Name:  "debug",
				Usage: "tools for debugging droidroot on a device",
				Subcommands: []*cli.Command{{
					Name:            "floor",
					Usage:           "run like `run`, with getppid traced by a do-nothing handler (register get and set): the cost floor of one traced call",
					ArgsUsage:       "[options] [--] CMD [ARGS...]",
					SkipFlagParsing: true,
					Action: func(c *cli.Context) error {
						os.Exit(floorMain(c.Args().Slice()))
						return nil
					},
				}, {
					Name:      "filter",
					Usage:     "print the handler layers per syscall, the traced syscalls per ABI and the seccomp program of a run with the given options",
					ArgsUsage: "[--arch A] [--trampoline ADDR] [-- RUN OPTIONS...]",
					Flags: []cli.Flag{
						&cli.StringFlag{Name: "arch", Value: runtime.GOARCH, Usage: "host architecture: amd64 or arm64"},
						&cli.StringFlag{Name: "trampoline", Value: "", Usage: "trampoline page address (default: a session's random one when the fast path is on, else none; 0: none)"},
					},
					Action: debugFilter,
				}},
			},
		},
	}
	if err := app.Run(os.Args); err != nil {
		fmt.Fprintf(os.Stderr, "droidroot: %v\n", err)
		os.Exit(1)
	}
}

func debugFilter(c *cli.Context) error {
	goarch := c.String("arch")
	if goarch != "amd64" && goarch != "arm64" {
		return fmt.Errorf("--arch %q: want amd64 or arm64", goarch)
	}
	var t uint64
	if v := c.String("trampoline"); v != "" {
		var err error
		if t, err = strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 64); err != nil {
			return fmt.Errorf("--trampoline %q: want a hex address", v)
		}
	}
	// The run's own options (proot's grammar, no command needed).
	o, err := ParseProot(c.Args().Slice())
	if err != nil {
		return err
	}
	android, _, err := androidPolicy(o)
	if err != nil {
		return err
	}
	tmpDir := tmpDirOf()
	// The fast path as a run would have it (its binds do not change the filter).
	var fp *emul.FastPath
	if fastPathOn(o, false) {
		fp = &emul.FastPath{Lib: fastpath.Config{Root: o.Rootfs}, Dir: tmpDir}
		if c.String("trampoline") == "" {
			t = fastpath.ChooseTrampoline()
		}
	}
	sessDir, _ := tmpdir.Dir(tmpDir)
	em, code := emulation(o, tmpDir, sessDir, android, fp)
	for _, f := range cleanups {
		f()
	}
	if em == nil {
		os.Exit(code)
	}
	fmt.Print(describeLayers(em))
	fmt.Println()
	pol := tracer.Policy(goarch, em.Table, emul.Classes())
	pol.Trampoline = t
	// The loader a run extracts (the first variant, outside droidroot).
	if bin, err := loader.Binary(goarch, 0); err == nil {
		if err := tracer.AllowLoader(&pol, goarch, bytes.NewReader(bin)); err != nil {
			return err
		}
	}
	prog, err := seccomp.Build(goarch, pol)
	if err != nil {
		return err
	}
	fmt.Print(seccomp.Describe(goarch, pol))
	fmt.Println()
	fmt.Print(seccomp.Disassemble(prog))
	return nil
}

// describeLayers lists each syscall with a handler and the layers that made
// it, in the order applied (the last replacing layer's handler runs).
func describeLayers(em *emul.Emulation) string {
	layers := em.Layers()
	names := make([]string, 0, len(layers))
	for name := range layers {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "handler layers (%d syscalls):\n", len(names))
	for _, name := range names {
		fmt.Fprintf(&b, "  %-20s %s\n", name, strings.Join(layers[name], " > "))
	}
	return b.String()
}
