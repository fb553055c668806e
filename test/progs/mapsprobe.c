/*
 * mapsprobe - print which files are mapped into this process, to prove which ld.so and libc
 * a dynamic program was really given.
 *
 * usage: mapsprobe [SUBSTRING...]
 *
 * Prints, once each and in order of first appearance, the path column of /proc/self/maps lines
 * whose path contains one of the SUBSTRINGs (default: "ld-linux" and "libc.so"). Under a real
 * chroot the paths are guest paths; under a ptrace tracer they are the host's real paths (the
 * kernel writes maps itself), so for a rootfs at R the test expects R/lib/..., never /lib/...
 * of the host.
 */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	static const char *defaults[] = {"ld-linux", "libc.so"};
	const char **subs = argc > 1 ? (const char **)argv + 1 : defaults;
	int nsubs = argc > 1 ? argc - 1 : 2, i, nseen = 0;
	static char seen[64][4096];
	char line[8192];
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f) {
		perror("/proc/self/maps");
		return 1;
	}
	while (fgets(line, sizeof line, f)) {
		char *path = strchr(line, '/');
		int j, dup = 0;
		if (!path)
			continue;
		path[strcspn(path, "\n")] = 0;
		for (i = 0; i < nsubs; i++)
			if (strstr(path, subs[i]))
				break;
		if (i == nsubs)
			continue;
		for (j = 0; j < nseen; j++)
			dup |= !strcmp(seen[j], path);
		if (dup || nseen == 64)
			continue;
		snprintf(seen[nseen++], sizeof seen[0], "%s", path);
		printf("%s\n", path);
	}
	fclose(f);
	return 0;
}
