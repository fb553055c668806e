package emul

import (
	"path/filepath"

	"github.com/droidroot/droidroot/tracer"
)

// extend adds to table t the handlers of the proot extensions cfg turns
// on (-l, -H, -L, -p, --ashmem-memfd, -q) and the guest's views of the
// mount table and of /dev/shm, which are always on.
func extend(t tracer.Table, cfg Config) {
	activeL2S = nil
	activeQemu = nil
	if len(cfg.Qemu) > 0 {
		activeQemu = &qemu{cmd: cfg.Qemu}
	}
	l2s := &link2symlink{on: cfg.Link2Symlink, dir: cfg.L2SDir, fail: cfg.FailLink}
	if cfg.L2SDir != "" {
		l2s.dir = filepath.Clean(cfg.L2SDir)
	}
	if cfg.Link2Symlink {
		activeL2S = l2s
	}
	if cfg.Link2Symlink || cfg.FailLink {
		t["link"] = l2s.linkHandler(p(0, never).rawName(), p(1, entry), -1)
		t["linkat"] = l2s.linkHandler(at(0, 1, ifFlag(4, atSymlinkFollow)).empty(4, atEmptyPath).rawName(), at(2, 3, entry), 4)
	}
	if cfg.Link2Symlink {
		t["unlink"] = l2s.unlinkHandler(p(0, entry), -1)
		t["unlinkat"] = l2s.unlinkHandler(at(0, 1, entry), 2)
		t["rename"] = l2s.renameHandler(p(0, entry), p(1, entry), -1)
		t["renameat"] = l2s.renameHandler(at(0, 1, entry), at(2, 3, entry), -1)
		t["renameat2"] = l2s.renameHandler(at(0, 1, entry), at(2, 3, entry), 4)
	}
	if cfg.Link2Symlink || cfg.LstatLinkSize {
		s := statPatcher{l2s: cfg.Link2Symlink, lsize: cfg.LstatLinkSize}
		t["stat"] = s.handler(p(0, always), 1, kindStat, no)
		t["lstat"] = s.handler(p(0, never), 1, kindStat, yes)
		nfa := s.handler(at(0, 1, unlessFlag(3, atSymlinkNofollow)).empty(3, atEmptyPath), 2, kindStat, flagSet(3, atSymlinkNofollow))
		t["newfstatat"] = nfa
		t["fstatat"] = nfa
		t["statx"] = s.handler(at(0, 1, unlessFlag(2, atSymlinkNofollow)).empty(2, atEmptyPath), 4, kindStatx, flagSet(2, atSymlinkNofollow))
	}
	if cfg.Link2Symlink {
		s := statPatcher{l2s: true}
		t["fstat"] = s.handler(pathArg{dirfd: -1, path: -1}, 1, kindStat, no)
	}
	if cfg.PortShift {
		t["bind"] = portShiftHandler(t["bind"], 1, 2, true)
		t["connect"] = portShiftHandler(t["connect"], 1, 2, false)
		t["sendto"] = portShiftHandler(t["sendto"], 4, 5, false)
	}
	views := &procViews{tmpDir: cfg.TmpDir, ashmem: cfg.AshmemMemfd}
	if cfg.AshmemMemfd {
		t["ioctl"] = ashmemIoctl
	}
	t["open"] = views.openHandler(p(0, openFollow(1)), 1)
	t["openat"] = views.openHandler(at(0, 1, openFollow(2)), 2)
	t["statfs"] = statfsHandler(false)
	t["fstatfs"] = statfsHandler(true)
	if cfg.Link2Symlink || cfg.HideOwnFiles {
		h := hider{l2s: cfg.Link2Symlink, proot: cfg.HideOwnFiles}
		if cfg.TmpDir != "" {
			if d, err := filepath.EvalSymlinks(cfg.TmpDir); err == nil {
				h.tmpDir = d
			}
		}
		t["getdents64"] = h.getdentsHandler()
	}
}
