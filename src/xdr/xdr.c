/* Bounded XDR cursors: see xdr.h for the contract. */
#include "xdr/xdr.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "util/poison.h"

#define XDR_ALIGN 4096
#define SPARE_MIN (64 * 1024) /* blocks worth keeping for reuse */

/* One spare large block per thread. A reply of 1 MiB in a fresh block
 * costs a page fault per 4 KiB (glibc gives big blocks back to the kernel
 * on free): measured, 264,000 faults and about a third of snfsd's CPU per
 * GiB read. Reusing the last freed block keeps its pages mapped.
 *
 * And a few small blocks per thread: every call's reply starts in a
 * fresh page-aligned block (4 KiB, often grown to 8 KiB), and glibc's
 * posix_memalign splits a larger chunk for each: ~1,600 of the ~14,000
 * instructions of a small READ_PLUS call went to the two memaligns and
 * ~400 more to their frees (callgrind). SMALL_KEEP blocks under
 * SPARE_MIN bound what a thread holds to 256 KiB.
 *
 * Both are freed when their thread exits. */
#define SMALL_KEEP 4
struct spare {
	void *p;
	size_t size;
};
struct thread_blocks {
	struct spare big;
	struct spare small[SMALL_KEEP];
	unsigned nsmall;
};
static pthread_key_t blocks_key; /* only for its destructor */
static pthread_once_t blocks_once = PTHREAD_ONCE_INIT;
/* The thread's blocks without a pthread_getspecific per call. */
static _Thread_local struct thread_blocks *my_blocks;

/* Under ASan a parked block is poisoned (MEM_POISON, util/poison.h), so
 * that a reply used after xdr_out_free is still caught although its
 * memory is not freed. */

static void blocks_destroy(void *v)
{
	struct thread_blocks *t = v;

	if (t->big.p) {
		MEM_UNPOISON(t->big.p, t->big.size);
		free(t->big.p);
	}
	for (unsigned i = 0; i < t->nsmall; i++) {
		MEM_UNPOISON(t->small[i].p, t->small[i].size);
		free(t->small[i].p);
	}
	free(t);
	/* Runs on the exiting thread: a later free there (another key's
	 * destructor) starts a new set, which pthread destroys again. */
	my_blocks = NULL;
}

static void blocks_key_init(void)
{
	pthread_key_create(&blocks_key, blocks_destroy);
}

static struct thread_blocks *blocks_get(void)
{
	struct thread_blocks *t = my_blocks;

	if (t)
		return t;
	pthread_once(&blocks_once, blocks_key_init);
	t = calloc(1, sizeof(*t));
	if (t && pthread_setspecific(blocks_key, t) != 0) {
		free(t);
		t = NULL;
	}
	my_blocks = t;
	return t;
}

/* Small blocks are kept on shelves: the thread's own, and behind it a
 * shared one, because a worker often frees a reply another worker built
 * (conn_send_locked sends the replies queued behind its own): with the
 * thread's shelf alone, one worker's filled up while the other's stayed
 * empty and three calls in four grew their reply by memalign (callgrind,
 * serialized threads). SHARED_KEEP bounds what the shared one holds to
 * 2 MiB; its lock is taken only when the thread's shelf cannot serve. */
#define SHARED_KEEP 32
static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static struct spare shared[SHARED_KEEP];
static unsigned shared_n;

/* Take a block of size..4*size bytes off a shelf of n, or NULL: the
 * last one put that fits, the likeliest to be in the CPU's cache. */
static void *shelf_take(struct spare *v, unsigned *n, size_t size, size_t *got)
{
	for (unsigned i = *n; i-- > 0;) {
		if (v[i].size >= size && v[i].size <= 4 * size) {
			void *p = v[i].p;

			*got = v[i].size;
			v[i] = v[--*n];
			return p;
		}
	}
	return NULL;
}

/* Put a block on a shelf of n (at most cap). A full shelf keeps the
 * larger blocks: kept 4 KiB blocks must not crowd out the 8 KiB one a
 * READ_PLUS reply grows into. Returns the block that did not stay (b
 * or a smaller one), p NULL when none. */
static struct spare shelf_put(struct spare *v, unsigned *n, unsigned cap,
                              struct spare b)
{
	struct spare out = {0};
	unsigned least = 0;

	if (*n < cap) {
		v[(*n)++] = b;
		return out;
	}
	for (unsigned i = 1; i < cap; i++)
		if (v[i].size < v[least].size)
			least = i;
	if (v[least].size >= b.size)
		return b;
	out = v[least];
	v[least] = b;
	return out;
}

/* A kept small block of size..4*size bytes, or NULL. */
static void *small_take(struct thread_blocks *t, size_t size, size_t *got)
{
	void *p = shelf_take(t->small, &t->nsmall, size, got);

	if (!p) {
		pthread_mutex_lock(&shared_lock);
		p = shelf_take(shared, &shared_n, size, got);
		pthread_mutex_unlock(&shared_lock);
	}
	if (p)
		MEM_UNPOISON(p, *got);
	return p;
}

/* Keep a small block, or free it (or a smaller one) when the shelves are
 * full. */
static void small_keep(struct thread_blocks *t, void *p, size_t size)
{
	struct spare b = {.p = p, .size = size};

	MEM_POISON(p, size);
	b = shelf_put(t->small, &t->nsmall, SMALL_KEEP, b);
	if (!b.p)
		return;
	pthread_mutex_lock(&shared_lock);
	b = shelf_put(shared, &shared_n, SHARED_KEEP, b);
	pthread_mutex_unlock(&shared_lock);
	if (b.p) {
		MEM_UNPOISON(b.p, b.size);
		free(b.p);
	}
}

/* Blocks freed on a thread whose spare is taken: a reply queued on a busy
 * socket is freed by the event-loop thread, not the worker that built it,
 * so without a shared pool the workers kept faulting in fresh blocks
 * (measured: 3% of snfsd's CPU reading a cached 1 GiB file).
 *
 * Sized for what one streaming client keeps in flight: a connection may
 * hold 32 calls and 8 MiB of queued replies, more 1 MiB replies at once
 * than a pool of 16 kept, so about one READ reply in seven still came in
 * a fresh block (measured: 158 fresh 1 MiB blocks and 35,800 page faults
 * in snfsd per cached GiB read; none with 64). POOL_BYTES bounds what an
 * idle server keeps. */
#define POOL_MAX 64
#define POOL_BYTES (96u << 20)
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct spare pool[POOL_MAX];
static unsigned pool_n;
static size_t pool_bytes;

/* A pooled block of size..4*size bytes, or NULL. */
static void *pool_take(size_t size, size_t *got)
{
	void *p = NULL;

	pthread_mutex_lock(&pool_lock);
	for (unsigned i = pool_n; i-- > 0;) {
		if (pool[i].size >= size && pool[i].size <= 4 * size) {
			p = pool[i].p;
			*got = pool[i].size;
			pool_bytes -= pool[i].size;
			pool[i] = pool[--pool_n];
			break;
		}
	}
	pthread_mutex_unlock(&pool_lock);
	if (p)
		MEM_UNPOISON(p, *got);
	return p;
}

/* Keep p in the pool; false when it is full. */
static bool pool_keep(void *p, size_t size)
{
	bool kept = false;

	pthread_mutex_lock(&pool_lock);
	if (pool_n < POOL_MAX && size <= POOL_BYTES - pool_bytes) {
		MEM_POISON(p, size);
		pool[pool_n++] = (struct spare){.p = p, .size = size};
		pool_bytes += size;
		kept = true;
	}
	pthread_mutex_unlock(&pool_lock);
	return kept;
}

/* An aligned block of at least size bytes; *got: its real size. */
static void *block_alloc(size_t size, size_t *got)
{
	struct thread_blocks *t = blocks_get();
	void *p;

	if (t && size < SPARE_MIN && (p = small_take(t, size, got)))
		return p;
	if (t && size >= SPARE_MIN && t->big.p && t->big.size >= size &&
	    t->big.size <= 4 * size) {
		p = t->big.p;
		*got = t->big.size;
		t->big.p = NULL;
		MEM_UNPOISON(p, *got);
		return p;
	}
	if (size >= SPARE_MIN && (p = pool_take(size, got)))
		return p;
	if (posix_memalign(&p, XDR_ALIGN, size))
		return NULL;
	*got = size;
	return p;
}

/* Keep a small block for this thread, a large one as its spare (the
 * larger of two), the other in the shared pool. */
static void block_free(void *p, size_t size)
{
	struct thread_blocks *t = p ? blocks_get() : NULL;

	if (!t) {
		free(p);
		return;
	}
	if (size < SPARE_MIN) {
		small_keep(t, p, size);
		return;
	}
	if (t->big.p && t->big.size >= size) {
		if (!pool_keep(p, size))
			free(p);
		return;
	}
	if (t->big.p && !pool_keep(t->big.p, t->big.size)) {
		MEM_UNPOISON(t->big.p, t->big.size);
		free(t->big.p);
	}
	MEM_POISON(p, size);
	t->big.p = p;
	t->big.size = size;
}

void xdr_in_init(struct xdr_in *x, const void *buf, size_t len)
{
	x->buf = buf;
	x->len = len;
	x->pos = 0;
	x->err = false;
}

size_t xdr_in_remaining(const struct xdr_in *x)
{
	return x->len - x->pos;
}

/* Fail sticky: once an error is seen every later call fails too. */
static bool in_fail(struct xdr_in *x)
{
	x->err = true;
	return false;
}

static bool in_take(struct xdr_in *x, size_t n, const uint8_t **p)
{
	if (x->err || n > x->len - x->pos)
		return in_fail(x);
	*p = x->buf + x->pos;
	x->pos += n;
	return true;
}

bool xdr_get_u32_slow(struct xdr_in *x, uint32_t *v)
{
	const uint8_t *p;
	if (!in_take(x, 4, &p))
		return false;
	*v = xdr_be32(p);
	return true;
}

bool xdr_get_i32(struct xdr_in *x, int32_t *v)
{
	uint32_t u;
	if (!xdr_get_u32(x, &u))
		return false;
	*v = (int32_t)u;
	return true;
}

bool xdr_get_u64_slow(struct xdr_in *x, uint64_t *v)
{
	uint32_t hi, lo;
	if (!xdr_get_u32(x, &hi) || !xdr_get_u32(x, &lo))
		return false;
	*v = (uint64_t)hi << 32 | lo;
	return true;
}

bool xdr_get_bool(struct xdr_in *x, bool *v)
{
	uint32_t u;
	if (!xdr_get_u32(x, &u))
		return false;
	if (u > 1)
		return in_fail(x);
	*v = u == 1;
	return true;
}

bool xdr_skip(struct xdr_in *x, size_t n)
{
	const uint8_t *p;
	size_t pad = xdr_pad(n);
	if (n > SIZE_MAX - pad)
		return in_fail(x);
	return in_take(x, n + pad, &p);
}

bool xdr_get_fixed(struct xdr_in *x, void *dst, size_t n)
{
	const uint8_t *p = x->buf + x->pos;
	if (!xdr_skip(x, n))
		return false;
	if (n)
		memcpy(dst, p, n);
	return true;
}

bool xdr_get_opaque_ref(struct xdr_in *x, const uint8_t **p, uint32_t *len,
                        uint32_t max)
{
	uint32_t n;
	if (!xdr_get_u32(x, &n))
		return false;
	if (n > max)
		return in_fail(x);
	*p = x->buf + x->pos;
	if (!xdr_skip(x, n))
		return false;
	*len = n;
	return true;
}

bool xdr_get_opaque(struct xdr_in *x, void *dst, uint32_t *len, uint32_t max)
{
	const uint8_t *p;
	if (!xdr_get_opaque_ref(x, &p, len, max))
		return false;
	if (*len)
		memcpy(dst, p, *len);
	return true;
}

bool xdr_get_string(struct xdr_in *x, char *dst, size_t dstsz, uint32_t max)
{
	const uint8_t *p;
	uint32_t n;
	if (dstsz == 0 || max > dstsz - 1)
		return in_fail(x);
	if (!xdr_get_opaque_ref(x, &p, &n, max))
		return false;
	if (n && memchr(p, 0, n))
		return in_fail(x);
	memcpy(dst, p, n);
	dst[n] = 0;
	return true;
}

int xdr_out_init(struct xdr_out *x, size_t initial, size_t limit)
{
	void *p;
	memset(x, 0, sizeof(*x));
	if (initial < 256)
		initial = 256;
	if (initial > limit)
		limit = initial;
	/* A kept block may be larger than initial: the reply grows into it
	 * without a copy. */
	p = block_alloc(initial, &initial);
	if (!p)
		return -ENOMEM;
	x->buf = p;
	x->cap = initial;
	x->limit = limit;
	return 0;
}

static void out_release(struct xdr_out *x)
{
	block_free(x->buf, x->cap);
}

static atomic_uint files_held;
static unsigned files_max = 256;

void xdr_out_free(struct xdr_out *x)
{
	out_release(x);
	if (x->has_fd) {
		close(x->fd);
		atomic_fetch_sub(&files_held, 1);
	}
	free(x->parts);
	memset(x, 0, sizeof(*x));
}

void xdr_set_file_limit(unsigned n)
{
	files_max = n;
}

void xdr_out_allow_file(struct xdr_out *x)
{
	x->file_ok = true;
}

bool xdr_out_may_take_file(const struct xdr_out *x)
{
	return x->file_ok && !x->has_fd && !x->err &&
	       atomic_load(&files_held) < files_max;
}

bool xdr_out_take_file(struct xdr_out *x, int fd)
{
	if (!xdr_out_may_take_file(x))
		return false;
	atomic_fetch_add(&files_held, 1);
	x->has_fd = true;
	x->fd = fd;
	return true;
}

bool xdr_put_file(struct xdr_out *x, uint64_t off, uint64_t len)
{
	size_t pad = xdr_pad((size_t)(len & 3));

	if (!x->has_fd || x->err || len > x->limit) {
		x->err = true;
		return false;
	}
	if (x->nparts == x->parts_cap) {
		uint32_t cap = x->parts_cap ? 2 * x->parts_cap : 8;
		struct xdr_file_part *np = realloc(x->parts, cap * sizeof(*np));
		if (!np) {
			x->err = true;
			return false;
		}
		x->parts = np;
		x->parts_cap = cap;
	}
	/* the bytes count against the limit as if they were in buf */
	x->part_bytes += len;
	if (!xdr_out_ensure(x, pad)) {
		x->part_bytes -= len;
		return false;
	}
	x->parts[x->nparts++] =
	    (struct xdr_file_part){.at = x->len, .off = off, .len = len};
	memset(x->buf + x->len, 0, pad);
	x->len += pad;
	return true;
}

/* Move the encoded bytes to a new aligned block of cap bytes. */
static bool out_realloc(struct xdr_out *x, size_t cap)
{
	void *p = block_alloc(cap, &cap);

	if (!p) {
		x->err = true;
		return false;
	}
	if (x->len)
		memcpy(p, x->buf, x->len);
	out_release(x);
	x->buf = p;
	x->cap = cap;
	return true;
}

/* Grow by copying into a new aligned block: realloc would lose alignment,
 * and aligned buffers make the kernel's copies several times faster. */
bool xdr_out_ensure(struct xdr_out *x, size_t n)
{
	size_t need, cap;
	if (x->err)
		return false;
	if (n > x->limit || x->part_bytes > x->limit - n ||
	    x->len > x->limit - n - x->part_bytes) {
		x->err = true;
		return false;
	}
	need = x->len + n;
	if (need <= x->cap)
		return true;
	cap = x->cap ? x->cap : 256;
	while (cap < need)
		cap = cap > x->limit / 2 ? x->limit : cap * 2;
	return out_realloc(x, cap);
}

void xdr_out_truncate(struct xdr_out *x, size_t len)
{
	if (len < x->len)
		x->len = len;
	while (x->nparts && x->parts[x->nparts - 1].at >= len)
		x->part_bytes -= x->parts[--x->nparts].len;
}

uint8_t *xdr_put_reserve(struct xdr_out *x, size_t n)
{
	size_t pad = xdr_pad(n);
	uint8_t *p;
	if (n > SIZE_MAX - pad) {
		x->err = true;
		return NULL;
	}
	if (!xdr_out_ensure(x, n + pad))
		return NULL;
	p = x->buf + x->len;
	memset(p + n, 0, pad);
	x->len += n + pad;
	return p;
}

bool xdr_put_u32_slow(struct xdr_out *x, uint32_t v)
{
	uint8_t *p = xdr_put_reserve(x, 4);
	if (!p)
		return false;
	xdr_set_be32(p, v);
	return true;
}

bool xdr_put_i32(struct xdr_out *x, int32_t v)
{
	return xdr_put_u32(x, (uint32_t)v);
}

bool xdr_put_u64_slow(struct xdr_out *x, uint64_t v)
{
	return xdr_put_u32(x, v >> 32) && xdr_put_u32(x, (uint32_t)v);
}

bool xdr_put_bool(struct xdr_out *x, bool v)
{
	return xdr_put_u32(x, v ? 1 : 0);
}

bool xdr_put_fixed(struct xdr_out *x, const void *src, size_t n)
{
	uint8_t *p = xdr_put_reserve(x, n);
	if (!p)
		return false;
	if (n)
		memcpy(p, src, n);
	return true;
}

bool xdr_put_opaque(struct xdr_out *x, const void *src, uint32_t n)
{
	return xdr_put_u32(x, n) && xdr_put_fixed(x, src, n);
}

bool xdr_put_string(struct xdr_out *x, const char *s)
{
	size_t n = strlen(s);
	if (n > UINT32_MAX) {
		x->err = true;
		return false;
	}
	return xdr_put_opaque(x, s, (uint32_t)n);
}

void xdr_patch_u32(struct xdr_out *x, size_t off, uint32_t v)
{
	if (off > x->len || x->len - off < 4)
		return;
	xdr_set_be32(x->buf + off, v);
}
