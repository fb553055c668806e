package pathmap

import "bytes"

// Relative host paths: a host path of PathMax bytes or more is too long for
// the kernel, but the same file is reached by a short relative path from a
// host directory close to it: "../" once for each component of the
// directory below their longest common ancestor, then the rest of the
// target. The kernel takes ".." physically (the parent of the directory it
// is in, across mount points), which is what the string says as long as
// neither path holds a symlink: true of the walk's host paths, built from
// the canonical host paths of the mounts and components the walk looked up
// (only the last component may be an unfollowed symlink, and it is never
// climbed out of).

// appendRel appends to dst target's path relative to directory base, both
// absolute host paths as the walk builds them (clean, without symlinks;
// target may end in a slash, or in a "." or ".." the walk passed through
// for the kernel to refuse). When target is base or one of its ancestors,
// the path names it from its parent ("../../name", not ".." or "."), so
// that a call acting on the entry sees its name, as with the absolute path.
// ok is false when there is no such path shorter than PathMax, or when base
// lies in procfs, whose magic links ".." does not climb back out of.
func appendRel(dst, base, target []byte) (_ []byte, ok bool) {
	if len(base) == 0 || base[0] != '/' || len(target) == 0 || target[0] != '/' ||
		bytes.HasPrefix(base, []byte("/proc/")) {
		return dst, false
	}
	trailing := len(target) > 1 && target[len(target)-1] == '/'
	if trailing {
		target = target[:len(target)-1]
	}
	n := commonDir(base, target)
	ups := components(base[n:])
	rest := bytes.TrimPrefix(target[n:], []byte("/"))
	if len(rest) == 0 {
		// base itself or an ancestor: name it from its parent.
		if n <= 1 {
			return dst, false // "/" has no name
		}
		i := bytes.LastIndexByte(target[:n], '/')
		rest, ups = target[i+1:n], ups+1
	}
	size := 3*ups + len(rest)
	if trailing {
		size++
	}
	if size >= PathMax {
		return dst, false
	}
	for range ups {
		dst = append(dst, "../"...)
	}
	dst = append(dst, rest...)
	if trailing {
		dst = append(dst, '/')
	}
	return dst, true
}

// commonDir returns the length of the longest common ancestor of two
// clean absolute paths, compared component by component: a prefix of both
// that ends where a component ends in each (0 for "/").
func commonDir(a, b []byte) int {
	last := 0 // the last slash both have at the same place, all equal before it
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		if a[i] == '/' {
			last = i
		}
		i++
	}
	if (i == len(a) || a[i] == '/') && (i == len(b) || b[i] == '/') {
		last = i
	}
	if last == 1 && a[0] == '/' {
		return 0 // both start at "/" and share nothing else
	}
	return last
}

// components counts the components of a path ("/a/b" and "a/b/" are 2).
func components(p []byte) int {
	n := 0
	for i := 0; i < len(p); i++ {
		if p[i] != '/' && (i == 0 || p[i-1] == '/') {
			n++
		}
	}
	return n
}
