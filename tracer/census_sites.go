package tracer

import (
	"bufio"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/droidroot/droidroot/seccomp"
)

// Call sites of the census (DROIDROOT_STOPS=sites): each stop that is a
// call is also counted by where the call was made, the syscall
// instruction's file and offset (with the nearest symbol before it that the
// file names: in a stripped file, the nearest exported one, which may not
// be the function), and the code it returns to (callerOf: a leaf wrapper's
// return address; a guess, marked "?" where it names no code of a file). Which
// library function makes the calls that still stop is what decides whether
// a preloaded library can answer them (a wrapper it can replace) or not
// (ld.so's and glibc's internal calls). Each stop reads the process's
// /proc/<tid>/maps: a developer's tool, slow.

// siteKey is one row of the call-site census.
type siteKey struct {
	kind   string
	nr     int
	site   string
	caller string
}

// mapping is one file mapping of /proc/<tid>/maps.
type mapping struct {
	lo, hi, off uint64
	exec        bool // mapped executable
	path        string
}

// parseMaps reads the file mappings of a /proc/<tid>/maps text.
func parseMaps(r io.Reader) []mapping {
	var ms []mapping
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 6 || !strings.HasPrefix(f[5], "/") {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		var m mapping
		var err1, err2, err3 error
		m.lo, err1 = strconv.ParseUint(lo, 16, 64)
		m.hi, err2 = strconv.ParseUint(hi, 16, 64)
		m.off, err3 = strconv.ParseUint(f[2], 16, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			continue
		}
		m.exec = strings.Contains(f[1], "x")
		m.path = strings.Join(f[5:], " ")
		ms = append(ms, m)
	}
	return ms
}

// fileSym is a symbol of a mapped file, by its file offset.
type fileSym struct {
	off  uint64
	name string
}

// symbolizer names addresses of traced processes: file and offset, and the
// nearest symbol before it (the file's .symtab or .dynsym, cached by path).
type symbolizer struct {
	syms map[string][]fileSym
}

// fileSyms returns the symbols of the ELF file at path, sorted by file
// offset (none when it cannot be read).
func (s *symbolizer) fileSyms(path string) []fileSym {
	if v, ok := s.syms[path]; ok {
		return v
	}
	if s.syms == nil {
		s.syms = map[string][]fileSym{}
	}
	var out []fileSym
	if f, err := elf.Open(path); err == nil {
		syms, _ := f.Symbols()
		dyn, _ := f.DynamicSymbols()
		for _, sym := range append(syms, dyn...) {
			if elf.ST_TYPE(sym.Info) != elf.STT_FUNC || sym.Value == 0 {
				continue
			}
			// The file offset of the symbol's address: its segment's.
			for _, p := range f.Progs {
				if p.Type == elf.PT_LOAD && sym.Value >= p.Vaddr && sym.Value < p.Vaddr+p.Memsz {
					out = append(out, fileSym{sym.Value - p.Vaddr + p.Off, sym.Name})
					break
				}
			}
		}
		f.Close()
	}
	// Of the names at one offset (glibc's aliases: __getpid, getpid) the
	// lookup takes the last: the public one, the fewest leading
	// underscores, then the shortest.
	worse := func(a, b string) bool {
		ua, ub := len(a)-len(strings.TrimLeft(a, "_")), len(b)-len(strings.TrimLeft(b, "_"))
		if ua != ub {
			return ua > ub
		}
		if len(a) != len(b) {
			return len(a) > len(b)
		}
		return a > b
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].off != out[j].off {
			return out[i].off < out[j].off
		}
		return worse(out[i].name, out[j].name)
	})
	s.syms[path] = out
	return out
}

// name names address a of a process with mappings ms: "libc.so.6+0x7dae6
// (_IO_file_doallocate+0x56)", or "" when no file mapping holds it (no
// executable one, with code).
func (s *symbolizer) name(ms []mapping, a uint64, code bool) string {
	for _, m := range ms {
		if a < m.lo || a >= m.hi || code && !m.exec {
			continue
		}
		off := a - m.lo + m.off
		out := fmt.Sprintf("%s+%#x", filepath.Base(m.path), off)
		syms := s.fileSyms(m.path)
		if i := sort.Search(len(syms), func(i int) bool { return syms[i].off > off }); i > 0 {
			out += fmt.Sprintf(" (%s+%#x)", syms[i-1].name, off-syms[i-1].off)
		}
		return out
	}
	return ""
}

// countSite counts a call of thread tid at pc (the syscall instruction's
// address or the one after it) whose caller may be ret.
func (c *census) countSite(kind string, nr, tid int, pc, ret uint64) {
	if c == nil || !c.sites {
		return
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", tid))
	if err != nil {
		return
	}
	ms := parseMaps(f)
	f.Close()
	site := c.sym.name(ms, pc, false)
	if site == "" {
		site = fmt.Sprintf("%#x", pc)
	}
	caller := c.sym.name(ms, ret, true)
	if caller == "" {
		caller = "?"
	}
	if c.bySite == nil {
		c.bySite = map[siteKey]int{}
	}
	c.bySite[siteKey{kind, nr, site, caller}]++
}

// maxSites bounds the call-site report.
const maxSites = 60

// reportSites prints the most frequent call sites.
func (c *census) reportSites(w io.Writer, abi *seccomp.ABI) {
	type row struct {
		k siteKey
		n int
	}
	rows := make([]row, 0, len(c.bySite))
	for k, n := range c.bySite {
		rows = append(rows, row{k, n})
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].n != rows[j].n {
			return rows[i].n > rows[j].n
		}
		a, b := rows[i].k, rows[j].k
		return a.kind+a.site+a.caller < b.kind+b.site+b.caller
	})
	if len(rows) > maxSites {
		rows = rows[:maxSites]
	}
	fmt.Fprintf(w, "droidroot: the %d most frequent call sites of those stops (DROIDROOT_STOPS=sites): call, where, returning to:\n", len(rows))
	for _, r := range rows {
		fmt.Fprintf(w, "%8d  %-8s  %-12s  %s  <-  %s\n", r.n, r.k.kind, abi.SyscallName(r.k.nr), r.k.site, r.k.caller)
	}
}
