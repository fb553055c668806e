package bench

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Compare is a --compare NAME=COMMAND: a proot-like command prefix the calls also run
// under (the program and its arguments are appended). A word "{dir}" in COMMAND stands
// for the bench's work directory (where drbench and its tree are), for binding it into
// a rootfs other than /: proot -r ROOTFS -b {dir} -b /proc.
type Compare struct {
	Name    string
	Command []string
}

// ParseCompare parses NAME=COMMAND; COMMAND is split on blanks, with '...' and "..."
// quoting.
func ParseCompare(s string) (Compare, error) {
	name, cmd, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" || strings.TrimSpace(cmd) == "" {
		return Compare{}, fmt.Errorf("--compare %q: want NAME=COMMAND, e.g. --compare proot='proot -r /'", s)
	}
	if name == "native" || name == "droidroot" {
		return Compare{}, fmt.Errorf("--compare %q: the name %s is taken; choose another", s, name)
	}
	words, err := splitWords(cmd)
	if err != nil {
		return Compare{}, fmt.Errorf("--compare %q: %v", s, err)
	}
	return Compare{Name: name, Command: words}, nil
}

func splitWords(s string) ([]string, error) {
	var words []string
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated %c quote", quote)
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}

// Options configures a bench run.
type Options struct {
	// Rootfs is the guest rootfs of the droidroot runs ("/" by default).
	Rootfs string
	// Quick makes a run of under 20 s; otherwise under 2 minutes.
	Quick bool
	// Rounds overrides the number of interleaved rounds (0: 3 quick, 5 otherwise).
	Rounds int
	// Compares are extra modes, run like droidroot.
	Compares []Compare
	// AndroidPolicy, when set, is passed to every droidroot run as --android-policy=V.
	AndroidPolicy string
	// Droidroot is the droidroot executable the droidroot mode runs; Version its
	// version, for the header.
	Droidroot, Version string
	// Progress receives one line per step (nil: discarded).
	Progress io.Writer
	// TmpDir holds the work tree (default os.TempDir()).
	TmpDir string
	// Program, if set, is a drbench executable to run natively (mechanisms and
	// native rows) instead of the copy in the work tree: on Android an app may not
	// execute files it wrote (the copy still serves the droidroot runs, whose loader
	// maps it). DROIDROOT_BENCH_PROGRAM in the CLI.
	Program string
}

// callRow is a row of a call section: drbench's name for the call, and its title.
type callRow struct{ id, title string }

// callRows are the call section's rows, in drbench's names.
var callRows = []callRow{
	{"stat", "stat of a deep path"},
	{"lstat", "lstat of a symlink"},
	{"open", "open+close"},
	{"access", "access"},
	{"fstatat", "fstatat with a dirfd"},
	{"missing", "stat of a missing file"},
	{"readlink", "readlink /proc/self/exe"},
	{"getcwd", "getcwd"},
	{"uname", "uname"},
	{"chdir", "chdir there and back (2 calls)"},
	{"mkdir", "mkdir+rmdir"},
	{"rename", "rename"},
	{"symlink", "symlink+unlink"},
	{"thread", "thread create+join (raw clone)"},
	{"forkexec", "fork+exec+wait"},
}

// libcRows are the fast path section's rows: drbench-libc's calls, through
// libc's syscall(), which the fast path library answers in-process: the path
// calls of callRows it serves, and a futex_waitv ping-pong.
var libcRows = append(pickRows(callRows, "stat", "lstat", "open", "access", "fstatat", "missing"),
	callRow{"waitv", "futex_waitv ping-pong between two processes (2 words)"})

// pickRows returns the rows of rows with the given ids, in that order.
func pickRows(rows []callRow, ids ...string) []callRow {
	var out []callRow
	for _, id := range ids {
		for _, r := range rows {
			if r.id == id {
				out = append(out, r)
			}
		}
	}
	return out
}

// LibcSection is the fast path section's name; NoFastPathMode its extra
// column, droidroot run --no-fastpath.
const (
	LibcSection    = "fast path"
	NoFastPathMode = "droidroot --no-fastpath"
)

// mechRow is one mechanism measurement.
type mechRow struct {
	id, title string
	// run measures one sample; cpus are the allowed CPUs.
	run func(prog string, cpus []int, us int) (sample, error)
	// twoCPUs marks rows that need a second CPU.
	twoCPUs bool
	// notBuilt is the state of a mechanism that does not exist yet.
	notBuilt bool
	// inSection names the section that measures the mechanism per call
	// instead (n/a here).
	inSection string
}

func mechRows() []mechRow {
	direct := func(kind string) func(string, []int, int) (sample, error) {
		return func(p string, _ []int, us int) (sample, error) { return mechDirect(p, kind, -1, us) }
	}
	trace := func(where string, regs bool) func(string, []int, int) (sample, error) {
		return func(p string, cpus []int, us int) (sample, error) {
			switch where {
			case "same":
				return mechTrace(p, cpus[0], cpus[0], regs, us)
			case "other":
				return mechTrace(p, cpus[1], cpus[0], regs, us)
			}
			return mechTrace(p, -1, -1, regs, us)
		}
	}
	notify := func(where string, sync bool) func(string, []int, int) (sample, error) {
		return func(p string, cpus []int, us int) (sample, error) {
			switch where {
			case "same":
				return mechNotify(p, cpus[0], cpus[0], sync, us)
			case "other":
				return mechNotify(p, cpus[1], cpus[0], sync, us)
			}
			return mechNotify(p, -1, -1, sync, us)
		}
	}
	return []mechRow{
		{id: "native", title: "native syscall (getppid)", run: direct("native")},
		{id: "seccomp-allow", title: "seccomp filter, allowed (kernel cache on)", run: direct("allow")},
		{id: "seccomp-nocache", title: "seccomp filter, allowed, cache defeated", run: direct("nocache")},
		{id: "ptrace-same", title: "ptrace RET_TRACE, tracer on the same CPU", run: trace("same", false)},
		{id: "ptrace-other", title: "ptrace RET_TRACE, tracer on another CPU", run: trace("other", false), twoCPUs: true},
		{id: "ptrace-unpinned", title: "ptrace RET_TRACE, unpinned", run: trace("unpinned", false)},
		{id: "ptrace-regs-same", title: "ptrace + register get/set, same CPU", run: trace("same", true)},
		{id: "ptrace-regs-other", title: "ptrace + register get/set, another CPU", run: trace("other", true), twoCPUs: true},
		{id: "ptrace-regs-unpinned", title: "ptrace + register get/set, unpinned", run: trace("unpinned", true)},
		{id: DroidrootFloorMech, title: "droidroot's tracer, do-nothing handler (debug floor)"}, // run: set by Run
		{id: "sigsys", title: "in-process SIGSYS (RET_TRAP, handler)", run: direct("trap")},
		{id: "fault", title: "page fault (an anonymous page's first write)", run: direct("fault")},
		{id: "notify-same", title: "user notification, same CPU", run: notify("same", false)},
		{id: "notify-other", title: "user notification, another CPU", run: notify("other", false), twoCPUs: true},
		{id: "notify-unpinned", title: "user notification, unpinned", run: notify("unpinned", false)},
		{id: "notify-sync", title: "user notification + SYNC_WAKE_UP, unpinned", run: notify("unpinned", true)},
		{id: "fastpath", title: "fast-path trampoline", inSection: LibcSection},
	}
}

// MechanismMode is the single mode of the mechanism section.
const MechanismMode = "cost"

// ThreadCounts returns the thread counts of the throughput rows for a machine with
// ncpu CPUs: 1, 2, 4, 8 and ncpu.
func ThreadCounts(ncpu int) []int {
	counts := []int{1, 2, 4, 8}
	for _, c := range counts {
		if c == ncpu {
			return counts
		}
	}
	return append(counts, ncpu)
}

// wholeRow is one whole-program row.
type wholeRow struct {
	id, title string
	// candidates are guest paths of the program; the first present is used.
	candidates []string
	args       func(work string) []string
	// needsTree: the program reads the work tree, which a native chroot cannot see.
	needsTree bool
	// static: the program is drbench itself, which runs natively on the host
	// whatever the rootfs (it needs nothing from it).
	static bool
	// script, when set, makes the row run /bin/sh -c script(work, program)
	// (the program found among candidates), for a row of several commands.
	script func(work, prog string) string
}

// gitScript is the git row's commands: a repository of the work tree's
// files made, filled, committed and removed again, without the host's or
// the user's git configuration.
func gitScript(w, git string) string {
	return fmt.Sprintf(`d=%[1]s/git-repo; rm -rf "$d" && export GIT_DIR="$d" GIT_WORK_TREE=%[1]s/files `+
		`GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null && %[2]s init -q && %[2]s add -A && `+
		`%[2]s -c user.name=bench -c user.email=bench@example.com commit -q -m bench && rm -rf "$d"`, w, git)
}

var wholeRows = []wholeRow{
	{"startup", "start-up: run a static program that exits", nil,
		func(w string) []string { return []string{filepath.Join(w, "drbench"), "exit"} }, false, true, nil},
	{"python3", "python3 start-up + 10 stdlib imports", []string{"/usr/bin/python3", "/bin/python3"},
		func(string) []string {
			return []string{"-c", "import json, os, re, email, unittest, argparse, subprocess, collections, pathlib, datetime"}
		}, false, false, nil},
	{"tar", fmt.Sprintf("tar of %d files", TreeDirs*TreeFiles), []string{"/usr/bin/tar", "/bin/tar"},
		func(w string) []string { return []string{"-cf", "-", "-C", w, "files"} }, true, false, nil},
	{"find", fmt.Sprintf("find over %d files", TreeDirs*TreeFiles), []string{"/usr/bin/find", "/bin/find"},
		func(w string) []string { return []string{filepath.Join(w, "files")} }, true, false, nil},
	{"git", fmt.Sprintf("git init, add and commit of %d files", TreeDirs*TreeFiles), []string{"/usr/bin/git", "/bin/git"},
		nil, true, false, gitScript},
}

// WholeProgramCandidates returns the guest paths whole-program row id looks
// for in the rootfs (the first present is the program it runs), or nil for
// a row without them (the start-up row runs drbench itself).
func WholeProgramCandidates(id string) []string {
	for _, row := range wholeRows {
		if row.id == id {
			return append([]string(nil), row.candidates...)
		}
	}
	return nil
}

// runner runs a guest command in one mode.
type runner struct {
	name string
	// command returns the host command line of argv; native says whether the
	// process runs without a tracer (chroot into a rootfs other than /).
	command func(argv []string) []string
	native  bool
}

// budget is how long each measurement runs.
type budget struct {
	rounds                int
	mechUS, callUS, parUS int
}

// newBudget is the budget of o: quick or full, with o.Rounds overriding the rounds.
func newBudget(o Options) budget {
	b := budget{rounds: 5, mechUS: 100000, callUS: 80000, parUS: 250000}
	if o.Quick {
		b = budget{rounds: 3, mechUS: 20000, callUS: 15000, parUS: 60000}
	}
	if o.Rounds > 0 {
		b.rounds = o.Rounds
	}
	return b
}

// session is one bench run: its options, work tree, CPUs and modes, set up by
// setup and torn down by teardown. Run's steps are its methods.
type session struct {
	// o is the options, Rootfs defaulted to "/"; root is the rootfs made absolute.
	o    Options
	root string
	// work is the work directory (drbench and its tree).
	work string
	// prog is drbench in the work tree, run under droidroot and --compare;
	// nativeProg is the drbench run outside any tracer (Options.Program if set).
	prog, nativeProg string
	// libcProg is drbench-libc in the work tree (the fast path section).
	libcProg string
	progress io.Writer
	budget   budget
	cpus     []int
	// drArgs is the droidroot command line up to and including "--".
	drArgs []string
	// runners are the modes: native, droidroot, then each --compare.
	runners []runner
	// start is when the first round began, for the progress lines.
	start time.Time
}

// setup checks o, makes the work directory with drbench and its tree in it,
// and prepares the modes. A session it returns must be torn down.
func setup(o Options) (*session, error) {
	if o.Rootfs == "" {
		o.Rootfs = "/"
	}
	root, err := filepath.Abs(o.Rootfs)
	if err != nil {
		return nil, err
	}
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("rootfs %s is not a directory (give -r an existing directory)", o.Rootfs)
	}
	for _, c := range o.Compares {
		if _, err := exec.LookPath(c.Command[0]); err != nil {
			return nil, fmt.Errorf("--compare %s: command %s not found (give its full path)", c.Name, c.Command[0])
		}
	}
	s := &session{o: o, root: root, progress: o.Progress, budget: newBudget(o)}
	if s.progress == nil {
		s.progress = io.Discard
	}
	tmp := o.TmpDir
	if tmp == "" {
		tmp = os.TempDir()
	}
	s.work, err = os.MkdirTemp(tmp, "droidroot-bench-")
	if err != nil {
		return nil, fmt.Errorf("cannot make the work directory in %s: %v (set PROOT_TMP_DIR to a writable directory)", tmp, err)
	}
	if err := s.prepare(); err != nil {
		s.teardown()
		return nil, err
	}
	s.cpus = cpuSet()
	s.runners = s.newRunners()
	return s, nil
}

// prepare writes drbench and its tree into the work directory and picks the
// drbench the native runs use.
func (s *session) prepare() error {
	fmt.Fprintf(s.progress, "bench: preparing %s\n", s.work)
	prog, err := PrepareTree(s.work, runtime.GOARCH)
	if err != nil {
		return err
	}
	s.prog, s.nativeProg = prog, prog
	libc, err := LibcProgram(runtime.GOARCH)
	if err != nil {
		return err
	}
	s.libcProg = filepath.Join(s.work, "drbench-libc")
	if err := os.WriteFile(s.libcProg, libc, 0o755); err != nil {
		return err
	}
	if s.o.Program != "" {
		if s.nativeProg, err = filepath.Abs(s.o.Program); err != nil {
			return err
		}
	}
	return nil
}

// teardown removes the work directory.
func (s *session) teardown() {
	os.RemoveAll(s.work)
}

// newRunners returns the modes, in the report's order: native (drbench's own
// copy swapped for nativeProg), droidroot run, then each --compare with {dir}
// replaced by the work directory. It sets s.drArgs.
func (s *session) newRunners() []runner {
	runners := []runner{{name: "native", native: true, command: func(argv []string) []string {
		if len(argv) > 0 && argv[0] == s.prog {
			return append([]string{s.nativeProg}, argv[1:]...)
		}
		return argv
	}}}
	drArgs := []string{s.o.Droidroot, "run", "-r", s.root}
	if s.root != "/" {
		drArgs = append(drArgs, "-b", s.work, "-b", "/proc")
	}
	if s.o.AndroidPolicy != "" {
		drArgs = append(drArgs, "--android-policy="+s.o.AndroidPolicy)
	}
	drArgs = append(drArgs, "--")
	s.drArgs = drArgs
	runners = append(runners, runner{name: "droidroot", command: func(argv []string) []string {
		return append(append([]string(nil), drArgs...), argv...)
	}})
	for _, c := range s.o.Compares {
		prefix := make([]string, len(c.Command))
		for i, w := range c.Command {
			prefix[i] = strings.ReplaceAll(w, "{dir}", s.work)
		}
		runners = append(runners, runner{name: c.Name, command: func(argv []string) []string {
			return append(append([]string(nil), prefix...), argv...)
		}})
	}
	return runners
}

// header is the report's header: the machine, the run's options and its modes.
func (s *session) header() Header {
	h := header(s.o, s.root, len(s.cpus), s.budget.rounds)
	if len(s.cpus) < 2 {
		h.Notes = append(h.Notes, "one CPU: the another-CPU rows are n/a")
	}
	for _, r := range s.runners {
		h.Modes = append(h.Modes, r.name)
	}
	return h
}

// Run measures and returns the report. After setup, each round measures the
// sections in turn (mechanisms, calls, throughput, whole programs), the modes
// alternating in order from round to round; then the results become the
// report's sections, and teardown removes the work directory.
func Run(o Options) (*Report, error) {
	s, err := setup(o)
	if err != nil {
		return nil, err
	}
	defer s.teardown()
	rep := &Report{Header: s.header()}

	// Results, filled round by round.
	mechs := s.newMechanisms()
	calls := s.newGrid(len(callRows))
	counts := ThreadCounts(len(s.cpus))
	par := s.newGrid(len(counts))
	whole := s.newWholePrograms()
	inSession := whole.inSession()
	libcPar := s.newGrid(len(counts))
	for i := range libcPar {
		libcPar[i] = append(libcPar[i], Result{Mode: NoFastPathMode, State: StateOK})
	}
	libc := s.newGrid(len(libcRows))
	for i := range libc {
		libc[i] = append(libc[i], Result{Mode: NoFastPathMode, State: StateOK})
	}

	s.start = time.Now()
	for round := 0; round < s.budget.rounds; round++ {
		order := s.modeOrder(round)
		s.measureMechanisms(round, mechs)
		s.measureCalls(round, order, calls)
		s.measureLibc(round, order, libc)
		s.measureThroughput(round, order, counts, par)
		s.measureLibcThroughput(round, order, counts, libcPar)
		s.measureWholePrograms(round, order, whole)
		s.measureInSession(round, order, whole, inSession)
	}
	hits := s.measureHitRates(whole)
	fmt.Fprintf(s.progress, "bench: done in %.1fs\n", time.Since(s.start).Seconds())

	rep.Sections = append(rep.Sections, mechs.section())
	ids, titles := callIDs()
	rep.Sections = append(rep.Sections, gridSection("call", "us", ids, titles, calls))
	for _, floor := range []string{FloorMech, DroidrootFloorMech} {
		if fs, ok := floorSection(floor, mechs.rows, mechs.res, ids, titles, calls); ok {
			rep.Sections = append(rep.Sections, fs)
		}
	}
	rep.Sections = append(rep.Sections, throughputSection(counts, par))
	lids, ltitles := libcIDs()
	rep.Sections = append(rep.Sections, gridSection(LibcSection, "us", lids, ltitles, libc))
	rep.Sections = append(rep.Sections, libcThroughputSection(counts, libcPar))
	rep.Sections = append(rep.Sections, whole.section())
	rep.Sections = append(rep.Sections, inSessionSection(inSession))
	rep.Sections = append(rep.Sections, hits)
	return rep, nil
}

// modeOrder is the order the modes run in a round: forwards in even rounds,
// backwards in odd ones (indexes into s.runners).
func (s *session) modeOrder(round int) []int {
	order := make([]int, len(s.runners))
	for j := range order {
		order[j] = j
		if round%2 == 1 {
			order[j] = len(s.runners) - 1 - j
		}
	}
	return order
}

// roundProgress writes the progress line of a step of a round.
func (s *session) roundProgress(round int, step string) {
	fmt.Fprintf(s.progress, "bench: round %d/%d: %s (%.0fs)\n", round+1, s.budget.rounds, step, time.Since(s.start).Seconds())
}

// newGrid returns the results of a section with rows rows and one column per
// mode, all StateOK with no sample yet.
func (s *session) newGrid(rows int) [][]Result {
	g := make([][]Result, rows)
	for i := range g {
		g[i] = make([]Result, len(s.runners))
		for j, r := range s.runners {
			g[i][j] = Result{Mode: r.name, State: StateOK}
		}
	}
	return g
}

// fail marks r failed with err, dropping its samples, unless it already is
// not StateOK (the first failure is the one reported).
func fail(r *Result, err error) {
	if r.State == StateOK {
		r.State, r.Reason, r.Samples = StateFailed, err.Error(), nil
	}
}

// gridSection finishes the results of a section with one column per mode
// (native first) and makes the section, each cell's ratio to native's.
func gridSection(name, unit string, ids, titles []string, g [][]Result) Section {
	s := Section{Name: name, Unit: unit}
	for i := range g {
		for j := range g[i] {
			g[i][j].finish()
		}
		for j := range g[i] {
			g[i][j].Ratio = ratio(g[i][j].Median, g[i][0].Median)
		}
		s.Rows = append(s.Rows, Row{ID: ids[i], Title: titles[i], Results: g[i]})
	}
	return s
}

// mechanisms is the mechanism section: its rows and their results (one
// column, MechanismMode).
type mechanisms struct {
	rows []mechRow
	res  []Result
}

// newMechanisms returns the mechanism rows with their results in their
// initial state: not built yet, n/a with one CPU, or StateOK. The droidroot
// floor row is droidroot's own tracer with a do-nothing getppid handler
// (debug floor) running drbench's untraced-by-itself getppid loop.
func (s *session) newMechanisms() *mechanisms {
	m := &mechanisms{rows: mechRows()}
	floorArgs := append([]string{s.o.Droidroot, "debug", "floor"}, s.drArgs[2:]...)
	for i := range m.rows {
		if m.rows[i].id == DroidrootFloorMech {
			m.rows[i].run = func(_ string, _ []int, us int) (sample, error) {
				argv := append(append([]string(nil), floorArgs...), s.prog, "mech", "native", "-1", strconv.Itoa(us))
				out, err := runCapture(command(argv, ""))
				if err != nil {
					return sample{}, err
				}
				return oneSample(out, "native")
			}
		}
	}
	m.res = make([]Result, len(m.rows))
	for i, row := range m.rows {
		m.res[i] = Result{Mode: MechanismMode, State: StateOK}
		switch {
		case row.notBuilt:
			m.res[i].State, m.res[i].Reason = StateNotBuiltYet, ""
		case row.inSection != "":
			m.res[i].State, m.res[i].Reason = StateNA, "measured per call in the "+row.inSection+" section"
		case row.twoCPUs && len(s.cpus) < 2:
			m.res[i].State, m.res[i].Reason = StateNA, "one CPU"
		}
	}
	return m
}

// measureMechanisms takes one sample of each mechanism row still StateOK; a
// row the kernel lacks becomes n/a.
func (s *session) measureMechanisms(round int, m *mechanisms) {
	s.roundProgress(round, "mechanisms")
	for i, row := range m.rows {
		res := &m.res[i]
		if res.State != StateOK {
			continue
		}
		smp, err := row.run(s.nativeProg, s.cpus, s.budget.mechUS)
		if errors.Is(err, errNotAvailable) {
			res.State, res.Reason, res.Samples = StateNA, "kernel lacks it", nil
			continue
		}
		if err != nil {
			fail(res, err)
			continue
		}
		res.Samples = append(res.Samples, smp.usPerOp())
	}
}

// section finishes the mechanism results and makes the section, each row's
// ratio to the native syscall row's (the first).
func (m *mechanisms) section() Section {
	ms := Section{Name: "mechanism, one trap with a do-nothing handler", Unit: "us"}
	for i := range m.res {
		m.res[i].finish()
	}
	for i, row := range m.rows {
		m.res[i].Ratio = ratio(m.res[i].Median, m.res[0].Median)
		ms.Rows = append(ms.Rows, Row{ID: row.id, Title: row.title, Results: []Result{m.res[i]}})
	}
	return ms
}

// callIDs returns the call rows' ids (drbench's names) and titles.
func callIDs() (ids, titles []string) {
	for _, c := range callRows {
		ids, titles = append(ids, c.id), append(titles, c.title)
	}
	return ids, titles
}

func libcIDs() (ids, titles []string) {
	for _, c := range libcRows {
		ids, titles = append(ids, c.id), append(titles, c.title)
	}
	return ids, titles
}

// measureLibc runs drbench-libc's calls once in each mode, in order, and with
// droidroot --no-fastpath (the last column), adding one sample to each row.
// The native run needs the host's glibc (none on Android: that column fails).
func (s *session) measureLibc(round int, order []int, libc [][]Result) {
	names, _ := libcIDs()
	argv := []string{s.libcProg, "calls", s.work, strconv.Itoa(s.budget.callUS), strings.Join(names, ",")}
	cols := append(append([]int(nil), order...), len(s.runners))
	for _, j := range cols {
		var line []string
		if j == len(s.runners) {
			s.roundProgress(round, "libc calls, "+NoFastPathMode)
			line = s.noFastPath(argv)
		} else {
			s.roundProgress(round, "libc calls, "+s.runners[j].name)
			line = s.runners[j].command(argv)
		}
		out, runErr := runCapture(command(line, ""))
		m, failed, err := parseSamplesFailed(out)
		for i, c := range libcRows {
			smp, ok := m[c.id]
			res := &libc[i][j]
			switch {
			case err != nil:
				fail(res, err)
			case failed[c.id] != nil:
				fail(res, failed[c.id])
			case !ok && runErr != nil:
				fail(res, runErr)
			case !ok:
				fail(res, fmt.Errorf("no %s line (drbench-libc stopped early)", c.id))
			default:
				res.Samples = append(res.Samples, smp.usPerOp())
			}
		}
	}
}

// measureCalls runs drbench's calls once in each mode, in order, adding one
// sample to each call row of calls. drbench goes on after a failed call, so a
// failure spoils only its row.
func (s *session) measureCalls(round int, order []int, calls [][]Result) {
	names, _ := callIDs()
	for _, j := range order {
		r := s.runners[j]
		s.roundProgress(round, "calls, "+r.name)
		out, runErr := runCapture(command(r.command([]string{s.prog, "calls", s.work, strconv.Itoa(s.budget.callUS), strings.Join(names, ",")}), ""))
		m, failed, err := parseSamplesFailed(out)
		for i, c := range callRows {
			smp, ok := m[c.id]
			switch {
			case err != nil:
				fail(&calls[i][j], err)
			case failed[c.id] != nil:
				fail(&calls[i][j], failed[c.id])
			case !ok && runErr != nil:
				fail(&calls[i][j], runErr)
			case !ok:
				fail(&calls[i][j], fmt.Errorf("no %s line (drbench stopped early)", c.id))
			default:
				calls[i][j].Samples = append(calls[i][j].Samples, smp.usPerOp())
			}
		}
	}
}

// measureThroughput runs drbench's stat loop on each thread count of counts
// in each mode, in order, adding one operations-per-second sample to par.
func (s *session) measureThroughput(round int, order []int, counts []int, par [][]Result) {
	s.roundProgress(round, "threads doing stat")
	for k, n := range counts {
		for _, j := range order {
			res := &par[k][j]
			if res.State != StateOK {
				continue
			}
			addParSample(res, s.runners[j].command([]string{s.prog, "par", s.work, strconv.Itoa(s.budget.parUS), strconv.Itoa(n)}))
		}
	}
}

// addParSample runs drbench par's command line and adds its rate to res.
func addParSample(res *Result, line []string) {
	out, err := runCapture(command(line, ""))
	if err == nil {
		var smp float64
		if smp, err = parSample(out); err == nil {
			res.Samples = append(res.Samples, smp)
			return
		}
	}
	fail(res, err)
}

// noFastPath is argv under droidroot run --no-fastpath with the session's
// options: the extra last column of the fast path sections.
func (s *session) noFastPath(argv []string) []string {
	return append(append([]string{s.drArgs[0], s.drArgs[1], "--no-fastpath"}, s.drArgs[2:]...), argv...)
}

// LibcThroughputSection is the section of threads doing stat through
// libc's syscall() in one drbench-libc process, which the fast path
// library answers in-process (the throughput section's drbench is static).
const LibcThroughputSection = "fast path throughput"

// measureLibcThroughput runs drbench-libc par with each thread count in
// each mode and with --no-fastpath (the last column).
func (s *session) measureLibcThroughput(round int, order []int, counts []int, par [][]Result) {
	s.roundProgress(round, "threads doing stat through libc")
	cols := append(append([]int(nil), order...), len(s.runners))
	for k, n := range counts {
		argv := []string{s.libcProg, "par", s.work, strconv.Itoa(s.budget.parUS), strconv.Itoa(n)}
		for _, j := range cols {
			res := &par[k][j]
			if res.State != StateOK {
				continue
			}
			if j == len(s.runners) {
				addParSample(res, s.noFastPath(argv))
			} else {
				addParSample(res, s.runners[j].command(argv))
			}
		}
	}
}

// libcThroughputSection makes the fast path throughput section.
func libcThroughputSection(counts []int, par [][]Result) Section {
	return countsSection(LibcThroughputSection, "libc-threads-%d", "%d thread(s) doing stat through libc, total", counts, par)
}

// throughputSection makes the throughput section of par, a row per thread
// count.
func throughputSection(counts []int, par [][]Result) Section {
	return countsSection("throughput", "threads-%d", "%d thread(s) doing stat, total", counts, par)
}

// countsSection makes an ops/s section of par with a row per thread count,
// its id and title made by the formats.
func countsSection(name, idFmt, titleFmt string, counts []int, par [][]Result) Section {
	var ids, titles []string
	for _, n := range counts {
		ids = append(ids, fmt.Sprintf(idFmt, n))
		titles = append(titles, fmt.Sprintf(titleFmt, n))
	}
	return gridSection(name, "ops/s", ids, titles, par)
}

// wholePrograms is the whole-program section: each row's command line
// (guest argv) and results.
type wholePrograms struct {
	argv [][]string
	res  [][]Result
}

// newWholePrograms picks each whole-program row's program (the first of its
// candidates in the rootfs) and argv. A row whose program is missing is
// skipped in every mode; with a rootfs other than /, the native mode (a
// chroot) is n/a for a row that reads the work tree, or when not root.
func (s *session) newWholePrograms() *wholePrograms {
	w := &wholePrograms{argv: make([][]string, len(wholeRows)), res: s.newGrid(len(wholeRows))}
	for i, row := range wholeRows {
		path := ""
		if row.candidates != nil {
			for _, c := range row.candidates {
				if inRootfs(s.root, c) {
					path = c
					break
				}
			}
			if path == "" {
				for j := range s.runners {
					w.res[i][j].State, w.res[i][j].Reason = StateSkipped, "no "+row.candidates[0]+" in the rootfs"
				}
				continue
			}
		}
		switch {
		case row.script != nil && !inRootfs(s.root, "/bin/sh"):
			for j := range s.runners {
				w.res[i][j].State, w.res[i][j].Reason = StateSkipped, "no /bin/sh in the rootfs"
			}
			continue
		case row.script != nil:
			w.argv[i] = []string{"/bin/sh", "-c", row.script(s.work, path)}
		case path != "":
			w.argv[i] = append([]string{path}, row.args(s.work)...)
		default:
			w.argv[i] = row.args(s.work) // argv is complete
		}
		if s.root != "/" && !row.static {
			switch {
			case row.needsTree:
				w.res[i][0].State, w.res[i][0].Reason = StateNA, "needs -r /: a chroot cannot see the work tree"
			case os.Geteuid() != 0:
				w.res[i][0].State, w.res[i][0].Reason = StateNA, "needs root to chroot into the rootfs"
			}
		}
	}
	return w
}

// chrootOf is the directory mode j runs whole-program row row in: the
// rootfs for the native mode (a chroot) when it is not /, but for a static
// row; "" for none.
func (s *session) chrootOf(j int, row wholeRow) string {
	if s.runners[j].native && s.root != "/" && !row.static {
		return s.root
	}
	return ""
}

// measureWholePrograms times each whole program once in each mode, in order;
// the native mode chroots into a rootfs other than / (but for a static row).
func (s *session) measureWholePrograms(round int, order []int, w *wholePrograms) {
	s.roundProgress(round, "whole programs")
	for i, row := range wholeRows {
		for _, j := range order {
			res := &w.res[i][j]
			if res.State != StateOK {
				continue
			}
			ms, err := timeRuns(command(s.runners[j].command(w.argv[i]), s.chrootOf(j, row)), row.id == "startup")
			if err != nil {
				fail(res, err)
				continue
			}
			res.Samples = append(res.Samples, ms)
		}
	}
}

// InSessionSection names the section of whole programs timed inside one
// running session: drbench spawn runs each program several times under one
// droidroot (or --compare) process, so the rows leave out the tracer's own
// start-up and exit, which the whole-program section's rows include (and
// its start-up row shows alone).
const InSessionSection = "whole program in a running session"

// RunsPerRound is how many times drbench spawn runs a program per round
// (each run one sample of the in-session section).
const RunsPerRound = 5

// inSession returns the in-session grid: the same rows and modes as w,
// with w's skipped and n/a cells.
func (w *wholePrograms) inSession() [][]Result {
	g := make([][]Result, len(w.res))
	for i := range w.res {
		g[i] = append([]Result(nil), w.res[i]...)
	}
	return g
}

// measureInSession times each whole program RunsPerRound times in each mode
// with drbench spawn, in one process of that mode: its samples are the
// single runs, from fork to reaping.
func (s *session) measureInSession(round int, order []int, w *wholePrograms, g [][]Result) {
	s.roundProgress(round, "whole programs in a session")
	for i := range wholeRows {
		for _, j := range order {
			res := &g[i][j]
			if res.State != StateOK {
				continue
			}
			root := s.chrootOf(j, wholeRows[i])
			if root == "" {
				root = "-"
			}
			argv := append([]string{s.prog, "spawn", root, strconv.Itoa(RunsPerRound)}, w.argv[i]...)
			out, err := runCapture(command(s.runners[j].command(argv), ""))
			if err != nil {
				fail(res, err)
				continue
			}
			ms, err := spawnSamples(out)
			if err != nil {
				fail(res, err)
				continue
			}
			res.Samples = append(res.Samples, ms...)
		}
	}
}

// spawnSamples parses drbench spawn's "run 1 NANOSECONDS" lines into
// milliseconds.
func spawnSamples(out []byte) ([]float64, error) {
	var ms []float64
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[0] != "run" {
			return nil, fmt.Errorf("drbench spawn printed %q, want run 1 NANOSECONDS", line)
		}
		ns, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil || ns == 0 {
			return nil, fmt.Errorf("drbench spawn printed %q, want a positive number", line)
		}
		ms = append(ms, float64(ns)/1e6)
	}
	if len(ms) == 0 {
		return nil, fmt.Errorf("drbench spawn printed nothing")
	}
	return ms, nil
}

// inSessionSection finishes the in-session results and makes the section.
func inSessionSection(g [][]Result) Section {
	var ids, titles []string
	for _, row := range wholeRows {
		ids, titles = append(ids, row.id), append(titles, row.title)
	}
	return gridSection(InSessionSection, "ms", ids, titles, g)
}

// section finishes the whole-program results and makes the section.
func (w *wholePrograms) section() Section {
	var ids, titles []string
	for _, row := range wholeRows {
		ids, titles = append(ids, row.id), append(titles, row.title)
	}
	return gridSection("whole program", "ms", ids, titles, w.res)
}

// FloorSection begins the names of the sections that relate calls to a
// trap floor (their rows are the call rows, their modes all but native):
// one against FloorMech, one against DroidrootFloorMech.
const FloorSection = "call over the trap floor"

// FloorMech is the mechanism row of a minimal ptrace tracer: it answers
// each stop with the register get and set every translating handler
// needs, scheduled as droidroot's tracer is (unpinned). It is the floor
// issue 3's speed goal is stated against.
const FloorMech = "ptrace-regs-unpinned"

// DroidrootFloorMech is the mechanism row of droidroot's own tracer
// answering the same stop with a do-nothing handler (`droidroot debug
// floor`): what every droidroot call pays, polling for stops included
// (tracer.DefaultSpin), so what a call adds over it is droidroot's own
// work.
const DroidrootFloorMech = "droidroot-floor"

// floorTitles names the floors in the sections' names.
var floorTitles = map[string]string{
	FloorMech:          "a minimal tracer (ptrace + register get/set, unpinned)",
	DroidrootFloorMech: "droidroot's own loop (debug floor)",
}

// floorSection relates each call's cost under droidroot (and each
// --compare) to the trap floor of mechanism row floorID, round by round:
// (call - native call) / (floor - native syscall), what the call adds
// over what that trap adds. 1.00 is the floor itself. false when the floor
// or native was not measured.
func floorSection(floorID string, mechs []mechRow, mechRes []Result, ids, titles []string, callRes [][]Result) (Section, bool) {
	var floor, native *Result
	for i, m := range mechs {
		switch m.id {
		case floorID:
			floor = &mechRes[i]
		case "native":
			native = &mechRes[i]
		}
	}
	name := FloorSection + ", (call - native call) / (floor - native syscall) per round; floor: " + floorTitles[floorID]
	if floor == nil || native == nil || floor.State != StateOK || native.State != StateOK {
		return Section{}, false
	}
	n := len(floor.Samples)
	if len(native.Samples) != n {
		return Section{}, false
	}
	s := Section{Name: name, Unit: "x"}
	for i := range callRes {
		row := Row{ID: ids[i], Title: titles[i]}
		base := callRes[i][0]
		for _, res := range callRes[i][1:] {
			r := Result{Mode: res.Mode, State: StateNA, Reason: "not measured in every round"}
			if res.State == StateOK && base.State == StateOK && len(res.Samples) == n && len(base.Samples) == n {
				r = Result{Mode: res.Mode, State: StateOK}
				for k := 0; k < n; k++ {
					if d := floor.Samples[k] - native.Samples[k]; d > 0 {
						r.Samples = append(r.Samples, (res.Samples[k]-base.Samples[k])/d)
					}
				}
				r.finish()
			}
			row.Results = append(row.Results, r)
		}
		s.Rows = append(s.Rows, row)
	}
	return s, true
}

// command makes an exec.Cmd of argv, chrooted into chroot if set.
func command(argv []string, chroot string) *exec.Cmd {
	cmd := exec.Command(argv[0], argv[1:]...)
	if chroot != "" {
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: chroot}
		cmd.Dir = "/"
	}
	return cmd
}

// parSample turns "par N OPS NS" into operations per second.
func parSample(out []byte) (float64, error) {
	f := strings.Fields(string(out))
	if len(f) != 4 || f[0] != "par" {
		return 0, fmt.Errorf("drbench printed %q, want par N OPERATIONS NANOSECONDS", strings.TrimSpace(string(out)))
	}
	ops, err1 := strconv.ParseUint(f[2], 10, 64)
	ns, err2 := strconv.ParseUint(f[3], 10, 64)
	if err1 != nil || err2 != nil || ops == 0 || ns == 0 {
		return 0, fmt.Errorf("drbench printed %q, want positive numbers", strings.TrimSpace(string(out)))
	}
	return float64(ops) / (float64(ns) / 1e9), nil
}

// timeRuns runs cmd (several times when repeat: short programs) and returns the
// wall-clock milliseconds of one run.
func timeRuns(cmd *exec.Cmd, repeat bool) (float64, error) {
	n := 1
	if repeat {
		n = 5
	}
	var total time.Duration
	for k := 0; k < n; k++ {
		c := exec.Command(cmd.Path, cmd.Args[1:]...)
		c.SysProcAttr, c.Dir = cmd.SysProcAttr, cmd.Dir
		t0 := time.Now()
		if _, err := runCapture(c); err != nil {
			return 0, err
		}
		total += time.Since(t0)
	}
	return float64(total.Microseconds()) / 1e3 / float64(n), nil
}

// inRootfs reports whether the guest path names a regular file in the rootfs at root,
// following symlinks the way the guest would (an absolute target is inside root).
func inRootfs(root, guest string) bool {
	for hops := 0; hops < 16; hops++ {
		host := filepath.Join(root, guest)
		st, err := os.Lstat(host)
		if err != nil {
			return false
		}
		if st.Mode()&os.ModeSymlink == 0 {
			// Parent directories may be symlinks too (/bin -> usr/bin): resolve them the
			// host's way, which is right for relative ones, the usual case.
			st, err := os.Stat(host)
			return err == nil && st.Mode().IsRegular()
		}
		target, err := os.Readlink(host)
		if err != nil {
			return false
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(guest), target)
		}
		guest = target
	}
	return false
}
