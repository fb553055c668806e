package tracer

import (
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func init() { checkTracerThread = true } // every test of the package checks the rule

// TestOnTracerThread: the methods that must run on the tracer's OS thread panic on another.
func TestOnTracerThread(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tr := &Tracer{threads: map[int]*Thread{}, osThread: unix.Gettid()}
	calls := map[string]func(){
		"Process":     func() { tr.Process(1) },
		"ThreadFS":    func() { tr.ThreadFS(1) },
		"ThreadCreds": func() { tr.ThreadCreds(1) },
		"Interrupt":   func() { tr.Interrupt(1) },
		"Threads":     func() { tr.Threads(func(int, int) {}) },
		"Traced":      func() { tr.Traced(1) },
		"NumThreads":  func() { tr.NumThreads() },
		"Wake":        func() { tr.Wake(1, 0) },
	}
	for name, call := range calls {
		call() // on the tracer's thread: fine
		done := make(chan string)
		go func() {
			runtime.LockOSThread() // a thread of its own, never the test's
			defer func() {
				r, _ := recover().(string)
				done <- r
			}()
			call()
		}()
		if msg := <-done; !strings.Contains(msg, name+" called off the tracer's thread") {
			t.Errorf("%s on another thread: panic %q, want one naming the method", name, msg)
		}
	}
}
