package emul

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/tracer"
	tt "github.com/droidroot/droidroot/tracer/tracertest"
)

func u32(b []byte) uint32 { return binary.LittleEndian.Uint32(b) }

// TestIdentHandlers: -i 1000:1000 and -0 answer the id calls from the
// emulated credentials with the kernel's set*id rules.
func TestIdentHandlers(t *testing.T) {
	g := newGuestFS(t)
	run := func(cfg Config, steps ...tt.Step) *tt.Result {
		em := New(cfg)
		return tt.Run(t, tt.Options{Table: em.Table, State: em, Mapper: g.m, Creds: InitialCreds(cfg)}, steps...)
	}
	user := Config{Identity: &Identity{UID: 1000, GID: 1001}}
	r := run(user,
		tt.Call("getuid"), tt.Call("geteuid"), tt.Call("getgid"), tt.Call("getegid"),
		tt.Call("getresuid", tt.Out(4), tt.Out(4), tt.Out(4)),
		tt.Call("setuid", tt.Int(0)),
		tt.Call("setresuid", tt.Int(-1), tt.Int(-1), tt.Int(-1)),
		tt.Call("getgroups", tt.Int(16), tt.Out(64)),
		tt.Call("setgroups", tt.Int(0), tt.Int(0)),
		tt.Call("prctl", tt.Int(unix.PR_SET_KEEPCAPS), tt.Int(1), tt.Int(0), tt.Int(0), tt.Int(0)),
		tt.Call("prctl", tt.Int(unix.PR_GET_KEEPCAPS), tt.Int(0), tt.Int(0), tt.Int(0), tt.Int(0)),
		fstatat(cwdFD, "/etc/hostname", 0),
		tt.Call("getresuid", tt.Int(8), tt.Out(4), tt.Out(4)),
	)
	want := []int64{1000, 1000, 1001, 1001, 0, -int64(unix.EPERM), 0, 1, -int64(unix.EPERM), 0, 1, 0, -int64(unix.EFAULT)}
	for k, w := range want {
		if r.Steps[k].Ret != w {
			t.Errorf("-i 1000:1001 step %d: %d, want %d", k, r.Steps[k].Ret, w)
		}
	}
	for i := 0; i < 3; i++ {
		if v := u32(r.Steps[4].Mem[i]); v != 1000 {
			t.Errorf("getresuid id %d = %d, want 1000", i, v)
		}
	}
	if v := u32(r.Steps[7].Mem[1]); v != 1001 {
		t.Errorf("getgroups = %d, want 1001", v)
	}
	if uid := u32(r.Steps[11].Mem[2][tracer.StatUIDOff:]); uid != 1000 {
		t.Errorf("stat of a file of droidroot's own uid: st_uid %d, want the guest's 1000", uid)
	}

	root := Config{Identity: &Identity{}}
	r = run(root,
		tt.Call("getuid"), tt.Call("setresuid", tt.Int(1000), tt.Int(1000), tt.Int(-1)),
		tt.Call("geteuid"), tt.Call("setuid", tt.Int(0)), tt.Call("geteuid"),
		tt.Call("setuid", tt.Int(1000)), tt.Call("setuid", tt.Int(0)),
		tt.Call("fchownat", cwdFD, tt.Str("/dir/file"), tt.Int(0), tt.Int(0), tt.Int(0)))
	want = []int64{0, 0, 1000, 0, 0, 0, -int64(unix.EPERM), 0}
	for k, w := range want {
		if r.Steps[k].Ret != w {
			t.Errorf("-0 step %d: %d, want %d", k, r.Steps[k].Ret, w)
		}
	}
}

// TestUnameHandlers: -k sets uname's release; sethostname changes the
// guest's nodename only, with the kernel's argument checks.
func TestUnameHandlers(t *testing.T) {
	u, err := ParseKernelRelease(`\\guest-node\6.17.0-test\\\\`)
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Setup(t.TempDir()); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	g := newGuestFS(t)
	const n = 65
	r := g.run(t, Config{Uname: u}, "/",
		tt.Call("uname", tt.Out(6*n)),
		tt.Call("sethostname", tt.Str("renamed"), tt.Int(7)),
		tt.Call("uname", tt.Out(6*n)),
		tt.Call("sethostname", tt.Str("x"), tt.Int(65)),
		tt.Call("sethostname", tt.Int(8), tt.Int(3)),
		tt.Call("setdomainname", tt.Str("dom"), tt.Int(3)),
		tt.Call("uname", tt.Out(6*n)),
		tt.Call("uname", tt.Int(8)),
	)
	field := func(k, i int) string {
		b := r.Steps[k].Mem[0][i*n : (i+1)*n]
		return strings.TrimRight(string(b), "\x00")
	}
	var uts unix.Utsname
	unix.Uname(&uts)
	if field(0, 2) != "6.17.0-test" || field(0, 1) != "guest-node" || field(0, 0) != unix.ByteSliceToString(uts.Sysname[:]) {
		t.Errorf("uname: sysname %q nodename %q release %q", field(0, 0), field(0, 1), field(0, 2))
	}
	if r.Steps[1].Ret != 0 || field(2, 1) != "renamed" {
		t.Errorf("sethostname: %d, then nodename %q", r.Steps[1].Ret, field(2, 1))
	}
	if r.Steps[3].Errno() != unix.EINVAL || r.Steps[4].Errno() != unix.EFAULT {
		t.Errorf("sethostname too long: %d, bad pointer: %d; want EINVAL, EFAULT", r.Steps[3].Ret, r.Steps[4].Ret)
	}
	if field(6, 5) != "dom" || r.Steps[7].Errno() != unix.EFAULT {
		t.Errorf("domainname %q; uname on a bad pointer %d", field(6, 5), r.Steps[7].Ret)
	}
	if h, _ := os.Hostname(); h != host {
		t.Errorf("the host's name changed to %q", h)
	}
}

// TestRobustListKernel: set/get_robust_list emulated per thread answer as
// the kernel does.
func TestRobustListKernel(t *testing.T) {
	get := func(pid int64) tt.Step { return tt.Call("get_robust_list", tt.Int(pid), tt.Out(8), tt.Out(8)) }
	cases := []kcase{
		{name: "get initial", step: get(0), mem: []int{2}},
		{name: "set", step: tt.Call("set_robust_list", tt.Int(0x12340), tt.Int(24))},
		{name: "get", step: get(0), mem: []int{1, 2}},
		{name: "set bad size", step: tt.Call("set_robust_list", tt.Int(0x5000), tt.Int(23))},
		{name: "get unchanged", step: get(0), mem: []int{1, 2}},
		{name: "get missing pid", step: get(0x3ffffff0)},
		{name: "get bad pointer", step: tt.Call("get_robust_list", tt.Int(0), tt.Int(8), tt.Out(8))},
		{name: "clear", step: tt.Call("set_robust_list", tt.Int(0), tt.Int(24))},
		{name: "get cleared", step: get(0), mem: []int{1, 2}},
	}
	againstKernel(t, Config{EmulateRobustList: true}, "/", cases)
}

// TestExecHandler: execve of paths the guest cannot run fails as the
// kernel's does, before anything runs.
func TestExecHandler(t *testing.T) {
	argv := func() tt.Arg { return tt.In(make([]byte, 8)) } // {NULL}
	exec := func(p string) tt.Step { return tt.Call("execve", tt.Str(p), argv(), argv()) }
	cases := []kcase{
		{name: "missing", step: exec("/missing")},
		{name: "directory", step: exec("/dir")},
		{name: "not executable", step: exec("/etc/hostname")},
		{name: "dangling", step: exec("/dangling")},
		{name: "loop", step: exec("/loop")},
		{name: "missing in bind", step: exec("/mnt/none")},
		{name: "not a dir", step: exec("/etc/hostname/x")},
		{name: "empty", step: exec("")},
		{name: "execveat missing", step: tt.Call("execveat", cwdFD, tt.Str("missing"), argv(), argv(), tt.Int(0))},
	}
	againstKernel(t, Config{}, "/", cases)
}

// TestExecveatHandler: execveat's own rules, as fs/exec.c's: invalid flags,
// AT_EMPTY_PATH on what a descriptor names (a symlink opened O_PATH|O_NOFOLLOW:
// ELOOP; a directory or the cwd: EACCES; no descriptor: EBADF),
// AT_SYMLINK_NOFOLLOW on a symlink, and a #! script named relative to a
// close-on-exec descriptor (ENOENT, before its interpreter is even looked at;
// without close-on-exec the interpreter, a file without x bit here, gives EACCES).
func TestExecveatHandler(t *testing.T) {
	argv := func() tt.Arg { return tt.In(make([]byte, 8)) } // {NULL}
	at := func(dirfd tt.Arg, p string, flags int64) tt.Step {
		return tt.Call("execveat", dirfd, tt.Str(p), argv(), argv(), tt.Int(flags))
	}
	open := func(p string, flags int64) tt.Step {
		return tt.Call("openat", cwdFD, tt.Str(p), tt.Int(flags), tt.Int(0))
	}
	cases := []kcase{
		{name: "open symlink O_PATH|O_NOFOLLOW", step: open("/rel", unix.O_PATH|unix.O_NOFOLLOW), how: cmpSign}, // 0
		{name: "empty path on a symlink's fd", step: at(tt.Ret(0), "", unix.AT_EMPTY_PATH)},
		{name: "empty path nofollow on a symlink's fd", step: at(tt.Ret(0), "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW)},
		{name: "nofollow on a symlink", step: at(cwdFD, "/rel", unix.AT_SYMLINK_NOFOLLOW)},
		{name: "nofollow on a relative symlink", step: at(cwdFD, "rel", unix.AT_SYMLINK_NOFOLLOW)},
		{name: "bad flags", step: at(cwdFD, "/etc/hostname", 0x8000)},
		{name: "bad flags, empty path", step: at(cwdFD, "", 0x8000)},
		{name: "empty path on the cwd", step: at(cwdFD, "", unix.AT_EMPTY_PATH)},
		{name: "open dir", step: open("/dir", unix.O_RDONLY|unix.O_DIRECTORY), how: cmpSign}, // 8
		{name: "empty path on a directory", step: at(tt.Ret(8), "", unix.AT_EMPTY_PATH)},
		{name: "empty path on no descriptor", step: at(tt.Int(999), "", unix.AT_EMPTY_PATH)},
		{name: "relative to no descriptor", step: at(tt.Int(999), "script", 0)},
		{name: "script via an fd", step: at(tt.Ret(8), "script", 0)},
		{name: "open dir cloexec", step: open("/dir", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC), how: cmpSign}, // 13
		{name: "script via a close-on-exec fd", step: at(tt.Ret(13), "script", 0)},
		{name: "script via a close-on-exec fd, absolute", step: at(tt.Ret(13), "/dir/script", 0)},
		{name: "open script cloexec", step: open("/dir/script", unix.O_RDONLY|unix.O_CLOEXEC), how: cmpSign}, // 16
		{name: "fexecve of a close-on-exec script", step: at(tt.Ret(16), "", unix.AT_EMPTY_PATH)},
		{name: "open script", step: open("/dir/script", unix.O_RDONLY), how: cmpSign}, // 18
		{name: "fexecve of a script", step: at(tt.Ret(18), "", unix.AT_EMPTY_PATH)},
	}
	againstKernelIn(t, Config{}, "/", func(g *guestFS) {
		p := filepath.Join(g.root, "dir/script")
		mustWrite(t, p, "#!/etc/hostname\n")
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}, cases)
}

// TestSysvIPCHandlers: --sysvipc answers semaphores, message queues and
// shared memory in the tracer.
func TestSysvIPCHandlers(t *testing.T) {
	g := newGuestFS(t)
	sembuf := func(num uint16, op int16) tt.Arg {
		b := make([]byte, 6)
		binary.LittleEndian.PutUint16(b, num)
		binary.LittleEndian.PutUint16(b[2:], uint16(op))
		binary.LittleEndian.PutUint16(b[4:], unix.IPC_NOWAIT)
		return tt.In(b)
	}
	msg := func(typ int64, text string) tt.Arg {
		b := make([]byte, 8+len(text))
		binary.LittleEndian.PutUint64(b, uint64(typ))
		copy(b[8:], text)
		return tt.In(b)
	}
	const ipcPrivate, getval, setval = 0, 12, 16
	steps := []tt.Step{
		tt.Call("semget", tt.Int(ipcPrivate), tt.Int(2), tt.Int(unix.IPC_CREAT|0o600)), // 0
		tt.Call("semop", tt.Ret(0), sembuf(0, 2), tt.Int(1)),
		tt.Call("semctl", tt.Ret(0), tt.Int(0), tt.Int(getval), tt.Int(0)),
		tt.Call("semop", tt.Ret(0), sembuf(1, -1), tt.Int(1)),
		tt.Call("semctl", tt.Ret(0), tt.Int(1), tt.Int(setval), tt.Int(5)),
		tt.Call("semctl", tt.Ret(0), tt.Int(1), tt.Int(getval), tt.Int(0)),
		tt.Call("msgget", tt.Int(ipcPrivate), tt.Int(unix.IPC_CREAT|0o600)), // 6
		tt.Call("msgsnd", tt.Ret(6), msg(3, "hello"), tt.Int(5), tt.Int(0)),
		tt.Call("msgrcv", tt.Ret(6), tt.Out(64), tt.Int(56), tt.Int(0), tt.Int(unix.IPC_NOWAIT)),
		tt.Call("msgrcv", tt.Ret(6), tt.Out(64), tt.Int(56), tt.Int(0), tt.Int(unix.IPC_NOWAIT)),
		tt.Call("shmget", tt.Int(ipcPrivate), tt.Int(8192), tt.Int(unix.IPC_CREAT|0o600)), // 10
		tt.Call("shmat", tt.Ret(10), tt.Int(0), tt.Int(0)),
		tt.Call("shmdt", tt.Ret(11)),
		tt.Call("shmctl", tt.Ret(10), tt.Int(unix.IPC_RMID), tt.Int(0)),
		tt.Call("msgctl", tt.Ret(6), tt.Int(unix.IPC_RMID), tt.Int(0)),
		tt.Call("semctl", tt.Ret(0), tt.Int(0), tt.Int(unix.IPC_RMID), tt.Int(0)),
		tt.Call("semctl", tt.Ret(0), tt.Int(0), tt.Int(getval), tt.Int(0)),
	}
	if !tt.Has("semop") {
		t.Skip("no semop here")
	}
	r := g.run(t, Config{SysVIPC: true, TmpDir: t.TempDir()}, "/", steps...)
	ret := func(k int) int64 { return r.Steps[k].Ret }
	if ret(0) < 0 || ret(1) != 0 || ret(2) != 2 || r.Steps[3].Errno() != unix.EAGAIN || ret(4) != 0 || ret(5) != 5 {
		t.Errorf("semaphores: %d %d %d %d %d %d", ret(0), ret(1), ret(2), ret(3), ret(4), ret(5))
	}
	if ret(6) < 0 || ret(7) != 0 || ret(8) != 5 || string(r.Steps[8].Mem[1][8:13]) != "hello" || u32(r.Steps[8].Mem[1]) != 3 || r.Steps[9].Errno() != unix.ENOMSG {
		t.Errorf("messages: %d %d %d %q %d", ret(6), ret(7), ret(8), r.Steps[8].Mem[1][:16], ret(9))
	}
	if ret(10) < 0 || ret(11) <= 0 || ret(12) != 0 || ret(13) != 0 {
		t.Errorf("shared memory: %d %#x %d %d", ret(10), ret(11), ret(12), ret(13))
	}
	if ret(14) != 0 || ret(15) != 0 || r.Steps[16].Errno() != unix.EINVAL && r.Steps[16].Errno() != unix.EIDRM {
		t.Errorf("removal: %d %d, then %d", ret(14), ret(15), ret(16))
	}
}

// TestExecRuns: a successful execve goes through the loader with the
// plan the handler made: the exec'd program (the test binary, made a
// child that exits with status 7) runs.
func TestExecRuns(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	env, err := tt.ChildEnv(tt.Call("exit_group", tt.Int(7)))
	if err != nil {
		t.Fatal(err)
	}
	r, err := tt.Try(t, tt.Options{Table: Table(Config{})},
		tt.Call("execve", tt.Str(self), tt.Strv(self, "-test.run=^$"), tt.Strv(env)))
	if r.Status != 7 {
		t.Errorf("exec'd program: status %d (%v), want 7\n%s", r.Status, err, r.Stderr)
	}
	if s, ok := r.EntryOf(0); !ok || s.Name != "execve" {
		t.Errorf("no execve stop: %+v", r.Stops)
	}
}

// TestSeccompListenerRefused: a guest filter that asks for a user-notification listener is
// refused with EBUSY (its CONTINUE would run path calls untranslated); one that does not is
// passed to the kernel (here with a NULL program, which the kernel refuses with EFAULT).
func TestSeccompListenerRefused(t *testing.T) {
	g := newGuestFS(t)
	em := New(Config{})
	steps := []tt.Step{
		tt.Call("prctl", tt.Int(unix.PR_SET_NO_NEW_PRIVS), tt.Int(1), tt.Int(0), tt.Int(0), tt.Int(0)),
		tt.Call("seccomp", tt.Int(unix.SECCOMP_SET_MODE_FILTER), tt.Int(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER), tt.Int(0)),
		tt.Call("seccomp", tt.Int(unix.SECCOMP_SET_MODE_FILTER), tt.Int(0), tt.Int(0)),
	}
	r := tt.Run(t, tt.Options{Table: em.Table, State: em, Mapper: g.m}, steps...)
	if e := r.Steps[1].Errno(); e != unix.EBUSY {
		t.Errorf("seccomp with NEW_LISTENER: %v, want EBUSY", e)
	}
	// Without the flag the call reaches the kernel, which reads the (NULL) program.
	if e := r.Steps[2].Errno(); e != unix.EFAULT {
		t.Errorf("seccomp without NEW_LISTENER: %v, want the kernel's EFAULT for a NULL program", e)
	}
}

// TestOwnerFixLayers: -0/-i's owner fix-up of stat results holds whatever
// layer made the stat handler: alone, and with -l's and -L's stat patch
// (whose entry needs no exit stop for most files: launchers pass
// --link2symlink -0, where every traced stat showed the real owner), for
// the path stats, statx and fstat of a descriptor.
func TestOwnerFixLayers(t *testing.T) {
	g := newGuestFS(t)
	steps := []tt.Step{
		fstatat(cwdFD, "/etc/hostname", 0),
		fstatat(cwdFD, "/dir/file", unix.AT_SYMLINK_NOFOLLOW),
		tt.Call("statx", cwdFD, tt.Str("/dir/file"), tt.Int(0), tt.Int(unix.STATX_BASIC_STATS), tt.Out(256)),
		openat(cwdFD, "/dir/file", unix.O_RDONLY),
		tt.Call("fstat", tt.Ret(3), tt.Out(statBufSize)),
		tt.Call(fstatatName(), tt.Ret(3), tt.Str(""), tt.Out(statBufSize), tt.Int(unix.AT_EMPTY_PATH)),
		tt.Call("fstat", tt.Int(999), tt.Out(statBufSize)), // not open: the kernel's EBADF
	}
	for _, cfg := range []Config{
		{Identity: &Identity{UID: 1000, GID: 1001}},
		{Identity: &Identity{UID: 1000, GID: 1001}, Link2Symlink: true},
		{Identity: &Identity{UID: 1000, GID: 1001}, LstatLinkSize: true},
		{Identity: &Identity{UID: 1000, GID: 1001}, Link2Symlink: true, LstatLinkSize: true},
	} {
		if uint32(os.Getuid()) == cfg.Identity.UID {
			t.Skip("the test's own uid is the identity's")
		}
		r := g.run(t, cfg, "/", steps...)
		checkOwners(t, cfg, r, "")
		// With the lookup cache the tracer answers the path stats itself
		// (emulStat), as it does a descriptor's (emulFdStat), and the
		// fix-up runs at once (ExitNow): one stop.
		r = g.runCached(t, cfg, "/", steps...)
		checkOwners(t, cfg, r, " (cached)")
		for _, k := range []int{0, 1, 2, 4, 5} {
			stops := r.StopsOf(k)
			if len(stops) != 2 || !stops[0].Answered || !stops[1].Now {
				t.Errorf("-l %v -L %v step %d (cached): %+v; want answered by the tracer at entry, its exit run then",
					cfg.Link2Symlink, cfg.LstatLinkSize, k, stops)
			}
		}
	}
}

// checkOwners checks TestOwnerFixLayers' results.
func checkOwners(t *testing.T, cfg Config, r *tt.Result, how string) {
	t.Helper()
	owner := func(k int, mem []byte, off int) {
		if r.Steps[k].Ret != 0 {
			t.Errorf("-l %v -L %v step %d%s: %d", cfg.Link2Symlink, cfg.LstatLinkSize, k, how, r.Steps[k].Ret)
			return
		}
		if uid, gid := u32(mem[off:]), u32(mem[off+4:]); uid != 1000 || gid != 1001 {
			t.Errorf("-l %v -L %v step %d%s: owner %d:%d, want the identity's 1000:1001", cfg.Link2Symlink, cfg.LstatLinkSize, k, how, uid, gid)
		}
	}
	owner(0, r.Steps[0].Mem[2], tracer.StatUIDOff)
	owner(1, r.Steps[1].Mem[2], tracer.StatUIDOff)
	owner(2, r.Steps[2].Mem[4], statxUIDOffset)
	owner(4, r.Steps[4].Mem[1], tracer.StatUIDOff)
	owner(5, r.Steps[5].Mem[2], tracer.StatUIDOff)
	if r.Steps[6].Ret != -int64(unix.EBADF) {
		t.Errorf("-l %v -L %v%s: fstat of a descriptor not open: %d, want EBADF", cfg.Link2Symlink, cfg.LstatLinkSize, how, r.Steps[6].Ret)
	}
}
