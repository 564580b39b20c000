/* The inode table: FUSE inode numbers to NFS handles, two hash indexes
 * (by number, by handle) over one set of rows, under one lock. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tools/mount.h"

struct inode {
	fuse_ino_t ino;
	uint64_t nlookup;
	unsigned opens; /* files open on it (open or create, less release) */
	struct snfs_handle h;
	struct inode *by_ino_next, *by_fh_next;
};

struct itab {
	pthread_mutex_t lock;
	struct inode **by_ino, **by_fh;
	size_t nbuckets, n;
	fuse_ino_t next_ino;
};

static size_t ino_hash(fuse_ino_t ino, size_t nb)
{
	return (size_t)((ino * 0x9e3779b97f4a7c15ull) >> 17) & (nb - 1);
}

static size_t fh_hash(const struct snfs_handle *h, size_t nb)
{
	uint64_t x = 0xcbf29ce484222325ull; /* FNV-1a */
	for (uint32_t i = 0; i < h->len; i++)
		x = (x ^ h->data[i]) * 0x100000001b3ull;
	return (size_t)(x ^ (x >> 29)) & (nb - 1);
}

static bool same_handle(const struct snfs_handle *a,
                        const struct snfs_handle *b)
{
	return a->len == b->len && memcmp(a->data, b->data, a->len) == 0;
}

static void link_row(struct itab *t, struct inode *n)
{
	size_t i = ino_hash(n->ino, t->nbuckets);
	size_t f = fh_hash(&n->h, t->nbuckets);
	n->by_ino_next = t->by_ino[i];
	t->by_ino[i] = n;
	n->by_fh_next = t->by_fh[f];
	t->by_fh[f] = n;
}

/* Double the buckets when rows outnumber them (a listing of 200,000
 * entries with READDIRPLUS adds a row per entry). */
static int grow(struct itab *t)
{
	size_t nb = t->nbuckets * 2;
	struct inode **bi = calloc(nb, sizeof(*bi));
	struct inode **bf = calloc(nb, sizeof(*bf));
	if (!bi || !bf) {
		free(bi);
		free(bf);
		return -ENOMEM;
	}
	struct inode **old = t->by_ino;
	size_t onb = t->nbuckets;
	free(t->by_fh);
	t->by_ino = bi;
	t->by_fh = bf;
	t->nbuckets = nb;
	for (size_t b = 0; b < onb; b++) {
		struct inode *n = old[b], *next;
		for (; n; n = next) {
			next = n->by_ino_next;
			link_row(t, n);
		}
	}
	free(old);
	return 0;
}

static struct inode *add_row(struct itab *t, const struct snfs_handle *h,
                             fuse_ino_t ino)
{
	if (t->n >= t->nbuckets && grow(t) < 0)
		return NULL;
	struct inode *n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->ino = ino;
	n->h = *h;
	link_row(t, n);
	t->n++;
	return n;
}

int itab_new(struct itab **out, const struct snfs_handle *root)
{
	struct itab *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->nbuckets = 1024;
	t->by_ino = calloc(t->nbuckets, sizeof(*t->by_ino));
	t->by_fh = calloc(t->nbuckets, sizeof(*t->by_fh));
	t->next_ino = FUSE_ROOT_ID + 1;
	pthread_mutex_init(&t->lock, NULL);
	/* The root is never forgotten: its count starts at one that no
	 * FORGET pairs with. */
	struct inode *r =
	    t->by_ino && t->by_fh ? add_row(t, root, FUSE_ROOT_ID) : NULL;
	if (!r) {
		itab_free(t);
		return -ENOMEM;
	}
	r->nlookup = 1;
	*out = t;
	return 0;
}

void itab_free(struct itab *t)
{
	if (!t)
		return;
	for (size_t b = 0; t->by_ino && b < t->nbuckets; b++) {
		struct inode *n = t->by_ino[b], *next;
		for (; n; n = next) {
			next = n->by_ino_next;
			free(n);
		}
	}
	free(t->by_ino);
	free(t->by_fh);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

static struct inode *find_ino(struct itab *t, fuse_ino_t ino)
{
	struct inode *n = t->by_ino[ino_hash(ino, t->nbuckets)];
	while (n && n->ino != ino)
		n = n->by_ino_next;
	return n;
}

int itab_handle(struct itab *t, fuse_ino_t ino, struct snfs_handle *h)
{
	pthread_mutex_lock(&t->lock);
	struct inode *n = find_ino(t, ino);
	if (n)
		*h = n->h;
	pthread_mutex_unlock(&t->lock);
	return n ? 0 : -ESTALE;
}

fuse_ino_t itab_ref(struct itab *t, const struct snfs_handle *h)
{
	fuse_ino_t ino = 0;

	pthread_mutex_lock(&t->lock);
	struct inode *n = t->by_fh[fh_hash(h, t->nbuckets)];
	while (n && !same_handle(&n->h, h))
		n = n->by_fh_next;
	if (!n)
		n = add_row(t, h, t->next_ino++);
	if (n) {
		n->nlookup++;
		ino = n->ino;
	}
	pthread_mutex_unlock(&t->lock);
	return ino;
}

static void unlink_row(struct itab *t, struct inode *n)
{
	struct inode **p = &t->by_ino[ino_hash(n->ino, t->nbuckets)];
	while (*p != n)
		p = &(*p)->by_ino_next;
	*p = n->by_ino_next;
	p = &t->by_fh[fh_hash(&n->h, t->nbuckets)];
	while (*p != n)
		p = &(*p)->by_fh_next;
	*p = n->by_fh_next;
	t->n--;
}

unsigned itab_opens(struct itab *t, fuse_ino_t ino, int delta)
{
	unsigned left = 0;

	pthread_mutex_lock(&t->lock);
	struct inode *n = find_ino(t, ino);
	if (n) {
		if (delta > 0 || n->opens >= (unsigned)-delta)
			n->opens += (unsigned)delta;
		left = n->opens;
	}
	pthread_mutex_unlock(&t->lock);
	return left;
}

void itab_forget(struct itab *t, fuse_ino_t ino, uint64_t count)
{
	pthread_mutex_lock(&t->lock);
	struct inode *n = find_ino(t, ino);
	if (n && ino != FUSE_ROOT_ID) {
		n->nlookup = count < n->nlookup ? n->nlookup - count : 0;
		if (n->nlookup == 0) {
			unlink_row(t, n);
			free(n);
		}
	}
	pthread_mutex_unlock(&t->lock);
}

size_t itab_count(struct itab *t)
{
	pthread_mutex_lock(&t->lock);
	size_t n = t->n;
	pthread_mutex_unlock(&t->lock);
	return n;
}
