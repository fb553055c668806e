package e2e

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// guardScript stats a file through cached directories after every way a
// program can change the descriptors the library caches them at (dup2 and
// dup3 of another directory onto each, close_range, close), and while a
// thread stats through them as the main thread spawns vfork children (whose
// descriptor table is a copy in the same memory): every answer must name
// the file the kernel would, /tmp/guard/a/x/f (one byte), never the one in
// the directory dup'ed over the cache's numbers (two bytes).
const guardScript = `
import os, subprocess, sys, threading
base = "/tmp/guard"
for d in ("a", "b"):
    os.makedirs(base + "/" + d + "/x", exist_ok=True)
open(base + "/a/x/f", "w").write("a")
open(base + "/b/x/f", "w").write("bb")
want = os.stat(base + "/a/x/f").st_ino
other = os.open(base + "/b/x", os.O_RDONLY | os.O_DIRECTORY)
bad = []
def ok():
    st = os.stat(base + "/a/x/f")
    return st.st_ino == want and st.st_size == 1
def check(what):
    for i in range(50):
        if not ok():
            bad.append(what)
            return
check("first")
for n in range(768, 848):
    os.dup2(other, n)
check("dup2")
os.closerange(768, 848)
check("close_range")
for n in range(768, 848):
    os.dup2(other, n, inheritable=False)
check("dup3")
for n in range(768, 848):
    os.close(n)
check("close")
stop = threading.Event()
def statter():
    while not stop.is_set():
        if not ok():
            bad.append("thread")
            return
th = threading.Thread(target=statter)
th.start()
for i in range(20):
    subprocess.run(["/bin/true"], check=True)
stop.set()
th.join()
check("after the spawns")
print("bad:", ",".join(bad))
print(os.getpid())
`

// TestFastPathGuard: the library's cached descriptors are used without a
// dev/ino check while the guard word is unchanged (docs/fastpath.md); a
// program that closes or dup2s over them, or spawns vfork children while
// another thread answers from the cache, still gets the kernel's answers,
// answered in-process.
func TestFastPathGuard(t *testing.T) {
	needRoot(t)
	g := debianGuest(t)
	argv := droidrootArgs(droidrootBin(t), g, "/usr/bin/python3", "-c", guardScript)
	res := run(t, "", append([]string{"env", "DROIDROOT_FASTPATH_STATS=1", "DROIDROOT_FASTPATH=1"}, argv...)...)
	if res.Code != 0 {
		t.Fatalf("%s", res)
	}
	lines := strings.Split(strings.TrimSpace(res.Stdout), "\n")
	if len(lines) < 2 || lines[len(lines)-2] != "bad: " {
		t.Fatalf("wrong answers after: %q\n%s", lines, res)
	}
	pid := lines[len(lines)-1]
	m := regexp.MustCompile(`(?m)^droidroot-fastpath\[` + pid + `\]: stat answered=(\d+)`).FindStringSubmatch(res.Stderr)
	if m == nil {
		t.Fatalf("no stat counters for process %s:\n%s", pid, res.Stderr)
	}
	if n, _ := strconv.Atoi(m[1]); n < 300 {
		t.Errorf("%s stats answered in-process, want at least 300 (the checks' 300)\n%s", m[1], res.Stderr)
	}
}
