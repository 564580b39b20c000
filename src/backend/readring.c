/* READ_PLUS pieces from the page cache by io_uring: one system call
 * reads every piece of a reply, and the gaps between them are neither
 * read nor copied.
 *
 * Why: a reply of a file alternating 4 KiB of data and hole holds 128
 * pieces per MiB. A preadv per piece costs a system call each; one preadv
 * through the gaps (readgap.c) copies the holes' zeros as well, twice the
 * bytes. Measured at stop 31 (1 GiB mixed-4d, cached, read 1 MiB at a
 * time, /tmp/vs/rd.c in the stop's notes): through the gaps 0.082 s, a
 * pread per piece 0.214 s, the pieces by io_uring 0.045 s; with 32 KiB
 * pieces 0.067, 0.055 and 0.034 s.
 *
 * Each worker thread has a ring of its own (made at its first use,
 * released when it ends): no lock, and the completions it waits for are
 * its own. Reads are marked RWF_NOWAIT: a page not in the cache ends the
 * piece short instead of sending the read to io_uring's own threads, and
 * the caller reads from there on with the disk's readahead. */
#include <errno.h>
#include <liburing.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "backend/posix_int.h"
#include "util/log.h"

#define RING_ENTRIES                                                           \
	256 /* pieces per submission: 1 MiB of 4 KiB pieces                    \
	       is 128 */

struct ring {
	struct io_uring r;
};

static pthread_key_t ring_key;
static pthread_once_t ring_key_once = PTHREAD_ONCE_INIT;
static _Thread_local struct ring *ring_own;
static _Thread_local bool ring_failed;
static atomic_bool ring_refused_logged;
/* SNFSD_READ_RING=0 (or tests) turn it off: the preadv ways then */
static _Atomic int ring_on = -1; /* -1: the environment not read yet */

void posix_ring_enable(bool on)
{
	atomic_store_explicit(&ring_on, on, memory_order_relaxed);
}

static bool ring_enabled(void)
{
	int on = atomic_load_explicit(&ring_on, memory_order_relaxed);

	if (on < 0) {
		const char *env = getenv("SNFSD_READ_RING");

		on = !(env && strcmp(env, "0") == 0);
		atomic_store_explicit(&ring_on, on, memory_order_relaxed);
	}
	return on;
}

static void ring_free(void *p)
{
	struct ring *rg = p;

	io_uring_queue_exit(&rg->r);
	free(rg);
}

static void ring_key_make(void)
{
	(void)pthread_key_create(&ring_key, ring_free);
}

/* This thread's ring, or NULL where io_uring is missing or refused
 * (kernel.io_uring_disabled, a seccomp filter, no memory): asked once per
 * thread, logged once per process. */
static struct io_uring *ring_get(void)
{
	struct ring *rg;
	int rc;

	if (ring_own)
		return &ring_own->r;
	if (ring_failed)
		return NULL;
	pthread_once(&ring_key_once, ring_key_make);
	rg = calloc(1, sizeof(*rg));
	rc = rg ? io_uring_queue_init(RING_ENTRIES, &rg->r, 0) : -ENOMEM;
	if (rc < 0) {
		free(rg);
		ring_failed = true;
		if (!atomic_exchange(&ring_refused_logged, true))
			log_info("read_pieces: no io_uring (%s): pieces read "
			         "by preadv",
			         strerror(-rc));
		return NULL;
	}
	ring_own = rg;
	(void)pthread_setspecific(ring_key, rg);
	return &rg->r;
}

/* This thread gives its ring up (a failure that leaves its queue in doubt)
 * and reads by preadv from now on. */
static void ring_drop(void)
{
	(void)pthread_setspecific(ring_key, NULL);
	ring_free(ring_own);
	ring_own = NULL;
	ring_failed = true;
}

/* Submit reads of pc[0..n) (n <= RING_ENTRIES) and gather every
 * completion into res. Returns 0, or -errno when the ring failed (it is
 * dropped: a read still queued must not land in a buffer handed back). */
static int ring_batch(struct io_uring *r, int fd, const struct bk_piece *pc,
                      int n, int *res)
{
	int done = 0, queued = 0;

	for (int i = 0; i < n; i++) {
		struct io_uring_sqe *s = io_uring_get_sqe(r);

		io_uring_prep_read(s, fd, pc[i].buf, (unsigned)pc[i].len,
		                   pc[i].off);
		s->rw_flags = RWF_NOWAIT;
		io_uring_sqe_set_data64(s, (uint64_t)i);
	}
	while (done < n) {
		struct io_uring_cqe *c;
		int rc = queued < n ? io_uring_submit_and_wait(r, 1)
		                    : io_uring_wait_cqe(r, &c);

		if (rc == -EINTR || rc == -EAGAIN || rc == -EBUSY)
			rc = 0; /* reap what completed, then again */
		else if (rc < 0) {
			log_err("read_pieces: io_uring: %s", strerror(-rc));
			ring_drop();
			return rc;
		} else if (queued < n)
			queued += rc;
		while (io_uring_peek_cqe(r, &c) == 0) {
			res[io_uring_cqe_get_data64(c)] = c->res;
			io_uring_cqe_seen(r, c);
			done++;
		}
	}
	return 0;
}

ssize_t posix_ring_read(int fd, const struct bk_piece *pc, int n, int *i,
                        size_t *skip)
{
	struct io_uring *r;
	int res[RING_ENTRIES];
	ssize_t total = 0;

	/* a read's length is 32 bits; replies' pieces are far smaller */
	for (int k = 0; k < n; k++)
		if (pc[k].len > (1u << 30))
			return -ENOSYS;
	r = ring_enabled() ? ring_get() : NULL;
	if (!r)
		return -ENOSYS;
	*i = 0, *skip = 0;
	while (*i < n) {
		int m = n - *i < RING_ENTRIES ? n - *i : RING_ENTRIES;
		int rc = ring_batch(r, fd, pc + *i, m, res);

		if (rc < 0)
			return total;
		/* the pieces read whole, in order; the first one short (not
		 * cached, or the file's end) is where the caller goes on */
		for (int k = 0; k < m; k++, (*i)++) {
			if (res[k] < 0)
				return total;
			total += res[k];
			if ((size_t)res[k] < pc[*i].len) {
				*skip = (size_t)res[k];
				return total;
			}
		}
	}
	return total;
}
