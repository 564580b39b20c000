/* Hole/data maps of regular files, found once and reused (READ_PLUS, SEEK).
 *
 * SEEK_DATA from inside a long hole walks the whole hole on ext4, so asking
 * the file system afresh for every READ_PLUS reply makes a sequential read
 * of an all-hole file cost O(file size) per call (SEEDS.md section 1). Here
 * each file keeps a window of its extents: a contiguous, sorted run found
 * with FIEMAP (up to FIEMAP_BATCH extents per call) where the file system
 * has it, else with SEEK_DATA/SEEK_HOLE, and extended only as far as
 * callers read, so a sequential read costs O(extents in the range / batch)
 * calls in all, and an all-hole file costs one call for the whole file.
 * Unwritten (preallocated) extents read as zeros but count as data only
 * where the page cache holds data, and delayed allocations (xfs reserves
 * them past what was written, across holes) likewise: only lseek can
 * tell, so FIEMAP stops at them and lseek maps them. But lseek also calls
 * data the cached pages of zeros a read of an unwritten extent leaves
 * (xfs preallocates past extending writes, so the gaps of a file written
 * with holes are such extents): once a file was read, they would all go
 * as DATA. So on xfs and ext4, whose unwritten extents become written
 * before their pages leave writeback, an unwritten extent with no dirty
 * or writeback page in the page cache (cachestat) is zeros and mapped as
 * a hole; only the others are left to lseek.
 *
 * A map is dropped when snfsd changes the file (hole_map_invalidate from
 * WRITE, SETATTR size, ALLOCATE, DEALLOCATE, COPY, CLONE, REMOVE) and is
 * checked on every use against the file's fresh ctime and size, which
 * catches writers beside snfsd. A map found while the ctime is within a
 * timestamp tick of now is used for that call only: a write in the same
 * tick would leave the ctime unchanged.
 */
#include <errno.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "backend/posix_int.h"
#include "util/cachestat.h"

#define MAP_SLOTS 64
/* Extents kept per file: always MAP_KEEP_MIN; up to MAP_KEEP_MAX while
 * all maps together hold under MAP_BUDGET (24 bytes each: 24 MiB), so a
 * warm re-read of a 1 GiB file alternating 4 KiB of data and hole
 * (262,144 extents) asks the file system nothing; measured, finding that
 * map again with FIEMAP on every pass cost a tenth of snfsd's CPU. */
#define MAP_KEEP_MIN 16384
#define MAP_KEEP_MAX (1u << 20)
#define MAP_BUDGET (1u << 20)
#define RECENT_NS 20000000 /* ctime this close to now: not cached (20 ms) */
#define FIEMAP_BATCH 256   /* extents asked per FIEMAP call */
#define JUMP_FILL (64ull << 20) /* a gap ahead mapped, not skipped */

struct map_entry {
	pthread_mutex_t lock; /* the fields below */
	bool valid;
	bool cacheable;
	bool no_fiemap; /* the file system refused FIEMAP: lseek only */
	uint64_t size;
	struct timespec ctime;
	struct bk_extent *ext; /* the window: contiguous, sorted */
	size_t n, cap;
};

struct map_slot {
	struct bk_handle h; /* h.len == 0: free */
	int refs;           /* users outside the cache lock */
	uint64_t stamp;     /* LRU */
	struct map_entry e;
};

struct hole_map_cache {
	pthread_mutex_t lock; /* slot identity, refs, stamps */
	uint64_t clock;
	struct map_slot s[MAP_SLOTS];
};

/* lseeks and FIEMAP calls made by every map since start: tests check the
 * O(1) promise. */
static atomic_uint_fast64_t lseek_count;

/* Extents held by every map. */
static atomic_size_t held;

/* Set e's extent count, keeping held right. */
static void entry_set_n(struct map_entry *e, size_t n)
{
	if (n > e->n)
		atomic_fetch_add(&held, n - e->n);
	else
		atomic_fetch_sub(&held, e->n - n);
	e->n = n;
}

uint64_t hole_map_lseeks(void)
{
	return atomic_load(&lseek_count);
}

int hole_map_cache_new(struct hole_map_cache **out)
{
	struct hole_map_cache *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return -ENOMEM;
	pthread_mutex_init(&c->lock, NULL);
	for (int i = 0; i < MAP_SLOTS; i++)
		pthread_mutex_init(&c->s[i].e.lock, NULL);
	*out = c;
	return 0;
}

void hole_map_cache_free(struct hole_map_cache *c)
{
	if (c == NULL)
		return;
	for (int i = 0; i < MAP_SLOTS; i++) {
		entry_set_n(&c->s[i].e, 0);
		free(c->s[i].e.ext);
		pthread_mutex_destroy(&c->s[i].e.lock);
	}
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static bool same_handle(const struct bk_handle *a, const struct bk_handle *b)
{
	return a->len == b->len && memcmp(a->data, b->data, a->len) == 0;
}

/* Free slots first, then the least recently used. */
static bool better_victim(const struct map_slot *t, const struct map_slot *v)
{
	if (v == NULL)
		return true;
	if (v->h.len == 0)
		return false;
	return t->h.len == 0 || t->stamp < v->stamp;
}

/* The slot of h, referenced; with create, a free or the least recently
 * used unreferenced slot is taken over (its map cleared). NULL if none. */
static struct map_slot *slot_get(struct hole_map_cache *c,
                                 const struct bk_handle *h, bool create)
{
	struct map_slot *s = NULL, *victim = NULL;

	pthread_mutex_lock(&c->lock);
	for (int i = 0; i < MAP_SLOTS && !s; i++) {
		struct map_slot *t = &c->s[i];

		if (t->h.len && same_handle(&t->h, h))
			s = t;
		else if (t->refs == 0 && better_victim(t, victim))
			victim = t;
	}
	if (!s && create && victim) {
		s = victim;
		s->h = *h;
		s->e.valid = false; /* nobody holds it: refs == 0 */
		s->e.no_fiemap = false;
	}
	if (s) {
		s->refs++;
		s->stamp = ++c->clock;
	}
	pthread_mutex_unlock(&c->lock);
	return s;
}

static void slot_put(struct hole_map_cache *c, struct map_slot *s)
{
	pthread_mutex_lock(&c->lock);
	s->refs--;
	pthread_mutex_unlock(&c->lock);
}

void hole_map_invalidate(struct hole_map_cache *c, const struct bk_handle *h)
{
	struct map_slot *s;

	if (c == NULL || h->len == 0)
		return;
	s = slot_get(c, h, false);
	if (s == NULL)
		return;
	/* Taking the entry lock waits for a map being found right now, so
	 * nothing found before the change survives it. */
	pthread_mutex_lock(&s->e.lock);
	s->e.valid = false;
	pthread_mutex_unlock(&s->e.lock);
	slot_put(c, s);
}

static bool ts_equal(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* Whether t is so recent that a change now might not move it. */
static bool ts_recent(const struct timespec *t)
{
	struct timespec now;
	int64_t d;

	clock_gettime(CLOCK_REALTIME, &now);
	d = (int64_t)(now.tv_sec - t->tv_sec) * 1000000000 +
	    (now.tv_nsec - t->tv_nsec);
	return d < RECENT_NS;
}

/* Start over for the file as st shows it now. */
static void entry_reset(struct map_entry *e, const struct stat *st)
{
	e->valid = true;
	e->cacheable = !ts_recent(&st->st_ctim);
	e->size = (uint64_t)st->st_size;
	e->ctime = st->st_ctim;
	entry_set_n(e, 0);
}

static uint64_t window_end(const struct map_entry *e)
{
	const struct bk_extent *l = &e->ext[e->n - 1];

	return l->off + l->len;
}

static int entry_push(struct map_entry *e, uint64_t off, uint64_t len,
                      bool hole)
{
	if (e->n == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 64;
		struct bk_extent *p = realloc(e->ext, cap * sizeof(*p));

		if (p == NULL)
			return -ENOMEM;
		e->ext = p;
		e->cap = cap;
	}
	e->ext[e->n] = (struct bk_extent){.off = off, .len = len, .hole = hole};
	entry_set_n(e, e->n + 1);
	return 0;
}

static off_t counted_lseek(int fd, uint64_t off, int whence)
{
	atomic_fetch_add(&lseek_count, 1);
	return lseek(fd, (off_t)off, whence);
}

/* Append [off, end) as a hole or as data, merged with the window's last
 * extent when that is of the same kind. */
static int entry_add(struct map_entry *e, uint64_t off, uint64_t end, bool hole)
{
	struct bk_extent *l = e->n ? &e->ext[e->n - 1] : NULL;

	if (end <= off)
		return 0;
	if (l && l->hole == hole && l->off + l->len == off) {
		l->len += end - off;
		return 0;
	}
	return entry_push(e, off, end - off, hole);
}

/* Append the extent (or the hole and the data after it) at pos, which is
 * the window's end, found with lseek. Returns 0 or -errno. */
static int entry_extend_lseek(struct map_entry *e, int fd, uint64_t pos)
{
	uint64_t size = e->size, d, h;
	off_t r;
	int rc;

	r = counted_lseek(fd, pos, SEEK_DATA);
	if (r < 0 && errno != ENXIO)
		return -errno;
	d = r < 0 || (uint64_t)r > size ? size : (uint64_t)r;
	if (d > pos) {
		rc = entry_add(e, pos, d, true);
		if (rc || d == size)
			return rc;
	}
	r = counted_lseek(fd, d, SEEK_HOLE);
	if (r < 0)
		return -errno;
	h = (uint64_t)r > size ? size : (uint64_t)r;
	if (h <= d) /* changed under us: call the rest data, ctime will tell */
		h = size;
	return entry_add(e, d, h, false);
}

/* Whether the file system of fd converts unwritten extents to written
 * before their pages leave writeback (xfs: xfs_end_ioend; ext4: the
 * io_end work), so that an unwritten extent with no page dirty or under
 * writeback reads as zeros. btrfs ends writeback before its ordered
 * extent completes: not there. */
static bool unwritten_settles(int fd)
{
	struct statfs sf;

	if (fstatfs(fd, &sf) != 0)
		return false;
	return sf.f_type == XFS_SUPER_MAGIC || sf.f_type == EXT4_SUPER_MAGIC;
}

/* An unwritten extent [s, t) of fd that reads as zeros: no page of it
 * dirty or under writeback (false when that cannot be told). */
static bool unwritten_is_zeros(int fd, uint64_t s, uint64_t t)
{
	struct util_cachestat cs;

	if (!util_cachestat(fd, s, t - s, &cs))
		return false;
	return cs.nr_dirty == 0 && cs.nr_writeback == 0;
}

/* Append what a FIEMAP answer from pos on tells, up to the first
 * unwritten or delayed extent that may hold data, whose end then goes to
 * *lseek_to: lseek maps that one. Returns 0 or -errno. */
static int fiemap_add(struct map_entry *e, int fd, const struct fiemap *fm,
                      uint64_t pos, uint64_t *lseek_to)
{
	int settles = -1; /* unwritten_settles(fd), asked when needed */
	uint64_t size = e->size, at = pos;
	int rc;

	for (uint32_t i = 0; i < fm->fm_mapped_extents && at < size; i++) {
		const struct fiemap_extent *x = &fm->fm_extents[i];
		uint64_t s = x->fe_logical < at ? at : x->fe_logical;
		uint64_t t = x->fe_logical + x->fe_length;

		if (t > size)
			t = size;
		if (t <= s)
			continue;
		bool zeros = false;
		if ((x->fe_flags & FIEMAP_EXTENT_UNWRITTEN) &&
		    !(x->fe_flags & FIEMAP_EXTENT_DELALLOC)) {
			if (settles < 0)
				settles = unwritten_settles(fd);
			zeros = settles && unwritten_is_zeros(fd, s, t);
		}
		if (!zeros && (x->fe_flags & (FIEMAP_EXTENT_UNWRITTEN |
		                              FIEMAP_EXTENT_DELALLOC))) {
			/* the hole before it is known; lseek maps it */
			*lseek_to = t;
			return entry_add(e, at, s, true);
		}
		rc = entry_add(e, at, s, true);
		if (rc == 0)
			rc = entry_add(e, s, t, zeros);
		if (rc)
			return rc;
		at = t;
		if (x->fe_flags & FIEMAP_EXTENT_LAST)
			break;
	}
	/* A full batch describes the file only up to its last extent. */
	if (fm->fm_mapped_extents < FIEMAP_BATCH || at == pos)
		return entry_add(e, at, size, true);
	return 0;
}

/* One FIEMAP call from pos on (see fiemap_add). 1 when the call failed:
 * the caller asks lseek. */
static int entry_extend_fiemap(struct map_entry *e, int fd, uint64_t pos,
                               uint64_t *lseek_to)
{
	struct fiemap *fm =
	    calloc(1, sizeof(*fm) + FIEMAP_BATCH * sizeof(fm->fm_extents[0]));
	int rc;

	if (fm == NULL)
		return -ENOMEM;
	fm->fm_start = pos;
	fm->fm_length = e->size - pos;
	fm->fm_extent_count = FIEMAP_BATCH;
	atomic_fetch_add(&lseek_count, 1);
	if (ioctl(fd, FS_IOC_FIEMAP, fm) < 0) {
		if (errno == EOPNOTSUPP || errno == ENOTTY || errno == EINVAL)
			e->no_fiemap = true;
		rc = 1;
	} else {
		rc = fiemap_add(e, fd, fm, pos, lseek_to);
	}
	free(fm);
	return rc;
}

/* Append at least one extent at pos, the window's end. 0 or -errno. */
static int entry_extend(struct map_entry *e, int fd, uint64_t pos)
{
	uint64_t to = 0;
	int rc;

	if (!e->no_fiemap) {
		rc = entry_extend_fiemap(e, fd, pos, &to);
		if (rc < 0)
			return rc;
		if (rc == 0 && to == 0)
			return 0;
	}
	/* One lseek step, or through the extent FIEMAP left to us. */
	do
		rc = entry_extend_lseek(e, fd, e->n ? window_end(e) : pos);
	while (rc == 0 && window_end(e) < to && window_end(e) < e->size);
	return rc;
}

/* Index of the extent holding off (off inside the window). */
static size_t entry_find(const struct map_entry *e, uint64_t off)
{
	size_t lo = 0, hi = e->n;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (e->ext[mid].off <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* Keep the window from off on when it grew too long. */
static void entry_trim(struct map_entry *e, uint64_t off)
{
	size_t i;

	if (e->n < MAP_KEEP_MIN ||
	    (e->n < MAP_KEEP_MAX && atomic_load(&held) < MAP_BUDGET))
		return;
	i = entry_find(e, off);
	if (off < e->ext[0].off || i == 0)
		i = e->n; /* off before the window: start over */
	memmove(e->ext, e->ext + i, (e->n - i) * sizeof(*e->ext));
	entry_set_n(e, e->n - i);
}

/* Add window extent x to out[*k]: as data where it is a hole shorter than
 * min_hole, and merged into the last one when both are data (the window
 * is contiguous). false when out is full. */
static bool out_add(struct bk_extent *out, int max, int *k,
                    const struct bk_extent *x, uint64_t min_hole)
{
	bool hole = x->hole && x->len >= min_hole;
	struct bk_extent *l = *k ? &out[*k - 1] : NULL;

	if (l && !l->hole && !hole) {
		l->len = x->off + x->len - l->off;
		return true;
	}
	if (*k == max)
		return false;
	out[(*k)++] =
	    (struct bk_extent){.off = x->off, .len = x->len, .hole = hole};
	return true;
}

/* Fill out with up to max extents covering [off, end), off < size, holes
 * under min_hole merged into data. */
static int entry_lookup(struct map_entry *e, int fd, uint64_t off, uint64_t end,
                        uint64_t min_hole, struct bk_extent *out, int max,
                        int *n)
{
	size_t i;
	int k = 0, rc;

	entry_trim(e, off);
	/* Calls of one sequential reader run on several threads and come
	 * slightly out of order: a short gap ahead is mapped, keeping the
	 * window (starting over there made the next call, behind it, start
	 * over again: the map was found afresh on every pass). */
	while (e->n && off > window_end(e) &&
	       off - window_end(e) <= JUMP_FILL) {
		rc = entry_extend(e, fd, window_end(e));
		if (rc)
			return rc;
	}
	if (e->n && (off < e->ext[0].off || off > window_end(e)))
		entry_set_n(e, 0); /* a jump: a new window at off */
	if (e->n == 0) {
		rc = entry_extend(e, fd, off);
		if (rc)
			return rc;
	}
	i = off < window_end(e) ? entry_find(e, off) : e->n;
	for (;;) {
		if (i == e->n) {
			if (window_end(e) >= e->size)
				break;
			rc = entry_extend(e, fd, window_end(e));
			if (rc)
				return rc;
			/* The last extent handed out may have grown (data
			 * found on past the window's end): out follows. */
			const struct bk_extent *g = &e->ext[i - 1];
			if (k && out[k - 1].off <= g->off &&
			    g->off + g->len > out[k - 1].off + out[k - 1].len)
				out[k - 1].len =
				    g->off + g->len - out[k - 1].off;
			continue;
		}
		if (e->ext[i].off >= end ||
		    !out_add(out, max, &k, &e->ext[i], min_hole))
			break;
		i++;
	}
	*n = k;
	return 0;
}

int hole_map_lookup(struct hole_map_cache *c, const struct bk_handle *h, int fd,
                    const struct stat *st, uint64_t off, uint64_t len,
                    uint64_t min_hole, struct bk_extent *out, int max, int *n)
{
	uint64_t size = (uint64_t)st->st_size;
	uint64_t end = len > size - off ? size : off + len;
	struct map_slot *s;
	int rc;

	*n = 0;
	if (off >= size || len == 0 || max <= 0)
		return 0;
	s = slot_get(c, h, true);
	if (s == NULL)
		return -EAGAIN; /* every slot busy: rare, the caller may retry
		                 */
	pthread_mutex_lock(&s->e.lock);
	if (!s->e.valid || s->e.size != size ||
	    !ts_equal(&s->e.ctime, &st->st_ctim) || !s->e.cacheable)
		entry_reset(&s->e, st);
	rc = entry_lookup(&s->e, fd, off, end, min_hole, out, max, n);
	if (rc)
		s->e.valid = false;
	pthread_mutex_unlock(&s->e.lock);
	slot_put(c, s);
	return rc;
}

/* The bk_ops entry: the client must be allowed to read the file. */
int posix_extents(struct bk_export *ex, const struct bk_cred *cr,
                  const struct bk_handle *h, uint64_t off, uint64_t len,
                  uint64_t min_hole, struct bk_extent *out, int max, int *n)
{
	struct fd_ref ref;
	struct stat st;
	int rc;

	*n = 0;
	rc = fd_cache_get(ex, h, false, &ref, &st);
	if (rc != 0)
		return rc;
	rc = posix_read_permitted(ref.fd, &st, cr);
	if (rc == 0)
		rc = hole_map_lookup(ex->holes, h, ref.fd, &st, off, len,
		                     min_hole, out, max, n);
	fd_cache_put(ex->fds, &ref);
	return rc;
}
