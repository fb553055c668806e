package emul

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	tt "github.com/droidroot/droidroot/tracer/tracertest"
)

// sockaddrUn is a struct sockaddr_un for path (len: family, path, NUL).
func sockaddrUn(path string) (tt.Arg, tt.Arg) {
	b := make([]byte, 2+len(path)+1)
	binary.LittleEndian.PutUint16(b, unix.AF_UNIX)
	copy(b[2:], path)
	return tt.In(b), tt.Int(int64(len(b)))
}

// sockName is a getsockname-style (buffer, length pointer) pair.
func sockName() (tt.Arg, tt.Arg) {
	var l [4]byte
	binary.LittleEndian.PutUint32(l[:], 110)
	return tt.Out(110), tt.In(l[:])
}

// sameSockaddr compares the address in buffer argument addr up to the
// length the call reported in buffer argument lenp. Past that length the
// kernel leaves the rest of the buffer alone, while droidroot leaves there
// the tail of the longer host path the kernel wrote before it was mapped
// back (harmless to a reader that honours the length or the NUL). A length
// past the buffer (111 for a sun_path of 108 bytes: the kernel counts its
// NUL) compares the buffer.
func sameSockaddr(name string, addr, lenp int) func(t *testing.T, g, w tt.StepResult) {
	return func(t *testing.T, g, w tt.StepResult) {
		gl, wl := binary.LittleEndian.Uint32(g.Mem[lenp]), binary.LittleEndian.Uint32(w.Mem[lenp])
		n := min(gl, uint32(len(g.Mem[addr])), uint32(len(w.Mem[addr])))
		if gl != wl || string(g.Mem[addr][:n]) != string(w.Mem[addr][:n]) {
			gb, wb := g.Mem[addr], w.Mem[addr]
			t.Errorf("%s: address %q (length %d), kernel %q (length %d)", name, gb[:min(int(gl), len(gb))], gl, wb[:min(int(wl), len(wb))], wl)
		}
	}
}

// TestSocketHandlersKernel: AF_UNIX addresses given to bind, connect and
// sendto name guest paths, and those getsockname, getpeername and accept
// report are guest paths, as in a chroot; a host path too long for
// sun_path is shortened.
func TestSocketHandlersKernel(t *testing.T) {
	t.Setenv("PROOT_TMP_DIR", t.TempDir())
	long := "/tmp/" + strings.Repeat("l", 90) // a guest path that fits, whose host path does not
	for _, dir := range []string{"/tmp", long} {
		t.Run(filepath.Base(dir)[:1], func(t *testing.T) {
			srv, cli, dg := dir+"/srv", dir+"/cli", dir+"/dg"
			sock := func(typ int64) tt.Step {
				return tt.Call("socket", tt.Int(unix.AF_UNIX), tt.Int(typ|unix.SOCK_CLOEXEC), tt.Int(0))
			}
			withAddr := func(name string, fd int, path string) tt.Step {
				a, n := sockaddrUn(path)
				return tt.Call(name, tt.Ret(fd), a, n)
			}
			named := func(name string, fd int) tt.Step {
				a, n := sockName()
				return tt.Call(name, tt.Ret(fd), a, n)
			}
			sa, sn := sockaddrUn(dg)
			ra, rn := sockaddrUn(dir + "/snd")
			ab, al := sockName()
			cases := []kcase{
				{name: "server socket", step: sock(unix.SOCK_STREAM), how: cmpSign}, // 0
				{name: "bind", step: withAddr("bind", 0, srv)},
				{name: "bind again", step: withAddr("bind", 0, srv)},
				{name: "getsockname", step: named("getsockname", 0), check: sameSockaddr("getsockname", 1, 2)},
				{name: "listen", step: tt.Call("listen", tt.Ret(0), tt.Int(4))},
				{name: "stat socket", step: fstatat(cwdFD, srv, 0), stat: []int{2}},
				{name: "client socket", step: sock(unix.SOCK_STREAM), how: cmpSign}, // 6
				{name: "bind client", step: withAddr("bind", 6, cli)},
				{name: "connect missing", step: withAddr("connect", 6, dir+"/none")},
				{name: "connect", step: withAddr("connect", 6, srv)},
				{name: "getpeername", step: named("getpeername", 6), check: sameSockaddr("getpeername", 1, 2)},
				{name: "accept", step: tt.Call("accept4", tt.Ret(0), ab, al, tt.Int(unix.SOCK_CLOEXEC)), how: cmpSign, check: sameSockaddr("accept", 1, 2)},
				{name: "bind in use", step: withAddr("bind", 6, srv)},
				{name: "dgram socket", step: sock(unix.SOCK_DGRAM), how: cmpSign}, // 13
				{name: "bind dgram", step: withAddr("bind", 13, dg)},
				{name: "sender", step: sock(unix.SOCK_DGRAM), how: cmpSign}, // 15
				{name: "sendto", step: tt.Call("sendto", tt.Ret(15), tt.Str("hi"), tt.Int(2), tt.Int(0), sa, sn)},
				{name: "recv", step: tt.Call("recvfrom", tt.Ret(13), tt.Out(8), tt.Int(8), tt.Int(unix.MSG_DONTWAIT), tt.Int(0), tt.Int(0)), mem: []int{1}},
				{name: "abstract", step: withAddr("bind", 15, "\x00abstract-tracertest")},
				// A bind of the server's name through a symlink fails, and the server's
				// name stays the one a peer sees (TestOracleRandom found it replaced).
				{name: "other socket", step: sock(unix.SOCK_STREAM), how: cmpSign}, // 19
				{name: "bind in use through a symlink", step: withAddr("bind", 19, "/sl/srv")},
				{name: "third socket", step: sock(unix.SOCK_STREAM), how: cmpSign}, // 21
				{name: "connect through the symlink", step: withAddr("connect", 21, "/sl/srv")},
				{name: "getpeername after the failed bind", step: named("getpeername", 21), check: sameSockaddr("getpeername", 1, 2)},
				// recvfrom reports a sender's name as the sender bound it
				// (a reply goes to it), also truncated to a short buffer.
				{name: "named sender", step: sock(unix.SOCK_DGRAM), how: cmpSign}, // 24
				{name: "bind sender", step: withAddr("bind", 24, dir+"/snd")},
				{name: "sendto from a name", step: tt.Call("sendto", tt.Ret(24), tt.Str("hi"), tt.Int(2), tt.Int(0), sa, sn)},
				{name: "recvfrom with the name", step: tt.Call("recvfrom", tt.Ret(13), tt.Out(8), tt.Int(8), tt.Int(unix.MSG_DONTWAIT), ab, al), mem: []int{1}, check: sameSockaddr("recvfrom", 4, 5)},
				{name: "sendto again", step: tt.Call("sendto", tt.Ret(24), tt.Str("ho"), tt.Int(2), tt.Int(0), sa, sn)},
				{name: "recvfrom a short buffer", step: tt.Call("recvfrom", tt.Ret(13), tt.Out(8), tt.Int(8), tt.Int(unix.MSG_DONTWAIT), tt.Out(9), tt.In([]byte{9, 0, 0, 0})), mem: []int{1}, check: sameSockaddr("recvfrom", 4, 5)},
				{name: "recvfrom nothing left", step: tt.Call("recvfrom", tt.Ret(13), tt.Out(8), tt.Int(8), tt.Int(unix.MSG_DONTWAIT), ab, al)},
				{name: "reply to the name", step: tt.Call("sendto", tt.Ret(13), tt.Str("re"), tt.Int(2), tt.Int(0), ra, rn)},
				{name: "getsockname short", step: tt.Call("getsockname", tt.Ret(0), tt.Out(5), tt.In([]byte{5, 0, 0, 0})), check: sameSockaddr("getsockname", 1, 2)},
				{name: "getsockname length 0", step: tt.Call("getsockname", tt.Ret(24), tt.Out(4), tt.In([]byte{0, 0, 0, 0})), check: sameSockaddr("getsockname", 1, 2)},
				{name: "getsockname length -1", step: tt.Call("getsockname", tt.Ret(24), tt.Out(4), tt.In([]byte{0xff, 0xff, 0xff, 0xff}))},
				{name: "recv the reply", step: tt.Call("recvfrom", tt.Ret(24), tt.Out(8), tt.Int(8), tt.Int(unix.MSG_DONTWAIT), tt.Int(0), tt.Int(0)), mem: []int{1}},
			}
			setup := func(g *guestFS) {
				if err := os.MkdirAll(g.root+long, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(dir, g.root+"/sl"); err != nil {
					t.Fatal(err)
				}
			}
			againstKernelIn(t, Config{}, "/", setup, cases)
		})
	}
}

// sockaddrUnFull is a struct sockaddr_un whose sun_path is all of path
// (108 bytes: no NUL), with addrlen sizeof(struct sockaddr_un).
func sockaddrUnFull(path string) (tt.Arg, tt.Arg) {
	b := make([]byte, 2+sunPathMax)
	binary.LittleEndian.PutUint16(b, unix.AF_UNIX)
	copy(b[2:], path)
	return tt.In(b), tt.Int(int64(len(b)))
}

// TestSocketFullSunPath: a sun_path of the full 108 bytes without a NUL
// binds and connects as on the kernel, whether the host path reaches the
// kernel as it is, relative to the cwd, through an alias of its directory
// or (a basename too long for that) through a temporary name for bind and an
// alias of the socket for connect; getsockname reports 111 bytes, the NUL
// included, as the kernel's.
func TestSocketFullSunPath(t *testing.T) {
	t.Setenv("PROOT_TMP_DIR", t.TempDir())
	for _, tc := range []struct{ name, cwd, path string }{
		{"long basename, cwd elsewhere", "/d/e", "/tmp/" + strings.Repeat("q", 103)},
		{"relative to the cwd", "/tmp", strings.Repeat("r", 108)},
		{"short directory alias", "/d/e", "/d/" + strings.Repeat("s", 105)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sock := tt.Call("socket", tt.Int(unix.AF_UNIX), tt.Int(unix.SOCK_STREAM|unix.SOCK_CLOEXEC), tt.Int(0))
			withAddr := func(name string, fd int) tt.Step {
				a, n := sockaddrUnFull(tc.path)
				return tt.Call(name, tt.Ret(fd), a, n)
			}
			named := func(name string, fd int) tt.Step {
				a, n := sockName()
				return tt.Call(name, tt.Ret(fd), a, n)
			}
			cases := []kcase{
				{name: "server socket", step: sock, how: cmpSign}, // 0
				{name: "bind", step: withAddr("bind", 0)},
				{name: "getsockname", step: named("getsockname", 0), check: sameSockaddr("getsockname", 1, 2)},
				{name: "listen", step: tt.Call("listen", tt.Ret(0), tt.Int(4))},
				{name: "stat socket", step: fstatat(cwdFD, tc.path, unix.AT_SYMLINK_NOFOLLOW), stat: []int{2}},
				{name: "client socket", step: sock, how: cmpSign}, // 5
				{name: "connect", step: withAddr("connect", 5)},
				{name: "getpeername", step: named("getpeername", 5), check: sameSockaddr("getpeername", 1, 2)},
				{name: "bind in use", step: withAddr("bind", 5)},
				{name: "other socket", step: sock, how: cmpSign}, // 9
				{name: "bind existing name", step: withAddr("bind", 9)},
				{name: "unlink", step: tt.Call("unlinkat", cwdFD, tt.Str(tc.path), tt.Int(0))},
			}
			setup := func(g *guestFS) {
				if err := os.MkdirAll(g.root+"/d/e", 0o755); err != nil {
					t.Fatal(err)
				}
			}
			againstKernelIn(t, Config{}, tc.cwd, setup, cases)
		})
	}
}

// TestSocketAliasesClosed: the aliases' directory is made in Config.SessionDir
// on first use, locked as a session's (tmpdir), and Close removes it.
func TestSocketAliasesClosed(t *testing.T) {
	tmp := t.TempDir()
	e := New(Config{TmpDir: t.TempDir(), SessionDir: tmp})
	e.Close() // nothing made yet
	a, errno := e.socks.alias("/some/long/dir")
	if errno != 0 {
		t.Fatalf("alias: %v", errno)
	}
	dir := filepath.Dir(a)
	if filepath.Dir(dir) != tmp || !strings.HasPrefix(filepath.Base(dir), "drs.") {
		t.Errorf("alias %s, want one in %s/drs.N", a, tmp)
	}
	if target, err := os.Readlink(a); err != nil || target != "/some/long/dir" {
		t.Errorf("readlink %s: %q, %v", a, target, err)
	}
	if b, _ := e.socks.alias("/some/long/dir"); b != a {
		t.Errorf("alias again: %s, want %s", b, a)
	}
	e.Close()
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("after Close: %v, want %s gone", err, dir)
	}
	if b, errno := e.socks.alias("/other"); errno != 0 || filepath.Dir(filepath.Dir(b)) != tmp {
		t.Errorf("alias after Close: %s, %v", b, errno)
	}
	e.Close()
}
