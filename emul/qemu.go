package emul

import (
	"debug/elf"
	"os"

	"golang.org/x/sys/unix"

	"github.com/droidroot/droidroot/tracer"
)

// Foreign programs through qemu-user (-q/--qemu CMD), as termux proot's
// qemu extension: the exec of an ELF whose machine is not the host's
// becomes the exec of CMD (a host program, with its arguments) given
// "-0 ARGV0 PROGRAM ARGS...": qemu-user then loads PROGRAM, and its
// interpreter, through its own (translated) file calls, so the guest's
// paths keep working. CMD must be a static program (qemu-*-static): a
// dynamic one would look for its libraries in the guest.

// qemu is the -q configuration.
type qemu struct {
	cmd []string // host path of the emulator, then its arguments
}

// foreignELFAt is foreignELF of the file at host (false if it cannot be
// opened).
func foreignELFAt(host string) bool {
	f, err := os.Open(host)
	if err != nil {
		return false
	}
	defer f.Close()
	return foreignELF(f)
}

// foreignELF reports whether f is a 64- or 32-bit ELF of another machine.
func foreignELF(f *os.File) bool {
	ef, err := elf.NewFile(f)
	if err != nil {
		return false
	}
	return ef.Machine != tracer.ELFMachine
}

// plan runs the foreign ELF at host through the emulator; argv is the
// argument list when a #! line already changed it, else nil (read from
// argvAddr).
func (q *qemu) plan(c *tracer.Call, host string, argv []execArg, argvAddr uint64) (*execPlan, unix.Errno) {
	if argv == nil {
		var err error
		if argv, err = readArgv(c, argvAddr); err != nil {
			return nil, argvErrno(err)
		}
	}
	prog, ok := c.Mapper().ToGuest(host)
	if !ok {
		prog = host
	}
	argv0 := execArg{s: prog}
	var rest []execArg
	if len(argv) > 0 {
		argv0, rest = argv[0], argv[1:]
	}
	na := append(strArgs(q.cmd...), execArg{s: "-0"}, argv0, execArg{s: prog})
	na = append(na, rest...)
	qf, errno := openExec(q.cmd[0])
	if errno != 0 {
		return nil, errno
	}
	interp, errno := elfInterp(qf)
	qf.Close()
	if errno != 0 {
		return nil, errno
	}
	if interp != "" {
		c.Tracer().WarnOnce("qemu-dynamic", "-q %s is a dynamic program: its libraries are looked up in the guest; use a static qemu (qemu-*-static)", q.cmd[0])
	}
	return &execPlan{argv: na, program: q.cmd[0], exe: prog, interp: interp}, 0
}
