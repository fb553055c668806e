package emul

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/droidroot/droidroot/fastpath"
	"github.com/droidroot/droidroot/ident"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/pathmap"
	"github.com/droidroot/droidroot/tracer"
)

// The guest's view of the mount table and of /dev/shm.
//
// /proc/PID/mountinfo and /proc/PID/mounts (also through /proc/self,
// /proc/mounts and /etc/mtab) list the rootfs as "/" and each bind as a
// mount at its guest path, with the file system, options and source of the
// host mount it lies on, followed by the host mounts under a bound
// directory (a bound /dev brings /dev/pts and /dev/shm). The tracer writes
// that content to a file under PROOT_TMP_DIR and points the open at it.
//
// statfs and fstatfs of /dev/shm or anything in it report TMPFS_MAGIC, as
// glibc's shm_open and Proton expect, whatever the bind source is.

// mountLine is one line of /proc/PID/mountinfo.
type mountLine struct {
	ID, Parent int
	Dev        string // major:minor
	Root       string // the mount's root inside its file system
	Point      string // mount point
	Opts       string // per-mount options
	Optional   []string
	FSType     string
	Source     string
	SuperOpts  string
}

// unescapeMount undoes the octal escapes (\040 ...) of mountinfo fields.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// escapeMount escapes what the kernel escapes in mount table paths.
func escapeMount(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ', '\t', '\n', '\\':
			fmt.Fprintf(&b, `\%03o`, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// parseMountinfo parses the content of a /proc/PID/mountinfo.
func parseMountinfo(data string) []mountLine {
	var out []mountLine
	for _, line := range strings.Split(data, "\n") {
		f := strings.Fields(line)
		if len(f) < 10 {
			continue
		}
		sep := -1
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+1 >= len(f) {
			continue
		}
		id, _ := strconv.Atoi(f[0])
		parent, _ := strconv.Atoi(f[1])
		m := mountLine{ID: id, Parent: parent, Dev: f[2], Root: unescapeMount(f[3]),
			Point: unescapeMount(f[4]), Opts: f[5], Optional: f[6:sep], FSType: f[sep+1]}
		if sep+2 < len(f) {
			m.Source = f[sep+2]
		}
		if sep+3 < len(f) {
			m.SuperOpts = f[sep+3]
		}
		out = append(out, m)
	}
	return out
}

// under reports whether path p is dir or lies under it.
func under(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// hostMountOf returns the host mount that host path p lies on: the last
// (topmost) of the deepest mount points containing it.
func hostMountOf(mounts []mountLine, p string) (mountLine, bool) {
	best, found := mountLine{}, false
	for _, m := range mounts {
		if under(p, m.Point) && (!found || len(m.Point) >= len(best.Point)) {
			best, found = m, true
		}
	}
	return best, found
}

// guestMount is one mount of the guest's view: a guest path and the
// host path shown there.
type guestMount struct {
	guest, host string
}

// guestMounts computes the guest's mount table from the host's: the rootfs
// at "/" and every binding at its guest path, each followed by the host
// mounts below a bound directory, parents before children.
func guestMounts(host []mountLine, root string, binds []pathmap.Binding) []mountLine {
	all := []guestMount{{"/", root}}
	for _, b := range binds {
		if b.Guest == "/" {
			all[0].host = b.Host
			continue
		}
		if b.Guest == fastpath.GuestPath {
			continue // droidroot's own: not a mount the guest made or asked for
		}
		all = append(all, guestMount{b.Guest, b.Host})
	}
	sort.SliceStable(all[1:], func(i, j int) bool {
		return strings.Count(all[1+i].guest, "/") < strings.Count(all[1+j].guest, "/")
	})
	var out []mountLine
	nextID := 1000
	for _, g := range all {
		m, ok := hostMountOf(host, g.host)
		if !ok {
			continue
		}
		rel := strings.TrimPrefix(g.host, m.Point)
		if m.Point == "/" {
			rel = g.host
		}
		e := m
		e.ID = nextID
		nextID++
		e.Root = filepath.Clean(m.Root + "/" + rel)
		e.Point = g.guest
		e.Parent = parentID(out, g.guest, e.ID)
		if g.guest == "/dev/shm" {
			// statfs says tmpfs there (see statfsHandler): so does the table.
			e.FSType, e.Source, e.SuperOpts = "tmpfs", "tmpfs", "rw"
		}
		out = append(out, e)
		// Host mounts below a bound directory.
		for _, sub := range host {
			if sub.Point == g.host || !under(sub.Point, g.host) {
				continue
			}
			gp := filepath.Join(g.guest, strings.TrimPrefix(sub.Point, g.host))
			if shadowed(all, gp, g.guest) {
				continue
			}
			s := sub
			s.ID = nextID
			nextID++
			s.Point = gp
			s.Parent = parentID(out, gp, s.ID)
			out = append(out, s)
		}
	}
	return out
}

// shadowed reports whether guest path gp lies under a binding deeper than
// the one (at guest) that brings it.
func shadowed(all []guestMount, gp, guest string) bool {
	for _, o := range all {
		if o.guest != guest && len(o.guest) > len(guest) && under(gp, o.guest) {
			return true
		}
	}
	return false
}

// parentID is the id of the deepest mount of out containing guest path p
// (self for the first, as the root's parent is outside the table).
func parentID(out []mountLine, p string, self int) int {
	best, depth := self-1, -1
	for _, m := range out {
		if under(p, m.Point) && p != m.Point && len(m.Point) > depth {
			best, depth = m.ID, len(m.Point)
		}
	}
	if depth < 0 && len(out) > 0 {
		for _, m := range out {
			if m.Point == p && m.ID != self {
				best = m.ID // stacked on an earlier mount at the same point
			}
		}
	}
	return best
}

// formatMountinfo renders lines as /proc/PID/mountinfo does.
func formatMountinfo(lines []mountLine) string {
	var b strings.Builder
	for _, m := range lines {
		fmt.Fprintf(&b, "%d %d %s %s %s %s", m.ID, m.Parent, m.Dev, escapeMount(m.Root), escapeMount(m.Point), m.Opts)
		for _, o := range m.Optional {
			b.WriteString(" " + o)
		}
		fmt.Fprintf(&b, " - %s %s %s\n", m.FSType, m.Source, m.SuperOpts)
	}
	return b.String()
}

// formatMounts renders lines as /proc/PID/mounts does: the per-mount
// options followed by the file system's own (without its rw/ro).
func formatMounts(lines []mountLine) string {
	var b strings.Builder
	for _, m := range lines {
		opts := m.Opts
		if _, rest, ok := strings.Cut(m.SuperOpts, ","); ok {
			opts += "," + rest
		}
		fmt.Fprintf(&b, "%s %s %s %s 0 0\n", escapeMount(m.Source), escapeMount(m.Point), m.FSType, opts)
	}
	return b.String()
}

// procFile is a file of a traced process's /proc directory that the guest
// sees generated: its process, the thread it names (the process's own
// for /proc/PID/...), and its kind: "mountinfo", "mounts", "auxv" or
// "status".
type procFile struct {
	pid, tid int
	kind     string
}

// procViewOf recognises a host path naming a traced process's mount
// table, auxiliary vector or status (also a thread's, below task/): a file
// procViews generates.
func procViewOf(c *tracer.Call, host string) (procFile, bool) {
	s, ok := strings.CutPrefix(host, "/proc/")
	if !ok {
		return procFile{}, false
	}
	first, rest, _ := strings.Cut(s, "/")
	pid, tid := 0, 0
	switch first {
	case "self":
		pid = c.Pid()
	case "thread-self":
		pid, tid = c.Pid(), c.Tid()
		rest = "x/" + rest
		_, rest, _ = strings.Cut(rest, "/")
	default:
		n, err := strconv.Atoi(first)
		if err != nil {
			return procFile{}, false
		}
		pid = n
	}
	if r, ok := strings.CutPrefix(rest, "task/"); ok {
		t, r, _ := strings.Cut(r, "/")
		n, err := strconv.Atoi(t)
		if err != nil {
			return procFile{}, false
		}
		tid, rest = n, r
	}
	if rest != "mountinfo" && rest != "mounts" && rest != "auxv" && rest != "status" {
		return procFile{}, false
	}
	if tid == 0 {
		tid = pid
	}
	if p := c.Tracer().Process(pid); p == nil || c.Tracer().Process(tid) != p {
		return procFile{}, false
	}
	return procFile{pid, tid, rest}, true
}

// guestStatus is the content of /proc/PID/status (or a thread's) as a
// chroot shows it: TracerPid names the thread's emulated tracer (a guest's
// ptrace), else 0, where the kernel names droidroot, which traces every
// guest thread (programs read it to tell whether a debugger is attached:
// Go's runtime tests, anti-debugging checks). With emulated credentials
// (creds not nil: -0, -i, Android's set*id emulation) the ids, groups and
// capability sets are the thread's emulated ones, in the kernel's format
// (Go's syscall tests read them back after each set*id call).
func guestStatus(data string, tracerTid int, creds *ident.Creds) string {
	data = statusField(data, "TracerPid", strconv.Itoa(tracerTid))
	if creds == nil {
		return data
	}
	ids := func(a, b, c, d uint32) string {
		return fmt.Sprintf("%d\t%d\t%d\t%d", a, b, c, d)
	}
	data = statusField(data, "Uid", ids(creds.UID, creds.EUID, creds.SUID, creds.FSUID))
	data = statusField(data, "Gid", ids(creds.GID, creds.EGID, creds.SGID, creds.FSGID))
	var g strings.Builder
	for i, id := range creds.Groups {
		if i > 0 {
			g.WriteByte(' ')
		}
		g.WriteString(strconv.FormatUint(uint64(id), 10))
	}
	g.WriteByte(' ') // the kernel's trailing space
	data = statusField(data, "Groups", g.String())
	data = statusField(data, "CapInh", fmt.Sprintf("%016x", creds.CapInh))
	data = statusField(data, "CapPrm", fmt.Sprintf("%016x", creds.CapPrm))
	return statusField(data, "CapEff", fmt.Sprintf("%016x", creds.CapEff))
}

// statusField replaces the value of field name (a line "name:\tvalue") of
// a /proc status file, when it has one.
func statusField(data, name, value string) string {
	i := 0
	if !strings.HasPrefix(data, name+":") {
		i = strings.Index(data, "\n"+name+":")
		if i < 0 {
			return data
		}
		i++
	}
	end := strings.IndexByte(data[i:], '\n')
	if end < 0 {
		end = len(data) - i
	}
	return data[:i] + name + ":\t" + value + data[i+end:]
}

// procViews writes the generated files.
type procViews struct {
	ashmem bool // --ashmem-memfd: /dev/ashmem opens become memfds
	tmpDir string
	dir    string
}

// file writes the guest's mount table of pf's process in format pf.kind,
// its auxiliary vector (kind "auxv") or its thread's status, and returns
// its host path.
func (v *procViews) file(c *tracer.Call, pf procFile) (string, error) {
	var content string
	pid, kind := pf.pid, pf.kind
	if kind == "status" {
		f := "/proc/" + strconv.Itoa(pid) + "/status"
		if pf.tid != pid {
			f = "/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pf.tid) + "/status"
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		var creds *ident.Creds
		if c.CredsEmulated() {
			creds = c.Tracer().ThreadCreds(pf.tid)
		}
		content = guestStatus(string(data), c.Tracer().GuestTracerOf(pf.tid), creds)
	} else if kind == "auxv" {
		// The vector the loader built for the program, where the kernel's
		// file has the loader's (AT_ENTRY, AT_PHDR, AT_BASE, AT_EXECFN).
		b, err := c.Tracer().Auxv(pid)
		if err != nil {
			return "", err
		}
		content = string(b)
	} else {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/mountinfo")
		if err != nil {
			return "", err
		}
		lines := guestMounts(parseMountinfo(string(data)), c.Mapper().Root(), c.Mapper().Bindings())
		content = formatMountinfo(lines)
		if kind == "mounts" {
			content = formatMounts(lines)
		}
	}
	if v.dir == "" {
		tmp := v.tmpDir
		if tmp == "" {
			tmp = os.TempDir()
		}
		// Searchable by all (0711, no listing): a guest process whose
		// real ids a root droidroot let change (su, a daemon that drops
		// its privileges) opens its files here as the other user.
		d := filepath.Join(tmp, procViewDir+strconv.Itoa(os.Getuid()))
		if err := unix.Mkdirat(unix.AT_FDCWD, d, 0o711); err != nil && err != unix.EEXIST {
			return "", err
		}
		if err := unix.Chmod(d, 0o711); err != nil {
			return "", err
		}
		v.dir = d
	}
	path := filepath.Join(v.dir, strconv.Itoa(os.Getpid())+"-"+strconv.Itoa(c.Tid())+"-"+kind)
	tmp := path + ".tmp"
	// The kernel's modes (auxv is its task's only), and, where droidroot
	// is root, the opener's effective ids as its owner (those /proc/TID is
	// owned by), so that the opener reads it as it may read the kernel's.
	mode := os.FileMode(0o444)
	if kind == "auxv" {
		mode = 0o400
	}
	unix.Unlinkat(unix.AT_FDCWD, tmp, 0)
	if err := os.WriteFile(tmp, []byte(content), mode); err != nil {
		return "", err
	}
	if os.Geteuid() == 0 {
		var st unix.Stat_t
		if unix.Stat("/proc/"+strconv.Itoa(c.Tid()), &st) == nil && (st.Uid != 0 || st.Gid != 0) {
			unix.Chown(tmp, int(st.Uid), int(st.Gid))
		}
	}
	if err := unix.Renameat(unix.AT_FDCWD, tmp, unix.AT_FDCWD, path); err != nil {
		return "", err
	}
	return path, nil
}

// openHandler is open/openat's path translation, with the opens of mount
// tables pointed at the guest's view.
// The generated file is removed once the open has run.
func (v *procViews) openHandler(a pathArg, flagsArg int) tracer.Handler {
	return tracer.Handler{Exit: func(c *tracer.Call) {
		switch d := c.Data.(type) {
		case string:
			unix.Unlinkat(unix.AT_FDCWD, d, 0)
		case exclCreate:
			d.exit(c)
		}
	}, Enter: func(c *tracer.Call) {
		t, errno := translate(c, a, 0)
		if (errno == unix.ENOTDIR || errno == unix.ENOENT || errno == unix.ELOOP) &&
			c.Arg(flagsArg)&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT && createsThroughSlash(c, a) {
			errno = unix.EISDIR
		}
		if errno != 0 {
			if g, err := c.ReadPath(c.Arg(a.path)); err == nil && v.ashmem && isAshmemOpen(g, "") {
				c.NoExit()
				ashmemOpen(c, c.Arg(flagsArg))
				return
			}
			c.Fail(errno)
			return
		}
		if l2s := emulationOf(c).l2s; l2s != nil && isL2SData(filepath.Base(t.host)) && !isL2SData(filepath.Base(t.guest)) {
			l2s.noteOpen(c, a.dirfd, t.guest, t.host)
		}
		if v.ashmem && isAshmemOpen(t.guest, t.host) {
			c.NoExit()
			ashmemOpen(c, c.Arg(flagsArg))
			return
		}
		if c.Arg(flagsArg)&unix.O_ACCMODE == unix.O_RDONLY && strings.HasPrefix(t.host, "/proc/") {
			if pf, ok := procViewOf(c, t.host); ok {
				if f, err := v.file(c, pf); err == nil {
					t.host = f
					c.Data = f
				}
			}
		}
		if c.Data == nil && t.missing && c.Arg(flagsArg)&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT {
			// Created below its pinned parent (not where PinnedFile puts a
			// missing name, where nothing can be created).
			t.pinned, t.pinnedHost = "", ""
			if p, pin, _ := c.Mapper().PinnedName(t.host); pin == pathmap.Pinned {
				t.pinned, t.pinnedHost = p, t.host
			}
			c.Data = exclCreate{flagsArg}.enter(c)
		}
		if c.Data == nil {
			c.NoExit()
		}
		writeArgs(c, []pathArg{a}, []translated{t})
	}}
}

// createsThroughSlash tells whether an open with O_CREAT (not O_EXCL) of
// path argument a, whose lookup failed (ENOTDIR, ENOENT, ELOOP), reaches
// through the symlinks of its last component a name with a trailing slash
// ("file/") whose parent is there: the kernel refuses such a name with
// EISDIR before it looks at what it is (open_last_lookups), where the
// lookup, which followed the links, found a file and a slash, or followed
// that name too, to a missing file or a loop (found by TestOracleRandom).
func createsThroughSlash(c *tracer.Call, a pathArg) bool {
	guest, err := c.ReadPath(c.Arg(a.path))
	if err != nil || guest == "" || strings.HasSuffix(guest, "/") {
		return false // a slash of its own: Entry's lookup, the kernel's EISDIR
	}
	dirfd := a.dirfd
	for range 40 { // the kernel's limit of links followed
		r, errno := lookupAt(c, dirfd, guest, pathmap.WantGuest) // the last component not followed
		if errno != 0 || r.Guest == "" {
			return false
		}
		target, err := os.Readlink(r.Host)
		if err != nil || target == "" {
			return false // no symlink: the ENOTDIR is the lookup's own
		}
		if !strings.HasPrefix(target, "/") {
			target = filepath.Dir(r.Guest) + "/" + target
		}
		if strings.HasSuffix(target, "/") {
			r, errno := lookupAt(c, -1, strings.TrimRight(target, "/"), pathmap.Entry)
			return errno == 0 && parentErrno(r.Host) == 0 // the lookup checks no name before the last
		}
		guest, dirfd = target, -1
	}
	return false
}

// exclCreate is an open with O_CREAT, without O_EXCL, of a name the lookup
// found missing, made with O_EXCL added (issue 18): the name is given
// below its pinned parent (the file cannot be pinned, it does not exist),
// and a symlink created there before the kernel's walk would be followed
// with the host's root, creating a host file; with O_EXCL the kernel
// follows nothing (and the descriptor's flags do not keep it). EEXIST at
// the exit stop (a name that appeared meanwhile, which the guest's open
// would have opened) makes the call run again, translated again; the
// guest's flags register is given back in any case.
type exclCreate struct{ flagsArg int }

func (x exclCreate) enter(c *tracer.Call) exclCreate {
	c.SetArg(x.flagsArg, c.Arg(x.flagsArg)|unix.O_EXCL)
	return x
}

func (x exclCreate) exit(c *tracer.Call) {
	if c.Ret() == -int64(unix.EEXIST) {
		for i := 0; i <= x.flagsArg; i++ {
			c.SetArg(i, c.Arg(i))
		}
		c.RestartAtExit()
		return
	}
	c.SetArg(x.flagsArg, c.Arg(x.flagsArg))
}

// tmpfsMagic is TMPFS_MAGIC, statfs's f_type of a tmpfs.
const tmpfsMagic = 0x01021994

// inDevShm reports whether guest path g is /dev/shm or lies in it.
func inDevShm(g string) bool { return g == "/dev/shm" || strings.HasPrefix(g, "/dev/shm/") }

// procViewFile reports whether host path h is a file procViews generated
// (a /proc file the guest opened: its directory procViewDir+UID).
func procViewFile(h string) bool {
	return strings.HasPrefix(filepath.Base(filepath.Dir(h)), procViewDir)
}

// procViewDir starts the name of the directory procViews writes its files
// in (droidroot's uid follows; fastpath.c's proc_view knows it too).
const procViewDir = "droidroot-proc-"

// statfsHandler is statfs (fd < 0) or fstatfs (fd: argument 0): f_type
// is TMPFS_MAGIC in /dev/shm, and a /proc file the guest sees generated
// (procViews) reports /proc's file system, as the kernel's file would.
func statfsHandler(isFd bool) tracer.Handler {
	a := pathArgAt(0, always)
	return tracer.Handler{
		Enter: func(c *tracer.Call) {
			var guest string
			if isFd {
				h, errno := fdHostPath(c, int(int32(c.Arg(0))))
				if errno != 0 || !strings.HasPrefix(h, "/") {
					c.NoExit()
					return
				}
				if procViewFile(strings.TrimSuffix(h, " (deleted)")) {
					c.Data = procViewMark{}
					return
				}
				guest = guestOrHost(c, strings.TrimSuffix(h, " (deleted)"))
			} else {
				t, errno := translate(c, a, pathmap.WantGuest)
				if errno != 0 {
					c.Fail(errno)
					return
				}
				guest = t.res.Guest
				writeArgs(c, []pathArg{a}, []translated{t})
			}
			if !inDevShm(guest) {
				c.NoExit()
			}
		},
		Exit: func(c *tracer.Call) {
			if c.Ret() != 0 {
				return
			}
			if _, ok := c.Data.(procViewMark); ok {
				if b, errno := statfsBytes("/proc"); errno == 0 {
					c.WriteMem(c.Arg(1), b)
				}
				return
			}
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], tmpfsMagic)
			c.WriteMem(c.Arg(1), b[:])
		},
	}
}

// procViewMark is statfsHandler's note that fstatfs's descriptor is a
// generated /proc file.
type procViewMark struct{}
