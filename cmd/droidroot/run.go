package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/emul"
	"github.com/droidroot/droidroot/fastpath"
	"github.com/droidroot/droidroot/loader"
	"github.com/droidroot/droidroot/pathmap"
	"github.com/droidroot/droidroot/seccomp"
	"github.com/droidroot/droidroot/tmpdir"
	"github.com/droidroot/droidroot/tracer"
)

const usage = `Usage: droidroot run [options] [--] [CMD [ARGS...]]
       proot [options] [CMD [ARGS...]]   (when started as proot or libproot.so)

  -r, --rootfs=PATH        guest root file-system (default /)
  -b, --bind=HOST[:GUEST]  make HOST visible at GUEST (-m, --mount too)
  -w, --cwd=PATH           initial guest working directory (default .: the host's, as a guest path)
      --kill-on-exit       kill every process when the first one exits
  -v, --verbose=N          log level (below 0: errors only)
  -V, --version            print the version
  -h, --help               print this help
  -0, --root-id            the guest runs as root (-i 0:0)
  -i, --change-id=UID:GID  the guest runs as UID:GID (emulated ids; see docs/identity.md)
  -k, --kernel-release=R   uname(2) release R, or all fields as
                           \sysname\nodename\release\version\machine\domainname\hwcap\
  -l, --link2symlink       emulate hard links where link() is refused
  -H                       hide .proot*, .l2s.* and droidroot's own files from listings
  -p                       shift AF_INET(6) ports below 1024 up by 2000
  -L                       lstat st_size of a symlink = length of its readlink
  -R PATH                  -r PATH plus the recommended host binds
  -S PATH                  -0 -r PATH plus the minimal host binds
      --ashmem-memfd       /dev/ashmem backed by memfd
  -q, --qemu=CMD           run other-architecture programs through CMD (qemu-user)
      --android-policy=VER run droidroot and the guest under the app seccomp
                           policy of Android VER (12 12L 13 14 15 15qpr2 16, off);
                           device: the policy droidroot already runs under
Environment: PROOT_TMP_DIR PROOT_LOADER PROOT_NO_SECCOMP PROOT_VERBOSE
             PROOT_IGNORE_MISSING_BINDINGS PROOT_L2S_DIR DROIDROOT_ANDROID_POLICY
`

// errorf prints one line of diagnosis and returns proot's failure status.
func errorf(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "droidroot: "+format+"\n", args...)
	return 1
}

// quiet is a negative -v/--verbose (or PROOT_VERBOSE) level: as proot, only
// errors are printed, no warnings.
var quiet bool

// warnf prints a warning, unless quiet.
func warnf(format string, args ...any) {
	if quiet {
		return
	}
	fmt.Fprintf(os.Stderr, "droidroot: warning: "+format+"\n", args...)
}

// prootMain runs proot's command line and returns the exit status.
func prootMain(args []string) int { return runMain(args, nil) }

// floorMain is prootMain with getppid traced and answered by a handler
// that only reads and writes the registers: what one traced call costs at
// least.
func floorMain(args []string) int {
	return runMain(args, func(t tracer.Table) {
		t["getppid"] = tracer.Handler{Enter: func(c *tracer.Call) { c.SetArg(0, c.Arg(0)) }}
	})
}

// runMain runs a proot command line; edit, if set, changes the handler table.
func runMain(args []string, edit func(tracer.Table)) int {
	o, err := ParseProot(args)
	if err != nil {
		return errorf("%v", err)
	}
	if o.Help {
		fmt.Print(usage)
		return 0
	}
	if o.Version {
		fmt.Printf("droidroot %s (%s/%s), proot-compatible\n", version, runtime.GOOS, runtime.GOARCH)
		return 0
	}
	// The Android policy goes in first, before droidroot does anything
	// else, as on a phone.
	android, simulate, err := androidPolicy(o)
	if err != nil {
		return errorf("%v", err)
	}
	if simulate {
		if err := installAndroid(android); err != nil {
			return errorf("%v", err)
		}
	}
	if v := os.Getenv("PROOT_VERBOSE"); v != "" && o.Verbose == 0 {
		o.Verbose, _ = strconv.Atoi(v)
	}
	quiet = o.Verbose < 0
	cfg, code := configure(o, android)
	if cfg == nil {
		return code
	}
	if edit != nil {
		edit(cfg.Table)
	}
	t, err := tracer.New(*cfg)
	if err != nil {
		return errorf("%v", err)
	}
	if p := os.Getenv("DROIDROOT_CPUPROFILE"); p != "" {
		// A developer's tool: where the tracer's own time goes.
		f, err := os.Create(p)
		if err != nil {
			return errorf("DROIDROOT_CPUPROFILE: %v", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return errorf("DROIDROOT_CPUPROFILE: %v", err)
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	if os.Getenv("DROIDROOT_TEST_NONDUMPABLE") == "1" {
		// A test switch: droidroot not dumpable, so that guest processes
		// (without CAP_SYS_PTRACE) may not follow its /proc/<pid>/fd, as
		// where an SELinux or hidepid policy keeps them out.
		unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	}
	ignoreSignals()
	status, err := t.Run()
	lingerClose(cfg.Mapper, cfg.Stage2)
	for _, f := range cleanups {
		f()
	}
	if err != nil {
		return errorf("%v", err)
	}
	return status
}

// ignoredSignals are the asynchronous signals droidroot survives, as proot
// does: a terminal sends SIGINT, SIGQUIT and SIGHUP to the guest's process
// group anyway, and the guest decides what they mean (python's
// KeyboardInterrupt, a shell's trap, nohup). Job control (SIGTSTP, SIGTTIN,
// SIGTTOU, SIGCONT), SIGCHLD, the synchronous ones and those the Go runtime
// uses (SIGPROF, SIGURG) keep their default.
var ignoredSignals = []os.Signal{
	unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2,
	unix.SIGALRM, unix.SIGPIPE, unix.SIGVTALRM, unix.SIGXCPU, unix.SIGXFSZ, unix.SIGPWR,
	unix.SIGSTKFLT,
}

// ignoreSignals makes droidroot catch and drop ignoredSignals. Caught, not
// SIG_IGN: a caught signal's disposition goes back to the default at exec,
// so the guest starts with them as a shell would start it, where an ignored
// one would stay ignored (python would install no KeyboardInterrupt).
//
// A signal droidroot was started with ignored (nohup) stays ignored, so the
// guest inherits that as it would from any program.
func ignoreSignals() {
	var sigs []os.Signal
	for _, s := range ignoredSignals {
		if !signal.Ignored(s) {
			sigs = append(sigs, s)
		}
	}
	signal.Notify(make(chan os.Signal, 1), sigs...) // never read: dropped
}

// configure turns options into a tracer configuration, or prints why not.
// android is the Android policy in force, or nil.
func configure(o *Options, android *seccomp.AndroidPolicy) (*tracer.Config, int) {
	root := o.Rootfs
	st, err := os.Stat(root)
	if err != nil {
		return nil, errorf("rootfs %s: %v (give -r an existing directory)", root, errors.Unwrap(err))
	}
	if !st.IsDir() {
		return nil, errorf("rootfs %s: not a directory (give -r an existing directory)", root)
	}
	hostCwd, err := os.Getwd()
	if err != nil {
		hostCwd = "/"
	}
	var binds []pathmap.Binding
	for _, b := range o.Binds {
		if b.Bad != "" {
			warnf("can't bind %q: %s (ignored; want HOST or HOST:GUEST)", b.Spec, b.Bad)
			continue
		}
		host := b.Host
		if !filepath.IsAbs(host) {
			host = filepath.Join(hostCwd, host)
		}
		guest := b.Guest
		if !filepath.IsAbs(guest) {
			guest = filepath.Join(hostCwd, guest)
		}
		if _, err := os.Stat(host); err != nil {
			if os.Getenv("PROOT_IGNORE_MISSING_BINDINGS") == "" && !b.Optional {
				warnf("can't bind %s: %v (ignored)", b.Host, errors.Unwrap(err))
			}
			continue
		}
		binds = append(binds, pathmap.Binding{Host: host, Guest: filepath.Clean(guest), NoDeref: b.NoDeref})
	}
	tmpDir := tmpDirOf()
	// The session's own directories go into this user's directory of
	// them, where those of sessions killed before they could remove
	// theirs are swept while this one starts; its exit waits for the sweep.
	sessDir, sweep := tmpdir.Dir(tmpDir)
	if sweep {
		swept := make(chan struct{})
		go func() {
			tmpdir.Sweep(sessDir, time.Now())
			close(swept)
		}()
		cleanups = append(cleanups, func() { <-swept })
	}
	noSeccomp := os.Getenv("PROOT_NO_SECCOMP") != "" && os.Getenv("PROOT_NO_SECCOMP") != "0"
	if !noSeccomp && !seccomp.Available() {
		warnf("this kernel has no seccomp filters; every syscall will stop (slower, like PROOT_NO_SECCOMP=1)")
		noSeccomp = true
	}
	// The fast path library, bound where the guest's ld.so finds it.
	fpLib := ""
	if fastPathOn(o, noSeccomp) {
		if fpLib = fastPathLibrary(tmpDir); fpLib != "" {
			binds = append(binds, pathmap.Binding{Host: fpLib, Guest: fastpath.GuestPath})
		}
	}
	opts := []pathmap.Option{pathmap.WithTempDir(tmpDir)}
	if vdir, err := virtualDir(tmpDir); err == nil {
		opts = append(opts, pathmap.WithVirtualDir(vdir))
	}
	if len(binds) > 0 {
		if vtree, err := virtualTree(root, binds, sessDir); err == nil {
			opts = append(opts, pathmap.WithVirtualTree(vtree))
			cleanups = append(cleanups, func() { tmpdir.Remove(vtree) })
		} else {
			warnf("cannot make the directories of the bind points in %s: %v (they will list as empty)", tmpDir, err)
		}
	}
	// The inotify-validated lookup cache (without inotify, New runs
	// uncached); DROIDROOT_NO_CACHE=1 turns it off.
	if os.Getenv("DROIDROOT_NO_CACHE") != "1" {
		opts = append(opts, pathmap.WithCache())
	}
	m, err := pathmap.New(root, binds, nil, opts...)
	m.ApplyChangesInBackground()
	var bindErrs pathmap.BindErrors
	if errors.As(err, &bindErrs) && m != nil {
		if os.Getenv("PROOT_IGNORE_MISSING_BINDINGS") == "" {
			for _, be := range bindErrs {
				warnf("can't bind %s: %v (ignored)", be.Binding.Host, be.Err)
			}
		}
	} else if err != nil {
		return nil, errorf("%v", err)
	}

	// The guest's initial directory: -w, relative to the host's working
	// directory taken as a guest path (the default "." is that directory),
	// as proot does; where that is no directory in the guest, "/" with
	// proot's warning.
	cwd := o.Cwd
	if !filepath.IsAbs(cwd) {
		cwd = filepath.Join(hostCwd, cwd)
	}
	cwd = filepath.Clean(cwd)
	// The guest path is the one the walk took, as the kernel's getcwd
	// gives it (a directory bound at two guest paths is where -w said).
	self := pathmap.Proc{Pid: os.Getpid(), Tid: os.Getpid()}
	r, err := m.Lookup(self, "/", cwd, pathmap.Follow|pathmap.WantGuest)
	cwdHost := r.Host
	if err == nil {
		var st unix.Stat_t
		if err = unix.Stat(cwdHost, &st); err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
			err = unix.ENOTDIR
		}
	}
	if err != nil {
		warnf("can't chdir(\"%s\") in the guest rootfs: %v; using \"/\"", cwd, err)
		cwd = "/"
		cwdHost, _ = m.Resolve(self, "/", "/", true)
	} else if r.Guest != "" {
		cwd = r.Guest
	}

	// $PWD is the guest's directory as getcwd gives it, without symlinks,
	// as proot sets it (replacing the host's).
	env := withEnv(os.Environ(), "PWD", cwd)
	argv := o.Command
	path := ""
	if len(argv) == 0 {
		path, argv = "/bin/sh", []string{"-sh"}
	} else if strings.Contains(argv[0], "/") {
		path = argv[0]
	} else {
		path = lookPath(m, cwd, argv[0], env)
		if path == "" {
			return nil, errorf("%s: command not found in the guest's PATH", argv[0])
		}
	}

	// Nested in droidroot, the outer session's loader and scratch area are
	// mapped here, as in every process of our guests: take a variant of the
	// loader linked elsewhere.
	variant := loader.FreeVariant()
	if variant < 0 {
		return nil, errorf("droidroot runs inside %d nested droidroot sessions already, and its loader has no variant left whose addresses are free in this process (at most %d sessions deep)", len(loader.Variants), len(loader.Variants))
	}
	loaderPath := os.Getenv("PROOT_LOADER")
	if variant > 0 && loader.IsOwn(loaderPath, runtime.GOARCH, 0) {
		loaderPath = "" // the outer session's loader: ours is another variant
	}
	stage2 := loaderPath
	if loaderPath == "" {
		loaderPath, err = loader.Extract(tmpDir, runtime.GOARCH, variant)
		if err != nil {
			return nil, errorf("cannot write the loader into %s: %v (set PROOT_TMP_DIR to a writable directory)", tmpDir, err)
		}
		stage2 = loaderPath
	} else if !loader.IsOwn(loaderPath, runtime.GOARCH, 0) {
		stage2 = "" // another loader: droidroot itself is stage 2
	}

	var fp *emul.FastPath
	if fpLib != "" {
		if dir, err := tmpdir.Make(sessDir, "fastpath"); err == nil {
			cleanups = append(cleanups, func() { tmpdir.Remove(dir) })
			// ld.so of a process that changed its ids for real (under a
			// droidroot run as root) reads the merged preload file (0444)
			// here too; the shared files stay 0600 (the library stays off
			// in such a process).
			os.Chmod(dir, 0o711)
			fp = fastPathConfig(m, dir, futexWaitvEmulated(android), openat2Allowed(android))
		} else {
			warnf("cannot make a directory in %s: %v (the fast path is off)", tmpDir, err)
		}
	}
	em, code := emulation(o, tmpDir, sessDir, android, fp)
	if em == nil {
		return nil, code
	}
	cleanups = append(cleanups, em.Close)
	var trampoline uint64
	if fp != nil {
		trampoline = fp.Lib.Trampoline
	}

	return &tracer.Config{
		Mapper:      m,
		Cwd:         cwd,
		CwdHost:     cwdHost,
		Path:        path,
		Argv:        argv,
		Env:         env,
		Loader:      loaderPath,
		Stage2:      stage2,
		Table:       em.Table,
		Classes:     emul.Classes(),
		State:       em,
		Creds:       emul.InitialCreds(em.Config()),
		HWCap:       hwcap(em.Config().Uname),
		Android:     android,
		Trampoline:  trampoline,
		NoSeccomp:   noSeccomp,
		KillOnExit:  o.KillOnExit,
		Verbose:     o.Verbose,
		Spin:        spinEnv(),
		NoScratch:   os.Getenv("DROIDROOT_SCRATCH") == "0",
		Flight:      os.Getenv("DROIDROOT_FLIGHT") == "1",
		Census:      os.Getenv("DROIDROOT_STOPS") == "1",
		CensusSites: os.Getenv("DROIDROOT_STOPS") == "sites",
		// Test switch: Yama's ptrace_scope read from another file (e2e/doc.go).
		YamaFile: os.Getenv("DROIDROOT_YAMA_FILE"),
	}, 0
}

// spinEnv is tracer.Config.Spin as DROIDROOT_SPIN=US asks: US microseconds,
// 0 for never; unset or not a number, the tracer's default.
func spinEnv() time.Duration {
	v, err := strconv.Atoi(os.Getenv("DROIDROOT_SPIN"))
	if err != nil || v < 0 {
		return 0
	}
	if v == 0 {
		return -1
	}
	return time.Duration(v) * time.Microsecond
}

// hwcap is the AT_HWCAP -k's hwcap field asks for, nil to keep the kernel's.
func hwcap(u *emul.Uname) *uint64 {
	if u == nil || u.HWCap < 0 {
		return nil
	}
	v := uint64(u.HWCap)
	return &v
}

// tmpDirOf is where droidroot writes its files: PROOT_TMP_DIR, else the
// system's temporary directory.
func tmpDirOf() string {
	if d := os.Getenv("PROOT_TMP_DIR"); d != "" {
		return d
	}
	return os.TempDir()
}

// withEnv returns env with name set to value (replaced where it is, else
// added at the end).
func withEnv(env []string, name, value string) []string {
	out := make([]string, 0, len(env)+1)
	set := false
	for _, kv := range env {
		if strings.HasPrefix(kv, name+"=") {
			if set {
				continue
			}
			kv, set = name+"="+value, true
		}
		out = append(out, kv)
	}
	if !set {
		out = append(out, name+"="+value)
	}
	return out
}

// lookPath searches the guest's PATH (env's) for an executable regular
// file. An unset or empty PATH finds nothing, as proot's which(): no
// default list.
func lookPath(m *pathmap.Mapper, cwd, name string, env []string) string {
	pathVar := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathVar = v
		}
	}
	pr := pathmap.Proc{Pid: os.Getpid(), Tid: os.Getpid()}
	for _, dir := range filepath.SplitList(pathVar) {
		if dir == "" {
			dir = "."
		}
		guest := filepath.Join(dir, name)
		host, err := m.Resolve(pr, cwd, guest, true)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Stat(host, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
			continue
		}
		if unix.Access(host, unix.X_OK) == nil {
			if !filepath.IsAbs(guest) {
				guest = filepath.Join(cwd, guest)
			}
			return guest
		}
	}
	return ""
}

// virtualTree makes, in a new directory of sessDir, the directories a real
// chroot would need for binds' mount points whose guest parents the rootfs
// lacks (mode 0755, as mkdir -p makes them, each holding the entries on
// the way to the mount points), and returns it (pathmap.WithVirtualTree).
func virtualTree(root string, binds []pathmap.Binding, sessDir string) (string, error) {
	m, _ := pathmap.New(root, binds, nil) // the canonical mount points; errors are reported later
	if m == nil {
		return "", errors.New("no mapper")
	}
	dir, err := tmpdir.Make(sessDir, "binds")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		tmpdir.Remove(dir)
		return "", err
	}
	for _, e := range m.VirtualTree() {
		p := filepath.Join(dir, e.Path)
		if e.Dir {
			err = os.Mkdir(p, 0o755)
			if err == nil {
				err = os.Chmod(p, 0o755) // whatever the umask
			}
		} else {
			err = os.WriteFile(p, nil, 0o644)
		}
		if err != nil && !os.IsExist(err) {
			tmpdir.Remove(dir)
			return "", err
		}
	}
	return dir, nil
}

// virtualDir returns an empty, read-only directory that stands for guest
// directories that exist only as parents of bind points.
func virtualDir(tmpDir string) (string, error) {
	dir := filepath.Join(tmpDir, fmt.Sprintf("droidroot-empty-%d", os.Getuid()))
	if err := os.Mkdir(dir, 0o555); err != nil && !os.IsExist(err) {
		return "", err
	}
	if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
		return "", fmt.Errorf("%s is not an empty directory", dir)
	}
	return dir, nil
}

// emulConfig turns the command line's options into the handler table's
// configuration.
// emulation builds the handler table of o's run (the one `droidroot debug
// filter` shows too), or prints why it cannot and returns a nil one and the
// exit status.
func emulation(o *Options, tmpDir, sessDir string, android *seccomp.AndroidPolicy, fp *emul.FastPath) (*emul.Emulation, int) {
	ecfg := emulConfig(o, tmpDir, sessDir).WithAndroid(android)
	ecfg.FastPath = fp
	if code := at2Config(o, &ecfg); code != 0 {
		return nil, code
	}
	return emul.New(ecfg), 0
}

func emulConfig(o *Options, tmpDir, sessDir string) emul.Config {
	c := emul.Config{
		SysVIPC: o.SysVIPC,
		// Test-only switch until the Android policy turns it on (e2e/doc.go).
		EmulateRobustList: os.Getenv("DROIDROOT_EMULATE_ROBUST") == "1",
		Link2Symlink:      o.Link2Symlink,
		L2SDir:            os.Getenv("PROOT_L2S_DIR"),
		FailLink:          os.Getenv("DROIDROOT_FAIL_LINK") == "1",
		TrampolineByOpen:  os.Getenv("DROIDROOT_FASTPATH_REMAP") == "0",
		HideOwnFiles:      o.HideProot,
		TmpDir:            tmpDir,
		SessionDir:        sessDir,
		PortShift:         o.PortShift,
		LstatLinkSize:     o.LstatSize,
		AshmemMemfd:       o.AshmemMemfd,
		Qemu:              qemuCommand(o.Qemu),
		// Guest ptrace (strace, gdb in the guest; docs/ptrace.md); =0 turns
		// it off, and with it the stop every wait4 and waitid costs.
		GuestPtrace: os.Getenv("DROIDROOT_GUEST_PTRACE") != "0",
		// Pinned parents off (docs/security.md): to measure what they cost.
		NoPin: os.Getenv("DROIDROOT_PIN") == "0",
	}
	if o.ChangeID != "" {
		uid, gid, _ := parseChangeID(o.ChangeID) // checked when parsed
		c.Identity = &emul.Identity{UID: uid, GID: gid}
	}
	// Test switch: the set*id emulation without -0/-i (see e2e/doc.go).
	c.EmulateSetID = os.Getenv("DROIDROOT_EMULATE_SETID") == "1"
	c.RealIDs = os.Geteuid() == 0
	return c
}

// qemuCommand splits the -q command and finds its program in the host's
// PATH when it is a bare name (without os/exec, whose LookPath uses
// faccessat2).
func qemuCommand(q string) []string {
	f := strings.Fields(q)
	if len(f) == 0 || strings.Contains(f[0], "/") {
		return f
	}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		p := filepath.Join(dir, f[0])
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			f[0] = p
			break
		}
	}
	return f
}
