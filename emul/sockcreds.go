package emul

import (
	"encoding/binary"

	"github.com/droidroot/droidroot/ident"
	"github.com/droidroot/droidroot/tracer"
	"golang.org/x/sys/unix"
)

// sockCreds maps the credentials AF_UNIX sockets carry between the kernel's
// ids (the real user's: every guest process runs as droidroot's user) and
// the guest's emulated ones, so that a fake root's D-Bus works: a GLib
// client sends its ids (geteuid()'s, emulated) as SCM_CREDENTIALS, which the
// kernel checks against the real ones, and dbus-daemon compares the id a
// client claims in AUTH EXTERNAL with the one SO_PEERCRED reports.
//   - SO_PEERCRED (getsockopt): the peer's emulated effective ids, as the
//     kernel reports a peer's euid and egid, where the peer is a guest
//     process; else the real ids shown as the identity's (as stat shows
//     owners).
//   - SCM_CREDENTIALS in sendmsg: checked as the kernel's scm_check_creds
//     checks them, against the caller's emulated credentials (EPERM where
//     they may not be claimed), then sent as the real ids, which the kernel
//     accepts. The guest's message is not changed: the kernel reads a copy.
//
// SCM_CREDENTIALS a receiver reads (recvmsg, not stopped) are mapped by the
// fast path library alone; a signal's si_uid is the kernel's
// (docs/identity.md).
type sockCreds struct {
	realUID, realGID uint32
	// id is the -0/-i identity; nil with set*id emulation alone.
	id *Identity
}

// newSockCreds returns the mapping for cfg, nil when no ids are emulated.
func newSockCreds(cfg Config) *sockCreds {
	if cfg.Identity == nil && !cfg.EmulateSetID {
		return nil
	}
	return &sockCreds{realUID: uint32(unix.Getuid()), realGID: uint32(unix.Getgid()), id: cfg.Identity}
}

// toGuest returns the ids the guest sees for a peer's kernel ids uid and
// gid, pid its process.
func (s *sockCreds) toGuest(c *tracer.Call, pid int32, uid, gid uint32) (uint32, uint32) {
	if uid == s.realUID && gid == s.realGID && pid > 0 {
		if cr := c.Tracer().ThreadCreds(int(pid)); cr != nil {
			return cr.EUID, cr.EGID
		}
	}
	if s.id != nil {
		if uid == s.realUID {
			uid = s.id.UID
		}
		if gid == s.realGID {
			gid = s.id.GID
		}
	}
	return uid, gid
}

// peercredHandler is getsockopt's: SO_PEERCRED's ids as the guest's. The
// filter stops only getsockopt with optname SO_PEERCRED (any level: the
// entry checks SOL_SOCKET), so other options cost nothing.
func (s *sockCreds) peercredHandler() tracer.Handler {
	return tracer.Handler{
		TraceIf: &tracer.ArgMask{Arg: 2, Min: unix.SO_PEERCRED, Max: unix.SO_PEERCRED},
		Enter: func(c *tracer.Call) {
			if int32(c.Arg(1)) != unix.SOL_SOCKET || int32(c.Arg(2)) != unix.SO_PEERCRED {
				c.NoExit()
			}
		},
		Exit: func(c *tracer.Call) {
			if c.Ret() != 0 {
				return
			}
			// The kernel writes min(optlen, 12) bytes of struct ucred
			// {pid, uid, gid} and that length.
			var lb [4]byte
			if c.ReadMem(c.Arg(4), lb[:]) != nil {
				return
			}
			// A shorter buffer (a part of the struct) is left as it is.
			var b [12]byte
			if int32(binary.LittleEndian.Uint32(lb[:])) != 12 || c.ReadMem(c.Arg(3), b[:]) != nil {
				return
			}
			uid, gid := binary.LittleEndian.Uint32(b[4:]), binary.LittleEndian.Uint32(b[8:])
			guid, ggid := s.toGuest(c, int32(binary.LittleEndian.Uint32(b[:])), uid, gid)
			if guid != uid || ggid != gid {
				binary.LittleEndian.PutUint32(b[4:], guid)
				binary.LittleEndian.PutUint32(b[8:], ggid)
				c.WriteMem(c.Arg(3), b[:])
			}
		},
	}
}

// Offsets in struct msghdr (64-bit ABIs) and struct cmsghdr.
const (
	msgControlOff    = 32
	msgControllenOff = 40
	cmsgHdrSize      = 16 // cmsg_len (size_t), cmsg_level, cmsg_type
	ucredCmsgLen     = cmsgHdrSize + 12
	// maxControl bounds the control data the tracer copies; the kernel's
	// own bound (net.core.optmem_max) is 20-128 KiB, and a message with
	// credentials carries a few dozen bytes.
	maxControl = 64 << 10
)

// sendControl checks the SCM_CREDENTIALS of sendmsg's message hdr against
// the caller's emulated credentials and, where any must change, pushes a
// copy of the control data with the real ids and returns its address (0:
// nothing to change). errno is the kernel's answer for credentials the
// caller may not claim. Malformed control data is left to the kernel.
func (s *sockCreds) sendControl(c *tracer.Call, hdr []byte) (uint64, unix.Errno) {
	ctl, n := binary.LittleEndian.Uint64(hdr[msgControlOff:]), binary.LittleEndian.Uint64(hdr[msgControllenOff:])
	if ctl == 0 || n < ucredCmsgLen || n > maxControl {
		return 0, 0
	}
	b := make([]byte, n)
	if c.ReadMem(ctl, b) != nil {
		return 0, 0
	}
	changed, errno := s.realCreds(b, c.Creds())
	if errno != 0 || !changed {
		return 0, errno
	}
	a, err := c.Push(b)
	if err != nil {
		return 0, unix.EFAULT
	}
	return a, 0
}

// realCreds rewrites the SCM_CREDENTIALS messages of control data b, sent
// by a thread with credentials cr, to the real ids, and reports whether
// any changed; EPERM where cr may not claim them (scm_check_creds: each id
// one of the real, effective and saved ones, or CAP_SETUID/CAP_SETGID; the
// pid is the kernel's to check). The walk is the kernel's (__scm_send): a
// malformed header, a message of the wrong size or an invalid id (-1) ends
// it, and the kernel gives its EINVAL.
func (s *sockCreds) realCreds(b []byte, cr *ident.Creds) (changed bool, errno unix.Errno) {
	n := uint64(len(b))
	for off := uint64(0); off+cmsgHdrSize <= n; {
		l := binary.LittleEndian.Uint64(b[off:])
		if l < cmsgHdrSize || l > n-off {
			break
		}
		level, typ := int32(binary.LittleEndian.Uint32(b[off+8:])), int32(binary.LittleEndian.Uint32(b[off+12:]))
		if level == unix.SOL_SOCKET && typ == unix.SCM_CREDENTIALS {
			if l != ucredCmsgLen {
				break
			}
			uidAt, gidAt := off+cmsgHdrSize+4, off+cmsgHdrSize+8
			uid, gid := binary.LittleEndian.Uint32(b[uidAt:]), binary.LittleEndian.Uint32(b[gidAt:])
			if uid == ^uint32(0) || gid == ^uint32(0) {
				break
			}
			if !(uid == cr.UID || uid == cr.EUID || uid == cr.SUID || cr.CapSetUID()) ||
				!(gid == cr.GID || gid == cr.EGID || gid == cr.SGID || cr.CapSetGID()) {
				return false, unix.EPERM
			}
			if uid != s.realUID || gid != s.realGID {
				binary.LittleEndian.PutUint32(b[uidAt:], s.realUID)
				binary.LittleEndian.PutUint32(b[gidAt:], s.realGID)
				changed = true
			}
		}
		off += (l + 7) &^ 7
	}
	return changed, 0
}
