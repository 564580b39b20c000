/* A small LRU of fds for READ, WRITE and COMMIT, so that sequential I/O in
 * 1 MiB calls does not pay open_by_handle_at for each one.
 *
 * Fds are opened as the server; each call checks the client's permission
 * itself before using one. A slot in use is referenced; eviction and
 * forgetting close only unreferenced fds, the last user closes the rest.
 * Closing an fd never loses data: dirty pages belong to the inode, and
 * COMMIT's fsync reaches them through any fd.
 *
 * Reads open read-only. A writable fd is closed soon after its last use:
 * while it is open the kernel refuses to execute the file (ETXTBSY), and
 * a program written over NFS is often run on the server next.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/posix_int.h"

#define FD_CACHE_SLOTS 64
#define WRITABLE_IDLE_MS 2000
#define IDLE_MS 30000

struct fd_slot {
	struct bk_handle h;
	int fd;
	bool used;
	bool writable;
	bool dead; /* forgotten while referenced: close on last put */
	int refs;
	uint64_t stamp; /* last use, CLOCK_MONOTONIC ms */
};

struct fd_cache {
	pthread_mutex_t lock;
	/* The earliest time an unreferenced slot may have idled out: a get
	 * before it has nothing to sweep. Scanning all 64 slots on every get
	 * cost more than the rest of the lookup (measured: ~1,300 of ~1,800
	 * instructions per small READ_PLUS). UINT64_MAX: nothing can idle
	 * out until a put releases a slot. */
	uint64_t next_sweep;
	struct fd_slot s[FD_CACHE_SLOTS];
};

/* The coarse clock is read from the vDSO page without a system call on
 * every clock source (the fine one falls back to a system call where the
 * TSC is unusable, as in emulated guests); ms-scale idling needs no
 * better than its tick. */
static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int fd_cache_new(struct fd_cache **out)
{
	struct fd_cache *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return -ENOMEM;
	pthread_mutex_init(&c->lock, NULL);
	c->next_sweep = UINT64_MAX;
	*out = c;
	return 0;
}

void fd_cache_free(struct fd_cache *c)
{
	if (c == NULL)
		return;
	for (int i = 0; i < FD_CACHE_SLOTS; i++)
		if (c->s[i].used)
			close(c->s[i].fd);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static bool same_handle(const struct bk_handle *a, const struct bk_handle *b)
{
	return a->len == b->len && memcmp(a->data, b->data, a->len) == 0;
}

/* Open h for I/O: first O_PATH to learn the type without side effects
 * (opening a FIFO or a device could block or act), then a real open
 * through /proc/self/fd. */
static int open_for_io(struct bk_export *ex, const struct bk_handle *h,
                       bool write, bool *writable)
{
	char path[64];
	struct stat st;
	int pfd = posix_open(ex, h, O_PATH, &st);
	int fd;

	if (pfd < 0)
		return pfd;
	if (!S_ISREG(st.st_mode)) {
		close(pfd);
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", pfd);
	/* O_NONBLOCK: where a delegation's lease (lease.c) still holds the
	 * file, an open for writing fails at once (-EAGAIN: the client is
	 * told to ask again) instead of waiting out the lease break in a
	 * worker thread. Reads and writes of regular files ignore it. */
	fd = open(path, (write ? O_RDWR | O_NONBLOCK : O_RDONLY) | O_CLOEXEC |
	                    O_NOCTTY);
	*writable = write;
	if (fd < 0)
		fd = errno == EWOULDBLOCK ? -EAGAIN : -errno;
	close(pfd);
	return fd;
}

static struct fd_slot *find(struct fd_cache *c, const struct bk_handle *h,
                            bool write)
{
	for (int i = 0; i < FD_CACHE_SLOTS; i++) {
		struct fd_slot *s = &c->s[i];

		if (s->used && !s->dead && (s->writable || !write) &&
		    same_handle(&s->h, h))
			return s;
	}
	return NULL;
}

/* A free slot, or the least recently used unreferenced one, whose fd is
 * returned in *victim for the caller to close outside the lock. */
static struct fd_slot *pick_slot(struct fd_cache *c, int *victim)
{
	struct fd_slot *best = NULL;

	*victim = -1;
	for (int i = 0; i < FD_CACHE_SLOTS; i++) {
		struct fd_slot *s = &c->s[i];

		if (!s->used)
			return s;
		if (s->refs == 0 && (best == NULL || s->stamp < best->stamp))
			best = s;
	}
	if (best != NULL)
		*victim = best->fd;
	return best;
}

static int insert(struct fd_cache *c, const struct bk_handle *h, int fd,
                  bool writable, struct fd_ref *ref)
{
	struct fd_slot *s;
	int victim;

	pthread_mutex_lock(&c->lock);
	s = pick_slot(c, &victim);
	if (s != NULL) {
		s->h = *h;
		s->fd = fd;
		s->used = true;
		s->writable = writable;
		s->dead = false;
		s->refs = 1;
		s->stamp = now_ms();
	}
	pthread_mutex_unlock(&c->lock);
	ref->fd = fd;
	ref->slot = s; /* NULL: every slot busy, the fd is closed on put */
	return victim;
}

/* When an unreferenced slot, last used at stamp, has idled out. */
static uint64_t slot_deadline(const struct fd_slot *s)
{
	return s->stamp + (s->writable ? WRITABLE_IDLE_MS : IDLE_MS);
}

/* Close unreferenced fds idle too long: writable ones after a moment,
 * the rest after a while (they pin deleted files' space). Called locked
 * with a clock read under the lock, so no stamp is newer than now; the
 * fds to close go to fds (returns how many) for the caller to close
 * unlocked. Only runs once something may be due, and notes when the
 * next slot will be. */
static int sweep_locked(struct fd_cache *c, uint64_t now,
                        int fds[FD_CACHE_SLOTS])
{
	uint64_t next = UINT64_MAX;
	int n = 0;

	if (now < c->next_sweep)
		return 0;
	for (int i = 0; i < FD_CACHE_SLOTS; i++) {
		struct fd_slot *s = &c->s[i];
		uint64_t due;

		if (!s->used || s->refs != 0)
			continue;
		due = slot_deadline(s);
		if (now >= due) {
			fds[n++] = s->fd;
			s->used = false;
		} else if (due < next) {
			next = due;
		}
	}
	/* Referenced slots are left out: their last put brings the deadline
	 * forward again (fd_cache_put). */
	c->next_sweep = next;
	return n;
}

static void close_all(const int *fds, int n)
{
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

/* fd_cache_scope's memory, per thread: the scope's first read-only get
 * (its cache, slot and attributes). Why: a READ_PLUS took three gets,
 * each a scan of the slots and an fstat, for one look at the file. */
struct scope_memo {
	bool active, have;
	const struct fd_cache *c;
	struct fd_slot *s;
	struct stat st;
};
static _Thread_local struct scope_memo memo;

void fd_cache_scope(bool begin)
{
	memo.active = begin;
	memo.have = false;
}

/* The remembered slot again, if it still holds h: referenced, its fd in
 * ref, the remembered attributes in st. */
static bool scope_take(struct fd_cache *c, const struct bk_handle *h,
                       struct fd_ref *ref, struct stat *st)
{
	struct fd_slot *s = memo.s;
	bool ok;

	pthread_mutex_lock(&c->lock);
	ok = s->used && !s->dead && same_handle(&s->h, h);
	if (ok) {
		s->refs++;
		ref->fd = s->fd;
		ref->slot = s;
	}
	pthread_mutex_unlock(&c->lock);
	if (ok)
		*st = memo.st;
	return ok;
}

static int cache_get(struct bk_export *ex, const struct bk_handle *h,
                     bool write, struct fd_ref *ref, struct stat *st);

int fd_cache_get(struct bk_export *ex, const struct bk_handle *h, bool write,
                 struct fd_ref *ref, struct stat *st)
{
	int rc;

	if (!memo.active)
		return cache_get(ex, h, write, ref, st);
	if (!write && memo.have && memo.c == ex->fds &&
	    scope_take(ex->fds, h, ref, st))
		return 0;
	rc = cache_get(ex, h, write, ref, st);
	memo.have = rc == 0 && !write && ref->slot != NULL;
	if (memo.have) {
		memo.c = ex->fds;
		memo.s = ref->slot;
		memo.st = *st;
	}
	return rc;
}

static int cache_get(struct bk_export *ex, const struct bk_handle *h,
                     bool write, struct fd_ref *ref, struct stat *st)
{
	struct fd_cache *c = ex->fds;
	struct fd_slot *s;
	bool writable = false;
	int fd, victim, rc = 0, idle[FD_CACHE_SLOTS], nidle;
	uint64_t now;

	/* One lock for the sweep and the lookup; the sweep first, so an fd
	 * that has idled out is reopened rather than reused. */
	pthread_mutex_lock(&c->lock);
	now = now_ms();
	nidle = sweep_locked(c, now, idle);
	s = find(c, h, write);
	if (s != NULL) {
		s->refs++;
		s->stamp = now;
		ref->fd = s->fd;
		ref->slot = s;
	}
	pthread_mutex_unlock(&c->lock);
	close_all(idle, nidle);
	if (s == NULL) {
		fd = open_for_io(ex, h, write, &writable);
		if (fd < 0)
			return fd;
		victim = insert(c, h, fd, writable, ref);
		if (victim >= 0)
			close(victim);
	}
	if (fstat(ref->fd, st) != 0)
		rc = -errno;
	else if (st->st_nlink == 0)
		rc = -ESTALE; /* deleted since it was cached */
	if (rc != 0) {
		fd_cache_put(c, ref);
		fd_cache_forget(c, h);
	}
	return rc;
}

void fd_cache_put(struct fd_cache *c, struct fd_ref *ref)
{
	struct fd_slot *s = ref->slot;
	int fd = -1;

	if (s == NULL) {
		close(ref->fd);
		return;
	}
	pthread_mutex_lock(&c->lock);
	s->stamp = now_ms();
	if (--s->refs == 0) {
		if (s->dead) {
			fd = s->fd;
			s->used = false;
		} else if (slot_deadline(s) < c->next_sweep) {
			c->next_sweep = slot_deadline(s);
		}
	}
	pthread_mutex_unlock(&c->lock);
	if (fd >= 0)
		close(fd);
}

static void drop(struct fd_cache *c, const struct bk_handle *h,
                 bool writable_only)
{
	int fds[FD_CACHE_SLOTS];
	int n = 0;

	pthread_mutex_lock(&c->lock);
	for (int i = 0; i < FD_CACHE_SLOTS; i++) {
		struct fd_slot *s = &c->s[i];

		if (!s->used || !same_handle(&s->h, h) ||
		    (writable_only && !s->writable))
			continue;
		s->dead = true;
		if (s->refs == 0) {
			fds[n++] = s->fd;
			s->used = false;
		}
	}
	pthread_mutex_unlock(&c->lock);
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

void fd_cache_forget(struct fd_cache *c, const struct bk_handle *h)
{
	drop(c, h, false);
}

void fd_cache_drop_writable(struct fd_cache *c, const struct bk_handle *h)
{
	drop(c, h, true);
}
