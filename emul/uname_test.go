package emul

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseKernelRelease(t *testing.T) {
	for _, tc := range []struct {
		in     string
		fields [6]string
		hwcap  int64
		err    bool
	}{
		{"6.17.0", [6]string{2: "6.17.0"}, -1, false},
		{`\Linux\localhost\6.17.0\#1 SMP\aarch64\localdomain\-1\`, [6]string{"Linux", "localhost", "6.17.0", "#1 SMP", "aarch64", "localdomain"}, -1, false},
		{`\Linux\h\5.4\v\m\d\1f\`, [6]string{"Linux", "h", "5.4", "v", "m", "d"}, 0x1f, false},
		{`\\\5.4\`, [6]string{2: "5.4"}, -1, false},
		{`\a\b\c\d\e\f\0x10\`, [6]string{"a", "b", "c", "d", "e", "f"}, 0x10, false},
		{`\a\b\c\d\e\f\zz\`, [6]string{}, 0, true},
		{`\a\b\c\d\e\f\1\extra\`, [6]string{}, 0, true},
		{"", [6]string{}, 0, true},
		{string(make([]byte, 100)) + "x", [6]string{2: string(make([]byte, 64))}, -1, false},
	} {
		u, err := ParseKernelRelease(tc.in)
		if tc.err {
			if err == nil {
				t.Errorf("%q: no error", tc.in)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.fields, u.Fields); diff != "" || u.HWCap != tc.hwcap {
			t.Errorf("%q: hwcap %d, fields (-want +got):\n%s", tc.in, u.HWCap, diff)
		}
	}
}

func TestOpenHowCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		how  openHow
		want string
	}{
		{"plain", openHow{}, "0"},
		{"unknown resolve", openHow{resolve: 0x40}, "EINVAL"},
		{"beneath and in root", openHow{resolve: resolveBeneath | resolveInRoot}, "EINVAL"},
		{"mode without creat", openHow{mode: 0o644}, "EINVAL"},
		{"bad mode", openHow{flags: 0o100, mode: 0o10000}, "EINVAL"},
		{"creat mode", openHow{flags: 0o100, mode: 0o7777}, "0"},
		{"unknown flag", openHow{flags: 1 << 40}, "EINVAL"},
		{"cached creat", openHow{flags: 0o100, resolve: resolveCached}, "EAGAIN"},
	} {
		got := "0"
		if e := tc.how.check(); e != 0 {
			got = errnoName(e)
		}
		if got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func errnoName(e interface{ Error() string }) string {
	switch e.Error() {
	case "invalid argument":
		return "EINVAL"
	case "resource temporarily unavailable":
		return "EAGAIN"
	}
	return e.Error()
}
