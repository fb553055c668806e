/*
 * hello - the arm64 harness's smallest probe: shows that a program of each link mode (static,
 * static-pie, dynamic through the rootfs's ld.so) starts and sees what it was given.
 *
 * usage: hello [CODE [ARG]...]
 *   prints one line per argv element ("argv[I]=VALUE"), then "execfn=PATH" (getauxval(AT_EXECFN),
 *   the path the kernel was asked to execute), then exits with status CODE (default 0).
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>

int main(int argc, char **argv)
{
	for (int i = 0; i < argc; i++)
		printf("argv[%d]=%s\n", i, argv[i]);
	const char *execfn = (const char *)getauxval(AT_EXECFN);
	printf("execfn=%s\n", execfn ? execfn : "(none)");
	fflush(stdout);
	return argc > 1 ? atoi(argv[1]) : 0;
}
