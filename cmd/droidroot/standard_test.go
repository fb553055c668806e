package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStandardBinds(t *testing.T) {
	t.Setenv("HOME", "/home/u")
	opt := func(paths ...string) []Bind {
		var bs []Bind
		for _, p := range paths {
			bs = append(bs, Bind{Host: p, Guest: p, Optional: true})
		}
		return bs
	}
	tests := []struct {
		name  string
		args  []string
		root  string
		binds []Bind
		id0   bool
	}{
		{"-R", []string{"-R", "/rfs"}, "/rfs", opt("/etc/host.conf", "/etc/hosts", "/etc/hosts.equiv", "/etc/mtab",
			"/etc/netgroup", "/etc/networks", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/resolv.conf",
			"/etc/localtime", "/dev", "/sys", "/proc", "/tmp", "/run", "/var/run/dbus/system_bus_socket", "/home/u", "/rfs"), false},
		{"-S binds less and asks for -0", []string{"-S", "/rfs"}, "/rfs", opt("/etc/host.conf", "/etc/hosts",
			"/etc/nsswitch.conf", "/etc/resolv.conf", "/dev", "/sys", "/proc", "/tmp", "/run/shm", "/home/u", "/rfs"), true},
		{"later -b come after the set", []string{"-R", "/rfs", "-b", "/x"}, "/rfs", append(opt("/etc/host.conf", "/etc/hosts",
			"/etc/hosts.equiv", "/etc/mtab", "/etc/netgroup", "/etc/networks", "/etc/passwd", "/etc/group", "/etc/nsswitch.conf",
			"/etc/resolv.conf", "/etc/localtime", "/dev", "/sys", "/proc", "/tmp", "/run", "/var/run/dbus/system_bus_socket",
			"/home/u", "/rfs"), Bind{Host: "/x", Guest: "/x"}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := ParseProot(tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if o.Rootfs != tt.root || o.RootID != tt.id0 {
				t.Errorf("rootfs %q root-id %v, want %q %v", o.Rootfs, o.RootID, tt.root, tt.id0)
			}
			if diff := cmp.Diff(tt.binds, o.Binds); diff != "" {
				t.Errorf("binds (-want +got):\n%s", diff)
			}
		})
	}
}
