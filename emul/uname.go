package emul

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/tracer"
)

// utsLen is the size of each field of struct utsname (__NEW_UTS_LEN + 1).
const utsLen = 65

// utsFields names the fields of struct utsname in order.
var utsFields = [6]string{"sysname", "nodename", "release", "version", "machine", "domainname"}

// Uname is the -k / --kernel-release emulation: what uname(2) and
// /proc/sys/kernel/{ostype,hostname,osrelease,version,domainname} show the
// guest tree, and the names sethostname/setdomainname set for it. Make it
// with NewUname.
type Uname struct {
	// Fields are the values of struct utsname in order (sysname, nodename,
	// release, version, machine, domainname); "" keeps the kernel's until
	// the guest sets its host or domain name.
	Fields [6]string
	// HWCap is the hwcap field of the backslash form (-1: keep AT_HWCAP).
	HWCap int64
	// Dir is the host directory holding the guest's /proc/sys/kernel files.
	Dir string

	mu   sync.Mutex
	real [6]string // the kernel's answer, read when the files are written
	set  [6]bool   // Fields[i] applies (given, or set by the guest)
}

// ParseKernelRelease parses -k's value the way termux proot does: a plain
// release ("6.17.0"), or `\sysname\nodename\release\version\machine\domainname\hwcap\`
// with hwcap in hexadecimal (-1: keep the real AT_HWCAP). Unlike proot, an
// empty field keeps the kernel's value (proot would report an empty string)
// and missing trailing fields are allowed (proot refuses to start).
func ParseKernelRelease(s string) (*Uname, error) {
	u := &Uname{HWCap: -1}
	if !strings.HasPrefix(s, `\`) {
		if s == "" {
			return nil, fmt.Errorf("-k/--kernel-release: empty release (give a release like 6.17.0 or the \\sysname\\...\\ form)")
		}
		u.Fields[2] = clip(s)
		return u, nil
	}
	parts := strings.Split(s[1:], `\`)
	if n := len(parts); n > 0 && parts[n-1] == "" {
		parts = parts[:n-1] // the closing backslash
	}
	if len(parts) > 7 {
		return nil, fmt.Errorf("-k/--kernel-release: '%s' has %d fields, at most 7 (\\sysname\\nodename\\release\\version\\machine\\domainname\\hwcap\\)", s, len(parts))
	}
	for i, p := range parts {
		if i < 6 {
			u.Fields[i] = clip(p)
			continue
		}
		if p == "" {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimPrefix(p, "0x"), "0X"), 16, 64)
		if err != nil {
			return nil, fmt.Errorf("-k/--kernel-release: hwcap field %q is not a hexadecimal number (use -1 to keep the real one)", p)
		}
		u.HWCap = v
	}
	return u, nil
}

// clip truncates a field to what struct utsname holds.
func clip(s string) string {
	if len(s) > utsLen-1 {
		return s[:utsLen-1]
	}
	return s
}

// procKernelFiles maps /proc/sys/kernel file names to utsname fields.
var procKernelFiles = map[string]int{"ostype": 0, "hostname": 1, "osrelease": 2, "version": 3, "domainname": 5}

// Setup reads the kernel's names and writes the guest's /proc/sys/kernel
// files into dir (which must exist and be private to this run).
func (u *Uname) Setup(dir string) error {
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		return err
	}
	for i, b := range [][65]byte{uts.Sysname, uts.Nodename, uts.Release, uts.Version, uts.Machine, uts.Domainname} {
		u.real[i] = unix.ByteSliceToString(b[:])
	}
	u.Dir = dir
	u.mu.Lock()
	defer u.mu.Unlock()
	for name := range procKernelFiles {
		if err := u.writeFile(name); err != nil {
			return err
		}
	}
	return nil
}

// field returns the value the guest sees for field i.
func (u *Uname) field(i int) string {
	if u.set[i] || u.Fields[i] != "" {
		return u.Fields[i]
	}
	return u.real[i]
}

// writeFile (re)writes one /proc/sys/kernel file; u.mu is held.
func (u *Uname) writeFile(name string) error {
	p := filepath.Join(u.Dir, name)
	tmp := p + ".new"
	if err := os.WriteFile(tmp, []byte(u.field(procKernelFiles[name])+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// adoptWrites takes the names the guest wrote into its
// /proc/sys/kernel/{hostname,domainname} (as a privileged process may on
// a kernel) as if set by sethostname/setdomainname; u.mu is held.
func (u *Uname) adoptWrites() {
	for _, f := range []struct {
		name  string
		field int
	}{{"hostname", 1}, {"domainname", 5}} {
		b, err := os.ReadFile(filepath.Join(u.Dir, f.name))
		if err != nil {
			continue
		}
		v := strings.TrimSuffix(string(b), "\n")
		if i := strings.IndexByte(v, 0); i >= 0 {
			v = v[:i]
		}
		if v != u.field(f.field) {
			u.Fields[f.field], u.set[f.field] = clip(v), true
		}
	}
}

// redirect returns the host file that stands for host path host, if any.
func (u *Uname) redirect(host string) (string, bool) {
	name, ok := strings.CutPrefix(host, "/proc/sys/kernel/")
	if !ok || u.Dir == "" {
		return "", false
	}
	if _, ok := procKernelFiles[name]; !ok {
		return "", false
	}
	return filepath.Join(u.Dir, name), true
}

// unameRedirect applies the -k file redirection (if c's run has -k) to a
// translated host path: every path lookup consults it for the
// /proc/sys/kernel files.
func unameRedirect(c *tracer.Call, host string) string {
	if u := emulationOf(c).uname; u != nil {
		if f, ok := u.redirect(host); ok {
			return f
		}
	}
	return host
}

// handlers returns the uname, sethostname and setdomainname handlers.
func (u *Uname) handlers() map[string]tracer.Handler {
	return map[string]tracer.Handler{
		// The kernel fills the struct (so an EFAULT or a personality's
		// machine stays the kernel's); the exit stop overwrites the fields.
		"uname": {
			Enter: func(c *tracer.Call) {},
			Exit: func(c *tracer.Call) {
				if c.Ret() != 0 {
					return
				}
				var b [6 * utsLen]byte
				addr := c.Arg(0)
				if c.ReadMem(addr, b[:]) != nil {
					return
				}
				u.mu.Lock()
				u.adoptWrites()
				for i := range utsFields {
					if !u.set[i] && u.Fields[i] == "" {
						continue
					}
					f := b[i*utsLen : (i+1)*utsLen]
					clear(f)
					copy(f, u.Fields[i])
				}
				u.mu.Unlock()
				c.WriteMem(addr, b[:])
			},
		},
		"sethostname":   {Enter: func(c *tracer.Call) { u.setName(c, 1, "hostname") }},
		"setdomainname": {Enter: func(c *tracer.Call) { u.setName(c, 5, "domainname") }},
	}
}

// setName answers sethostname/setdomainname(name, len) for the guest tree:
// the kernel's EINVAL for a length outside 0..64 and EFAULT for unreadable
// memory; otherwise it succeeds, as for root in the tree's own UTS
// namespace, and the host's names never change.
func (u *Uname) setName(c *tracer.Call, field int, file string) {
	n := int64(int32(c.Arg(1)))
	if n < 0 || n > utsLen-1 {
		c.Fail(unix.EINVAL)
		return
	}
	b := make([]byte, n)
	if n > 0 && c.ReadMem(c.Arg(0), b) != nil {
		c.Fail(unix.EFAULT)
		return
	}
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		b = b[:i]
	}
	u.mu.Lock()
	u.Fields[field], u.set[field] = string(b), true
	err := u.writeFile(file)
	u.mu.Unlock()
	if err != nil {
		c.Tracer().WarnOnce("uname-file", "cannot update the guest's /proc/sys/kernel/%s: %v", file, err)
	}
	c.Return(0)
}
