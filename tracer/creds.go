package tracer

import (
	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/ident"
	"github.com/droidroot/droidroot/loader"
)

// Creds returns the calling thread's emulated credentials: those of
// Config.Creds as changed since, or droidroot's own real ones when
// Config.Creds is nil (so that a set*id handler is consistent even when the
// table has one without them). Credentials are per thread as in the
// kernel: a new thread or process starts with a copy of its creator's, and
// glibc's setxid broadcast makes every thread of a process make the same
// set*id call.
func (c *Call) Creds() *ident.Creds { return &c.th.creds }

// IDsShared reports whether every traced thread of the calling process has
// the calling thread's emulated uid, euid, suid, gid, egid and sgid (what
// the get*id family answers).
func (c *Call) IDsShared() bool {
	me := &c.th.creds
	for _, th := range c.t.threads {
		if th.Proc != c.th.Proc || th == c.th {
			continue
		}
		o := &th.creds
		if o.UID != me.UID || o.EUID != me.EUID || o.SUID != me.SUID || o.GID != me.GID || o.EGID != me.EGID || o.SGID != me.SGID {
			return false
		}
	}
	return true
}

// ThreadCreds returns the emulated credentials of traced thread tid, or nil.
// Call it on the tracer's thread.
func (t *Tracer) ThreadCreds(tid int) *ident.Creds {
	t.onTracerThread("ThreadCreds")
	if th := t.threads[tid]; th != nil {
		return &th.creds
	}
	return nil
}

// execCreds applies exec's credential rules to th and returns the auxv ids
// the loader must publish, or nil when Config.Creds is not set (the kernel's
// are right then, and a loader from PROOT_LOADER need not know the flag).
func (t *Tracer) execCreds(th *Thread) *loader.IDs {
	secure := th.creds.Exec()
	if t.cfg.Creds == nil {
		return nil
	}
	return &loader.IDs{UID: th.creds.UID, EUID: th.creds.EUID, GID: th.creds.GID, EGID: th.creds.EGID, Secure: secure}
}

// Answered reports whether the call was answered at entry (Return or Fail):
// the kernel will not run it.
func (c *Call) Answered() bool { return c.skipped }

// Fail0 answers the call with errno err, or with 0 (success) when err is 0.
func (c *Call) Fail0(err unix.Errno) { c.Return(-int64(err)) }

// CredsEmulated reports whether droidroot emulates credentials in this run
// (Config.Creds set: -0, -i or the set*id emulation), so that Creds is the
// guest's view rather than droidroot's own ids.
func (c *Call) CredsEmulated() bool { return c.t.cfg.Creds != nil }
