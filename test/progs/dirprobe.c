/*
 * dirprobe - directory streams the way programs use them: opendir, fdopendir, readdir and
 * readdir_r (names, types and which names share an inode), telldir and seekdir, rewinddir,
 * dirfd, scandir, the errors of opendir and fdopendir, and a directory removed while listed.
 *
 * usage: dirprobe DIR   (DIR: a directory the probe may write in; it makes DIR/t)
 *
 * Prints one line per step; the transcript must be the same under a real chroot (inode
 * numbers are printed as the first name seen with each).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* readdir_r: still exported, still used */

static char names[4096][256];
static ino_t inos[4096];
static int ninos;

/* ino_name names inode ino by the first entry seen with it. */
static const char *ino_name(ino_t ino, const char *name)
{
	for (int i = 0; i < ninos; i++)
		if (inos[i] == ino)
			return names[i];
	if (ninos == 4096)
		return "?";
	inos[ninos] = ino;
	snprintf(names[ninos], sizeof names[0], "%s", name);
	return names[ninos++];
}

static const char *type(unsigned char t)
{
	switch (t) {
	case DT_REG:
		return "reg";
	case DT_DIR:
		return "dir";
	case DT_LNK:
		return "lnk";
	case DT_UNKNOWN:
		return "unknown";
	}
	return "other";
}

struct ent {
	char name[256];
	char line[600];
};

static int cmp_ent(const void *a, const void *b) { return strcmp(((const struct ent *)a)->name, ((const struct ent *)b)->name); }

/* list prints the entries of d from where it is, sorted, as "name type =first-name"; with
 * many, only how many and a sample. */
static int list(const char *what, DIR *d, int use_r)
{
	static struct ent ents[3000];
	int n = 0;
	errno = 0;
	for (;;) {
		struct dirent *e, buf;
		if (use_r) {
			int r = readdir_r(d, &buf, &e);
			if (r) {
				printf("%s: readdir_r %s\n", what, strerror(r));
				return -1;
			}
		} else {
			errno = 0;
			e = readdir(d);
		}
		if (!e)
			break;
		if (n < 3000) {
			snprintf(ents[n].name, sizeof ents[n].name, "%s", e->d_name);
			snprintf(ents[n].line, sizeof ents[n].line, "%s %s =%s", e->d_name, type(e->d_type), ino_name(e->d_ino, e->d_name));
		}
		n++;
	}
	if (!use_r && errno)
		printf("%s: readdir %s\n", what, strerror(errno));
	qsort(ents, n < 3000 ? n : 3000, sizeof ents[0], cmp_ent);
	printf("%s: %d entries:", what, n);
	for (int i = 0; i < n && i < 3000; i++)
		if (n < 40 || i % 250 == 0 || ents[i].name[0] != 'a')
			printf(" [%s]", ents[i].line);
	printf("\n");
	return n;
}

static void must(int ok, const char *what)
{
	if (!ok) {
		printf("%s: %s\n", what, strerror(errno));
		exit(1);
	}
}

static int sel_f(const struct dirent *e) { return e->d_name[0] == 'f'; }

int main(int argc, char **argv)
{
	char t[4096], p[4200];
	if (argc != 2) {
		fprintf(stderr, "usage: dirprobe DIR\n");
		return 2;
	}
	snprintf(t, sizeof t, "%s/t", argv[1]);
	must(mkdir(t, 0755) == 0, "mkdir t");
	must(chdir(t) == 0, "chdir t");
	/* Files, hard links (link data under -l), symlinks, a directory, and names of
	 * descriptor-like numbers. */
	FILE *f = fopen("f1", "w");
	must(f && fputs("one\n", f) >= 0 && fclose(f) == 0, "f1");
	must(close(open("f2", O_CREAT | O_WRONLY, 0644)) == 0, "f2");
	must(mkdir("sub", 0755) == 0, "sub");
	must(link("f1", "h1") == 0, "link h1");
	must(link("f1", "sub/h2") == 0, "link sub/h2");
	must(symlink("f2", "s1") == 0, "symlink s1");
	must(symlink("/nowhere", "s2") == 0, "symlink s2");
	must(close(open("800", O_CREAT | O_WRONLY, 0644)) == 0, "800");

	/* readlink of a symlink, and of a hard link's name (a regular file). */
	for (const char *const *l = (const char *const[]){"s1", "h1", "f1", NULL}; *l; l++) {
		char buf[64];
		ssize_t n = readlink(*l, buf, sizeof buf - 1);
		printf("readlink %s: %s\n", *l, n < 0 ? strerror(errno) : (buf[n] = 0, buf));
	}

	DIR *d = opendir(".");
	must(d != NULL, "opendir .");
	list("opendir .", d, 0);
	rewinddir(d);
	list("rewinddir", d, 1);
	rewinddir(d);
	/* telldir after each entry, then seekdir back to the third and read on. */
	long pos[64];
	char seen[64][256];
	int k = 0;
	struct dirent *e;
	while (k < 64 && (pos[k] = telldir(d), e = readdir(d)) != NULL) {
		snprintf(seen[k], sizeof seen[k], "%s", e->d_name);
		k++;
	}
	seekdir(d, pos[2]);
	e = readdir(d);
	printf("seekdir to the third entry: %s\n", e && !strcmp(e->d_name, seen[2]) ? "same entry" : "different");
	printf("telldir after it: %s\n", telldir(d) == pos[3] ? "the fourth's position" : "other");
	printf("dirfd: %s\n", dirfd(d) >= 0 ? "a descriptor" : strerror(errno));
	must(closedir(d) == 0, "closedir");

	/* fdopendir: its descriptor becomes close-on-exec and is closed by closedir. */
	int fd = open("sub", O_RDONLY | O_DIRECTORY);
	must(fd >= 0, "open sub");
	d = fdopendir(fd);
	must(d != NULL, "fdopendir sub");
	printf("fdopendir: dirfd is the descriptor %s, FD_CLOEXEC %s\n", dirfd(d) == fd ? "yes" : "no",
	       fcntl(fd, F_GETFD) & FD_CLOEXEC ? "set" : "clear");
	list("fdopendir sub", d, 0);
	closedir(d);
	printf("after closedir: fcntl %s\n", fcntl(fd, F_GETFD) < 0 ? strerror(errno) : "open");

	/* Errors. */
	errno = 0;
	printf("opendir \"\": %s\n", opendir("") ? "ok" : strerror(errno));
	printf("opendir f1: %s\n", opendir("f1") ? "ok" : strerror(errno));
	printf("opendir nope: %s\n", opendir("nope") ? "ok" : strerror(errno));
	fd = open("f1", O_RDONLY);
	printf("fdopendir of a file: %s\n", fdopendir(fd) ? "ok" : strerror(errno));
	close(fd);
	printf("fdopendir of a closed descriptor: %s\n", fdopendir(fd) ? "ok" : strerror(errno));
	fd = open("sub", O_PATH);
	d = fdopendir(fd);
	printf("fdopendir of an O_PATH descriptor: %s", d ? "ok" : strerror(errno));
	if (d) {
		errno = 0;
		e = readdir(d);
		printf(", readdir %s", e ? "an entry" : errno ? strerror(errno) : "end");
		closedir(d);
	}
	printf("\n");

	/* scandir with a filter and a sort. */
	struct dirent **v;
	int n = scandir(".", &v, sel_f, alphasort);
	printf("scandir f*: %d:", n);
	for (int i = 0; i < n; i++) {
		printf(" %s", v[i]->d_name);
		free(v[i]);
	}
	if (n >= 0)
		free(v);
	printf("\n");

	/* Many entries: several batches of getdents64, with a link in the middle. */
	must(mkdir("many", 0755) == 0, "many");
	for (int i = 0; i < 2000; i++) {
		snprintf(p, sizeof p, "many/a-rather-long-file-name-to-fill-the-buffer-%04d", i);
		must(close(open(p, O_CREAT | O_WRONLY, 0644)) == 0, "many file");
		if (i == 1000)
			must(link(p, "many/h3") == 0, "link many/h3");
	}
	d = opendir("many");
	must(d != NULL, "opendir many");
	list("many", d, 0);
	closedir(d);

	/* A directory removed while it is listed: the end, errno untouched. */
	must(mkdir("gone", 0755) == 0, "gone");
	d = opendir("gone");
	must(d != NULL, "opendir gone");
	must(rmdir("gone") == 0, "rmdir gone");
	errno = 0;
	e = readdir(d);
	printf("removed directory: %s, errno %s\n", e ? e->d_name : "end", errno ? strerror(errno) : "0");
	closedir(d);
	return 0;
}
