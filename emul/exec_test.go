package emul

import (
	"strings"
	"testing"
)

func TestParseShebang(t *testing.T) {
	long := "#!/bin/" + strings.Repeat("x", 300)
	tests := []struct {
		in          string
		interp, arg string
		ok          bool
	}{
		{"#!/bin/sh\necho", "/bin/sh", "", true},
		{"#! /bin/sh -e \nx", "/bin/sh", "-e", true},
		{"#!/usr/bin/env python3 -u -x\n", "/usr/bin/env", "python3 -u -x", true},
		{"#!\t/bin/echo\t one  arg \t\n", "/bin/echo", "one  arg", true},
		{"#!/bin/sh", "/bin/sh", "", true},
		{"#!\n", "", "", false},
		{"#!   \n", "", "", false},
		{long[:256], "", "", false}, // interpreter name truncated by the 256-byte buffer
		{"#!/bin/sh " + strings.Repeat("a", 300), "/bin/sh", strings.Repeat("a", 256-len("#!/bin/sh ")), true},
	}
	for _, tt := range tests {
		hd := []byte(tt.in)
		if len(hd) > binprmBufSize {
			hd = hd[:binprmBufSize]
		}
		interp, arg, ok := parseShebang(hd)
		if interp != tt.interp || arg != tt.arg || ok != tt.ok {
			t.Errorf("parseShebang(%.40q) = %q, %q, %v; want %q, %q, %v", tt.in, interp, arg, ok, tt.interp, tt.arg, tt.ok)
		}
	}
}
