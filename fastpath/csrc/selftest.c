/* selftest.c: unit tests of the fast path library's pure functions (no
 * system call, no configuration from the tracer), each against a plain
 * reference written the obvious way, on random inputs. Built and run on the
 * host by fastpath's TestCSelfTest:
 *
 *   cc -O2 -std=gnu11 -Icsrc fastpath/csrc/selftest.c fastpath/csrc/tramp-ARCH.S
 *
 * It includes fastpath.c itself, so the static functions are the library's
 * own code. Outside droidroot the library's handshake finds no tracer and
 * the library stays off: its wrappers are libc's. Exit status 0 and "ok"
 * when every case passed; else one line per failure and status 1. */
#include "fastpath.c"

static int failures;

static void fail(const char *what, const char *input)
{
	if (failures++ < 20)
		printf("FAIL %s: \"%s\"\n", what, input);
}

/* xorshift64*: the cases are the same at every run. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static unsigned rnd(unsigned n)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (unsigned)((rng_state * 0x2545f4914f6cdd1dull) >> 33) % n;
}

/* ref_plain_len is plain_len the way map_path's loop reads a path. */
static long ref_plain_len(const char *g)
{
	size_t n = strlen(g);
	for (size_t i = 0; i < n; i++) {
		if (g[i] != '/')
			continue;
		size_t c = i + 1, e = c;
		while (e < n && g[e] != '/')
			e++;
		size_t cl = e - c;
		if (cl == 0 || (cl == 1 && g[c] == '.') || (cl == 2 && g[c] == '.' && g[c + 1] == '.'))
			return -1;
	}
	return (long)n;
}

/* random_path writes a path of '/', '.', 'a' and 'b' (a '/' first) of at
 * most max bytes into out. */
static void random_path(char *out, size_t max)
{
	static const char alphabet[] = "//..ab";
	size_t n = 1 + rnd((unsigned)max);
	out[0] = '/';
	for (size_t i = 1; i < n; i++)
		out[i] = alphabet[rnd(sizeof alphabet - 1)];
	out[n] = 0;
}

/* test_plain_len compares plain_len with its reference on random paths
 * placed at every alignment, some ending at the last byte before a page
 * the process may not read (plain_len reads whole aligned words: none
 * past the page of the NUL). */
static void test_plain_len(void)
{
	char *pages = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (pages == MAP_FAILED || mprotect(pages + 4096, 4096, PROT_NONE) != 0) {
		fail("mmap", "");
		return;
	}
	static const char *fixed[] = {
		"/", "//", "/.", "/..", "/...", "/a", "/a/", "/a/.", "/a/..", "/a/...", "/.a", "/..a", "/a/.b/c",
		"/a//b", "/a/./b", "/a/../b", "/abcdefg/", "/abcdef/.", "/abcdefg/.", "/abcdefgh/..x", "/abcdef/..",
		"/usr/lib/x86_64-linux-gnu/libc.so.6", "/home/u/.wine/drive_c/windows", "/home/u/.cache/./x",
	};
	char buf[128];
	for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
		for (size_t off = 0; off < 8; off++) {
			char *g = pages + 64 + off;
			strcpy(g, fixed[i]);
			if (plain_len(g) != ref_plain_len(g))
				fail("plain_len", fixed[i]);
		}
	for (int i = 0; i < 400000; i++) {
		random_path(buf, 40);
		size_t n = strlen(buf);
		char *g = i & 1 ? pages + 4096 - n - 1 : pages + 128 + rnd(64);
		memcpy(g, buf, n + 1);
		if (plain_len(g) != ref_plain_len(g))
			fail("plain_len", buf);
	}
	munmap(pages, 8192);
}

/* ref_bind_of is bind_of as every bind is compared. */
static const struct fp_bind *ref_bind_of(const char *g, size_t n, int *ancestor)
{
	const struct fp_bind *best = NULL;
	*ancestor = 0;
	for (int i = 0; i < cfg.nbinds; i++) {
		const struct fp_bind *b = &cfg.binds[i];
		if (under(g, n, b->guest, b->glen)) {
			if (!best || b->glen >= best->glen)
				best = b;
		} else if (under(b->guest, b->glen, g, n)) {
			*ancestor = 1;
		}
	}
	return best;
}

/* random_guest writes a clean absolute guest path of up to depth
 * components, names that share their first letters ("a", "ab", "a.b"),
 * into out: "/" itself where it has none. */
static void random_guest(char *out, unsigned depth)
{
	static const char *names[] = {"a", "ab", "a.b", "mnt", "b", "x", "dev", "de"};
	unsigned d = rnd(depth + 1);
	size_t n = 0;
	for (unsigned i = 0; i < d; i++) {
		const char *c = names[rnd(sizeof names / sizeof names[0])];
		out[n++] = '/';
		strcpy(out + n, c);
		n += strlen(c);
	}
	if (n == 0)
		out[n++] = '/';
	out[n] = 0;
}

/* test_bind_of compares bind_of, which compares a path only with the
 * binds of its first component's bucket and "/" (index_bind), with every
 * bind compared: random sets of up to 130 binds (three mask words), equal
 * guest paths given twice among them (the last given wins), paths in and
 * around them. */
static void test_bind_of(void)
{
	static char guests[FP_MAX_BINDS][64];
	char g[64];
	for (int set = 0; set < 3000; set++) {
		memset(cfg.fcmask, 0, sizeof cfg.fcmask);
		memset(cfg.rootmask, 0, sizeof cfg.rootmask);
		cfg.nbinds = (int)rnd(131);
		for (int i = 0; i < cfg.nbinds; i++) {
			if (i > 0 && rnd(8) == 0)
				strcpy(guests[i], guests[rnd((unsigned)i)]);
			else
				random_guest(guests[i], 3);
			struct fp_bind *b = &cfg.binds[i];
			b->guest = guests[i];
			b->glen = strlen(guests[i]);
			if (b->glen == 1)
				b->glen = 0; /* "/", as fp_setup takes it */
			b->host = "/h";
			b->hlen = 2;
			index_bind(i);
		}
		for (int j = 0; j < 100; j++) {
			random_guest(g, 4);
			size_t n = strlen(g);
			int a1, a2;
			const struct fp_bind *got = bind_of(g, n, &a1), *want = ref_bind_of(g, n, &a2);
			if (got != want || a1 != a2)
				fail("bind_of", g);
			if (bind_of(g, n, NULL) != want)
				fail("bind_of without ancestor", g);
		}
	}
	cfg.nbinds = 0;
}

/* test_trim: trimmed_len and trim_slashes against the obvious reference
 * (strip the trailing slashes of a path that has some and is not all
 * slashes, shorter than FP_HOST_MAX), and an unreadable pointer (which the
 * kernel answers EFAULT) left as it is. */
static void test_trim(void)
{
	static const char alpha[] = "ab/";
	static char path[FP_HOST_MAX + 8], buf[FP_HOST_MAX + 8];
	for (int k = 0; k < 20000; k++) {
		size_t n = k < 16 ? (size_t)k : rnd(40) == 0 ? FP_HOST_MAX - 2 + rnd(4) : rnd(12);
		for (size_t i = 0; i < n; i++)
			path[i] = alpha[rnd(3)];
		path[n] = 0;
		size_t want = 0;
		if (n >= 2 && n < FP_HOST_MAX && path[n - 1] == '/') {
			size_t m = n;
			while (m > 0 && path[m - 1] == '/')
				m--;
			want = m;
		}
		size_t got = trimmed_len(path);
		if (got != want)
			fail("trimmed_len", path);
		char small[1];
		char *b = got ? buf : small;
		const char *r = trim_slashes(path, got, b);
		if (got ? (r != b || strlen(r) != got || memcmp(r, path, got) != 0) : r != path)
			fail("trim_slashes", path);
	}
	if (trimmed_len((const char *)1) != 0 || trimmed_len(NULL) != 0)
		fail("trimmed_len", "(bad pointer)");
}

/* test_creds_walk: next_creds finds each SCM_CREDENTIALS header of control
 * data, skips other messages, stops at a malformed header and at the end,
 * and reads nothing past the end where the last message's padding would lie
 * beyond it (a msg_controllen of CMSG_LEN): a header planted there, where
 * the walk once read it, is not found. */
static void put_cmsg(char *at, size_t len, int level, int type)
{
	struct cmsghdr h = {.cmsg_len = len, .cmsg_level = level, .cmsg_type = type};
	memcpy(at, &h, sizeof h);
}
static int count_creds(char *buf, size_t len)
{
	char *p = buf;
	int n = 0;
	while (next_creds(&p, buf + len)) {
		if (p < buf || p > buf + len)
			return -1;
		n++;
	}
	return n;
}
static void test_creds_walk(void)
{
	_Alignas(struct cmsghdr) char buf[4 * CMSG_SPACE(sizeof(struct ucred))];
	size_t one = CMSG_LEN(sizeof(struct ucred)), space = CMSG_SPACE(sizeof(struct ucred));
	memset(buf, 0, sizeof buf);
	put_cmsg(buf, one, SOL_SOCKET, SCM_CREDENTIALS);
	put_cmsg(buf + space, one, SOL_SOCKET, SCM_CREDENTIALS); /* beyond a CMSG_LEN length */
	if (count_creds(buf, one) != 1)
		fail("next_creds: one message of CMSG_LEN, a header planted past its end", "");
	if (count_creds(buf, 2 * space) != 2)
		fail("next_creds: two messages", "");
	put_cmsg(buf, space, SOL_SOCKET, SCM_RIGHTS); /* four descriptors */
	if (count_creds(buf, space + one) != 1)
		fail("next_creds: SCM_RIGHTS then SCM_CREDENTIALS", "");
	put_cmsg(buf, 4, SOL_SOCKET, SCM_RIGHTS);
	if (count_creds(buf, 2 * space) != 0)
		fail("next_creds: a malformed first header", "");
	put_cmsg(buf, 3 * space, SOL_SOCKET, SCM_CREDENTIALS);
	if (count_creds(buf, 2 * space) != 0)
		fail("next_creds: a header longer than the data", "");
	if (count_creds(buf, sizeof(struct cmsghdr) - 1) != 0)
		fail("next_creds: less than a header", "");
}

int main(void)
{
	test_plain_len();
	test_bind_of();
	test_trim();
	test_creds_walk();
	if (failures) {
		printf("%d failures\n", failures);
		return 1;
	}
	printf("ok\n");
	return 0;
}
