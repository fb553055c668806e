package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseProot(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    *Options
		wantErr bool
	}{
		{"defaults", nil, &Options{Rootfs: "/", Cwd: "."}, false},
		{"short options take the next argument", []string{"-r", "/rfs", "-b", "/dev", "-w", "/root", "ls", "-l"},
			&Options{Rootfs: "/rfs", Cwd: "/root", Binds: []Bind{{Host: "/dev", Guest: "/dev"}}, Command: []string{"ls", "-l"}}, false},
		{"long options need =", []string{"--rootfs=/rfs", "--bind=/a:/b", "--cwd=/x", "sh"},
			&Options{Rootfs: "/rfs", Cwd: "/x", Binds: []Bind{{Host: "/a", Guest: "/b"}}, Command: []string{"sh"}}, false},
		{"no abbreviations: --root", []string{"--root=/r", "true"}, nil, true},
		{"no abbreviations: --kill", []string{"--kill", "true"}, nil, true},
		{"no abbreviations: --b", []string{"--b=/h:/g", "true"}, nil, true},
		{"a short option's value in the same argument after a space", []string{"-r /r", "-b /h:/g", "true"},
			&Options{Rootfs: "/r", Cwd: ".", Binds: []Bind{{Host: "/h", Guest: "/g"}}, Command: []string{"true"}}, false},
		{"a short option's value glued to it", []string{"-r/r", "true"}, nil, true},
		{"a short option's value after =", []string{"-r=/r", "true"}, nil, true},
		{"a flag with a value", []string{"--kill-on-exit=1", "true"}, nil, true},
		{"a flag with more after it", []string{"-0x", "true"}, nil, true},
		{"a long option's empty value", []string{"--cwd=", "true"}, &Options{Rootfs: "/", Cwd: "", Command: []string{"true"}}, false},
		{"last rootfs wins", []string{"-r", "/a", "-r", "/b"}, &Options{Rootfs: "/b", Cwd: "."}, false},
		{"bind splits on the first colon, ! means no deref", []string{"-b", "/proc/self/fd:/dev/fd", "-m", "/a:/b:c!"},
			&Options{Rootfs: "/", Cwd: ".", Binds: []Bind{{Host: "/proc/self/fd", Guest: "/dev/fd"}, {Host: "/a", Guest: "/b:c", NoDeref: true}}}, false},
		{"options stop at the first non-option", []string{"-r", "/r", "sh", "-r", "x"},
			&Options{Rootfs: "/r", Cwd: ".", Command: []string{"sh", "-r", "x"}}, false},
		{"-- ends options", []string{"--", "-weird"}, &Options{Rootfs: "/", Cwd: ".", Command: []string{"-weird"}}, false},
		{"verbose level", []string{"-v", "2"}, &Options{Rootfs: "/", Cwd: ".", Verbose: 2}, false},
		{"-0 is -i 0:0", []string{"-0"}, &Options{Rootfs: "/", Cwd: ".", RootID: true, ChangeID: "0:0"}, false},
		{"-i UID:GID, the last one wins", []string{"-0", "--change-id=10123:10123"},
			&Options{Rootfs: "/", Cwd: ".", RootID: true, ChangeID: "10123:10123"}, false},
		{"-i needs UID:GID", []string{"-i", "1000"}, nil, true},
		{"-i ids are decimal", []string{"-i", "a:b"}, nil, true},
		{"-i -1 is not an id", []string{"-i", "4294967295:0"}, nil, true},
		{"extension flags", []string{"-H", "-p", "-L", "--ashmem-memfd", "-q", "qemu-aarch64-static -cpu max", "-l"},
			&Options{Rootfs: "/", Cwd: ".", HideProot: true, PortShift: true, LstatSize: true, AshmemMemfd: true,
				Qemu: "qemu-aarch64-static -cpu max", Link2Symlink: true}, false},
		{"kernel release backslash form", []string{`--kernel-release=\Linux\localhost\6.17.0\#1 SMP\aarch64\localdomain\-1\`},
			&Options{Rootfs: "/", Cwd: ".", KernelRelease: `\Linux\localhost\6.17.0\#1 SMP\aarch64\localdomain\-1\`, KernelReleaseSet: true}, false},
		{"android policy", []string{"--android-policy=12L", "sh"},
			&Options{Rootfs: "/", Cwd: ".", AndroidPolicy: "12L", Command: []string{"sh"}}, false},
		{"android policy off", []string{"--android-policy=off"}, &Options{Rootfs: "/", Cwd: ".", AndroidPolicy: "off"}, false},
		{"--ash is not --ashmem-memfd", []string{"--ash"}, nil, true},
		{"--sysvipc", []string{"--sysvipc", "sh"}, &Options{Rootfs: "/", Cwd: ".", SysVIPC: true, Command: []string{"sh"}}, false},
		{"unknown android version", []string{"--android-policy=11"}, nil, true},
		{"unknown option", []string{"--frobnicate"}, nil, true},
		{"missing value", []string{"-r"}, nil, true},
		{"long value option without =", []string{"--rootfs", "/r"}, nil, true},
		{"bad verbose", []string{"-v", "x"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseProot(tt.args)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseProot(%q) error = %v, wantErr %v", tt.args, err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("ParseProot(%q) mismatch (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

func TestIsProotOption(t *testing.T) {
	for arg, want := range map[string]bool{
		"-r": true, "--rootfs=/x": true, "-0": true, "--kill-on-exit": true, "-b": true,
		"ls": false, "-": false, "--": false, "--nope": false, "-Z": false, "run": false,
		// proot's names that the argument starts with: proot's own error follows.
		"-rROOT": true, "--rootfs": true, "--root": false,
	} {
		if got := IsProotOption(arg); got != want {
			t.Errorf("IsProotOption(%q) = %v, want %v", arg, got, want)
		}
	}
}

// TestSpinEnv: DROIDROOT_SPIN=US polls US microseconds, 0 never; anything
// else leaves the tracer's default.
func TestSpinEnv(t *testing.T) {
	for _, c := range []struct {
		env  string
		want time.Duration
	}{
		{"", 0},
		{"x", 0},
		{"-3", 0},
		{"0", -1},
		{"20", 20 * time.Microsecond},
	} {
		t.Setenv("DROIDROOT_SPIN", c.env)
		if got := spinEnv(); got != c.want {
			t.Errorf("DROIDROOT_SPIN=%q: spin %v, want %v", c.env, got, c.want)
		}
	}
}

// TestParseBind: -b's HOST[:GUEST][!] split on the first ':', and the syntax errors that
// are reported (not taken as the cwd, as an empty HOST would be).
func TestParseBind(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Bind
	}{
		{"/dev", Bind{Host: "/dev", Guest: "/dev"}},
		{"/a:/b", Bind{Host: "/a", Guest: "/b"}},
		{"/a:/b:c", Bind{Host: "/a", Guest: "/b:c"}},
		{"/a:/b!", Bind{Host: "/a", Guest: "/b", NoDeref: true}},
		{"rel:g", Bind{Host: "rel", Guest: "g"}},
		{"", Bind{Bad: "empty binding", Spec: ""}},
		{":", Bind{Bad: "no host path before ':'", Spec: ":"}},
		{":/x", Bind{Guest: "/x", Bad: "no host path before ':'", Spec: ":/x"}},
		{"/x:", Bind{Host: "/x", Bad: "no guest path after ':'", Spec: "/x:"}},
	} {
		if diff := cmp.Diff(tc.want, parseBind(tc.in)); diff != "" {
			t.Errorf("parseBind(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}
