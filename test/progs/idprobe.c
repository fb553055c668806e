/*
 * idprobe: walks a process through set*id transitions and prints what get*id, getgroups,
 * setfsuid and the auxiliary vector say after each step, for comparison between the kernel
 * (a real chroot as root) and droidroot's identity emulation (-0, DROIDROOT_EMULATE_SETID=1).
 *
 *   idprobe            the transition walk (must start as root)
 *   idprobe auxv [caps]  only the auxv ids and the credentials (with caps: and capabilities;
 *                        the walk execs this)
 *   idprobe priv DIR   privileged file calls on DIR (chown, chmod, mknod, xattr, access)
 *
 * Every line is "step: result | uids r e s fs | gids r e s fs | groups".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <linux/capability.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

/* In the walk, state() also prints the capability sets, masked to the low word without
 * CAP_SYS_RESOURCE (24), which containers often lack from their bounding set. */
static int show_caps;
#define CAP_MASK 0xfeffffffu

static void caps(unsigned *eff, unsigned *prm)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d) != 0) {
		*eff = *prm = ~0u;
		return;
	}
	*eff = d[0].effective & CAP_MASK;
	*prm = d[0].permitted & CAP_MASK;
}

static long capset_eff_prm(unsigned eff, unsigned prm)
{
	struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d) != 0)
		return -1;
	d[0].effective = eff;
	d[0].permitted = prm;
	d[1].effective = d[1].permitted = 0;
	return syscall(SYS_capset, &h, d);
}

static void state(const char *step, long ret)
{
	uid_t r, e, s;
	gid_t rg, eg, sg;
	gid_t groups[64];
	int n, i, fs, fsg;

	getresuid(&r, &e, &s);
	getresgid(&rg, &eg, &sg);
	/* setfsuid(-1) changes nothing and returns the current fsuid. */
	fs = setfsuid(-1);
	fsg = setfsgid(-1);
	printf("%s: ", step);
	if (ret < 0)
		printf("%s", strerrorname_np(errno));
	else
		printf("%ld", ret);
	printf(" | uids %u %u %u %d | gids %u %u %u %d | groups", r, e, s, fs, rg, eg, sg, fsg);
	n = getgroups(64, groups);
	for (i = 0; i < n; i++)
		printf(" %u", groups[i]);
	if (getuid() != r || geteuid() != e || getgid() != rg || getegid() != eg)
		printf(" | get*id DISAGREES: %u %u %u %u", getuid(), geteuid(), getgid(), getegid());
	if (show_caps) {
		unsigned ce, cp;
		caps(&ce, &cp);
		printf(" | caps %x %x", ce, cp);
	}
	printf("\n");
	fflush(stdout);
}

#define STEP(call) state(#call, (long)(call))

static void auxv(void)
{
	printf("auxv uid %lu euid %lu gid %lu egid %lu secure %lu\n", getauxval(AT_UID), getauxval(AT_EUID),
	       getauxval(AT_GID), getauxval(AT_EGID), getauxval(AT_SECURE));
	state("after exec", 0);
}

static void *thread_main(void *arg)
{
	(void)arg;
	/* Raw syscalls: what this thread's own credentials are. */
	printf("thread: uid %ld euid %ld\n", syscall(SYS_getuid), syscall(SYS_geteuid));
	return 0;
}

static void walk(const char *self)
{
	gid_t two[] = {5, 3};
	gid_t one[1];
	pid_t pid;
	pthread_t th;
	int st;

	show_caps = 1;
	/* Capabilities: PR_SET_KEEPCAPS keeps the permitted set across the drop; capset brings
	 * the effective set back (what setpriv does); bad capset calls fail. */
	pid = fork();
	if (pid == 0) {
		STEP(prctl(PR_SET_KEEPCAPS, 2, 0, 0, 0));
		STEP(prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0));
		STEP(prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0));
		STEP(setresuid(1000, 1000, 1000));
		STEP(setresgid(5, 5, 5));
		STEP(capset_eff_prm(CAP_MASK, CAP_MASK));
		STEP(setresgid(5, 5, 5));
		STEP(capset_eff_prm(1u << CAP_SETUID, 1u << CAP_SETUID));
		STEP(capset_eff_prm(1u << CAP_SETGID, 1u << CAP_SETUID));
		STEP(capset_eff_prm(1u << CAP_CHOWN, 1u << CAP_CHOWN));
		STEP(setresuid(0, 0, 0));
		STEP(setgroups(0, 0));
		STEP(capset_eff_prm(0, 0));
		STEP(setresuid(-1, 1000, -1));
		STEP(setresuid(2, 2, 2));
		exit(0);
	}
	waitpid(pid, &st, 0);
	pid = fork();
	if (pid == 0) {
		STEP(prctl(PR_GET_KEEPCAPS, 0, 0, 0, 0));
		STEP(setresuid(1000, 1000, 1000));
		STEP(capset_eff_prm(1u << CAP_SETUID, 1u << CAP_SETUID));
		exit(0);
	}
	waitpid(pid, &st, 0);

	STEP(setgroups(2, two));
	STEP(getgroups(1, one));
	STEP(getgroups(0, one));
	STEP(setfsuid(1234));
	STEP(setfsuid(0));
	STEP(setfsgid(77));
	STEP(setresgid(100, 200, 300));
	STEP(setregid(-1, 100));
	STEP(setregid(300, -1));
	STEP(setgid(7));
	STEP(setresuid(1000, 1000, 0));
	STEP(setuid(-1));
	STEP(setgid(-1));
	STEP(setgroups(0, 0));
	STEP(setfsuid(0));
	STEP(setfsuid(1000));
	STEP(setuid(0));

	/* A child's changes are its own. */
	pid = fork();
	if (pid == 0) {
		STEP(setuid(1000));
		STEP(setuid(0));
		exit(0);
	}
	waitpid(pid, &st, 0);
	state("parent after child", 0);

	/* glibc broadcasts set*id to every thread: a new thread sees the change. */
	STEP(setresuid(-1, 2000, -1));
	pthread_create(&th, 0, thread_main, 0);
	pthread_join(th, 0);

	/* exec with an effective uid that differs from the real one: AT_SECURE, and the
	 * saved uid becomes the effective one. */
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		execl(self, self, "auxv", "caps", (char *)0);
		printf("exec: %s\n", strerror(errno));
		exit(1);
	}
	waitpid(pid, &st, 0);

	/* Dropping root for good. */
	STEP(setreuid(-1, 0));
	STEP(setreuid(-1, 2000));
	STEP(setresuid(-1, -1, 2000));
	STEP(setreuid(2000, -1));
	STEP(setuid(1000));
	STEP(setuid(2000));
	STEP(setresuid(0, 0, 0));
	STEP(setreuid(1000, 2000));
	STEP(setfsuid(0));
	STEP(setresgid(7, 7, 8));
}

/* priv: the calls that need root's file capabilities, on files in dir. */
static void priv(const char *dir)
{
	char f[4096], dev[4096], rootf[4096];
	struct stat sb;
	int fd;

	snprintf(f, sizeof f, "%s/file", dir);
	snprintf(dev, sizeof dev, "%s/null", dir);
	snprintf(rootf, sizeof rootf, "%s/rootfile", dir);
	fd = open(f, O_RDWR | O_CREAT, 0644);
	STEP(chown(f, 123, 456));
	STEP(lchown(f, 123, 456));
	STEP(fchown(fd, 123, 456));
	STEP(fchownat(AT_FDCWD, f, 0, 0, 0));
	STEP(chmod(rootf, 0644));
	STEP(fchmodat(AT_FDCWD, rootf, 0644, 0));
	STEP(access(rootf, R_OK | W_OK));
	STEP(access(rootf, X_OK));
	STEP(faccessat(AT_FDCWD, rootf, R_OK, AT_EACCESS));
	STEP(access(dir, X_OK));
	STEP(mknod(dev, S_IFCHR | 0666, makedev(1, 3)));
	if (lstat(dev, &sb) == 0)
		printf("mknod made: %s %o\n", S_ISREG(sb.st_mode) ? "regular file" : S_ISCHR(sb.st_mode) ? "char device" : "other", sb.st_mode & 07777);
	STEP(setxattr(f, "trusted.droidroot", "x", 1, 0));
	STEP(fsetxattr(fd, "security.droidroot", "x", 1, 0));
	if (stat(rootf, &sb) == 0)
		printf("rootfile: mode %o\n", sb.st_mode & 07777);
	/* After dropping root, the same calls fail again. */
	STEP(setresuid(1000, 1000, 1000));
	STEP(chown(f, 123, 456));
	STEP(access(rootf, R_OK));
	STEP(mknod(dev, S_IFCHR | 0666, makedev(1, 3)));
	close(fd);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "auxv")) {
		show_caps = argc > 2;
		auxv();
		return 0;
	}
	if (argc > 2 && !strcmp(argv[1], "priv")) {
		priv(argv[2]);
		return 0;
	}
	auxv();
	walk(argv[0]);
	return 0;
}
