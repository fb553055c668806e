package main

import (
	"os"
	"strings"
)

// recommendedBinds is termux proot's -R set (src/cli/proot.h,
// recommended_bindings): host files a guest usually needs, bound at the
// same path when they exist. "$HOME" is the caller's home directory and
// "*path*" the rootfs itself.
var recommendedBinds = []string{
	"/etc/host.conf", "/etc/hosts", "/etc/hosts.equiv", "/etc/mtab", "/etc/netgroup",
	"/etc/networks", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/resolv.conf",
	"/etc/localtime", "/dev/", "/sys/", "/proc/", "/tmp/", "/run/",
	"/var/run/dbus/system_bus_socket", "$HOME", "*path*",
}

// recommendedSuBinds is termux proot's -S set (recommended_su_bindings):
// a minimal set that keeps package installs from touching host files.
var recommendedSuBinds = []string{
	"/etc/host.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/resolv.conf",
	"/dev/", "/sys/", "/proc/", "/tmp/", "/run/shm", "$HOME", "*path*",
}

// standardBinds applies -R PATH (su false) or -S PATH (su true): the rootfs
// is PATH, the standard binds are added (missing ones ignored silently),
// and -S also asks for -0 (fake root, Options.RootID).
func standardBinds(o *Options, path string, su bool) {
	o.Rootfs = path
	set := recommendedBinds
	if su {
		set = recommendedSuBinds
		o.RootID = true
	}
	for _, b := range set {
		switch b {
		case "$HOME":
			b = os.Getenv("HOME")
			if b == "" {
				continue
			}
		case "*path*":
			b = path
		}
		if len(b) > 1 {
			b = strings.TrimSuffix(b, "/")
		}
		o.Binds = append(o.Binds, Bind{Host: b, Guest: b, Optional: true})
	}
}
