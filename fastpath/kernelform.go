package fastpath

import (
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// KernelForm returns host path p as the kernel prints it: the link of its
// O_PATH descriptor in /proc/self/fd, which resolves every symlink and
// names a bind-mounted directory by its mount (Android's /data/user/0 is
// /data/data), or "" when p does not open or its link is no absolute path
// (a deleted directory, one out of this process's root). The library
// compares such links with the host paths it builds.
func KernelForm(p string) string {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlink("/proc/self/fd/"+strconv.Itoa(fd), buf)
	if err != nil || n <= 0 || n >= len(buf) || buf[0] != '/' {
		return ""
	}
	s := string(buf[:n])
	if strings.HasSuffix(s, " (deleted)") {
		return ""
	}
	return s
}

// WithKernelForms returns c with its Root and its binds' host paths as the
// library takes them: in their KernelForm, resolved once here rather than
// at every guest process's start. A host under /proc stays as it is: the
// library sends every path under such a bind to the tracer (and
// /proc/self would name droidroot here).
func (c Config) WithKernelForms() Config {
	c.Root = KernelForm(c.Root)
	binds := make([]Bind, len(c.Binds))
	for i, b := range c.Binds {
		if b.Host != "/proc" && !strings.HasPrefix(b.Host, "/proc/") {
			b.Host = KernelForm(b.Host)
		}
		binds[i] = b
	}
	c.Binds = binds
	return c
}
