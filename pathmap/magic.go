package pathmap

import (
	"strconv"
	"strings"
)

// MagicLink names one of procfs's magic links, the symlinks the kernel
// follows by jumping to the object they stand for rather than by reading a
// path: /proc/<Pid>/<Name>, or /proc/<Pid>/task/<Tid>/<Name> when Tid is not
// 0. Name is "exe", "cwd", "root", or "fd/<n>", "map_files/<range>",
// "ns/<type>".
type MagicLink struct {
	Pid, Tid int
	Name     string
}

// Host returns the host path of the link: /proc/<Pid>[/task/<Tid>]/<Name>.
func (l MagicLink) Host() string {
	s := "/proc/" + strconv.Itoa(l.Pid)
	if l.Tid != 0 {
		s += "/task/" + strconv.Itoa(l.Tid)
	}
	return s + "/" + l.Name
}

// ParseMagicLink parses the host path of a magic link itself (nothing after
// it): /proc/<digits>/[task/<digits>/]{exe,cwd,root}, or .../{fd,map_files,ns}/X.
// "self" and "thread-self" are not accepted: a walk has already replaced
// them by the caller's numbers.
func ParseMagicLink(host string) (MagicLink, bool) {
	rest, ok := strings.CutPrefix(host, "/proc/")
	if !ok {
		return MagicLink{}, false
	}
	var l MagicLink
	num, rest, _ := strings.Cut(rest, "/")
	if l.Pid, ok = atoiDigits(num); !ok {
		return MagicLink{}, false
	}
	if t, r, ok := strings.Cut(rest, "/"); ok && t == "task" {
		num, rest, _ = strings.Cut(r, "/")
		if l.Tid, ok = atoiDigits(num); !ok {
			return MagicLink{}, false
		}
	}
	dir, name, two := strings.Cut(rest, "/")
	switch {
	case !two && (dir == "exe" || dir == "cwd" || dir == "root"):
	case two && (dir == "fd" || dir == "map_files" || dir == "ns") &&
		name != "" && name != "." && name != ".." && !strings.Contains(name, "/"):
	default:
		return MagicLink{}, false
	}
	l.Name = rest
	return l, true
}

// atoiDigits parses a non-empty decimal number of digits only, at most 9 of
// them (pids and tids are below 2^22).
func atoiDigits(s string) (int, bool) {
	if !isDigits(s) || len(s) > 9 {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// MagicTarget is what a magic link stands for in the guest's view.
type MagicTarget struct {
	// Guest is the guest path of what the link names (absolute), or ""
	// when it has none: a pipe, socket, anonymous inode or namespace. A
	// host path outside every mount of the guest is given as is, as
	// proot does: the walk then looks it up as a guest path.
	Guest string
	// Jump says that the kernel's own jump, when the link is the last
	// component of a path, reaches exactly what the guest means: the
	// caller's own file descriptor (which also works for deleted files,
	// pipes and sockets), a namespace. It must be false where the jump
	// would land in the host's view: /proc/<pid>/root and cwd, /exe (the
	// kernel's is droidroot's loader), and every link of a process outside
	// the guest tree, whose files the guest reaches by their guest paths.
	Jump bool
}

// MagicLinks tells a walk what procfs's magic links stand for in the
// guest's view: pathmap knows nothing of processes, the tracer does (each
// traced process's guest cwd, program and open files; "/" as the root of
// every process, traced or not, as proot shows droidroot's own entries).
type MagicLinks interface {
	// Follow returns the target of l. Its error, a syscall.Errno, is what
	// the kernel's lookup of the link gives (ENOENT for a closed file
	// descriptor or a process that is gone, EACCES where the caller may
	// not look): the walk fails with it.
	Follow(l MagicLink) (MagicTarget, error)
}
