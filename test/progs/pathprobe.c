/*
 * pathprobe - the path-semantics oracle probe for droidroot's e2e tests.
 *
 * It runs a list of file-system operations and prints one line per operation: the operation
 * as written, " -> ", and the result (or the errno name). The same ops file is run under a real
 * chroot with real bind mounts (test/oracle/chroot.sh, the kernel is the ground truth) and under
 * droidroot; the two transcripts must be identical byte for byte.
 *
 * usage: pathprobe [-r] [-f OPSFILE]... [OP]...
 *   -f FILE  read operations from FILE, one per line ("-" = stdin); '#' starts a comment line
 *   OP       one operation per argument (same syntax as a line)
 *   -r       also print raw inode numbers (for humans; breaks comparison between two copies)
 * Options and operations are processed in order.
 *
 * Determinism: no pids, no timestamps. Inode numbers are printed as labels naming the op line
 * where the probe first saw that (dev, ino) pair (ino=@12: "the file first seen on line 12"),
 * so two runs over two identical copies of a tree give identical transcripts, "is this the
 * same file?" stays visible, and one differing answer does not renumber the rest. A label is
 * forgotten when the probe deletes the last link of its file, so an inode number the kernel
 * reuses gets a fresh label in both runs. st_dev is printed as major:minor.
 *
 * Line syntax: tokens separated by blanks. A token in double quotes may contain blanks and the
 * escapes \" \\ \n \t \xHH; "" is the empty string. Inside any token {N*TEXT} (nestable)
 * expands to TEXT repeated N times (for long paths). FD is a number (a slot opened with `fd`)
 * or "cwd". Results longer than 160 bytes are printed as "head"..."tail"(len=N).
 * Exit status: 0, or 3 if a line was malformed (USAGE, PARSE-ERROR, UNKNOWN-OP, BAD...).
 *
 * Operations:
 *   stat P | lstat P | statx P | lstatx P   file identity and type
 *   readlink P | getcwd | cd P | fchdir FD
 *   open P FLAGS [MODE]      FLAGS: comma list of rdonly wronly rdwr creat excl trunc append
 *                            directory nofollow path tmpfile cloexec; prints fstat of the fd
 *   access P MODE            MODE: any of f r w x
 *   eaccess P MODE | laccess P MODE  faccessat(2) with AT_EACCESS / AT_SYMLINK_NOFOLLOW
 *   mkdir P | rmdir P | unlink P | rename A B | link A B | symlink TARGET P | chmod P MODE
 *   truncate P LEN | write P TEXT | cat P | ls P (sorted names, / for dirs, @ for symlinks)
 *   getxattr P NAME | lgetxattr P NAME | setxattr P NAME VALUE | listxattr P (names, comma-separated)
 *   | removexattr P NAME | fstatfs P (its file system's type, from a descriptor)
 *   | statfs P (its file system's type, from the path)
 *   acl P UID PERM           a POSIX access ACL on P: its modes' owner, group and other
 *                            entries, a mask rwx and user UID with PERM (octal, 0-7)
 *   setuid UID               setgroups (none), setresgid and setresuid to UID (for good:
 *                            the lines after run as that user)
 *   fd N P FLAGS             open P and keep it as descriptor N (dup2), print fstat
 *   close N
 *   openat2 P FLAGS RESOLVE [MODE]  openat2(2); RESOLVE: comma list of noxdev nomagiclinks
 *                            nosymlinks beneath inroot cached, or none; prints fstat of the fd
 *   at FD OP ARGS...         *at variant with dirfd FD: stat lstat empty statx readlink open
 *                            openat2 access mkdir rmdir unlink rename link symlink nullstat
 *                            nullstatx
 *   nullstat FLAGS | nullstatx FLAGS  the raw newfstatat(2) / statx(2) with a NULL path (FLAGS:
 *                            comma list of empty nofollow, or none); prints the stat and
 *                            "dirfd=same" or "dirfd=other": whether it is the file of the
 *                            dirfd (fstat), or of "." for cwd
 *   inotify FD P [MASK]      inotify_add_watch(FD, P, MASK) (default IN_ALL_EVENTS; a number,
 *                            0x for hex); FD "new" is a fresh inotify instance (closed
 *                            afterwards); P "@bad" is an unmapped address, "@null" NULL;
 *                            prints ok or the errno
 *   bind P                   AF_UNIX stream socket bound at P and listening (kept open);
 *                            prints getsockname
 *   connect P                new AF_UNIX socket connected to P; prints getpeername, closes
 *   closesocks               close all sockets made by bind
 *   dgram S C [ALEN]         AF_UNIX datagrams: a receiver bound at S, a sender bound at C
 *                            ("-": unbound) sends to S; prints the sender's name recvfrom
 *                            reports in an ALEN-byte buffer, its whole length, and whether a
 *                            reply to that name reaches the sender
 *   exec P [ARGS...]         execv P in a child (argv[0] = P); prints the errno, or the exit
 *                            status and the child's output
 *   fexec FD [ARGS...]       the same with fexecve(FD)
 *   execat FD P FLAGS [ARGS...]  execveat(FD, P, argv, environ, FLAGS), argv[0] = P; FLAGS:
 *                            comma list of empty nofollow bad (an invalid bit), or none
 *   argv                     print argc, every argv[] and AT_EXECFN, then exit 0 (the
 *                            interpreter of a script: #!/progs/pathprobe argv)
 *   echo TEXT                print TEXT (section markers)
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/un.h>
#include <linux/openat2.h>
#include <sys/auxv.h>
#include <sys/inotify.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <grp.h>
#include <sys/vfs.h>
#include <unistd.h>

#define MAXTOK 16
#define BIGBUF (PATH_MAX * 4)

static int raw_ino;
static int main_argc; /* for the argv op */
static char **main_argv;
static int bad; /* an op line was malformed: exit status 3 so a broken ops file is noticed */

static void bad_op(const char *what)
{
	printf("%s", what);
	bad = 1;
}

static void bad_op2(const char *what, const char *arg)
{
	printf("%s(%s)", what, arg);
	bad = 1;
}

/* ---- output ---------------------------------------------------------------------------- */

static const char *errname(int e)
{
	switch (e) {
#define E(x) case x: return #x;
	E(EPERM) E(ENOENT) E(ESRCH) E(EINTR) E(EIO) E(ENXIO) E(E2BIG) E(ENOEXEC) E(EBADF)
	E(ECHILD) E(EAGAIN) E(ENOMEM) E(EACCES) E(EFAULT) E(EBUSY) E(EEXIST) E(EXDEV) E(ENODEV)
	E(ENOTDIR) E(EISDIR) E(EINVAL) E(ENFILE) E(EMFILE) E(ENOTTY) E(ETXTBSY) E(EFBIG)
	E(ENOSPC) E(ESPIPE) E(EROFS) E(EMLINK) E(EPIPE) E(ERANGE) E(ENODATA) E(ENAMETOOLONG) E(ENOSYS)
	E(ENOTEMPTY) E(ELOOP) E(ENOTSOCK) E(EADDRINUSE) E(EADDRNOTAVAIL) E(ECONNREFUSED)
	E(EISCONN) E(ENOTCONN) E(EOPNOTSUPP) E(EAFNOSUPPORT) E(EPROTOTYPE)
#undef E
	}
	static char buf[32];
	snprintf(buf, sizeof buf, "errno%d", e);
	return buf;
}

/* put_str prints s quoted and escaped; long strings are shortened to head...tail plus length. */
static void put_str(const char *s, size_t n)
{
	size_t i;
	if (n > 160) {
		putchar('"');
		for (i = 0; i < 60; i++)
			putchar(isprint((unsigned char)s[i]) ? s[i] : '?');
		printf("\"...\"");
		for (i = n - 60; i < n; i++)
			putchar(isprint((unsigned char)s[i]) ? s[i] : '?');
		printf("\"(len=%zu)", n);
		return;
	}
	putchar('"');
	for (i = 0; i < n; i++) {
		unsigned char c = s[i];
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c == '\n')
			printf("\\n");
		else if (c == '\t')
			printf("\\t");
		else if (c < 32 || c == 127)
			printf("\\x%02x", c);
		else
			putchar(c);
	}
	putchar('"');
}

/* ---- inode labels ---------------------------------------------------------------------- */

/* A label names an inode by where the probe first saw it: "@LINE" (the line of the ops file,
 * or the index of the argument) or "@LINE.K" for the K-th new inode seen on one line. So a
 * run that answers one line differently does not renumber every later label. */
struct label {
	dev_t dev;
	ino_t ino;
	int line, sub;
};
static struct label labels[4096];
static int nlabels;
static int cur_line, cur_line_new; /* line being run; new inodes seen on it so far */

static const char *label_of(dev_t dev, ino_t ino)
{
	static char buf[32];
	struct label *l = NULL;
	int i;
	for (i = 0; i < nlabels && !l; i++)
		if (labels[i].dev == dev && labels[i].ino == ino)
			l = &labels[i];
	if (!l) {
		if (nlabels == (int)(sizeof labels / sizeof labels[0]))
			return "@?";
		l = &labels[nlabels++];
		l->dev = dev;
		l->ino = ino;
		l->line = cur_line;
		l->sub = ++cur_line_new;
	}
	if (l->sub == 1)
		snprintf(buf, sizeof buf, "@%d", l->line);
	else
		snprintf(buf, sizeof buf, "@%d.%d", l->line, l->sub);
	return buf;
}

static void forget(dev_t dev, ino_t ino)
{
	int i;
	for (i = 0; i < nlabels; i++)
		if (labels[i].dev == dev && labels[i].ino == ino) {
			labels[i] = labels[--nlabels];
			return;
		}
}

/* ---- stat printing --------------------------------------------------------------------- */

static const char *ftype(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG: return "reg";
	case S_IFDIR: return "dir";
	case S_IFLNK: return "lnk";
	case S_IFCHR: return "chr";
	case S_IFBLK: return "blk";
	case S_IFIFO: return "fifo";
	case S_IFSOCK: return "sock";
	}
	return "?";
}

static void put_stat(const struct stat *st)
{
	/* Directory sizes are file-system specific but identical for identical copies. Symlink
	 * sizes are the target length. */
	printf("%s mode=0%o nlink=%lu uid=%u gid=%u size=%lld dev=%u:%u ino=%s", ftype(st->st_mode),
	       (unsigned)st->st_mode, (unsigned long)st->st_nlink, (unsigned)st->st_uid,
	       (unsigned)st->st_gid, (long long)st->st_size, major(st->st_dev), minor(st->st_dev),
	       label_of(st->st_dev, st->st_ino));
	if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
		printf(" rdev=%u:%u", major(st->st_rdev), minor(st->st_rdev));
	if (raw_ino)
		printf(" rawino=%llu", (unsigned long long)st->st_ino);
	/* A removed file or directory (a removed cwd, an unnamed file) frees its inode number
	 * once nothing holds it, and the file system may give the number to a new file in one
	 * run and not in the other: its label is not kept. */
	if (st->st_nlink == 0)
		forget(st->st_dev, st->st_ino);
}

static void put_statx(const struct statx *sx)
{
	struct stat st;
	memset(&st, 0, sizeof st);
	st.st_mode = sx->stx_mode;
	st.st_nlink = sx->stx_nlink;
	st.st_uid = sx->stx_uid;
	st.st_gid = sx->stx_gid;
	st.st_size = sx->stx_size;
	st.st_dev = makedev(sx->stx_dev_major, sx->stx_dev_minor);
	st.st_rdev = makedev(sx->stx_rdev_major, sx->stx_rdev_minor);
	st.st_ino = sx->stx_ino;
	put_stat(&st);
}

/* ---- results ----------------------------------------------------------------------------- */

static int fail(void);

/*
 * exec PATH [ARGS...] / fexec FD [ARGS...]: run it in a child (argv[0] = PATH) with stdout
 * captured; print the exec errno, or the exit status and the output (escaped).
 */
static int do_exec(int viafd, int dirfd, const char *path, int atflags, int nargs, char **args)
{
	char *argv[64];
	int i;
	int errp[2], outp[2], status, e = 0;
	char out[2048];
	ssize_t n, got = 0;
	pid_t pid;

	for (i = 0; i < nargs && i < 63; i++)
		argv[i] = args[i];
	argv[i] = 0;
	fflush(stdout);
	if (pipe2(errp, O_CLOEXEC) || pipe(outp))
		return fail();
	pid = fork();
	if (pid < 0)
		return fail();
	if (pid == 0) {
		close(errp[0]);
		close(outp[0]);
		dup2(outp[1], 1);
		if (path)
			syscall(SYS_execveat, dirfd, path, argv, environ, atflags);
		else if (viafd)
			fexecve(atoi(argv[0]), argv, environ);
		else
			execv(argv[0], argv);
		e = errno;
		(void)!write(errp[1], &e, sizeof e);
		_exit(127);
	}
	close(errp[1]);
	close(outp[1]);
	while ((n = read(outp[0], out + got, sizeof out - 1 - got)) > 0)
		got += n;
	out[got] = 0;
	close(outp[0]);
	n = read(errp[0], &e, sizeof e);
	close(errp[0]);
	waitpid(pid, &status, 0);
	if (n == sizeof e) {
		errno = e;
		return fail();
	}
	printf("exit=%d out=\"", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	for (char *c = out; *c; c++)
		if (*c == '\n')
			printf("\\n");
		else
			putchar(*c);
	printf("\"");
	return 0;
}

static int fail(void)
{
	printf("%s", errname(errno));
	return -1;
}

static int okay(int r)
{
	if (r < 0)
		return fail();
	printf("ok");
	return 0;
}

/* do_acl sets P's POSIX access ACL (the kernel's xattr form, struct
 * posix_acl_xattr_header and entries): owner, group and other from P's
 * modes, user uid with perm, and a mask rwx. */
static int do_acl(const char *p, uint32_t uid, uint16_t perm)
{
	struct stat st;
	if (stat(p, &st) != 0)
		return okay(-1);
	struct {
		uint16_t tag, perm;
		uint32_t id;
	} e[5] = {
		{0x01 /* ACL_USER_OBJ */, (uint16_t)((st.st_mode >> 6) & 7), 0xffffffffu},
		{0x02 /* ACL_USER */, perm, uid},
		{0x04 /* ACL_GROUP_OBJ */, (uint16_t)((st.st_mode >> 3) & 7), 0xffffffffu},
		{0x10 /* ACL_MASK */, 7, 0xffffffffu},
		{0x20 /* ACL_OTHER */, (uint16_t)(st.st_mode & 7), 0xffffffffu},
	};
	char buf[4 + sizeof e];
	uint32_t version = 2;
	memcpy(buf, &version, 4);
	memcpy(buf + 4, e, sizeof e);
	return okay(setxattr(p, "system.posix_acl_access", buf, sizeof buf, 0));
}

/* ---- argument parsing ---------------------------------------------------------------------- */

static int parse_flags(const char *s, int *out)
{
	char buf[256], *tok, *save;
	int f = 0;
	snprintf(buf, sizeof buf, "%s", s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
#define F(name, val) else if (!strcmp(tok, name)) f |= val;
		if (0) {}
		F("rdonly", O_RDONLY) F("wronly", O_WRONLY) F("rdwr", O_RDWR) F("creat", O_CREAT)
		F("excl", O_EXCL) F("trunc", O_TRUNC) F("append", O_APPEND) F("directory", O_DIRECTORY)
		F("nofollow", O_NOFOLLOW) F("path", O_PATH) F("tmpfile", O_TMPFILE)
		F("cloexec", O_CLOEXEC)
		else {
			bad_op2("BADFLAG", tok);
			return -1;
		}
#undef F
	}
	*out = f;
	return 0;
}

static int parse_fd(const char *s, int *fd)
{
	char *end;
	long v;
	if (!strcmp(s, "cwd")) {
		*fd = AT_FDCWD;
		return 0;
	}
	v = strtol(s, &end, 10);
	if (*s == 0 || *end != 0) {
		bad_op2("BADFD", s);
		return -1;
	}
	*fd = (int)v;
	return 0;
}

static int parse_access(const char *s)
{
	int m = 0;
	for (; *s; s++)
		m |= *s == 'r' ? R_OK : *s == 'w' ? W_OK : *s == 'x' ? X_OK : 0;
	return m; /* "f" -> F_OK (0) */
}

/* ---- operations ---------------------------------------------------------------------------- */

/* before_delete remembers the identity of what an unlink/rmdir/rename is about to remove, so
 * its label can be dropped if the removal frees the inode. */
static struct stat victim;
static int have_victim;

static void note_victim(int dirfd, const char *p)
{
	have_victim = fstatat(dirfd, p, &victim, AT_SYMLINK_NOFOLLOW) == 0;
}

static void drop_victim(void)
{
	if (have_victim && (S_ISDIR(victim.st_mode) || victim.st_nlink <= 1))
		forget(victim.st_dev, victim.st_ino);
	have_victim = 0;
}

static int do_open(int dirfd, const char *p, const char *flags, const char *mode, int keep)
{
	int f, fd;
	struct stat st;
	if (parse_flags(flags, &f) < 0)
		return -1;
	fd = openat(dirfd, p, f, mode ? (mode_t)strtol(mode, NULL, 8) : 0644);
	if (fd < 0)
		return fail();
	if (keep >= 0 && fd != keep) {
		if (dup3(fd, keep, f & O_CLOEXEC) < 0) {
			close(fd);
			return fail();
		}
		close(fd);
		fd = keep;
	}
	if (fstat(fd, &st) < 0) {
		printf("fstat:%s", errname(errno));
	} else {
		put_stat(&st);
		/* An unnamed file (O_TMPFILE) dies with its last descriptor: drop its label. */
		if (keep < 0 && st.st_nlink == 0)
			forget(st.st_dev, st.st_ino);
	}
	if (keep < 0)
		close(fd);
	return 0;
}

static int parse_resolve(const char *s, unsigned long long *out)
{
	char buf[256], *tok, *save;
	unsigned long long r = 0;
	snprintf(buf, sizeof buf, "%s", s);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
#define R(name, val) else if (!strcmp(tok, name)) r |= val;
		if (!strcmp(tok, "none")) {}
		R("noxdev", RESOLVE_NO_XDEV) R("nomagiclinks", RESOLVE_NO_MAGICLINKS)
		R("nosymlinks", RESOLVE_NO_SYMLINKS) R("beneath", RESOLVE_BENEATH)
		R("inroot", RESOLVE_IN_ROOT) R("cached", RESOLVE_CACHED)
		else {
			bad_op2("BADRESOLVE", tok);
			return -1;
		}
#undef R
	}
	*out = r;
	return 0;
}

/* do_openat2 opens P with openat2(2) and prints fstat of the result, like do_open. */
static int do_openat2(int dirfd, const char *p, const char *flags, const char *resolve, const char *mode)
{
	struct open_how how;
	struct stat st;
	int f, fd;
	memset(&how, 0, sizeof how);
	if (parse_flags(flags, &f) < 0 || parse_resolve(resolve, &how.resolve) < 0)
		return -1;
	how.flags = (unsigned)f;
	if (mode)
		how.mode = (unsigned long long)strtol(mode, NULL, 8);
	/* EAGAIN: a ".." lookup under RESOLVE_IN_ROOT/BENEATH raced with a
	 * rename or mount anywhere on the system (other tests run beside this
	 * one); openat2(2) says to retry. */
	for (int try = 0; (fd = (int)syscall(SYS_openat2, dirfd, p, &how, sizeof how)) < 0 && errno == EAGAIN &&
			!(how.resolve & RESOLVE_CACHED) && try < 1000;
	     try++)
		;
	if (fd < 0)
		return fail();
	if (fstat(fd, &st) < 0) {
		printf("fstat:%s", errname(errno));
	} else {
		put_stat(&st);
		/* An unnamed file (O_TMPFILE) dies with its descriptor: drop its label. */
		if (st.st_nlink == 0)
			forget(st.st_dev, st.st_ino);
	}
	close(fd);
	return 0;
}

static int do_readlink(int dirfd, const char *p)
{
	static char buf[BIGBUF];
	ssize_t n = readlinkat(dirfd, p, buf, sizeof buf);
	if (n < 0)
		return fail();
	put_str(buf, (size_t)n);
	return 0;
}

/* realpath PATH: the result into a buffer (on ENOENT or EACCES also what it holds, the part
 * resolved), and the allocated form's (canonicalize_file_name). */
static int do_realpath(const char *p)
{
	static char buf[PATH_MAX];
	buf[0] = 0;
	char *r = realpath(p, buf);
	int e = errno;
	if (r)
		put_str(buf, strlen(buf));
	else
		printf("%s partial ", errname(e));
	if (!r && (e == ENOENT || e == EACCES))
		put_str(buf, strlen(buf));
	char *m = canonicalize_file_name(p);
	if (m) {
		printf(" alloc ");
		put_str(m, strlen(m));
		free(m);
	} else {
		printf(" alloc %s", errname(errno));
	}
	return r ? 0 : -1;
}

static int do_statx(int dirfd, const char *p, int flags)
{
	struct statx sx;
	if (statx(dirfd, p, flags, STATX_BASIC_STATS, &sx) < 0)
		return fail();
	put_statx(&sx);
	return 0;
}

static int cmpstr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int do_ls(const char *p)
{
	DIR *d = opendir(p);
	struct dirent *e;
	char *names[1024];
	int n = 0, i;
	if (!d)
		return fail();
	while ((e = readdir(d)) != NULL && n < 1024) {
		char buf[NAME_MAX + 3];
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(buf, sizeof buf, "%s%s", e->d_name,
			 e->d_type == DT_DIR ? "/" : e->d_type == DT_LNK ? "@" : "");
		names[n++] = strdup(buf);
	}
	closedir(d);
	qsort(names, n, sizeof names[0], cmpstr);
	printf("[");
	for (i = 0; i < n; i++) {
		printf(i ? " %s" : "%s", names[i]);
		free(names[i]);
	}
	printf("]");
	return 0;
}

static int do_cat(const char *p)
{
	char buf[257];
	ssize_t n;
	int fd = open(p, O_RDONLY);
	if (fd < 0)
		return fail();
	n = read(fd, buf, 256);
	close(fd);
	if (n < 0)
		return fail();
	put_str(buf, (size_t)n);
	return 0;
}

static int do_write(const char *p, const char *text)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	size_t n = strlen(text);
	if (fd < 0)
		return fail();
	if (write(fd, text, n) != (ssize_t)n) {
		close(fd);
		return fail();
	}
	close(fd);
	printf("ok");
	return 0;
}

static int socks[64], nsocks;

static int unix_addr(const char *p, struct sockaddr_un *sa, socklen_t *len)
{
	size_t n = strlen(p);
	memset(sa, 0, sizeof *sa);
	sa->sun_family = AF_UNIX;
	if (n > sizeof sa->sun_path) { /* the kernel takes 108 bytes without a NUL */
		printf("TOOLONG");
		return -1;
	}
	memcpy(sa->sun_path, p, n);
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (n < sizeof sa->sun_path));
	return 0;
}

static void put_sockname(const char *what, const struct sockaddr_un *sa, socklen_t len)
{
	size_t n = len > offsetof(struct sockaddr_un, sun_path) ? len - offsetof(struct sockaddr_un, sun_path) : 0;
	printf("%s len=%u path=", what, (unsigned)len);
	put_str(sa->sun_path, strnlen(sa->sun_path, n));
}

static int do_bind(const char *p)
{
	struct sockaddr_un sa, got;
	socklen_t len, glen = sizeof got;
	int fd;
	if (unix_addr(p, &sa, &len) < 0)
		return -1;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return fail();
	if (bind(fd, (struct sockaddr *)&sa, len) < 0 || listen(fd, 4) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return fail();
	}
	if (nsocks < 64)
		socks[nsocks++] = fd;
	memset(&got, 0, sizeof got);
	if (getsockname(fd, (struct sockaddr *)&got, &glen) < 0)
		return fail();
	put_sockname("sockname", &got, glen);
	return 0;
}

static int do_connect(const char *p)
{
	struct sockaddr_un sa, got;
	socklen_t len, glen = sizeof got;
	int fd;
	if (unix_addr(p, &sa, &len) < 0)
		return -1;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return fail();
	if (connect(fd, (struct sockaddr *)&sa, len) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return fail();
	}
	memset(&got, 0, sizeof got);
	if (getpeername(fd, (struct sockaddr *)&got, &glen) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return fail();
	}
	put_sockname("peername", &got, glen);
	close(fd);
	return 0;
}

/* do_dgram: AF_UNIX datagram sockets, a receiver bound at s and a sender bound at c ("-": an
 * unbound sender); the sender sends to s, the receiver's recvfrom reports the sender's name
 * in a buffer of alen bytes (the kernel writes what fits and reports the whole length), and,
 * when the name fit, the receiver replies to it and the sender receives the reply. */
static int do_dgram(const char *s, const char *c, socklen_t alen)
{
	struct sockaddr_un sa, ca, from;
	socklen_t slen = 0, clen = 0, flen = alen;
	char buf[8];
	int r = -1, w = -1, ret = -1;
	if (alen > sizeof from || unix_addr(s, &sa, &slen) < 0 || (strcmp(c, "-") && unix_addr(c, &ca, &clen) < 0))
		return -1;
	r = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	w = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (r < 0 || w < 0 || bind(r, (struct sockaddr *)&sa, slen) < 0 ||
	    (strcmp(c, "-") && bind(w, (struct sockaddr *)&ca, clen) < 0) ||
	    sendto(w, "q", 1, 0, (struct sockaddr *)&sa, slen) != 1) {
		ret = fail();
		goto out;
	}
	memset(&from, 'X', sizeof from);
	if (recvfrom(r, buf, sizeof buf, 0, (struct sockaddr *)&from, &flen) != 1) {
		ret = fail();
		goto out;
	}
	put_sockname("from", &from, flen < alen ? flen : alen);
	printf(" reported=%u", (unsigned)flen);
	if (flen > 2 && flen <= alen) {
		if (sendto(r, "reply", 5, 0, (struct sockaddr *)&from, flen) != 5) {
			printf(" reply=");
			ret = fail();
			goto out;
		}
		if (recv(w, buf, sizeof buf, MSG_DONTWAIT) != 5) {
			printf(" recv=");
			ret = fail();
			goto out;
		}
		printf(" reply=ok");
	}
	ret = 0;
out:
	if (r >= 0)
		close(r);
	if (w >= 0)
		close(w);
	return ret;
}

/*
 * do_nullstat runs newfstatat(dirfd, NULL, &st, flags) or statx(dirfd, NULL, flags, ...) as
 * raw system calls (glibc may check or rewrite the NULL). From Linux 6.11 a NULL path with
 * AT_EMPTY_PATH names the dirfd as "" does; before, it is EFAULT. Prints the stat and whether
 * it is the dirfd's file (the cwd's for AT_FDCWD).
 */
static int do_nullstat(int dirfd, const char *flags, int isstatx)
{
	char buf[64], *tok, *save;
	struct stat st, ref;
	struct statx sx;
	int f = 0;
	long r;
	snprintf(buf, sizeof buf, "%s", flags);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "empty"))
			f |= AT_EMPTY_PATH;
		else if (!strcmp(tok, "nofollow"))
			f |= AT_SYMLINK_NOFOLLOW;
		else if (strcmp(tok, "none")) {
			bad_op2("BADFLAG", tok);
			return -1;
		}
	}
	if (isstatx) {
		memset(&sx, 0, sizeof sx);
		r = syscall(SYS_statx, dirfd, (const char *)NULL, f, STATX_BASIC_STATS, &sx);
	} else {
		memset(&st, 0, sizeof st);
		r = syscall(SYS_newfstatat, dirfd, (const char *)NULL, &st, f);
	}
	if (r < 0)
		return fail();
	if (isstatx) {
		put_statx(&sx);
		st.st_dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
		st.st_ino = sx.stx_ino;
	} else {
		put_stat(&st);
	}
	if ((dirfd == AT_FDCWD ? stat(".", &ref) : fstat(dirfd, &ref)) < 0)
		printf(" dirfd:%s", errname(errno));
	else
		printf(" dirfd=%s", ref.st_dev == st.st_dev && ref.st_ino == st.st_ino ? "same" : "other");
	return 0;
}

/* do_inotify runs inotify_add_watch(fd, p, mask); fd "new" is a fresh instance. */
static int do_inotify(const char *fdarg, const char *p, uint32_t mask)
{
	const char *path = p;
	int fd, r, e;
	if (!strcmp(p, "@bad"))
		path = (const char *)1;
	else if (!strcmp(p, "@null"))
		path = NULL;
	if (!strcmp(fdarg, "new")) {
		fd = inotify_init1(IN_CLOEXEC);
		if (fd < 0) {
			printf("inotify_init1:");
			return fail();
		}
	} else if (parse_fd(fdarg, &fd) < 0) {
		return -1;
	}
	r = (int)syscall(SYS_inotify_add_watch, fd, path, mask);
	e = errno;
	if (!strcmp(fdarg, "new"))
		close(fd);
	errno = e;
	return okay(r < 0 ? -1 : 0);
}

/* run_at executes OP with dirfd (AT_FDCWD for the plain forms). */
static int run_at(int dirfd, int argc, char **argv)
{
	const char *op = argv[0];
	struct stat st;
#define NEED(n) do { if (argc != (n) + 1) { bad_op("USAGE"); return -1; } } while (0)
	if (!strcmp(op, "stat") || !strcmp(op, "lstat") || !strcmp(op, "empty")) {
		int fl = !strcmp(op, "lstat") ? AT_SYMLINK_NOFOLLOW : !strcmp(op, "empty") ? AT_EMPTY_PATH : 0;
		NEED(1);
		if (fstatat(dirfd, argv[1], &st, fl) < 0)
			return fail();
		put_stat(&st);
		return 0;
	}
	if (!strcmp(op, "statx") || !strcmp(op, "lstatx")) {
		NEED(1);
		return do_statx(dirfd, argv[1], op[0] == 'l' ? AT_SYMLINK_NOFOLLOW : 0);
	}
	if (!strcmp(op, "nullstat") || !strcmp(op, "nullstatx")) {
		NEED(1);
		return do_nullstat(dirfd, argv[1], !strcmp(op, "nullstatx"));
	}
	if (!strcmp(op, "readlink")) {
		NEED(1);
		return do_readlink(dirfd, argv[1]);
	}
	if (!strcmp(op, "realpath")) {
		NEED(1);
		return do_realpath(argv[1]);
	}
	if (!strcmp(op, "open")) {
		if (argc != 3 && argc != 4) {
			bad_op("USAGE");
			return -1;
		}
		return do_open(dirfd, argv[1], argv[2], argc == 4 ? argv[3] : NULL, -1);
	}
	if (!strcmp(op, "openat2")) {
		if (argc != 4 && argc != 5) {
			bad_op("USAGE");
			return -1;
		}
		return do_openat2(dirfd, argv[1], argv[2], argv[3], argc == 5 ? argv[4] : NULL);
	}
	if (!strcmp(op, "access")) {
		NEED(2);
		return okay(faccessat(dirfd, argv[1], parse_access(argv[2]), 0));
	}
	if (!strcmp(op, "mkdir")) {
		NEED(1);
		return okay(mkdirat(dirfd, argv[1], 0755));
	}
	if (!strcmp(op, "rmdir") || !strcmp(op, "unlink")) {
		int r;
		NEED(1);
		note_victim(dirfd, argv[1]);
		r = unlinkat(dirfd, argv[1], op[0] == 'r' ? AT_REMOVEDIR : 0);
		if (r == 0)
			drop_victim();
		return okay(r);
	}
	if (!strcmp(op, "rename")) {
		int r;
		NEED(2);
		note_victim(dirfd, argv[2]);
		r = renameat(dirfd, argv[1], dirfd, argv[2]);
		if (r == 0)
			drop_victim();
		return okay(r);
	}
	if (!strcmp(op, "link")) {
		NEED(2);
		return okay(linkat(dirfd, argv[1], dirfd, argv[2], 0));
	}
	if (!strcmp(op, "symlink")) {
		NEED(2);
		return okay(symlinkat(argv[1], dirfd, argv[2]));
	}
	bad_op2("UNKNOWN-OP", op);
	return -1;
#undef NEED
}

static int run(int argc, char **argv)
{
	const char *op = argv[0];
#define NEED(n) do { if (argc != (n) + 1) { bad_op("USAGE"); return -1; } } while (0)
	if (!strcmp(op, "echo")) {
		printf("%s", argc > 1 ? argv[1] : "");
		return 0;
	}
	if (!strcmp(op, "getcwd")) {
		/* The raw system call: glibc's getcwd() falls back to walking ".." on failure. */
		static char buf[BIGBUF];
		long n;
		NEED(0);
		n = syscall(SYS_getcwd, buf, (size_t)PATH_MAX);
		if (n < 0)
			return fail();
		put_str(buf, strlen(buf));
		return 0;
	}
	if (!strcmp(op, "cd")) {
		NEED(1);
		return okay(chdir(argv[1]));
	}
	if (!strcmp(op, "fchdir")) {
		int fd;
		NEED(1);
		if (parse_fd(argv[1], &fd) < 0)
			return -1;
		return okay(fchdir(fd));
	}
	if (!strcmp(op, "fd")) {
		int fd;
		NEED(3);
		if (parse_fd(argv[1], &fd) < 0)
			return -1;
		return do_open(AT_FDCWD, argv[2], argv[3], NULL, fd);
	}
	if (!strcmp(op, "close")) {
		int fd;
		NEED(1);
		if (parse_fd(argv[1], &fd) < 0)
			return -1;
		return okay(close(fd));
	}
	if (!strcmp(op, "at")) {
		int fd;
		if (argc < 3) {
			bad_op("USAGE");
			return -1;
		}
		if (parse_fd(argv[1], &fd) < 0)
			return -1;
		return run_at(fd, argc - 2, argv + 2);
	}
	if (!strcmp(op, "chmod")) {
		NEED(2);
		return okay(chmod(argv[1], (mode_t)strtol(argv[2], NULL, 8)));
	}
	if (!strcmp(op, "acl")) {
		NEED(3);
		return do_acl(argv[1], (uint32_t)strtoul(argv[2], NULL, 10), (uint16_t)strtoul(argv[3], NULL, 8));
	}
	if (!strcmp(op, "setuid")) {
		NEED(1);
		unsigned id = (unsigned)strtoul(argv[1], NULL, 10);
		if (setgroups(0, NULL) != 0 || setresgid(id, id, id) != 0)
			return okay(-1);
		return okay(setresuid(id, id, id));
	}
	if (!strcmp(op, "truncate")) {
		NEED(2);
		return okay(truncate(argv[1], strtoll(argv[2], NULL, 10)));
	}
	if (!strcmp(op, "write")) {
		NEED(2);
		return do_write(argv[1], argv[2]);
	}
	if (!strcmp(op, "getxattr") || !strcmp(op, "lgetxattr")) {
		char v[256];
		NEED(2);
		ssize_t n = (op[0] == 'l' ? lgetxattr : getxattr)(argv[1], argv[2], v, sizeof v - 1);
		if (n < 0)
			return fail();
		v[n] = 0;
		printf("\"%s\"", v);
		return 0;
	}
	if (!strcmp(op, "setxattr")) {
		NEED(3);
		return okay(setxattr(argv[1], argv[2], argv[3], strlen(argv[3]), 0));
	}
	if (!strcmp(op, "listxattr")) {
		char v[1024];
		NEED(1);
		ssize_t n = listxattr(argv[1], v, sizeof v);
		if (n < 0)
			return fail();
		for (ssize_t i = 0; i < n; i += (ssize_t)strlen(v + i) + 1)
			printf(i ? ",%s" : "%s", v + i);
		return 0;
	}
	if (!strcmp(op, "statfs")) {
		struct statfs sf;
		NEED(1);
		if (statfs(argv[1], &sf) < 0)
			return fail();
		printf("type=%#lx", (unsigned long)sf.f_type);
		return 0;
	}
	if (!strcmp(op, "fstatfs")) {
		struct statfs sf;
		NEED(1);
		int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return fail();
		int r = fstatfs(fd, &sf), e = errno;
		close(fd);
		errno = e;
		if (r < 0)
			return fail();
		printf("type=%#lx", (unsigned long)sf.f_type);
		return 0;
	}
	if (!strcmp(op, "removexattr")) {
		NEED(2);
		return okay(removexattr(argv[1], argv[2]));
	}
	if (!strcmp(op, "cat")) {
		NEED(1);
		return do_cat(argv[1]);
	}
	if (!strcmp(op, "ls")) {
		NEED(1);
		return do_ls(argv[1]);
	}
	if (!strcmp(op, "access")) {
		NEED(2);
		return okay(access(argv[1], parse_access(argv[2])));
	}
	if (!strcmp(op, "eaccess") || !strcmp(op, "laccess")) {
		NEED(2);
		return okay(faccessat(AT_FDCWD, argv[1], parse_access(argv[2]), op[0] == 'e' ? AT_EACCESS : AT_SYMLINK_NOFOLLOW));
	}
	if (!strcmp(op, "stat") || !strcmp(op, "lstat")) {
		struct stat st;
		NEED(1);
		if ((op[0] == 'l' ? lstat(argv[1], &st) : stat(argv[1], &st)) < 0)
			return fail();
		put_stat(&st);
		return 0;
	}
	if (!strcmp(op, "mkdir")) {
		NEED(1);
		return okay(mkdir(argv[1], 0755));
	}
	if (!strcmp(op, "rmdir") || !strcmp(op, "unlink")) {
		int r;
		NEED(1);
		note_victim(AT_FDCWD, argv[1]);
		r = op[0] == 'r' ? rmdir(argv[1]) : unlink(argv[1]);
		if (r == 0)
			drop_victim();
		return okay(r);
	}
	if (!strcmp(op, "rename")) {
		int r;
		NEED(2);
		note_victim(AT_FDCWD, argv[2]);
		r = rename(argv[1], argv[2]);
		if (r == 0)
			drop_victim();
		return okay(r);
	}
	if (!strcmp(op, "link")) {
		NEED(2);
		return okay(link(argv[1], argv[2]));
	}
	if (!strcmp(op, "symlink")) {
		NEED(2);
		return okay(symlink(argv[1], argv[2]));
	}
	if (!strcmp(op, "bind")) {
		NEED(1);
		return do_bind(argv[1]);
	}
	if (!strcmp(op, "connect")) {
		NEED(1);
		return do_connect(argv[1]);
	}
	if (!strcmp(op, "dgram")) {
		if (argc != 3 && argc != 4) {
			bad_op("USAGE");
			return -1;
		}
		return do_dgram(argv[1], argv[2], argc == 4 ? (socklen_t)strtoul(argv[3], NULL, 0) : (socklen_t)sizeof(struct sockaddr_un));
	}
	if (!strcmp(op, "exec") || !strcmp(op, "fexec")) {
		if (argc < 2) {
			bad_op("USAGE");
			return -1;
		}
		return do_exec(!strcmp(op, "fexec"), 0, NULL, 0, argc - 1, argv + 1);
	}
	if (!strcmp(op, "execat")) {
		int fd, f = 0;
		char buf[64], *tok, *save;
		if (argc < 4) {
			bad_op("USAGE");
			return -1;
		}
		if (parse_fd(argv[1], &fd) < 0)
			return -1;
		snprintf(buf, sizeof buf, "%s", argv[3]);
		for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
			if (!strcmp(tok, "empty"))
				f |= AT_EMPTY_PATH;
			else if (!strcmp(tok, "nofollow"))
				f |= AT_SYMLINK_NOFOLLOW;
			else if (!strcmp(tok, "bad"))
				f |= 0x8000;
			else if (strcmp(tok, "none")) {
				bad_op2("BADFLAG", tok);
				return -1;
			}
		}
		/* argv: P, then ARGS (a copy: the tokens are freed by the caller) */
		char *xargv[MAXTOK];
		int xn = 0;
		xargv[xn++] = argv[2];
		for (int i = 4; i < argc; i++)
			xargv[xn++] = argv[i];
		return do_exec(0, fd, argv[2], f, xn, xargv);
	}
	if (!strcmp(op, "argv")) {
		const char *fn = (const char *)getauxval(AT_EXECFN);
		printf("argc=%d", main_argc);
		for (int i = 0; i < main_argc; i++) {
			printf(" ");
			put_str(main_argv[i], strlen(main_argv[i]));
		}
		printf(" execfn=");
		put_str(fn ? fn : "(null)", fn ? strlen(fn) : 6);
		printf("\n");
		exit(0);
	}
	if (!strcmp(op, "inotify")) {
		if (argc != 3 && argc != 4) {
			bad_op("USAGE");
			return -1;
		}
		return do_inotify(argv[1], argv[2],
				  argc == 4 ? (uint32_t)strtoul(argv[3], NULL, 0) : (uint32_t)IN_ALL_EVENTS);
	}
	if (!strcmp(op, "closesocks")) {
		NEED(0);
		while (nsocks > 0)
			close(socks[--nsocks]);
		printf("ok");
		return 0;
	}
	/* Everything else (readlink, open, statx, ...) is the *at form with AT_FDCWD. */
	return run_at(AT_FDCWD, argc, argv);
#undef NEED
}

/* ---- tokenizer ------------------------------------------------------------------------------ */

/* expand copies src[0:n] to dst expanding {N*TEXT} (nestable); returns the length written or
 * -1 if the result does not fit in cap bytes (including the terminating NUL). */
static long expand(const char *src, size_t n, char *dst, size_t cap)
{
	size_t o = 0, i = 0;
	while (i < n) {
		if (src[i] == '{') {
			char *end;
			long rep = strtol(src + i + 1, &end, 10);
			if (end > src + i + 1 && end < src + n && *end == '*') {
				/* find the matching close brace */
				size_t j = (size_t)(end - src) + 1;
				int depth = 1;
				for (; j < n; j++) {
					if (src[j] == '{')
						depth++;
					else if (src[j] == '}' && --depth == 0)
						break;
				}
				if (j < n) {
					size_t start = (size_t)(end - src) + 1;
					long tl = expand(src + start, j - start, dst + o, cap - o);
					if (tl < 0)
						return -1;
					/* dst+o now holds one copy; append rep-1 more */
					for (; rep > 1; rep--) {
						if (o + 2 * (size_t)tl >= cap)
							return -1;
						memcpy(dst + o + tl, dst + o, (size_t)tl);
						o += (size_t)tl;
					}
					if (rep > 0)
						o += (size_t)tl;
					dst[o] = 0;
					i = j + 1;
					continue;
				}
			}
		}
		if (o + 1 >= cap)
			return -1;
		dst[o++] = src[i++];
	}
	dst[o] = 0;
	return (long)o;
}

/* tokenize splits line into at most MAXTOK expanded tokens. */
static int tokenize(const char *line, char **tok)
{
	static char raw[BIGBUF];
	int n = 0;
	const char *p = line;
	for (;;) {
		size_t rl = 0;
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p || *p == '\n')
			return n;
		if (n == MAXTOK)
			return -1;
		if (*p == '"') {
			for (p++; *p && *p != '"'; p++) {
				char c = *p;
				if (c == '\\' && p[1]) {
					c = *++p;
					if (c == 'x' && isxdigit((unsigned char)p[1]) && isxdigit((unsigned char)p[2])) {
						char hex[3] = {p[1], p[2], 0};
						c = (char)strtol(hex, NULL, 16);
						p += 2;
					} else {
						c = c == 'n' ? '\n' : c == 't' ? '\t' : c;
					}
				}
				if (rl + 1 >= sizeof raw)
					return -1;
				raw[rl++] = c;
			}
			if (*p != '"')
				return -1;
			p++;
		} else {
			while (*p && *p != ' ' && *p != '\t' && *p != '\n') {
				if (rl + 1 >= sizeof raw)
					return -1;
				raw[rl++] = *p++;
			}
		}
		tok[n] = malloc(BIGBUF);
		if (!tok[n] || expand(raw, rl, tok[n], BIGBUF) < 0)
			return -1;
		n++;
	}
}

static void do_line(const char *line, int lineno)
{
	char *tok[MAXTOK];
	int n, i;
	size_t len = strcspn(line, "\n");
	const char *s = line;
	while (*s == ' ' || *s == '\t')
		s++;
	if (*s == '#' || *s == '\n' || *s == 0)
		return;
	cur_line = lineno;
	cur_line_new = 0;
	n = tokenize(line, tok);
	fwrite(line, 1, len, stdout);
	printf(" -> ");
	if (n <= 0)
		bad_op("PARSE-ERROR");
	else
		run(n, tok);
	printf("\n");
	fflush(stdout);
	for (i = 0; i < n; i++)
		free(tok[i]);
}

int main(int argc, char **argv)
{
	int i;
	main_argc = argc;
	main_argv = argv;
	static char line[BIGBUF];
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-r")) {
			raw_ino = 1;
		} else if (!strcmp(argv[i], "-f") && i + 1 < argc) {
			FILE *f = strcmp(argv[++i], "-") ? fopen(argv[i], "r") : stdin;
			if (!f) {
				fprintf(stderr, "pathprobe: %s: %s\n", argv[i], strerror(errno));
				return 2;
			}
			int lineno = 0;
			while (fgets(line, sizeof line, f))
				do_line(line, ++lineno);
			if (f != stdin)
				fclose(f);
		} else {
			do_line(argv[i], i);
		}
	}
	return bad ? 3 : 0;
}
