package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/droidroot/droidroot/bench"
)

// benchCommand is `droidroot bench`: what a trap costs, per mechanism and per call,
// on the device at hand (see docs/bench.md).
var benchCommand = &cli.Command{
	Name:  "bench",
	Usage: "measure trap mechanisms, calls native and under droidroot, threads and whole programs on this device",
	Description: "Runs an embedded measuring program natively, under droidroot (run -r ROOTFS) and under\n" +
		"every --compare command, in interleaved rounds; prints min/median/max and ratios to native.\n" +
		"Progress goes to stderr. See docs/bench.md for what each row means.",
	Flags: []cli.Flag{
		&cli.StringFlag{Name: "rootfs", Aliases: []string{"r"}, Value: "/", Usage: "guest rootfs of the droidroot runs"},
		&cli.BoolFlag{Name: "quick", Usage: "a shorter run (under 20 s) with fewer, shorter samples"},
		&cli.IntFlag{Name: "rounds", Usage: "interleaved rounds (default 3 with --quick, else 5)"},
		&cli.StringSliceFlag{Name: "compare", Usage: "NAME=COMMAND: also run the calls under a proot-like command prefix, e.g. proot='proot -r /'"},
		&cli.StringFlag{Name: "android-policy", Usage: "simulate Android VERSION's app seccomp policy in the droidroot runs (passed as run --android-policy=VERSION)"},
		&cli.BoolFlag{Name: "json", Usage: "print JSON"},
		&cli.BoolFlag{Name: "markdown", Usage: "print Markdown tables"},
	},
	Action: benchMain,
}

func benchMain(c *cli.Context) error {
	if c.NArg() > 0 {
		return fmt.Errorf("bench takes no arguments (got %q); see droidroot bench --help", c.Args().First())
	}
	if c.Bool("json") && c.Bool("markdown") {
		return fmt.Errorf("--json and --markdown exclude each other; give one")
	}
	if c.Int("rounds") < 0 {
		return fmt.Errorf("--rounds %d: give a positive number", c.Int("rounds"))
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cannot find droidroot's own executable: %v", err)
	}
	o := bench.Options{
		Rootfs:        c.String("rootfs"),
		Quick:         c.Bool("quick"),
		Rounds:        c.Int("rounds"),
		AndroidPolicy: c.String("android-policy"),
		Droidroot:     self,
		Version:       version,
		Progress:      os.Stderr,
		TmpDir:        os.Getenv("PROOT_TMP_DIR"),
		Program:       os.Getenv("DROIDROOT_BENCH_PROGRAM"),
	}
	for _, s := range c.StringSlice("compare") {
		cmp, err := bench.ParseCompare(s)
		if err != nil {
			return err
		}
		o.Compares = append(o.Compares, cmp)
	}
	rep, err := bench.Run(o)
	if err != nil {
		return err
	}
	switch {
	case c.Bool("json"):
		return rep.JSON(os.Stdout)
	case c.Bool("markdown"):
		rep.Markdown(os.Stdout)
	default:
		rep.Text(os.Stdout)
	}
	return nil
}
