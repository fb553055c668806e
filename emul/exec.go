package emul

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/pathmap"
	"github.com/droidroot/droidroot/tracer"
)

// maxScriptDepth is how many #! levels the kernel follows before ELOOP:
// exec_binprm tries at most 6 binary handlers, the last being the ELF.
const maxScriptDepth = 5

// binprmBufSize is how much of a file the kernel reads to find its format.
const binprmBufSize = 256

// execPlan is the result of looking at what the guest wants to exec.
type execPlan struct {
	argv    []execArg // nil when argv is unchanged (no script)
	program string    // host path of the ELF to load
	exe     string    // guest path of it
	interp  string    // host path of PT_INTERP, "" if none
	// interpGuest is PT_INTERP as the program names it, "" if none.
	interpGuest string
}

// planExec does what the kernel's exec does before replacing the image:
// it finds the file, expands #! lines and checks the ELF, returning the
// kernel's errno for anything it would refuse.
//
// scriptName is the name the kernel gives a #! script as its interpreter's
// argument (bprm->interp: the filename as given, or /dev/fd/N[/name] for an
// execveat relative to a descriptor), and inaccessible says that name dies
// with the exec (the descriptor is close-on-exec), in which case the kernel
// refuses a script with ENOENT (fs/binfmt_script.c, BINPRM_FLAGS_PATH_INACCESSIBLE).
//
// host0, when not "", is the host path of the file itself, which guest only
// names for /proc/self/exe (execveat of a descriptor whose file no path
// reaches: a memfd, a file removed since its open; see heldExec).
func planExec(c *tracer.Call, dirfdArg int, guest, host0, scriptName string, inaccessible bool, argvAddr uint64) (*execPlan, unix.Errno) {
	var argv []execArg
	filename := guest
	for depth := 0; ; depth++ {
		host, errno := host0, unix.Errno(0)
		exeName := ""
		if depth == 0 && host0 != "" {
			exeName = guest
		} else {
			host, errno = resolveAt(c, dirfdArg, filename, true)
			if errno == 0 && strings.HasPrefix(host, "/proc/") {
				// A magic link (/proc/self/fd/N, /dev/fd/N): gone after the
				// exec if its descriptor is close-on-exec.
				var held string
				if held, exeName, errno = heldExecPath(c, host); held != "" {
					host = held
				}
			}
		}
		if errno != 0 {
			return nil, errno
		}
		fileDirfd := dirfdArg
		dirfdArg = -1 // interpreters resolve against the cwd
		files := execFilesOf(emulationOf(c))
		ef, errno := files.program(host)
		if errno != 0 {
			return nil, errno
		}
		hd := ef.head
		if bytes.HasPrefix(hd, []byte("#!")) {
			if depth >= maxScriptDepth {
				return nil, unix.ELOOP
			}
			interp, arg, ok := parseShebang(hd)
			if !ok {
				return nil, unix.ENOEXEC
			}
			if inaccessible {
				return nil, unix.ENOENT
			}
			if argv == nil {
				var err error
				if argv, err = readArgv(c, argvAddr); err != nil {
					return nil, argvErrno(err)
				}
			}
			argv = scriptArgv(argv, interp, arg, scriptName)
			if interp == "" {
				// open_exec("") opens the cwd (getname_kernel takes an
				// empty name): a directory, EACCES.
				return nil, unix.EACCES
			}
			filename, scriptName = interp, interp
			continue
		}
		if !bytes.HasPrefix(hd, []byte(elf.ELFMAG)) {
			return nil, unix.ENOEXEC
		}
		if q := emulationOf(c).qemu; q != nil && foreignELFAt(host) {
			return q.plan(c, host, argv, argvAddr)
		}
		if len(hd) > 19 && elf.Class(hd[elf.EI_CLASS]) == elf.ELFCLASS32 &&
			elf.Machine(binary.LittleEndian.Uint16(hd[18:])) == tracer.ELFMachine32 {
			c.Tracer().WarnOnce("32-bit", "%s: a 32-bit program: droidroot runs 64-bit programs only (PROOT_LOADER_32 is accepted and not used)", filename)
			return nil, unix.ENOEXEC
		}
		interpGuest, errno := ef.interp, ef.errno
		if errno != 0 {
			return nil, errno
		}
		plan := &execPlan{argv: argv, program: host, interpGuest: interpGuest}
		plan.exe, _ = c.Mapper().ToGuest(host)
		if exeName != "" {
			plan.exe = exeName // what the kernel shows: "/memfd:NAME (deleted)", "PATH (deleted)"
		}
		if emulationOf(c).l2s != nil && isL2SData(filepath.Base(host)) {
			// A hard link's name: /proc/self/exe shows the name, not the data file.
			if r, errno := lookupAt(c, fileDirfd, filename, pathmap.WantGuest); errno == 0 && r.Guest != "" {
				plan.exe = r.Guest
			}
		}
		if plan.exe == "" {
			plan.exe = host
		}
		if interpGuest != "" {
			ih, errno := resolveAt(c, -1, interpGuest, true)
			if errno != 0 {
				return nil, errno
			}
			if errno := files.interpreter(ih); errno != 0 {
				return nil, errno
			}
			plan.interp = ih
		}
		return plan, 0
	}
}

// heldExec gives, for execveat(fd, "", AT_EMPTY_PATH), the host path the
// loader opens the file by: the path its link in /proc names when that is
// the same file, else, when no path names it (a memfd: runc's, python's and
// glibc's fexecve; a file removed since its open), droidroot's own open of
// it (heldExecPath). The kernel execs the open file, and so must the loader,
// which opens the program after the exec, when a close-on-exec descriptor
// is gone: droidroot opens the file itself and hands the loader
// /proc/<droidroot>/fd/N, as it hands the kernel its pins. The file stays
// open until the process execs again or is gone (execEvents).
func heldExec(c *tracer.Call, fd int) (string, unix.Errno) {
	host, _, errno := heldExecPath(c, procFd(c.Tid(), fd))
	if errno == unix.ENOENT {
		errno = unix.EBADF
	}
	return host, errno
}

// heldExecPath is heldExec for a program whose host path is proc, a magic
// link of the caller's /proc (exec of /proc/self/fd/N or /dev/fd/N, which
// the kernel opens before a close-on-exec descriptor goes): the path its
// link names when that is the same file (then the loader opens that), else
// droidroot's own open of it, and the link's text, which /proc/self/exe
// shows; "" when proc is no symlink.
func heldExecPath(c *tracer.Call, proc string) (host, text string, errno unix.Errno) {
	target, err := readlinkHost(proc)
	if err != nil {
		return "", "", 0
	}
	var lst, fst unix.Stat_t
	if err := unix.Stat(proc, &fst); err != nil {
		return "", "", err.(unix.Errno)
	}
	if strings.HasPrefix(target, "/") && unix.Stat(target, &lst) == nil && lst.Dev == fst.Dev && lst.Ino == fst.Ino {
		return target, guestOrHost(c, target), 0
	}
	f, err := os.OpenFile(proc, os.O_RDONLY, 0)
	if err != nil {
		if e, ok := err.(*os.PathError); ok {
			if en, ok := e.Err.(unix.Errno); ok {
				return "", "", en
			}
		}
		return "", "", unix.EACCES
	}
	e := emulationOf(c)
	if e == &noEmulation {
		f.Close()
		return "", "", unix.ENOENT // no run to hold it for (a table used without its Emulation)
	}
	if e.execHeld == nil {
		e.execHeld = map[int]*heldFile{}
	}
	if old := e.execHeld[c.Pid()]; old != nil {
		old.f.Close()
	}
	e.execHeld[c.Pid()] = &heldFile{f: f}
	return "/proc/" + strconv.Itoa(os.Getpid()) + "/fd/" + strconv.Itoa(int(f.Fd())), target, 0
}

// heldFile is a file heldExec keeps open for a process's loader; used says
// its exec happened (the next one, or the process's end, closes it).
type heldFile struct {
	f    *os.File
	used bool
}

// dropHeld closes the file held for process pid's loader, if any.
func (e *Emulation) dropHeld(pid int) {
	if h := e.execHeld[pid]; h != nil {
		h.f.Close()
		delete(e.execHeld, pid)
	}
}

// execEvents closes the files heldExec keeps once their loader is done with
// them: at the process's next exec after the one they were for, or its end.
func (e *Emulation) execEvents(ev *tracer.Event) {
	if ev.Kind == tracer.EventThreadGone {
		delete(e.execGrew, ev.Tid)
	}
	h := e.execHeld[ev.Pid]
	if h == nil {
		return
	}
	switch ev.Kind {
	case tracer.EventExec:
		if !h.used {
			h.used = true
			return
		}
	case tracer.EventProcessGone:
	default:
		return
	}
	e.dropHeld(ev.Pid)
}

// openExec opens host for exec with the kernel's checks: a regular file
// with execute permission.
func openExec(host string) (*os.File, unix.Errno) {
	var st unix.Stat_t
	if errno := execCheck(host, &st); errno != 0 {
		return nil, errno
	}
	fd, errno := openRead(host)
	if errno != 0 {
		return nil, errno
	}
	return os.NewFile(uintptr(fd), host), 0
}

// execCheck makes the kernel's checks of a file exec'd: a regular file with
// execute permission; st gets its stat.
func execCheck(host string, st *unix.Stat_t) unix.Errno {
	if err := unix.Stat(host, st); err != nil {
		return err.(unix.Errno)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return unix.EACCES
	}
	if err := unix.Access(host, unix.X_OK); err != nil {
		return err.(unix.Errno)
	}
	return 0
}

// openRead opens host read-only and close-on-exec. Not os.Open, which
// offers the descriptor to Go's poller (four system calls more, for a
// regular file that is never polled).
func openRead(host string) (int, unix.Errno) {
	fd, err := unix.Open(host, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		if e, ok := err.(unix.Errno); ok {
			return -1, e
		}
		return -1, unix.EACCES
	}
	return fd, 0
}

// parseShebang splits a #! line as fs/binfmt_script.c's load_script does,
// step by step, on the kernel's buffer (bprm->buf: the file's first
// binprmBufSize bytes, zero-padded): the line ends at the first newline
// before any NUL, else (nothing then says the line is complete) at the
// buffer's last byte, which is never part of it, and only if a blank or
// NUL follows the interpreter's name there (a name that may be truncated is
// ENOEXEC, ok false); blanks around it are dropped; the interpreter is the
// first word, up to a blank or NUL, and everything after the blanks that
// follow it one optional argument (up to a NUL). An empty interpreter name
// (a NUL right after the blanks) is the kernel's too: it opens the cwd.
func parseShebang(hd []byte) (interp, arg string, ok bool) {
	var buf [binprmBufSize]byte
	copy(buf[:], hd)
	bufEnd := binprmBufSize - 1
	spacetab := func(c byte) bool { return c == ' ' || c == '\t' }
	nextNonSpacetab := func(i, end int) int {
		for ; i < end; i++ {
			if !spacetab(buf[i]) {
				return i
			}
		}
		return -1
	}
	nextTerminator := func(i, end int) int {
		for ; i < end; i++ {
			if spacetab(buf[i]) || buf[i] == 0 {
				return i
			}
		}
		return -1
	}
	cstr := func(b []byte) string {
		if k := bytes.IndexByte(b, 0); k >= 0 {
			b = b[:k]
		}
		return string(b)
	}
	end := -1 // strnchr(buf, sizeof buf, '\n'), which stops at a NUL
	for i := 0; i < len(buf) && buf[i] != 0; i++ {
		if buf[i] == '\n' {
			end = i
			break
		}
	}
	if end < 0 {
		first := nextNonSpacetab(2, bufEnd)
		if first < 0 || nextTerminator(first, bufEnd) < 0 {
			return "", "", false
		}
		end = bufEnd
	}
	for spacetab(buf[end-1]) {
		end--
	}
	name := nextNonSpacetab(2, end)
	if name < 0 || name == end {
		return "", "", false
	}
	sep := nextTerminator(name, end)
	if sep >= 0 && buf[sep] != 0 {
		if a := nextNonSpacetab(sep, end); a >= 0 {
			return cstr(buf[name:sep]), cstr(buf[a:end]), true
		}
	}
	return cstr(buf[name:end]), "", true
}

// elfInterp validates an ELF file for this host as the kernel's ELF loader
// does (fs/binfmt_elf.c's load_elf_binary: the header and the program
// headers; the section headers, which the kernel never reads, are not
// looked at) and returns its PT_INTERP, "" if none.
func elfInterp(f io.ReaderAt) (string, unix.Errno) {
	var eh [64]byte
	if n, _ := f.ReadAt(eh[:], 0); n < len(eh) || !bytes.HasPrefix(eh[:], []byte(elf.ELFMAG)) {
		return "", unix.ENOEXEC
	}
	le := binary.LittleEndian
	typ, machine := elf.Type(le.Uint16(eh[16:])), elf.Machine(le.Uint16(eh[18:]))
	if elf.Class(eh[elf.EI_CLASS]) != elf.ELFCLASS64 || (typ != elf.ET_EXEC && typ != elf.ET_DYN) || machine != tracer.ELFMachine {
		return "", unix.ENOEXEC
	}
	phoff, phentsize, phnum := le.Uint64(eh[32:]), int(le.Uint16(eh[54:])), int(le.Uint16(eh[56:]))
	const phdrSize, maxPhdrs = 56, 65536 / 56
	if phentsize != phdrSize || phnum < 1 || phnum > maxPhdrs {
		return "", unix.ENOEXEC
	}
	if phoff > 1<<62 {
		return "", unix.EIO // past any file's end: the kernel's short read
	}
	ph := make([]byte, phnum*phdrSize)
	if n, _ := f.ReadAt(ph, int64(phoff)); n < len(ph) {
		return "", unix.EIO
	}
	for k := 0; k < phnum; k++ {
		p := ph[k*phdrSize:]
		if elf.ProgType(le.Uint32(p)) != elf.PT_INTERP {
			continue
		}
		off, size := le.Uint64(p[8:]), le.Uint64(p[32:])
		if size < 2 || size > unix.PathMax {
			return "", unix.ENOEXEC
		}
		if off > 1<<62 {
			return "", unix.EIO
		}
		b := make([]byte, size)
		if n, _ := f.ReadAt(b, int64(off)); n < len(b) {
			return "", unix.EIO
		}
		if b[len(b)-1] != 0 {
			return "", unix.ENOEXEC
		}
		return strings.TrimRight(string(b), "\x00"), 0
	}
	return "", 0
}

// fdCloexec reports whether the caller's descriptor fd is close-on-exec.
func fdCloexec(c *tracer.Call, fd int) bool {
	f, ok := fdFlags(c, fd)
	return ok && f&unix.O_CLOEXEC != 0
}

// fdFlags gives the file status flags of the caller's descriptor fd (the
// flags line of /proc/<tid>/fdinfo/<fd>, octal), and false if it cannot be
// read.
func fdFlags(c *tracer.Call, fd int) (uint64, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(c.Tid()) + "/fdinfo/" + strconv.Itoa(fd))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "flags:"); ok {
			f, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			return f, err == nil
		}
	}
	return 0, false
}

// scriptArgv is the argv the kernel gives a #! script's interpreter
// (load_script): the interpreter, its optional argument and the script's
// name in place of argv[0], then the rest of argv.
func scriptArgv(argv []execArg, interp, arg, scriptName string) []execArg {
	na := []execArg{{s: interp}}
	if arg != "" {
		na = append(na, execArg{s: arg})
	}
	na = append(na, execArg{s: scriptName})
	if len(argv) > 1 {
		na = append(na, argv[1:]...)
	}
	return na
}

// argvErrno is readArgv's error as the call's errno: E2BIG, else EFAULT.
func argvErrno(err error) unix.Errno {
	if err == unix.E2BIG {
		return unix.E2BIG
	}
	return unix.EFAULT
}

// execArg is one string of the argv an exec hands the kernel: one droidroot
// pushes (s), or, where addr is not 0, one of the guest's own argv, left
// where it is for the kernel to read (a #! line's rewrite keeps the
// arguments after argv[0], and a find -exec or xargs passes thousands).
type execArg struct {
	s    string
	addr uint64
}

// strArgs makes execArgs droidroot pushes of ss.
func strArgs(ss ...string) []execArg {
	out := make([]execArg, len(ss))
	for i, s := range ss {
		out[i].s = s
	}
	return out
}

// maxArgStrlen is the kernel's MAX_ARG_STRLEN: a longer argument is E2BIG.
const maxArgStrlen = 32 * 4096

// maxArgvPointers bounds how far readArgv reads an argv without its NULL:
// more pointers than the kernel takes (argv and envp share at most 6 MiB
// of pointers and strings: prepare_arg_pages), so E2BIG is its answer too.
const maxArgvPointers = 1 << 20

// readArgv reads the guest's NULL-terminated argv pointer array at addr, a
// page at a time, and the string of argv[0], which a #! line or the
// emulator replaces and the kernel still reads first (a pointer there it
// cannot read is EFAULT, as natively). The other strings stay in guest
// memory (execArg.addr) and only the kernel reads them.
func readArgv(c *tracer.Call, addr uint64) ([]execArg, error) {
	var out []execArg
	if addr == 0 {
		return out, nil
	}
	buf := make([]byte, 4096)
	for len(out) < maxArgvPointers {
		a := addr + uint64(8*len(out))
		b := buf[:4096-int(a%4096)]
		if err := c.ReadMem(a, b); err != nil {
			return nil, err
		}
		for i := 0; i+8 <= len(b); i += 8 {
			p := binary.LittleEndian.Uint64(b[i:])
			if p == 0 {
				if len(out) > 0 {
					if err := readArg0(c, &out[0]); err != nil {
						return nil, err
					}
				}
				return out, nil
			}
			out = append(out, execArg{addr: p})
		}
	}
	return nil, unix.E2BIG
}

// readArg0 reads the string of an argv's first argument into it, leaving
// its address, or E2BIG where the kernel finds it longer than it takes.
func readArg0(c *tracer.Call, a *execArg) error {
	s, err := c.ReadPath(a.addr)
	if err != nil {
		// Arguments may be longer than PATH_MAX; read in full.
		if s, err = readLongString(c, a.addr); err != nil {
			return err
		}
	}
	if len(s) >= maxArgStrlen {
		return unix.E2BIG
	}
	a.s = s
	return nil
}

func readLongString(c *tracer.Call, addr uint64) (string, error) {
	var sb []byte
	chunk := make([]byte, 4096)
	for len(sb) < 1<<21 {
		n := 4096 - int((addr+uint64(len(sb)))%4096)
		if err := c.ReadMem(addr+uint64(len(sb)), chunk[:n]); err != nil {
			return "", err
		}
		if i := bytes.IndexByte(chunk[:n], 0); i >= 0 {
			return string(append(sb, chunk[:i]...)), nil
		}
		sb = append(sb, chunk[:n]...)
	}
	return "", unix.E2BIG
}

// pushArgv writes the strings of argv droidroot makes (with one write) and
// the pointer array, and returns the array's address. need is how many
// bytes they take, what a failed push needs below the stack pointer.
func pushArgv(c *tracer.Call, argv []execArg) (addr uint64, need int, err error) {
	var ss []string
	for _, a := range argv {
		if a.addr == 0 {
			ss = append(ss, a.s)
			need += len(a.s) + 1 + 15
		}
	}
	ptrs := make([]byte, 8*(len(argv)+1))
	need += len(ptrs) + 15
	pushed, err := c.PushStrings(ss...)
	if err != nil {
		return 0, need, err
	}
	for i, a := range argv {
		if a.addr == 0 {
			a.addr, pushed = pushed[0], pushed[1:]
		}
		binary.LittleEndian.PutUint64(ptrs[8*i:], a.addr)
	}
	addr, err = c.PushInput(ptrs)
	return addr, need, err
}

// growStack makes the calling thread write 16 bytes at low itself (an
// injected clock_gettime into it) and then makes its call nr again. Since
// Linux 6.5 a write from outside the process (process_vm_writev, ptrace)
// no longer grows a stack mapping down, and a push below the stack
// pointer fails where the thread's stack was never that deep (an argv of
// thousands of arguments given a #! line's interpreter); the thread's own
// write grows it as any use of its stack does. Where even that fails (the
// stack's limit, a mapping in the way), the call gets E2BIG.
func growStack(c *tracer.Call, low uint64, nr int) {
	e := emulationOf(c)
	if e.execGrew[c.Tid()] {
		delete(e.execGrew, c.Tid())
		c.Fail(unix.E2BIG) // grown and still short
		return
	}
	if e.execGrew == nil {
		e.execGrew = map[int]bool{}
	}
	e.execGrew[c.Tid()] = true
	clk, _ := nativeNr("clock_gettime")
	c.Run(clk, [6]uint64{unix.CLOCK_MONOTONIC, low &^ 15}, func(c *tracer.Call, ret int64) {
		if ret < 0 {
			delete(emulationOf(c).execGrew, c.Tid())
			c.Fail(unix.E2BIG)
			return
		}
		c.Reissue(nr)
	})
}

// execHandler handles execve and execveat: the kernel execs the loader,
// which maps the guest program and its interpreter from the rootfs.
func execHandler(at bool) tracer.Handler {
	return tracer.Handler{Enter: func(c *tracer.Call) {
		nr := c.Nr()
		dirfdArg, pathArgI, argvArg, envpArg := -1, 0, 1, 2
		if at {
			dirfdArg, pathArgI, argvArg, envpArg = 0, 1, 2, 3
		}
		guest, err := c.ReadPath(c.Arg(pathArgI))
		if err != nil {
			c.Fail(err.(unix.Errno))
			return
		}
		var flags uint64
		if at {
			flags = c.Arg(4)
		}
		if guest == "" && flags&unix.AT_EMPTY_PATH == 0 {
			c.Fail(unix.ENOENT) // getname, before anything else
			return
		}
		if flags&^uint64(unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH) != 0 {
			c.Fail(unix.EINVAL) // do_open_execat
			return
		}
		// The name the kernel execs under (alloc_bprm): AT_EXECFN, the
		// script's name for its interpreter and, through AT_EXECFN, the
		// loader's comm.
		execfn, inaccessible, host0 := guest, false, ""
		if at && !strings.HasPrefix(guest, "/") && int32(c.Arg(0)) != unix.AT_FDCWD {
			fd := int(int32(c.Arg(0)))
			execfn = "/dev/fd/" + strconv.Itoa(fd)
			if guest != "" {
				execfn += "/" + guest
			}
			inaccessible = fdCloexec(c, fd)
		}
		if guest == "" {
			// execveat(fd, "", AT_EMPTY_PATH): the file open as fd, never
			// followed further: a symlink (O_PATH|O_NOFOLLOW) is ELOOP, a
			// directory (the cwd for AT_FDCWD) or anything not regular EACCES.
			fd := int(int32(c.Arg(0)))
			if int32(fd) == unix.AT_FDCWD {
				c.Fail(unix.EACCES)
				return
			}
			var st unix.Stat_t
			if err := unix.Stat(procFd(c.Tid(), fd), &st); err != nil {
				c.Fail(unix.EBADF)
				return
			}
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFLNK:
				c.Fail(unix.ELOOP)
				return
			case unix.S_IFREG:
			default:
				c.Fail(unix.EACCES)
				return
			}
			g, errno := fdFilePath(c, fd)
			if errno != 0 {
				c.Fail(errno)
				return
			}
			guest, dirfdArg = g, -1
			if host0, errno = heldExec(c, fd); errno != 0 {
				c.Fail(errno)
				return
			}
		}
		if flags&unix.AT_SYMLINK_NOFOLLOW != 0 {
			if h, errno := resolveAt(c, dirfdArg, guest, false); errno == 0 {
				var st unix.Stat_t
				if unix.Lstat(h, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
					c.Fail(unix.ELOOP)
					return
				}
			}
		}
		plan, errno := planExec(c, dirfdArg, guest, host0, execfn, inaccessible, c.Arg(argvArg))
		if errno != 0 {
			emulationOf(c).dropHeld(c.Pid()) // no loader will open it
			c.Fail(errno)
			return
		}
		loaderAddr, err := c.PushString(c.Loader())
		if err != nil {
			c.Fail(unix.EFAULT)
			return
		}
		argvAddr := c.Arg(argvArg)
		if plan.argv != nil {
			var need int
			if argvAddr, need, err = pushArgv(c, plan.argv); err != nil {
				emulationOf(c).dropHeld(c.Pid())
				growStack(c, c.PushAddr(need), nr)
				return
			}
		}
		delete(emulationOf(c).execGrew, c.Tid())
		envp := c.Arg(envpArg)
		if at {
			nr, _ := nativeNr("execve")
			c.SetNr(nr)
		}
		c.SetArg(0, loaderAddr)
		c.SetArg(1, argvAddr)
		c.SetArg(2, envp)
		c.SetExec(&tracer.ExecPlan{ProgramHost: plan.program, InterpHost: plan.interp, ExecFn: execfn, Exe: plan.exe,
			Wakes: emulationOf(c).waitv.wakesOf(plan.interpGuest)})
	}}
}
