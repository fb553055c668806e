//go:build linux

package e2e

import "testing"

// TestUnixSockets runs AF_UNIX traffic through every call that carries a
// socket path (bind, connect, sendto, sendmsg, accept, getsockname,
// getpeername) in python3, under the chroot oracle and droidroot. send() on
// connected sockets (sendto with no address) costs no stop: the filter
// traces sendto only with an address length that can hold a path.
func TestUnixSockets(t *testing.T) {
	needRoot(t)
	rootfs(t, "debian")
	const script = `
import os, socket
os.chdir("/tmp")
d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); d.bind("dg")
w = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
w.sendmsg([b"sendmsg"], [], 0, "/tmp/dg")
w.sendto(b"sendto", "/tmp/dg")
w.connect("/tmp/dg"); w.send(b"send"); w.sendmsg([b"sendmsg2"])
print(d.recv(64), d.recv(64), d.recv(64), d.recv(64), d.getsockname())
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.bind("/tmp/st"); s.listen(1)
c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); c.connect("st")
a, peer = s.accept()
c.sendall(b"stream"); print(a.recv(64), c.getpeername(), s.getsockname(), repr(peer))
for i in range(50): a.send(b"x"); a.sendmsg([b"y"])
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind(("127.0.0.1", 0))
v = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(10): v.sendto(b"udp", u.getsockname()); v.sendmsg([b"udpmsg"], [], 0, u.getsockname())
print(sorted(set(u.recv(64) for i in range(20))))
`
	want := "b'sendmsg' b'sendto' b'send' b'sendmsg2' dg\nb'stream' /tmp/st /tmp/st ''\n[b'udp', b'udpmsg']\n"
	for _, r := range runners {
		res := r.Run(t, debianGuest(t), "", "/usr/bin/python3", "-c", script)
		if res.Stdout != want || res.Code != 0 {
			t.Errorf("%s: got %s\nwant exit 0, stdout:\n%s", r.Name, res, want)
		}
		if r.Name == "chroot" && t.Failed() {
			t.Fatal("the expectation is wrong: the chroot oracle disagrees")
		}
	}
	// One sendto stop and one sendmsg stop, the calls with an AF_UNIX address; none for the
	// 52 sends; the fast path library makes the 51 sendmsg without an address and the 10
	// sendmsg and 10 sendto with an AF_INET one.
	res := runExt(t, []string{"DROIDROOT_STOPS=1", "DROIDROOT_FASTPATH_STATS=1", "DROIDROOT_FASTPATH=1"}, nil,
		debianGuest(t), "", "/usr/bin/python3", "-c", script)
	rows := stopCensus(t, res.Stderr)
	counts, _ := fastPathCounters(res.Stderr)
	if res.Stdout != want || rows["seccomp sendto"] != 1 || rows["seccomp sendmsg"] != 1 || counts["sendmsg answered"] != 61 || counts["sendto answered"] != 10 {
		t.Errorf("sendto stops %d, sendmsg stops %d, want 1 each (the calls with an AF_UNIX address); answered in-process: sendmsg %d, want 61, sendto %d, want 10: %s",
			rows["seccomp sendto"], rows["seccomp sendmsg"], counts["sendmsg answered"], counts["sendto answered"], res)
	}
}

// TestUnixDatagramNames: recvfrom and recvmsg report the name the sender of
// a datagram bound, which the kernel keeps as the sun_path given to bind:
// droidroot gives it the host path, and a chroot's kernel reports the guest
// path, to which a reply is sent. The fast path library gives the guest path
// back (an absolute name below the rootfs or a bind); names bound relative
// come back absolute (the tracer binds them by their host path), unnamed
// senders as None. Without the library the kernel's host path stays (the
// filter cannot see recvmsg's name), so the case runs with the library on.
func TestUnixDatagramNames(t *testing.T) {
	needRoot(t)
	g := debianGuest(t)
	const script = `
import os, socket
os.chdir("/tmp")
for n in ("rs", "ws", "rel"):
    try: os.unlink("/tmp/" + n)
    except OSError: pass
r = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); r.bind("/tmp/rs")
w = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); w.bind("/tmp/ws")
w.sendto(b"q", "/tmp/rs"); data, addr = r.recvfrom(64); r.sendto(b"reply", addr)
print(repr(addr), w.recv(64))
w.sendto(b"q2", "/tmp/rs"); msg, anc, fl, addr = r.recvmsg(64); r.sendto(b"reply2", addr)
print(repr(addr), w.recv(64))
u = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); u.sendto(b"q3", "/tmp/rs"); print(repr(r.recvfrom(64)[1]))
b = bytearray(8); w.sendto(b"q4", "/tmp/rs"); n, addr = r.recvfrom_into(b); print(n, repr(addr))
`
	want := "'/tmp/ws' b'reply'\n'/tmp/ws' b'reply2'\nNone\n2 '/tmp/ws'\n"
	if res := viaChroot(t, g, "", "/usr/bin/python3", "-c", script); res.Stdout != want || res.Code != 0 {
		t.Fatalf("chroot: %s\nwant stdout:\n%s", res, want)
	}
	res := runExt(t, []string{"DROIDROOT_FASTPATH=1", "DROIDROOT_FASTPATH_STATS=1"}, nil, g, "", "/usr/bin/python3", "-c", script)
	counts, _ := fastPathCounters(res.Stderr)
	if res.Stdout != want || res.Code != 0 || counts["recv answered"] != 3 {
		t.Errorf("droidroot: %s\nwant stdout:\n%s\nand 3 names given back by the library (recv answered: %d)", res, want, counts["recv answered"])
	}
}
