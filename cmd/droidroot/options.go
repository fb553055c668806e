package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/droidroot/droidroot/seccomp"
)

// Bind is one -b/--bind option: HOST[:GUEST], GUEST defaulting to HOST.
type Bind struct {
	Host, Guest string
	// NoDeref is the trailing "!": a guest symlink at GUEST is not followed.
	NoDeref bool
	// Optional binds (-R and -S's standard set) are skipped silently when
	// HOST does not exist.
	Optional bool
	// Bad says what is wrong with the binding's syntax ("": nothing): an
	// empty HOST or GUEST. Such a binding is reported and left out, as
	// proot does; Spec is then the argument as given.
	Bad, Spec string
}

// Options is a parsed proot command line.
type Options struct {
	Rootfs        string
	Binds         []Bind
	Cwd           string
	KillOnExit    bool
	Verbose       int
	Version, Help bool
	KernelRelease string
	RootID        bool
	ChangeID      string
	Link2Symlink  bool
	SysVIPC       bool
	AshmemMemfd   bool
	HideProot     bool // -H
	PortShift     bool // -p
	LstatSize     bool // -L
	Qemu          string
	StandardR     string // -R
	StandardS     string // -S
	Command       []string

	// KernelReleaseSet: -k was given (its value may be empty, an error).
	KernelReleaseSet bool
	// AndroidPolicy is --android-policy=VERSION ("" if not given).
	AndroidPolicy string
	// NoFastPath is --no-fastpath: every path call goes to the tracer.
	NoFastPath bool
}

// optKind says whether an option takes a value.
type optKind int

const (
	flagOpt optKind = iota
	valueOpt
)

// prootOption is one row of termux proot's option table (src/cli/proot.h),
// in its order: the first row with a name that an argument starts with
// takes it (lookupOption), as proot's parse_config does. Names are exact:
// proot takes no abbreviations.
type prootOption struct {
	names []string // "-r", "--rootfs", ...
	kind  optKind
	set   func(o *Options, v string) error
}

var prootOptions = []prootOption{
	{[]string{"-r", "--rootfs"}, valueOpt, func(o *Options, v string) error { o.Rootfs = v; return nil }},
	{[]string{"-b", "--bind", "-m", "--mount"}, valueOpt, func(o *Options, v string) error { o.Binds = append(o.Binds, parseBind(v)); return nil }},
	{[]string{"-w", "--pwd", "--cwd"}, valueOpt, func(o *Options, v string) error { o.Cwd = v; return nil }},
	{[]string{"--kill-on-exit"}, flagOpt, func(o *Options, v string) error { o.KillOnExit = true; return nil }},
	{[]string{"-v", "--verbose"}, valueOpt, func(o *Options, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("-v/--verbose: %q is not a number", v)
		}
		o.Verbose = n
		return nil
	}},
	{[]string{"-V", "--version", "--about"}, flagOpt, func(o *Options, v string) error { o.Version = true; return nil }},
	{[]string{"-h", "--help", "--usage"}, flagOpt, func(o *Options, v string) error { o.Help = true; return nil }},
	{[]string{"-k", "--kernel-release"}, valueOpt, func(o *Options, v string) error {
		o.KernelRelease, o.KernelReleaseSet = v, true
		return nil
	}},
	{[]string{"-0", "--root-id"}, flagOpt, func(o *Options, v string) error { o.RootID, o.ChangeID = true, "0:0"; return nil }},
	{[]string{"-i", "--change-id"}, valueOpt, func(o *Options, v string) error {
		if _, _, err := parseChangeID(v); err != nil {
			return err
		}
		o.ChangeID = v
		return nil
	}},
	{[]string{"-l", "--link2symlink"}, flagOpt, func(o *Options, v string) error { o.Link2Symlink = true; return nil }},
	{[]string{"--sysvipc"}, flagOpt, func(o *Options, v string) error { o.SysVIPC = true; return nil }},
	{[]string{"--ashmem-memfd"}, flagOpt, func(o *Options, v string) error { o.AshmemMemfd = true; return nil }},
	{[]string{"-H"}, flagOpt, func(o *Options, v string) error { o.HideProot = true; return nil }},
	{[]string{"-p"}, flagOpt, func(o *Options, v string) error { o.PortShift = true; return nil }},
	{[]string{"-L"}, flagOpt, func(o *Options, v string) error { o.LstatSize = true; return nil }},
	{[]string{"-R"}, valueOpt, func(o *Options, v string) error { o.StandardR = v; standardBinds(o, v, false); return nil }},
	{[]string{"-S"}, valueOpt, func(o *Options, v string) error { o.StandardS = v; standardBinds(o, v, true); return nil }},
	{[]string{"-q", "--qemu"}, valueOpt, func(o *Options, v string) error { o.Qemu = v; return nil }},
	// droidroot's own options come after proot's, so that proot's prefixes
	// keep their meaning.
	{[]string{"--android-policy"}, valueOpt, func(o *Options, v string) error {
		if _, err := seccomp.LoadAndroidPolicy(v); err != nil && !strings.EqualFold(v, "off") && !strings.EqualFold(v, "none") {
			return fmt.Errorf("--android-policy=%s: %v", v, err)
		}
		o.AndroidPolicy = v
		return nil
	}},
	{[]string{"--no-fastpath"}, flagOpt, func(o *Options, v string) error { o.NoFastPath = true; return nil }},
}

// parseChangeID parses -i's UID:GID (decimal ids, below 4294967295).
func parseChangeID(v string) (uid, gid uint32, err error) {
	u, g, ok := strings.Cut(v, ":")
	uid64, err1 := strconv.ParseUint(u, 10, 32)
	gid64, err2 := strconv.ParseUint(g, 10, 32)
	if !ok || err1 != nil || err2 != nil || uid64 == 1<<32-1 || gid64 == 1<<32-1 {
		return 0, 0, fmt.Errorf("-i/--change-id: %q is not UID:GID (two decimal ids, e.g. -i 1000:1000)", v)
	}
	return uint32(uid64), uint32(gid64), nil
}

// parseBind splits HOST[:GUEST][!] on the first ':'.
func parseBind(v string) Bind {
	b := Bind{}
	spec := v
	if strings.HasSuffix(v, "!") && len(v) > 1 {
		b.NoDeref = true
		v = v[:len(v)-1]
	}
	host, guest, ok := strings.Cut(v, ":")
	switch {
	case host == "" && !ok:
		b.Bad = "empty binding"
	case host == "":
		b.Bad = "no host path before ':'"
	case ok && guest == "":
		b.Bad = "no guest path after ':'"
	}
	if b.Bad != "" {
		b.Spec = spec
	}
	if !ok {
		guest = host
	}
	b.Host, b.Guest = host, guest
	return b
}

// separator is what proot's option table puts between a name and its
// value: ' ' (the next argument) after a short name, '=' after a long one,
// nothing for a flag.
func separator(kind optKind, name string) byte {
	switch {
	case kind == flagOpt:
		return 0
	case strings.HasPrefix(name, "--"):
		return '='
	}
	return ' '
}

// lookupOption finds arg's row as proot's parse_config does: the first
// name, in table order, that arg starts with decides. What follows the
// name must be its separator: "--rootfs=/r" and "-r" (its value the next
// argument; "-r /r" as one argument also works, as in proot) are options,
// "--rootfs /r", "-r=/r", "-0x" and "--kill-on-exit=1" are errors, and so
// is an abbreviation such as "--root=/r" (no name is its prefix). found
// says a name matched (the error is then about its value).
func lookupOption(arg string) (opt *prootOption, value string, hasValue, found bool, err error) {
	for i := range prootOptions {
		o := &prootOptions[i]
		for _, n := range o.names {
			if !strings.HasPrefix(arg, n) {
				continue
			}
			sep, rest := separator(o.kind, n), arg[len(n):]
			switch {
			case rest != "" && rest[0] != sep && sep == 0:
				return nil, "", false, true, fmt.Errorf("option '%s' expects no value", n)
			case rest != "" && rest[0] != sep:
				return nil, "", false, true, fmt.Errorf("option '%s' and its value must be separated by '%c'", n, sep)
			case o.kind == flagOpt:
				return o, "", false, true, nil
			case rest != "":
				return o, rest[1:], true, true, nil
			case sep != ' ':
				return nil, "", false, true, fmt.Errorf("option '%s' and its value must be separated by '%c': %s=VALUE", n, sep, n)
			}
			return o, "", false, true, nil
		}
	}
	return nil, "", false, false, fmt.Errorf("unknown option '%s' (see --help)", arg)
}

// ParseProot parses a proot command line (without argv[0]). Options stop
// at the first argument not starting with '-' (or after "--").
func ParseProot(args []string) (*Options, error) {
	o := &Options{Rootfs: "/", Cwd: "."}
	i := 0
	for i < len(args) {
		arg := args[i]
		if arg == "--" {
			i++
			break
		}
		if !strings.HasPrefix(arg, "-") || arg == "-" {
			break
		}
		opt, value, hasValue, _, err := lookupOption(arg)
		if err != nil {
			return nil, err
		}
		i++
		if opt.kind == valueOpt && !hasValue {
			if i >= len(args) {
				return nil, fmt.Errorf("missing value for option '%s'", arg)
			}
			value = args[i]
			i++
		}
		if err := opt.set(o, value); err != nil {
			return nil, err
		}
	}
	o.Command = args[i:]
	return o, nil
}

// IsProotOption reports whether arg is something proot would parse as an
// option, well formed or not (so `droidroot -r ROOT ...` behaves as proot,
// and `droidroot -rROOT` gets proot's error).
func IsProotOption(arg string) bool {
	if !strings.HasPrefix(arg, "-") || arg == "-" || arg == "--" {
		return false
	}
	_, _, _, found, _ := lookupOption(arg)
	return found
}
