package emul

import (
	"encoding/binary"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/ident"
	tt "github.com/droidroot/droidroot/tracer/tracertest"
)

// cmsg is one control message: header (len, level, type), data, padding to 8.
func cmsg(level, typ int32, data []byte) []byte {
	b := make([]byte, (cmsgHdrSize+len(data)+7)&^7)
	binary.LittleEndian.PutUint64(b, uint64(cmsgHdrSize+len(data)))
	binary.LittleEndian.PutUint32(b[8:], uint32(level))
	binary.LittleEndian.PutUint32(b[12:], uint32(typ))
	copy(b[cmsgHdrSize:], data)
	return b
}

// ucredMsg is an SCM_CREDENTIALS message of pid, uid and gid.
func ucredMsg(pid, uid, gid uint32) []byte {
	var d [12]byte
	binary.LittleEndian.PutUint32(d[0:], pid)
	binary.LittleEndian.PutUint32(d[4:], uid)
	binary.LittleEndian.PutUint32(d[8:], gid)
	return cmsg(unix.SOL_SOCKET, unix.SCM_CREDENTIALS, d[:])
}

// TestRealCreds: SCM_CREDENTIALS a thread sends are checked against its
// emulated credentials as the kernel's scm_check_creds checks the real ones,
// and sent as the real ids; other messages and malformed data are the
// kernel's.
func TestRealCreds(t *testing.T) {
	s := &sockCreds{realUID: 1000, realGID: 1001}
	root := ident.New(0, 0, nil)
	user := ident.New(4242, 4343, nil)
	switched := ident.New(0, 0, nil)
	if e := switched.Setresuid(7, 8, 0); e != 0 { // keeps saved uid 0, no capabilities
		t.Fatal(e)
	}
	rights := cmsg(unix.SOL_SOCKET, unix.SCM_RIGHTS, []byte{3, 0, 0, 0})
	cat := func(bs ...[]byte) []byte {
		var r []byte
		for _, b := range bs {
			r = append(r, b...)
		}
		return r
	}
	for _, tc := range []struct {
		name    string
		cr      ident.Creds
		in      []byte
		want    []byte // nil: unchanged
		wantErr unix.Errno
	}{
		{"fake root's own ids", root, ucredMsg(9, 0, 0), ucredMsg(9, 1000, 1001), 0},
		{"fake root claims any id (CAP_SETUID, CAP_SETGID)", root, ucredMsg(9, 55, 66), ucredMsg(9, 1000, 1001), 0},
		{"a user's own ids", user, ucredMsg(9, 4242, 4343), ucredMsg(9, 1000, 1001), 0},
		{"a user claims another uid", user, ucredMsg(9, 0, 4343), nil, unix.EPERM},
		{"a user claims another gid", user, ucredMsg(9, 4242, 0), nil, unix.EPERM},
		{"the real ids already", user, nil, nil, unix.EPERM}, // replaced below
		{"saved uid may be claimed", switched, ucredMsg(9, 0, 0), ucredMsg(9, 1000, 1001), 0},
		{"effective uid may be claimed", switched, ucredMsg(9, 8, 0), ucredMsg(9, 1000, 1001), 0},
		{"after SCM_RIGHTS", user, cat(rights, ucredMsg(9, 4242, 4343)), cat(rights, ucredMsg(9, 1000, 1001)), 0},
		{"SCM_RIGHTS alone", user, rights, nil, 0},
		{"invalid uid: the kernel's EINVAL", user, ucredMsg(9, ^uint32(0), 4343), nil, 0},
		{"wrong length: the kernel's EINVAL", user, cmsg(unix.SOL_SOCKET, unix.SCM_CREDENTIALS, make([]byte, 8)), nil, 0},
		{"malformed header first: the kernel's EINVAL", user, cat([]byte{4, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0}, ucredMsg(9, 0, 0)), nil, 0},
		{"truncated", user, ucredMsg(9, 0, 0)[:20], nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			if in == nil {
				// A thread whose emulated ids are the real ones.
				tc.cr, in, tc.wantErr = ident.New(1000, 1001, nil), ucredMsg(9, 1000, 1001), 0
			}
			b := append([]byte(nil), in...)
			changed, errno := s.realCreds(b, &tc.cr)
			if errno != tc.wantErr {
				t.Fatalf("errno %v, want %v", errno, tc.wantErr)
			}
			want := tc.want
			if want == nil {
				want = in
			}
			if diff := cmp.Diff(want, b); diff != "" {
				t.Errorf("control data (-want +got):\n%s", diff)
			}
			if changed != (tc.want != nil) {
				t.Errorf("changed = %v", changed)
			}
		})
	}
}

// TestPeercredHandler: under -i, SO_PEERCRED of a connection between two
// sockets of the guest shows the guest's emulated ids (here the identity's:
// the tracer runs as root, the guest as 4242:4343), where the kernel reports
// the real ones; a short buffer and other options are the kernel's.
func TestPeercredHandler(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the identity must differ from the real ids")
	}
	cfg := Config{Identity: &Identity{UID: 4242, GID: 4343}}
	em := New(cfg)
	if h := em.Table["getsockopt"]; h.TraceIf == nil || h.TraceIf.Min != unix.SO_PEERCRED || h.TraceIf.Max != unix.SO_PEERCRED {
		t.Fatalf("getsockopt's filter rule %+v: want SO_PEERCRED alone", h.TraceIf)
	}
	if _, ok := Table(Config{})["getsockopt"]; ok {
		t.Error("getsockopt traced without emulated ids")
	}
	addr := make([]byte, 2+16)
	binary.LittleEndian.PutUint16(addr, unix.AF_UNIX)
	copy(addr[3:], "droidroot-peer") // abstract
	len4 := func(n uint32) tt.Arg {
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], n)
		return tt.In(b[:])
	}
	steps := []tt.Step{
		tt.Call("socket", tt.Int(unix.AF_UNIX), tt.Int(unix.SOCK_STREAM), tt.Int(0)), // 0
		tt.Call("bind", tt.Ret(0), tt.In(addr), tt.Int(int64(len(addr)))),
		tt.Call("listen", tt.Ret(0), tt.Int(4)),
		tt.Call("socket", tt.Int(unix.AF_UNIX), tt.Int(unix.SOCK_STREAM), tt.Int(0)), // 3
		tt.Call("connect", tt.Ret(3), tt.In(addr), tt.Int(int64(len(addr)))),
		tt.Call("accept", tt.Ret(0), tt.Int(0), tt.Int(0)), // 5
		tt.Call("getsockopt", tt.Ret(5), tt.Int(unix.SOL_SOCKET), tt.Int(unix.SO_PEERCRED), tt.Out(12), len4(12)),
		tt.Call("getsockopt", tt.Ret(3), tt.Int(unix.SOL_SOCKET), tt.Int(unix.SO_PEERCRED), tt.Out(12), len4(12)),
		tt.Call("getsockopt", tt.Ret(5), tt.Int(unix.SOL_SOCKET), tt.Int(unix.SO_PEERCRED), tt.Out(8), len4(8)),
		tt.Call("getsockopt", tt.Ret(5), tt.Int(unix.SOL_SOCKET), tt.Int(unix.SO_TYPE), tt.Out(4), len4(4)),
		tt.Call("getpid"),
	}
	r := tt.Run(t, tt.Options{Table: em.Table, State: em, Creds: InitialCreds(cfg)}, steps...)
	pid := uint32(r.Steps[10].Ret)
	ucred := func(k int) (uint32, uint32, uint32) {
		m := r.Steps[k].Mem[3]
		return binary.LittleEndian.Uint32(m), binary.LittleEndian.Uint32(m[4:]), binary.LittleEndian.Uint32(m[8:])
	}
	for _, k := range []int{6, 7} {
		if r.Steps[k].Ret != 0 {
			t.Fatalf("step %d: %d", k, r.Steps[k].Ret)
		}
		if p, u, g := ucred(k); p != pid || u != 4242 || g != 4343 {
			t.Errorf("step %d: SO_PEERCRED pid %d uid %d gid %d, want %d 4242 4343", k, p, u, g, pid)
		}
	}
	if m := r.Steps[8].Mem[3]; binary.LittleEndian.Uint32(m[4:]) != 0 {
		t.Errorf("an 8-byte SO_PEERCRED buffer: uid %d, want the kernel's 0 (left alone)", binary.LittleEndian.Uint32(m[4:]))
	}
	if got := binary.LittleEndian.Uint32(r.Steps[9].Mem[3]); got != unix.SOCK_STREAM {
		t.Errorf("SO_TYPE %d", got)
	}
}
