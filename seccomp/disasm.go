package seccomp

import (
	"fmt"
	"sort"
	"strings"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Disassemble returns prog as text, one numbered instruction per line with
// absolute jump targets. Comments name the seccomp_data field a load reads,
// the ABI an arch test selects, the system call a number test compares
// against (when the ABI is known on every path to it), and the meaning of
// each return value.
func Disassemble(prog []bpf.Instruction) string {
	facts := flow(prog)
	var sb strings.Builder
	width := len(fmt.Sprint(len(prog) - 1))
	for pc, ins := range prog {
		text, comment := disasmOne(pc, ins, facts[pc])
		line := fmt.Sprintf("%*d  %s", width, pc, text)
		if comment != "" {
			line = fmt.Sprintf("%-44s ; %s", line, comment)
		}
		sb.WriteString(line)
		sb.WriteByte('\n')
	}
	return sb.String()
}

// What the accumulator holds.
const (
	accUnknown = iota
	accNr
	accArch
	accOther
)

// fact is what is known at an instruction on every path reaching it.
type fact struct {
	reached bool
	acc     int    // accUnknown, accNr, accArch or accOther
	arch    uint32 // known seccomp_data.arch, if archKnown
	archOK  bool
	bit     int // -1 unknown, 0 nr has no x32 bit, 1 nr has it
}

func (f fact) merge(g fact) fact {
	if !f.reached {
		return g
	}
	if f.acc != g.acc {
		f.acc = accUnknown
	}
	if !g.archOK || f.arch != g.arch {
		f.archOK = false
	}
	if f.bit != g.bit {
		f.bit = -1
	}
	return f
}

// flow computes facts by one forward pass (classic BPF jumps only forward).
func flow(prog []bpf.Instruction) []fact {
	facts := make([]fact, len(prog)+1)
	if len(prog) == 0 {
		return facts
	}
	facts[0] = fact{reached: true, bit: -1}
	to := func(pc int, f fact) {
		if pc >= 0 && pc < len(facts) {
			facts[pc] = facts[pc].merge(f)
		}
	}
	for pc, ins := range prog {
		f := facts[pc]
		if !f.reached {
			continue
		}
		switch ins := ins.(type) {
		case bpf.LoadAbsolute:
			g := f
			switch {
			case ins.Size == 4 && ins.Off == offNr:
				g.acc = accNr
			case ins.Size == 4 && ins.Off == offArch:
				g.acc = accArch
			default:
				g.acc = accOther
			}
			to(pc+1, g)
		case bpf.Jump:
			to(pc+1+int(ins.Skip), f)
		case bpf.JumpIf:
			t, e := f, f
			switch {
			case f.acc == accArch && ins.Cond == bpf.JumpEqual:
				t.arch, t.archOK = ins.Val, true
			case f.acc == accNr && ins.Cond == bpf.JumpBitsSet && ins.Val == x32SyscallBit:
				t.bit, e.bit = 1, 0
			}
			to(pc+1+int(ins.SkipTrue), t)
			to(pc+1+int(ins.SkipFalse), e)
		case bpf.RetA, bpf.RetConstant:
		default:
			g := f
			g.acc = accUnknown
			to(pc+1, g)
		}
	}
	return facts[:len(prog)]
}

// abi returns the ABI selected on every path to f, or nil.
func (f fact) abi() *ABI {
	if !f.archOK {
		return nil
	}
	var found *ABI
	for _, a := range allABIs {
		if a.AuditArch != f.arch {
			continue
		}
		switch {
		case a.NrBit != 0 && f.bit == 1, a.NrBit == 0 && f.bit == 0:
			return a
		case a.NrBit == 0 && f.bit == -1:
			found = a
		}
	}
	if f.bit == -1 && f.arch == auditArchX86_64 {
		return nil // x86_64 or x32: do not guess
	}
	return found
}

func disasmOne(pc int, ins bpf.Instruction, f fact) (text, comment string) {
	if !f.reached {
		comment = "unreachable"
	}
	add := func(s string) {
		if comment != "" {
			comment += "; "
		}
		comment += s
	}
	target := func(skip uint32) int { return pc + 1 + int(skip) }
	switch ins := ins.(type) {
	case bpf.LoadAbsolute:
		text = fmt.Sprintf("ld   [%d]", ins.Off)
		if ins.Size != 4 {
			text = fmt.Sprintf("ld%d  [%d]", ins.Size*8, ins.Off)
		}
		add(fieldName(ins.Off))
	case bpf.RetConstant:
		text = fmt.Sprintf("ret  #%#x", ins.Val)
		add(retName(ins.Val))
	case bpf.Jump:
		text = fmt.Sprintf("ja   %d", target(ins.Skip))
	case bpf.JumpIf:
		op := map[bpf.JumpTest]string{
			bpf.JumpEqual: "jeq", bpf.JumpNotEqual: "jne", bpf.JumpGreaterThan: "jgt",
			bpf.JumpLessThan: "jlt", bpf.JumpGreaterOrEqual: "jge", bpf.JumpLessOrEqual: "jle",
			bpf.JumpBitsSet: "jset", bpf.JumpBitsNotSet: "jnset",
		}[ins.Cond]
		text = fmt.Sprintf("%-4s #%#x, %d, %d", op, ins.Val, target(uint32(ins.SkipTrue)), target(uint32(ins.SkipFalse)))
		switch f.acc {
		case accArch:
			if ins.Cond == bpf.JumpEqual {
				add(archName(ins.Val))
			}
		case accNr:
			if ins.Cond == bpf.JumpBitsSet && ins.Val == x32SyscallBit {
				add("x32 (X32_SYSCALL_BIT)")
			} else if abi := f.abi(); abi != nil && ins.Val >= abi.NrBit {
				nr := int(ins.Val - abi.NrBit)
				if name := abi.name(nr); name != "" {
					add(fmt.Sprintf("%s %s (%d)", abi.Name, name, nr))
				} else {
					add(fmt.Sprintf("%s %d", abi.Name, nr))
				}
			}
		}
	default:
		text = fmt.Sprint(ins)
	}
	return text, comment
}

func fieldName(off uint32) string {
	switch {
	case off == offNr:
		return "nr"
	case off == offArch:
		return "arch"
	case off == offIPLow:
		return "instruction_pointer (low)"
	case off == offIPHigh:
		return "instruction_pointer (high)"
	case off >= offArgs && off < sizeData:
		half := "low"
		if (off-offArgs)%8 == 4 {
			half = "high"
		}
		return fmt.Sprintf("args[%d] (%s)", (off-offArgs)/8, half)
	}
	return "out of seccomp_data"
}

func archName(v uint32) string {
	var names []string
	for _, a := range allABIs {
		if a.AuditArch == v && a.NrBit == 0 {
			names = append(names, a.Name)
		}
	}
	if len(names) == 0 {
		return fmt.Sprintf("unknown arch %#x", v)
	}
	sort.Strings(names)
	return "AUDIT_ARCH " + strings.Join(names, ", ")
}

func retName(v uint32) string {
	data := v & retData
	switch v &^ retData {
	case retAllow:
		return "ALLOW"
	case retTrace:
		switch data {
		case DataEntry:
			return "TRACE entry"
		case DataExit:
			return "TRACE exit"
		}
		return fmt.Sprintf("TRACE data %#x", data)
	case retTrap:
		switch data {
		case DataUnsupportedABI:
			return "TRAP unsupported ABI"
		case DataUnknownArch:
			return "TRAP unknown arch"
		}
		if data != 0 {
			return fmt.Sprintf("TRAP data %#x", data)
		}
		return "TRAP"
	case retErrno:
		return "ERRNO " + errnoName(unix.Errno(data))
	}
	return ""
}
