package ident

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Real returns the calling process's own credentials: its ids (getresuid,
// getresgid; the fs ids are taken to be the effective ones, since asking
// needs setfsuid, which Android blocks), groups and capability sets (from
// /proc/self/status).
func Real() Creds {
	r, e, s := unix.Getresuid()
	rg, eg, sg := unix.Getresgid()
	var groups []uint32
	if gs, err := unix.Getgroups(); err == nil {
		for _, g := range gs {
			groups = append(groups, uint32(g))
		}
	}
	c := New(uint32(r), uint32(rg), groups)
	c.EUID, c.SUID, c.FSUID = uint32(e), uint32(s), uint32(e)
	c.EGID, c.SGID, c.FSGID = uint32(eg), uint32(sg), uint32(eg)
	c.CapEff, c.CapPrm, c.CapInh = 0, 0, 0
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(line, ":")
			n, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if !ok || err != nil {
				continue
			}
			switch k {
			case "CapEff":
				c.CapEff = n
			case "CapPrm":
				c.CapPrm = n
			case "CapInh":
				c.CapInh = n
			}
		}
	}
	return c
}
