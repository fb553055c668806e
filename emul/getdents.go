package emul

import (
	"encoding/binary"
	"path/filepath"
	"strings"

	"github.com/droidroot/droidroot/tracer"
)

// Directory listings filtered at getdents64's exit: droidroot's own files
// are left out (the -l data files always, with -H also termux's ".proot"
// names and droidroot's files in PROOT_TMP_DIR), and names of emulated hard
// links report the d_type of their data file instead of DT_LNK.

// dirent64 field offsets (struct linux_dirent64).
const (
	direntReclenOff = 16
	direntTypeOff   = 18
	direntNameOff   = 19
)

const (
	dtLnk = 10
)

// hider decides which entries a listing hides.
type hider struct {
	l2s    bool   // hide .l2s. data and count files
	proot  bool   // -H: hide ".proot*" names
	tmpDir string // -H: hide droidroot's files in this host directory
}

// hidden reports whether the entry name of host directory dir is hidden.
func (h hider) hidden(dir, name string) bool {
	if h.l2s && (strings.HasPrefix(name, l2sPrefix) || name == l2sStoreName) {
		return true
	}
	if h.proot {
		if strings.HasPrefix(name, ".proot") || strings.HasPrefix(name, l2sPrefix) || name == l2sStoreName {
			return true
		}
		if h.tmpDir != "" && dir == h.tmpDir && isOwnTmpName(name) {
			return true
		}
	}
	return false
}

// isOwnTmpName reports whether name is one of the files droidroot creates
// in PROOT_TMP_DIR (loader, empty directory, socket aliases, /proc tables).
func isOwnTmpName(name string) bool {
	for _, p := range []string{"droidroot-", ".droidroot-", "drs"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// filterDirents rewrites a getdents64 buffer: hidden entries are dropped
// and fix may rewrite a kept record in place, reporting whether it did
// (nil: none). It returns the new buffer and whether anything changed.
func filterDirents(buf []byte, hide func(name string) bool, fix func(name string, rec []byte) bool) ([]byte, bool) {
	out := buf[:0:0]
	changed := false
	for off := 0; off+direntNameOff < len(buf); {
		reclen := int(binary.LittleEndian.Uint16(buf[off+direntReclenOff:]))
		if reclen < direntNameOff || off+reclen > len(buf) {
			return buf, false // malformed: leave it to the guest
		}
		rec := buf[off : off+reclen]
		name := rec[direntNameOff:]
		if i := indexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		off += reclen
		if hide(string(name)) {
			changed = true
			continue
		}
		start := len(out)
		out = append(out, rec...)
		if fix != nil && fix(string(name), out[start:]) {
			changed = true
		}
	}
	return out, changed
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// getdentsHandler filters getdents64 (fd, buf, count).
func (h hider) getdentsHandler() tracer.Handler {
	return tracer.Handler{
		Enter: func(c *tracer.Call) {
			dir, errno := fdHostPath(c, int(int32(c.Arg(0))))
			if errno != 0 || !strings.HasPrefix(dir, "/") {
				c.NoExit()
				return
			}
			c.Data = dir
		},
		Exit: func(c *tracer.Call) {
			dir, _ := c.Data.(string)
			n := c.Ret()
			if dir == "" || n <= 0 {
				return
			}
			buf := make([]byte, n)
			if c.ReadMem(c.Arg(1), buf) != nil {
				return
			}
			var fix func(string, []byte) bool
			if h.l2s {
				fix = func(name string, rec []byte) bool {
					if rec[direntTypeOff] != dtLnk {
						return false
					}
					data, ok := l2sName(c, filepath.Join(dir, name))
					if !ok {
						return false
					}
					return l2sDirent(data, rec)
				}
			}
			out, changed := filterDirents(buf, func(name string) bool { return h.hidden(dir, name) }, fix)
			if !changed {
				return
			}
			if len(out) == 0 {
				// Everything in this batch was hidden: read the next one
				// rather than report the end of the directory.
				c.RestartAtExit()
				return
			}
			if c.WriteMem(c.Arg(1), out) != nil {
				return
			}
			c.Return(int64(len(out)))
		},
	}
}
