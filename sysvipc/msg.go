package sysvipc

import (
	"math"

	"golang.org/x/sys/unix"
)

// Message queue limits (the kernel's defaults: /proc/sys/kernel/msg*).
const (
	MsgMax = 8192  // largest message
	MsgMNB = 16384 // default queue size in bytes
	MsgMNI = 32000 // queues
)

// msgrcv flags.
const (
	MsgNoError = 0o10000
	MsgExcept  = 0o20000
	MsgCopy    = 0o40000

	MsgStat    = 11
	MsgInfo    = 12
	MsgStatAny = 13
)

// Message is one message: its type and text.
type Message struct {
	Type int64
	Text []byte
}

// MsgQueue is one message queue.
type MsgQueue struct {
	Perm
	msgs                []Message
	cbytes, qbytes      int
	STime, RTime, CTime int64
	LSPid, LRPid        int
	receivers           []*msgReceiver
	senders             []*msgSender
}

func (q *MsgQueue) perm() *Perm {
	if q == nil {
		return nil
	}
	return &q.Perm
}

type msgReceiver struct {
	caller  Caller
	typ     int64
	mode    int
	maxsize int // bufsz, or unlimited with MSG_NOERROR
	bufsz   int
}

type msgSender struct {
	caller Caller
	msg    Message
}

// MsgWake answers a blocked msgsnd or msgrcv: Result is the call's result
// (or a negative errno); Msg, for a receiver, is the message to copy to its
// buffer (its text already cut to the buffer's size).
type MsgWake struct {
	Tid    int
	Result int64
	Msg    *Message
}

// Search modes of msgrcv (convert_mode).
const (
	searchAny = iota
	searchEqual
	searchNotEqual
	searchLessEqual
	searchNumber
)

// MsgGet is msgget(key, msgflg).
func (ns *Namespace) MsgGet(c *Caller, key int32, flg int) (int, error) {
	create := func() (int, error) {
		q := &MsgQueue{Perm: newPerm(c, key, flg), qbytes: MsgMNB, CTime: ns.now()}
		return ns.msgs.add(q, MsgMNI)
	}
	return get(&ns.msgs, c, key, flg, create, func(*MsgQueue) error { return nil })
}

// MsgSndCheck does msgsnd's checks that come before reading the message.
func MsgSndCheck(msqid int, msgsz int64, mtype int64) error {
	if msgsz > MsgMax || msgsz < 0 || msqid < 0 || mtype < 1 {
		return unix.EINVAL
	}
	return nil
}

func fits(q *MsgQueue, size int) bool {
	return size+q.cbytes <= q.qbytes && 1+len(q.msgs) <= q.qbytes
}

// MsgSnd is msgsnd. blocked means the caller sleeps until a MsgWake.
func (ns *Namespace) MsgSnd(c *Caller, msqid int, m Message, flg int) (blocked bool, wakes []MsgWake, err error) {
	if err := MsgSndCheck(msqid, int64(len(m.Text)), m.Type); err != nil {
		return false, nil, err
	}
	q, err := ns.msgs.lookup(msqid)
	if err != nil {
		return false, nil, err
	}
	if !q.allowed(c, 0o222) {
		return false, nil, unix.EACCES
	}
	if !fits(q, len(m.Text)) {
		if flg&IPCNoWait != 0 {
			return false, nil, unix.EAGAIN
		}
		q.senders = append(q.senders, &msgSender{caller: *c, msg: m})
		ns.msgWaiting[c.Tid] = q
		return true, nil, nil
	}
	return false, ns.send(q, c, m), nil
}

// send delivers m: straight to a waiting receiver, or into the queue.
func (ns *Namespace) send(q *MsgQueue, c *Caller, m Message) []MsgWake {
	q.LSPid = c.Pid
	q.STime = ns.now()
	var wakes []MsgWake
	for i := 0; i < len(q.receivers); i++ {
		r := q.receivers[i]
		if !matches(m.Type, r.typ, r.mode) {
			continue
		}
		q.receivers = append(q.receivers[:i:i], q.receivers[i+1:]...)
		delete(ns.msgWaiting, r.caller.Tid)
		i--
		if r.maxsize < len(m.Text) {
			wakes = append(wakes, MsgWake{Tid: r.caller.Tid, Result: -int64(unix.E2BIG)})
			continue
		}
		q.LRPid = r.caller.Pid
		q.RTime = ns.now()
		mm := m
		if len(mm.Text) > r.bufsz {
			mm.Text = mm.Text[:r.bufsz]
		}
		return append(wakes, MsgWake{Tid: r.caller.Tid, Result: int64(len(mm.Text)), Msg: &mm})
	}
	q.msgs = append(q.msgs, m)
	q.cbytes += len(m.Text)
	return wakes
}

func matches(typ, want int64, mode int) bool {
	switch mode {
	case searchAny:
		return true
	case searchLessEqual:
		return typ <= want
	case searchEqual:
		return typ == want
	case searchNotEqual:
		return typ != want
	}
	return false
}

// MsgRcvCheck does msgrcv's argument checks.
func MsgRcvCheck(msqid int, bufsz int64, flg int) error {
	if msqid < 0 || bufsz < 0 {
		return unix.EINVAL
	}
	if flg&MsgCopy != 0 && (flg&MsgExcept != 0 || flg&IPCNoWait == 0) {
		return unix.EINVAL
	}
	return nil
}

// MsgRcv is msgrcv. It returns the message received (its text cut to
// bufsz with MSG_NOERROR), or blocked: the caller sleeps until a MsgWake.
func (ns *Namespace) MsgRcv(c *Caller, msqid int, bufsz int64, typ int64, flg int) (m *Message, blocked bool, wakes []MsgWake, err error) {
	if err := MsgRcvCheck(msqid, bufsz, flg); err != nil {
		return nil, false, nil, err
	}
	mode := searchEqual
	switch {
	case flg&MsgCopy != 0:
		mode = searchNumber
	case typ == 0:
		mode = searchAny
	case typ < 0:
		mode = searchLessEqual
		if typ == math.MinInt64 {
			typ = math.MaxInt64
		} else {
			typ = -typ
		}
	case flg&MsgExcept != 0:
		mode = searchNotEqual
	}
	size := int(bufsz)
	q, err := ns.msgs.lookup(msqid)
	if err != nil {
		return nil, false, nil, err
	}
	if !q.allowed(c, 0o444) {
		return nil, false, nil, unix.EACCES
	}
	i := findMsg(q, typ, mode)
	if i < 0 {
		if flg&IPCNoWait != 0 {
			return nil, false, nil, unix.ENOMSG
		}
		q.receivers = append(q.receivers, &msgReceiver{caller: *c, typ: typ, mode: mode, maxsize: maxsize(size, flg), bufsz: size})
		ns.msgWaiting[c.Tid] = q
		return nil, true, nil, nil
	}
	found := q.msgs[i]
	if size < len(found.Text) && flg&MsgNoError == 0 {
		return nil, false, nil, unix.E2BIG
	}
	if mode == searchNumber {
		if len(found.Text) > min(size, MsgMax) {
			return nil, false, nil, unix.EINVAL
		}
		return &found, false, nil, nil
	}
	q.msgs = append(q.msgs[:i:i], q.msgs[i+1:]...)
	q.cbytes -= len(found.Text)
	q.RTime = ns.now()
	q.LRPid = c.Pid
	if len(found.Text) > size {
		found.Text = found.Text[:size]
	}
	return &found, false, ns.sendWaiting(q), nil
}

func maxsize(size, flg int) int {
	if flg&MsgNoError != 0 {
		return math.MaxInt
	}
	return size
}

// findMsg is find_msg: the index of the message a receiver takes, or -1.
func findMsg(q *MsgQueue, typ int64, mode int) int {
	best := -1
	for i, m := range q.msgs {
		if mode == searchNumber {
			if int64(i) == typ {
				return i
			}
			continue
		}
		if !matches(m.Type, typ, mode) {
			continue
		}
		if mode != searchLessEqual {
			return i
		}
		if best < 0 || m.Type < q.msgs[best].Type {
			best = i
		}
	}
	return best
}

// sendWaiting lets blocked senders of q send while their messages fit.
func (ns *Namespace) sendWaiting(q *MsgQueue) []MsgWake {
	var wakes []MsgWake
	for len(q.senders) > 0 && fits(q, len(q.senders[0].msg.Text)) {
		s := q.senders[0]
		q.senders = q.senders[1:]
		delete(ns.msgWaiting, s.caller.Tid)
		wakes = append(wakes, ns.send(q, &s.caller, s.msg)...)
		wakes = append(wakes, MsgWake{Tid: s.caller.Tid})
	}
	return wakes
}

// RemoveMsgWaiter takes tid's blocked msgsnd or msgrcv off its queue.
func (ns *Namespace) RemoveMsgWaiter(tid int) bool {
	q := ns.msgWaiting[tid]
	if q == nil {
		return false
	}
	delete(ns.msgWaiting, tid)
	for i, r := range q.receivers {
		if r.caller.Tid == tid {
			q.receivers = append(q.receivers[:i:i], q.receivers[i+1:]...)
			return true
		}
	}
	for i, s := range q.senders {
		if s.caller.Tid == tid {
			q.senders = append(q.senders[:i:i], q.senders[i+1:]...)
			return true
		}
	}
	return true
}

// msqidDsSize is sizeof(struct msqid64_ds) (the same on x86_64 and arm64).
const msqidDsSize = 120

// MsgCtlInput tells how many bytes the caller must read through msgctl's
// buf before calling MsgCtl (IPC_SET's msqid64_ds).
func MsgCtlInput(cmd int) int {
	if cmd == IPCSet {
		return msqidDsSize
	}
	return 0
}

// MsgCtl is msgctl(msqid, cmd, buf): in holds IPC_SET's input; out is what
// to write to buf.
func (ns *Namespace) MsgCtl(c *Caller, msqid, cmd int, in []byte) (ret int64, out []byte, wakes []MsgWake, err error) {
	if msqid < 0 || cmd < 0 {
		return 0, nil, nil, unix.EINVAL
	}
	switch cmd {
	case IPCInfo, MsgInfo:
		b := make([]byte, 32)
		info := []int32{MsgMNI * MsgMNB / 1024, MsgMNB, MsgMax, MsgMNB, MsgMNI, 16, MsgMNB}
		if cmd == MsgInfo {
			msgs, bytes := 0, 0
			for _, q := range ns.msgs.byIndex {
				if q != nil {
					msgs += len(q.msgs)
					bytes += q.cbytes
				}
			}
			info[0], info[1], info[6] = int32(ns.msgs.inUse), int32(msgs), int32(bytes)
		}
		for i, v := range info {
			le.PutUint32(b[4*i:], uint32(v))
		}
		le.PutUint16(b[28:], 0xffff) // msgseg
		return int64(max(ns.msgs.maxIdx(), 0)), b, nil, nil
	case IPCStat, MsgStat, MsgStatAny:
		var q *MsgQueue
		if cmd == IPCStat {
			q, err = ns.msgs.lookup(msqid)
		} else {
			q, err = ns.msgs.byIdx(msqid)
		}
		if err != nil {
			return 0, nil, nil, err
		}
		if cmd != MsgStatAny && !q.allowed(c, 0o444) {
			return 0, nil, nil, unix.EACCES
		}
		if cmd != IPCStat {
			ret = int64(q.ID)
		}
		return ret, q.encode(), nil, nil
	case IPCSet, IPCRmid:
		q, err := ns.msgs.lookup(msqid)
		if err != nil {
			return 0, nil, nil, err
		}
		if !q.owner(c) {
			return 0, nil, nil, unix.EPERM
		}
		if cmd == IPCSet {
			qbytes := le.Uint64(in[88:])
			if qbytes > MsgMNB && !c.privileged() {
				return 0, nil, nil, unix.EPERM
			}
			q.qbytes = int(min(qbytes, math.MaxInt32))
			q.setFrom(in)
			q.CTime = ns.now()
			return 0, nil, ns.sendWaiting(q), nil
		}
		for _, r := range q.receivers {
			delete(ns.msgWaiting, r.caller.Tid)
			wakes = append(wakes, MsgWake{Tid: r.caller.Tid, Result: -int64(unix.EIDRM)})
		}
		for _, s := range q.senders {
			delete(ns.msgWaiting, s.caller.Tid)
			wakes = append(wakes, MsgWake{Tid: s.caller.Tid, Result: -int64(unix.EIDRM)})
		}
		ns.msgs.remove(q)
		return 0, nil, wakes, nil
	}
	return 0, nil, nil, unix.EINVAL
}

func (q *MsgQueue) encode() []byte {
	b := make([]byte, msqidDsSize)
	q.Perm.encode(b)
	le.PutUint64(b[48:], uint64(q.STime))
	le.PutUint64(b[56:], uint64(q.RTime))
	le.PutUint64(b[64:], uint64(q.CTime))
	le.PutUint64(b[72:], uint64(q.cbytes))
	le.PutUint64(b[80:], uint64(len(q.msgs)))
	le.PutUint64(b[88:], uint64(q.qbytes))
	le.PutUint32(b[96:], uint32(q.LSPid))
	le.PutUint32(b[100:], uint32(q.LRPid))
	return b
}
