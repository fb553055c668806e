package emul

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/sysvipc"
	"github.com/droidroot/droidroot/tmpdir"
	"github.com/droidroot/droidroot/tracer"
)

// sysvIPC answers the SysV IPC calls (semget, semop, semtimedop, semctl,
// shmget, shmat, shmdt, shmctl) from one sysvipc.Namespace for the whole
// traced tree, as termux proot's --sysvipc does: Android forbids them to
// apps. See docs/sysvipc.md.
type sysvIPC struct {
	ns      *sysvipc.Namespace
	backing *fileBacking
	// creds caches callers' credentials by tid (see caller).
	creds map[int]*sysvipc.Caller
	// rcvBuf holds the buffer of every blocked msgrcv, by tid.
	rcvBuf map[int]uint64
}

func newSysvIPC(tmpDir string) *sysvIPC {
	s := &sysvIPC{ns: sysvipc.NewNamespace(), backing: &fileBacking{tmpDir: tmpDir}, creds: map[int]*sysvipc.Caller{}, rcvBuf: map[int]uint64{}}
	s.ns.SetBacking(s.backing)
	return s
}

// addSysvIPC puts the SysV IPC emulation into table t.
func addSysvIPC(t *tableBuilder, tmpDir string) {
	s := newSysvIPC(tmpDir)
	t.set("semget", tracer.Handler{Enter: s.semget, Events: s.events})
	t.set("semop", tracer.Handler{Enter: func(c *tracer.Call) { s.semtimedop(c, false) }})
	t.set("semtimedop", tracer.Handler{Enter: func(c *tracer.Call) { s.semtimedop(c, true) }})
	t.set("semctl", tracer.Handler{Enter: s.semctl})
	t.set("shmget", tracer.Handler{Enter: s.shmget})
	t.set("shmat", tracer.Handler{Enter: s.shmat})
	t.set("shmdt", tracer.Handler{Enter: s.shmdt})
	t.set("shmctl", tracer.Handler{Enter: s.shmctl})
	t.set("msgget", tracer.Handler{Enter: s.msgget})
	t.set("msgsnd", tracer.Handler{Enter: s.msgsnd})
	t.set("msgrcv", tracer.Handler{Enter: s.msgrcv})
	t.set("msgctl", tracer.Handler{Enter: s.msgctl})
}

// caller describes the calling thread with its real credentials. They are
// read from /proc/TID/status once and then only checked with a stat of
// /proc/TID, whose owner is the task's effective uid and gid: a set*id
// call that changes them is noticed (one that only changes the
// supplementary groups is not).
func (s *sysvIPC) caller(c *tracer.Call) *sysvipc.Caller {
	var st unix.Stat_t
	statErr := unix.Stat(fmt.Sprintf("/proc/%d", c.Tid()), &st)
	if cl := s.creds[c.Tid()]; cl != nil && statErr == nil && cl.UID == st.Uid && cl.GID == st.Gid && cl.Pid == c.Pid() {
		return cl
	}
	cl := readCaller(c)
	if statErr == nil && cl.UID == st.Uid && cl.GID == st.Gid {
		s.creds[c.Tid()] = cl
	}
	return cl
}

// readCaller reads the calling thread's effective ids from /proc/TID/status.
func readCaller(c *tracer.Call) *sysvipc.Caller {
	cl := &sysvipc.Caller{Pid: c.Pid(), Tid: c.Tid(), UID: uint32(os.Getuid()), GID: uint32(os.Getgid())}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", c.Tid()))
	if err != nil {
		return cl
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		fields := strings.Fields(v)
		switch k {
		case "Uid", "Gid":
			if len(fields) > 1 {
				if n, err := strconv.ParseUint(fields[1], 10, 32); err == nil {
					if k == "Uid" {
						cl.UID = uint32(n)
					} else {
						cl.GID = uint32(n)
					}
				}
			}
		case "Groups":
			for _, g := range fields {
				if n, err := strconv.ParseUint(g, 10, 32); err == nil {
					cl.Groups = append(cl.Groups, uint32(n))
				}
			}
			return cl
		}
	}
	return cl
}

func (s *sysvIPC) wake(c *tracer.Call, wakes []sysvipc.Wake) {
	for _, w := range wakes {
		c.Tracer().Wake(w.Tid, w.Result)
	}
}

func fail(c *tracer.Call, err error) {
	if e, ok := err.(unix.Errno); ok {
		c.Fail(e)
		return
	}
	c.Fail(unix.EINVAL)
}

func (s *sysvIPC) semget(c *tracer.Call) {
	id, err := s.ns.SemGet(s.caller(c), int32(c.Arg(0)), int(int32(c.Arg(1))), int(int32(c.Arg(2))))
	if err != nil {
		fail(c, err)
		return
	}
	c.Return(int64(id))
}

func (s *sysvIPC) semtimedop(c *tracer.Call, timed bool) {
	semid, nsops := int(int32(c.Arg(0))), int(uint32(c.Arg(2)))
	if err := sysvipc.SemOpCheck(semid, nsops); err != nil {
		fail(c, err)
		return
	}
	buf := make([]byte, nsops*sysvipc.SemBufSize)
	if c.ReadMem(c.Arg(1), buf) != nil {
		c.Fail(unix.EFAULT)
		return
	}
	var ts *unix.Timespec
	if timed && c.Arg(3) != 0 {
		var b [16]byte
		if c.ReadMem(c.Arg(3), b[:]) != nil {
			c.Fail(unix.EFAULT)
			return
		}
		ts = &unix.Timespec{Sec: int64(binary.LittleEndian.Uint64(b[:])), Nsec: int64(binary.LittleEndian.Uint64(b[8:]))}
		if err := sysvipc.SemCheckTimeout(ts.Sec, ts.Nsec); err != nil {
			fail(c, err)
			return
		}
	}
	blocked, wakes, err := s.ns.SemOp(s.caller(c), semid, sysvipc.DecodeSemBufs(buf))
	s.wake(c, wakes)
	switch {
	case err != nil:
		fail(c, err)
	case !blocked:
		c.Return(0)
	case ts != nil && ts.Sec == 0 && ts.Nsec == 0:
		s.ns.RemoveWaiter(c.Tid())
		c.Fail(unix.EAGAIN)
	default:
		tid := c.Tid()
		c.Park(ts, func(why tracer.ParkEnd) int64 {
			s.ns.RemoveWaiter(tid)
			if why == tracer.ParkTimeout {
				return -int64(unix.EAGAIN)
			}
			return -int64(unix.EINTR)
		})
		c.EndParkAtStop() // a stop and a continue end the sleep: EINTR (signal(7))
	}
}

func (s *sysvIPC) semctl(c *tracer.Call) {
	semid, semnum, cmd := int(int32(c.Arg(0))), int(int32(c.Arg(1))), int(int32(c.Arg(2)))
	arg := &sysvipc.SemArg{Val: c.Arg(3)}
	if n, ok := s.ns.SemCtlInput(semid, cmd); ok && n > 0 && semid >= 0 {
		arg.In = make([]byte, n)
		if c.ReadMem(c.Arg(3), arg.In) != nil {
			c.Fail(unix.EFAULT)
			return
		}
	}
	ret, wakes, err := s.ns.SemCtl(s.caller(c), semid, semnum, cmd, arg)
	s.wake(c, wakes)
	if err != nil {
		fail(c, err)
		return
	}
	if arg.Out != nil && c.WriteMem(c.Arg(3), arg.Out) != nil {
		c.Fail(unix.EFAULT)
		return
	}
	c.Return(ret)
}

func (s *sysvIPC) shmget(c *tracer.Call) {
	id, err := s.ns.ShmGet(s.caller(c), int32(c.Arg(0)), c.Arg(1), int(int32(c.Arg(2))))
	if err != nil {
		fail(c, err)
		return
	}
	c.Return(int64(id))
}

const mapFixedNoReplace = 0x100000

// shmat maps the segment's backing file into the caller: the call becomes
// openat(backing) + mmap(MAP_SHARED) + close, run by the thread itself.
func (s *sysvIPC) shmat(c *tracer.Call) {
	cl := s.caller(c)
	plan, err := s.ns.ShmAttachPlan(cl, int(int32(c.Arg(0))), c.Arg(1), int(int32(c.Arg(2))))
	if err != nil {
		fail(c, err)
		return
	}
	oflags := uint64(unix.O_RDWR | unix.O_CLOEXEC)
	if plan.ReadOnly {
		oflags = unix.O_RDONLY | unix.O_CLOEXEC
	}
	seg := plan.Seg
	flags := uint64(unix.MAP_SHARED)
	if plan.Fixed {
		flags |= unix.MAP_FIXED
		if plan.NoReplace {
			flags = unix.MAP_SHARED | mapFixedNoReplace
		}
	}
	mapFileInto(c, seg.Backing, oflags, plan.Addr, seg.Size, uint64(plan.Prot), flags, func(c *tracer.Call, openErr, addr int64) {
		switch {
		case openErr < 0:
			c.Fail(unix.EIDRM) // the segment was destroyed meanwhile
		case addr == -int64(unix.EEXIST):
			c.Fail(unix.EINVAL)
		case addr < 0 && addr > -4096:
			c.Return(addr)
		default:
			s.ns.Attached(cl, seg, uint64(addr))
			c.Return(addr)
		}
	})
}

func (s *sysvIPC) shmdt(c *tracer.Call) {
	a, err := s.ns.ShmDetach(s.caller(c), c.Arg(0))
	if err != nil {
		fail(c, err)
		return
	}
	munmap, _ := nativeNr("munmap")
	c.Run(munmap, [6]uint64{a.Addr, a.Size}, func(c *tracer.Call, _ int64) { c.Return(0) })
}

func (s *sysvIPC) shmctl(c *tracer.Call) {
	shmid, cmd := int(int32(c.Arg(0))), int(int32(c.Arg(1)))
	var in []byte
	if n := sysvipc.ShmCtlInput(cmd); n > 0 && shmid >= 0 {
		in = make([]byte, n)
		if c.ReadMem(c.Arg(2), in) != nil {
			c.Fail(unix.EFAULT)
			return
		}
	}
	ret, out, err := s.ns.ShmCtl(s.caller(c), shmid, cmd, in)
	answerCtl(c, ret, out, err)
}

// events keeps the namespace in step with the process tree: SEM_UNDO and
// detaches at exit, shm mappings copied by fork and dropped by exec, sleepers
// that die.
func (s *sysvIPC) events(e *tracer.Event) {
	switch e.Kind {
	case tracer.EventFork:
		if e.Flags&unix.CLONE_VM == 0 {
			s.ns.ForkAttaches(e.ParentPid, e.Pid)
		}
	case tracer.EventExec:
		s.ns.DropAttaches(e.Pid)
	case tracer.EventThreadGone:
		s.ns.RemoveWaiter(e.Tid)
		s.ns.RemoveMsgWaiter(e.Tid)
		delete(s.rcvBuf, e.Tid)
		delete(s.creds, e.Tid)
	case tracer.EventProcessGone:
		for _, w := range s.ns.ExitProcess(e.Pid) {
			e.Tracer().Wake(w.Tid, w.Result)
		}
		s.ns.DropAttaches(e.Pid)
		if e.Tracer().NumThreads() == 0 {
			s.backing.removeAll()
		}
	}
}

// fileBacking keeps segments' memory in files of a private directory under
// the tmp dir, removed when the traced tree is gone.
type fileBacking struct {
	tmpDir string
	dir    string
	n      int
}

func (b *fileBacking) Create(size uint64) (string, error) {
	if b.dir == "" {
		dir, err := tmpdir.Make(b.tmpDir, "shm")
		if err != nil {
			return "", err
		}
		b.dir = dir
	}
	b.n++
	p := filepath.Join(b.dir, "seg-"+itoa(b.n))
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := f.Truncate(int64(size)); err != nil {
		os.Remove(p)
		return "", err
	}
	return p, nil
}

func (b *fileBacking) Free(path string) { os.Remove(path) }

func (b *fileBacking) removeAll() {
	if b.dir != "" {
		tmpdir.Remove(b.dir)
		b.dir = ""
	}
}

func (s *sysvIPC) msgget(c *tracer.Call) {
	id, err := s.ns.MsgGet(s.caller(c), int32(c.Arg(0)), int(int32(c.Arg(1))))
	if err != nil {
		fail(c, err)
		return
	}
	c.Return(int64(id))
}

// putMsg writes m (type, then text) into tid's buffer at addr.
func putMsg(t *tracer.Tracer, tid int, addr uint64, m *sysvipc.Message) error {
	b := make([]byte, 8+len(m.Text))
	binary.LittleEndian.PutUint64(b, uint64(m.Type))
	copy(b[8:], m.Text)
	return t.WriteMem(tid, addr, b)
}

// msgWake answers the blocked msgsnd/msgrcv calls an operation completed,
// copying each received message into its receiver's buffer first.
func (s *sysvIPC) msgWake(t *tracer.Tracer, wakes []sysvipc.MsgWake) {
	for _, w := range wakes {
		if w.Msg != nil {
			if putMsg(t, w.Tid, s.rcvBuf[w.Tid], w.Msg) != nil {
				w.Result = -int64(unix.EFAULT)
			}
		}
		delete(s.rcvBuf, w.Tid)
		t.Wake(w.Tid, w.Result)
	}
}

func (s *sysvIPC) msgPark(c *tracer.Call) {
	tid := c.Tid()
	c.Park(nil, func(tracer.ParkEnd) int64 {
		s.ns.RemoveMsgWaiter(tid)
		delete(s.rcvBuf, tid)
		return -int64(unix.EINTR)
	})
}

func (s *sysvIPC) msgsnd(c *tracer.Call) {
	msqid, addr, size, flg := int(int32(c.Arg(0))), c.Arg(1), int64(c.Arg(2)), int(int32(c.Arg(3)))
	var b [8]byte
	if c.ReadMem(addr, b[:]) != nil {
		c.Fail(unix.EFAULT)
		return
	}
	m := sysvipc.Message{Type: int64(binary.LittleEndian.Uint64(b[:]))}
	if err := sysvipc.MsgSndCheck(msqid, size, m.Type); err != nil {
		fail(c, err)
		return
	}
	m.Text = make([]byte, size)
	if c.ReadMem(addr+8, m.Text) != nil {
		c.Fail(unix.EFAULT)
		return
	}
	blocked, wakes, err := s.ns.MsgSnd(s.caller(c), msqid, m, flg)
	s.msgWake(c.Tracer(), wakes)
	switch {
	case err != nil:
		fail(c, err)
	case blocked:
		s.msgPark(c)
	default:
		c.Return(0)
	}
}

func (s *sysvIPC) msgrcv(c *tracer.Call) {
	msqid, addr, size, typ, flg := int(int32(c.Arg(0))), c.Arg(1), int64(c.Arg(2)), int64(c.Arg(3)), int(int32(c.Arg(4)))
	m, blocked, wakes, err := s.ns.MsgRcv(s.caller(c), msqid, size, typ, flg)
	s.msgWake(c.Tracer(), wakes)
	switch {
	case err != nil:
		fail(c, err)
	case blocked:
		s.rcvBuf[c.Tid()] = addr
		s.msgPark(c)
	case putMsg(c.Tracer(), c.Tid(), addr, m) != nil:
		c.Fail(unix.EFAULT)
	default:
		c.Return(int64(len(m.Text)))
	}
}

func (s *sysvIPC) msgctl(c *tracer.Call) {
	msqid, cmd := int(int32(c.Arg(0))), int(int32(c.Arg(1)))
	var in []byte
	if n := sysvipc.MsgCtlInput(cmd); n > 0 && msqid >= 0 {
		in = make([]byte, n)
		if c.ReadMem(c.Arg(2), in) != nil {
			c.Fail(unix.EFAULT)
			return
		}
	}
	ret, out, wakes, err := s.ns.MsgCtl(s.caller(c), msqid, cmd, in)
	s.msgWake(c.Tracer(), wakes)
	answerCtl(c, ret, out, err)
}

// answerCtl answers a shmctl or msgctl: the error, or the structure the
// command returns copied to the guest's buffer (argument 2) and ret.
func answerCtl(c *tracer.Call, ret int64, out []byte, err error) {
	if err != nil {
		fail(c, err)
		return
	}
	if out != nil && c.WriteMem(c.Arg(2), out) != nil {
		c.Fail(unix.EFAULT)
		return
	}
	c.Return(ret)
}
