package emul

import (
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/pathmap"
	"github.com/droidroot/droidroot/tracer"
)

// The guest's current directory follows chdir and fchdir without a
// syscall-exit stop: the entry handler records where the call goes
// (tracer.FS.Pending) and lets it run, and the next reader of the cwd
// (a relative path, getcwd, /proc/<pid>/cwd) settles it by reading
// /proc/<tid>/cwd: one readlink, which is what an exit stop would have
// needed on top of the stop itself. A chdir costs one stop, as any path
// call. A chdir or fchdir made while an earlier change is pending settles
// that one first (settleBefore): if the new one fails, the cwd is where
// the earlier one went, under the guest name it was given there (a
// directory bound at two guest paths has two).

// guestCwd returns the calling thread's guest cwd.
func guestCwd(c *tracer.Call) string { return settleCwdIn(c, c.Tid(), c.FS(), nil) }

// guestCwdIn is guestCwd for a lookup in batch b.
func guestCwdIn(c *tracer.Call, b *pathmap.Batch) string {
	return settleCwdIn(c, c.Tid(), c.FS(), b)
}

// settleCwd returns the guest cwd of fs, which thread tid shares, after
// settling its pending change.
func settleCwd(c *tracer.Call, tid int, fs *tracer.FS) string {
	return settleCwdIn(c, tid, fs, nil)
}

// settleCwdIn is settleCwd for a lookup in batch b.
func settleCwdIn(c *tracer.Call, tid int, fs *tracer.FS, b *pathmap.Batch) string {
	p := fs.Pending
	if p == nil {
		if !fs.Lost {
			m := c.Mapper()
			if fs.Host != "" && fs.HostTokenOf == fs.Host && m.DirUnchanged(fs.Host, fs.HostToken, b) {
				// Nothing on the cwd's path was renamed since it was read.
				return fs.Cwd
			}
			// A rename of the directory or of an ancestor (by this process,
			// another, or the host) changes what the kernel's cwd reads.
			kernel, err := readlinkHost(procCwd(tid))
			switch {
			case err != nil:
			case fs.Host == "":
				fs.Host = kernel // first read: what Cwd is
			case kernel != fs.Host:
				setCwdGuest(c, fs, kernel)
			}
			if err == nil && !fs.Lost && fs.Host == kernel {
				// Watch the path, then read it once more: a rename from
				// then on is reported.
				if tok := m.DirToken(kernel); tok != nil {
					if again, err := readlinkHost(procCwd(tid)); err == nil && again == kernel {
						fs.HostToken, fs.HostTokenOf = tok, kernel
					}
				}
			}
		}
		return fs.Cwd
	}
	// The call has returned if its own thread asks (its calls run in
	// order), or if that thread is gone or no longer shares fs; another
	// thread's call may still be on its way into the kernel.
	done := p.Tid == tid || c.Tracer().ThreadFS(p.Tid) != fs
	kernel, err := cwdHost(c, tid)
	if p.Guest != "" {
		landed := err == nil && p.Host != "" && kernel == p.Host
		if !landed && p.Host == "" {
			var st unix.Stat_t
			landed = unix.Stat(procCwd(tid), &st) == nil && st.Dev == p.Dev && st.Ino == p.Ino
		}
		if landed {
			fs.Cwd, fs.Pending, fs.Lost, fs.Host = p.Guest, nil, false, p.Host
			return fs.Cwd
		}
		if !done {
			return fs.Cwd // not made yet: still the old directory
		}
	}
	// fchdir, or a chdir that failed or landed elsewhere: the kernel's
	// directory, under the guest name the cwd had if it is still there.
	if err == nil {
		if h, e := c.Mapper().Resolve(c.PathProc(), "/", fs.Cwd, true); e != nil || h != kernel {
			setCwdGuest(c, fs, kernel)
		} else {
			fs.Lost, fs.Host = false, kernel
		}
	} else if p.Guest == "" {
		fs.Lost, fs.Host = true, "" // an fchdir too deep to read back
	}
	if done {
		fs.Pending = nil
	}
	return fs.Cwd
}

// cwdHost reads thread tid's cwd as the kernel has it (readlinkDir: an
// fchdir to a directory deeper than PATH_MAX too).
func cwdHost(c *tracer.Call, tid int) (string, error) { return readlinkDir(c, procCwd(tid)) }

// readlinkDir reads magic link link (/proc/<tid>/cwd, /proc/<tid>/fd/<N>),
// or, for a directory deeper than PATH_MAX, which the kernel cannot print
// but takes relative paths from (rm -r of a deep tree), finds its path as
// pathmap's DirHost does.
func readlinkDir(c *tracer.Call, link string) (string, error) {
	host, err := readlinkHost(link)
	if err == unix.ENAMETOOLONG {
		if h, ok := c.Mapper().DirHost(link); ok {
			return h, nil
		}
	}
	return host, err
}

func procCwd(tid int) string { return "/proc/" + strconv.Itoa(tid) + "/cwd" }

// procFd is the /proc path of file descriptor fd of task tid, which the
// kernel follows to the open file (however long its path).
func procFd(tid, fd int) string { return "/proc/" + strconv.Itoa(tid) + "/fd/" + strconv.Itoa(fd) }

// setCwdGuest sets fs.Cwd to the guest cwd for the kernel's host cwd
// host: its guest path, or "/" if it lies outside the guest (fs.Lost).
func setCwdGuest(c *tracer.Call, fs *tracer.FS, host string) {
	g, ok := toGuest(c, host)
	if !ok {
		g, host = "/", ""
	}
	fs.Cwd, fs.Lost, fs.Host = g, !ok, host
}

// cwdFromKernel sets fs.Cwd to the guest path of thread tid's cwd as the
// kernel has it (unchanged but fs.Lost if the kernel cannot say, as for
// a directory deeper than PATH_MAX).
func cwdFromKernel(c *tracer.Call, tid int, fs *tracer.FS) {
	if host, err := cwdHost(c, tid); err == nil {
		setCwdGuest(c, fs, host)
	} else {
		fs.Lost, fs.Host = true, ""
	}
}

// chdirHandler translates chdir's path and leaves the change pending (see
// above). A chdir to a path that does not resolve fails at once; one that
// the tracer cannot name for the settling keeps its exit stop.
var chdirHandler = tracer.Handler{
	Enter: func(c *tracer.Call) {
		settleBefore(c)
		t, errno := translate(c, pathArgAt(0, always), pathmap.WantGuest)
		if errno != 0 {
			c.Fail(errno)
			return
		}
		c.Data = t.res.Guest
		searchTarget(c, t.host)
		if errno := rewrite(c, 0, t); errno != 0 {
			c.Fail(errno)
			return
		}
		if t.res.Guest == "" {
			return
		}
		pc := &tracer.PendingCwd{Tid: c.Tid(), Guest: t.res.Guest, Host: t.host}
		if len(pc.Host) > 1 {
			pc.Host = strings.TrimRight(pc.Host, "/") // as the kernel reports it
		}
		if len(t.host) >= tracer.PathMax || t.host == "" || t.host[0] != '/' {
			// Too deep for /proc/<tid>/cwd to be read back: identify the
			// directory now, as the kernel will see the path.
			var st unix.Stat_t
			if unix.Stat(tracerPath(c, pathArgAt(0, always), t), &st) != nil {
				return // the exit stop settles it
			}
			pc.Host, pc.Dev, pc.Ino = "", st.Dev, st.Ino
		}
		c.FS().Pending = pc
		c.NoExit()
	},
	Exit: func(c *tracer.Call) {
		if c.Ret() != 0 {
			return
		}
		if g := c.Data.(string); g != "" {
			c.FS().Cwd, c.FS().Lost, c.FS().Host = g, false, ""
		} else {
			cwdFromKernel(c, c.Tid(), c.FS())
		}
	},
}

// fchdirHandler leaves the change pending: its directory is read back
// from the kernel when the cwd is next needed. A fake root's fchdir into a
// directory the real user may not search gets its search (searchTarget).
var fchdirHandler = tracer.Handler{
	Enter: func(c *tracer.Call) {
		settleBefore(c)
		c.FS().Pending = &tracer.PendingCwd{Tid: c.Tid()}
		if emulationOf(c).dac.searcher(c) != nil {
			if host, errno := fdHostPath(c, int(int32(c.Arg(0)))); errno == 0 {
				searchTarget(c, host)
			}
		}
	},
}

// settleBefore settles the calling thread's pending cwd change, if any,
// before a chdir or fchdir records its own: a failing call's settling
// falls back on the cwd as it was before it, which must then be known.
func settleBefore(c *tracer.Call) {
	if c.FS().Pending != nil {
		guestCwd(c)
	}
}
