package emul

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/fastpath"
	"github.com/droidroot/droidroot/tracer"
)

// FastPath configures the fast path library's side of the tracer
// (Config.FastPath): its handshake, the /etc/ld.so.preload that ld.so
// reads, and the calls the filter lets through from its trampoline.
type FastPath struct {
	// Lib is the session's configuration as the library gets it; the
	// flags of the options that change answers (-l, -L, -0/-i,
	// --ashmem-memfd) are added from Config.
	Lib fastpath.Config
	// Dir is a directory of droidroot's own where the merged
	// /etc/ld.so.preload files go.
	Dir string
}

// preloadPath is the file ld.so reads before it loads a program's libraries.
const preloadPath = "/etc/ld.so.preload"

// prSetSeccompBit is the bit of PR_SET_SECCOMP (22) the filter tests
// prctl's option for: the fewest other options have it.
const prSetSeccompBit = 1 << 4

// fastPathState is the fast path layer's per-process state.
type fastPathState struct {
	blob  []byte // the handshake's answer
	flags uint32 // the library's flags (fastpath.Config.Flags)
	// procIsHost: the guest's /proc/self/exe is the host's (procIsHost),
	// whose readlink the tracer answers from its record of the program:
	// the handshake adds that answer (handshakeBlob).
	procIsHost bool
	cwdSeq     uint32 // the last seq written into a cwd record
	idsSeq     uint32 // the last seq written into an ids record (publishIDs)
	procs      map[int]*fastPathProc
	files      map[string]string // merged preload content -> its file in Dir
	byID       map[fileID]string // the guest preload file's fileID -> its merged file (merged)
	lastMerged string            // the last merged file made or found, "" before the first
	dir        string
	// changes is the session's change counter (fastpath.Config.Changes),
	// nil for none.
	changes *changeCounter
	// write, when set, replaces the tracer's WriteMem for the guard words
	// (tests).
	write memWriter
	// dirEntries: per thread, whether the entry call being entered names a
	// directory or a symlink (noteEntries), as the base handler found it.
	dirEntries map[int]bool
}

// fastPathProc is one process's fast path state.
type fastPathProc struct {
	// armed: the process has exec'd a dynamic program and its ld.so has
	// not opened /etc/ld.so.preload yet; that open (and the access before
	// it) gets the merged file, every later one the guest's own.
	armed bool
	// flag is the address of the library's enabled word (0: unknown).
	flag uint64
	// ownFilter: the process (or an ancestor it inherited the filter
	// from) installed a seccomp filter of its own: the library stays off.
	ownFilter bool
	// cwd is the address of the library's cwd record (0: unknown);
	// cwdFS, when not nil, is the filesystem context whose cwd the record
	// holds (a chdir, fchdir or chroot in it clears the record).
	cwd   uint64
	cwdFS *tracer.FS
	// sharedVM: the process shares its parent's memory (vfork), and so
	// its cwd record; vmParent is that parent's pid.
	sharedVM bool
	vmParent int
	// vmChildren counts the processes that share this one's memory with a
	// filesystem context of their own (sharedVM children, until their
	// exec or end): while there are any, nothing is published in the
	// record they read too.
	vmChildren int
	// guard is the descriptor guard word of the process's memory (nil:
	// none); guardShare: the process shares it with a table of its own
	// (fdGuard.shares counts it).
	guard      *fdGuard
	guardShare bool
}

// fastPathFlags are the library's flags for the options of cfg.
func fastPathFlags(cfg Config) (flags uint32, realUID, realGID, fakeUID, fakeGID uint32) {
	if cfg.Link2Symlink {
		flags |= fastpath.FlagL2S
	}
	if cfg.FailLink {
		// Links refused on purpose (the test switch); under -l alone the
		// library makes the kernel's link and leaves a refusal to the
		// tracer, which emulates it.
		flags |= fastpath.FlagNoLink
	}
	if !cfg.HideOwnFiles {
		// Directory streams of the library's own, where libc's fstat of
		// the descriptor is a stop and under -l (getdents.go's hider,
		// in-process where no symlink names link data); -H's hiding
		// stays the tracer's.
		flags |= fastpath.FlagDirs
	}
	if cfg.LstatLinkSize {
		flags |= fastpath.FlagLstatSize
	}
	if cfg.TrampolineByOpen {
		flags |= fastpath.FlagTrampOpen
	}
	if cfg.PortShift {
		flags |= fastpath.FlagPortShift
	}
	if cfg.Android != nil {
		if blocked := androidBlockedNames(cfg.Android); blocked["poll"] && blocked["epoll_wait"] {
			flags |= fastpath.FlagLegacy // x86_64's policy: each was a SIGSYS stop
		}
	}
	if cfg.AshmemMemfd {
		flags |= fastpath.FlagAshmem
	}
	if cfg.Identity != nil || cfg.EmulateSetID {
		flags |= fastpath.FlagGetIDs // get*id answered from the ids record (publishIDs)
	}
	if cfg.Identity != nil {
		flags |= fastpath.FlagIDs // access's EACCES answered with the emulated ids (ident.go)
	}
	realUID, realGID = uint32(unix.Getuid()), uint32(unix.Getgid())
	fakeUID, fakeGID = realUID, realGID
	if id := cfg.Identity; id != nil && (id.UID != realUID || id.GID != realGID) {
		flags |= fastpath.FlagOwner
		fakeUID, fakeGID = id.UID, id.GID
	}
	return flags, realUID, realGID, fakeUID, fakeGID
}

// applyFastPath adds the handshake, serves /etc/ld.so.preload to ld.so,
// turns the library off in processes with a seccomp filter of their own and
// marks the calls the library makes from its trampoline.
func applyFastPath(e *Emulation, b *tableBuilder) {
	fp := e.cfg.FastPath
	lib := fp.Lib
	var fl uint32
	fl, lib.RealUID, lib.RealGID, lib.FakeUID, lib.FakeGID = fastPathFlags(e.cfg)
	lib.Flags |= fl | fastpath.FlagFDGuard
	blob, err := lib.WithKernelForms().Encode()
	if err != nil {
		return // too many binds for the library: it stays off (no handshake)
	}
	s := &fastPathState{blob: blob, flags: lib.Flags, procIsHost: procIsHost(lib), procs: map[int]*fastPathProc{}, files: map[string]string{}, dir: fp.Dir}
	e.fastPath = s
	if lib.Changes != "" {
		if cc, err := mapChanges(lib.Changes); err == nil {
			s.changes = cc
			s.countChanges(b)
		}
	}
	s.applyFDGuard(b)

	b.set(fastpath.SyscallName, tracer.Handler{Enter: s.handshake, Events: s.events})
	if h, ok := b.get("seccomp"); ok {
		enter := h.Enter
		h.Enter = func(c *tracer.Call) {
			enter(c)
			if op := c.Arg(0); (op == unix.SECCOMP_SET_MODE_FILTER || op == unix.SECCOMP_SET_MODE_STRICT) && !fromLoader(c) {
				s.ownFilter(c)
			}
		}
		b.set("seccomp", h)
	}
	// prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER or _STRICT, ...) installs a
	// filter too. Where nothing else traces prctl, only the options with
	// PR_SET_SECCOMP's bit 4 stop (16-31 and 48-63: rare ones; PR_SET_NAME,
	// 15, is not among them).
	prctlOff := func(c *tracer.Call) {
		if c.Arg(0) == unix.PR_SET_SECCOMP && (c.Arg(1) == unix.SECCOMP_MODE_FILTER || c.Arg(1) == unix.SECCOMP_MODE_STRICT) {
			s.ownFilter(c)
		}
	}
	if h, ok := b.get("prctl"); ok {
		enter := h.Enter
		h.Enter = func(c *tracer.Call) {
			prctlOff(c)
			enter(c)
		}
		h.TraceIf = mergeTraceIf(h.TraceIf, &tracer.ArgMask{Arg: 0, Mask: prSetSeccompBit})
		b.set("prctl", h)
	} else {
		b.set("prctl", tracer.Handler{Enter: prctlOff, TraceIf: &tracer.ArgMask{Arg: 0, Mask: prSetSeccompBit}})
	}
	for _, name := range []string{"open", "openat", "access", "faccessat"} {
		if _, ok := b.get(name); !ok {
			continue
		}
		d := b.decl(name)
		b.set(name, s.preloadHandler(b.t[name], d.args[0], name == "open" || name == "openat"))
	}
	if h, ok := b.get("getcwd"); ok {
		enter := h.Enter
		h.Enter = func(c *tracer.Call) {
			enter(c)
			s.publishCwd(c)
		}
		b.set("getcwd", h)
	}
	for _, name := range []string{"chdir", "fchdir", "chroot"} {
		if h, ok := b.get(name); ok {
			enter := h.Enter
			h.Enter = func(c *tracer.Call) {
				s.clearCwd(c)
				enter(c)
			}
			b.set(name, h)
		}
	}
	for _, name := range fastpath.TrampolineCalls {
		if h, ok := b.get(name); ok && !h.FromTrampoline {
			h.FromTrampoline = true
			b.set(name, h)
		}
	}
}

// countChanges makes every rename and removal of a directory or symlink
// the tracer sees succeed count in the session's change counter, after the
// kernel made it (the library counts its own): a process without the
// library (static, an inline system call) changes paths other processes
// have cached. A call the base handler found to name only other files
// (noteEntries: unlinking or renaming a regular file changes no directory
// and no symlink on anyone's way) gets no exit stop.
func (s *fastPathState) countChanges(b *tableBuilder) {
	s.dirEntries = map[int]bool{}
	for _, name := range []string{"rename", "renameat", "renameat2", "unlink", "unlinkat", "rmdir"} {
		h, ok := b.get(name)
		if !ok {
			continue
		}
		enter, exit := h.Enter, h.Exit
		h.Enter = func(c *tracer.Call) {
			s.dirEntries[c.Tid()] = true // asked of noteEntries: true (an exit stop) unless it finds otherwise
			enter(c)
			if dirs, ok := s.dirEntries[c.Tid()]; ok && !dirs && exit == nil {
				c.NoExit()
			}
			delete(s.dirEntries, c.Tid())
		}
		h.Exit = func(c *tracer.Call) {
			if exit != nil {
				exit(c)
			}
			if c.Ret() >= 0 {
				s.changes.add()
			}
		}
		b.set(name, h)
	}
}

// noteEntries records, for the fast path's change counter, whether the
// entry call c is entering names a directory or a symlink (or something
// it cannot tell) among ts, when the call is one countChanges counts.
func noteEntries(c *tracer.Call, ts []translated) {
	s := emulationOf(c).fastPath
	if s == nil || s.dirEntries == nil {
		return
	}
	if _, asked := s.dirEntries[c.Tid()]; !asked {
		return // not a counted call (link): no lstat
	}
	dirs := false
	for _, t := range ts {
		var st unix.Stat_t
		if t.skip || t.res.Host == "" {
			dirs = true
			break
		}
		err := unix.Lstat(t.res.Host, &st)
		if err == unix.ENOENT || err == unix.ENOTDIR {
			continue // a name not there (a rename's new one)
		}
		if m := st.Mode & unix.S_IFMT; err != nil || m == unix.S_IFDIR || m == unix.S_IFLNK {
			dirs = true
			break
		}
	}
	s.dirEntries[c.Tid()] = dirs
}

// fromLoader reports whether c is made by droidroot's loader (the
// session's variant): the filter of a library-less process's wakes
// (loader.FlagWakesProgram), which traps nothing the library does.
func fromLoader(c *tracer.Call) bool {
	return c.Tracer() != nil && c.Tracer().InLoader(c.Entry.PC())
}

// proc returns pid's state, made on first use.
func (s *fastPathState) proc(pid int) *fastPathProc {
	p := s.procs[pid]
	if p == nil {
		p = &fastPathProc{}
		s.procs[pid] = p
	}
	return p
}

// handshake answers droidroot_fastpath(buf, size, &enabled, &cwd, cwdSize,
// &guard).
func (s *fastPathState) handshake(c *tracer.Call) {
	p := s.proc(c.Pid())
	blob := s.handshakeBlob(c.Proc())
	switch {
	case p.ownFilter || c.GuestTraced():
		c.Fail(unix.ENOSYS) // off: a filter of its own, or a guest tracer would see its calls

	case c.Arg(1) < uint64(len(blob)):
		c.Fail(unix.ERANGE)
	case c.WriteMem(c.Arg(0), blob) != nil:
		c.Fail(unix.EFAULT)
	default:
		p.flag = c.Arg(2)
		p.cwd, p.cwdFS = 0, nil
		if c.Arg(4) >= fastpath.CwdSize {
			p.cwd = c.Arg(3)
		}
		s.guardLeave(c.Tracer(), p)
		if c.Arg(5) != 0 {
			p.guard = &fdGuard{pid: c.Pid(), addr: c.Arg(5)} // the library starts it at 0
		}
		if p.cwd != 0 {
			// The cwd a getcwd would answer now, published at once: most
			// programs ask (shells, python, git), each a stop otherwise.
			s.publish(c, int64(len(guestCwd(c))+1))
			s.publishIDs(c, p)
			s.publishWaits(c, p)
		}
		c.Return(int64(len(blob)))
	}
}

// handshakeBlob is the handshake's answer for process pr: the session's
// configuration, then, where the guest's /proc is the host's, pr's program
// as the tracer answers readlink("/proc/self/exe") (readlinkGuest: its
// record, not the loader the kernel names), which the library answers
// in-process from then on (fastpath.c's readlink_self).
func (s *fastPathState) handshakeBlob(pr *tracer.Process) []byte {
	if !s.procIsHost || pr == nil || pr.Exe == "" || len(pr.Exe) >= tracer.PathMax {
		return s.blob
	}
	b := append(append(append([]byte(nil), s.blob...), pr.Exe...), 0)
	binary.LittleEndian.PutUint32(b[8:], uint32(len(b)))
	return b
}

// procIsHost reports whether guest path /proc/self/exe is the host's under
// lib's rootfs and binds, mapped as the library maps a path (the bind with
// the longest guest prefix, the last on a tie): the tracer then answers its
// readlink from its record of the program (readlinkGuest).
func procIsHost(lib fastpath.Config) bool {
	const g = "/proc/self/exe"
	host, best := lib.Root+g, -1
	for _, b := range lib.Binds {
		guest := strings.TrimSuffix(b.Guest, "/")
		if (guest == "" || g == guest || strings.HasPrefix(g, guest+"/")) && len(guest) >= best {
			best, host = len(guest), b.Host+g[len(guest):]
		}
	}
	return filepath.Clean(host) == g
}

// publishIDs writes the calling thread's emulated ids into the ids record
// of process p's cwd record (fastpath.CwdIDsOff), whose seq is 0 (a new
// image's, or cleared by clearIDs), where the ids are emulated
// (fastpath.FlagGetIDs) and every thread of p has the same ones: the ids,
// then a seq never written before. The library answers the get*id family
// from it until clearIDs, before a set*id call, writes seq 0.
func (s *fastPathState) publishIDs(c *tracer.Call, p *fastPathProc) {
	if s.flags&fastpath.FlagGetIDs == 0 || p.cwd == 0 || !c.IDsShared() {
		return
	}
	cr := c.Creds()
	var rec [fastpath.IDsSize - 8]byte
	for i, v := range []uint32{cr.UID, cr.EUID, cr.SUID, cr.GID, cr.EGID, cr.SGID} {
		binary.LittleEndian.PutUint32(rec[4*i:], v)
	}
	if c.WriteMem(p.cwd+fastpath.CwdIDsOff+4, rec[:]) != nil {
		return
	}
	s.idsSeq++
	if s.idsSeq == 0 {
		s.idsSeq = 1
	}
	var seq [4]byte
	binary.LittleEndian.PutUint32(seq[:], s.idsSeq)
	c.WriteMem(p.cwd+fastpath.CwdIDsOff, seq[:])
}

// publishWaits writes fastpath.WaitsOwn into the waits word of process
// p's cwd record where p traces nobody (a guest's ptrace): the library
// makes its WNOHANG waits in-process until EventGuestTracer clears it. A
// new image's word is 0 (a tracer's stays so).
func (s *fastPathState) publishWaits(c *tracer.Call, p *fastPathProc) {
	if p.cwd == 0 || c.Tracing() {
		return
	}
	var w [4]byte
	binary.LittleEndian.PutUint32(w[:], fastpath.WaitsOwn)
	c.WriteMem(p.cwd+fastpath.CwdWaitsOff, w[:])
}

// clearIDs writes seq 0 into the ids record of the calling process's
// memory (a vfork child's is its parent's), before a set*id call changes
// an id the library may answer: every thread's get*id then goes to the
// tracer, until the next exec's handshake publishes the ids again.
func clearIDs(c *tracer.Call) {
	s := emulationOf(c).fastPath
	if s == nil || s.flags&fastpath.FlagGetIDs == 0 {
		return
	}
	if p := s.procs[c.Pid()]; p != nil && p.cwd != 0 {
		c.WriteMem(p.cwd+fastpath.CwdIDsOff, []byte{0, 0, 0, 0})
	}
}

// republishIDs publishes the calling process's ids again after a set*id
// call (clearIDs cleared them before it ran), once every thread of the
// process has the same ones (glibc's set*id functions make the call in each
// thread in turn: the last one publishes) and no other process shares its
// memory (a vfork child's ids are not its parent's).
func republishIDs(c *tracer.Call) {
	s := emulationOf(c).fastPath
	if s == nil {
		return
	}
	if p := s.procs[c.Pid()]; p != nil && p.ownsRecord() {
		s.publishIDs(c, p)
	}
}

// publishCwd writes the answer of the getcwd c just answered into the
// calling process's cwd record, with the host directory the kernel has as
// the cwd (fs.Host): while the kernel's getcwd names that directory and no
// chdir, fchdir or chroot cleared the record, the tracer would give the same
// answer (guestCwd: fs.Cwd for an unchanged fs.Host). Not when the cwd is
// unsettled or lost, or the process's threads may have different cwds.
func (s *fastPathState) publishCwd(c *tracer.Call) { s.publish(c, c.Ret()) }

// publish writes fs.Cwd, the answer of a getcwd that returned ret (its
// length with the NUL), into the calling process's cwd record: after the
// tracer answered one (publishCwd), or at the handshake, with the cwd
// guestCwd settled.
func (s *fastPathState) publish(c *tracer.Call, ret int64) {
	p := s.procs[c.Pid()]
	fs := c.FS()
	if p == nil || !p.ownsRecord() || !cwdPublishable(fs, c.Proc(), ret) {
		return
	}
	var seq [4]byte
	if p.cwdFS != nil && c.WriteMem(p.cwd, seq[:]) != nil {
		return
	}
	p.cwdFS = nil
	if c.WriteMem(p.cwd+fastpath.CwdLenOff, cwdRecord(fs.Host, fs.Cwd)) != nil {
		return
	}
	s.cwdSeq++
	if s.cwdSeq == 0 {
		s.cwdSeq = 1
	}
	binary.LittleEndian.PutUint32(seq[:], s.cwdSeq)
	if c.WriteMem(p.cwd, seq[:]) == nil {
		p.cwdFS = fs
	}
}

// cwdPublishable tells whether a getcwd that returned ret in process p,
// whose thread has filesystem context fs, answered fs.Cwd for the kernel's
// fs.Host, settled, with every thread of p sharing that cwd, in what fits a
// cwd record.
func cwdPublishable(fs *tracer.FS, p *tracer.Process, ret int64) bool {
	return ret == int64(len(fs.Cwd)+1) && fs.Pending == nil && !fs.Lost && fs.Host != "" && !p.SplitFS &&
		len(fs.Host) < fastpath.CwdMax && len(fs.Cwd) < fastpath.CwdMax
}

// cwdRecord is a cwd record for host and guest from its lengths on
// (fastpath.CwdLenOff: the lengths, padding, the host path, the guest
// path): what is written between the seqs.
func cwdRecord(host, guest string) []byte {
	rec := make([]byte, fastpath.CwdGuestOff-fastpath.CwdLenOff+len(guest))
	binary.LittleEndian.PutUint32(rec[0:], uint32(len(host)))
	binary.LittleEndian.PutUint32(rec[4:], uint32(len(guest)))
	copy(rec[fastpath.CwdHostOff-fastpath.CwdLenOff:], host)
	copy(rec[fastpath.CwdGuestOff-fastpath.CwdLenOff:], guest)
	return rec
}

// clearCwd clears the cwd records that hold the cwd of c's filesystem
// context, before a chdir, fchdir or chroot (the kernel has not run it
// yet): the guest cwd may change while the host directory stays the same
// (a directory bound at two guest paths; a new root), and the library
// takes the kernel's cwd to be the directory it found while the record
// stays (fastpath.c's cwd_id). The caller's own record goes too, whatever
// context it was published for: every thread of the process reads it, one
// cloned without CLONE_FS as well; a vfork child's is its parent's.
func (s *fastPathState) clearCwd(c *tracer.Call) {
	fs := c.FS()
	var zero [4]byte
	if p := s.procs[c.Pid()]; p != nil && p.cwd != 0 && (p.sharedVM || p.cwdFS != nil) {
		c.WriteMem(p.cwd, zero[:])
		if !p.sharedVM {
			p.cwdFS = nil
		}
	}
	for pid, p := range s.procs {
		if p.cwdFS == fs {
			p.cwdFS = nil
			c.Tracer().WriteMem(pid, p.cwd, zero[:])
		}
	}
}

// ownsRecord reports whether p's cwd record is read by p's threads alone:
// the library told where it is, and no other process shares p's memory.
func (p *fastPathProc) ownsRecord() bool { return p.cwd != 0 && !p.sharedVM && p.vmChildren == 0 }

// leaveVM ends p's sharing of its parent's memory (its exec or end).
func (s *fastPathState) leaveVM(p *fastPathProc) {
	if !p.sharedVM {
		return
	}
	if parent := s.procs[p.vmParent]; parent != nil && parent.vmChildren > 0 {
		parent.vmChildren--
	}
	p.sharedVM, p.vmParent = false, 0
}

// ownFilter turns the library off in the calling process: its filter's
// traps could see the library's own checks.
func (s *fastPathState) ownFilter(c *tracer.Call) {
	p := s.proc(c.Pid())
	p.ownFilter = true
	if p.flag != 0 {
		c.WriteMem(p.flag, []byte{0, 0, 0, 0})
	}
}

// events follows processes: a fork inherits the parent's library state
// (same memory, same filter), an exec arms the preload and forgets the old
// image's library.
func (s *fastPathState) events(ev *tracer.Event) {
	switch ev.Kind {
	case tracer.EventFork:
		if ev.Pid == ev.ParentPid {
			if parent := s.procs[ev.ParentPid]; parent != nil {
				s.guardFork(ev, parent, nil) // a thread
			}
			return
		}
		if parent := s.procs[ev.ParentPid]; parent != nil {
			// The child's copy of the cwd record holds its cwd too (a copy
			// of the parent's filesystem context, or the same one). A
			// child sharing the parent's memory (vfork) reads the
			// parent's record: nothing is published there for it, and
			// its chdir clears the record.
			child := &fastPathProc{flag: parent.flag, ownFilter: parent.ownFilter, cwd: parent.cwd}
			child.sharedVM = ev.Flags&unix.CLONE_VM != 0
			if child.sharedVM {
				// Counted on the memory's owner (a vfork child's own
				// vfork shares its parent's parent's memory).
				owner, op := ev.ParentPid, parent
				if parent.sharedVM {
					if o := s.procs[parent.vmParent]; o != nil {
						owner, op = parent.vmParent, o
					}
				}
				child.vmParent = owner
				op.vmChildren++
			}
			if parent.cwdFS != nil && !child.sharedVM {
				child.cwdFS = ev.Tracer().ThreadFS(ev.Tid)
			}
			s.procs[ev.Pid] = child
			s.guardFork(ev, parent, child)
		}
	case tracer.EventExec:
		// Only a dynamic program's ld.so reads the preload file before
		// the program: a static one (or a static emulator under -q, whose
		// guest's ld.so is of another ABI) reading the file gets the
		// guest's own.
		p := s.proc(ev.Pid)
		s.guardLeave(ev.Tracer(), p)
		s.leaveVM(p)
		p.armed, p.flag, p.cwd, p.cwdFS, p.sharedVM = !ev.Static, 0, 0, nil, false
	case tracer.EventProcessGone:
		if p := s.procs[ev.Pid]; p != nil {
			s.guardLeave(ev.Tracer(), p)
			s.leaveVM(p)
		}
		delete(s.procs, ev.Pid)
	case tracer.EventGuestTracer:
		// The process traces someone from now on: its waits go to the
		// tracer's wait handler, which reports the emulated stops (the
		// library makes them in-process no more; processes sharing its
		// memory share the word).
		if p := s.procs[ev.Pid]; p != nil && p.cwd != 0 {
			ev.WriteMem(p.cwd+fastpath.CwdWaitsOff, []byte{0, 0, 0, 0})
		}
	case tracer.EventGuestTraced:
		// A guest tracer attached: the library's own calls must not show
		// to it, so it goes off in the process (and in its forks, which
		// copy the word; an exec's new library asks the handshake again).
		if p := s.procs[ev.Pid]; p != nil && p.flag != 0 {
			ev.WriteMem(p.flag, []byte{0, 0, 0, 0})
		}
	}
}

// preloadHandler wraps an open or access handler: while the process is
// armed, /etc/ld.so.preload is the merged file; an open disarms it.
func (s *fastPathState) preloadHandler(inner tracer.Handler, a pathArg, isOpen bool) tracer.Handler {
	h := inner
	h.Enter = func(c *tracer.Call) {
		p := s.procs[c.Pid()]
		if p == nil || !p.armed || c.GuestTraced() {
			// A process a guest tracer follows loads no library: its
			// ld.so reads the guest's own preload file.
			inner.Enter(c)
			return
		}
		g, err := c.ReadPath(c.Arg(a.path))
		if err != nil || g != preloadPath {
			inner.Enter(c)
			return
		}
		if isOpen {
			p.armed = false
		}
		// The access before the open only asks whether the file can be
		// read: any merged file can (no guest file is read for it).
		host, err := s.lastMerged, error(nil)
		if isOpen || host == "" {
			host, err = s.merged(c)
		}
		if err != nil {
			inner.Enter(c)
			return
		}
		addr, err := c.PushString(host)
		if err != nil {
			inner.Enter(c)
			return
		}
		c.NoExit()
		c.SetArg(a.path, addr)
	}
	return h
}

// merged returns the file holding the guest's /etc/ld.so.preload with the
// library added.
func (s *fastPathState) merged(c *tracer.Call) (string, error) {
	host, errno := resolveAt(c, -1, preloadPath, true)
	if errno != 0 {
		host = ""
	}
	return s.mergedOf(host)
}

// mergedOf is merged for the guest file at host ("" for none). The merged
// file is found again by the guest file's fileID (the zero fileID when it
// has none): a stat instead of a read at each process's start.
func (s *fastPathState) mergedOf(host string) (string, error) {
	var own []byte
	var id fileID
	var st unix.Stat_t
	if host != "" && unix.Stat(host, &st) == nil {
		id = idOf(&st)
	}
	if f, ok := s.byID[id]; ok {
		return f, nil
	}
	if id != (fileID{}) {
		own, _ = os.ReadFile(host)
		if unix.Stat(host, &st) != nil || idOf(&st) != id {
			id = fileID{dev: ^uint64(0)} // changed while read: not kept
		}
	}
	content := fastpath.MergePreload(own)
	if f, ok := s.files[string(content)]; ok {
		s.remember(id, f)
		return f, nil
	}
	sum := sha256.Sum256(content)
	f := filepath.Join(s.dir, "ld.so.preload-"+hex.EncodeToString(sum[:8]))
	if err := os.WriteFile(f, content, 0o444); err != nil && !os.IsExist(err) {
		return "", err
	}
	s.files[string(content)] = f
	s.remember(id, f)
	return f, nil
}

// remember notes that the guest preload file id merges into file f.
func (s *fastPathState) remember(id fileID, f string) {
	if id.dev == ^uint64(0) {
		return
	}
	if s.byID == nil || len(s.byID) >= maxExecFiles {
		s.byID = map[fileID]string{}
	}
	s.byID[id] = f
	s.lastMerged = f
}
