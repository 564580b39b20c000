/* How wide a gap between two cached READ_PLUS pieces is read through
 * (into scratch) rather than skipped with a read of its own: see
 * posix_int.h.
 *
 * Why measured and not fixed: skipping a gap costs one more system call,
 * reading it costs a copy of its bytes, and the ratio of the two differs
 * by ten between machines of the same kind. Stop 22's (a call ~1.8 us)
 * read mixed-4d and 8d 15-20% faster with gaps up to 16 KiB read through;
 * stop 24's (a call ~0.2-0.4 us, a copy ~0.1 ns per byte) read them 8-10%
 * faster with a read per piece (snfs cat of 1 GiB seed files, medians of
 * 11, the two builds in turn). So the server times both ways once, at
 * start, on a small memfd: a read per piece against one read through the
 * gaps, and from the two solves for the cost of a call and of a byte. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "backend/posix_int.h"
#include "util/log.h"

#define CAL_PIECES 32   /* pieces of CAL_PIECE, each followed by a gap */
#define CAL_PIECE 4096u /* the seed's smallest segment, and a page */
#define CAL_ROUNDS 16   /* the fastest of these counts (noise only adds) */
#define GAP_DEFAULT (16u << 10) /* where nothing could be timed */

/* Read by every worker, set once (and by tests): atomic, relaxed. */
static _Atomic size_t merge_gap = GAP_DEFAULT;
static pthread_once_t merge_gap_once = PTHREAD_ONCE_INIT;

size_t posix_merge_gap_model(double t_pieces, double t_through, int n,
                             size_t piece)
{
	/* t_pieces = n calls + n pieces' bytes; t_through = 1 call + n
	 * pieces' and n gaps' bytes (gaps as wide as pieces). */
	double call = (t_pieces - t_through / 2) / (n - 0.5);
	double byte = (t_through - call) / (2.0 * n * (double)piece);
	double gap;

	if (!(call > 0))
		return 0; /* calls cost nothing: never read a gap */
	if (!(byte > 0))
		return POSIX_MERGE_GAP_MAX; /* copies cost nothing */
	gap = call / byte;
	if (gap >= POSIX_MERGE_GAP_MAX)
		return POSIX_MERGE_GAP_MAX;
	return (size_t)gap / 4096 * 4096; /* whole pages: holes come so */
}

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* The fastest of CAL_ROUNDS of each way over fd's 2 * CAL_PIECES pages.
 * Returns 0, or -1 where a read failed or came short. */
static int time_both(int fd, uint8_t *buf, uint8_t *gap, double *pieces,
                     double *through)
{
	struct iovec iov[2 * CAL_PIECES];
	const ssize_t all = (ssize_t)CAL_PIECES * CAL_PIECE;

	for (int i = 0; i < CAL_PIECES; i++) {
		iov[2 * i] =
		    (struct iovec){buf + (size_t)i * CAL_PIECE, CAL_PIECE};
		iov[2 * i + 1] = (struct iovec){gap, CAL_PIECE};
	}
	*pieces = *through = 1e18;
	for (int r = 0; r < CAL_ROUNDS; r++) {
		double t0 = now_ns(), t1, t2;
		ssize_t got = 0;

		for (int i = 0; i < CAL_PIECES; i++)
			got += preadv2(fd, &iov[2 * i], 1,
			               (off_t)(2 * i) * CAL_PIECE, 0);
		t1 = now_ns();
		if (got != all ||
		    preadv2(fd, iov, 2 * CAL_PIECES, 0, 0) != 2 * all)
			return -1;
		t2 = now_ns();
		if (t1 - t0 < *pieces)
			*pieces = t1 - t0;
		if (t2 - t1 < *through)
			*through = t2 - t1;
	}
	return 0;
}

/* The gap from timings on a memfd (pages in memory, as cached ones are),
 * or -1 where it could not be timed. */
static long calibrate(void)
{
	const size_t span = 2u * CAL_PIECES * CAL_PIECE;
	uint8_t *buf = NULL, *gap = NULL;
	double pieces, through;
	long out = -1;
	int fd;

	fd = memfd_create("snfsd-gap", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	if (posix_memalign((void **)&buf, 4096, span) != 0 ||
	    posix_memalign((void **)&gap, 4096, CAL_PIECE) != 0)
		goto out;
	memset(buf, 0x5a, span);
	if (pwrite(fd, buf, span, 0) != (ssize_t)span)
		goto out;
	if (time_both(fd, buf, gap, &pieces, &through) == 0) {
		out = (long)posix_merge_gap_model(pieces, through, CAL_PIECES,
		                                  CAL_PIECE);
		log_info("read_pieces: %d reads of 4 KiB %.1f us, one read "
		         "through the gaps %.1f us: gaps up to %ld bytes read "
		         "through",
		         CAL_PIECES, pieces / 1e3, through / 1e3, out);
	}
out:
	free(buf);
	free(gap);
	close(fd);
	return out;
}

static void merge_gap_init(void)
{
	const char *env = getenv("SNFSD_READ_MERGE_GAP");
	char *end;
	long v;

	if (env && *env) {
		errno = 0;
		v = strtol(env, &end, 10);
		if (errno == 0 && *end == '\0' && v >= 0 &&
		    v <= (long)POSIX_MERGE_GAP_MAX) {
			atomic_store_explicit(&merge_gap, (size_t)v,
			                      memory_order_relaxed);
			return;
		}
		log_warn("SNFSD_READ_MERGE_GAP=%s: not 0..%u bytes; measuring",
		         env, POSIX_MERGE_GAP_MAX);
	}
	v = calibrate();
	if (v >= 0)
		atomic_store_explicit(&merge_gap, (size_t)v,
		                      memory_order_relaxed);
}

size_t posix_merge_gap(void)
{
	pthread_once(&merge_gap_once, merge_gap_init);
	return atomic_load_explicit(&merge_gap, memory_order_relaxed);
}

void posix_merge_gap_set(size_t gap)
{
	pthread_once(&merge_gap_once, merge_gap_init);
	atomic_store_explicit(
	    &merge_gap, gap < POSIX_MERGE_GAP_MAX ? gap : POSIX_MERGE_GAP_MAX,
	    memory_order_relaxed);
}
