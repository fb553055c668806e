/*
 * futex_waitv(2) answered inside the guest, for sessions where the kernel's
 * is not allowed (Android's app policy blocks it; Proton's fsync needs it).
 * Included by fastpath.c, which calls fw_waitv and fw_wake from syscall()
 * when the handshake says the emulation is on.
 *
 * One word: FUTEX_WAIT_BITSET on the word itself, with the absolute timeout
 * on the caller's clock, so any wake (the kernel's, a raw syscall, a static
 * process) wakes it, with the kernel's restart and EINTR rules.
 *
 * Several words: the waiter takes a slot in the session's registry (a file
 * every process of the session maps shared, created by droidroot), writes
 * the keys of its words there, marks the slot WAITING, then checks the
 * words' values and sleeps on the slot's state word. A FUTEX_WAKE made
 * through syscall() wakes the kernel's own waiters first, then moves WAITING
 * slots with a matching key to WOKEN+index (a CAS: exactly one waker wins a
 * slot) and wakes their state word. A word's key is (dev, ino, offset) of the
 * shared file mapping it is in (mmap is tracked), else (process, address).
 *
 * No lost wake: the waiter publishes its slot (store, full fence) before it
 * reads the words; a waker's caller has changed the word before the wake, and
 * the waker scans after a full fence. Either the waker sees the slot, or the
 * waiter sees the new value (EAGAIN), as with the kernel's futex hash lock.
 * Lock-free: a slot changes hands only by CAS, so a stopped or killed process
 * never holds anything; a slot whose owner is dead (tgkill 0: ESRCH) is
 * reclaimed instead of absorbing a wake.
 */

#define FW_SLOTS 1024
#define FW_MAXW 128 /* FUTEX_WAITV_MAX */
#define FW_MAGIC 0x57565244u /* "DRVW" */
#define FW_PRIVATE_KIND (1ull << 63)

#define FUTEX_WAKE_ 1
#define FUTEX_WAIT_BITSET_ 9
#define FUTEX_PRIVATE_FLAG_ 128
#define FUTEX_CLOCK_REALTIME_ 256
#define FUTEX_CMD_MASK_ 0x7f
#define FUTEX2_SIZE_U32_ 0x02
#define FUTEX2_SIZE_MASK_ 0x03
#define FUTEX2_NUMA_ 0x04
#define FUTEX2_PRIVATE_ 128


/* A slot's state word: a generation (bits 8-31, advanced by each claim) and
 * a state (bits 0-7). A waker reads a WAITING slot's keys between two reads
 * of the same word and CASes that exact word, so keys that belong to a
 * newer waiter (the slot freed and claimed again meanwhile) are never
 * acted on. */
enum { FW_FREE = 0, FW_CLAIMED = 1, FW_WAITING = 2, FW_WOKEN = 3 /* + index */ };
#define FW_ST(v) ((v) & 0xff)
#define FW_GEN(v) ((v) & ~0xffu)

struct fw_key {
	uint64_t a, b, c; /* (dev, ino, offset) or (FW_PRIVATE_KIND | pid, address, 0) */
};

struct fw_slot {
	uint32_t pid, tid, n, pad;
	struct fw_key keys[FW_MAXW];
};

/* The states and a 64-bit summary of each slot's keys (one bit per key
 * hash) sit in arrays of their own, so that a wake scans a few contiguous
 * cache lines and reads the keys of candidate slots only. */
struct fw_registry {
	uint32_t magic, nslots, hiwater, pad;
	uint32_t states[FW_SLOTS];
	uint64_t blooms[FW_SLOTS];
	struct fw_slot slots[FW_SLOTS];
};

static uint32_t *fw_state(const struct fw_slot *s);

/* struct futex_waitv (include/uapi/linux/futex.h) */
struct fw_waitv {
	uint64_t val, uaddr;
	uint32_t flags, reserved;
};

static FP_HOT struct fw_registry *fw_reg;

/* ---- shared file mappings (mmap is tracked while the emulation is on) ---- */

#define FW_MAPS 128
struct fw_map {
	uint64_t start, len, dev, ino, off;
};
static struct fw_map fw_maps[FW_MAPS];
static uint32_t fw_maps_seq;  /* odd while being written */
static int fw_maps_lock;


/* Writers (mmap and munmap of tracked files: rare) hold the lock with every
 * signal blocked, so a handler that maps a file cannot wait for its own
 * thread; readers (waits and wakes) never take it. */
static void fw_maps_write_begin(uint64_t *old)
{
	uint64_t all = ~0ull;
	raw6(SYS_rt_sigprocmask, 0 /* SIG_BLOCK */, (long)&all, (long)old, 8, 0, 0);
	while (__atomic_exchange_n(&fw_maps_lock, 1, __ATOMIC_ACQUIRE))
		;
	__atomic_fetch_add(&fw_maps_seq, 1, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static void fw_maps_write_end(uint64_t *old)
{
	__atomic_fetch_add(&fw_maps_seq, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&fw_maps_lock, 0, __ATOMIC_RELEASE);
	raw6(SYS_rt_sigprocmask, 2 /* SIG_SETMASK */, (long)old, 0, 8, 0, 0);
}

/* fw_overlaps reports whether a recorded mapping may overlap the range
 * (read without the lock: a miss only skips a forget that has nothing to do). */
static int fw_overlaps(uint64_t start, uint64_t len)
{
	for (int i = 0; i < FW_MAPS; i++) {
		struct fw_map *m = &fw_maps[i];
		uint64_t l = __atomic_load_n(&m->len, __ATOMIC_ACQUIRE);
		if (l && m->start < start + len && start < m->start + l)
			return 1;
	}
	return 0;
}

/* fw_forget drops the recorded mappings overlapping [start, start+len). */
static void fw_forget_locked(uint64_t start, uint64_t len)
{
	for (int i = 0; i < FW_MAPS; i++) {
		struct fw_map *m = &fw_maps[i];
		if (m->len && m->start < start + len && start < m->start + m->len)
			m->len = 0;
	}
}

static void fw_note_mmap(uint64_t start, uint64_t len, int flags, int fd, uint64_t off)
{
	struct stat st;
	if (!fw_reg || fd < 0 || !(flags & MAP_SHARED) || tr(SYS_fstat, fd, (long)&st, 0, 0, 0, 0) != 0)
		return;
	if (!S_ISREG(st.st_mode) && !fw_overlaps(start, len))
		return; /* a device or dma-buf: nothing to record or forget */
	uint64_t mask;
	fw_maps_write_begin(&mask);
	fw_forget_locked(start, len);
	if (S_ISREG(st.st_mode)) {
		for (int i = 0; i < FW_MAPS; i++) {
			struct fw_map *m = &fw_maps[i];
			if (!m->len) {
				m->start = start, m->dev = st.st_dev, m->ino = st.st_ino, m->off = off;
				__atomic_store_n(&m->len, len, __ATOMIC_RELEASE);
				break;
			}
		}
	}
	fw_maps_write_end(&mask);
}

static void fw_note_munmap(uint64_t start, uint64_t len)
{
	if (!fw_reg || !fw_overlaps(start, len))
		return;
	uint64_t mask;
	fw_maps_write_begin(&mask);
	fw_forget_locked(start, len);
	fw_maps_write_end(&mask);
}

/* fw_note_mremap moves the record of a mapping mremap moved or resized. */
static void fw_note_mremap(uint64_t old, uint64_t old_len, uint64_t new, uint64_t new_len)
{
	if (!fw_reg || !fw_overlaps(old, old_len))
		return;
	uint64_t mask;
	fw_maps_write_begin(&mask);
	struct fw_map keep = {0, 0, 0, 0, 0};
	for (int i = 0; i < FW_MAPS; i++)
		if (fw_maps[i].len && fw_maps[i].start == old)
			keep = fw_maps[i];
	fw_forget_locked(old, old_len);
	fw_forget_locked(new, new_len);
	for (int i = 0; keep.len && i < FW_MAPS; i++) {
		struct fw_map *m = &fw_maps[i];
		if (!m->len) {
			m->start = new, m->dev = keep.dev, m->ino = keep.ino, m->off = keep.off;
			__atomic_store_n(&m->len, new_len, __ATOMIC_RELEASE);
			break;
		}
	}
	fw_maps_write_end(&mask);
}

/* fw_key_of is the key of the word at addr: its file's (dev, ino, offset)
 * when it is in a tracked shared file mapping and the futex is shared, else
 * (this process, addr). */
static struct fw_key fw_key_of(uint64_t addr, int private, uint32_t pid)
{
	if (!private) {
		for (int tries = 0; tries < 64; tries++) {
			uint32_t seq = __atomic_load_n(&fw_maps_seq, __ATOMIC_ACQUIRE);
			if (seq & 1)
				continue; /* a writer, perhaps the thread this handler interrupted */
			struct fw_key k = {0, 0, 0};
			int found = 0;
			for (int i = 0; i < FW_MAPS && !found; i++) {
				struct fw_map *m = &fw_maps[i];
				uint64_t len = __atomic_load_n(&m->len, __ATOMIC_ACQUIRE);
				if (len && addr >= m->start && addr - m->start < len) {
					k.a = m->dev, k.b = m->ino, k.c = m->off + (addr - m->start);
					found = 1;
				}
			}
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			if (__atomic_load_n(&fw_maps_seq, __ATOMIC_RELAXED) != seq)
				continue;
			if (found)
				return k;
			break;
		}
	}
	struct fw_key k = {FW_PRIVATE_KIND | pid, addr, 0};
	return k;
}

static uint64_t fw_bloom(const struct fw_key *k)
{
	uint64_t h = (k->a * 0x9e3779b97f4a7c15ull) ^ (k->b * 0xc2b2ae3d27d4eb4full) ^ (k->c * 0x165667b19e3779f9ull);
	return 1ull << (h >> 58);
}

static int fw_key_eq(const struct fw_key *x, const struct fw_key *y)
{
	return x->a == y->a && x->b == y->b && x->c == y->c;
}

/* ---- waits ---- */

static uint32_t *fw_state(const struct fw_slot *s) { return &fw_reg->states[s - fw_reg->slots]; }

static uint32_t fw_pid(void) { return (uint32_t)raw6(SYS_getpid, 0, 0, 0, 0, 0, 0); }

static int fw_alive(const struct fw_slot *s)
{
	return raw6(SYS_tgkill, s->pid, s->tid, 0, 0, 0, 0) != -ESRCH;
}

/* fw_bad reports a pointer the kernel would answer EFAULT for that the
 * library cannot read safely (see map_path's note). */
static int fw_bad(uint64_t p, size_t size)
{
	return p < 65536 || (p + size) >> FP_VA_BITS || p + size < p;
}

static long fw_sleep(uint32_t *word, uint32_t val, int private, const struct timespec *abs, int realtime)
{
	int op = FUTEX_WAIT_BITSET_ | (private ? FUTEX_PRIVATE_FLAG_ : 0) | (realtime ? FUTEX_CLOCK_REALTIME_ : 0);
	return raw6(SYS_futex, (long)word, op, val, (long)abs, 0, (long)0xffffffffu);
}

/* fw_claim takes a free slot, reclaiming those of dead waiters if needed. */
static struct fw_slot *fw_claim(void)
{
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t i = 0; i < FW_SLOTS; i++) {
			struct fw_slot *s = &fw_reg->slots[i];
			uint32_t v = __atomic_load_n(fw_state(s), __ATOMIC_RELAXED);
			if (FW_ST(v) == FW_FREE &&
			    __atomic_compare_exchange_n(fw_state(s), &v, (FW_GEN(v) + 0x100) | FW_CLAIMED, 0, __ATOMIC_ACQUIRE,
							__ATOMIC_RELAXED)) {
				uint32_t hw = __atomic_load_n(&fw_reg->hiwater, __ATOMIC_RELAXED);
				while (hw < i + 1 && !__atomic_compare_exchange_n(&fw_reg->hiwater, &hw, i + 1, 1,
										  __ATOMIC_RELEASE, __ATOMIC_RELAXED))
					;
				return s;
			}
		}
		for (uint32_t i = 0; i < FW_SLOTS; i++) {
			struct fw_slot *s = &fw_reg->slots[i];
			uint32_t v = __atomic_load_n(fw_state(s), __ATOMIC_ACQUIRE);
			if (FW_ST(v) == FW_WAITING && !fw_alive(s))
				__atomic_compare_exchange_n(fw_state(s), &v, FW_GEN(v) | FW_FREE, 0, __ATOMIC_RELEASE,
							    __ATOMIC_RELAXED);
		}
	}
	return NULL;
}

/* fw_leave ends a wait whose sleep ended without a wake seen: FREE if
 * still WAITING (returns err), else the index a waiter set. */
static long fw_leave(struct fw_slot *s, uint32_t waiting, long err)
{
	uint32_t v = waiting;
	if (__atomic_compare_exchange_n(fw_state(s), &v, FW_GEN(waiting) | FW_FREE, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return err;
	__atomic_store_n(fw_state(s), FW_GEN(waiting) | FW_FREE, __ATOMIC_RELEASE);
	return (long)(FW_ST(v) - FW_WOKEN);
}

/* fw_waitv answers futex_waitv(waiters, n, flags, timeout, clockid), with
 * the kernel's argument checks in the kernel's order (kernel/futex/syscalls.c). */
static long fw_waitv(const struct fw_waitv *waiters, unsigned n, unsigned flags, const struct timespec *timeout,
		     int clockid)
{
	if (flags)
		return -EINVAL;
	if (!n || n > FW_MAXW || !waiters)
		return -EINVAL;
	struct timespec abs;
	int realtime = 0;
	if (timeout) {
		if (clockid != CLOCK_REALTIME && clockid != CLOCK_MONOTONIC)
			return -EINVAL;
		if (fw_bad((uint64_t)timeout, sizeof *timeout))
			return -EFAULT;
		abs = *timeout;
		realtime = clockid == CLOCK_REALTIME;
	}
	if (fw_bad((uint64_t)waiters, n * sizeof *waiters))
		return -EFAULT;
	struct fw_waitv w[FW_MAXW];
	for (unsigned i = 0; i < n; i++) {
		w[i] = waiters[i];
		uint32_t f = w[i].flags;
		if ((f & ~(FUTEX2_SIZE_MASK_ | FUTEX2_NUMA_ | FUTEX2_PRIVATE_)) || w[i].reserved)
			return -EINVAL;
		if ((f & FUTEX2_SIZE_MASK_) != FUTEX2_SIZE_U32_ || (f & FUTEX2_NUMA_))
			return -EINVAL;
		if (w[i].val >> 32)
			return -EINVAL;
	}
	if (timeout && (abs.tv_nsec < 0 || abs.tv_nsec >= 1000000000 || abs.tv_sec < 0))
		return -EINVAL;
	for (unsigned i = 0; i < n; i++) {
		if (w[i].uaddr % 4)
			return -EINVAL;
		if (fw_bad(w[i].uaddr, 4))
			return -EFAULT;
	}
	const struct timespec *to = timeout ? &abs : NULL;

	/* One word: the kernel's own wait on it. */
	if (n == 1) {
		long r = fw_sleep((uint32_t *)w[0].uaddr, (uint32_t)w[0].val, w[0].flags & FUTEX2_PRIVATE_, to, realtime);
		return r == 0 ? 0 : r;
	}

	struct fw_slot *s = fw_claim();
	if (!s)
		return -ENOMEM;
	uint32_t pid = fw_pid();
	s->pid = pid;
	s->tid = (uint32_t)raw6(SYS_gettid, 0, 0, 0, 0, 0, 0);
	s->n = n;
	uint64_t bloom = 0;
	for (unsigned i = 0; i < n; i++) {
		s->keys[i] = fw_key_of(w[i].uaddr, w[i].flags & FUTEX2_PRIVATE_, pid);
		bloom |= fw_bloom(&s->keys[i]);
	}
	__atomic_store_n(&fw_reg->blooms[s - fw_reg->slots], bloom, __ATOMIC_RELAXED);
	uint32_t waiting = FW_GEN(__atomic_load_n(fw_state(s), __ATOMIC_RELAXED)) | FW_WAITING;
	__atomic_store_n(fw_state(s), waiting, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (unsigned i = 0; i < n; i++)
		if (__atomic_load_n((uint32_t *)w[i].uaddr, __ATOMIC_SEQ_CST) != (uint32_t)w[i].val)
			return fw_leave(s, waiting, -EAGAIN);
	for (;;) {
		long r = fw_sleep(fw_state(s), waiting, 0, to, realtime);
		uint32_t v = __atomic_load_n(fw_state(s), __ATOMIC_ACQUIRE);
		if (FW_ST(v) >= FW_WOKEN) {
			__atomic_store_n(fw_state(s), FW_GEN(v) | FW_FREE, __ATOMIC_RELEASE);
			return (long)(FW_ST(v) - FW_WOKEN);
		}
		if (r == -ETIMEDOUT || r == -EINTR)
			return fw_leave(s, waiting, r);
		/* 0 (spurious) or EAGAIN (woken before we slept): look again. */
	}
}

/* fw_wake answers futex(addr, FUTEX_WAKE[_PRIVATE], n): the kernel's waiters
 * first, then registered waiters with that word's key. */
static long fw_wake(uint32_t *addr, int op, int n)
{
	long k = raw6(SYS_futex, (long)addr, op, n, 0, 0, 0);
	if (k < 0 || k >= n || !fw_reg)
		return k;
	struct fw_key key = fw_key_of((uint64_t)addr, op & FUTEX_PRIVATE_FLAG_, fw_pid());
	uint64_t bit = fw_bloom(&key);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	uint32_t hw = __atomic_load_n(&fw_reg->hiwater, __ATOMIC_ACQUIRE);
	for (uint32_t i = 0; i < hw && k < n; i++) {
		struct fw_slot *s = &fw_reg->slots[i];
		uint32_t v = __atomic_load_n(fw_state(s), __ATOMIC_ACQUIRE);
		if (FW_ST(v) != FW_WAITING || !(__atomic_load_n(&fw_reg->blooms[i], __ATOMIC_RELAXED) & bit))
			continue;
		uint32_t cnt = s->n < FW_MAXW ? s->n : FW_MAXW, j;
		for (j = 0; j < cnt && !fw_key_eq(&s->keys[j], &key); j++)
			;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (j == cnt || __atomic_load_n(fw_state(s), __ATOMIC_RELAXED) != v)
			continue; /* no match, or the keys were another waiter's */
		uint32_t w = v;
		if (!fw_alive(s)) {
			__atomic_compare_exchange_n(fw_state(s), &w, FW_GEN(v) | FW_FREE, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
			continue;
		}
		if (__atomic_compare_exchange_n(fw_state(s), &w, FW_GEN(v) | (FW_WOKEN + j), 0, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED)) {
			raw6(SYS_futex, (long)fw_state(s), FUTEX_WAKE_, 1, 0, 0, 0);
			k++;
		}
	}
	return k;
}

/* fw_setup maps the session's registry (host path reg) for the emulation;
 * -1 if it cannot. */
static int fw_setup(const char *reg)
{
	long fd = tr(SYS_openat, AT_FDCWD, (long)reg, O_RDWR | O_CLOEXEC, 0, 0, 0);
	if (fd < 0)
		return -1;
	struct stat st;
	long addr = -1;
	if (tr(SYS_fstat, fd, (long)&st, 0, 0, 0, 0) == 0 && (uint64_t)st.st_size >= sizeof(struct fw_registry))
		addr = raw6(SYS_mmap, 0, sizeof(struct fw_registry), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	tr(SYS_close, fd, 0, 0, 0, 0, 0);
	if (addr < 0 && addr > -4096)
		return -1;
	struct fw_registry *r = (void *)addr;
	uint32_t zero = 0;
	__atomic_compare_exchange_n(&r->magic, &zero, FW_MAGIC, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	if (__atomic_load_n(&r->magic, __ATOMIC_ACQUIRE) != FW_MAGIC) {
		raw6(SYS_munmap, addr, sizeof(struct fw_registry), 0, 0, 0, 0);
		return -1;
	}
	fw_reg = r;
	return 0;
}
