package fastpath

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// stackBudget is the most stack the library's own frames may take in one call, from an exported
// function down to its deepest callee. Its frames live on the guest's stack: a thread's made
// with PTHREAD_STACK_MIN (16 KiB on x86_64) or a signal handler's alternate stack (the
// kernel's frame takes up to 3.4 KiB of it with AVX-512) must still hold the guest's own frames
// and glibc's beside the library's. test/progs/stackprobe.c (e2e TestFastPathSmallStack) runs
// the calls on such stacks.
const stackBudget = 9 * 1024

// TestStackBudget builds fastpath.c with GCC's -fstack-usage and -fcallgraph-info (with the
// Makefile's FASTPATH_CFLAGS, for each architecture whose compiler is here) and checks that no
// call chain from an exported function takes more than stackBudget bytes of the library's
// frames. Calls into libc and through pointers are not in the graph: their frames are the
// guest's own cost, as natively.
func TestStackBudget(t *testing.T) {
	repo, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	mk, err := os.ReadFile(filepath.Join(repo, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	var common []string
	for _, v := range []string{"FASTPATH_CFLAGS", "CSRC_CFLAGS"} {
		f := makeVar(t, mk, v)
		for _, a := range f {
			if a != "-shared" { // an object is enough for the graph
				common = append(common, strings.ReplaceAll(a, "$(CURDIR)", repo))
			}
		}
	}
	ran := 0
	for _, tc := range []struct{ cc, arch string }{
		{"x86_64-linux-gnu-gcc", "amd64"},
		{"aarch64-linux-gnu-gcc", "arm64"},
	} {
		if _, err := exec.LookPath(tc.cc); err != nil {
			continue
		}
		ran++
		t.Run(tc.cc, func(t *testing.T) {
			dir := t.TempDir()
			args := append(append([]string{}, common...), optionalMakeVar(mk, "FASTPATH_CFLAGS_"+tc.arch)...)
			args = append(args, "-fstack-usage", "-fcallgraph-info=su", "-c", "-o", filepath.Join(dir, "fp.o"), "fastpath/csrc/fastpath.c")
			cmd := exec.Command(tc.cc, args...)
			cmd.Dir = repo
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s %v: %v\n%s", tc.cc, args, err, out)
			}
			g, err := readCallGraph(filepath.Join(dir, "fp.ci"))
			if err != nil {
				t.Fatal(err)
			}
			if len(g.exported) < 50 {
				t.Fatalf("%d exported functions in the call graph: want the library's wrappers", len(g.exported))
			}
			worst, chain := 0, []string(nil)
			memo := map[string]depthOf{}
			for _, f := range g.exported {
				if d, c := g.depth(f, map[string]bool{}, memo); d > worst {
					worst, chain = d, c
				}
			}
			t.Logf("deepest: %d bytes: %s", worst, strings.Join(chain, " > "))
			if worst > stackBudget {
				t.Errorf("a call takes %d bytes of the library's stack frames, more than %d: %s", worst, stackBudget, strings.Join(chain, " > "))
			}
		})
	}
	if ran == 0 {
		t.Skip("no x86_64-linux-gnu-gcc or aarch64-linux-gnu-gcc")
	}
}

// makeVar returns the words of Makefile variable name (a `NAME := ...` line and its
// continuations), failing t where mk has none.
func makeVar(t *testing.T, mk []byte, name string) []string {
	t.Helper()
	v := optionalMakeVar(mk, name)
	if v == nil {
		t.Fatalf("no %s in the Makefile", name)
	}
	return v
}

// optionalMakeVar is makeVar's lookup: nil where mk does not set name.
func optionalMakeVar(mk []byte, name string) []string {
	joined := strings.ReplaceAll(string(mk), "\\\n", " ")
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` *[:?]?= *(.*)$`).FindStringSubmatch(joined)
	if m == nil {
		return nil
	}
	return strings.Fields(m[1])
}

// callGraph is GCC's -fcallgraph-info for one file: each function's frame, its callees, and
// the functions the library exports (visible: wrappers of libc's).
type callGraph struct {
	frame    map[string]int
	calls    map[string][]string
	name     map[string]string
	exported []string
}

var (
	cgNode = regexp.MustCompile(`^node: \{ title: "([^"]+)" label: "([^\\"]+)\\n[^\\"]*\\n(\d+) bytes \(([a-z,]+)\)`)
	cgEdge = regexp.MustCompile(`^edge: \{ sourcename: "([^"]+)" targetname: "([^"]+)"`)
)

// readCallGraph reads a .ci file. A frame GCC reports as "dynamic" (a variable-length array it
// cannot bound) is counted with fastpath.c's FP_HOST_MAX more, its arrays' bound.
func readCallGraph(path string) (*callGraph, error) {
	src, err := os.ReadFile("csrc/fastpath.c")
	if err != nil {
		return nil, err
	}
	m := regexp.MustCompile(`(?m)^#define FP_HOST_MAX (\d+)$`).FindSubmatch(src)
	if m == nil {
		return nil, fmt.Errorf("no FP_HOST_MAX in fastpath.c")
	}
	hostMax, _ := strconv.Atoi(string(m[1]))
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	g := &callGraph{frame: map[string]int{}, calls: map[string][]string{}, name: map[string]string{}}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if m := cgNode.FindStringSubmatch(sc.Text()); m != nil {
			n, _ := strconv.Atoi(m[3])
			if m[4] == "dynamic" {
				n += hostMax
			}
			g.frame[m[1]] = n
			g.name[m[1]] = m[2]
		} else if m := cgEdge.FindStringSubmatch(sc.Text()); m != nil {
			g.calls[m[1]] = append(g.calls[m[1]], m[2])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	// Exported: the names fastpath.c defines with EXPORT, found in its source.
	exp := regexp.MustCompile(`(?m)^EXPORT [^(]*?\b(\w+)\(`)
	names := map[string]bool{}
	for _, m := range exp.FindAllStringSubmatch(string(src), -1) {
		names[m[1]] = true
	}
	for id, n := range g.name {
		if names[n] {
			g.exported = append(g.exported, id)
		}
	}
	return g, nil
}

// depthOf is a function's depth and its chain, remembered.
type depthOf struct {
	n     int
	chain []string
}

// depth is the most stack a call of f takes in the library's frames, and the chain that
// takes it; a call back into a function already on the chain (recursion) adds nothing.
func (g *callGraph) depth(f string, on map[string]bool, memo map[string]depthOf) (int, []string) {
	if on[f] {
		return 0, nil
	}
	if d, ok := memo[f]; ok {
		return d.n, d.chain
	}
	on[f] = true
	defer delete(on, f)
	best, chain := 0, []string(nil)
	for _, c := range g.calls[f] {
		if d, ch := g.depth(c, on, memo); d > best {
			best, chain = d, ch
		}
	}
	d := depthOf{g.frame[f] + best, append([]string{g.name[f] + "=" + strconv.Itoa(g.frame[f])}, chain...)}
	memo[f] = d
	return d.n, d.chain
}
