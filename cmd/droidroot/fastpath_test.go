package main

import (
	"testing"

	"github.com/droidroot/droidroot/seccomp"
)

// TestOpenat2Allowed: the library may make openat2 unless an Android
// policy blocks it (every release's app policy does).
func TestOpenat2Allowed(t *testing.T) {
	if !openat2Allowed(nil) {
		t.Errorf("openat2Allowed(no policy) = false")
	}
	for _, v := range []string{"12", "16"} {
		p, err := seccomp.LoadAndroidPolicy(v)
		if err != nil {
			t.Fatal(err)
		}
		if openat2Allowed(p) {
			t.Errorf("openat2Allowed(Android %s) = true; its app policy blocks openat2", v)
		}
	}
}
