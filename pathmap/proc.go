package pathmap

import "strings"

// IsProcMagic reports whether the host path goes through one of procfs's
// magic links, which the kernel follows by jumping to the object they stand
// for rather than by reading a path: /proc/P/{exe,cwd,root},
// /proc/P/fd/N, /proc/P/map_files/X and /proc/P/ns/X, also below
// /proc/P/task/T/, where P is a number, "self" or "thread-self". The link
// may be followed by more components ("/proc/12/fd/3/sub" is true).
// It looks at the string only. Resolve returns such paths, with
// Result.Magic set, when it stopped at a magic link.
func IsProcMagic(host string) bool {
	rest, ok := strings.CutPrefix(host, "/proc/")
	if !ok {
		return false
	}
	first, rest := cutComponent(rest)
	switch {
	case first == "thread-self":
		// Already at the task level.
	case first == "self" || isDigits(first):
		if c, r := cutComponent(rest); c == "task" {
			t, r2 := cutComponent(r)
			if !isDigits(t) {
				return false
			}
			rest = r2
		}
	default:
		return false
	}
	c, rest := cutComponent(rest)
	switch c {
	case "exe", "cwd", "root":
		return true
	case "fd", "map_files", "ns":
		n, _ := cutComponent(rest)
		return n != "" && n != "." && n != ".."
	}
	return false
}

// cutComponent splits "a/b/c" (after any leading slashes) into "a" and
// "b/c".
func cutComponent(s string) (string, string) {
	s = strings.TrimLeft(s, "/")
	if i := strings.IndexByte(s, '/'); i >= 0 {
		return s[:i], s[i+1:]
	}
	return s, ""
}

func isDigits[T string | []byte](s T) bool {
	if len(s) == 0 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// underProcPid reports whether host is strictly below "/proc/<digits>/",
// where every symlink is a magic link.
func underProcPid(host []byte) bool {
	const p = "/proc/"
	if len(host) <= len(p) || string(host[:len(p)]) != p {
		return false
	}
	rest := host[len(p):]
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	return i > 0 && i+1 < len(rest) && rest[i] == '/'
}
