//go:build linux

package e2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// ttySession drives an interactive program through a pseudo-terminal.
type ttySession struct {
	t    *testing.T
	f    *os.File
	mu   sync.Mutex
	out  bytes.Buffer
	seen int
}

func (s *ttySession) read() {
	buf := make([]byte, 4096)
	for {
		n, err := s.f.Read(buf)
		s.mu.Lock()
		s.out.Write(buf[:n])
		s.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// expect waits until the output after the last match contains want.
func (s *ttySession) expect(want string) {
	s.t.Helper()
	s.expectOneOf(want)
}

// expectOneOf waits until the output after the last match contains one of
// wants.
func (s *ttySession) expectOneOf(wants ...string) {
	s.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		rest := s.out.String()[s.seen:]
		for _, w := range wants {
			if i := strings.Index(rest, w); i >= 0 {
				s.seen += i + len(w)
				s.mu.Unlock()
				return
			}
		}
		s.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.t.Fatalf("none of %q on the terminal; it shows:\n%s", wants, s.out.String()[s.seen:])
}

func (s *ttySession) send(text string) {
	s.t.Helper()
	if _, err := s.f.Write([]byte(text)); err != nil {
		s.t.Fatalf("writing %q to the terminal: %v", text, err)
	}
}

// TestInteractiveShell runs an interactive shell on a terminal under
// droidroot: job control (Ctrl-Z, jobs, fg), Ctrl-C of a foreground job, and
// the exit status.
func TestInteractiveShell(t *testing.T) {
	g := busyboxGuest(t)
	g.Binds = append(g.Binds, "/dev")
	argv := droidrootArgs(droidrootBin(t), g, "/bin/sh", "-i")
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(guestEnv(), "PS1=guest$ ")
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
		}
	}()
	s := &ttySession{t: t, f: f}
	go s.read()

	s.send("PS1='guest''$ '\n")
	s.expect("guest$ ")
	s.send("echo tty-$((40+2))\n")
	s.expect("tty-42")
	s.expect("guest$ ")

	// Ctrl-Z stops the foreground job, and it must really be stopped (T,
	// or t: stopped under a tracer), not just reported so; the shell gets
	// its prompt back.
	s.send("sleep 30\n")
	time.Sleep(300 * time.Millisecond)
	s.send("\x1a")
	s.expect("Stopped")
	s.expect("guest$ ")
	s.send(`for p in /proc/[0-9]*; do read -r l < $p/stat; case "$l" in *"(sleep) "*) set -- $l; echo "state=$3.";; esac; done` + "\n")
	s.expectOneOf("state=T.", "state=t.")
	s.expect("guest$ ")
	s.send("jobs\n")
	s.expect("sleep 30")
	s.expect("guest$ ")

	// fg resumes it in the foreground; Ctrl-C kills it.
	s.send("fg\n")
	s.expect("sleep 30")
	time.Sleep(300 * time.Millisecond)
	s.send("\x03")
	s.expect("guest$ ")
	s.send("echo status=$?\n")
	s.expect("status=130")

	s.send("exit 7\n")
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 7 {
			t.Fatalf("droidroot exited with %v, want exit status 7", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the shell did not exit")
	}
}
