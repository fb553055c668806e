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
//   - "." and "..", which the walk takes itself (they are not in the host
//     path it returns), are looked up in their directory, which the kernel
//     searches first: unless the Mapper's process is root, the walk checks
//     that search (faccessat X_OK) and gives EACCES where the caller may
//     not search the directory ("r/." and "r/.." of a directory r with
//     read but no search permission).
//   - Proc.Search lets a caller that may search any directory (a fake
//     root's emulated CAP_DAC_OVERRIDE) through directories the host user
//     may not search: where the host refused one of the walk's lookups in
//     a directory (EACCES), for the directory of a "." or "..", and for
//     the directory of a last component the walk leaves to the kernel
//     (one more faccessat there, remembered by the cache), the walk asks
//     Search, which may make the directory searchable for the call, and
//     looks again.
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
//     (exe, cwd, root, fd/N, map_files/*, ns/*, also under task/<tid>/),
//     however the walk got there (/proc/self, /proc/thread-self, /dev/fd,
//     a symbolic binding, a symlink to it, a relative path from a cwd
//     under /proc). The kernel follows one by jumping to the object it
//     stands for, which lives in the host's view: "/proc/self/fd/3/.." with
//     fd 3 open on the guest's "/" is the rootfs's host parent. So when one
//     must be followed, Resolve asks Proc.Links (MagicLinks, which the
//     tracer implements) what it stands for in the guest's view and goes
//     on walking that guest path, as through a symlink to it (it counts
//     towards MaxSymlinks): ".." and the names after the link are the
//     guest's, as in a chroot. Only a last component whose MagicTarget
//     says Jump (the caller's own file descriptors, which the kernel's
//     jump reaches exactly, deleted files and pipes included) is left to
//     the kernel: Result.Magic, with the host path "/proc/<pid>/...".
//     A link to something without a path (a pipe, a socket) gives
//     ENOTDIR when more components follow. Without Proc.Links the walk
//     stops at any magic link it must follow and returns its host path
//     with the rest of the guest path appended unchanged (Result.Magic),
//     which the kernel then walks in host terms; IsProcMagic tells such
//     host paths apart.
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
//     or ".." (which do not touch the host) is an lstat(2) made instead,
//     and, unless the process is root, a faccessat(2) of the directory's
//     search permission (remembered by the cache, see SearchDir).
//   - A final component that is not followed (follow=false without trailing
//     slash, or the Entry flag) costs nothing: the kernel looks it up itself
//     when the tracee's call runs on the returned path (with Proc.Search, a
//     faccessat of its directory, remembered by the cache).
//   - Binding mount points cost nothing: their type is taken once in New (a
//     real bind mount pins its source the same way).
//   - Without WithCache, nothing is cached between calls, so the result
//     always reflects the current host filesystem. With it, the answers of
//     these system calls are kept and checked for changes with inotify
//     (see Lookup cache): a walk whose answers are all cached costs one
//     system call, whatever the number of components.
//
// With the default (host) FS the system calls are made directly on a pooled
// buffer: the only allocation of Resolve is the returned string (also when
// the answers come from the cache).
//
// # Lookup cache
//
// With the WithCache option (host filesystem only), a Mapper remembers the
// answer of every lstat(2) and readlink(2) the walk makes, per host path:
// the file type, the symlink target, or the errors ENOENT, ENOTDIR, EINVAL
// (not a symlink) and ENAMETOOLONG, and of every faccessat(2) X_OK of a
// directory that granted the search (kept in the directory's own node,
// which a change of its attributes or above it drops as it drops the
// answers below it). Other errors (EACCES, EIO, ...) are
// not kept. The answers stay exactly what the uncached walk would give,
// because an answer is kept only while inotify could have reported every
// change that may alter it:
//
//   - What an lstat or readlink of D/N says depends only on the name N in
//     directory D and on the path to D: each name on it, from "/" down,
//     and the search permission of each directory on it. So every
//     directory that holds a kept answer is watched, and so is every one
//     of its ancestors up to "/" (watches are added top-down, each after
//     its parent's, and before the system call whose answer is kept), for
//     IN_CREATE, IN_DELETE, IN_MOVED_FROM, IN_MOVED_TO (a name appears,
//     disappears or is replaced: symlinks are never changed in place),
//     IN_ATTRIB (permissions, ownership, ACLs and security labels; of the
//     directory itself or of a name in it), IN_DELETE_SELF, IN_MOVE_SELF,
//     and the kernel's IN_IGNORED, IN_UNMOUNT and IN_Q_OVERFLOW, with
//     IN_ONLYDIR|IN_DONT_FOLLOW so that the directory watched is the one
//     the path names, and IN_EXCL_UNLINK. Except that a sticky,
//     world-writable directory (a /tmp) whose parent's watch has IN_ATTRIB
//     is watched without it: its own attribute changes reach the parent's
//     watch as a name's, every directory below it is watched with it, and
//     a kept answer about a file is only its type; with IN_ATTRIB the
//     kernel marks (and unmarks, when the watch goes) every child dentry it
//     caches there, negative ones included, which took 20-40 ms on a /tmp
//     where many temporary names had come and gone.
//   - An event about name N in D drops D/N's answer and everything kept
//     below D/N; an event about D itself drops everything kept below D; a
//     queue overflow drops everything. Since a case-insensitive directory
//     (ext4, F2FS or tmpfs casefolding, XFS ASCII-CI) finds N under other
//     names, an event about an ASCII name also drops the names equal to it
//     but for ASCII case and every non-ASCII name in D, and one about a
//     non-ASCII name everything in D; on vfat, exFAT, NTFS and JFS, whose
//     names have other aliases (8.3 names, trailing dots), any event about
//     a name drops everything in D. Events from any process count, the
//     tracees' and anyone else's, through any path or mount that reaches
//     the same inode (several host paths of one directory share its
//     watch).
//   - Mounts and unmounts, which inotify does not report (a mount over an
//     intermediate directory changes what the path names without touching
//     any name), are seen through /proc/self/mountinfo, whose poll reports
//     any change to the mount namespace; then everything is dropped.
//   - Changes are applied before a walk uses its first kept answer: one
//     epoll_pwait(2) with a zero timeout over the inotify and mountinfo
//     descriptors, which finds nothing when nothing changed (then inotify
//     is read until drained). The kernel queues an event during the system
//     call that makes the change, after the change is visible, so any
//     change completed before a walk starts is seen by it; a change made
//     while a walk runs may or may not be, exactly as with the uncached
//     walk, whose system calls race with it the same way. A lock is held
//     from a system call until its answer is kept, so no event can be
//     consumed in between (Lookup stays safe for concurrent use). The
//     lookups of one system call that share a Proc.Batch (its two paths,
//     a dirfd's name and the path) make that check once: the caller
//     promises to change nothing on the host between them, so what they
//     could miss is a change concurrent with the call itself.
//
// What is never cached: anything in a directory that could not be watched
// (inotify_add_watch failed: missing, not readable, the inotify watch limit
// ENOSPC), or that is on a filesystem where changes happen without passing
// through this kernel's VFS, so without events: procfs (/proc/self,
// /proc/<pid> change with the reader and with processes; procfs magic
// links are handed to the kernel anyway), sysfs, cgroupfs, devpts, debugfs
// and other pseudo filesystems, FUSE (Android's /sdcard: the daemon
// changes the lower files), network filesystems, sdcardfs. The filesystem
// type of each directory is taken once, with statfs(2), when it is first
// watched; only local filesystems are accepted (ext2/3/4, XFS, btrfs,
// F2FS, tmpfs and devtmpfs, ramfs, vfat, exFAT, EROFS, squashfs,
// ISO 9660, overlayfs, bcachefs, NILFS, ReiserFS, UDF, ZFS, NTFS, JFS);
// anything else is looked up every time, as without the cache. Such
// directories are remembered as unwatchable (their parent's watch drops
// that when their name changes) so that the walk does not retry them;
// not one whose watch failed because it was no directory then (ENOENT,
// ENOTDIR, ELOOP: a symlink swapped in since the lookup), which PinnedName
// and PinnedFile drop at once, answering Stale.
//
// Limits of what is seen:
//
//   - A directory above the rootfs or a binding's source that the tracer
//     cannot read cannot be watched (on Android: /data, /data/data). The
//     chain of directories down to the rootfs and the bindings' sources is
//     kept anyway, so changes to those unreadable directories themselves
//     (renaming /data/data, a permission change there) are not seen;
//     renaming or replacing the rootfs directory itself, or anything below
//     it, is.
//   - A change in the permissions granted by a security module's policy
//     (an SELinux policy reload) is not seen; relabelling a file is
//     (IN_ATTRIB).
//   - Changes to an overlayfs's layers made beside the overlay, which
//     overlayfs itself leaves undefined.
//   - Without /proc/self/mountinfo (procfs not mounted, or not readable)
//     mount changes are not seen; the cache then reads the inotify
//     descriptor directly.
//   - Mounts are seen in the tracer's mount namespace, which is the
//     tracees' (droidroot does not create namespaces).
//
// Size: at most 8192 directories (or half the user's inotify watches,
// fs.inotify.max_user_watches, if that is less) and 32768 answers; when
// either is reached, everything is dropped at once (by replacing the
// inotify instance) and the cache fills again. A cached Mapper holds up to
// three close-on-exec file descriptors until Close. The system calls the
// cache uses are allowed to Android apps on every ABI: inotify_init1,
// inotify_add_watch, inotify_rm_watch, epoll_create1, epoll_ctl,
// epoll_pwait (not epoll_wait, which traps on x86_64), read, statfs (statfs64
// on 32-bit ABIs), openat, close. Mapper.CacheStats reports hits, misses
// and the system calls made.
//
// # Verification
//
// The tests compare Resolve with the kernel itself: as root, a re-executed
// test binary unshares its mount namespace, bind-mounts the same bindings
// into the rootfs, chroots and runs lstat, stat, readlink, mkdir, rmdir and
// unlink on a few hundred awkward guest paths; pathmap followed by the same
// call on the host path must give the same errno, st_ino, st_dev and type.
// The oracle, the real-tree tests and the fuzz test run with and without the
// lookup cache (the fuzz test compares the two on every input); the cache
// tests compare a cached Mapper with an uncached one after changing the
// tree in every way that matters (from this process and another one, as
// root and as an ordinary user, with mounts in a private namespace, and by
// random changes).
//
// # Handing a host path to the kernel
//
// A host path a lookup returns has no symlink left, but the kernel walks it
// later, for the tracee, in the host's view: a directory on it swapped with
// a symlink in between would be followed with the host's root. With the
// lookup cache, Mapper.PinnedName gives the name to hand the kernel
// instead: the last component below the parent directory as the lookup
// found it, which the cache holds open ("/proc/<pid>/fd/<N>/<last>"; see
// pin.go). It is a map lookup and one string per call (the descriptor and
// its prefix are made once per directory). For a call that follows the
// last component, Mapper.PinnedFile hands over the file itself, an O_PATH
// descriptor the name's cache entry keeps ("/proc/<pid>/fd/<M>"), which
// the caller gives back with ReleaseFile once the kernel has walked it,
// and a missing name below a removed directory, where nothing appears: a
// symlink swapped in for the last component is not followed either.
// Mapper.HostView tells when no
// pinning is needed: the root is the host's "/" and no binding hides a
// host file (each shows a directory at its own path, or covers a path
// missing on the host), so a walk in the host's view reaches nothing the
// guest could not name.
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
//     bytes or more. For a relative path walked from the kernel's own
//     directory (Proc.KernelCwd, or a dirfd: Proc.Dir), Result.Rel then
//     names Host relative to that directory ("../" up to their longest
//     common ancestor, then the rest of Host), which the kernel takes
//     physically: right, since a host path the walk builds has no symlinks
//     (canonical mount sources, components looked up; only an unfollowed
//     last component may be a symlink). The walk's own lookups of such
//     paths go through /proc/<tid>/cwd or /proc/<tid>/fd/<fd> the same way.
//     This works when the target lies near that directory on the host
//     (the same mount, or a binding whose source is beside it). An
//     absolute path, a walk without such a directory, and a target whose
//     relative form is PathMax bytes or more too (in a binding whose
//     source lies elsewhere) fail with ENAMETOOLONG, as in proot. A
//     dirfd deeper than PATH_MAX, whose host path the kernel cannot print
//     back, is named by Mapper.DirHost (climbing through "..", as getcwd
//     did) for Proc.Dir; that needs read permission on the directories
//     it climbs.
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
