package sysvipc

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

func TestMsgQueue(t *testing.T) {
	ns := NewNamespace()
	id, err := ns.MsgGet(alice, 9, IPCCreat|0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ns.MsgGet(alice, 9, IPCCreat|IPCExcl); err != unix.EEXIST {
		t.Errorf("msgget excl: %v", err)
	}
	if _, err := ns.MsgGet(bob, 9, 0o400); err != unix.EACCES {
		t.Errorf("msgget by another user: %v", err)
	}
	snd := func(c *Caller, typ int64, text string, flg int) (bool, []MsgWake, error) {
		return ns.MsgSnd(c, id, Message{Type: typ, Text: []byte(text)}, flg)
	}
	for _, tc := range []struct {
		name string
		c    *Caller
		typ  int64
		text string
		want unix.Errno
	}{
		{"type 0", alice, 0, "x", unix.EINVAL},
		{"too big", alice, 1, string(make([]byte, MsgMax+1)), unix.EINVAL},
		{"other user", bob, 1, "x", unix.EACCES},
		{"one", alice, 1, "one", 0},
		{"two", alice, 2, "two", 0},
		{"three", alice, 3, "three", 0},
	} {
		if _, _, err := snd(tc.c, tc.typ, tc.text, 0); errno(err) != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	rcv := func(c *Caller, typ int64, bufsz int64, flg int) string {
		m, blocked, _, err := ns.MsgRcv(c, id, bufsz, typ, flg)
		switch {
		case err != nil:
			return err.(unix.Errno).Error()
		case blocked:
			return "blocked"
		}
		return string(m.Text)
	}
	for _, tc := range []struct {
		name  string
		typ   int64
		bufsz int64
		flg   int
		want  string
	}{
		{"small buffer", 1, 2, 0, unix.E2BIG.Error()},
		{"copy without nowait", 0, 10, MsgCopy, unix.EINVAL.Error()},
		{"copy index 1", 1, 10, MsgCopy | IPCNoWait, "two"},
		{"less or equal 3 takes the lowest", -3, 10, 0, "one"},
		{"except 2", 2, 10, MsgExcept, "three"},
		{"noerror cuts", 0, 2, MsgNoError, "tw"},
		{"empty nowait", 0, 10, IPCNoWait, unix.ENOMSG.Error()},
		{"empty blocks", 5, 10, 0, "blocked"},
	} {
		if got := rcv(alic2, tc.typ, tc.bufsz, tc.flg); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	// alic2 waits for type 5: a type 4 message is queued, a type 5 one handed over.
	if _, w, _ := snd(alice, 4, "four", 0); len(w) != 0 {
		t.Errorf("type 4 woke %v", w)
	}
	_, w, _ := snd(alice, 5, "five", 0)
	if diff := cmp.Diff([]MsgWake{{Tid: 11, Result: 4, Msg: &Message{5, []byte("five")}}}, w); diff != "" {
		t.Errorf("wakes (-want +got):\n%s", diff)
	}
	// A full queue blocks senders until a receive makes room.
	set := make([]byte, msqidDsSize)
	le.PutUint64(set[88:], 10)
	le.PutUint32(set[20:], 0o600)
	le.PutUint32(set[4:], alice.UID)
	le.PutUint32(set[8:], alice.GID)
	if _, _, _, err := ns.MsgCtl(alice, id, IPCSet, set); err != nil {
		t.Fatal(err)
	}
	le.PutUint64(set[88:], MsgMNB+1)
	if _, _, _, err := ns.MsgCtl(alice, id, IPCSet, set); err != unix.EPERM {
		t.Errorf("raising qbytes unprivileged: %v", err)
	}
	if _, _, err := snd(alice, 1, "123456789", IPCNoWait); err != unix.EAGAIN {
		t.Errorf("send to a full queue: %v", err)
	}
	if b, _, _ := snd(alic3, 1, "abcdefghij", 0); !b {
		t.Errorf("send to a full queue did not block")
	}
	m, _, w, _ := ns.MsgRcv(alice, id, 100, 0, 0)
	if string(m.Text) != "four" {
		t.Errorf("receive: %q", m.Text)
	}
	if diff := cmp.Diff([]MsgWake{{Tid: 13}}, w); diff != "" {
		t.Errorf("room for the sender (-want +got):\n%s", diff)
	}
	_, out, _, _ := ns.MsgCtl(alice, id, IPCStat, nil)
	if qnum, cbytes, lspid := le.Uint64(out[80:]), le.Uint64(out[72:]), le.Uint32(out[96:]); qnum != 1 || cbytes != 10 || lspid != 12 {
		t.Errorf("IPC_STAT: qnum %d cbytes %d lspid %d", qnum, cbytes, lspid)
	}
	ns.MsgRcv(alic2, id, 100, 7, 0)
	_, _, w, _ = ns.MsgCtl(alice, id, IPCRmid, nil)
	if diff := cmp.Diff([]MsgWake{{Tid: 11, Result: -int64(unix.EIDRM)}}, w); diff != "" {
		t.Errorf("RMID wakes (-want +got):\n%s", diff)
	}
	if _, _, err := snd(alice, 1, "x", 0); err != unix.EINVAL {
		t.Errorf("send to a removed queue: %v", err)
	}
}
