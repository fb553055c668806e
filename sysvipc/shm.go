package sysvipc

import (
	"os"

	"golang.org/x/sys/unix"
)

// Segment is one shared memory segment. Its memory is a file (Backing) that
// every attaching process maps MAP_SHARED.
type Segment struct {
	Perm
	Size                uint64
	CPid, LPid          int
	ATime, DTime, CTime int64
	// Backing is the host path of the file holding the memory.
	Backing string
	dest    bool // IPC_RMID'd while attached
	locked  bool
	nattch  int
}

func (s *Segment) perm() *Perm {
	if s == nil {
		return nil
	}
	return &s.Perm
}

// Mode bits shmctl reports besides the permissions.
const (
	shmDest   = 0o1000
	shmLocked = 0o2000
)

// Attach is one shmat of a process.
type Attach struct {
	Addr, Size uint64
	Seg        *Segment
}

// Backing creates and frees the files that hold segments' memory.
type Backing interface {
	// Create makes a file of size bytes and returns its host path.
	Create(size uint64) (string, error)
	// Free removes it (processes that still map it keep the memory).
	Free(path string)
}

// shmState is a Namespace's shared memory bookkeeping.
type shmState struct {
	backing  Backing
	attaches map[int][]Attach // process -> its attaches
}

// SetBacking sets where segments' memory lives; shmget fails with ENOSYS
// until it is set.
func (ns *Namespace) SetBacking(b Backing) { ns.shm.backing = b }

// pageSize is SHMLBA and the unit of segment accounting.
var pageSize = uint64(os.Getpagesize())

// ShmGet is shmget(key, size, shmflg).
func (ns *Namespace) ShmGet(c *Caller, key int32, size uint64, flg int) (int, error) {
	create := func() (int, error) {
		if size < ShmMIN || size > ShmMAX {
			return 0, unix.EINVAL
		}
		pages := (size + pageSize - 1) / pageSize
		if pages*pageSize < size || ns.shmPages+pages < ns.shmPages || ns.shmPages+pages > ShmALL {
			return 0, unix.ENOSPC
		}
		if ns.shm.backing == nil {
			return 0, unix.ENOSYS
		}
		if ns.shms.inUse >= ShmMNI {
			return 0, unix.ENOSPC
		}
		path, err := ns.shm.backing.Create(size)
		if err != nil {
			return 0, unix.ENOMEM
		}
		s := &Segment{Perm: newPerm(c, key, flg), Size: size, CPid: c.Pid, CTime: ns.now(), Backing: path}
		id, err := ns.shms.add(s, ShmMNI)
		if err != nil {
			ns.shm.backing.Free(path)
			return 0, err
		}
		ns.shmPages += pages
		return id, nil
	}
	return get(&ns.shms, c, key, flg, create, func(s *Segment) error {
		if s.Size < size {
			return unix.EINVAL
		}
		return nil
	})
}

// AttachPlan is how the caller must map a segment for shmat.
type AttachPlan struct {
	Seg *Segment
	// Addr is the address asked for (0: let the kernel choose); Fixed
	// means MAP_FIXED (SHM_REMAP: replace what is there), NoReplace that an
	// existing mapping must make shmat fail with EINVAL.
	Addr             uint64
	Fixed, NoReplace bool
	Prot             int
	// ReadOnly tells to open the backing file O_RDONLY.
	ReadOnly bool
}

// ShmAttachPlan checks shmat(shmid, addr, shmflg) and says how to map the
// segment. Once the mapping is made, Attached records it.
func (ns *Namespace) ShmAttachPlan(c *Caller, shmid int, addr uint64, flg int) (*AttachPlan, error) {
	if shmid < 0 {
		return nil, unix.EINVAL
	}
	p := &AttachPlan{}
	if addr != 0 {
		if addr&(pageSize-1) != 0 {
			if flg&ShmRnd == 0 {
				return nil, unix.EINVAL
			}
			addr &^= pageSize - 1
			if addr == 0 && flg&ShmRemap != 0 {
				return nil, unix.EINVAL
			}
		}
		p.Fixed = true
		p.NoReplace = flg&ShmRemap == 0
	} else if flg&ShmRemap != 0 {
		return nil, unix.EINVAL
	}
	p.Addr = addr
	acc := uint32(0o444 | 0o222)
	p.Prot = unix.PROT_READ | unix.PROT_WRITE
	if flg&ShmRdonly != 0 {
		acc, p.Prot, p.ReadOnly = 0o444, unix.PROT_READ, true
	}
	if flg&ShmExec != 0 {
		p.Prot |= unix.PROT_EXEC
		acc |= 0o111
	}
	s, err := ns.shms.lookup(shmid)
	if err != nil {
		return nil, err
	}
	if !s.allowed(c, acc) {
		return nil, unix.EACCES
	}
	if p.NoReplace && addr+s.Size < addr {
		return nil, unix.EINVAL
	}
	p.Seg = s
	return p, nil
}

// Attached records that process c.Pid mapped s at addr.
func (ns *Namespace) Attached(c *Caller, s *Segment, addr uint64) {
	if ns.shm.attaches == nil {
		ns.shm.attaches = map[int][]Attach{}
	}
	ns.shm.attaches[c.Pid] = append(ns.shm.attaches[c.Pid], Attach{Addr: addr, Size: s.Size, Seg: s})
	s.nattch++
	s.ATime = ns.now()
	s.LPid = c.Pid
}

// ShmDetach is shmdt(addr): it returns the attach to unmap.
func (ns *Namespace) ShmDetach(c *Caller, addr uint64) (Attach, error) {
	if addr&(pageSize-1) != 0 {
		return Attach{}, unix.EINVAL
	}
	list := ns.shm.attaches[c.Pid]
	for i, a := range list {
		if a.Addr == addr {
			ns.shm.attaches[c.Pid] = append(list[:i:i], list[i+1:]...)
			ns.detached(c.Pid, a.Seg)
			return a, nil
		}
	}
	return Attach{}, unix.EINVAL
}

func (ns *Namespace) detached(pid int, s *Segment) {
	s.nattch--
	s.DTime = ns.now()
	s.LPid = pid
	if s.nattch == 0 && s.dest {
		ns.destroy(s)
	}
}

func (ns *Namespace) destroy(s *Segment) {
	ns.shmPages -= (s.Size + pageSize - 1) / pageSize
	if !s.deleted {
		ns.shms.remove(s)
	}
	if ns.shm.backing != nil {
		ns.shm.backing.Free(s.Backing)
	}
}

// ForkAttaches gives child a copy of parent's attaches (fork keeps the
// mappings).
func (ns *Namespace) ForkAttaches(parent, child int) {
	list := ns.shm.attaches[parent]
	if len(list) == 0 {
		return
	}
	cp := append([]Attach(nil), list...)
	for _, a := range cp {
		a.Seg.nattch++
		a.Seg.ATime = ns.now()
		a.Seg.LPid = parent
	}
	ns.shm.attaches[child] = cp
}

// DropAttaches forgets every attach of pid (it exited or exec'd).
func (ns *Namespace) DropAttaches(pid int) {
	list := ns.shm.attaches[pid]
	delete(ns.shm.attaches, pid)
	for _, a := range list {
		ns.detached(pid, a.Seg)
	}
}

// Attaches returns pid's attaches.
func (ns *Namespace) Attaches(pid int) []Attach { return ns.shm.attaches[pid] }

// ShmCtlInput tells how many bytes the caller must read through shmctl's
// buf before calling ShmCtl (IPC_SET's shmid64_ds).
func ShmCtlInput(cmd int) int {
	if cmd == IPCSet {
		return shmidDsSize
	}
	return 0
}

// shmidDsSize is sizeof(struct shmid64_ds) (the same on x86_64 and arm64).
const shmidDsSize = 112

// ShmCtl is shmctl(shmid, cmd, buf): in holds IPC_SET's input; out is what
// to write to buf.
func (ns *Namespace) ShmCtl(c *Caller, shmid, cmd int, in []byte) (ret int64, out []byte, err error) {
	if cmd < 0 || shmid < 0 {
		return 0, nil, unix.EINVAL
	}
	switch cmd {
	case IPCInfo:
		b := make([]byte, 72)
		for i, v := range []uint64{ShmMAX, ShmMIN, ShmMNI, ShmMNI /* shmseg */, ShmALL} {
			le.PutUint64(b[8*i:], v)
		}
		return int64(max(ns.shms.maxIdx(), 0)), b, nil
	case ShmInfo:
		b := make([]byte, 48)
		le.PutUint32(b, uint32(ns.shms.inUse))
		le.PutUint64(b[8:], ns.shmPages) // shm_tot
		return int64(max(ns.shms.maxIdx(), 0)), b, nil
	case IPCStat, ShmStat, ShmStatAny:
		var s *Segment
		if cmd == IPCStat {
			s, err = ns.shms.lookup(shmid)
		} else {
			s, err = ns.shms.byIdx(shmid)
		}
		if err != nil {
			return 0, nil, err
		}
		if cmd != ShmStatAny && !s.allowed(c, 0o444) {
			return 0, nil, unix.EACCES
		}
		if cmd != IPCStat {
			ret = int64(s.ID)
		}
		return ret, s.encode(), nil
	case IPCSet, IPCRmid:
		s, err := ns.shms.lookup(shmid)
		if err != nil {
			return 0, nil, err
		}
		if !s.owner(c) {
			return 0, nil, unix.EPERM
		}
		if cmd == IPCSet {
			s.setFrom(in)
			s.CTime = ns.now()
			return 0, nil, nil
		}
		if s.nattch > 0 {
			s.dest = true
			s.Key = IPCPrivate
		} else {
			ns.destroy(s)
		}
		return 0, nil, nil
	case ShmLock, ShmUnlock:
		s, err := ns.shms.lookup(shmid)
		if err != nil {
			return 0, nil, err
		}
		if !s.owner(c) {
			return 0, nil, unix.EPERM
		}
		s.locked = cmd == ShmLock
		return 0, nil, nil
	}
	return 0, nil, unix.EINVAL
}

func (s *Segment) encode() []byte {
	b := make([]byte, shmidDsSize)
	p := s.Perm
	if s.dest {
		p.Mode |= shmDest
	}
	if s.locked {
		p.Mode |= shmLocked
	}
	p.encode(b)
	le.PutUint64(b[48:], s.Size)
	le.PutUint64(b[56:], uint64(s.ATime))
	le.PutUint64(b[64:], uint64(s.DTime))
	le.PutUint64(b[72:], uint64(s.CTime))
	le.PutUint32(b[80:], uint32(s.CPid))
	le.PutUint32(b[84:], uint32(s.LPid))
	le.PutUint64(b[88:], uint64(s.nattch))
	return b
}
