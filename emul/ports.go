package emul

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/tracer"
)

// Port switching (-p), as termux proot's port_switch extension: Android
// refuses ports below 1024 to apps, so an AF_INET or AF_INET6 bind to port
// 1..1023 binds port+2000 instead, and connect/sendto to such a port of
// 127.0.0.1 or ::1 (exactly those addresses, as termux proot) goes to
// port+2000 too. The guest's sockaddr is not changed in place: a shifted
// copy is handed to the kernel.

const (
	portThreshold = 1024
	portAddition  = 2000
)

// shiftPort returns the sockaddr sa with its port shifted, if the rule
// applies (bind: any address; otherwise only the loopback addresses).
func shiftPort(sa []byte, bind bool) ([]byte, bool) {
	if len(sa) < 4 {
		return nil, false
	}
	fam := binary.LittleEndian.Uint16(sa)
	switch fam {
	case unix.AF_INET:
		if len(sa) < 8 {
			return nil, false
		}
		if !bind && !(sa[4] == 127 && sa[5] == 0 && sa[6] == 0 && sa[7] == 1) {
			return nil, false
		}
	case unix.AF_INET6:
		if len(sa) < 24 {
			return nil, false
		}
		if !bind {
			addr := sa[8:24]
			for i := 0; i < 15; i++ {
				if addr[i] != 0 {
					return nil, false
				}
			}
			if addr[15] != 1 {
				return nil, false
			}
		}
	default:
		return nil, false
	}
	port := binary.BigEndian.Uint16(sa[2:])
	if port == 0 || port >= portThreshold {
		return nil, false
	}
	out := append([]byte(nil), sa...)
	binary.BigEndian.PutUint16(out[2:], port+portAddition)
	return out, true
}

// portShiftHandler wraps the handler h of bind, connect or sendto (the
// sockaddr in argument addrArg, its length in lenArg): internet addresses
// get their port shifted, the rest goes to h.
func portShiftHandler(h tracer.Handler, addrArg, lenArg int, bind bool) tracer.Handler {
	return tracer.Handler{Enter: func(c *tracer.Call) {
		addr, n := c.Arg(addrArg), int(int32(c.Arg(lenArg)))
		if addr != 0 && n >= 4 && n <= 128 {
			sa := make([]byte, n)
			if c.ReadMem(addr, sa) == nil {
				if out, ok := shiftPort(sa, bind); ok {
					a, err := c.Push(out)
					if err != nil {
						c.Fail(unix.EFAULT)
						return
					}
					c.SetArg(addrArg, a)
					c.NoExit()
					return
				}
			}
		}
		h.Enter(c)
	}, Exit: h.Exit}
}
