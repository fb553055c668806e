package emul

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/fastpath"
	"github.com/droidroot/droidroot/seccomp"
	"github.com/droidroot/droidroot/tracer"
	tt "github.com/droidroot/droidroot/tracer/tracertest"
)

// TestFastPathHandshake: the handshake writes the session's configuration
// with the options' flags, or fails with ERANGE for a short buffer; ld.so's
// first access and open of /etc/ld.so.preload after exec get the guest's own
// file with the library added, later ones the guest's own file.
func TestFastPathHandshake(t *testing.T) {
	g := newGuestFS(t)
	mustWrite(t, filepath.Join(g.root, "etc/ld.so.preload"), "/usr/lib/libshim.so\n")
	fp := &FastPath{Lib: fastpath.Config{Trampoline: 0x4_0000_0000, TTLNanos: 7, Root: g.root}, Dir: t.TempDir()}
	cfg := Config{FastPath: fp, Link2Symlink: true, Identity: &Identity{UID: 0, GID: 0}}
	steps := []tt.Step{
		tt.Call("droidroot_fastpath", tt.Out(65536), tt.Int(65536), tt.Out(4)),
		tt.Call("droidroot_fastpath", tt.Out(16), tt.Int(16), tt.Out(4)),
		tt.Call("faccessat", cwdFD, tt.Str("/etc/ld.so.preload"), tt.Int(unix.R_OK)),
		openat(cwdFD, "/etc/ld.so.preload", unix.O_RDONLY),
		tt.Call("read", tt.Ret(3), tt.Out(4096), tt.Int(4096)),
		openat(cwdFD, "/etc/ld.so.preload", unix.O_RDONLY),
		tt.Call("read", tt.Ret(5), tt.Out(4096), tt.Int(4096)),
	}
	r := g.run(t, cfg, "/", steps...)
	n := r.Steps[0].Ret
	blob := r.Steps[0].Mem[0][:max(n, 0)]
	if n < 56 || string(blob[:4]) != "DRFP" {
		t.Fatalf("handshake = %d, %q", n, blob)
	}
	flags := binary.LittleEndian.Uint32(blob[12:])
	wantFlags := uint32(fastpath.FlagL2S | fastpath.FlagIDs | fastpath.FlagGetIDs | fastpath.FlagFDGuard | fastpath.FlagDirs)
	if os.Getuid() != 0 || os.Getgid() != 0 {
		wantFlags |= fastpath.FlagOwner
	}
	if flags != wantFlags || binary.LittleEndian.Uint64(blob[16:]) != 0x4_0000_0000 || binary.LittleEndian.Uint64(blob[24:]) != 7 {
		t.Errorf("handshake header: flags %#x (want %#x), trampoline %#x, ttl %d", flags, wantFlags,
			binary.LittleEndian.Uint64(blob[16:]), binary.LittleEndian.Uint64(blob[24:]))
	}
	if e := r.Steps[1].Errno(); e != unix.ERANGE {
		t.Errorf("handshake with a 16-byte buffer: %v, want ERANGE", e)
	}
	if r.Steps[2].Ret != 0 {
		t.Errorf("access of the preload file: %d", r.Steps[2].Ret)
	}
	merged := "/usr/lib/libshim.so\n" + fastpath.GuestPath + "\n"
	if got := string(r.Steps[4].Mem[1][:max(r.Steps[4].Ret, 0)]); got != merged {
		t.Errorf("ld.so's read of /etc/ld.so.preload = %q, want %q", got, merged)
	}
	if got := string(r.Steps[6].Mem[1][:max(r.Steps[6].Ret, 0)]); got != "/usr/lib/libshim.so\n" {
		t.Errorf("a later read of /etc/ld.so.preload = %q, want the guest's own", got)
	}
}

// TestFastPathMarksTrampolineCalls: the calls the library makes are let
// through from its trampoline, no others.
func TestFastPathMarksTrampolineCalls(t *testing.T) {
	em := New(Config{FastPath: &FastPath{Lib: fastpath.Config{Root: "/"}, Dir: t.TempDir()}, Link2Symlink: true})
	lib := map[string]bool{}
	for _, name := range fastpath.TrampolineCalls {
		lib[name] = true
	}
	for name, h := range em.Table {
		if h.FromTrampoline && !lib[name] {
			t.Errorf("%s is let through from the trampoline; the library does not make it", name)
		}
		if lib[name] && !h.FromTrampoline {
			t.Errorf("%s is traced from the trampoline too", name)
		}
	}
	if _, ok := em.Table[fastpath.SyscallName]; !ok {
		t.Errorf("no handler for %s", fastpath.SyscallName)
	}
	if _, ok := New(Config{}).Table[fastpath.SyscallName]; ok {
		t.Errorf("a handshake handler without the fast path")
	}
}

// TestFastPathArmsDynamicOnly: only an exec of a dynamic program (or one
// droidroot did not plan) arms the merged /etc/ld.so.preload; a static
// program's, or a static -q emulator's (whose guest's ld.so is of another
// ABI), first read of the file is the guest's own.
func TestFastPathArmsDynamicOnly(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []tracer.Event
		want   bool
	}{
		{"dynamic", []tracer.Event{{Kind: tracer.EventExec, Pid: 7}}, true},
		{"static", []tracer.Event{{Kind: tracer.EventExec, Pid: 7, Static: true}}, false},
		{"static then dynamic", []tracer.Event{{Kind: tracer.EventExec, Pid: 7, Static: true}, {Kind: tracer.EventExec, Pid: 7}}, true},
		{"dynamic then static", []tracer.Event{{Kind: tracer.EventExec, Pid: 7}, {Kind: tracer.EventExec, Pid: 7, Static: true}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			em := New(Config{FastPath: &FastPath{Lib: fastpath.Config{Root: "/"}, Dir: t.TempDir()}})
			for i := range tc.events {
				em.fastPath.events(&tc.events[i])
			}
			if got := em.fastPath.procs[7].armed; got != tc.want {
				t.Errorf("armed = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestFastPathHandshakeCwd: the handshake publishes the process's cwd in
// its cwd record at once (the guest path, the kernel's host path, a seq
// other than 0), so that the process's first getcwd is answered in-process;
// not without a record (an old library, a short one).
func TestFastPathHandshakeCwd(t *testing.T) {
	g := newGuestFS(t)
	fp := &FastPath{Lib: fastpath.Config{Trampoline: 0x4_0000_0000, TTLNanos: 7, Root: g.root}, Dir: t.TempDir()}
	cfg := Config{FastPath: fp}
	for _, size := range []int{fastpath.CwdSize, fastpath.CwdSize - 1} {
		r := g.run(t, cfg, "/dir", tt.Call("droidroot_fastpath", tt.Out(65536), tt.Int(65536), tt.Out(4), tt.Out(fastpath.CwdSize), tt.Int(int64(size)), tt.Int(0)))
		if r.Steps[0].Ret <= 0 {
			t.Fatalf("handshake = %d", r.Steps[0].Ret)
		}
		rec := r.Steps[0].Mem[3]
		le := binary.LittleEndian
		seq, hl, gl := le.Uint32(rec[0:]), le.Uint32(rec[fastpath.CwdLenOff:]), le.Uint32(rec[fastpath.CwdLenOff+4:])
		if size < fastpath.CwdSize {
			if seq != 0 {
				t.Errorf("a record of %d bytes was written (seq %d)", size, seq)
			}
			continue
		}
		host, err := filepath.EvalSymlinks(filepath.Join(g.root, "dir"))
		if err != nil {
			t.Fatal(err)
		}
		if seq == 0 || int(hl) != len(host) || string(rec[fastpath.CwdHostOff:fastpath.CwdHostOff+int(hl)]) != host ||
			string(rec[fastpath.CwdGuestOff:fastpath.CwdGuestOff+int(gl)]) != "/dir" {
			t.Errorf("record: seq %d, host %q (want %q), guest %q (want /dir)", seq, rec[fastpath.CwdHostOff:fastpath.CwdHostOff+int(hl)], host,
				rec[fastpath.CwdGuestOff:fastpath.CwdGuestOff+int(gl)])
		}
	}
}

// TestFastPathHandshakeIDs: under emulated ids the handshake publishes the
// calling thread's in the cwd record's ids record (the ids, uid, euid, suid,
// gid, egid, sgid, then a seq other than 0), as the tracer answers get*id at
// that moment; a set*id call clears it (seq 0) before it runs, and it is
// published again after it where every thread of the process still has the
// same ids. Nothing without emulated ids, where the process's threads have
// different ones (a set*id system call changes the caller's alone), nor in
// a record too short to hold them. (The child reports every buffer after its
// last step: a record as the later steps left it.)
func TestFastPathHandshakeIDs(t *testing.T) {
	g := newGuestFS(t)
	fp := &FastPath{Lib: fastpath.Config{Trampoline: 0x4_0000_0000, TTLNanos: 7, Root: g.root}, Dir: t.TempDir()}
	hs := func(size int) tt.Step {
		return tt.Call("droidroot_fastpath", tt.Out(65536), tt.Int(65536), tt.Out(4), tt.Out(fastpath.CwdSize), tt.Int(int64(size)), tt.Int(0))
	}
	le := binary.LittleEndian
	type rec struct {
		published bool
		ids       [6]uint32
	}
	for _, tc := range []struct {
		name  string
		cfg   Config
		steps []tt.Step
		want  map[int]rec // by handshake step
	}{
		{"none", Config{FastPath: fp}, []tt.Step{hs(fastpath.CwdSize)}, map[int]rec{0: {}}},
		{"-i 1000:100", Config{FastPath: fp, Identity: &Identity{UID: 1000, GID: 100}}, []tt.Step{hs(fastpath.CwdSize)},
			map[int]rec{0: {true, [6]uint32{1000, 1000, 1000, 100, 100, 100}}}},
		{"-0, then setresgid and setresuid", Config{FastPath: fp, Identity: &Identity{}}, []tt.Step{
			hs(fastpath.CwdSize),
			tt.Call("setresgid", tt.Int(4), tt.Int(5), tt.Int(6)),
			tt.Call("setresuid", tt.Int(7), tt.Int(8), tt.Int(9)),
			hs(fastpath.CwdSize),
		}, map[int]rec{0: {false, [6]uint32{}}, 3: {}}}, // the child's other threads kept their ids: none published
		{"-0, a setresuid that changes nothing: published again", Config{FastPath: fp, Identity: &Identity{}}, []tt.Step{
			hs(fastpath.CwdSize),
			tt.Call("setresuid", tt.Int(-1), tt.Int(-1), tt.Int(-1)),
		}, map[int]rec{0: {true, [6]uint32{}}}},
		{"-0, getuid only", Config{FastPath: fp, Identity: &Identity{}}, []tt.Step{
			hs(fastpath.CwdSize),
			tt.Call("getuid"),
		}, map[int]rec{0: {true, [6]uint32{}}}},
		{"set*id emulated", Config{FastPath: fp, EmulateSetID: true}, []tt.Step{hs(fastpath.CwdSize)},
			map[int]rec{0: {true, [6]uint32{uint32(os.Getuid()), uint32(os.Geteuid()), uint32(os.Geteuid()), uint32(os.Getgid()), uint32(os.Getegid()), uint32(os.Getegid())}}}},
		{"-0, a short record", Config{FastPath: fp, Identity: &Identity{}}, []tt.Step{hs(fastpath.CwdSize - 1)}, map[int]rec{0: {}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := g.run(t, tc.cfg, "/", tc.steps...)
			for k, st := range tc.steps {
				if st.Name != "droidroot_fastpath" {
					if r.Steps[k].Ret < 0 {
						t.Fatalf("step %d %s: %v", k, st.Name, r.Steps[k].Errno())
					}
					continue
				}
				if r.Steps[k].Ret <= 0 {
					t.Fatalf("handshake = %d", r.Steps[k].Ret)
				}
				b := r.Steps[k].Mem[3][fastpath.CwdIDsOff:]
				var got rec
				got.published = le.Uint32(b) != 0
				for i := range got.ids {
					got.ids[i] = le.Uint32(b[4+4*i:])
				}
				if got != tc.want[k] {
					t.Errorf("step %d: record %+v, want %+v", k, got, tc.want[k])
				}
			}
		})
	}
}

// TestCwdRecord: the cwd record's layout (fastpath.c's struct fp_cwd from
// its lengths on) and when a getcwd's answer is published.
func TestCwdRecord(t *testing.T) {
	rec := cwdRecord("/host/root/tmp", "/tmp")
	const off = fastpath.CwdLenOff
	if len(rec) != fastpath.CwdGuestOff-off+4 {
		t.Fatalf("record of %d bytes", len(rec))
	}
	le := binary.LittleEndian
	if le.Uint32(rec[0:]) != 14 || le.Uint32(rec[4:]) != 4 || le.Uint64(rec[8:]) != 0 {
		t.Errorf("lengths %d %d, padding %d", le.Uint32(rec[0:]), le.Uint32(rec[4:]), le.Uint64(rec[8:]))
	}
	if got := string(rec[fastpath.CwdHostOff-off : fastpath.CwdHostOff-off+14]); got != "/host/root/tmp" {
		t.Errorf("host %q", got)
	}
	if got := string(rec[fastpath.CwdGuestOff-off:]); got != "/tmp" {
		t.Errorf("guest %q", got)
	}
	long := "/" + strings.Repeat("x", fastpath.CwdMax)
	settled := tracer.FS{Cwd: "/tmp", Host: "/host/root/tmp"}
	for _, c := range []struct {
		name string
		fs   tracer.FS
		p    tracer.Process
		ret  int64
		want bool
	}{
		{"settled", settled, tracer.Process{}, 5, true},
		{"failed", settled, tracer.Process{}, -int64(unix.ERANGE), false},
		{"another answer", settled, tracer.Process{}, 7, false},
		{"pending", tracer.FS{Cwd: "/tmp", Host: "/host/root/tmp", Pending: &tracer.PendingCwd{}}, tracer.Process{}, 5, false},
		{"lost", tracer.FS{Cwd: "/", Lost: true}, tracer.Process{}, 2, false},
		{"host unknown", tracer.FS{Cwd: "/tmp"}, tracer.Process{}, 5, false},
		{"threads with their own cwd", settled, tracer.Process{SplitFS: true}, 5, false},
		{"guest too long", tracer.FS{Cwd: long, Host: "/h"}, tracer.Process{}, int64(len(long) + 1), false},
		{"host too long", tracer.FS{Cwd: "/tmp", Host: long}, tracer.Process{}, 5, false},
	} {
		if got := cwdPublishable(&c.fs, &c.p, c.ret); got != c.want {
			t.Errorf("%s: publishable = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestFastPathSharedVM: a process whose memory a child shares with a
// filesystem context of its own (vfork, clone with CLONE_VM) publishes no
// cwd record until that child execs or ends, since the child reads the
// same record (fastpath.c's cwd_id takes the record's cwd for the
// caller's); a vfork child's own vfork child counts on the memory's owner.
func TestFastPathSharedVM(t *testing.T) {
	em := New(Config{FastPath: &FastPath{Lib: fastpath.Config{Root: "/"}, Dir: t.TempDir()}})
	s := em.fastPath
	s.procs[1] = &fastPathProc{cwd: 0x1000}
	ev := func(e tracer.Event) { s.events(&e) }
	want := func(step string, n int) {
		t.Helper()
		if got := s.procs[1].vmChildren; got != n {
			t.Errorf("%s: %d processes share the owner's memory, want %d", step, got, n)
		}
		if got := s.procs[1].ownsRecord(); got != (n == 0) {
			t.Errorf("%s: the owner may publish its record: %v, want %v", step, got, n == 0)
		}
	}
	ev(tracer.Event{Kind: tracer.EventFork, Pid: 2, ParentPid: 1})
	want("a fork", 0)
	ev(tracer.Event{Kind: tracer.EventFork, Pid: 3, ParentPid: 1, Flags: unix.CLONE_VM | unix.CLONE_VFORK})
	want("a vfork", 1)
	ev(tracer.Event{Kind: tracer.EventFork, Pid: 4, ParentPid: 3, Flags: unix.CLONE_VM | unix.CLONE_VFORK})
	want("the vfork child's vfork", 2)
	ev(tracer.Event{Kind: tracer.EventExec, Pid: 3})
	want("the first child's exec", 1)
	ev(tracer.Event{Kind: tracer.EventExec, Pid: 3})
	want("its second exec", 1)
	ev(tracer.Event{Kind: tracer.EventProcessGone, Pid: 4})
	want("the grandchild's end", 0)
	ev(tracer.Event{Kind: tracer.EventFork, Pid: 5, ParentPid: 1, Flags: unix.CLONE_VM})
	want("a clone with CLONE_VM", 1)
	ev(tracer.Event{Kind: tracer.EventProcessGone, Pid: 5})
	want("its end", 0)
	ev(tracer.Event{Kind: tracer.EventProcessGone, Pid: 2})
	want("the fork's end", 0)
	for pid, p := range s.procs {
		if p.sharedVM && p.ownsRecord() {
			t.Errorf("process %d shares its parent's memory and may publish", pid)
		}
	}
}

// ownerFlag is FlagOwner where -0 changes the owners stat answers (droidroot
// is not run as root).
func ownerFlag() uint32 {
	if os.Getuid() != 0 || os.Getgid() != 0 {
		return fastpath.FlagOwner
	}
	return 0
}

// TestFastPathFlags: the options the library must know, by option; the
// library may make directory streams (FlagDirs) only without -H, whose
// hiding is the tracer's.
func TestFastPathFlags(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want uint32
	}{
		{"none", Config{}, fastpath.FlagDirs},
		{"-l", Config{Link2Symlink: true}, fastpath.FlagL2S | fastpath.FlagDirs},
		{"-l -H", Config{Link2Symlink: true, HideOwnFiles: true}, fastpath.FlagL2S},
		{"-l, links refused", Config{Link2Symlink: true, FailLink: true}, fastpath.FlagL2S | fastpath.FlagNoLink | fastpath.FlagDirs},
		{"-H", Config{HideOwnFiles: true}, 0},
		{"-L", Config{LstatLinkSize: true}, fastpath.FlagLstatSize | fastpath.FlagDirs},
		{"links refused", Config{FailLink: true}, fastpath.FlagNoLink | fastpath.FlagDirs},
		{"--ashmem-memfd", Config{AshmemMemfd: true}, fastpath.FlagAshmem | fastpath.FlagDirs},
		{"-p", Config{PortShift: true}, fastpath.FlagPortShift | fastpath.FlagDirs},
		{"trampoline by open", Config{TrampolineByOpen: true}, fastpath.FlagTrampOpen | fastpath.FlagDirs},
		{"-0", Config{Identity: &Identity{}}, fastpath.FlagIDs | fastpath.FlagGetIDs | fastpath.FlagDirs | ownerFlag()},
		{"set*id emulated", Config{EmulateSetID: true}, fastpath.FlagGetIDs | fastpath.FlagDirs},
	}
	// Android's policy blocks poll and epoll_wait on x86_64 only (arm64 has neither call):
	// the library makes their newer forms there (FlagLegacy), on a device too.
	legacy := uint32(0)
	if runtime.GOARCH == "amd64" {
		legacy = fastpath.FlagLegacy
	}
	for _, v := range append(seccomp.AndroidVersions(), "device") {
		tests = append(tests, struct {
			name string
			cfg  Config
			want uint32
		}{"Android " + v, Config{}.WithAndroid(androidPolicy(t, v)), legacy | fastpath.FlagDirs | fastpath.FlagGetIDs})
	}
	for _, tc := range tests {
		if got, _, _, _, _ := fastPathFlags(tc.cfg); got != tc.want {
			t.Errorf("%s: flags %#x, want %#x", tc.name, got, tc.want)
		}
	}
}

// TestProcIsHost: the handshake adds the program's name where the guest's
// /proc/self/exe is the host's, as the library maps the path (the longest
// bind prefix, the last on a tie).
func TestProcIsHost(t *testing.T) {
	b := func(g, h string) fastpath.Bind { return fastpath.Bind{Guest: g, Host: h} }
	for _, tc := range []struct {
		name  string
		root  string
		binds []fastpath.Bind
		want  bool
	}{
		{"rootfs /", "/", nil, true},
		{"a rootfs, no binds", "/srv/r", nil, false},
		{"-b /proc", "/srv/r", []fastpath.Bind{b("/dev", "/dev"), b("/proc", "/proc")}, true},
		{"-b /proc/", "/srv/r", []fastpath.Bind{b("/proc/", "/proc")}, true},
		{"another /proc", "/srv/r", []fastpath.Bind{b("/proc", "/srv/fakeproc")}, false},
		{"/proc/self bound elsewhere", "/srv/r", []fastpath.Bind{b("/proc", "/proc"), b("/proc/self", "/srv/x")}, false},
		{"the last of two at /proc", "/srv/r", []fastpath.Bind{b("/proc", "/srv/fakeproc"), b("/proc", "/proc")}, true},
		{"a bind at /", "/srv/r", []fastpath.Bind{b("/", "/")}, true},
		{"not a prefix", "/srv/r", []fastpath.Bind{b("/pro", "/proc")}, false},
	} {
		if got := procIsHost(fastpath.Config{Root: tc.root, Binds: tc.binds}); got != tc.want {
			t.Errorf("%s: procIsHost = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestHandshakeBlobExe: the program's name follows the session's
// configuration, NUL-terminated, the size in the header covering it; not
// where the guest's /proc is not the host's or droidroot has no record.
func TestHandshakeBlobExe(t *testing.T) {
	blob, err := fastpath.Config{Trampoline: 0x4_0000_0000, Root: "/srv/r"}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	s := &fastPathState{blob: blob, procIsHost: true}
	got := s.handshakeBlob(&tracer.Process{Exe: "/usr/bin/wine"})
	want := append(append([]byte(nil), blob...), "/usr/bin/wine\x00"...)
	binary.LittleEndian.PutUint32(want[8:], uint32(len(want)))
	if string(got) != string(want) {
		t.Errorf("handshakeBlob = %q, want %q", got, want)
	}
	if string(blob[8:12]) == string(got[8:12]) {
		t.Errorf("the session's blob changed, or the size was not patched")
	}
	for _, tc := range []struct {
		name string
		s    *fastPathState
		pr   *tracer.Process
	}{
		{"not the host's /proc", &fastPathState{blob: blob}, &tracer.Process{Exe: "/usr/bin/wine"}},
		{"no record", s, &tracer.Process{}},
		{"no process", s, nil},
		{"too long", s, &tracer.Process{Exe: "/" + strings.Repeat("x", tracer.PathMax)}},
	} {
		if got := tc.s.handshakeBlob(tc.pr); string(got) != string(blob) {
			t.Errorf("%s: handshakeBlob = %q, want the session's", tc.name, got)
		}
	}
}

// TestFastPathMergedOf: the merged preload file holds the guest's file with
// the library added, is found again while the guest's file is unchanged,
// and is made again from the new content once it changes; a guest without
// the file gets the library alone.
func TestFastPathMergedOf(t *testing.T) {
	s := &fastPathState{files: map[string]string{}, dir: t.TempDir()}
	own := filepath.Join(t.TempDir(), "ld.so.preload")
	lib := fastpath.GuestPath + "\n"
	read := func(name, host, want string) string {
		t.Helper()
		f, err := s.mergedOf(host)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, err := os.ReadFile(f)
		if err != nil || string(b) != want {
			t.Errorf("%s: %s holds %q (%v), want %q", name, f, b, err, want)
		}
		return f
	}
	none := read("no guest file", "", lib)
	if f := read("a missing guest file", own, lib); f != none {
		t.Errorf("a missing guest file merges into %s, not %s", f, none)
	}
	mustWrite(t, own, "/usr/lib/libshim.so\n")
	first := read("the guest's file", own, "/usr/lib/libshim.so\n"+lib)
	if f := read("unchanged", own, "/usr/lib/libshim.so\n"+lib); f != first {
		t.Errorf("an unchanged guest file merges into %s, not %s", f, first)
	}
	mustWrite(t, own, "/usr/lib/libother.so\n")
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(own, later, later); err != nil {
		t.Fatal(err)
	}
	read("changed", own, "/usr/lib/libother.so\n"+lib)
	if err := os.Remove(own); err != nil {
		t.Fatal(err)
	}
	if f := read("removed", own, lib); f != none {
		t.Errorf("a removed guest file merges into %s, not %s", f, none)
	}
}

// TestFastPathWaitsWord: the handshake of a process that traces nobody
// writes fastpath.WaitsOwn into its cwd record's waits word (the library's
// WNOHANG waits in-process), none into a record too short for it
// (TestFastPathWaitsEvent: the word cleared).
func TestFastPathWaitsWord(t *testing.T) {
	g := newGuestFS(t)
	fp := &FastPath{Lib: fastpath.Config{Trampoline: 0x4_0000_0000, TTLNanos: 7, Root: g.root}, Dir: t.TempDir()}
	hs := func(size int) tt.Step {
		return tt.Call("droidroot_fastpath", tt.Out(65536), tt.Int(65536), tt.Out(4), tt.Out(fastpath.CwdSize), tt.Int(int64(size)), tt.Int(0))
	}
	for _, tc := range []struct {
		name string
		size int
		want uint32
	}{{"record", fastpath.CwdSize, fastpath.WaitsOwn}, {"a short record", fastpath.CwdSize - 1, 0}} {
		r := g.run(t, Config{FastPath: fp}, "/", hs(tc.size))
		if r.Steps[0].Ret <= 0 {
			t.Fatalf("%s: handshake = %d", tc.name, r.Steps[0].Ret)
		}
		if got := binary.LittleEndian.Uint32(r.Steps[0].Mem[3][fastpath.CwdWaitsOff:]); got != tc.want {
			t.Errorf("%s: waits word %d, want %d", tc.name, got, tc.want)
		}
	}

}
