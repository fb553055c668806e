/*
 * stdioprobe - stdio streams the way programs use them: fopen in every mode, reads and
 * writes, seeks, the buffer stdio gives a stream (its size, line buffering), setvbuf before
 * the first read or write (a buffer of the caller's, none, line buffering), freopen, a
 * character device, fdopen of a program's own descriptors (a file, a pipe, a character
 * device, append mode, setvbuf, bad descriptors and modes), and many streams open at once.
 *
 * usage: stdioprobe DIR   (DIR: a directory the probe may write in; it makes DIR/s)
 *
 * Prints one line per step; the transcript must be the same under a real chroot.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void must(int ok, const char *what)
{
	if (!ok) {
		printf("%s: %s\n", what, strerror(errno));
		exit(1);
	}
}

/* show prints a stream's buffer after its first read or write: its size
 * (st_blksize below BUFSIZ, else BUFSIZ), whether it is line buffered. */
static void show(const char *what, FILE *f)
{
	printf("%s: buffer %zu, line buffered %d\n", what, __fbufsize(f), __flbf(f) != 0);
}

/* fresh prints what a stream reports before its first read or write (a stream has no
 * buffer yet then: it is neither reading nor writing, but for its mode). */
static void fresh(const char *what, FILE *f)
{
	printf("%s fresh: reading %d, writing %d, pending %zu\n", what, __freading(f) != 0,
	       __fwriting(f) != 0, __fpending(f));
}

static void cat(const char *what, const char *name)
{
	FILE *f = fopen(name, "r");
	if (!f) {
		printf("%s: %s\n", what, strerror(errno));
		return;
	}
	char line[256];
	printf("%s:", what);
	while (fgets(line, sizeof line, f))
		printf(" [%.*s]", (int)strcspn(line, "\n"), line);
	printf(" eof %d error %d\n", feof(f), ferror(f));
	must(fclose(f) == 0, "fclose");
}

int main(int argc, char **argv)
{
	char t[4096];
	if (argc != 2) {
		fprintf(stderr, "usage: stdioprobe DIR\n");
		return 2;
	}
	printf("glibc %s\n", gnu_get_libc_version());
	snprintf(t, sizeof t, "%s/s", argv[1]);
	must(mkdir(t, 0755) == 0, "mkdir s");
	must(chdir(t) == 0, "chdir s");

	FILE *f = fopen("a", "w");
	must(f != NULL, "fopen a w");
	fresh("w", f);
	must(fputs("one\ntwo\n", f) >= 0, "fputs");
	show("w", f);
	printf("ftell after writing: %ld\n", ftell(f));
	must(fclose(f) == 0, "fclose a");
	cat("a", "a");

	f = fopen("a", "a");
	must(f && fputs("three\n", f) >= 0, "append");
	show("a", f);
	must(fclose(f) == 0, "fclose a a");
	cat("a appended", "a");

	f = fopen("a", "r+");
	must(f != NULL, "fopen r+");
	fresh("r+", f);
	char buf[64];
	must(fgets(buf, sizeof buf, f) != NULL, "fgets r+");
	show("r+", f);
	must(fseek(f, 0, SEEK_CUR) == 0 && fputs("TWO\n", f) >= 0, "overwrite");
	rewind(f);
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	buf[n] = 0;
	printf("r+ read back %zu: %s", n, buf);
	must(fseek(f, -6, SEEK_END) == 0, "fseek end");
	printf("ftell: %ld, getc: %c\n", ftell(f), getc(f));
	must(fclose(f) == 0, "fclose r+");

	f = fopen("b", "w+x");
	must(f && fprintf(f, "%d %s\n", 42, "forty-two") > 0, "w+x");
	rewind(f);
	int v;
	char word[32];
	printf("w+x scanf: %d", fscanf(f, "%d %31s", &v, word));
	printf(" %d %s\n", v, word);
	must(fclose(f) == 0, "fclose w+x");
	errno = 0;
	printf("w+x again: %s\n", fopen("b", "wx") ? "opened" : strerror(errno));
	printf("missing: %s\n", fopen("nope/x", "r") ? "opened" : strerror(errno));

	/* setvbuf before the first read or write: a buffer of the caller's,
	 * none, line buffering without a buffer. */
	static char mine[100];
	f = fopen("a", "r");
	must(f && setvbuf(f, mine, _IOFBF, sizeof mine) == 0, "setvbuf mine");
	must(fgets(buf, sizeof buf, f) != NULL, "fgets mine");
	printf("setvbuf mine: buffer %zu, in it %d\n", __fbufsize(f), memcmp(mine, "one\nTWO\n", 8) == 0);
	must(fclose(f) == 0, "fclose mine");
	f = fopen("c", "w");
	must(f && setvbuf(f, NULL, _IONBF, 0) == 0 && fputs("unbuffered\n", f) >= 0, "setvbuf none");
	struct stat st;
	must(stat("c", &st) == 0, "stat c");
	printf("setvbuf none: written at once %lld, buffer %zu\n", (long long)st.st_size, __fbufsize(f));
	must(fclose(f) == 0, "fclose none");
	f = fopen("d", "w");
	must(f && setvbuf(f, NULL, _IOLBF, 0) == 0 && fputs("line\npart", f) >= 0, "setvbuf line");
	must(stat("d", &st) == 0, "stat d");
	printf("setvbuf line: written %lld, line buffered %d\n", (long long)st.st_size, __flbf(f) != 0);
	must(fclose(f) == 0, "fclose line");
	cat("d", "d");

	/* freopen: the same stream on another file. */
	f = fopen("a", "r");
	must(f && fgets(buf, sizeof buf, f) != NULL, "before freopen");
	f = freopen("d", "r", f);
	must(f != NULL, "freopen");
	must(fgets(buf, sizeof buf, f) != NULL, "after freopen");
	printf("freopen: %s", buf);
	must(fclose(f) == 0, "fclose freopen");

	/* A character device: stdio's own buffer. */
	f = fopen("/dev/null", "w");
	must(f && fputs("x", f) >= 0, "/dev/null");
	show("/dev/null", f);
	must(fclose(f) == 0, "fclose /dev/null");

	/* fdopen of the program's own descriptors: a file (written, read back), a
	 * pipe, a character device, append mode (which fdopen adds to the
	 * descriptor), setvbuf before the first write, a bad descriptor and a mode
	 * the descriptor does not allow. */
	int fd = open("e", O_RDWR | O_CREAT | O_TRUNC, 0644);
	must(fd >= 0, "open e");
	f = fdopen(fd, "w+");
	must(f && fputs("fdopen one\n", f) >= 0, "fdopen w+");
	show("fdopen file", f);
	rewind(f);
	must(fgets(buf, sizeof buf, f) != NULL, "fdopen read back");
	printf("fdopen read back: %s", buf);
	must(fclose(f) == 0, "fclose fdopen");
	printf("fdopen closed its descriptor: %d\n", fcntl(fd, F_GETFD) < 0 && errno == EBADF);
	int p[2];
	must(pipe(p) == 0, "pipe");
	f = fdopen(p[1], "w");
	must(f && fputs("through the pipe\n", f) >= 0, "fdopen pipe");
	show("fdopen pipe", f);
	must(fclose(f) == 0, "fclose pipe");
	FILE *r = fdopen(p[0], "r");
	must(r && fgets(buf, sizeof buf, r) != NULL, "fdopen pipe read");
	printf("fdopen pipe read: %s", buf);
	show("fdopen pipe reader", r);
	must(fclose(r) == 0, "fclose pipe reader");
	fd = open("/dev/null", O_WRONLY);
	f = fdopen(fd, "w");
	must(f && fputs("x", f) >= 0, "fdopen /dev/null");
	show("fdopen /dev/null", f);
	must(fclose(f) == 0, "fclose fdopen /dev/null");
	fd = open("e", O_WRONLY);
	f = fdopen(fd, "a");
	must(f != NULL, "fdopen a");
	printf("fdopen a: O_APPEND %d\n", (fcntl(fd, F_GETFL) & O_APPEND) != 0);
	must(fputs("fdopen two\n", f) >= 0 && fclose(f) == 0, "fdopen a write");
	fd = open("e", O_RDONLY);
	f = fdopen(fd, "r");
	must(f && setvbuf(f, NULL, _IONBF, 0) == 0, "fdopen setvbuf");
	must(fgets(buf, sizeof buf, f) != NULL, "fdopen unbuffered read");
	printf("fdopen unbuffered: buffer %zu, at %ld after one line\n", __fbufsize(f), (long)lseek(fd, 0, SEEK_CUR));
	must(fclose(f) == 0, "fclose unbuffered");
	cat("e", "e");
	errno = 0;
	printf("fdopen bad descriptor: %s\n", fdopen(1000, "r") ? "opened" : strerror(errno));
	fd = open("e", O_RDONLY);
	errno = 0;
	printf("fdopen w of a read-only descriptor: %s\n", fdopen(fd, "w") ? "opened" : strerror(errno));
	close(fd);
	unlink("e");

	/* Many streams open at once, written, then read back and closed in
	 * another order. */
	enum { N = 400 };
	static FILE *fs[N];
	for (int i = 0; i < N; i++) {
		char name[16];
		snprintf(name, sizeof name, "m%d", i);
		fs[i] = fopen(name, "w+");
		must(fs[i] && fprintf(fs[i], "stream %d\n", i) > 0, "many");
	}
	int good = 0;
	for (int i = N - 1; i >= 0; i--) {
		rewind(fs[i]);
		must(fgets(buf, sizeof buf, fs[i]) != NULL, "many read");
		char want[32];
		snprintf(want, sizeof want, "stream %d\n", i);
		good += strcmp(buf, want) == 0;
		must(fclose(fs[i]) == 0, "many fclose");
	}
	printf("many: %d of %d read back\n", good, N);
	for (int i = 0; i < N; i++) {
		char name[16];
		snprintf(name, sizeof name, "m%d", i);
		unlink(name);
	}
	unlink("a");
	unlink("b");
	unlink("c");
	unlink("d");
	must(chdir("..") == 0 && rmdir(t) == 0, "rmdir s");
	printf("done\n");
	return 0;
}
