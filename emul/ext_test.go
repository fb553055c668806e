package emul

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/droidroot/droidroot/ident"
	"github.com/droidroot/droidroot/pathmap"
	"github.com/droidroot/droidroot/seccomp"
)

func sockaddr4(port uint16, a, b, c, d byte) []byte {
	sa := make([]byte, 16)
	binary.LittleEndian.PutUint16(sa, 2)
	binary.BigEndian.PutUint16(sa[2:], port)
	copy(sa[4:], []byte{a, b, c, d})
	return sa
}

func sockaddr6(port uint16, last byte) []byte {
	sa := make([]byte, 28)
	binary.LittleEndian.PutUint16(sa, 10)
	binary.BigEndian.PutUint16(sa[2:], port)
	sa[8+15] = last
	return sa
}

func TestShiftPort(t *testing.T) {
	tests := []struct {
		name string
		sa   []byte
		bind bool
		port uint16 // 0: unchanged
	}{
		{"bind any address below 1024", sockaddr4(80, 0, 0, 0, 0), true, 2080},
		{"bind 1023", sockaddr4(1023, 10, 0, 0, 1), true, 3023},
		{"bind 1024 unchanged", sockaddr4(1024, 0, 0, 0, 0), true, 0},
		{"bind port 0 unchanged", sockaddr4(0, 0, 0, 0, 0), true, 0},
		{"connect loopback", sockaddr4(22, 127, 0, 0, 1), false, 2022},
		{"connect other loopback address unchanged (termux rule)", sockaddr4(22, 127, 0, 0, 2), false, 0},
		{"connect remote unchanged", sockaddr4(22, 192, 168, 1, 1), false, 0},
		{"bind v6", sockaddr6(443, 0), true, 2443},
		{"connect ::1", sockaddr6(443, 1), false, 2443},
		{"connect :: unchanged", sockaddr6(443, 0), false, 0},
		{"AF_UNIX unchanged", []byte{1, 0, '/', 'x'}, true, 0},
		{"short", []byte{2, 0, 0}, true, 0},
	}
	for _, tt := range tests {
		out, ok := shiftPort(tt.sa, tt.bind)
		if ok != (tt.port != 0) {
			t.Errorf("%s: shifted %v, want %v", tt.name, ok, tt.port != 0)
			continue
		}
		if ok {
			if got := binary.BigEndian.Uint16(out[2:]); got != tt.port {
				t.Errorf("%s: port %d, want %d", tt.name, got, tt.port)
			}
			if diff := cmp.Diff(tt.sa[4:], out[4:]); diff != "" {
				t.Errorf("%s: address changed: %s", tt.name, diff)
			}
		}
	}
}

// dirents builds a getdents64 buffer of (name, type) entries.
func dirents(ents ...any) []byte {
	var b []byte
	for i := 0; i < len(ents); i += 2 {
		name, typ := ents[i].(string), ents[i+1].(int)
		reclen := (direntNameOff + len(name) + 1 + 7) &^ 7
		rec := make([]byte, reclen)
		binary.LittleEndian.PutUint64(rec, uint64(100+i))
		binary.LittleEndian.PutUint16(rec[direntReclenOff:], uint16(reclen))
		rec[direntTypeOff] = byte(typ)
		copy(rec[direntNameOff:], name)
		b = append(b, rec...)
	}
	return b
}

// names decodes a getdents64 buffer into "name/type" strings.
func names(b []byte) []string {
	var out []string
	for off := 0; off < len(b); {
		reclen := int(binary.LittleEndian.Uint16(b[off+direntReclenOff:]))
		name := b[off+direntNameOff : off+reclen]
		if i := indexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		out = append(out, string(name)+"/"+string(rune('0'+b[off+direntTypeOff])))
		off += reclen
	}
	return out
}

func TestFilterDirents(t *testing.T) {
	h := hider{l2s: true, proot: true, tmpDir: "/tmp/pt"}
	tests := []struct {
		name    string
		dir     string
		in      []byte
		want    []byte
		changed bool
	}{
		{"nothing hidden", "/d", dirents(".", 4, "..", 4, "a", 8), dirents(".", 4, "..", 4, "a", 8), false},
		{"l2s and proot names", "/d", dirents(".", 4, ".l2s.a.12ab", 8, "a", 10, ".proot.x", 8, ".l2s.a.12ab.n", 10, "b", 8),
			dirents(".", 4, "a", 8, "b", 8), true},
		{"droidroot files only in the tmp dir", "/tmp/pt", dirents("droidroot-loader-amd64-1", 8, "drs123", 4, "mine", 8),
			dirents("mine", 8), true},
		{"droidroot names elsewhere are kept", "/d", dirents("droidroot-loader-amd64-1", 8), dirents("droidroot-loader-amd64-1", 8), false},
		{"all hidden", "/d", dirents(".proot1", 8, ".l2s.x.1", 8), nil, true},
	}
	for _, tt := range tests {
		// Names of type DT_LNK called "a" stand for emulated hard links: shown as regular files.
		fix := func(name string, rec []byte) bool {
			if name == "a" && rec[direntTypeOff] == dtLnk {
				rec[direntTypeOff] = 8
				return true
			}
			return false
		}
		got, changed := filterDirents(tt.in, func(n string) bool { return h.hidden(tt.dir, n) }, fix)
		if changed != tt.changed {
			t.Errorf("%s: changed %v, want %v", tt.name, changed, tt.changed)
		}
		if diff := cmp.Diff(names(tt.want), names(got)); changed && diff != "" {
			t.Errorf("%s: entries (-want +got):\n%s", tt.name, diff)
		}
	}
	// A malformed buffer is left alone.
	bad := dirents("a", 8)
	binary.LittleEndian.PutUint16(bad[direntReclenOff:], 200)
	if _, changed := filterDirents(bad, func(string) bool { return true }, nil); changed {
		t.Error("malformed buffer was changed")
	}
}

func TestIsL2SData(t *testing.T) {
	for name, want := range map[string]bool{
		".l2s.a.0f3c": true, ".l2s.a.0f3c.n": false, "a": false, ".l2sx": false, ".proot.l2s.a": false,
	} {
		if got := isL2SData(name); got != want {
			t.Errorf("isL2SData(%q) = %v, want %v", name, got, want)
		}
	}
}

const hostMountinfo = `21 26 0:20 / /proc rw,relatime shared:5 - proc proc rw
26 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard
23 26 0:6 / /dev rw,relatime - devtmpfs devtmpfs rw,size=100k,mode=755
24 23 0:23 / /dev/pts rw,relatime - devpts devpts rw,mode=600
25 23 0:22 / /dev/shm rw,relatime - tmpfs tmpfs rw
27 26 0:30 /sub /data\040dir rw - ext4 /dev/vdb rw
`

func TestGuestMounts(t *testing.T) {
	host := parseMountinfo(hostMountinfo)
	if len(host) != 6 || host[5].Point != "/data dir" || host[0].Optional[0] != "shared:5" {
		t.Fatalf("parseMountinfo: %+v", host)
	}
	binds := []pathmap.Binding{
		{Host: "/proc", Guest: "/proc"},
		{Host: "/dev", Guest: "/dev"},
		{Host: "/data dir/x", Guest: "/mnt/x y"},
		{Host: "/home/s", Guest: "/dev/shm"},
		{Host: "/home/v", Guest: "/proc/version"},
	}
	got := formatMountinfo(guestMounts(host, "/home/rootfs", binds))
	want := `1000 999 254:0 /home/rootfs / rw,relatime shared:1 - ext4 /dev/vda rw,discard
1001 1000 0:20 / /proc rw,relatime shared:5 - proc proc rw
1002 1000 0:6 / /dev rw,relatime - devtmpfs devtmpfs rw,size=100k,mode=755
1003 1002 0:23 / /dev/pts rw,relatime - devpts devpts rw,mode=600
1004 1000 0:30 /sub/x /mnt/x\040y rw - ext4 /dev/vdb rw
1005 1002 254:0 /home/s /dev/shm rw,relatime shared:1 - tmpfs tmpfs rw
1006 1001 254:0 /home/v /proc/version rw,relatime shared:1 - ext4 /dev/vda rw,discard
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("guest mountinfo (-want +got):\n%s", diff)
	}
	mounts := formatMounts(guestMounts(host, "/home/rootfs", binds[:2]))
	wantMounts := `/dev/vda / ext4 rw,relatime,discard 0 0
proc /proc proc rw,relatime 0 0
devtmpfs /dev devtmpfs rw,relatime,size=100k,mode=755 0 0
devpts /dev/pts devpts rw,relatime,mode=600 0 0
tmpfs /dev/shm tmpfs rw,relatime 0 0
`
	if diff := cmp.Diff(wantMounts, mounts); diff != "" {
		t.Errorf("guest mounts (-want +got):\n%s", diff)
	}
}

func TestEscapeMount(t *testing.T) {
	for _, s := range []string{"plain", "a b", "t\tn\nb\\", ""} {
		if got := unescapeMount(escapeMount(s)); got != s {
			t.Errorf("round trip of %q gave %q", s, got)
		}
	}
	if got := escapeMount("a b"); got != `a\040b` {
		t.Errorf("escapeMount = %q", got)
	}
}

// TestTableNamesAllOptions: with every extension on, every handler still names a real
// syscall, and the extensions' calls are traced.
func TestTableNamesAllOptions(t *testing.T) {
	table := Table(Config{Link2Symlink: true, HideOwnFiles: true, PortShift: true, LstatLinkSize: true,
		AshmemMemfd: true, Qemu: []string{"/usr/bin/qemu-aarch64-static"}})
	for name := range table {
		_, amd := seccomp.NativeABI("amd64").Nr(name)
		_, arm := seccomp.NativeABI("arm64").Nr(name)
		if !amd && !arm {
			t.Errorf("handler %q is not a syscall on amd64 or arm64", name)
		}
	}
	for _, n := range []string{"getdents64", "fstat", "ioctl", "statfs", "fstatfs", "linkat", "unlinkat", "renameat2"} {
		if _, ok := table[n]; !ok {
			t.Errorf("no handler for %q", n)
		}
	}
}

func TestIsTermuxFinal(t *testing.T) {
	for name, want := range map[string]bool{
		".l2s.perl0001.0002": true, ".l2s.a0001.0010": true, ".l2s.perl0001": false, ".l2s.a.0f3c91": false,
		".l2s.a.0f3c.n": false, ".l2s.x.12a4": false, "a.0002": false,
	} {
		if got := isTermuxFinal(name); got != want {
			t.Errorf("isTermuxFinal(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestGuestStatusCreds: with emulated credentials, the ids, groups and
// capability sets of /proc/PID/status are the thread's emulated ones, in the
// kernel's format (the groups with its trailing space).
func TestGuestStatusCreds(t *testing.T) {
	in := "Name:\tx\nTracerPid:\t77\nUid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\nFDSize:\t64\nGroups:\t1000 \n" +
		"NStgid:\t5\nCapInh:\t0000000000000000\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t000001ffffffffff\n"
	creds := ident.New(0, 0, []uint32{27, 4})
	creds.EGID = 1
	want := "Name:\tx\nTracerPid:\t0\nUid:\t0\t0\t0\t0\nGid:\t0\t1\t0\t0\nFDSize:\t64\nGroups:\t4 27 \n" +
		"NStgid:\t5\nCapInh:\t0000000000000000\nCapPrm:\t000001ffffffffff\nCapEff:\t000001ffffffffff\nCapBnd:\t000001ffffffffff\n"
	if got := guestStatus(in, 0, &creds); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	none := ident.New(1000, 1000, nil)
	if got := guestStatus(in, 0, &none); !strings.Contains(got, "\nGroups:\t \n") {
		t.Errorf("no groups: got:\n%s", got)
	}
}

// TestGuestStatus: /proc/PID/status as a chroot shows it, TracerPid naming
// the emulated tracer or none (the kernel names droidroot).
func TestGuestStatus(t *testing.T) {
	const head = "Name:\tsh\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t7\nNgid:\t0\nPid:\t7\nPPid:\t6\n"
	for _, tc := range []struct {
		name, in string
		tracer   int
		want     string
	}{
		{"untraced", head + "TracerPid:\t4242\nUid:\t0\t0\t0\t0\n", 0, head + "TracerPid:\t0\nUid:\t0\t0\t0\t0\n"},
		{"a guest tracer", head + "TracerPid:\t4242\nUid:\t0\t0\t0\t0\n", 9, head + "TracerPid:\t9\nUid:\t0\t0\t0\t0\n"},
		{"the last line", head + "TracerPid:\t4242", 0, head + "TracerPid:\t0"},
		{"no such line", head, 0, head},
		{"not a prefix of another field", head + "XTracerPid:\t1\nTracerPid:\t2\n", 0, head + "XTracerPid:\t1\nTracerPid:\t0\n"},
	} {
		if got := guestStatus(tc.in, tc.tracer, nil); got != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestProcViewFile: the files procViews generates are told by their
// directory, whatever the temporary directory.
func TestProcViewFile(t *testing.T) {
	for h, want := range map[string]bool{
		"/tmp/droidroot-proc-0/12-12-status":             true,
		"/data/x/tmp/droidroot-proc-10123/1-2-mountinfo": true,
		"/tmp/droidroot-proc-0":                          false,
		"/tmp/droidroot-run-0/x":                         false,
		"/proc/self/status":                              false,
		"/droidroot-proc-0x/f":                           true,
	} {
		if got := procViewFile(h); got != want {
			t.Errorf("procViewFile(%q) = %v, want %v", h, got, want)
		}
	}
}
