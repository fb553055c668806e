// Package sysvipc models System V IPC (semaphore sets and shared memory
// segments) with the Linux kernel's semantics, for a tracer that answers
// semget/semop/semctl/shmget/shmat/shmdt/shmctl itself (Android forbids them
// to apps). It is pure: no ptrace, no processes. Callers describe who calls
// (Caller) and get back results, errnos and the list of blocked callers an
// operation woke; blocking itself (parking the calling thread) is the
// caller's business.
//
// One Namespace is one IPC namespace: the whole traced tree of a droidroot
// instance, as with proot's --sysvipc.
package sysvipc

import (
	"time"

	"golang.org/x/sys/unix"
)

// Constants of the kernel's ABI (include/uapi/linux/ipc.h, sem.h, shm.h).
const (
	IPCPrivate = 0

	IPCCreat  = 0o1000
	IPCExcl   = 0o2000
	IPCNoWait = 0o4000

	IPCRmid = 0
	IPCSet  = 1
	IPCStat = 2
	IPCInfo = 3

	GetPid  = 11
	GetVal  = 12
	GetAll  = 13
	GetNcnt = 14
	GetZcnt = 15
	SetVal  = 16
	SetAll  = 17
	SemStat = 18
	SemInfo = 19
	// SemStatAny is SEM_STAT without the read permission check.
	SemStatAny = 20

	SemUndo = 0x1000

	ShmStat    = 13
	ShmInfo    = 14
	ShmStatAny = 15
	ShmLock    = 11
	ShmUnlock  = 12

	ShmRdonly = 0o10000
	ShmRnd    = 0o20000
	ShmRemap  = 0o40000
	ShmExec   = 0o100000
)

// Limits, as a default Linux 6.x kernel has them (/proc/sys/kernel/sem, shm*).
const (
	SemMSL = 32000           // semaphores per set
	SemMNI = 32000           // sets
	SemMNS = SemMNI * SemMSL // semaphores in all
	SemOPM = 500             // operations per semop
	SemVMX = 32767           // largest semaphore value
	SemAEM = SemVMX          // largest adjust-on-exit value
	SemUSZ = 20              // size of struct sem_undo (reported by IPC_INFO)

	ShmMNI = 4096
	ShmMIN = 1
	// ShmMAX is the largest segment: the kernel's default is ULONG_MAX - 2^24.
	ShmMAX = ^uint64(0) - 1<<24
	// ShmALL is the page budget of all segments.
	ShmALL = ^uint64(0) - 1<<24

	// idShift is IPCMNI_SHIFT: an id is seq<<idShift + index.
	idShift = 15
	idMask  = 1<<idShift - 1
)

// Caller is who makes a call.
type Caller struct {
	Pid, Tid int
	// UID, GID are the effective ids; Groups the supplementary groups.
	UID, GID uint32
	Groups   []uint32
}

func (c *Caller) inGroup(g uint32) bool {
	if c.GID == g {
		return true
	}
	for _, x := range c.Groups {
		if x == g {
			return true
		}
	}
	return false
}

// privileged stands for the capabilities CAP_IPC_OWNER and CAP_SYS_ADMIN,
// which a traced process has iff it runs as root.
func (c *Caller) privileged() bool { return c.UID == 0 }

// Perm is struct kern_ipc_perm: an object's key, owner, creator and mode.
type Perm struct {
	Key        int32
	UID, GID   uint32
	CUID, CGID uint32
	Mode       uint32 // the low 9 bits are permissions
	Seq        uint16
	ID         int
	deleted    bool
	index      int
}

// allowed is the kernel's ipcperms: may c access p with flag (S_IRUGO-like
// bits: 0o444 read, 0o222 write)?
func (p *Perm) allowed(c *Caller, flag uint32) bool {
	requested := (flag>>6 | flag>>3 | flag) & 7
	granted := p.Mode
	switch {
	case c.UID == p.CUID || c.UID == p.UID:
		granted >>= 6
	case c.inGroup(p.CGID) || c.inGroup(p.GID):
		granted >>= 3
	}
	if requested&^granted&7 != 0 && !c.privileged() {
		return false
	}
	return true
}

// owner is the kernel's ipcctl_obtain_check: may c change or remove p?
func (p *Perm) owner(c *Caller) bool {
	return c.UID == p.CUID || c.UID == p.UID || c.privileged()
}

// Namespace is one IPC namespace: every semaphore set and shared memory
// segment of a traced tree, and the per-process undo lists.
type Namespace struct {
	// Now returns the time in seconds since the epoch (time stamps of
	// IPC_STAT); nil means the real clock.
	Now func() int64

	sems ids[*SemSet]
	shms ids[*Segment]
	msgs ids[*MsgQueue]
	// msgWaiting holds the queue of every blocked msgsnd/msgrcv, by tid.
	msgWaiting map[int]*MsgQueue
	undos      map[int]map[int][]int16 // process -> semid -> adjustments
	// waiting holds every blocked semop, by tid.
	waiting  map[int]*semWaiter
	usedSems int
	shmPages uint64
	shm      shmState
}

// NewNamespace returns an empty IPC namespace.
func NewNamespace() *Namespace {
	return &Namespace{undos: map[int]map[int][]int16{}, waiting: map[int]*semWaiter{}, msgWaiting: map[int]*MsgQueue{}, shm: shmState{attaches: map[int][]Attach{}}}
}

func (ns *Namespace) now() int64 {
	if ns.Now != nil {
		return ns.Now()
	}
	return time.Now().Unix()
}

// ids is struct ipc_ids for one kind of object.
type ids[T interface{ perm() *Perm }] struct {
	byIndex []T
	inUse   int
	seq     uint16
}

func (s *ids[T]) add(obj T, max int) (int, error) {
	if s.inUse >= max {
		return 0, unix.ENOSPC
	}
	idx := -1
	for i, o := range s.byIndex {
		if any(o) == nil || o.perm() == nil {
			idx = i
			break
		}
	}
	var zero T
	if idx < 0 {
		idx = len(s.byIndex)
		s.byIndex = append(s.byIndex, zero)
	}
	p := obj.perm()
	p.Seq = s.seq
	s.seq++
	if s.seq > (1<<31-1)>>idShift {
		s.seq = 0
	}
	p.index = idx
	p.ID = int(p.Seq)<<idShift + idx
	s.byIndex[idx] = obj
	s.inUse++
	return p.ID, nil
}

// lookup is ipc_obtain_object_check: the object with this id, or EINVAL.
func (s *ids[T]) lookup(id int) (T, error) {
	var zero T
	if id < 0 {
		return zero, unix.EINVAL
	}
	idx := id & idMask
	if idx >= len(s.byIndex) {
		return zero, unix.EINVAL
	}
	o := s.byIndex[idx]
	if any(o) == nil || o.perm() == nil || o.perm().ID != id {
		return zero, unix.EINVAL
	}
	return o, nil
}

// byIdx is ipc_obtain_object_idr (SEM_STAT, SHM_STAT take an index).
func (s *ids[T]) byIdx(idx int) (T, error) {
	var zero T
	if idx < 0 || idx >= len(s.byIndex) {
		return zero, unix.EINVAL
	}
	o := s.byIndex[idx]
	if any(o) == nil || o.perm() == nil {
		return zero, unix.EINVAL
	}
	return o, nil
}

func (s *ids[T]) findKey(key int32) (T, bool) {
	var zero T
	for _, o := range s.byIndex {
		if any(o) != nil && o.perm() != nil && !o.perm().deleted && o.perm().Key == key {
			return o, true
		}
	}
	return zero, false
}

func (s *ids[T]) remove(obj T) {
	var zero T
	p := obj.perm()
	p.deleted = true
	s.byIndex[p.index] = zero
	s.inUse--
}

// maxIdx is ipc_get_maxidx: the highest index in use, or -1.
func (s *ids[T]) maxIdx() int {
	for i := len(s.byIndex) - 1; i >= 0; i-- {
		if any(s.byIndex[i]) != nil && s.byIndex[i].perm() != nil {
			return i
		}
	}
	return -1
}

// get is the kernel's ipcget for both kinds: find or create by key.
func get[T interface{ perm() *Perm }](s *ids[T], c *Caller, key int32, flg int, create func() (int, error), check func(T) error) (int, error) {
	if key == IPCPrivate {
		return create()
	}
	o, ok := s.findKey(key)
	if !ok {
		if flg&IPCCreat == 0 {
			return 0, unix.ENOENT
		}
		return create()
	}
	if flg&IPCCreat != 0 && flg&IPCExcl != 0 {
		return 0, unix.EEXIST
	}
	if err := check(o); err != nil {
		return 0, err
	}
	if !o.perm().allowed(c, uint32(flg)&0o777) {
		return 0, unix.EACCES
	}
	return o.perm().ID, nil
}

func newPerm(c *Caller, key int32, flg int) Perm {
	return Perm{Key: key, UID: c.UID, GID: c.GID, CUID: c.UID, CGID: c.GID, Mode: uint32(flg) & 0o777}
}

// encode writes p as struct ipc64_perm (48 bytes, the same on x86_64 and
// arm64).
func (p *Perm) encode(b []byte) {
	le.PutUint32(b[0:], uint32(p.Key))
	le.PutUint32(b[4:], p.UID)
	le.PutUint32(b[8:], p.GID)
	le.PutUint32(b[12:], p.CUID)
	le.PutUint32(b[16:], p.CGID)
	le.PutUint32(b[20:], p.Mode)
	le.PutUint16(b[24:], p.Seq)
}

// setFrom is ipc_update_perm: IPC_SET takes uid, gid and the permission bits.
func (p *Perm) setFrom(b []byte) {
	p.UID = le.Uint32(b[4:])
	p.GID = le.Uint32(b[8:])
	p.Mode = p.Mode&^0o777 | le.Uint32(b[20:])&0o777
}
