/* Page cache with per-page valid/dirty/unstable byte ranges (see
 * pagecache.h). Every operation on a file holds its lock; the cache lock
 * guards only the file list and reference counts. */
#include "client/pagecache.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_INFLIGHT 16
#define MAX_RA (4u << 20)
/* Reads this large (and at least rsize) of bytes the cache holds nothing
 * of go straight to the caller's buffer (see direct_read). */
#define DIRECT_MIN (1u << 20)
#define WB_MIN (4u << 20)       /* write-behind once this much is dirty */
#define UNSTABLE_MIN (8u << 20) /* commit once this much is uncommitted */
#define COMMIT_TRIES 5

/* ---- range sets ---- */

static int rset_reserve(struct rset *rs, uint32_t n)
{
	if (n <= rs->cap)
		return 0;
	uint32_t cap = rs->cap ? rs->cap * 2 : 4;
	while (cap < n)
		cap *= 2;
	struct rrange *r = realloc(rs->r, cap * sizeof(*r));
	if (!r)
		return -ENOMEM;
	rs->r = r;
	rs->cap = cap;
	return 0;
}

static uint32_t overlap(const struct rrange *r, uint32_t s, uint32_t e)
{
	uint32_t a = r->s > s ? r->s : s, b = r->e < e ? r->e : e;
	return b > a ? b - a : 0;
}

int64_t rset_add(struct rset *rs, uint32_t s, uint32_t e)
{
	uint32_t i = 0, j, covered = 0, ns = s, ne = e;

	if (s >= e)
		return 0;
	if (rset_reserve(rs, rs->n + 1) < 0)
		return -ENOMEM;
	while (i < rs->n && rs->r[i].e < s)
		i++;
	/* ranges i..j-1 overlap or touch [s, e): merge them */
	for (j = i; j < rs->n && rs->r[j].s <= e; j++) {
		covered += overlap(&rs->r[j], s, e);
		if (rs->r[j].s < ns)
			ns = rs->r[j].s;
		if (rs->r[j].e > ne)
			ne = rs->r[j].e;
	}
	if (j == i) {
		memmove(rs->r + i + 1, rs->r + i, (rs->n - i) * sizeof(*rs->r));
		rs->n++;
	} else {
		memmove(rs->r + i + 1, rs->r + j, (rs->n - j) * sizeof(*rs->r));
		rs->n -= j - i - 1;
	}
	rs->r[i] = (struct rrange){ns, ne};
	return (int64_t)(e - s) - covered;
}

int64_t rset_del(struct rset *rs, uint32_t s, uint32_t e)
{
	uint32_t i = 0, j, removed = 0, k = 0;
	struct rrange keep[2];

	if (s >= e || rs->n == 0)
		return 0;
	if (rset_reserve(rs, rs->n + 1) < 0)
		return -ENOMEM;
	while (i < rs->n && rs->r[i].e <= s)
		i++;
	for (j = i; j < rs->n && rs->r[j].s < e; j++)
		removed += overlap(&rs->r[j], s, e);
	if (j == i)
		return 0;
	if (rs->r[i].s < s)
		keep[k++] = (struct rrange){rs->r[i].s, s};
	if (rs->r[j - 1].e > e)
		keep[k++] = (struct rrange){e, rs->r[j - 1].e};
	memmove(rs->r + i + k, rs->r + j, (rs->n - j) * sizeof(*rs->r));
	memcpy(rs->r + i, keep, k * sizeof(*keep));
	rs->n = rs->n - (j - i) + k;
	return removed;
}

bool rset_covers(const struct rset *rs, uint32_t s, uint32_t e)
{
	if (s >= e)
		return true;
	for (uint32_t i = 0; i < rs->n; i++)
		if (rs->r[i].s <= s && rs->r[i].e >= e)
			return true;
	return false;
}

uint64_t rset_bytes(const struct rset *rs)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < rs->n; i++)
		n += rs->r[i].e - rs->r[i].s;
	return n;
}

uint32_t rset_gaps(const struct rset *rs, uint32_t s, uint32_t e,
                   struct rrange *out)
{
	uint32_t n = 0, pos = s;
	for (uint32_t i = 0; i < rs->n && pos < e; i++) {
		if (rs->r[i].e <= pos)
			continue;
		if (rs->r[i].s >= e)
			break;
		if (rs->r[i].s > pos)
			out[n++] = (struct rrange){pos, rs->r[i].s};
		pos = rs->r[i].e;
	}
	if (pos < e)
		out[n++] = (struct rrange){pos, e};
	return n;
}

void rset_clear(struct rset *rs)
{
	rs->n = 0;
}

void rset_free(struct rset *rs)
{
	free(rs->r);
	memset(rs, 0, sizeof(*rs));
}

/* ---- pages ---- */

static size_t hash_index(const struct pc_file *f, uint64_t index)
{
	return (size_t)((index * 0x9e3779b97f4a7c15ull) >> 20) &
	       (f->nbuckets - 1);
}

static struct pc_page *page_find(struct pc_file *f, uint64_t index)
{
	for (struct pc_page *p = f->buckets[hash_index(f, index)]; p;
	     p = p->hnext)
		if (p->index == index)
			return p;
	return NULL;
}

static void lru_unlink(struct pc_page *p)
{
	p->lprev->lnext = p->lnext;
	p->lnext->lprev = p->lprev;
}

static void lru_push(struct pc_file *f, struct pc_page *p)
{
	p->lnext = &f->lru;
	p->lprev = f->lru.lprev;
	p->lprev->lnext = p;
	f->lru.lprev = p;
}

static int hash_grow(struct pc_file *f)
{
	size_t nb = f->nbuckets * 2;
	struct pc_page **b = calloc(nb, sizeof(*b));
	if (!b)
		return -ENOMEM;
	struct pc_page **old = f->buckets;
	size_t on = f->nbuckets;
	f->buckets = b;
	f->nbuckets = nb;
	for (size_t i = 0; i < on; i++) {
		struct pc_page *p = old[i], *next;
		for (; p; p = next) {
			next = p->hnext;
			size_t h = hash_index(f, p->index);
			p->hnext = b[h];
			b[h] = p;
		}
	}
	free(old);
	return 0;
}

static struct pc_page *page_get(struct pc_file *f, uint64_t index)
{
	struct pc_page *p = page_find(f, index);
	if (p) {
		lru_unlink(p);
		lru_push(f, p);
		return p;
	}
	if (f->npages >= f->nbuckets && hash_grow(f) < 0)
		return NULL;
	p = calloc(1, sizeof(*p));
	if (!p || posix_memalign((void **)&p->data, 4096, PC_PAGE_SIZE)) {
		free(p);
		return NULL;
	}
	p->index = index;
	size_t h = hash_index(f, index);
	p->hnext = f->buckets[h];
	f->buckets[h] = p;
	lru_push(f, p);
	f->npages++;
	__atomic_fetch_add(&f->c->pc->used, PC_PAGE_SIZE, __ATOMIC_RELAXED);
	return p;
}

static void page_free(struct pc_file *f, struct pc_page *p)
{
	struct pc_page **pp = &f->buckets[hash_index(f, p->index)];
	while (*pp != p)
		pp = &(*pp)->hnext;
	*pp = p->hnext;
	lru_unlink(p);
	f->dirty_bytes -= rset_bytes(&p->dirty);
	f->unstable_bytes -= rset_bytes(&p->unstable);
	rset_free(&p->valid);
	rset_free(&p->dirty);
	rset_free(&p->unstable);
	free(p->data);
	free(p);
	f->npages--;
	__atomic_fetch_sub(&f->c->pc->used, PC_PAGE_SIZE, __ATOMIC_RELAXED);
}

static bool page_pinned(const struct pc_page *p)
{
	return p->dirty.n || p->unstable.n;
}

static bool over_budget(struct pc_file *f)
{
	return __atomic_load_n(&f->c->pc->used, __ATOMIC_RELAXED) >
	       f->c->pc->budget;
}

/* Drop clean pages, oldest first, until the cache fits its budget. */
static void evict_clean(struct pc_file *f)
{
	struct pc_page *p = f->lru.lnext, *next;
	for (; p != &f->lru && over_budget(f); p = next) {
		next = p->lnext;
		if (!page_pinned(p))
			page_free(f, p);
	}
}

/* Pages of f in index order (caller frees). */
static struct pc_page **sorted_pages(struct pc_file *f, size_t *n)
{
	struct pc_page **v = malloc((f->npages + 1) * sizeof(*v));
	size_t k = 0;
	if (!v)
		return NULL;
	for (struct pc_page *p = f->lru.lnext; p != &f->lru; p = p->lnext)
		v[k++] = p;
	for (size_t i = 1; i < k; i++) { /* insertion sort: mostly sorted */
		struct pc_page *x = v[i];
		size_t j = i;
		while (j > 0 && v[j - 1]->index > x->index) {
			v[j] = v[j - 1];
			j--;
		}
		v[j] = x;
	}
	*n = k;
	return v;
}

/* ---- cache and files ---- */

int pc_cache_new(struct pc_cache **out, size_t budget)
{
	struct pc_cache *pc = calloc(1, sizeof(*pc));
	if (!pc)
		return -ENOMEM;
	pthread_mutex_init(&pc->lock, NULL);
	pc->budget = budget;
	pc->files.next = pc->files.prev = &pc->files;
	*out = pc;
	return 0;
}

static void file_free(struct pc_file *f)
{
	while (f->lru.lnext != &f->lru)
		page_free(f, f->lru.lnext);
	free(f->buckets);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

void pc_cache_free(struct pc_cache *pc)
{
	if (!pc)
		return;
	while (pc->files.next != &pc->files) {
		struct pc_file *f = pc->files.next;
		f->prev->next = f->next;
		f->next->prev = f->prev;
		file_free(f);
	}
	pthread_mutex_destroy(&pc->lock);
	free(pc);
}

/* Free idle files (no open references) while over budget. Called with
 * the cache lock held. */
static void trim_idle_locked(struct pc_cache *pc, struct pc_file *keep)
{
	struct pc_file *f = pc->files.next, *next;
	for (; f != &pc->files && pc->used > pc->budget; f = next) {
		next = f->next;
		if (f->refs == 0 && f != keep) {
			f->prev->next = f->next;
			f->next->prev = f->prev;
			file_free(f);
		}
	}
}

struct pc_file *pc_file_get(struct snfs_ctx *c, const struct snfs_fh *fh)
{
	struct pc_cache *pc = c->pc;
	struct pc_file *f;

	pthread_mutex_lock(&pc->lock);
	for (f = pc->files.next; f != &pc->files; f = f->next)
		if (fh_equal(&f->fh, fh))
			break;
	if (f == &pc->files) {
		f = calloc(1, sizeof(*f));
		if (f)
			f->buckets = calloc(16, sizeof(*f->buckets));
		if (!f || !f->buckets) {
			free(f);
			pthread_mutex_unlock(&pc->lock);
			return NULL;
		}
		f->nbuckets = 16;
		f->c = c;
		f->fh = *fh;
		f->lru.lnext = f->lru.lprev = &f->lru;
		pthread_mutex_init(&f->lock, NULL);
		f->next = &pc->files;
		f->prev = pc->files.prev;
		f->prev->next = f;
		pc->files.prev = f;
	}
	f->refs++;
	trim_idle_locked(pc, f);
	pthread_mutex_unlock(&pc->lock);
	return f;
}

void pc_file_put(struct pc_file *f)
{
	struct pc_cache *pc = f->c->pc;
	pthread_mutex_lock(&pc->lock);
	f->refs--;
	trim_idle_locked(pc, NULL);
	pthread_mutex_unlock(&pc->lock);
}

static bool same_file_version(const struct snfs_stat *a,
                              const struct snfs_stat *b)
{
	return a->change == b->change && a->size == b->size &&
	       a->mtime.tv_sec == b->mtime.tv_sec &&
	       a->mtime.tv_nsec == b->mtime.tv_nsec &&
	       a->ctime.tv_sec == b->ctime.tv_sec &&
	       a->ctime.tv_nsec == b->ctime.tv_nsec;
}

static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static bool validate_locked(struct pc_file *f, const struct snfs_stat *st)
{
	bool changed =
	    f->have_validator && !same_file_version(&f->validator, st);

	if (!f->have_validator || changed) {
		/* Someone else changed the file: forget clean data. Our own
		 * unsent or uncommitted bytes stay. */
		struct pc_page *p = f->lru.lnext, *next;
		for (; p != &f->lru; p = next) {
			next = p->lnext;
			if (!page_pinned(p))
				page_free(f, p);
			else
				rset_clear(&p->valid);
		}
		for (p = f->lru.lnext; p != &f->lru; p = p->lnext) {
			for (uint32_t i = 0; i < p->dirty.n; i++)
				rset_add(&p->valid, p->dirty.r[i].s,
				         p->dirty.r[i].e);
			for (uint32_t i = 0; i < p->unstable.n; i++)
				rset_add(&p->valid, p->unstable.r[i].s,
				         p->unstable.r[i].e);
		}
		f->size = st->size > f->wend ? st->size : f->wend;
	}
	f->validator = *st;
	f->have_validator = true;
	f->checked_ns = mono_ns();
	return changed;
}

bool pc_file_validate(struct pc_file *f, const struct snfs_stat *st)
{
	pthread_mutex_lock(&f->lock);
	bool changed = validate_locked(f, st);
	pthread_mutex_unlock(&f->lock);
	return changed;
}

/* A read past the end we know: has the file grown elsewhere? The size
 * is otherwise learnt at open (close-to-open), so a reader that keeps
 * the file open (tail -f) never saw another client's appends, and
 * through snfs-mount the kernel, told the longer size by a GETATTR,
 * shrank it again at our short read (a mapping then got SIGBUS). Asked
 * at most once per SIZE_RECHECK_NS, as an attribute cache would. */
#define SIZE_RECHECK_NS 1000000000u
static void recheck_size(struct pc_file *f, uint64_t end)
{
	struct snfs_stat st;

	if (end <= f->size || !f->c->ops->getattr ||
	    mono_ns() - f->checked_ns < SIZE_RECHECK_NS)
		return;
	if (f->c->ops->getattr(f->c, &f->fh, &st) == 0)
		validate_locked(f, &st);
}

uint64_t pc_size(struct pc_file *f)
{
	pthread_mutex_lock(&f->lock);
	uint64_t s = f->size;
	pthread_mutex_unlock(&f->lock);
	return s;
}

/* ---- reading ---- */

/* Copy server data for [off, off + len) into pages, leaving bytes we hold
 * dirty or unstable alone (ours are newer), and mark the range valid. */
static int fill_pages(struct pc_file *f, uint64_t off, const uint8_t *src,
                      uint64_t len)
{
	while (len > 0) {
		uint64_t idx = off >> PC_PAGE_SHIFT;
		uint32_t ps = (uint32_t)(off & (PC_PAGE_SIZE - 1));
		uint32_t n =
		    PC_PAGE_SIZE - ps < len ? PC_PAGE_SIZE - ps : (uint32_t)len;
		struct pc_page *p = page_get(f, idx);
		if (!p)
			return -ENOMEM;
		if (!page_pinned(p)) {
			if (src)
				memcpy(p->data + ps, src, n);
			else
				memset(p->data + ps, 0, n);
		} else {
			struct rset mine = {0};
			int rc = 0;
			for (uint32_t i = 0; i < p->dirty.n && rc == 0; i++)
				rc = rset_add(&mine, p->dirty.r[i].s,
				              p->dirty.r[i].e) < 0;
			for (uint32_t i = 0; i < p->unstable.n && rc == 0; i++)
				rc = rset_add(&mine, p->unstable.r[i].s,
				              p->unstable.r[i].e) < 0;
			struct rrange *g = malloc((mine.n + 1) * sizeof(*g));
			if (rc || !g) {
				free(g);
				rset_free(&mine);
				return -ENOMEM;
			}
			uint32_t ng = rset_gaps(&mine, ps, ps + n, g);
			for (uint32_t i = 0; i < ng; i++) {
				if (src)
					memcpy(p->data + g[i].s,
					       src + (g[i].s - ps),
					       g[i].e - g[i].s);
				else
					memset(p->data + g[i].s, 0,
					       g[i].e - g[i].s);
			}
			free(g);
			rset_free(&mine);
		}
		if (rset_add(&p->valid, ps, ps + n) < 0)
			return -ENOMEM;
		off += n;
		if (src)
			src += n;
		len -= n;
	}
	return 0;
}

struct span {
	uint64_t off, len;
};

/* The byte spans of [off, end) that no page holds valid. */
static int missing_spans(struct pc_file *f, uint64_t off, uint64_t end,
                         struct span **out, size_t *nout)
{
	struct span *v = NULL;
	size_t n = 0, cap = 0;

	while (off < end) {
		uint64_t idx = off >> PC_PAGE_SHIFT;
		uint32_t ps = (uint32_t)(off & (PC_PAGE_SIZE - 1));
		uint64_t pe64 = ((idx + 1) << PC_PAGE_SHIFT) < end
		                    ? PC_PAGE_SIZE
		                    : end - (idx << PC_PAGE_SHIFT);
		uint32_t pe = (uint32_t)pe64;
		struct pc_page *p = page_find(f, idx);
		struct rrange one = {ps, pe}, *g = &one;
		uint32_t ng = 1;
		if (p) {
			g = malloc((p->valid.n + 1) * sizeof(*g));
			if (!g)
				goto nomem;
			ng = rset_gaps(&p->valid, ps, pe, g);
		}
		for (uint32_t i = 0; i < ng; i++) {
			uint64_t s = (idx << PC_PAGE_SHIFT) + g[i].s;
			uint64_t l = g[i].e - g[i].s;
			if (n && v[n - 1].off + v[n - 1].len == s) {
				v[n - 1].len += l;
				continue;
			}
			if (n == cap) {
				cap = cap ? cap * 2 : 8;
				struct span *nv = realloc(v, cap * sizeof(*v));
				if (!nv) {
					if (g != &one)
						free(g);
					goto nomem;
				}
				v = nv;
			}
			v[n++] = (struct span){s, l};
		}
		if (g != &one)
			free(g);
		off = (idx << PC_PAGE_SHIFT) + pe;
	}
	*out = v;
	*nout = n;
	return 0;
nomem:
	free(v);
	return -ENOMEM;
}

struct rchunk {
	uint64_t off;
	uint32_t len;
	uint8_t *buf;
	struct rpc_req *req;
};

/* A READ reply: fill pages; at EOF the server's file ends here. */
static int read_done(struct pc_file *f, struct rchunk *ch,
                     const struct snfs_read_res *res, bool *progress)
{
	int rc = fill_pages(f, ch->off, ch->buf, res->count);
	if (rc < 0)
		return rc;
	if (res->count)
		*progress = true;
	if (res->eof && res->count < ch->len) {
		uint64_t sz = ch->off + res->count;
		/* Past the server's EOF and before data of ours, the file
		 * reads as zeros; beyond everything, it ends. */
		uint64_t newsize = sz > f->wend ? sz : f->wend;
		uint64_t zend = ch->off + ch->len;
		if (zend > newsize)
			zend = newsize;
		if (zend > sz) {
			rc = fill_pages(f, sz, NULL, zend - sz);
			*progress = true;
		}
		if (newsize < f->size) {
			f->size = newsize;
			*progress = true;
		}
	}
	return rc;
}

/* READ the spans, rsize at a time, up to MAX_INFLIGHT outstanding. */
static int fetch_spans(struct pc_file *f, const struct span *sp, size_t nsp,
                       bool *progress)
{
	struct snfs_ctx *c = f->c;
	struct rchunk q[MAX_INFLIGHT];
	size_t head = 0, tail = 0, si = 0;
	uint64_t soff = nsp ? sp[0].off : 0;
	int rc = 0;

	for (;;) {
		while (rc == 0 && tail - head < MAX_INFLIGHT && si < nsp) {
			uint64_t end = sp[si].off + sp[si].len;
			uint32_t len = end - soff > c->rsize
			                   ? c->rsize
			                   : (uint32_t)(end - soff);
			struct rchunk *ch = &q[tail % MAX_INFLIGHT];
			ch->off = soff;
			ch->len = len;
			ch->buf = malloc(len);
			if (!ch->buf) {
				rc = -ENOMEM;
				break;
			}
			rc = c->ops->read_start(c, &f->fh, soff, len, &ch->req);
			if (rc < 0) {
				free(ch->buf);
				break;
			}
			tail++;
			soff += len;
			if (soff >= end && ++si < nsp)
				soff = sp[si].off;
		}
		if (head == tail)
			break;
		struct rchunk *ch = &q[head++ % MAX_INFLIGHT];
		struct snfs_read_res res;
		int r = c->ops->read_finish(c, ch->req, ch->buf, ch->len, &res);
		if (r == 0 && rc == 0)
			r = read_done(f, ch, &res, progress);
		if (r < 0 && rc == 0)
			rc = r;
		free(ch->buf);
	}
	return rc;
}

/* A large read of bytes the cache holds nothing of, and with nothing of
 * ours waiting to be sent: streaming it through 64 KiB pages would cost
 * two extra copies and fresh pages to fault in, for data a sequential
 * reader will not ask for again. */
static bool direct_ok(struct pc_file *f, uint64_t off, uint64_t end)
{
	if (f->dirty_bytes || end - off < DIRECT_MIN || end - off < f->c->rsize)
		return false;
	for (uint64_t i = off >> PC_PAGE_SHIFT; i <= (end - 1) >> PC_PAGE_SHIFT;
	     i++)
		if (page_find(f, i))
			return false;
	return true;
}

/* The server's file ends at eof_at, inside [.., end) of a direct read
 * into dst (which starts at off): bytes we wrote past it (already sent,
 * so no page holds them dirty) still count, as zeros up to wend. Returns
 * where the read ends. */
static uint64_t direct_eof(struct pc_file *f, uint8_t *dst, uint64_t off,
                           uint64_t eof_at, uint64_t end)
{
	uint64_t newsize = eof_at > f->wend ? eof_at : f->wend;
	uint64_t zend = end < newsize ? end : newsize;
	if (zend > eof_at)
		memset(dst + (eof_at - off), 0, zend - eof_at);
	if (newsize < f->size)
		f->size = newsize;
	return zend;
}

/* Read [off, end) into dst, rsize per call, MAX_INFLIGHT calls
 * outstanding, each reply's data copied once, from the transport's buffer
 * into dst. A short reply without eof (the server may send less than
 * asked) makes us ask again from where it stopped. Returns the bytes
 * read or -errno. */
static ssize_t direct_read(struct pc_file *f, uint8_t *dst, uint64_t off,
                           uint64_t end)
{
	struct snfs_ctx *c = f->c;
	struct rchunk q[MAX_INFLIGHT];
	uint64_t next = off, good = off;
	int rc = 0, rounds = 0;

	while (rc == 0 && next < end && rounds++ < 64) {
		size_t head = 0, tail = 0;
		bool stop = false, eof = false;
		for (;;) {
			while (rc == 0 && !stop && tail - head < MAX_INFLIGHT &&
			       next < end) {
				struct rchunk *ch = &q[tail % MAX_INFLIGHT];
				ch->off = next;
				ch->len = end - next > c->rsize
				              ? c->rsize
				              : (uint32_t)(end - next);
				ch->buf = dst + (next - off);
				rc = c->ops->read_start(c, &f->fh, next,
				                        ch->len, &ch->req);
				if (rc < 0)
					break;
				tail++;
				next += ch->len;
			}
			if (head == tail)
				break;
			struct rchunk *ch = &q[head++ % MAX_INFLIGHT];
			struct snfs_read_res res;
			int r = c->ops->read_finish(c, ch->req, ch->buf,
			                            ch->len, &res);
			if (r < 0 && rc == 0)
				rc = r;
			if (r < 0 || rc < 0 || stop)
				continue; /* drain what is in flight */
			good = ch->off + res.count;
			if (res.count < ch->len) {
				stop = true;
				eof = res.eof;
			}
		}
		if (rc < 0)
			return rc;
		if (eof)
			return (ssize_t)(direct_eof(f, dst, off, good, end) -
			                 off);
		next = good; /* short reply: go on from there */
	}
	return rc < 0 ? rc : (ssize_t)(good - off);
}

static void copy_out(struct pc_file *f, uint8_t *dst, uint64_t off,
                     uint64_t end)
{
	while (off < end) {
		uint64_t idx = off >> PC_PAGE_SHIFT;
		uint32_t ps = (uint32_t)(off & (PC_PAGE_SIZE - 1));
		uint32_t n = PC_PAGE_SIZE - ps;
		if (n > end - off)
			n = (uint32_t)(end - off);
		struct pc_page *p = page_find(f, idx);
		if (p)
			memcpy(dst, p->data + ps, n);
		else
			memset(dst, 0, n);
		dst += n;
		off += n;
	}
}

static void trim(struct pc_file *f);

/* Keep the spans that overlap [off, end): a block's missing bytes that
 * do not join the read's own would cost a call of their own. */
static size_t spans_touching(struct span *sp, size_t n, uint64_t off,
                             uint64_t end)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (sp[i].off < end && sp[i].off + sp[i].len > off)
			sp[k++] = sp[i];
	return k;
}

/* A read miss fetches the 4 KiB blocks it touches (less what is held):
 * widen [*lo, *hi) to whole blocks, but not past the end of the file. In
 * both modes: a partial-page cache differs from a classic one in writing
 * without reading first, not in fetching less than a block on a miss
 * (2 KiB random reads fetched 2 KiB at a time each missed again on the
 * other half of their block). */
static void block_round(struct pc_file *f, uint64_t *lo, uint64_t *hi)
{
	uint64_t e =
	    (*hi + PC_CLASSIC_PAGE - 1) & ~(uint64_t)(PC_CLASSIC_PAGE - 1);
	*lo &= ~(uint64_t)(PC_CLASSIC_PAGE - 1);
	*hi = e < f->size ? e : f->size;
	if (*hi < *lo)
		*hi = *lo;
}

/* pagecache=full: before a write of [off, off + count), READ what is
 * missing of the classic pages it covers only in part, as a cache that
 * knows only whole pages must (read-modify-write). */
static int classic_prefill(struct pc_file *f, uint64_t off, uint64_t count)
{
	const uint64_t mask = ~(uint64_t)(PC_CLASSIC_PAGE - 1);
	uint64_t end = off + count, pg[2];
	int n = 0, rc = 0;

	if (count == 0)
		return 0;
	if ((off & ~mask) || end - (off & mask) < PC_CLASSIC_PAGE)
		pg[n++] = off & mask;
	if ((end & ~mask) && (n == 0 || ((end - 1) & mask) != pg[0]))
		pg[n++] = (end - 1) & mask;
	for (int i = 0; i < n && rc == 0; i++) {
		uint64_t s = pg[i], e = s + PC_CLASSIC_PAGE;
		struct span *sp = NULL;
		size_t nsp = 0;
		bool progress = false;
		if (e > f->size)
			e = f->size;
		if (s >= e)
			continue;
		rc = missing_spans(f, s, e, &sp, &nsp);
		if (rc == 0 && nsp) {
			for (size_t k = 0; k < nsp; k++)
				counter_add(&f->c->stats.cache_misses,
				            sp[k].len);
			rc = fetch_spans(f, sp, nsp, &progress);
		}
		free(sp);
	}
	return rc;
}

ssize_t pc_read(struct pc_file *f, void *buf, size_t count, uint64_t off)
{
	struct snfs_ctx *c = f->c;
	ssize_t ret;
	int rc = 0, rounds = 0;

	if (count > SSIZE_MAX)
		count = SSIZE_MAX;
	pthread_mutex_lock(&f->lock);
	recheck_size(f, off + count);
	if (f->next_read == off && off != 0)
		f->ra = f->ra ? (f->ra * 2 > MAX_RA ? MAX_RA : f->ra * 2)
		              : 2 * c->rsize;
	else if (off != 0 || count < c->rsize)
		f->ra = 0;
	else
		f->ra = 2 * c->rsize;
	uint64_t dend = off + count < f->size ? off + count : f->size;
	if (off < dend && direct_ok(f, off, dend)) {
		ret = direct_read(f, buf, off, dend);
		if (ret > 0) {
			counter_add(&c->stats.cache_misses, (uint64_t)ret);
			f->next_read = off + (uint64_t)ret;
		}
		pthread_mutex_unlock(&f->lock);
		return ret;
	}
	for (;;) {
		uint64_t end = off + count < f->size ? off + count : f->size;
		struct span *sp = NULL;
		size_t nsp = 0;
		bool progress = false;
		if (off >= end)
			break;
		/* what is missing of the blocks touched, where it joins the
		 * read: nothing when the read itself is all held */
		uint64_t lo = off, hi = end;
		block_round(f, &lo, &hi);
		rc = missing_spans(f, lo, hi, &sp, &nsp);
		if (rc == 0)
			nsp = spans_touching(sp, nsp, off, end);
		if (rc < 0 || nsp == 0) {
			free(sp);
			break;
		}
		/* Read ahead when the caller reads sequentially and the
		 * last hole reaches the end of this read. */
		struct span *last = &sp[nsp - 1];
		if (f->ra && last->off + last->len == hi && c->pc->budget) {
			uint64_t ra_end = end + f->ra;
			last->len =
			    (ra_end < f->size ? ra_end : f->size) - last->off;
		}
		if (rounds == 0)
			for (size_t i = 0; i < nsp; i++)
				counter_add(&c->stats.cache_misses, sp[i].len);
		rc = fetch_spans(f, sp, nsp, &progress);
		free(sp);
		if (rc < 0 || !progress || ++rounds > 8)
			break;
	}
	if (rc < 0) {
		ret = rc;
	} else {
		uint64_t end = off + count < f->size ? off + count : f->size;
		if (off >= end)
			end = off;
		copy_out(f, buf, off, end);
		ret = (ssize_t)(end - off);
		f->next_read = end;
		if (rounds == 0)
			counter_add(&c->stats.cache_hits, (uint64_t)ret);
	}
	trim(f);
	pthread_mutex_unlock(&f->lock);
	return ret;
}

/* ---- writing ---- */

/* Move [off, off + len) between a page set pair: from "from" into "to"
 * (to may be NULL: just drop), keeping the byte counters exact. */
static int move_range(struct pc_file *f, uint64_t off, uint64_t len,
                      bool dirty_to_unstable)
{
	while (len > 0) {
		uint64_t idx = off >> PC_PAGE_SHIFT;
		uint32_t ps = (uint32_t)(off & (PC_PAGE_SIZE - 1));
		uint32_t n =
		    PC_PAGE_SIZE - ps < len ? PC_PAGE_SIZE - ps : (uint32_t)len;
		struct pc_page *p = page_find(f, idx);
		if (p) {
			struct rset *from =
			    dirty_to_unstable ? &p->dirty : &p->unstable;
			struct rset *to =
			    dirty_to_unstable ? &p->unstable : &p->dirty;
			int64_t a = rset_add(to, ps, ps + n);
			int64_t d = rset_del(from, ps, ps + n);
			if (a < 0 || d < 0)
				return -ENOMEM;
			if (dirty_to_unstable) {
				f->unstable_bytes += (uint64_t)a;
				f->dirty_bytes -= (uint64_t)d;
			} else {
				f->dirty_bytes += (uint64_t)a;
				f->unstable_bytes -= (uint64_t)d;
			}
		}
		off += n;
		len -= n;
	}
	return 0;
}

/* Drop [off, off + len) from the unstable sets (FILE_SYNC replies). */
static void drop_unstable(struct pc_file *f, uint64_t off, uint64_t len)
{
	while (len > 0) {
		uint64_t idx = off >> PC_PAGE_SHIFT;
		uint32_t ps = (uint32_t)(off & (PC_PAGE_SIZE - 1));
		uint32_t n =
		    PC_PAGE_SIZE - ps < len ? PC_PAGE_SIZE - ps : (uint32_t)len;
		struct pc_page *p = page_find(f, idx);
		if (p) {
			int64_t d = rset_del(&p->unstable, ps, ps + n);
			if (d > 0)
				f->unstable_bytes -= (uint64_t)d;
		}
		off += n;
		len -= n;
	}
}

/* Every dirty byte of f as runs of contiguous bytes, each at most max
 * long, in file order. */
static int collect_runs(struct pc_file *f, uint32_t max, struct span **out,
                        size_t *nout)
{
	size_t np, n = 0, cap = 0;
	struct pc_page **pv = sorted_pages(f, &np);
	struct span *v = NULL;

	if (!pv)
		return -ENOMEM;
	for (size_t i = 0; i < np; i++) {
		struct pc_page *p = pv[i];
		for (uint32_t k = 0; k < p->dirty.n; k++) {
			uint64_t s =
			    (p->index << PC_PAGE_SHIFT) + p->dirty.r[k].s;
			uint64_t e =
			    (p->index << PC_PAGE_SHIFT) + p->dirty.r[k].e;
			while (s < e) {
				struct span *last = n ? &v[n - 1] : NULL;
				if (last && last->off + last->len == s &&
				    last->len < max) {
					uint64_t take = max - last->len;
					if (take > e - s)
						take = e - s;
					last->len += take;
					s += take;
					continue;
				}
				if (n == cap) {
					cap = cap ? cap * 2 : 16;
					struct span *nv =
					    realloc(v, cap * sizeof(*v));
					if (!nv) {
						free(v);
						free(pv);
						return -ENOMEM;
					}
					v = nv;
				}
				uint64_t take = e - s < max ? e - s : max;
				v[n++] = (struct span){s, take};
				s += take;
			}
		}
	}
	free(pv);
	*out = v;
	*nout = n;
	return 0;
}

static void note_verf(struct pc_file *f, const uint8_t verf[8])
{
	if (!f->have_wverf) {
		memcpy(f->wverf, verf, 8);
		f->have_wverf = true;
	} else if (memcmp(f->wverf, verf, 8) != 0) {
		f->verf_mixed = true; /* the server restarted meanwhile */
	}
}

/* A WRITE of run s came back: what it took is unstable (or stable). */
static void write_done(struct pc_file *f, const struct span *s,
                       const struct snfs_write_res *res)
{
	uint64_t n = res->count < s->len ? res->count : s->len;
	if (n < s->len) /* short write: the rest is dirty again */
		move_range(f, s->off + n, s->len - n, false);
	if (res->committed == SNFS_FILE_SYNC)
		drop_unstable(f, s->off, n);
	else if (n)
		note_verf(f, res->verf);
}

/* The next calls' worth of runs from runs[ri]: one run, or with a
 * vectored WRITE (NFSv4) as many as fit wsize bytes and the session's
 * operation limit. */
static uint32_t group_runs(struct snfs_ctx *c, const struct span *runs,
                           size_t ri, size_t nruns)
{
	uint32_t n = 1;
	uint64_t bytes = runs[ri].len;
	if (!c->ops->write_vec_start || c->max_write_ops < 2)
		return 1;
	while (ri + n < nruns && n < c->max_write_ops &&
	       bytes + runs[ri + n].len + 64 * (n + 1) <= c->wsize)
		bytes += runs[ri + n++].len;
	return n;
}

struct wgroup {
	size_t first; /* runs[first, first + n) */
	uint32_t n;
	struct rpc_req *req;
};

static int wgroup_start(struct pc_file *f, const struct span *runs,
                        struct wgroup *g, uint8_t *tmp)
{
	struct snfs_ctx *c = f->c;
	struct snfs_wseg v[64];
	size_t at = 0;
	int rc;

	for (uint32_t i = 0; i < g->n; i++) {
		const struct span *r = &runs[g->first + i];
		copy_out(f, tmp + at, r->off, r->off + r->len);
		v[i] = (struct snfs_wseg){r->off, (uint32_t)r->len};
		at += r->len;
	}
	if (g->n == 1)
		rc = c->ops->write_start(c, &f->fh, v[0].off, tmp, v[0].len,
		                         SNFS_UNSTABLE, &g->req);
	else
		rc = c->ops->write_vec_start(c, &f->fh, v, g->n, tmp,
		                             SNFS_UNSTABLE, &g->req);
	if (rc < 0)
		return rc;
	for (uint32_t i = 0; i < g->n; i++)
		move_range(f, v[i].off, v[i].len, true);
	return 0;
}

/* Settle a group: its WRITEs that succeeded are unstable (or stable),
 * the others dirty again. */
static int wgroup_finish(struct pc_file *f, const struct span *runs,
                         struct wgroup *g)
{
	struct snfs_ctx *c = f->c;
	struct snfs_write_res res[64];
	uint32_t done = 0;
	int r;

	if (g->n == 1) {
		r = c->ops->write_finish(c, g->req, &res[0]);
		done = r == 0;
	} else {
		r = c->ops->write_vec_finish(c, g->req, res, &done);
	}
	for (uint32_t i = 0; i < g->n; i++) {
		const struct span *s = &runs[g->first + i];
		if (i < done)
			write_done(f, s, &res[i]);
		else
			move_range(f, s->off, s->len, false);
	}
	return r;
}

/* Send every dirty range as UNSTABLE WRITEs, pipelined. The ranges turn
 * unstable when sent; a failed WRITE makes its range dirty again. */
static int write_dirty(struct pc_file *f)
{
	struct snfs_ctx *c = f->c;
	int rc = 0;

	for (int pass = 0; pass < 4 && f->dirty_bytes && rc == 0; pass++) {
		struct span *runs;
		size_t nruns, ri = 0;
		struct wgroup q[MAX_INFLIGHT];
		size_t head = 0, tail = 0;

		rc = collect_runs(f, c->wsize, &runs, &nruns);
		if (rc < 0)
			return rc;
		uint8_t *tmp = malloc(c->wsize);
		if (!tmp) {
			free(runs);
			return -ENOMEM;
		}
		for (;;) {
			while (rc == 0 && ri < nruns &&
			       tail - head < MAX_INFLIGHT) {
				struct wgroup *g = &q[tail % MAX_INFLIGHT];
				g->first = ri;
				g->n = group_runs(c, runs, ri, nruns);
				rc = wgroup_start(f, runs, g, tmp);
				if (rc < 0)
					break;
				ri += g->n;
				tail++;
			}
			if (head == tail)
				break;
			int r =
			    wgroup_finish(f, runs, &q[head++ % MAX_INFLIGHT]);
			if (r < 0 && rc == 0)
				rc = r;
		}
		free(runs);
		free(tmp);
	}
	return rc;
}

/* Write back, then COMMIT until the verifier holds (section 3.3.21). */
static int flush_locked(struct pc_file *f, bool commit)
{
	struct snfs_ctx *c = f->c;
	int rc = f->werr;

	f->werr = 0;
	if (rc < 0)
		return rc;
	for (int tries = 0; tries < COMMIT_TRIES; tries++) {
		rc = write_dirty(f);
		/* Everything written is stable on the server (FILE_SYNC
		 * replies): its size holds our bytes, so none count past
		 * it any more. Left set, wend outlived a later truncation
		 * and brought the old size back at the next revalidation. */
		if (rc == 0 && f->unstable_bytes == 0 && f->dirty_bytes == 0)
			f->wend = 0;
		if (rc < 0 || !commit || f->unstable_bytes == 0)
			return rc;
		uint8_t verf[8];
		struct snfs_stat post;
		bool have_post = false;
		rc = c->ops->commit(c, &f->fh, verf, &post, &have_post);
		if (rc < 0)
			return rc;
		if (f->have_wverf && !f->verf_mixed &&
		    memcmp(verf, f->wverf, 8) == 0) {
			for (struct pc_page *p = f->lru.lnext; p != &f->lru;
			     p = p->lnext)
				rset_clear(&p->unstable);
			f->unstable_bytes = 0;
			f->have_wverf = false;
			f->wend = 0;
			if (have_post) {
				f->validator = post;
				f->have_validator = true;
			}
			return 0;
		}
		/* The server lost what it had not committed: send it all
		 * again. */
		counter_add(&c->stats.write_resends, 1);
		for (struct pc_page *p = f->lru.lnext; p != &f->lru;
		     p = p->lnext)
			for (uint32_t i = p->unstable.n; i > 0; i--) {
				struct rrange r = p->unstable.r[0];
				move_range(f, (p->index << PC_PAGE_SHIFT) + r.s,
				           r.e - r.s, false);
			}
		f->have_wverf = false;
		f->verf_mixed = false;
	}
	return -EIO;
}

int pc_flush(struct pc_file *f, bool commit)
{
	pthread_mutex_lock(&f->lock);
	int rc = flush_locked(f, commit);
	trim(f);
	pthread_mutex_unlock(&f->lock);
	return rc;
}

static size_t unstable_cap(struct pc_file *f)
{
	size_t half = f->c->pc->budget / 2;
	return half > UNSTABLE_MIN ? half : UNSTABLE_MIN;
}

/* Keep the cache within budget: write back and commit when pinned pages
 * are what holds it over. */
static void trim(struct pc_file *f)
{
	evict_clean(f);
	if (f->unstable_bytes > unstable_cap(f) ||
	    (over_budget(f) && (f->dirty_bytes || f->unstable_bytes))) {
		int rc = flush_locked(f, true);
		if (rc < 0 && f->werr == 0)
			f->werr = rc;
		evict_clean(f);
	}
}

ssize_t pc_write(struct pc_file *f, const void *buf, size_t count, uint64_t off)
{
	const uint8_t *src = buf;
	uint64_t pos = off, left = count;
	int rc = 0;

	if (count > SSIZE_MAX)
		count = SSIZE_MAX;
	pthread_mutex_lock(&f->lock);
	if (f->c->pc->classic) {
		rc = classic_prefill(f, off, count);
		if (rc < 0) {
			pthread_mutex_unlock(&f->lock);
			return rc;
		}
	}
	while (left > 0) {
		uint64_t idx = pos >> PC_PAGE_SHIFT;
		uint32_t ps = (uint32_t)(pos & (PC_PAGE_SIZE - 1));
		uint32_t n = PC_PAGE_SIZE - ps < left ? PC_PAGE_SIZE - ps
		                                      : (uint32_t)left;
		struct pc_page *p = page_get(f, idx);
		if (!p) {
			rc = -ENOMEM;
			break;
		}
		memcpy(p->data + ps, src, n);
		int64_t a = rset_add(&p->dirty, ps, ps + n);
		if (a < 0 || rset_add(&p->valid, ps, ps + n) < 0) {
			rc = -ENOMEM;
			break;
		}
		f->dirty_bytes += (uint64_t)a;
		pos += n;
		src += n;
		left -= n;
	}
	if (pos > f->size)
		f->size = pos;
	if (pos > f->wend)
		f->wend = pos;
	size_t wb = 4 * (size_t)f->c->wsize;
	if (wb < WB_MIN)
		wb = WB_MIN;
	if (f->c->pc->budget == 0 || f->dirty_bytes >= wb) {
		int r = write_dirty(f);
		if (r < 0 && f->werr == 0)
			f->werr = r;
	}
	trim(f);
	pthread_mutex_unlock(&f->lock);
	if (rc < 0 && pos == off)
		return rc;
	return (ssize_t)(pos - off);
}

int pc_truncate(struct pc_file *f, uint64_t size)
{
	struct snfs_ctx *c = f->c;
	struct snfs_setattr sa = {.mask = SNFS_SET_SIZE, .size = size};
	struct snfs_stat post;
	bool have_post = false;

	pthread_mutex_lock(&f->lock);
	int rc = flush_locked(f, true);
	if (rc == 0)
		rc = c->ops->setattr(c, &f->fh, &sa, &post, &have_post);
	if (rc == 0) {
		struct pc_page *p = f->lru.lnext, *next;
		for (; p != &f->lru; p = next) {
			next = p->lnext;
			uint64_t start = p->index << PC_PAGE_SHIFT;
			if (start >= size)
				page_free(f, p);
			else if (start + PC_PAGE_SIZE > size)
				rset_del(&p->valid, (uint32_t)(size - start),
				         PC_PAGE_SIZE);
		}
		f->size = size;
		if (f->wend > size)
			f->wend = size; /* bytes past it are gone */
		if (have_post) {
			f->validator = post;
			f->have_validator = true;
		}
	}
	pthread_mutex_unlock(&f->lock);
	return rc;
}
