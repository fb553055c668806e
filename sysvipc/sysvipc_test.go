package sysvipc

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

var (
	alice = &Caller{Pid: 10, Tid: 10, UID: 1000, GID: 1000}
	alic2 = &Caller{Pid: 11, Tid: 11, UID: 1000, GID: 1000}
	alic3 = &Caller{Pid: 12, Tid: 13, UID: 1000, GID: 1000}
	bob   = &Caller{Pid: 20, Tid: 20, UID: 1001, GID: 1001}
	root  = &Caller{Pid: 30, Tid: 30}
)

func errno(err error) unix.Errno {
	if err == nil {
		return 0
	}
	return err.(unix.Errno)
}

func TestSemGet(t *testing.T) {
	ns := NewNamespace()
	id, err := ns.SemGet(alice, 42, 3, IPCCreat|0o600)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		c     *Caller
		key   int32
		nsems int
		flg   int
		want  unix.Errno
	}{
		{"existing", alice, 42, 3, 0, 0},
		{"existing fewer", alice, 42, 1, 0o600, 0},
		{"existing more", alice, 42, 4, 0, unix.EINVAL},
		{"excl", alice, 42, 3, IPCCreat | IPCExcl, unix.EEXIST},
		{"missing", alice, 43, 3, 0, unix.ENOENT},
		{"create zero", alice, 43, 0, IPCCreat, unix.EINVAL},
		{"negative", alice, 43, -1, IPCCreat, unix.EINVAL},
		{"too many", alice, 43, SemMSL + 1, IPCCreat, unix.EINVAL},
		{"private zero", alice, IPCPrivate, 0, 0, unix.EINVAL},
		{"other user", bob, 42, 3, 0o400, unix.EACCES},
		{"other user no mode", bob, 42, 3, 0, 0},
		{"root", root, 42, 3, 0o600, 0},
	} {
		got, err := ns.SemGet(tc.c, tc.key, tc.nsems, tc.flg)
		if errno(err) != tc.want || err == nil && got != id {
			t.Errorf("%s: got %d, %v; want id %d, %v", tc.name, got, err, id, tc.want)
		}
	}
	id2, err := ns.SemGet(alice, IPCPrivate, 1, 0)
	if err != nil || id2 == id {
		t.Errorf("IPC_PRIVATE: %d, %v (first id %d)", id2, err, id)
	}
}

func TestSemOpErrors(t *testing.T) {
	ns := NewNamespace()
	id, _ := ns.SemGet(alice, IPCPrivate, 2, 0o600)
	big := make([]SemBuf, SemOPM+1)
	for _, tc := range []struct {
		name string
		c    *Caller
		id   int
		ops  []SemBuf
		want unix.Errno
	}{
		{"no ops", alice, id, nil, unix.EINVAL},
		{"negative id", alice, -1, []SemBuf{{Op: 1}}, unix.EINVAL},
		{"too many ops", alice, id, big, unix.E2BIG},
		{"bad id", alice, id + 1, []SemBuf{{Op: 1}}, unix.EINVAL},
		{"bad num", alice, id, []SemBuf{{Num: 2, Op: 1}}, unix.EFBIG},
		{"no permission", bob, id, []SemBuf{{Op: 1}}, unix.EACCES},
		{"nowait", alice, id, []SemBuf{{Op: -1, Flg: IPCNoWait}}, unix.EAGAIN},
		{"range", alice, id, []SemBuf{{Op: SemVMX}, {Op: 1}}, unix.ERANGE},
		{"ok", alice, id, []SemBuf{{Op: 2}, {Num: 1, Op: 0}}, 0},
		{"zero nowait", alice, id, []SemBuf{{Op: 0, Flg: IPCNoWait}}, unix.EAGAIN},
		{"undo range", alice, id, []SemBuf{{Num: 1, Op: SemVMX, Flg: SemUndo}, {Num: 1, Op: -SemVMX, Flg: SemUndo}, {Num: 1, Op: SemVMX, Flg: SemUndo}, {Num: 1, Op: 2, Flg: SemUndo}}, unix.ERANGE},
	} {
		blocked, _, err := ns.SemOp(tc.c, tc.id, tc.ops)
		if blocked || errno(err) != tc.want {
			t.Errorf("%s: blocked %v, %v; want %v", tc.name, blocked, err, tc.want)
		}
	}
	// Nothing of the failed operations stuck.
	if v, _, _ := ns.SemCtl(alice, id, 0, GetVal, &SemArg{}); v != 2 {
		t.Errorf("semval %d after failed ops, want 2", v)
	}
}

func TestSemBlockAndWake(t *testing.T) {
	ns := NewNamespace()
	id, _ := ns.SemGet(alice, IPCPrivate, 2, 0o600)
	blocked, _, err := ns.SemOp(alic2, id, []SemBuf{{Op: -2}})
	if !blocked || err != nil {
		t.Fatalf("decrement of 0: blocked %v, %v", blocked, err)
	}
	blocked, _, _ = ns.SemOp(alic3, id, []SemBuf{{Num: 1, Op: 0}, {Op: 0}})
	if blocked {
		t.Fatalf("wait-for-zero of two zeros blocked")
	}
	for _, q := range []struct {
		cmd, num int
		want     int64
	}{{GetNcnt, 0, 1}, {GetZcnt, 0, 0}, {GetNcnt, 1, 0}} {
		if n, _, _ := ns.SemCtl(alice, id, q.num, q.cmd, &SemArg{}); n != q.want {
			t.Errorf("semctl(%d, %d) = %d, want %d", q.num, q.cmd, n, q.want)
		}
	}
	_, wakes, _ := ns.SemOp(alice, id, []SemBuf{{Op: 1}})
	if len(wakes) != 0 {
		t.Errorf("one post woke %v", wakes)
	}
	_, wakes, _ = ns.SemOp(alice, id, []SemBuf{{Op: 1}})
	if diff := cmp.Diff([]Wake{{Tid: 11, Result: 0}}, wakes); diff != "" {
		t.Errorf("wakes (-want +got):\n%s", diff)
	}
	if pid, _, _ := ns.SemCtl(alice, id, 0, GetPid, &SemArg{}); pid != 11 {
		t.Errorf("sempid %d, want the woken 11", pid)
	}
	// SETVAL wakes, RMID fails sleepers with EIDRM.
	ns.SemOp(alic2, id, []SemBuf{{Op: -1}})
	_, wakes, _ = ns.SemCtl(alice, id, 0, SetVal, &SemArg{Val: 1})
	if diff := cmp.Diff([]Wake{{Tid: 11, Result: 0}}, wakes); diff != "" {
		t.Errorf("SETVAL wakes (-want +got):\n%s", diff)
	}
	ns.SemOp(alic2, id, []SemBuf{{Op: -1}})
	ns.SemOp(alic3, id, []SemBuf{{Num: 1, Op: -1}})
	if _, _, err := ns.SemCtl(bob, id, 0, IPCRmid, &SemArg{}); err != unix.EPERM {
		t.Errorf("RMID by another user: %v, want EPERM", err)
	}
	_, wakes, _ = ns.SemCtl(alice, id, 0, IPCRmid, &SemArg{})
	if diff := cmp.Diff([]Wake{{11, -int64(unix.EIDRM)}, {13, -int64(unix.EIDRM)}}, wakes); diff != "" {
		t.Errorf("RMID wakes (-want +got):\n%s", diff)
	}
	if _, _, err := ns.SemOp(alice, id, []SemBuf{{Op: 1}}); err != unix.EINVAL {
		t.Errorf("semop on a removed set: %v, want EINVAL", err)
	}
}

func TestSemUndo(t *testing.T) {
	ns := NewNamespace()
	id, _ := ns.SemGet(alice, IPCPrivate, 1, 0o600)
	ns.SemCtl(alice, id, 0, SetVal, &SemArg{Val: 1})
	// alic2 takes the semaphore with SEM_UNDO; alic3 waits for it.
	if b, _, err := ns.SemOp(alic2, id, []SemBuf{{Op: -1, Flg: SemUndo}}); b || err != nil {
		t.Fatal(b, err)
	}
	if b, _, _ := ns.SemOp(alic3, id, []SemBuf{{Op: -1}}); !b {
		t.Fatal("second take did not block")
	}
	wakes := ns.ExitProcess(alic2.Pid)
	if diff := cmp.Diff([]Wake{{Tid: 13}}, wakes); diff != "" {
		t.Errorf("exit wakes (-want +got):\n%s", diff)
	}
	// Undo clamps at 0; SETVAL clears adjustments.
	ns.SemOp(alice, id, []SemBuf{{Op: 5, Flg: SemUndo}})
	ns.SemCtl(alice, id, 0, SetVal, &SemArg{Val: 2})
	ns.ExitProcess(alice.Pid)
	if v, _, _ := ns.SemCtl(alice, id, 0, GetVal, &SemArg{}); v != 2 {
		t.Errorf("after SETVAL and exit: %d, want 2", v)
	}
	ns.SemOp(alice, id, []SemBuf{{Op: 3, Flg: SemUndo}})
	ns.SemCtl(alice, id, 0, SetVal, &SemArg{Val: 0})
	ns.SemOp(alice, id, []SemBuf{{Op: 1, Flg: SemUndo}})
	ns.ExitProcess(alice.Pid)
	if v, _, _ := ns.SemCtl(alice, id, 0, GetVal, &SemArg{}); v != 0 {
		t.Errorf("undo below zero: %d, want 0", v)
	}
}

func TestSemCtl(t *testing.T) {
	ns := NewNamespace()
	ns.Now = func() int64 { return 1700000000 }
	id, _ := ns.SemGet(alice, 7, 3, IPCCreat|0o640)
	setall := &SemArg{In: []byte{1, 0, 2, 0, 3, 0}}
	if _, _, err := ns.SemCtl(alice, id, 0, SetAll, setall); err != nil {
		t.Fatal(err)
	}
	arg := &SemArg{}
	ns.SemCtl(alice, id, 0, GetAll, arg)
	if diff := cmp.Diff([]byte{1, 0, 2, 0, 3, 0}, arg.Out); diff != "" {
		t.Errorf("GETALL (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		name     string
		c        *Caller
		id, num  int
		cmd      int
		arg      SemArg
		want     int64
		wantErrn unix.Errno
	}{
		{"getval", alice, id, 2, GetVal, SemArg{}, 3, 0},
		{"getval range", alice, id, 3, GetVal, SemArg{}, 0, unix.EINVAL},
		{"getval negative num", alice, id, -1, GetVal, SemArg{}, 0, unix.EINVAL},
		{"setval range", alice, id, 0, SetVal, SemArg{Val: SemVMX + 1}, 0, unix.ERANGE},
		{"setval negative", alice, id, 0, SetVal, SemArg{Val: ^uint64(0)}, 0, unix.ERANGE},
		{"setall range", alice, id, 0, SetAll, SemArg{In: []byte{0, 0x80, 0, 0, 0, 0}}, 0, unix.ERANGE},
		{"bad cmd", alice, id, 0, 99, SemArg{}, 0, unix.EINVAL},
		{"negative id", alice, -1, 0, GetVal, SemArg{}, 0, unix.EINVAL},
		{"group read", &Caller{Pid: 40, Tid: 40, UID: 5, GID: 1000}, id, 0, GetVal, SemArg{}, 1, 0},
		{"group write", &Caller{Pid: 40, Tid: 40, UID: 5, GID: 1000}, id, 0, SetVal, SemArg{Val: 1}, 0, unix.EACCES},
		{"other read", bob, id, 0, GetVal, SemArg{}, 0, unix.EACCES},
		{"other stat any", bob, 0, 0, SemStatAny, SemArg{}, int64(id), 0},
		{"other stat", bob, 0, 0, SemStat, SemArg{}, 0, unix.EACCES},
		{"info", bob, 0, 0, IPCInfo, SemArg{}, 0, 0},
		{"set by other", bob, id, 0, IPCSet, SemArg{In: make([]byte, 104)}, 0, unix.EPERM},
	} {
		got, _, err := ns.SemCtl(tc.c, tc.id, tc.num, tc.cmd, &tc.arg)
		if got != tc.want || errno(err) != tc.wantErrn {
			t.Errorf("%s: got %d, %v; want %d, %v", tc.name, got, err, tc.want, tc.wantErrn)
		}
	}
	arg = &SemArg{}
	ns.SemCtl(alice, id, 0, IPCStat, arg)
	if k, mode, n := int32(le.Uint32(arg.Out)), le.Uint32(arg.Out[20:]), le.Uint64(arg.Out[semidDsLayout.nsems:]); k != 7 || mode != 0o640 || n != 3 {
		t.Errorf("IPC_STAT: key %d mode %o nsems %d", k, mode, n)
	}
	if c := le.Uint64(arg.Out[semidDsLayout.ctime:]); c != 1700000000 {
		t.Errorf("IPC_STAT ctime %d", c)
	}
	// IPC_SET changes owner and mode; then bob owns it.
	set := make([]byte, 104)
	le.PutUint32(set[4:], bob.UID)
	le.PutUint32(set[8:], bob.GID)
	le.PutUint32(set[20:], 0o1600)
	if _, _, err := ns.SemCtl(alice, id, 0, IPCSet, &SemArg{In: set}); err != nil {
		t.Fatal(err)
	}
	if v, _, err := ns.SemCtl(bob, id, 0, GetVal, &SemArg{}); err != nil || v != 1 {
		t.Errorf("bob after IPC_SET: %d, %v", v, err)
	}
	arg = &SemArg{}
	ns.SemCtl(bob, id, 0, IPCStat, arg)
	if mode := le.Uint32(arg.Out[20:]); mode != 0o600 {
		t.Errorf("mode after IPC_SET: %o, want 600", mode)
	}
}

type fakeBacking struct{ files map[string]uint64 }

func (f *fakeBacking) Create(size uint64) (string, error) {
	p := "seg" + string(rune('a'+len(f.files)))
	f.files[p] = size
	return p, nil
}
func (f *fakeBacking) Free(p string) { delete(f.files, p) }

func TestShm(t *testing.T) {
	ns := NewNamespace()
	if _, err := ns.ShmGet(alice, IPCPrivate, 100, 0o600); err != unix.ENOSYS {
		t.Errorf("shmget without backing: %v", err)
	}
	fb := &fakeBacking{files: map[string]uint64{}}
	ns.SetBacking(fb)
	id, err := ns.ShmGet(alice, 5, 100, IPCCreat|0o600)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		c    *Caller
		key  int32
		size uint64
		flg  int
		want unix.Errno
	}{
		{"zero size", alice, IPCPrivate, 0, 0, unix.EINVAL},
		{"existing bigger", alice, 5, 101, 0, unix.EINVAL},
		{"existing zero", alice, 5, 0, 0, 0},
		{"excl", alice, 5, 1, IPCCreat | IPCExcl, unix.EEXIST},
		{"missing", alice, 6, 1, 0, unix.ENOENT},
		{"other", bob, 5, 1, 0o200, unix.EACCES},
	} {
		_, err := ns.ShmGet(tc.c, tc.key, tc.size, tc.flg)
		if errno(err) != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	for _, tc := range []struct {
		name string
		c    *Caller
		id   int
		addr uint64
		flg  int
		want unix.Errno
	}{
		{"unaligned", alice, id, 0x1001, 0, unix.EINVAL},
		{"remap without addr", alice, id, 0, ShmRemap, unix.EINVAL},
		{"rnd to zero remap", alice, id, 0x10, ShmRnd | ShmRemap, unix.EINVAL},
		{"bad id", alice, id + 1, 0, 0, unix.EINVAL},
		{"other", bob, id, 0, ShmRdonly, unix.EACCES},
		{"ok", alice, id, 0, 0, 0},
		{"rnd", alice, id, 0x10010, ShmRnd, 0},
	} {
		_, err := ns.ShmAttachPlan(tc.c, tc.id, tc.addr, tc.flg)
		if errno(err) != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	p, _ := ns.ShmAttachPlan(alice, id, 0x10010, ShmRnd|ShmRdonly)
	if p.Addr != 0x10000 || !p.Fixed || !p.NoReplace || p.Prot != unix.PROT_READ || !p.ReadOnly {
		t.Errorf("plan %+v", p)
	}
	nattch := func() uint64 {
		_, out, err := ns.ShmCtl(alice, id, IPCStat, nil)
		if err != nil {
			return 99
		}
		return le.Uint64(out[88:])
	}
	ns.Attached(alice, p.Seg, 0x10000)
	ns.ForkAttaches(alice.Pid, alic2.Pid)
	if n := nattch(); n != 2 {
		t.Errorf("nattch %d after attach and fork, want 2", n)
	}
	if _, _, err := ns.ShmCtl(alice, id, IPCRmid, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ns.ShmGet(alice, 5, 1, 0); err != unix.ENOENT {
		t.Errorf("shmget of a removed key: %v", err)
	}
	_, out, _ := ns.ShmCtl(alice, id, IPCStat, nil)
	if k, mode := le.Uint32(out), le.Uint32(out[20:]); k != 0 || mode != 0o1600 {
		t.Errorf("after RMID: key %d mode %o", k, mode)
	}
	if _, err := ns.ShmDetach(alice, 0x20000); err != unix.EINVAL {
		t.Errorf("shmdt of no segment: %v", err)
	}
	if a, err := ns.ShmDetach(alice, 0x10000); err != nil || a.Size != 100 {
		t.Errorf("shmdt: %+v %v", a, err)
	}
	if len(fb.files) != 1 || nattch() != 1 {
		t.Errorf("after one detach: files %v nattch %d", fb.files, nattch())
	}
	ns.DropAttaches(alic2.Pid)
	if len(fb.files) != 0 {
		t.Errorf("after the last detach: files %v", fb.files)
	}
	if _, _, err := ns.ShmCtl(alice, id, IPCStat, nil); err != unix.EINVAL {
		t.Errorf("IPC_STAT of a destroyed segment: %v", err)
	}
}
