//go:build linux

package e2e

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// pySuiteGroups are the CPython test modules TestPythonSuite runs, one guest command per
// group (each well under the command timeout): the file system, paths, descriptors, archives,
// imports, terminals and child processes, about 3,700 tests written by people who know what
// the kernel answers. On arm64 (the CI's VM emulates the CPU, 10-20 times slower) the first
// group only. $DROIDROOT_PYSUITE (module names, separated by spaces or commas) runs others.
var pySuiteGroups = [][]string{
	{"test_os", "test_posix", "test_shutil", "test_pathlib", "test_glob", "test_tempfile",
		"test_stat", "test_genericpath", "test_posixpath", "test_fileio", "test_fnmatch", "test_filecmp"},
	{"test_tarfile", "test_py_compile", "test_zipimport", "test_importlib", "test_pty",
		"test_fcntl", "test_mmap"},
	{"test_subprocess"},
}

// pySuiteTest is where Debian's libpython3.11-testsuite puts the tests (test/rootfs/debian.sh
// installs it).
const pySuiteTest = "usr/lib/python3.11/test/test_os.py"

// TestPythonSuite runs CPython's own tests (Debian's libpython3.11-testsuite, in the debian
// rootfs) under the chroot oracle and under droidroot, and compares every test's outcome: ok,
// skipped and why, failed or errored. A test that fails in the chroot (a few do, as root in a
// minbase system) must fail under droidroot too; a test that passes must pass. A test whose
// outcome differs is run again alone under both, so that one slow moment of a timing test on a
// busy machine is not taken for a difference; the second difference fails.
func TestPythonSuite(t *testing.T) {
	needRoot(t)
	root := rootfs(t, "debian")
	if _, err := os.Stat(filepath.Join(root, pySuiteTest)); err != nil {
		missing(t, "the debian rootfs %s has no CPython test suite (%s): build it again with test/mkrootfs.sh debian", root, pySuiteTest)
	}
	groups := pySuiteGroups
	if runtime.GOARCH == "arm64" {
		groups = groups[:1]
	}
	if s := os.Getenv("DROIDROOT_PYSUITE"); s != "" {
		groups = [][]string{strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' })}
	}
	for _, mods := range groups {
		t.Run(strings.Join(mods, ","), func(t *testing.T) {
			want := pySuite(t, viaChroot, root, mods, nil)
			if len(want) < 10*len(mods) {
				t.Fatalf("the chroot ran %d tests of %d modules: is the suite complete?", len(want), len(mods))
			}
			got := pySuite(t, viaDroidroot, root, mods, nil)
			differ := pySuiteDiffer(want, got)
			if len(differ) == 0 {
				return
			}
			t.Logf("%d tests differ; running them again: %s", len(differ), strings.Join(differ, " "))
			want2 := pySuite(t, viaChroot, root, mods, differ)
			got2 := pySuite(t, viaDroidroot, root, mods, differ)
			for _, n := range differ {
				w, inW := want2[n]
				g, inG := got2[n]
				if !inW && !inG { // not run again (a subtest's name): the first outcomes stand
					w, g = want[n], got[n]
				}
				if w != g {
					t.Errorf("%s: chroot %q, droidroot %q", n, w, g)
				}
			}
		})
	}
}

// pySuite runs the CPython test modules mods (only the tests named by only, if any) with r in
// the debian rootfs, a fresh /tmp its working directory, and returns each test's outcome from
// regrtest's JUnit report. Subprocesses of the tests inherit HOME and the like from guestEnv.
func pySuite(t *testing.T, r runner, root string, mods, only []string) map[string]string {
	t.Helper()
	tmp := filepath.Join(t.TempDir(), "tmp")
	makeTree(t, tmp, tree{})
	if err := os.Chmod(tmp, 0o1777); err != nil {
		t.Fatal(err)
	}
	g := guest{Root: root, Binds: []string{"/proc", "/dev", "/sys", tmp + ":/tmp"}, Cwd: "/tmp",
		Timeout: max(cmdTimeout, 3*time.Minute)}
	args := []string{"python3", "-m", "test", "--junit-xml", "/tmp/junit.xml"}
	if len(only) > 0 {
		var ids []string
		for _, n := range only {
			id, _, _ := strings.Cut(n, " ") // a subtest's name is its test's and " (params)"
			ids = append(ids, id)
		}
		if err := os.WriteFile(filepath.Join(tmp, "only"), []byte(strings.Join(ids, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--matchfile", "/tmp/only")
	}
	res := r(t, g, "", append(args, mods...)...)
	data, err := os.ReadFile(filepath.Join(tmp, "junit.xml"))
	if err != nil {
		t.Fatalf("no JUnit report (%v): %s", err, res)
	}
	out, err := pySuiteOutcomes(data)
	if err != nil {
		t.Fatalf("%v: %s", err, res)
	}
	return out
}

// junitCase is one <testcase> of regrtest's JUnit report.
type junitCase struct {
	Name    string  `xml:"name,attr"`
	Skipped *string `xml:"skipped"`
	Failure *string `xml:"failure"`
	Error   *string `xml:"error"`
}

// junitReport is regrtest's JUnit report: <testsuites><testsuite><testcase>...
type junitReport struct {
	Cases []junitCase `xml:"testsuite>testcase"`
}

// pySuiteTempName matches the process ids in the names of support.TESTFN and of regrtest's
// working directory, which are in some skip reasons.
var pySuiteTempName = regexp.MustCompile(`(@test_|test_python_(?:worker_)?)[0-9]+`)

// pySuiteOutcomes reads a JUnit report: test name -> "ok", "skipped: REASON", "failure" or
// "error" (a failure's text is a traceback, with addresses and times: only its kind is
// compared).
func pySuiteOutcomes(data []byte) (map[string]string, error) {
	var rep junitReport
	if err := xml.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("reading the JUnit report: %v", err)
	}
	out := make(map[string]string, len(rep.Cases))
	for _, c := range rep.Cases {
		o := "ok"
		switch {
		case c.Error != nil:
			o = "error"
		case c.Failure != nil:
			o = "failure"
		case c.Skipped != nil:
			o = "skipped: " + pySuiteTempName.ReplaceAllString(*c.Skipped, "${1}N")
		}
		if prev, dup := out[c.Name]; dup && prev != o {
			o = prev + " / " + o // subtests: keep every outcome
		}
		out[c.Name] = o
	}
	return out, nil
}

// pySuiteDiffer lists the tests whose outcome is not the same in want and got, in order.
func pySuiteDiffer(want, got map[string]string) []string {
	var names []string
	for n, o := range want {
		if got[n] != o {
			names = append(names, n)
		}
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// TestPySuiteOutcomes checks the reading of regrtest's JUnit report.
func TestPySuiteOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name, xml string
		want      map[string]string
	}{
		{"kinds", `<testsuites tests="4"><testsuite tests="4">` +
			`<testcase name="a.B.ok" status="run" result="completed" time="0.1" />` +
			`<testcase name="a.B.skip" status="run"><skipped>os.link(): [Errno 1] '@test_123_tmp' in '/tmp/test_python_456/x'</skipped></testcase>` +
			`<testcase name="a.B.fail" status="run"><failure type="AssertionError">Traceback at 0x1234</failure></testcase>` +
			`<testcase name="a.B.err" status="run"><error type="OSError">Traceback</error></testcase>` +
			`</testsuite><testsuite tests="1"><testcase name="c.D.other" /></testsuite></testsuites>`,
			map[string]string{"a.B.ok": "ok", "a.B.skip": "skipped: os.link(): [Errno 1] '@test_N_tmp' in '/tmp/test_python_N/x'",
				"a.B.fail": "failure", "a.B.err": "error", "c.D.other": "ok"}},
		{"subtests", `<testsuites><testsuite>` +
			`<testcase name="a.B.t (x=1)"><failure>f</failure></testcase>` +
			`<testcase name="a.B.t" /><testcase name="a.B.t"><error>e</error></testcase>` +
			`</testsuite></testsuites>`,
			map[string]string{"a.B.t (x=1)": "failure", "a.B.t": "ok / error"}},
		{"empty", `<testsuites tests="0"></testsuites>`, map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := pySuiteOutcomes([]byte(tc.xml))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if _, err := pySuiteOutcomes([]byte("<testsuites><testsuite>")); err == nil {
		t.Error("a cut-off report read without an error")
	}
}

// TestPySuiteDiffer checks the list of tests whose outcomes differ.
func TestPySuiteDiffer(t *testing.T) {
	want := map[string]string{"a": "ok", "b": "failure", "c": "skipped: x", "d": "ok"}
	got := map[string]string{"a": "ok", "b": "ok", "c": "skipped: y", "e": "ok"}
	if diff := cmp.Diff([]string{"b", "c", "d", "e"}, pySuiteDiffer(want, got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
