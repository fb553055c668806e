package emul

import (
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/pathmap"
	"github.com/droidroot/droidroot/tracer"
)

// The guest's current directory follows chdir and fchdir without a
// syscall-exit stop: the entry handler records where the call goes
// (tracer.FS.Pending) and lets it run, and the next reader of the cwd
// (a relative path, getcwd, /proc/<pid>/cwd) settles it by asking the
// kernel where the thread is. A chdir costs one trap, as any path call,
// and a pending change costs one stat of /proc/<tid>/cwd when it is
// settled (a readlink for fchdir, which is what its exit stop read).

// guestCwd returns the calling thread's guest cwd.
func guestCwd(c *tracer.Call) string { return settleCwd(c, c.Tid(), c.FS()) }

// settleCwd returns the guest cwd of fs, which thread tid shares, after
// settling its pending change.
func settleCwd(c *tracer.Call, tid int, fs *tracer.FS) string {
	p := fs.Pending
	if p == nil {
		return fs.Cwd
	}
	// The call has returned if its own thread asks (its calls run in
	// order), or if that thread is gone or no longer shares fs; another
	// thread's call may still be on its way into the kernel.
	done := p.Tid == tid || c.Tracer().ThreadFS(p.Tid) != fs
	if p.Guest != "" {
		var st unix.Stat_t
		if unix.Stat(procCwd(tid), &st) == nil && st.Dev == p.Dev && st.Ino == p.Ino {
			fs.Cwd, fs.Pending = p.Guest, nil
			return fs.Cwd
		}
		if !done {
			return fs.Cwd // not made yet: still the old directory
		}
	}
	// fchdir, or a chdir that did not land where expected: ask the kernel.
	cwdFromKernel(c, tid, fs)
	if done {
		fs.Pending = nil
	}
	return fs.Cwd
}

func procCwd(tid int) string { return "/proc/" + strconv.Itoa(tid) + "/cwd" }

// cwdFromKernel sets fs.Cwd to the guest path of thread tid's cwd as the
// kernel has it ("/" if it lies outside the guest; unchanged if the kernel
// cannot say, as for a directory deeper than PATH_MAX).
func cwdFromKernel(c *tracer.Call, tid int, fs *tracer.FS) {
	host, err := readlinkHost(procCwd(tid))
	if err != nil {
		return
	}
	if g, ok := toGuest(c, host); ok {
		fs.Cwd = g
	} else {
		fs.Cwd = "/"
	}
}

// chdirHandler translates chdir's path. When the target is a directory the
// change is left pending (see above); otherwise the call most likely fails,
// and its exit stop settles it.
var chdirHandler = tracer.Handler{
	Enter: func(c *tracer.Call) {
		fs := c.FS()
		guestCwd(c)
		t, errno := translate(c, p(0, always), pathmap.WantGuest)
		if errno != 0 {
			c.Fail(errno)
			return
		}
		c.Data = t.res.Guest
		if errno := rewrite(c, 0, t); errno != 0 {
			c.Fail(errno)
			return
		}
		if t.res.Guest == "" {
			return
		}
		target := t.host
		if t.keep && t.host == t.res.Host {
			target = procCwd(c.Tid()) + "/" + t.guest // relative, as the kernel sees it
		}
		var st unix.Stat_t
		if unix.Stat(target, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return
		}
		fs.Pending = &tracer.PendingCwd{Tid: c.Tid(), Guest: t.res.Guest, Dev: st.Dev, Ino: st.Ino}
		c.NoExit()
	},
	Exit: func(c *tracer.Call) {
		if c.Ret() != 0 {
			return
		}
		if g := c.Data.(string); g != "" {
			c.FS().Cwd = g
		} else {
			cwdFromKernel(c, c.Tid(), c.FS())
		}
	},
}

// fchdirHandler leaves the change pending: its directory is read back
// from the kernel when the cwd is next needed.
var fchdirHandler = tracer.Handler{
	Enter: func(c *tracer.Call) {
		guestCwd(c)
		c.FS().Pending = &tracer.PendingCwd{Tid: c.Tid()}
	},
}
