/*
 * Test-only entry of the loader (built with -DDR_SELFTEST, never shipped): runs the
 * loader without a tracer, e.g. under qemu-user, which cannot run ptrace tracers.
 *
 *   loader-selftest PROGRAM INTERP EXECFN ARGV0 [ARGS...]
 *
 * INTERP "" means none. It builds the load script on its own stack, turns the stack
 * into the one the guest would have had (argc-4, ARGV0, ARGS..., envp, auxv) by
 * overwriting the EXECFN argv slot with the new argc, and calls loader_main.
 */
#include <stdint.h>

#include "../script.h"

#define BUF_SIZE (3 * 4096 + 64)

void loader_main(const struct dr_load_script *script) __attribute__((noreturn));
void selftest_main(uint64_t *sp) __attribute__((noreturn, used));

static uint64_t put(char *buf, uint64_t off, const char *s)
{
	while (off < BUF_SIZE - 1 && *s)
		buf[off++] = *s++;
	buf[off++] = 0;
	return off;
}

void selftest_main(uint64_t *sp)
{
	char buf[BUF_SIZE] __attribute__((aligned(16)));
	struct dr_load_script *s = (struct dr_load_script *)buf;
	char **argv = (char **)(sp + 1);
	uint64_t off = sizeof *s;

	if (sp[0] < 5)
		loader_main(0); /* reports "no load script" */
	s->magic = DR_SCRIPT_MAGIC;
	s->flags = 0;
	s->program = off;
	off = put(buf, off, argv[1]);
	s->interp = 0;
	if (argv[2][0]) {
		s->interp = off;
		off = put(buf, off, argv[2]);
	}
	s->execfn = off;
	off = put(buf, off, argv[3]);
	s->size = off;
	sp[4] = sp[0] - 4;
	s->original_sp = (uint64_t)(sp + 4);
	loader_main(s);
}
