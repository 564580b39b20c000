/* Directory listings (see readdir.h) and the opendir/readdir API.
 *
 * A listing is read reply by reply as the caller consumes it. When the
 * server refuses a cookie (NFS3ERR_BAD_COOKIE, NFS4ERR_NOT_SAME: the
 * directory changed under us), what it refuses may be only our verifier:
 * servers whose cookies are stable positions (snfsd's are the file
 * system's directory offsets) take the cookie with the directory's current
 * verifier, so we fetch that (a small READDIR from the start) and resume.
 * If the verifier did not change, or the cookie is refused with the new
 * one too, we read again from cookie 0 and skip every name already
 * returned, so no entry comes twice and none still present is lost (RFC
 * 1813 section 3.3.16). A directory changing without pause would never
 * list if every change cost a restart. Complete listings are kept in a
 * small per-context cache and reused while the directory's attributes
 * hold. */
#include "client/readdir.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define RD_SLOTS 4
#define RD_MAX_RESTARTS 16
#define RD_VERF_TRIES 8 /* fresh verifiers tried for one reply */
#define RD_PROBE_BUF 4096

uint64_t rd_find_cookie_probes;

static void count_probe(void)
{
	__atomic_fetch_add(&rd_find_cookie_probes, 1, __ATOMIC_RELAXED);
}

int rd_page_add(struct rd_page *p, const struct rd_entry *e)
{
	if (p->n == p->cap) {
		uint32_t cap = p->cap ? p->cap * 2 : 64;
		struct rd_entry *v = realloc(p->ents, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		p->ents = v;
		p->cap = cap;
	}
	p->ents[p->n++] = *e;
	return 0;
}

void rd_page_free(struct rd_page *p)
{
	if (!p)
		return;
	rpc_buf_free(p->buf);
	free(p->ents);
	free(p);
}

void rd_list_init(struct rd_list *l)
{
	memset(l, 0, sizeof(*l));
	l->monotonic = true;
}

void rd_list_free(struct rd_list *l)
{
	for (uint32_t i = 0; i < l->npages; i++)
		rd_page_free(l->pages[i]);
	free(l->pages);
	free(l->first_index);
	rd_list_init(l);
}

int rd_list_append(struct rd_list *l, struct rd_page *p)
{
	if (l->npages == l->cap) {
		uint32_t cap = l->cap ? l->cap * 2 : 16;
		struct rd_page **pv = realloc(l->pages, cap * sizeof(*pv));
		if (!pv)
			return -ENOMEM;
		l->pages = pv;
		uint64_t *fi = realloc(l->first_index, cap * sizeof(*fi));
		if (!fi)
			return -ENOMEM;
		l->first_index = fi;
		l->cap = cap;
	}
	for (uint32_t i = 0; i < p->n; i++) {
		if (p->ents[i].cookie <= l->last_cookie && (l->nents || i))
			l->monotonic = false;
		l->last_cookie = p->ents[i].cookie;
	}
	l->first_index[l->npages] = l->nents;
	l->pages[l->npages++] = p;
	l->nents += p->n;
	if (p->eof)
		l->complete = true;
	return 0;
}

/* The page holding entry i: binary search on first_index. */
static uint32_t page_of(const struct rd_list *l, uint64_t i)
{
	uint32_t lo = 0, hi = l->npages;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (l->first_index[mid] <= i)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

const struct rd_entry *rd_list_get(const struct rd_list *l, uint64_t i,
                                   const struct rd_page **page)
{
	if (i >= l->nents)
		return NULL;
	uint32_t pi = page_of(l, i);
	/* skip empty pages that share a first_index */
	while (pi + 1 < l->npages && l->first_index[pi + 1] <= i)
		pi++;
	*page = l->pages[pi];
	return &l->pages[pi]->ents[i - l->first_index[pi]];
}

int rd_list_find_cookie(const struct rd_list *l, uint64_t cookie,
                        uint64_t *index)
{
	const struct rd_page *pg;

	if (cookie == 0) {
		*index = 0;
		return 0;
	}
	if (l->monotonic) {
		uint64_t lo = 0, hi = l->nents;
		while (lo < hi) {
			uint64_t mid = lo + (hi - lo) / 2;
			uint64_t c = rd_list_get(l, mid, &pg)->cookie;
			count_probe();
			if (c == cookie) {
				*index = mid + 1;
				return 0;
			}
			if (c < cookie)
				lo = mid + 1;
			else
				hi = mid;
		}
		return -ENOENT;
	}
	for (uint64_t i = 0; i < l->nents; i++) {
		count_probe();
		if (rd_list_get(l, i, &pg)->cookie == cookie) {
			*index = i + 1;
			return 0;
		}
	}
	return -ENOENT;
}

/* ---- a set of names, for skipping entries after a restart ---- */

struct name_set {
	char **slots;
	size_t cap, n;
};

static uint64_t name_hash(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
	return h;
}

static int ns_grow(struct name_set *ns)
{
	size_t cap = ns->cap ? ns->cap * 2 : 1024;
	char **slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < ns->cap; i++) {
		char *s = ns->slots[i];
		if (!s)
			continue;
		size_t h = name_hash(s, strlen(s)) & (cap - 1);
		while (slots[h])
			h = (h + 1) & (cap - 1);
		slots[h] = s;
	}
	free(ns->slots);
	ns->slots = slots;
	ns->cap = cap;
	return 0;
}

/* Add name; returns 1 if added, 0 if present, -ENOMEM. */
static int ns_add(struct name_set *ns, const char *name, size_t len)
{
	if ((ns->n + 1) * 2 > ns->cap && ns_grow(ns) < 0)
		return -ENOMEM;
	size_t h = name_hash(name, len) & (ns->cap - 1);
	for (; ns->slots[h]; h = (h + 1) & (ns->cap - 1))
		if (strlen(ns->slots[h]) == len &&
		    memcmp(ns->slots[h], name, len) == 0)
			return 0;
	ns->slots[h] = strndup(name, len);
	if (!ns->slots[h])
		return -ENOMEM;
	ns->n++;
	return 1;
}

static void ns_free(struct name_set *ns)
{
	if (!ns)
		return;
	for (size_t i = 0; i < ns->cap; i++)
		free(ns->slots[i]);
	free(ns->slots);
	free(ns);
}

/* ---- the cache of complete listings ---- */

struct rd_shared {
	struct rd_list list;
	int refs;
	size_t bytes;
};

struct rd_slot {
	struct snfs_fh dir;
	bool plus;
	struct snfs_stat attr;
	struct rd_shared *sh;
};

struct rd_cache {
	pthread_mutex_t lock;
	struct rd_slot slots[RD_SLOTS];
	unsigned next;
	size_t max_bytes;
};

int rd_cache_new(struct rd_cache **out, size_t max_bytes)
{
	struct rd_cache *rc = calloc(1, sizeof(*rc));
	if (!rc)
		return -ENOMEM;
	pthread_mutex_init(&rc->lock, NULL);
	rc->max_bytes = max_bytes;
	*out = rc;
	return 0;
}

static void shared_put(struct rd_shared *sh)
{
	if (sh && --sh->refs == 0) {
		rd_list_free(&sh->list);
		free(sh);
	}
}

void rd_cache_free(struct rd_cache *rc)
{
	if (!rc)
		return;
	for (int i = 0; i < RD_SLOTS; i++)
		shared_put(rc->slots[i].sh);
	pthread_mutex_destroy(&rc->lock);
	free(rc);
}

static bool same_dir_version(const struct snfs_stat *a,
                             const struct snfs_stat *b)
{
	return a->change == b->change && a->size == b->size &&
	       a->mtime.tv_sec == b->mtime.tv_sec &&
	       a->mtime.tv_nsec == b->mtime.tv_nsec;
}

static struct rd_shared *cache_lookup(struct rd_cache *rc,
                                      const struct snfs_fh *dir, bool plus,
                                      const struct snfs_stat *attr)
{
	struct rd_shared *sh = NULL;
	pthread_mutex_lock(&rc->lock);
	for (int i = 0; i < RD_SLOTS; i++) {
		struct rd_slot *s = &rc->slots[i];
		if (s->sh && fh_equal(&s->dir, dir) && (s->plus || !plus)) {
			if (same_dir_version(&s->attr, attr)) {
				sh = s->sh;
				sh->refs++;
			} else {
				shared_put(s->sh);
				s->sh = NULL;
			}
			break;
		}
	}
	pthread_mutex_unlock(&rc->lock);
	return sh;
}

static void cache_insert(struct rd_cache *rc, const struct snfs_fh *dir,
                         bool plus, const struct snfs_stat *attr,
                         struct rd_shared *sh)
{
	pthread_mutex_lock(&rc->lock);
	struct rd_slot *s = NULL;
	for (int i = 0; i < RD_SLOTS && !s; i++)
		if (rc->slots[i].sh && fh_equal(&rc->slots[i].dir, dir))
			s = &rc->slots[i];
	if (!s)
		s = &rc->slots[rc->next++ % RD_SLOTS];
	shared_put(s->sh);
	s->dir = *dir;
	s->plus = plus;
	s->attr = *attr;
	s->sh = sh;
	sh->refs++;
	pthread_mutex_unlock(&rc->lock);
}

/* ---- the API ---- */

struct snfs_dir {
	struct snfs_ctx *c;
	struct snfs_fh fh;
	bool plus;
	struct snfs_stat open_attr;
	struct rd_shared *sh; /* the listing (ours, or shared from cache) */
	bool from_cache;
	uint64_t pos;    /* next entry */
	uint64_t cookie; /* of the last entry returned */
	uint8_t verf[8];
	struct name_set *seen; /* after a restart: names already returned */
	int restarts, resumes;
	char *name;
};

int snfs_opendir(struct snfs_ctx *c, const char *path, int flags,
                 struct snfs_dir **out)
{
	struct snfs_dir *d = calloc(1, sizeof(*d));
	int rc;

	if (!d)
		return snfs_fail(-ENOMEM, "out of memory");
	d->c = c;
	d->plus = flags & SNFS_DIR_PLUS;
	rc = snfs_resolve(c, path, true, &d->fh, NULL);
	if (rc == 0)
		rc = c->ops->getattr(c, &d->fh, &d->open_attr);
	if (rc == 0 && d->open_attr.type != SNFS_DIR)
		rc = -ENOTDIR;
	if (rc < 0) {
		free(d);
		return snfs_fail(rc, "%s: %s", path, strerror(-rc));
	}
	d->sh = cache_lookup(c->rd, &d->fh, d->plus, &d->open_attr);
	d->from_cache = d->sh != NULL;
	if (!d->sh) {
		d->sh = calloc(1, sizeof(*d->sh));
		if (!d->sh) {
			free(d);
			return snfs_fail(-ENOMEM, "out of memory");
		}
		rd_list_init(&d->sh->list);
		d->sh->refs = 1;
	}
	*out = d;
	return 0;
}

/* Start over from cookie 0, remembering every name returned so far. */
static int restart_listing(struct snfs_dir *d)
{
	struct rd_list *l = &d->sh->list;
	const struct rd_page *pg;

	if (!d->seen) {
		d->seen = calloc(1, sizeof(*d->seen));
		if (!d->seen)
			return -ENOMEM;
		for (uint64_t i = 0; i < d->pos && i < l->nents; i++) {
			const struct rd_entry *e = rd_list_get(l, i, &pg);
			if (ns_add(d->seen,
			           (const char *)pg->data + e->name_off,
			           e->name_len) < 0)
				return -ENOMEM;
		}
	}
	rd_list_free(l);
	d->sh->bytes = 0;
	d->pos = 0;
	memset(d->verf, 0, sizeof(d->verf));
	d->restarts++;
	counter_add(&d->c->stats.readdir_restarts, 1);
	return 0;
}

/* The directory's current cookie verifier, from a small READDIR at
 * cookie 0. */
static int current_verifier(struct snfs_dir *d, uint8_t verf[8])
{
	static const uint8_t zero[8];
	struct rd_page *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	int rc =
	    d->c->ops->readdir(d->c, &d->fh, false, 0, zero, RD_PROBE_BUF, p);
	if (rc == 0)
		memcpy(verf, p->verf, 8);
	rd_page_free(p);
	return rc;
}

/* One READDIR after cookie; a refused one is tried again with the
 * directory's current verifier while that differs from ours. */
static int read_page(struct snfs_dir *d, uint64_t cookie, struct rd_page **out)
{
	struct snfs_ctx *c = d->c;
	struct rd_page *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	int rc =
	    c->ops->readdir(c, &d->fh, d->plus, cookie, d->verf, c->dirbuf, p);
	for (int i = 0;
	     rc == -SNFS_EBADCOOKIE && cookie != 0 && i < RD_VERF_TRIES; i++) {
		uint8_t cur[8] = {0};
		rd_page_free(p);
		p = NULL;
		rc = current_verifier(d, cur);
		/* the same verifier: the cookie itself is refused */
		if (rc == 0 && !memcmp(cur, d->verf, 8))
			rc = -SNFS_EBADCOOKIE;
		if (rc < 0)
			return rc;
		memcpy(d->verf, cur, 8);
		p = calloc(1, sizeof(*p));
		if (!p)
			return -ENOMEM;
		rc = c->ops->readdir(c, &d->fh, d->plus, cookie, d->verf,
		                     c->dirbuf, p);
		if (rc == 0) {
			d->resumes++;
			counter_add(&c->stats.readdir_resumes, 1);
		}
	}
	if (rc < 0) {
		rd_page_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

/* Read the next reply of the listing. */
static int fetch_next(struct snfs_dir *d)
{
	struct rd_list *l = &d->sh->list;
	const struct rd_page *pg;

	for (;;) {
		uint64_t cookie = 0;
		struct rd_page *p = NULL;
		if (l->nents)
			cookie = rd_list_get(l, l->nents - 1, &pg)->cookie;
		int rc = read_page(d, cookie, &p);
		if (rc == -SNFS_EBADCOOKIE && d->restarts < RD_MAX_RESTARTS) {
			rc = restart_listing(d);
			if (rc < 0)
				return rc;
			continue;
		}
		if (rc < 0)
			return rc == -SNFS_EBADCOOKIE ? -EIO : rc;
		if (p->n == 0 && !p->eof) {
			rd_page_free(p);
			return -EIO; /* no progress: a broken server */
		}
		memcpy(d->verf, p->verf, 8);
		d->sh->bytes += p->dlen;
		rc = rd_list_append(l, p);
		if (rc < 0)
			rd_page_free(p);
		return rc;
	}
}

/* Keep a listing read cleanly while the directory stood still. */
static void maybe_publish(struct snfs_dir *d)
{
	struct rd_list *l = &d->sh->list;
	if (d->from_cache || d->restarts || d->resumes || !l->npages ||
	    d->sh->bytes > d->c->rd->max_bytes)
		return;
	const struct rd_page *last = l->pages[l->npages - 1];
	if (!last->have_dir_attr ||
	    !same_dir_version(&last->dir_attr, &d->open_attr))
		return;
	cache_insert(d->c->rd, &d->fh, d->plus, &d->open_attr, d->sh);
	d->from_cache = true;
}

static int fill_entry(struct snfs_dir *d, const struct rd_page *pg,
                      const struct rd_entry *e, struct snfs_dirent *ent)
{
	char *n = realloc(d->name, e->name_len + 1);
	if (!n)
		return -ENOMEM;
	d->name = n;
	memcpy(n, pg->data + e->name_off, e->name_len);
	n[e->name_len] = 0;
	memset(ent, 0, sizeof(*ent));
	ent->name = n;
	ent->fileid = e->fileid;
	ent->cookie = e->cookie;
	if (e->attr_off && pg->decode_attr &&
	    pg->decode_attr(pg->data, pg->dlen, e->attr_off, &ent->attr) == 0)
		ent->have_attr = true;
	return 0;
}

int snfs_readdir(struct snfs_dir *d, struct snfs_dirent *ent)
{
	struct rd_list *l = &d->sh->list;
	const struct rd_page *pg;

	for (;;) {
		if (d->pos < l->nents) {
			const struct rd_entry *e =
			    rd_list_get(l, d->pos++, &pg);
			if (d->seen) {
				int r =
				    ns_add(d->seen,
				           (const char *)pg->data + e->name_off,
				           e->name_len);
				if (r < 0)
					return snfs_fail(r, "out of memory");
				if (r == 0)
					continue; /* returned before */
			}
			int rc = fill_entry(d, pg, e, ent);
			if (rc < 0)
				return snfs_fail(rc, "out of memory");
			d->cookie = e->cookie;
			return 1;
		}
		if (l->complete) {
			maybe_publish(d);
			return 0;
		}
		if (d->from_cache)
			return 0;
		int rc = fetch_next(d);
		if (rc < 0)
			return snfs_fail(rc, "readdir: %s", strerror(-rc));
	}
}

uint64_t snfs_telldir(struct snfs_dir *d)
{
	return d->cookie;
}

int snfs_seekdir(struct snfs_dir *d, uint64_t cookie)
{
	uint64_t idx;
	if (rd_list_find_cookie(&d->sh->list, cookie, &idx) < 0)
		return snfs_fail(-EINVAL, "seekdir: unknown cookie");
	d->pos = idx;
	d->cookie = cookie;
	return 0;
}

void snfs_closedir(struct snfs_dir *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&d->c->rd->lock);
	shared_put(d->sh);
	pthread_mutex_unlock(&d->c->rd->lock);
	ns_free(d->seen);
	free(d->name);
	free(d);
}
