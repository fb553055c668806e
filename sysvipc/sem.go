package sysvipc

import (
	"encoding/binary"

	"golang.org/x/sys/unix"
)

var le = binary.LittleEndian

// SemSet is one semaphore set.
type SemSet struct {
	Perm
	Sems  []Sem
	CTime int64
	// pending are the blocked semops on this set, oldest first.
	pending []*semWaiter
}

func (s *SemSet) perm() *Perm {
	if s == nil {
		return nil
	}
	return &s.Perm
}

// Sem is one semaphore.
type Sem struct {
	Val   int
	Pid   int
	OTime int64
}

// SemBuf is struct sembuf.
type SemBuf struct {
	Num uint16
	Op  int16
	Flg int16
}

// SemBufSize is sizeof(struct sembuf).
const SemBufSize = 6

// DecodeSemBufs decodes an array of struct sembuf.
func DecodeSemBufs(b []byte) []SemBuf {
	ops := make([]SemBuf, len(b)/SemBufSize)
	for i := range ops {
		o := b[i*SemBufSize:]
		ops[i] = SemBuf{Num: le.Uint16(o), Op: int16(le.Uint16(o[2:])), Flg: int16(le.Uint16(o[4:]))}
	}
	return ops
}

// semWaiter is a blocked semop (struct sem_queue).
type semWaiter struct {
	set      *SemSet
	caller   Caller
	ops      []SemBuf
	undo     bool
	blocking int // index in ops of the operation that blocks
}

// Wake is the answer to a blocked semop that another operation decided:
// 0, or a negative errno (EIDRM when the set was removed, ERANGE).
type Wake struct {
	Tid    int
	Result int64
}

// SemGet is semget(key, nsems, semflg).
func (ns *Namespace) SemGet(c *Caller, key int32, nsems int, flg int) (int, error) {
	if nsems < 0 || nsems > SemMSL {
		return 0, unix.EINVAL
	}
	create := func() (int, error) {
		if nsems == 0 {
			return 0, unix.EINVAL
		}
		if ns.usedSems+nsems > SemMNS {
			return 0, unix.ENOSPC
		}
		s := &SemSet{Perm: newPerm(c, key, flg), Sems: make([]Sem, nsems), CTime: ns.now()}
		id, err := ns.sems.add(s, SemMNI)
		if err == nil {
			ns.usedSems += nsems
		}
		return id, err
	}
	return get(&ns.sems, c, key, flg, create, func(s *SemSet) error {
		if nsems > len(s.Sems) {
			return unix.EINVAL
		}
		return nil
	})
}

// SemCheckTimeout validates semtimedop's timeout as the kernel does.
func SemCheckTimeout(sec, nsec int64) error {
	if sec < 0 || nsec < 0 || nsec >= 1e9 {
		return unix.EINVAL
	}
	return nil
}

// SemOpCheck does semop's checks that come before reading the operations:
// EINVAL for a bad count or id, E2BIG for too many operations.
func SemOpCheck(semid int, nsops int) error {
	if nsops < 1 || semid < 0 {
		return unix.EINVAL
	}
	if nsops > SemOPM {
		return unix.E2BIG
	}
	return nil
}

// SemOp is semop / semtimedop. It returns blocked=true when the caller must
// sleep: it is queued, and a later Wake (from SemOp, SemCtl, Exit or
// RemoveWaiter) answers it. Otherwise err is the result (nil: success).
// wakes lists the blocked callers this operation completed.
func (ns *Namespace) SemOp(c *Caller, semid int, ops []SemBuf) (blocked bool, wakes []Wake, err error) {
	if err := SemOpCheck(semid, len(ops)); err != nil {
		return false, nil, err
	}
	max, undo, alter := 0, false, false
	for _, o := range ops {
		if int(o.Num) >= max {
			max = int(o.Num)
		}
		if o.Flg&SemUndo != 0 {
			undo = true
		}
		if o.Op != 0 {
			alter = true
		}
	}
	s, err := ns.sems.lookup(semid)
	if err != nil {
		return false, nil, err
	}
	if max >= len(s.Sems) {
		return false, nil, unix.EFBIG
	}
	flag := uint32(0o444)
	if alter {
		flag = 0o222
	}
	if !s.allowed(c, flag) {
		return false, nil, unix.EACCES
	}
	w := &semWaiter{set: s, caller: *c, ops: ops, undo: undo}
	switch r := ns.perform(w); {
	case r == 0:
		return false, ns.update(s), nil
	case r < 0:
		return false, nil, unix.Errno(-r)
	}
	// Sleep.
	s.pending = append(s.pending, w)
	ns.waiting[c.Tid] = w
	return true, nil, nil
}

// perform is perform_atomic_semop: 0 done, 1 must block, or -errno.
func (ns *Namespace) perform(w *semWaiter) int {
	s := w.set
	vals := make([]int, len(s.Sems))
	for i := range s.Sems {
		vals[i] = s.Sems[i].Val
	}
	var adj []int16
	if w.undo {
		adj = ns.undoFor(w.caller.Pid, s)
	}
	adjs := map[uint16]int{}
	for i, o := range w.ops {
		cur := vals[o.Num]
		result := cur + int(o.Op)
		if o.Op == 0 && cur != 0 || result < 0 {
			if o.Flg&IPCNoWait != 0 {
				return -int(unix.EAGAIN)
			}
			w.blocking = i
			return 1
		}
		if result > SemVMX {
			return -int(unix.ERANGE)
		}
		if o.Flg&SemUndo != 0 {
			a, ok := adjs[o.Num]
			if !ok {
				a = int(adj[o.Num])
			}
			a -= int(o.Op)
			if a < -SemAEM-1 || a > SemAEM {
				return -int(unix.ERANGE)
			}
			adjs[o.Num] = a
		}
		vals[o.Num] = result
	}
	now := ns.now()
	for _, o := range w.ops {
		s.Sems[o.Num].Val = vals[o.Num]
		s.Sems[o.Num].Pid = w.caller.Pid
	}
	for num, a := range adjs {
		adj[num] = int16(a)
	}
	s.Sems[w.ops[0].Num].OTime = now
	return 0
}

func (ns *Namespace) undoFor(pid int, s *SemSet) []int16 {
	m := ns.undos[pid]
	if m == nil {
		m = map[int][]int16{}
		ns.undos[pid] = m
	}
	a := m[s.ID]
	if a == nil {
		a = make([]int16, len(s.Sems))
		m[s.ID] = a
	}
	return a
}

// update is update_queue: retry every blocked semop of s, oldest first,
// until none can proceed; returns the callers to wake.
func (ns *Namespace) update(s *SemSet) []Wake {
	var wakes []Wake
	for again := true; again; {
		again = false
		for i := 0; i < len(s.pending); i++ {
			w := s.pending[i]
			r := ns.perform(w)
			if r > 0 {
				continue
			}
			s.pending = append(s.pending[:i:i], s.pending[i+1:]...)
			delete(ns.waiting, w.caller.Tid)
			wakes = append(wakes, Wake{Tid: w.caller.Tid, Result: int64(r)})
			if r == 0 {
				again = true
				break
			}
			i--
		}
	}
	return wakes
}

// RemoveWaiter takes tid's blocked semop off its queue (its timeout
// elapsed, a signal interrupted it, or the thread died). It reports
// whether tid was waiting.
func (ns *Namespace) RemoveWaiter(tid int) bool {
	w := ns.waiting[tid]
	if w == nil {
		return false
	}
	delete(ns.waiting, tid)
	s := w.set
	for i, x := range s.pending {
		if x == w {
			s.pending = append(s.pending[:i:i], s.pending[i+1:]...)
			break
		}
	}
	return true
}

// Waiting reports whether tid has a blocked semop.
func (ns *Namespace) Waiting(tid int) bool { return ns.waiting[tid] != nil }

// SemArg is semctl's fourth argument and the memory it points to, as the
// command needs it; the caller reads and writes guest memory.
type SemArg struct {
	// Val is the argument itself (SETVAL's value).
	Val uint64
	// In holds what the argument points to, for IPC_SET (struct semid64_ds)
	// and SETALL (nsems unsigned shorts): the caller reads it when
	// SemCtlInput asks for it.
	In []byte
	// Out receives what the command writes through the argument (IPC_STAT,
	// GETALL, IPC_INFO).
	Out []byte
}

// SemCtlInput tells how many bytes the caller must read through the
// argument of semctl(semid, _, cmd) before calling SemCtl: IPC_SET's
// semid64_ds, SETALL's array. ok is false when the set does not exist (the
// read is then not needed: SemCtl will fail).
func (ns *Namespace) SemCtlInput(semid, cmd int) (n int, ok bool) {
	switch cmd {
	case IPCSet:
		return semidDsSize, true
	case SetAll:
		s, err := ns.sems.lookup(semid)
		if err != nil {
			return 0, false
		}
		return 2 * len(s.Sems), true
	}
	return 0, true
}

// SemCtl is semctl(semid, semnum, cmd, arg). It returns the call's result.
func (ns *Namespace) SemCtl(c *Caller, semid, semnum, cmd int, arg *SemArg) (int64, []Wake, error) {
	if semid < 0 {
		return 0, nil, unix.EINVAL
	}
	switch cmd {
	case IPCInfo, SemInfo:
		b := make([]byte, 40)
		info := []int32{SemMNS /* semmap */, SemMNI, SemMNS, SemMNS /* semmnu */, SemMSL, SemOPM, SemOPM /* semume */, SemUSZ, SemVMX, SemAEM}
		if cmd == SemInfo {
			info[7] = int32(ns.sems.inUse)
			info[9] = int32(ns.usedSems)
		}
		for i, v := range info {
			le.PutUint32(b[4*i:], uint32(v))
		}
		arg.Out = b
		return int64(max(ns.sems.maxIdx(), 0)), nil, nil
	case IPCStat, SemStat, SemStatAny:
		var s *SemSet
		var err error
		if cmd == IPCStat {
			s, err = ns.sems.lookup(semid)
		} else {
			s, err = ns.sems.byIdx(semid)
		}
		if err != nil {
			return 0, nil, err
		}
		if cmd != SemStatAny && !s.allowed(c, 0o444) {
			return 0, nil, unix.EACCES
		}
		arg.Out = s.encode()
		if cmd == IPCStat {
			return 0, nil, nil
		}
		return int64(s.ID), nil, nil
	case GetAll, GetVal, GetPid, GetNcnt, GetZcnt, SetAll:
		return ns.semCtlMain(c, semid, semnum, cmd, arg)
	case SetVal:
		val := int(int32(arg.Val))
		if val > SemVMX || val < 0 {
			return 0, nil, unix.ERANGE
		}
		s, err := ns.sems.lookup(semid)
		if err != nil {
			return 0, nil, err
		}
		if semnum < 0 || semnum >= len(s.Sems) {
			return 0, nil, unix.EINVAL
		}
		if !s.allowed(c, 0o222) {
			return 0, nil, unix.EACCES
		}
		ns.clearUndo(s.ID, semnum)
		s.Sems[semnum].Val = val
		s.Sems[semnum].Pid = c.Pid
		s.CTime = ns.now()
		return 0, ns.update(s), nil
	case IPCSet, IPCRmid:
		s, err := ns.sems.lookup(semid)
		if err != nil {
			return 0, nil, err
		}
		if !s.owner(c) {
			return 0, nil, unix.EPERM
		}
		if cmd == IPCSet {
			s.setFrom(arg.In)
			s.CTime = ns.now()
			return 0, nil, nil
		}
		return 0, ns.freeSet(s), nil
	}
	return 0, nil, unix.EINVAL
}

func (ns *Namespace) semCtlMain(c *Caller, semid, semnum, cmd int, arg *SemArg) (int64, []Wake, error) {
	s, err := ns.sems.lookup(semid)
	if err != nil {
		return 0, nil, err
	}
	flag := uint32(0o444)
	if cmd == SetAll {
		flag = 0o222
	}
	if !s.allowed(c, flag) {
		return 0, nil, unix.EACCES
	}
	switch cmd {
	case GetAll:
		b := make([]byte, 2*len(s.Sems))
		for i, x := range s.Sems {
			le.PutUint16(b[2*i:], uint16(x.Val))
		}
		arg.Out = b
		return 0, nil, nil
	case SetAll:
		vals := make([]int, len(s.Sems))
		for i := range vals {
			vals[i] = int(le.Uint16(arg.In[2*i:]))
			if vals[i] > SemVMX {
				return 0, nil, unix.ERANGE
			}
		}
		for i, v := range vals {
			s.Sems[i].Val = v
			s.Sems[i].Pid = c.Pid
		}
		ns.clearUndo(s.ID, -1)
		s.CTime = ns.now()
		return 0, ns.update(s), nil
	}
	if semnum < 0 || semnum >= len(s.Sems) {
		return 0, nil, unix.EINVAL
	}
	switch cmd {
	case GetVal:
		return int64(s.Sems[semnum].Val), nil, nil
	case GetPid:
		return int64(s.Sems[semnum].Pid), nil, nil
	}
	n := 0
	for _, w := range s.pending {
		o := w.ops[w.blocking]
		if int(o.Num) != semnum {
			continue
		}
		if cmd == GetZcnt && o.Op == 0 || cmd == GetNcnt && o.Op < 0 {
			n++
		}
	}
	return int64(n), nil, nil
}

// clearUndo zeroes every process's adjustment of semaphore num of set id
// (num < 0: all of them), as SETVAL and SETALL do.
func (ns *Namespace) clearUndo(id, num int) {
	for _, m := range ns.undos {
		if a := m[id]; a != nil {
			for i := range a {
				if num < 0 || i == num {
					a[i] = 0
				}
			}
		}
	}
}

// freeSet is freeary: every blocked semop fails with EIDRM.
func (ns *Namespace) freeSet(s *SemSet) []Wake {
	var wakes []Wake
	for _, w := range s.pending {
		delete(ns.waiting, w.caller.Tid)
		wakes = append(wakes, Wake{Tid: w.caller.Tid, Result: -int64(unix.EIDRM)})
	}
	s.pending = nil
	for _, m := range ns.undos {
		delete(m, s.ID)
	}
	ns.usedSems -= len(s.Sems)
	ns.sems.remove(s)
	return wakes
}

// semidDsSize is sizeof(struct semid64_ds) on this architecture.
var semidDsSize = semidDsLayout.size

func (s *SemSet) encode() []byte {
	b := make([]byte, semidDsLayout.size)
	s.Perm.encode(b)
	var otime int64
	for _, x := range s.Sems {
		otime = max(otime, x.OTime)
	}
	le.PutUint64(b[semidDsLayout.otime:], uint64(otime))
	le.PutUint64(b[semidDsLayout.ctime:], uint64(s.CTime))
	le.PutUint64(b[semidDsLayout.nsems:], uint64(len(s.Sems)))
	return b
}

// ExitProcess applies pid's SEM_UNDO adjustments (exit_sem) and forgets
// its undo list. It returns the blocked callers this woke.
func (ns *Namespace) ExitProcess(pid int) []Wake {
	m := ns.undos[pid]
	delete(ns.undos, pid)
	var wakes []Wake
	for id, adj := range m {
		s, err := ns.sems.lookup(id)
		if err != nil {
			continue
		}
		changed := false
		for i, a := range adj {
			if a == 0 {
				continue
			}
			v := s.Sems[i].Val + int(a)
			v = min(max(v, 0), SemVMX)
			s.Sems[i].Val = v
			s.Sems[i].Pid = pid
			changed = true
		}
		if changed {
			wakes = append(wakes, ns.update(s)...)
		}
	}
	return wakes
}

// ForgetUndo drops pid's undo list without applying it.
func (ns *Namespace) ForgetUndo(pid int) { delete(ns.undos, pid) }
