/*
 * races - the races between droidroot's check of a path and the kernel's use of it (issue 18).
 *
 * One thread opens and reads a decoy file in the guest, DIR/d/canary ("decoy"), for SECONDS
 * seconds, while another thread changes what the path means between droidroot's lookup and
 * the kernel's. HOSTDIR is a host directory outside the rootfs holding canary ("host"); DIR/s
 * is a guest symlink to HOSTDIR, which in the guest names a missing directory (the rootfs's
 * HOSTDIR), but on the host side the host's. Every read of "host" is a host read droidroot
 * let through; a chroot never gives one. MODE:
 *
 *   swap-abs  the other thread swaps DIR/d with DIR/s (renameat2 RENAME_EXCHANGE); the reader
 *             opens the absolute path DIR/d/canary
 *   swap-rel  the same, the reader opening d/canary from DIR (its cwd)
 *   swap-last the other thread swaps the file DIR/d/canary with DIR/d/lnk, a symlink to
 *             HOSTDIR/canary (a missing file in the guest); the reader opens DIR/d/canary:
 *             the last component, which droidroot found a file, is a symlink when the kernel
 *             follows it
 *   access-last  as swap-last, the reader asking access(DIR/d/canary, X_OK): HOSTDIR/canary
 *             is executable and the decoy is not, so 0 is an answer about the host's file
 *             (counted as host), EACCES the decoy's, anything else other
 *   appear    the other thread makes DIR/d/canary come and go, the decoy file and, in turn,
 *             a symlink to HOSTDIR/canary renamed there and away again; the reader opens
 *             DIR/d/canary: a name droidroot found missing (or a file) is a symlink when the
 *             kernel follows it
 *   rewrite   the reader opens the relative path in a buffer, d/canary, which the other thread
 *             turns into s/canary and back: droidroot leaves a relative path that the kernel
 *             resolves to the same file in guest memory, where the kernel reads it again
 *   push      the reader runs on a stack the other thread can see and opens DIR/d/canary; the
 *             other thread looks for the host path droidroot writes below the reader's stack
 *             pointer (a string ending in "canary") and overwrites it with HOSTDIR/canary
 *
 * Output, one line: MODE host=N decoy=N other=N, other counting failed opens and reads of
 * anything else. Exit status 0 unless the setup failed.
 *
 * usage: races MODE HOSTDIR DIR SECONDS
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE 2
#endif

static const char *mode, *hostdir;
static char absdecoy[4096], hostcanary[4096];
static atomic_int stop;
static volatile char relbuf[64] = "d/canary";
static volatile char *volatile readersp; /* an address in the reader's frame (push) */
static long host, decoy, other;
static int swaplast; /* swap-last or access-last */

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* readone opens path, reads it and counts what it was. */
static void readone(const char *path)
{
	char buf[16];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		other++;
		return;
	}
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n < 0) {
		other++;
		return;
	}
	buf[n] = 0;
	if (strcmp(buf, "host") == 0)
		host++;
	else if (strcmp(buf, "decoy") == 0)
		decoy++;
	else
		other++;
}

/* clearbelow zeroes the stack below the caller's frame, so that the next path droidroot writes
 * there is the only string in it. */
static __attribute__((noinline)) void clearbelow(void)
{
	volatile char pad[8192];
	memset((char *)pad, 0, sizeof pad);
	__asm__ volatile("" ::"r"(pad) : "memory");
}

static void *reader(void *arg)
{
	(void)arg;
	volatile char here = 0;
	readersp = &here;
	while (!atomic_load(&stop)) {
		if (strcmp(mode, "swap-rel") == 0) {
			readone("d/canary");
		} else if (strcmp(mode, "access-last") == 0) {
			int r = access(absdecoy, X_OK);
			if (r == 0)
				host++;
			else if (errno == EACCES)
				decoy++;
			else
				other++;
		} else if (strcmp(mode, "rewrite") == 0) {
			readone((const char *)relbuf);
		} else {
			if (strcmp(mode, "push") == 0)
				clearbelow();
			readone(absdecoy);
		}
	}
	return NULL;
}

/* overwrite looks for a path ending in "canary" in the 8 KiB below the reader's frame and
 * replaces it with the host's when that fits. */
static void overwrite(void)
{
	char *sp = (char *)readersp;
	if (!sp)
		return;
	char *lo = sp - 8192;
	size_t hl = strlen(hostcanary);
	for (char *p = lo; p < sp - 7; p++) {
		if (p[0] != 'c' || memcmp(p, "canary", 7) != 0) /* "canary" and its NUL */
			continue;
		char *s = p;
		while (s > lo && s[-1] != 0)
			s--;
		if ((size_t)(p + 6 - s) >= hl && s[0] == '/')
			memcpy(s, hostcanary, hl + 1);
		p += 6;
	}
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: races MODE HOSTDIR DIR SECONDS\n");
		return 2;
	}
	mode = argv[1];
	hostdir = argv[2];
	swaplast = strcmp(mode, "swap-last") == 0 || strcmp(mode, "access-last") == 0;
	const char *dir = argv[3];
	double secs = atof(argv[4]);
	snprintf(absdecoy, sizeof absdecoy, "%s/d/canary", dir);
	snprintf(hostcanary, sizeof hostcanary, "%s/canary", hostdir);
	char p[4096];
	if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
		perror(dir);
		return 1;
	}
	if (chdir(dir) < 0) {
		perror("chdir");
		return 1;
	}
	mkdir("d", 0755);
	int fd = open("d/canary", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, "decoy", 5) != 5) {
		perror("d/canary");
		return 1;
	}
	close(fd);
	unlink("s");
	if (symlink(hostdir, "s") < 0) {
		perror("symlink");
		return 1;
	}
	(void)p;
	unlink("d/lnk");
	int appear = strcmp(mode, "appear") == 0;
	if ((appear || swaplast) && symlink(hostcanary, "d/lnk") < 0) {
		perror("symlink d/lnk");
		return 1;
	}
	if (appear && rename("d/canary", "d/file0") < 0) {
		perror("rename d/canary");
		return 1;
	}

	pthread_attr_t attr;
	pthread_attr_init(&attr);
	if (strcmp(mode, "push") == 0) {
		size_t size = 1 << 18;
		void *stack = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (stack == MAP_FAILED || pthread_attr_setstack(&attr, stack, size) != 0) {
			perror("stack");
			return 1;
		}
	}
	pthread_t t;
	if (pthread_create(&t, &attr, reader, NULL) != 0) {
		perror("pthread_create");
		return 1;
	}
	double end = now() + secs;
	long n = 0;
	while (now() < end) {
		for (int k = 0; k < 64; k++, n++) {
			if (swaplast) {
				syscall(SYS_renameat2, AT_FDCWD, "d/canary", AT_FDCWD, "d/lnk", RENAME_EXCHANGE);
			} else if (appear) {
				const char *from = (n & 2) ? "d/lnk" : "d/file0";
				rename(from, "d/canary"); /* appears */
				rename("d/canary", from); /* is gone again */
			} else if (strncmp(mode, "swap", 4) == 0) {
				syscall(SYS_renameat2, AT_FDCWD, "d", AT_FDCWD, "s", RENAME_EXCHANGE);
			} else if (strcmp(mode, "rewrite") == 0) {
				relbuf[0] = n & 1 ? 's' : 'd';
			} else {
				overwrite();
			}
		}
		/* The renames leave the reader and droidroot the CPU for a moment each batch:
		 * a slow machine (the arm64 VM) otherwise starves them to a few reads a run. */
		if (strcmp(mode, "rewrite") != 0 && strcmp(mode, "push") != 0)
			nanosleep(&(struct timespec){0, 20000}, NULL);
	}
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	if (appear) /* leave d/canary the file */
		rename("d/file0", "d/canary");
	else if (swaplast && (n & 1)) /* leave d/canary a file */
		syscall(SYS_renameat2, AT_FDCWD, "d/canary", AT_FDCWD, "d/lnk", RENAME_EXCHANGE);
	else if (strncmp(mode, "swap", 4) == 0 && (n & 1)) /* leave d a directory */
		syscall(SYS_renameat2, AT_FDCWD, "d", AT_FDCWD, "s", RENAME_EXCHANGE);
	printf("%s host=%ld decoy=%ld other=%ld\n", mode, host, decoy, other);
	return 0;
}
