/*
 * Test program for the droidroot loader. It reports, one "key=value" per line, what
 * a program started by the loader sees, and exits with status 42 through exit()
 * (so stdio flushing and atexit handlers are exercised too).
 *
 * Environment: DR_PROBE_INTERP, when set, is the host path of the interpreter the
 * test expects to be mapped; the probe reports its lowest mapped address.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

extern const ElfW(Ehdr) __ehdr_start;
extern char _start[];

static int first_phdr(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	*(const void **)data = info->dlpi_phdr;
	return 1; /* the first object is the program */
}

int main(int argc, char **argv)
{
	const char *interp = getenv("DR_PROBE_INTERP");
	const unsigned char *rnd = (const unsigned char *)getauxval(AT_RANDOM);
	const void *dl_phdr = NULL;
	unsigned long interp_base = 0;
	char line[4096];
	FILE *maps;
	size_t big = 100 << 20;
	char *p;
	int i;

	printf("argc=%d\n", argc);
	for (i = 0; i < argc; i++)
		printf("argv%d=%s\n", i, argv[i]);
	printf("env=%s\n", getenv("DR_PROBE") ? getenv("DR_PROBE") : "(unset)");
	printf("execfn=%s\n", (const char *)getauxval(AT_EXECFN));

	dl_iterate_phdr(first_phdr, &dl_phdr);
	printf("at_phdr=%#lx\n", getauxval(AT_PHDR));
	printf("ehdr_phdr=%#lx\n", (unsigned long)&__ehdr_start + __ehdr_start.e_phoff);
	printf("dl_phdr=%#lx\n", (unsigned long)dl_phdr);
	printf("at_phnum=%lu\n", getauxval(AT_PHNUM));
	printf("ehdr_phnum=%u\n", __ehdr_start.e_phnum);
	printf("at_phent=%lu\n", getauxval(AT_PHENT));
	printf("at_entry=%#lx\n", getauxval(AT_ENTRY));
	printf("start=%#lx\n", (unsigned long)_start);
	printf("at_base=%#lx\n", getauxval(AT_BASE));
	printf("at_pagesz=%lu\n", getauxval(AT_PAGESZ));
	printf("vdso=%d\n", getauxval(AT_SYSINFO_EHDR) != 0);
	printf("random=%d\n", rnd != NULL && (rnd[0] | rnd[1] | rnd[2] | rnd[3]) != 0);

	maps = fopen("/proc/self/maps", "r");
	while (maps && fgets(line, sizeof line, maps)) {
		char *path = strchr(line, '/');
		unsigned long start = strtoul(line, NULL, 16);

		if (!path)
			continue;
		path[strcspn(path, "\n")] = 0;
		printf("map=%s\n", path);
		if (interp && strcmp(path, interp) == 0 && (interp_base == 0 || start < interp_base))
			interp_base = start;
	}
	if (maps)
		fclose(maps);
	printf("interp_base=%#lx\n", interp_base);

	p = malloc(big);
	if (p) {
		memset(p, 1, big);
		printf("malloc=%d\n", p[big - 1] == 1);
		free(p);
	} else {
		printf("malloc=0\n");
	}
	exit(42);
}
