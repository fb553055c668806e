/*
 * droidroot loader: maps a guest program and its interpreter the way the kernel's
 * ELF loader would, then starts it. See script.h for the protocol with the tracer.
 *
 * Freestanding: no libc, raw system calls only, no writable data of its own. It
 * writes nothing to the original stack except the values of the auxv entries it
 * fixes (AT_PHDR, AT_PHENT, AT_PHNUM, AT_ENTRY, AT_BASE, AT_EXECFN, and with
 * DR_FLAG_IDS AT_UID, AT_EUID, AT_GID, AT_EGID, AT_SECURE).
 */
#include <stddef.h>
#include <stdint.h>

#include "../script.h"

#if defined(__x86_64__)
#include "arch-x86_64.h"
#elif defined(__aarch64__)
#include "arch-aarch64.h"
#else
#error "unsupported architecture"
#endif

/* ELF (include/uapi/linux/elf.h). */
#define ELFCLASS64 2
#define ELFDATA2LSB 1
#define EV_CURRENT 1
#define ET_EXEC 2
#define ET_DYN 3
#define PT_LOAD 1
#define PT_INTERP 3
#define PT_PHDR 6
#define PT_GNU_STACK 0x6474e551
#define PF_X 1
#define PF_W 2
#define PF_R 4

/* Auxiliary vector types (include/uapi/linux/auxvec.h). */
#define AT_NULL 0
#define AT_PHDR 3
#define AT_PHENT 4
#define AT_PHNUM 5
#define AT_PAGESZ 6
#define AT_BASE 7
#define AT_ENTRY 9
#define AT_HWCAP 16
#define AT_UID 11
#define AT_EUID 12
#define AT_GID 13
#define AT_EGID 14
#define AT_SECURE 23
#define AT_EXECFN 31

/* mmap, open (the same values on x86_64 and arm64). */
#define PROT_NONE 0
#define PR_SET_NAME 15
#define PROT_READ 1
#define PROT_WRITE 2
#define PROT_EXEC 4
#define PROT_GROWSDOWN 0x01000000
#define MAP_PRIVATE 0x02
#define MAP_FIXED 0x10
#define MAP_ANONYMOUS 0x20
#define MAP_SHARED 0x01
#define MAP_FIXED_NOREPLACE 0x100000
#define O_RDONLY 0
#define O_CLOEXEC 02000000
#define AT_FDCWD (-100)

/* The kernel refuses program header tables larger than this (fs/binfmt_elf.c). */
#define MAX_PHDR_BYTES 65536
/* Program header tables up to this many entries are read onto the stack. */
#define PHDRS_ON_STACK 32

struct elf_ehdr {
	unsigned char e_ident[16];
	uint16_t e_type;
	uint16_t e_machine;
	uint32_t e_version;
	uint64_t e_entry;
	uint64_t e_phoff;
	uint64_t e_shoff;
	uint32_t e_flags;
	uint16_t e_ehsize;
	uint16_t e_phentsize;
	uint16_t e_phnum;
	uint16_t e_shentsize;
	uint16_t e_shnum;
	uint16_t e_shstrndx;
};

struct elf_phdr {
	uint32_t p_type;
	uint32_t p_flags;
	uint64_t p_offset;
	uint64_t p_vaddr;
	uint64_t p_paddr;
	uint64_t p_filesz;
	uint64_t p_memsz;
	uint64_t p_align;
};

/* What the auxv needs to know about a mapped image. */
struct image {
	uint64_t bias;  /* runtime address minus link-time address */
	uint64_t entry; /* runtime entry point */
	uint64_t phdr;  /* runtime address of the program headers */
	uint64_t phnum;
	int has_interp; /* has a PT_INTERP */
	int exec_stack; /* PT_GNU_STACK asks for an executable stack */
	char interp[256]; /* the PT_INTERP path (a guest path), "" if none or longer */
	uint64_t text_lo, text_hi; /* runtime range of the executable PT_LOADs (page-rounded) */
};

/*
 * Where the tracer writes the load script (loader.ScriptArea): the loader's only
 * writable data, a .bss the kernel maps with the image. The stack below sp is not a
 * place for it: after an exec with a large argument list (about 1 MB) the kernel maps
 * no stack below sp, and a remote write (process_vm_writev, PTRACE_POKEDATA) does not
 * grow the stack. The tracer puts the script at its top, and the loader's code runs on
 * the rest, below it. "retain": kept by --gc-sections, though no code names it.
 */
#define DR_SCRIPT_AREA_SIZE 65536
char dr_script_area[DR_SCRIPT_AREA_SIZE] __attribute__((aligned(4096), used, retain));

/* Bounds of the loader's own image, from the default linker script. */
extern char __executable_start[] __attribute__((visibility("hidden")));
extern char _end[] __attribute__((visibility("hidden")));

/*
 * grow_stack gives the stack the 128 KiB below sp that the kernel maps at an ordinary
 * exec (fs/exec.c, setup_arg_pages) but not after one with a large argument list: the
 * tracer writes translated paths just below a thread's sp, and a remote write does not
 * grow the stack. One read fault in the lowest page grows the mapping down to it
 * (mm/mmap.c, expand_downwards: the pages between stay unmapped, inside the mapping,
 * where a remote write faults them in) and maps the zero page there: no memory is used.
 * Usually the mapping already reaches that far and this is the one fault. (A fault in
 * every page, as before, cost 32 faults per exec.)
 */
#define DR_STACK_EXPAND 131072
#define RLIMIT_STACK 3
static void grow_stack(uint64_t sp, uint64_t room)
{
	if (room >= 4096)
		(void)*(volatile const char *)((sp & ~(uint64_t)4095) - room + 4096 - 1);
}

void loader_main(const struct dr_load_script *script) __attribute__((noreturn, used));
void stage2_main(uint64_t *sp) __attribute__((noreturn, used));
void dr_jump(uint64_t entry, uint64_t sp) __attribute__((noreturn));

/* gcc may emit calls to these for struct copies and loops, even freestanding. */
void *memcpy(void *dst, const void *src, size_t n)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	while (n--)
		*d++ = *s++;
	return dst;
}

void *memset(void *dst, int c, size_t n)
{
	unsigned char *d = dst;

	while (n--)
		*d++ = (unsigned char)c;
	return dst;
}

static size_t dr_strlen(const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	return n;
}

#define syscall1(n, a) dr_syscall6(n, (long)(a), 0, 0, 0, 0, 0)
#define syscall2(n, a, b) dr_syscall6(n, (long)(a), (long)(b), 0, 0, 0, 0)
#define syscall3(n, a, b, c) dr_syscall6(n, (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define syscall4(n, a, b, c, d) dr_syscall6(n, (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)
#define syscall6(n, a, b, c, d, e, f) \
	dr_syscall6(n, (long)(a), (long)(b), (long)(c), (long)(d), (long)(e), (long)(f))

/* Raw calls return -errno in [-4095, -1] on failure. */
static int failed(long ret)
{
	return (unsigned long)ret > -4096UL;
}

/*
 * stack_room is how far below sp grow_stack may reach: DR_STACK_EXPAND, or less under a
 * small RLIMIT_STACK (`ulimit -s 128`), where a fault past the limit would be a SIGSEGV.
 * The kernel grows the stack mapping only while it stays within rlim_cur bytes of its top
 * (mm/mmap.c, acct_stack_growth), and the top lies 8 bytes above the end of the file name
 * that auxv's AT_EXECFN names, the first string the exec put there (fs/exec.c). Called
 * before the loader changes AT_EXECFN.
 */
static uint64_t stack_room(uint64_t sp, const uint64_t *auxv)
{
	struct {
		uint64_t cur, max;
	} rl;
	uint64_t top = 0, used, room;

	if (failed(syscall4(SYS_prlimit64, 0, RLIMIT_STACK, 0, (uint64_t)&rl)) || rl.cur == ~(uint64_t)0)
		return DR_STACK_EXPAND;
	for (; auxv[0] != AT_NULL; auxv += 2)
		if (auxv[0] == AT_EXECFN && auxv[1])
			top = auxv[1] + dr_strlen((const char *)auxv[1]) + 1 + 8;
	top = (top + 4095) & ~(uint64_t)4095;
	if (top <= sp)
		return 0; /* not found where it should be: touch nothing */
	used = top - (sp & ~(uint64_t)4095);
	if (rl.cur <= used)
		return 0;
	room = (rl.cur - used) & ~(uint64_t)4095;
	return room < DR_STACK_EXPAND ? room : DR_STACK_EXPAND;
}

static long sys_mmap(uint64_t addr, uint64_t len, int prot, int flags, int fd, uint64_t off)
{
	return syscall6(SYS_mmap, addr, len, prot, flags, fd, off);
}

struct iovec_ {
	const void *base;
	size_t len;
};

/* Write iov[0..n) on fd 2 and exit with status. */
static void __attribute__((noreturn)) say_exit(const struct iovec_ *iov, int n, int status)
{
	syscall3(SYS_writev, 2, iov, n);
	for (;;)
		syscall1(SYS_exit_group, status);
}

/*
 * Report "droidroot loader: [ROLE: ]WHAT[ (errno N)][: PATH]" on fd 2 and exit with
 * status.
 */
static void __attribute__((noreturn))
die_status(int status, const char *role, const char *what, long err, const char *path)
{
	char num[32];
	char *p = num + sizeof num;
	struct iovec_ iov[9];
	int n = 0;

#define PIECE(s) (iov[n].base = (s), iov[n].len = dr_strlen(s), n++)
	PIECE("droidroot loader: ");
	if (role) {
		PIECE(role);
		PIECE(": ");
	}
	PIECE(what);
	if (err) {
		unsigned long e = (unsigned long)(err < 0 ? -err : err);

		*--p = 0;
		*--p = ')';
		do
			*--p = (char)('0' + e % 10);
		while (e /= 10);
		p -= 8;
		memcpy(p, " (errno ", 8);
		PIECE(p);
	}
	if (path) {
		PIECE(": ");
		PIECE(path);
	}
	PIECE("\n");
#undef PIECE
	say_exit(iov, n, status);
}

/* die exits 127, the status a shell gives a command it could not run. */
static void __attribute__((noreturn))
die(const char *role, const char *what, long err, const char *path)
{
	die_status(127, role, what, err, path);
}

static uint64_t page_down(uint64_t x, uint64_t pagesz)
{
	return x & ~(pagesz - 1);
}

static uint64_t page_up(uint64_t x, uint64_t pagesz)
{
	return (x + pagesz - 1) & ~(pagesz - 1);
}

/* Read up to n bytes at offset off; fewer only at the end of the file. */
static uint64_t pread_full(int fd, void *buf, uint64_t n, uint64_t off, const char *role, const char *path)
{
	char *p = buf;
	uint64_t done = 0;

	while (done < n) {
		long r = syscall4(SYS_pread64, fd, p + done, n - done, off + done);

		if (r == -4) /* EINTR */
			continue;
		if (failed(r))
			die(role, "cannot read", r, path);
		if (r == 0)
			break;
		done += (uint64_t)r;
	}
	return done;
}

static int prot_of(uint32_t flags)
{
	return ((flags & PF_R) ? PROT_READ : 0) | ((flags & PF_W) ? PROT_WRITE : 0) |
	       ((flags & PF_X) ? PROT_EXEC : 0);
}

/* Map one PT_LOAD at bias, as fs/binfmt_elf.c:elf_load does. */
static void map_segment(int fd, const struct elf_phdr *ph, uint64_t bias, uint64_t pagesz,
			const char *role, const char *path)
{
	int prot = prot_of(ph->p_flags);
	uint64_t start = bias + ph->p_vaddr;
	uint64_t map_start = page_down(start, pagesz);
	uint64_t file_end = start + ph->p_filesz;
	uint64_t mem_end = start + ph->p_memsz;
	uint64_t anon_start = map_start;
	long r;

	if (ph->p_filesz > 0) {
		r = sys_mmap(map_start, page_up(file_end, pagesz) - map_start, prot,
			     MAP_PRIVATE | MAP_FIXED, fd, ph->p_offset - (start - map_start));
		if (failed(r))
			die(role, "cannot map segment", r, path);
		anon_start = page_up(file_end, pagesz);

		/*
		 * Zero the rest of the last file page, as the kernel does: up to the end
		 * of the page, not just of p_memsz, because ld.so's early malloc hands
		 * out the tail of its last page assuming it is zero. Like the kernel,
		 * only in writable segments (making file-backed executable pages
		 * writable and back would need SELinux execmod on Android).
		 */
		if (ph->p_memsz > ph->p_filesz && (prot & PROT_WRITE) && anon_start > file_end)
			memset((void *)file_end, 0, anon_start - file_end);
	}
	if (page_up(mem_end, pagesz) > anon_start) {
		r = sys_mmap(anon_start, page_up(mem_end, pagesz) - anon_start, prot,
			     MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS, -1, 0);
		if (failed(r))
			die(role, "cannot map bss", r, path);
	}
}

/*
 * Reserve len bytes aligned to align (a power of two) with one PROT_NONE mapping;
 * the segments are then mapped over it with MAP_FIXED, and the holes between them
 * stay inaccessible.
 */
static uint64_t reserve(uint64_t len, uint64_t align, uint64_t pagesz, const char *role, const char *path)
{
	uint64_t extra = align - pagesz, start, base, end;
	long r = sys_mmap(0, len + extra, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (failed(r) && extra) { /* an absurd p_align: settle for page alignment */
		extra = 0;
		align = pagesz;
		r = sys_mmap(0, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	}
	if (failed(r))
		die(role, "cannot reserve address space", r, path);
	start = (uint64_t)r;
	end = start + len + extra;
	base = (start + align - 1) & ~(align - 1);
	if (base > start)
		syscall2(SYS_munmap, start, base - start);
	if (end > base + len)
		syscall2(SYS_munmap, base + len, end - (base + len));
	return base;
}

/*
 * Open host, check it is an ELF file for this machine, map its PT_LOADs. Messages name
 * the file path: its guest path, never droidroot's host path.
 */
static void load_image(const char *host, const char *path, const char *role, uint64_t pagesz,
		       struct image *im)
{
	struct elf_ehdr eh;
	struct elf_phdr small[PHDRS_ON_STACK];
	const struct elf_phdr *phdrs, *ph, *first = 0;
	uint64_t phbytes, scratch_len, lo = ~0ULL, hi = 0, align = pagesz, bias, xlo = ~0ULL, xhi = 0;
	uint64_t phdr_vaddr = 0;
	int have_phdr = 0;
	long fd, r;
	unsigned i;

	fd = syscall4(SYS_openat, AT_FDCWD, host, O_RDONLY | O_CLOEXEC, 0);
	if (failed(fd))
		die(role, "cannot open", fd, path);
	r = (long)pread_full((int)fd, &eh, sizeof eh, 0, role, path);
	if (r < 4 || eh.e_ident[0] != 0x7f || eh.e_ident[1] != 'E' || eh.e_ident[2] != 'L' ||
	    eh.e_ident[3] != 'F')
		die(role, "not an ELF file", 0, path);
	if (r != sizeof eh)
		die(role, "file too short", 0, path);
	if (eh.e_ident[4] != ELFCLASS64 || eh.e_ident[5] != ELFDATA2LSB || eh.e_machine != DR_EM_MACHINE)
		die(role, "ELF file for another architecture", 0, path);
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
		die(role, "ELF file is not an executable or shared object", 0, path);
	if (eh.e_phentsize != sizeof(struct elf_phdr) || eh.e_phnum == 0 ||
	    (uint64_t)eh.e_phnum * sizeof(struct elf_phdr) > MAX_PHDR_BYTES)
		die(role, "bad ELF program header table", 0, path);

	/* The usual table (up to PHDRS_ON_STACK entries: 13 in a glibc program, 11 in
	 * ld.so) on the stack; a larger one, up to 64 KiB, in a scratch mapping. The
	 * mapping cost two system calls and a page fault per image. */
	phbytes = (uint64_t)eh.e_phnum * sizeof(struct elf_phdr);
	scratch_len = 0;
	phdrs = small;
	if (eh.e_phnum > PHDRS_ON_STACK) {
		scratch_len = page_up(phbytes, pagesz);
		r = sys_mmap(0, scratch_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (failed(r))
			die(role, "out of memory", r, path);
		phdrs = (const struct elf_phdr *)r;
	}
	if (pread_full((int)fd, (void *)phdrs, phbytes, eh.e_phoff, role, path) != phbytes)
		die(role, "file too short", 0, path);

	im->has_interp = 0;
	im->exec_stack = 0;
	im->interp[0] = 0;
	for (i = 0, ph = phdrs; i < eh.e_phnum; i++, ph++) {
		switch (ph->p_type) {
		case PT_LOAD:
			if (ph->p_filesz > ph->p_memsz || ph->p_vaddr + ph->p_memsz < ph->p_vaddr)
				die(role, "bad PT_LOAD segment", 0, path);
			if ((ph->p_vaddr - ph->p_offset) & (pagesz - 1))
				die(role, "PT_LOAD segment not aligned to the page size", 0, path);
			if (!first)
				first = ph;
			if (page_down(ph->p_vaddr, pagesz) < lo)
				lo = page_down(ph->p_vaddr, pagesz);
			if (page_up(ph->p_vaddr + ph->p_memsz, pagesz) > hi)
				hi = page_up(ph->p_vaddr + ph->p_memsz, pagesz);
			if (ph->p_align > align && !(ph->p_align & (ph->p_align - 1)))
				align = ph->p_align;
			if (ph->p_flags & PF_X) {
				if (page_down(ph->p_vaddr, pagesz) < xlo)
					xlo = page_down(ph->p_vaddr, pagesz);
				if (page_up(ph->p_vaddr + ph->p_memsz, pagesz) > xhi)
					xhi = page_up(ph->p_vaddr + ph->p_memsz, pagesz);
			}
			break;
		case PT_INTERP:
			im->has_interp = 1;
			if (ph->p_filesz < sizeof im->interp &&
			    pread_full((int)fd, im->interp, ph->p_filesz, ph->p_offset, role, path) == ph->p_filesz)
				im->interp[ph->p_filesz] = 0;
			else
				im->interp[0] = 0;
			break;
		case PT_PHDR:
			have_phdr = 1;
			phdr_vaddr = ph->p_vaddr;
			break;
		case PT_GNU_STACK:
			im->exec_stack = (ph->p_flags & PF_X) != 0;
			break;
		}
	}
	if (!first)
		die(role, "no PT_LOAD segment", 0, path);

	if (eh.e_type == ET_DYN) {
		bias = reserve(hi - lo, align, pagesz, role, path) - lo;
	} else {
		uint64_t self_lo = (uint64_t)__executable_start;
		uint64_t self_hi = page_up((uint64_t)_end, pagesz);

		if (lo < self_hi && hi > self_lo)
			die(role, "ELF file overlaps the droidroot loader's address range", 0, path);
		bias = 0;
	}

	for (i = 0, ph = phdrs; i < eh.e_phnum; i++, ph++)
		if (ph->p_type == PT_LOAD && ph->p_memsz > 0)
			map_segment((int)fd, ph, bias, pagesz, role, path);

	im->bias = bias;
	im->text_lo = xhi > xlo ? xlo + bias : 0;
	im->text_hi = xhi > xlo ? xhi + bias : 0;
	im->entry = eh.e_entry + bias;
	im->phnum = eh.e_phnum;
	if (have_phdr) {
		im->phdr = phdr_vaddr + bias;
	} else {
		/* The PT_LOAD whose file range holds the table; else what the kernel assumes. */
		im->phdr = first->p_vaddr - first->p_offset + eh.e_phoff + bias;
		for (i = 0, ph = phdrs; i < eh.e_phnum; i++, ph++)
			if (ph->p_type == PT_LOAD && ph->p_offset <= eh.e_phoff &&
			    eh.e_phoff + phbytes <= ph->p_offset + ph->p_filesz) {
				im->phdr = ph->p_vaddr + (eh.e_phoff - ph->p_offset) + bias;
				break;
			}
	}

	if (scratch_len)
		syscall2(SYS_munmap, phdrs, scratch_len);
	syscall1(SYS_close, fd);
}

/* The string at offset off of the script, which must end inside the script. */
static const char *script_string(const struct dr_load_script *s, uint64_t off)
{
	const char *base = (const char *)s;
	uint64_t i;

	if (off < sizeof *s || off >= s->size)
		die(0, "bad load script (string offset out of range)", 0, 0);
	for (i = off; i < s->size; i++)
		if (base[i] == 0)
			return base + off;
	die(0, "bad load script (unterminated string)", 0, 0);
}

/*
 * map_scratch maps the tracer's scratch area (script.h) from path: shared, read-only. Without
 * it (an address in use, a kernel that takes MAP_FIXED_NOREPLACE as a hint, a path this
 * process may not open) the tracer finds no cookie there and writes below the stack pointer.
 */
static void map_scratch(const char *path)
{
	long fd = syscall4(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
	long r;

	if (failed(fd))
		return;
	r = sys_mmap(DR_SCRATCH_ADDR, DR_SCRATCH_SIZE, PROT_READ, MAP_SHARED | MAP_FIXED_NOREPLACE,
		     (int)fd, 0);
	if (!failed(r) && (uint64_t)r != DR_SCRATCH_ADDR)
		syscall2(SYS_munmap, r, DR_SCRATCH_SIZE);
	syscall1(SYS_close, fd);
}

/* Classic BPF, as seccomp runs it (linux/filter.h, linux/bpf_common.h, linux/seccomp.h). */
struct wf_insn {
	uint16_t code;
	uint8_t jt, jf;
	uint32_t k;
};
struct wf_prog {
	unsigned short len;
	struct wf_insn *filter;
};
#define WF_LD_ABS 0x20 /* BPF_LD | BPF_W | BPF_ABS */
#define WF_AND_K 0x54  /* BPF_ALU | BPF_AND | BPF_K */
#define WF_JA 0x05     /* BPF_JMP | BPF_JA */
#define WF_JEQ_K 0x15  /* BPF_JMP | BPF_JEQ | BPF_K */
#define WF_JGT_K 0x25  /* BPF_JMP | BPF_JGT | BPF_K */
#define WF_JGE_K 0x35  /* BPF_JMP | BPF_JGE | BPF_K */
#define WF_RET_K 0x06  /* BPF_RET | BPF_K */
#define WF_ALLOW 0x7fff0000u
#define WF_TRACE 0x7ff00002u /* SECCOMP_RET_TRACE, data 2 as droidroot's own filter */
#define WF_PR_SET_NO_NEW_PRIVS 38
#define WF_BLOCK 5

static struct wf_insn wf(uint16_t code, uint8_t jt, uint8_t jf, uint32_t k)
{
	struct wf_insn i = {code, jt, jf, k};
	return i;
}

/*
 * install_wake_filter (DR_FLAG_WAKES_*): trace FUTEX_WAKE from the given executable
 * ranges. seccomp_data: nr at 0, arch at 4, instruction_pointer at 8 (low word) and 12,
 * args[1] at 24 (low word).
 */
static void install_wake_filter(const uint64_t *lo, const uint64_t *hi, int n)
{
	struct wf_insn f[7 + 2 * WF_BLOCK + 2];
	int i, b, allow = 7 + WF_BLOCK * n;
	struct wf_prog prog;

	f[0] = wf(WF_LD_ABS, 0, 0, 4);
	f[1] = wf(WF_JEQ_K, 0, (uint8_t)(allow - 2), DR_AUDIT_ARCH);
	f[2] = wf(WF_LD_ABS, 0, 0, 0);
	f[3] = wf(WF_JEQ_K, 0, (uint8_t)(allow - 4), SYS_futex);
	f[4] = wf(WF_LD_ABS, 0, 0, 24);
	f[5] = wf(WF_AND_K, 0, 0, 0x7f); /* FUTEX_CMD_MASK: any PRIVATE or CLOCK_REALTIME flag */
	f[6] = wf(WF_JEQ_K, 0, (uint8_t)(allow - 7), 1 /* FUTEX_WAKE */);
	for (i = 0; i < n; i++) {
		uint64_t last = hi[i] - 1;
		b = 7 + WF_BLOCK * i;
		f[b] = wf(WF_LD_ABS, 0, 0, 12);
		if (lo[i] >> 32 == last >> 32) {
			/* One 4 GiB window: the high word, then the low word in [lo, last]. */
			f[b + 1] = wf(WF_JEQ_K, 0, 3, (uint32_t)(lo[i] >> 32));
			f[b + 2] = wf(WF_LD_ABS, 0, 0, 8);
			f[b + 3] = wf(WF_JGE_K, 0, 1, (uint32_t)lo[i]);
			f[b + 4] = wf(WF_JGT_K, 0, (uint8_t)(allow + 1 - (b + 5)), (uint32_t)last);
		} else {
			/* Across windows: the high word alone (a few more wakes traced). */
			f[b + 1] = wf(WF_JGE_K, 0, 3, (uint32_t)(lo[i] >> 32));
			f[b + 2] = wf(WF_JGT_K, 2, 0, (uint32_t)(last >> 32));
			f[b + 3] = wf(WF_JA, 0, 0, (uint32_t)(allow + 1 - (b + 4)));
			f[b + 4] = wf(WF_LD_ABS, 0, 0, 12);
		}
	}
	f[allow] = wf(WF_RET_K, 0, 0, WF_ALLOW);
	f[allow + 1] = wf(WF_RET_K, 0, 0, WF_TRACE);
	prog.len = (unsigned short)(allow + 2);
	prog.filter = f;
	/* no_new_privs is inherited from stage 2; set it anyway (a no-op then). */
	syscall2(SYS_prctl, WF_PR_SET_NO_NEW_PRIVS, 1);
	syscall3(SYS_seccomp, 1 /* SECCOMP_SET_MODE_FILTER */, 0, &prog);
}

void loader_main(const struct dr_load_script *s)
{
	const char *program, *interp = 0, *execfn;
	uint64_t *sp, *envp, *auxv, *a, pagesz = 4096, entry, base = 0, len, room;
	struct image prog, ld;
	const struct dr_ids *ids = 0;
	const uint64_t *hwcap = 0, *scratch = 0;
	uint64_t flags;
	struct dr_ids idv;
	char *copy;
	long r;

	if (!s)
		die(0, "no load script (the loader is started by droidroot, not directly)", 0, 0);
	if (s->magic != DR_SCRIPT_MAGIC)
		die(0, "bad load script (wrong magic)", 0, 0);
	if (s->size < sizeof *s || s->size > DR_SCRIPT_MAX ||
	    (s->flags & ~(uint64_t)(DR_FLAG_IDS | DR_FLAG_HWCAP | DR_FLAG_SCRATCH | DR_FLAG_WAKES_PROGRAM | DR_FLAG_WAKES_INTERP |
					 DR_FLAG_EXECSTOP)) ||
	    s->size < sizeof *s + ((s->flags & DR_FLAG_IDS) ? sizeof *ids : 0) +
			      ((s->flags & DR_FLAG_HWCAP) ? sizeof *hwcap : 0) +
			      ((s->flags & DR_FLAG_SCRATCH) ? sizeof *scratch : 0))
		die(0, "bad load script (size or flags)", 0, 0);
	flags = s->flags;
	if (s->flags & DR_FLAG_IDS)
		ids = (const struct dr_ids *)(s + 1);
	if (s->flags & DR_FLAG_HWCAP)
		hwcap = (const uint64_t *)((const char *)(s + 1) + (ids ? sizeof *ids : 0));
	if (s->flags & DR_FLAG_SCRATCH) {
		scratch = (const uint64_t *)((const char *)(s + 1) + (ids ? sizeof *ids : 0) +
					     (hwcap ? sizeof *hwcap : 0));
		map_scratch(script_string(s, *scratch));
	}
	if (s->original_sp & 7 || s->original_sp < (uint64_t)s + s->size)
		die(0, "bad load script (original sp)", 0, 0);
	program = script_string(s, s->program);
	if (s->interp)
		interp = script_string(s, s->interp);
	execfn = script_string(s, s->execfn);

	/* The stack as the kernel built it: argc, argv..., 0, envp..., 0, auxv pairs. */
	sp = (uint64_t *)s->original_sp;
	envp = sp + 1 + sp[0] + 1;
	while (*envp)
		envp++;
	auxv = envp + 1;
	for (a = auxv; a[0] != AT_NULL; a += 2)
		if (a[0] == AT_PAGESZ && a[1] >= 4096 && !(a[1] & (a[1] - 1)))
			pagesz = a[1];

	room = stack_room(s->original_sp, auxv);

	/* Like the kernel, use an interpreter only if the program has a PT_INTERP. */
	load_image(program, execfn, "program", pagesz, &prog);
	entry = prog.entry;
	if (prog.has_interp) {
		if (!interp)
			die("program", "has a PT_INTERP but the load script names no interpreter", 0, execfn);
		load_image(interp, prog.interp[0] ? prog.interp : execfn, "interpreter", pagesz, &ld);
		entry = ld.entry;
		base = ld.bias;
	}

	/* The script's memory becomes the program's stack: copy what we need out of it. */
	if (ids) {
		idv = *ids;
		ids = &idv;
	}
	len = dr_strlen(execfn) + 1;
	r = sys_mmap(0, page_up(len, pagesz), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (failed(r))
		die(0, "out of memory", r, 0);
	copy = (char *)r;
	memcpy(copy, execfn, len);

	for (a = auxv; a[0] != AT_NULL; a += 2) {
		switch (a[0]) {
		case AT_PHDR:
			a[1] = prog.phdr;
			break;
		case AT_PHENT:
			a[1] = sizeof(struct elf_phdr);
			break;
		case AT_PHNUM:
			a[1] = prog.phnum;
			break;
		case AT_ENTRY:
			a[1] = prog.entry;
			break;
		case AT_BASE:
			a[1] = base;
			break;
		case AT_EXECFN:
			a[1] = (uint64_t)copy;
			break;
		case AT_UID:
			if (ids)
				a[1] = ids->uid;
			break;
		case AT_EUID:
			if (ids)
				a[1] = ids->euid;
			break;
		case AT_GID:
			if (ids)
				a[1] = ids->gid;
			break;
		case AT_EGID:
			if (ids)
				a[1] = ids->egid;
			break;
		case AT_SECURE:
			if (ids)
				a[1] = ids->secure;
			break;
		case AT_HWCAP:
			if (hwcap)
				a[1] = *hwcap;
			break;
		}
	}

	/*
	 * The kernel chose the stack's protection from the loader's PT_GNU_STACK (not
	 * executable). Honour a program that asks for an executable stack, as ld.so's
	 * _dl_make_stack_executable does; best effort (Android's SELinux may refuse).
	 */
	if (prog.exec_stack)
		syscall3(SYS_mprotect, page_down(s->original_sp, pagesz), pagesz,
			 PROT_READ | PROT_WRITE | PROT_EXEC | PROT_GROWSDOWN);

	/*
	 * The kernel named the task after the loader; name it after the program as
	 * exec would (the last component of the filename passed to execve, cut to
	 * TASK_COMM_LEN - 1), so ps, /proc/PID/comm and /proc/PID/stat show it.
	 */
	{
		const char *base = copy, *c;
		char comm[16];
		int i;
		for (c = copy; *c; c++)
			if (*c == '/')
				base = c + 1;
		for (i = 0; i < 15 && base[i]; i++)
			comm[i] = base[i];
		comm[i] = 0;
		syscall2(SYS_prctl, PR_SET_NAME, (long)comm);
	}

	{
		uint64_t lo[2], hi[2];
		int n = 0;
		if ((flags & DR_FLAG_WAKES_PROGRAM) && prog.text_hi)
			lo[n] = prog.text_lo, hi[n++] = prog.text_hi;
		if ((flags & DR_FLAG_WAKES_INTERP) && prog.has_interp && ld.text_hi)
			lo[n] = ld.text_lo, hi[n++] = ld.text_hi;
		if (n)
			install_wake_filter(lo, hi, n);
	}

	grow_stack(s->original_sp, room);
	if (flags & DR_FLAG_EXECSTOP) {
		/* The exec stop of a guest tracer: the tracer jumps (see script.h). */
		uint64_t osp = s->original_sp;
		syscall2(DR_SYS_EXECSTOP, entry, osp);
		dr_jump(entry, osp);
	}
	dr_jump(entry, s->original_sp);
}

/*
 * Stage 2 (the loader started with no load script, as argv[0] "droidroot-stage2"):
 * the tracer forks and execs the loader this way, attaches to it, and sends the seccomp
 * filter over fd 3 (a 32-bit little-endian byte count, then the sock_filter array; 0
 * bytes: no filter, every call stops). Stage 2 installs it and execs argv[1] with
 * argv[2...]: that exec is the first traced call; a program the kernel cannot exec
 * (ENOEXEC: a script without #!) runs as /bin/sh argv[1] argv[3...], as execvp runs
 * it. A Go stage 2 (droidroot re-executed)
 * does the same for a loader that is not droidroot's own; this one spares a second Go
 * runtime start. If fd 3 ends early the tracer died before attaching: never run untraced.
 */
#define STAGE2_NAME "droidroot-stage2"
/* argv[0] of the Android policy probe (loader.ProbeName). */
#define PROBE_NAME "droidroot-probe"
#define PR_SET_NO_NEW_PRIVS 38
#define SECCOMP_SET_MODE_FILTER 1
#define BPF_MAXINSNS 4096

struct sock_fprog_ {
	unsigned short len;
	const void *filter;
};

static int read_full(int fd, void *buf, uint64_t n)
{
	unsigned char *p = buf;
	long r;

	while (n) {
		r = syscall3(SYS_read, fd, p, n);
		if (r == -4) /* EINTR */
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (uint64_t)r;
	}
	return 0;
}

static int streq(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

/* The kernel's text for the errors exec gives. */
static const char *exec_error(long r)
{
	switch (-r) {
	case 1: return "operation not permitted";
	case 2: return "no such file or directory";
	case 7: return "argument list too long";
	case 8: return "exec format error";
	case 12: return "cannot allocate memory";
	case 13: return "permission denied";
	case 20: return "not a directory";
	case 21: return "is a directory";
	case 26: return "text file busy";
	case 36: return "file name too long";
	case 40: return "too many levels of symbolic links";
	}
	return 0;
}

/* "droidroot: PATH: TEXT", as the Go stage 2 says it; exit 127 for ENOENT, else 126. */
static void __attribute__((noreturn)) exec_failed(const char *path, long r)
{
	const char *text = exec_error(r);
	struct iovec_ iov[5] = {{"droidroot: ", 11}, {(void *)path, dr_strlen(path)}, {": ", 2}};

	if (!text)
		die_status(126, "stage 2", "cannot run", r, path);
	iov[3].base = (void *)text;
	iov[3].len = dr_strlen(text);
	iov[4].base = "\n";
	iov[4].len = 1;
	say_exit(iov, 5, r == -2 ? 127 : 126);
}

void stage2_main(uint64_t *sp)
{
	uint64_t argc = sp[0];
	char **argv = (char **)(sp + 1);
	char **envp = argv + argc + 1;
	unsigned char hdr[4], filter[BPF_MAXINSNS * 8]; /* on the stack: no .bss in programs */
	uint32_t n;
	long r;

	if (argc >= 1 && streq(argv[0], PROBE_NAME)) {
		/*
		 * droidroot asks whether it runs under an Android app's seccomp policy it
		 * did not install: sethostname(NULL, -1) changes nothing (EPERM or EINVAL),
		 * and every Android release's app policy traps it: a SIGSYS kills us.
		 */
		syscall2(SYS_sethostname, 0, -1);
		syscall1(SYS_exit_group, 0);
	}
	if (argc < 1 || !streq(argv[0], STAGE2_NAME))
		loader_main(0); /* started by hand: says so */
	if (read_full(3, hdr, 4))
		die_status(125, "stage 2", "the tracer went away before attaching", 0, 0);
	n = (uint32_t)hdr[0] | (uint32_t)hdr[1] << 8 | (uint32_t)hdr[2] << 16 | (uint32_t)hdr[3] << 24;
	if (n % 8 || n > sizeof filter || read_full(3, filter, n))
		die_status(125, "stage 2", "bad filter from the tracer", 0, 0);
	syscall1(SYS_close, 3);
	if (n) {
		struct sock_fprog_ prog = {(unsigned short)(n / 8), filter};

		r = syscall6(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0, 0);
		if (failed(r))
			die_status(125, "stage 2", "prctl(PR_SET_NO_NEW_PRIVS) failed", r, 0);
		r = syscall3(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
		if (failed(r))
			die_status(125, "stage 2", "cannot install the seccomp filter", r, 0);
	}
	if (argc < 3)
		die_status(125, "stage 2", "no program to run", 0, 0);
	{
		uint64_t *auxv = (uint64_t *)envp;

		while (*auxv)
			auxv++;
		/* the tracer writes the translated path below sp */
		grow_stack((uint64_t)sp, stack_room((uint64_t)sp, auxv + 1));
	}
	r = syscall3(SYS_execve, argv[1], argv + 2, envp);
	if (r == -8) {
		/* ENOEXEC (a script without #!): run it with /bin/sh, as execvp does. */
		char *sh_argv[argc];
		uint64_t i, j = 0;

		sh_argv[j++] = "/bin/sh";
		sh_argv[j++] = argv[1];
		for (i = 3; i < argc; i++)
			sh_argv[j++] = argv[i];
		sh_argv[j] = 0;
		syscall3(SYS_execve, "/bin/sh", sh_argv, envp);
	}
	exec_failed(argv[1], r);
}
