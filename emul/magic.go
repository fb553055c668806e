package emul

import (
	"strings"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/pathmap"
	"github.com/droidroot/droidroot/tracer"
)

// pathProc identifies the calling thread to pathmap for a lookup of a path
// the guest named: with magicLinks, so that a walk through a procfs magic
// link (/proc/<pid>/{root,cwd,exe,fd/N,...}, also reached through
// /proc/self, /proc/thread-self, /dev/fd, /dev/std*, or a symlink to them)
// goes on in the guest's view instead of the host's.
func pathProc(c *tracer.Call) pathmap.Proc {
	pr := c.PathProc()
	pr.Links = magicLinks{c}
	pr.Search = emulationOf(c).dac.searcher(c)
	return pr
}

// magicLinks answers pathmap's questions about magic links from the
// tracer's state (pathmap.MagicLinks): what readlink shows the guest
// (readlinkGuest: a traced process's program and guest cwd, "/" as every
// process's root, other targets mapped host -> guest), and whether the
// kernel may jump through the link itself when it is the last component.
type magicLinks struct{ c *tracer.Call }

// Follow implements pathmap.MagicLinks. The kernel's jump is kept for the
// file descriptors and mapped files of traced processes (it also reaches a
// deleted file, a memfd, a pipe: the object the process holds, which the
// guest may use anyway) and for whatever has no path (a pipe, socket,
// anonymous inode or namespace, of any process). /proc/<pid>/exe of a
// traced process is jumped through too: the path handlers put the
// program's host path in place of the kernel's loader (procExe). Every
// other link, and every link of a process outside the guest tree, is
// followed by its guest path.
func (m magicLinks) Follow(l pathmap.MagicLink) (pathmap.MagicTarget, error) {
	kind, _, _ := strings.Cut(l.Name, "/")
	traced := m.c.Tracer().Process(l.Pid) != nil
	target, errno := readlinkGuest(m.c, l.Host())
	if errno == unix.ENAMETOOLONG && traced && kind == "fd" {
		// The file's host path is too long to print and its guest path is
		// unknown (readlinkGuest): the kernel's own jump still reaches it.
		return pathmap.MagicTarget{Jump: true}, nil
	}
	if errno != 0 {
		return pathmap.MagicTarget{}, errno
	}
	if !strings.HasPrefix(target, "/") {
		return pathmap.MagicTarget{Jump: true}, nil
	}
	jump := traced && (kind == "fd" || kind == "map_files" || kind == "exe")
	return pathmap.MagicTarget{Guest: target, Jump: jump}, nil
}
