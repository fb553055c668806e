// Package pathmap translates guest paths to host paths (and back) exactly as
// a chroot into a root filesystem with bind mounts would, without needing
// the privileges to build one. It is the path core of droidroot's tracer: a
// pure library (no ptrace, no processes) that the tracer calls at every path
// syscall of a tracee.
//
// # Model
//
// The guest sees the directory tree of the root filesystem (Mapper.Root) with
// every Binding mounted on top of it: a Binding makes host path Host visible
// at guest path Guest, like `mount --bind Host ROOT/Guest` followed by
// `chroot ROOT`. Bindings are non-recursive and mounted in the order given,
// parents before children; a later binding with the same Guest hides an
// earlier one.
//
// Resolve walks a guest path one component at a time, the way the kernel's
// path walk (fs/namei.c) does it in a chroot:
//
//   - Every symlink is read and its target walked in guest terms: an
//     absolute target restarts from the guest root, a relative one continues
//     in the link's guest directory. At most 40 symlinks are followed per
//     call (MaxSymlinks), the 41st gives ELOOP.
//   - ".." goes to the guest parent: it stays at the guest root, and from the
//     top of a binding it goes to the guest parent of the binding's mount
//     point, never to the host parent of the binding's source. Since the
//     symlinks before it were already resolved, "link/.." is the parent of
//     the link's target, as in the kernel.
//   - When the walk enters guest directory G and a Binding has Guest == G,
//     the host side switches to Binding.Host, exactly like crossing a mount
//     point; this holds however the walk got there (including through
//     symlinks of the root filesystem that point into a binding's guest
//     path).
//   - A trailing slash makes the last component followed and requires a
//     directory (ENOTDIR otherwise); the slash is kept on the returned host
//     path so that the kernel applies its own rules (mkdir "x/" works,
//     open("x/", O_CREAT) is EISDIR). With the Entry flag (for calls that act
//     on the directory entry itself: mkdir, mknod, unlink, rmdir, rename, the
//     new name of link/symlink) the last component is never followed, as the
//     kernel does for those calls.
//   - A missing last component is not an error: calls that create need its
//     path. Missing or non-directory intermediates give ENOENT or ENOTDIR.
//   - Paths of 4096 bytes or more give ENAMETOOLONG; a component longer than
//     255 bytes gives whatever the host filesystem says for it (ENAMETOOLONG
//     on disk filesystems, ENOENT on procfs/sysfs), because the lookup is
//     done by the host kernel.
//
// # Virtual directories
//
// A binding may sit at a guest path whose parents do not exist in the root
// filesystem (bind at /a/b/c, no /a in the rootfs). The walk then treats
// the missing parents /a and /a/b as directories that contain only the
// entries leading to bindings ("virtual directories", what proot calls the
// glue). Resolve returns, for a virtual directory itself, the host directory
// given with WithVirtualDir (it should be an empty directory, ideally not
// writable by the tracee, outside the rootfs), or the rootfs's top directory
// when none was given: either way a stat of it says "directory". Any other
// name inside a virtual directory does not exist: an intermediate one gives
// ENOENT, a final one resolves to a host path below the (missing) rootfs
// directory so that the kernel answers ENOENT to every call, including
// creation. Listing a virtual directory and mapping the stand-in back with
// ToGuest are not supported.
//
// # procfs
//
// The walk recognises procfs by the host path alone: a host directory
// "/proc" is the host's procfs (normally the guest's /proc is a binding of
// the host's /proc, or the rootfs is "/"). There:
//
//   - "self" resolves to "/proc/<Proc.Pid>" and "thread-self" to
//     "/proc/<Pid>/task/<Tid>", the tracee's own, not the tracer's (unless
//     Proc.Pid is 0: then the host's links are read, which name the tracer).
//     They count as symlinks. An unfollowed final "self" stays "/proc/self"
//     (so readlink results must be fixed by the caller).
//   - A symlink below "/proc/<digits>/" is one of the kernel's magic links
//     (exe, cwd, root, fd/N, map_files/*, ns/*, also under task/<tid>/).
//     When it must be followed (as an intermediate, or as a followed final)
//     the translation stops and the host path "/proc/<pid>/..." is returned
//     with the rest of the guest path appended unchanged, so that the kernel
//     performs its own jump; Result.Magic reports it and IsProcMagic tells
//     such host paths apart. Anything walked after a magic link is
//     interpreted by the host kernel, in host terms.
//   - A binding whose Host starts with /proc/self or /proc/thread-self (proot's
//     `-b /proc/self/fd:/dev/fd`) is kept symbolic and resolved per call
//     against Proc.
//
// # Cost
//
// Resolve makes at most one system call per guest path component, and often
// fewer:
//
//   - An intermediate component costs one readlink(2): EINVAL means "not a
//     symlink", so the walk moves on without an lstat; a symlink's target
//     comes with the same call (lstat+readlink would be two). Whether it is a
//     directory is left to the next lookup below it, which the host kernel
//     fails with ENOTDIR exactly as the guest kernel would. Only before "."
//     or ".." (which do not touch the host) is an lstat(2) made instead.
//   - A final component that is not followed (follow=false without trailing
//     slash, or the Entry flag) costs nothing: the kernel looks it up itself
//     when the tracee's call runs on the returned path.
//   - Binding mount points cost nothing: their type is taken once in New (a
//     real bind mount pins its source the same way).
//   - Nothing is cached between calls, so the result always reflects the
//     current host filesystem.
//
// With the default (host) FS the system calls are made directly on a pooled
// buffer: the only allocation of Resolve is the returned string.
//
// # Verification
//
// The tests compare Resolve with the kernel itself: as root, a re-executed
// test binary unshares its mount namespace, bind-mounts the same bindings
// into the rootfs, chroots and runs lstat, stat, readlink, mkdir, rmdir and
// unlink on a few hundred awkward guest paths; pathmap followed by the same
// call on the host path must give the same errno, st_ino, st_dev and type.
//
// # Caveats for callers
//
//   - A binding behaves like `mount --rbind`: below a binding's source the
//     host kernel sees the host's own mounts (devpts under /dev, ...). Guest
//     bindings themselves are matched by guest path, so a binding is not
//     visible through another guest path that reaches the same host
//     directory (as with non-recursive binds made in order).
//   - Binding.Guest is used as given (cleaned), not resolved through guest
//     symlinks. To sanitize it the way proot does (unless `!`), resolve it
//     first with Lookup(..., Follow|WantGuest) on a Mapper made of the
//     rootfs and the bindings before it, and use Result.Guest.
//   - cwd must be a canonical guest path (Result.Guest of a successful
//     chdir). It is not looked up again: that is the kernel's behaviour for
//     the current directory too.
//   - Host paths are longer than guest paths by the rootfs prefix: a guest
//     path that the kernel would accept may need a host path of PathMax
//     bytes or more, which then fails with ENAMETOOLONG (proot has the same
//     limit).
//   - A binding whose source is a magic link (proot's
//     `-b /proc/self/fd/0:/dev/stdin`) resolves to "/proc/<pid>/fd/0" even
//     unfollowed, so lstat sees a symlink where a real bind mount would show
//     the target (proot does the same).
//   - With the Entry flag, a last component that is a binding's mount point
//     gives the binding's source (Result.MountPoint): rmdir or rename of it
//     would act on the source, where a kernel would say EBUSY. The caller
//     must refuse those calls itself.
//   - Some errors about the last component are left to the kernel (see
//     Cost): Resolve may succeed where the kernel will then fail with the
//     errno it would have given in a chroot anyway (ENOTDIR under a file,
//     ENAMETOOLONG for a long name).
//   - open(O_CREAT) with a trailing slash fails with EISDIR in the kernel;
//     with Follow, Resolve reports ENOTDIR for an existing file first. Use
//     Entry for it (the kernel then says EISDIR).
//   - ToGuest picks the binding with the longest source prefix; when two
//     guest paths reach the same host path it cannot know which one a
//     process used: keep the guest path from Result.Guest where it matters
//     (cwd).
package pathmap
