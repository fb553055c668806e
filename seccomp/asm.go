package seccomp

import (
	"fmt"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// bpfMaxInsns is BPF_MAXINSNS, the longest classic BPF program the kernel
// accepts.
const bpfMaxInsns = 4096

// maxCondSkip is the farthest a conditional jump reaches: its jt and jf
// offsets are 8 bits.
const maxCondSkip = 255

// The program is assembled from nodes whose jumps name their targets by
// label; resolve lays them out and computes the offsets.

type nodeKind uint8

const (
	kindPlain nodeKind = iota // a load or an ALU instruction, no jump
	kindRet                   // ret #k
	kindJa                    // ja to jt
	kindCond                  // j<cond> #k, jt, jf
)

type node struct {
	kind   nodeKind
	plain  bpf.Instruction // kindPlain
	k      uint32          // kindRet: return value; kindCond: operand
	cond   bpf.JumpTest    // kindCond: JumpEqual, JumpGreaterThan, JumpGreaterOrEqual or JumpBitsSet
	jt, jf *label          // kindJa: jt; kindCond: both
}

// A label names the node it is bound to. Once bound it never changes.
type label struct{ n *node }

// assembler collects nodes in program order.
type assembler struct {
	nodes   []*node
	pending []*label // labels bound to the next emitted node
}

func (a *assembler) newLabel() *label { return &label{} }

// bind binds l to the next node emitted.
func (a *assembler) bind(l *label) { a.pending = append(a.pending, l) }

func (a *assembler) emit(n *node) {
	for _, l := range a.pending {
		l.n = n
	}
	a.pending = a.pending[:0]
	a.nodes = append(a.nodes, n)
}

// load emits "ld [off]" (A = 32-bit word of seccomp_data at off).
func (a *assembler) load(off uint32) {
	a.emit(&node{kind: kindPlain, plain: bpf.LoadAbsolute{Off: off, Size: 4}})
}

func (a *assembler) ret(k uint32) { a.emit(&node{kind: kindRet, k: k}) }

func (a *assembler) ja(l *label) { a.emit(&node{kind: kindJa, jt: l}) }

// jump emits a conditional jump to jt if A <cond> k, else to jf. A nil
// target means the instruction that follows.
func (a *assembler) jump(cond bpf.JumpTest, k uint32, jt, jf *label) {
	var next *label
	if jt == nil || jf == nil {
		next = a.newLabel()
	}
	if jt == nil {
		jt = next
	}
	if jf == nil {
		jf = next
	}
	a.emit(&node{kind: kindCond, cond: cond, k: k, jt: jt, jf: jf})
	if next != nil {
		a.bind(next)
	}
}

// resolve lays the nodes out and returns the program.
//
// A conditional jump whose target is more than 255 instructions ahead is
// redirected to an equivalent instruction within reach (a "ret" with the
// same value, or a "ja" to the same target), or else to one inserted right
// after it: a copy of the target if that is a "ret", a "ja" to it otherwise
// ("ja" has a 32-bit offset). Insertions only move code further apart, and
// every jump gets at most two instructions of its own, so this ends. On
// any path each conditional jump adds at most one "ja".
func (a *assembler) resolve() ([]bpf.Instruction, error) {
	if len(a.pending) != 0 {
		return nil, fmt.Errorf("seccomp: internal error: label bound past the end of the program")
	}
	if len(a.nodes) == 0 || a.nodes[len(a.nodes)-1].kind != kindRet {
		return nil, fmt.Errorf("seccomp: internal error: program does not end with ret")
	}
	for {
		index := make(map[*node]int, len(a.nodes))
		for i, n := range a.nodes {
			index[n] = i
		}
		inserted := false
	scan:
		for i, n := range a.nodes {
			if n.kind != kindCond {
				continue
			}
			for _, side := range []**label{&n.jt, &n.jf} {
				target := (*side).n
				t, ok := index[target]
				if !ok {
					return nil, fmt.Errorf("seccomp: internal error: jump at %d to an unbound label", i)
				}
				off := t - i - 1
				if off < 0 {
					return nil, fmt.Errorf("seccomp: internal error: backward jump at %d", i)
				}
				if off <= maxCondSkip {
					continue
				}
				if j := a.equivalentWithin(i, target); j >= 0 {
					*side = &label{n: a.nodes[j]}
					continue
				}
				var c *node
				if target.kind == kindRet {
					c = &node{kind: kindRet, k: target.k}
				} else {
					c = &node{kind: kindJa, jt: &label{n: target}}
				}
				a.nodes = append(a.nodes[:i+1], append([]*node{c}, a.nodes[i+1:]...)...)
				*side = &label{n: c}
				inserted = true
				break scan
			}
		}
		if !inserted {
			break
		}
		if len(a.nodes) > bpfMaxInsns {
			break
		}
	}
	if len(a.nodes) > bpfMaxInsns {
		return nil, fmt.Errorf("%w: %d instructions", errTooLong, len(a.nodes))
	}

	index := make(map[*node]int, len(a.nodes))
	for i, n := range a.nodes {
		index[n] = i
	}
	prog := make([]bpf.Instruction, len(a.nodes))
	for i, n := range a.nodes {
		switch n.kind {
		case kindPlain:
			prog[i] = n.plain
		case kindRet:
			prog[i] = bpf.RetConstant{Val: n.k}
		case kindJa:
			prog[i] = bpf.Jump{Skip: uint32(index[n.jt.n] - i - 1)}
		case kindCond:
			prog[i] = bpf.JumpIf{
				Cond:      n.cond,
				Val:       n.k,
				SkipTrue:  uint8(index[n.jt.n] - i - 1),
				SkipFalse: uint8(index[n.jf.n] - i - 1),
			}
		}
	}
	return prog, nil
}

// equivalentWithin returns the index of the nearest node a conditional jump
// at i can reach that does what target does, or -1.
func (a *assembler) equivalentWithin(i int, target *node) int {
	for j := i + 1; j < len(a.nodes) && j-i-1 <= maxCondSkip; j++ {
		n := a.nodes[j]
		switch {
		case target.kind == kindRet && n.kind == kindRet && n.k == target.k:
			return j
		case n.kind == kindJa && n.jt.n == target:
			return j
		}
	}
	return -1
}

// Assemble converts prog to the kernel's struct sock_filter form, ready for
// Install.
func Assemble(prog []bpf.Instruction) ([]unix.SockFilter, error) {
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return nil, fmt.Errorf("seccomp: assemble: %w", err)
	}
	if len(raw) == 0 || len(raw) > bpfMaxInsns {
		return nil, fmt.Errorf("seccomp: assemble: program of %d instructions (want 1..%d)", len(raw), bpfMaxInsns)
	}
	out := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		out[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return out, nil
}
