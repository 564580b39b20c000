/* Writer for tests/faults/t_kill_libsnfs.sh (issue 7, "Faults"): a libsnfs
 * client that streams a deterministic pattern while the suite SIGKILLs
 * and restarts snfsd under it, and logs how much the server promised.
 *
 *   kill_writer write URL NAME SIZE_MIB SYNC_MIB SEED LOG [DEADLINE_S]
 *       Mount URL (the export directory), create NAME and write SIZE_MIB
 *       blocks of 1 MiB with snfs_pwrite, calling snfs_fsync every
 *       SYNC_MIB MiB and at the end. After each fsync that returns 0 the
 *       acknowledged length (bytes from offset 0, all committed: RFC 1813
 *       section 3.3.21, RFC 8881 section 18.3) is appended to LOG as a
 *       decimal line, and LOG is fsync'd, so that the suite knows what was
 *       promised at any moment. A failed call (libsnfs should hide a
 *       restart: it reconnects and resends, and writes again after a new
 *       write verifier) is counted, printed, and the stream goes back to
 *       the last acknowledged offset after a pause; after a few failures
 *       in a row the file is opened again. The whole run is bounded by
 *       DEADLINE_S (default 600). Ends with snfs_close and snfs_umount and
 *       prints "# RESULT ..." with the failure count and libsnfs's stats.
 *   kill_writer verify FILE LEN SEED
 *       Compare the first LEN bytes of the local FILE with the pattern;
 *       prints the bytes that differ (missing bytes count). Exit 0 iff 0.
 *
 * Block i of the pattern is splitmix64 output seeded from (SEED, i), so
 * any block can be checked on its own and no two blocks are alike.
 * Exit status of write: 0 finished and closed cleanly, 1 gave up. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "snfs/snfs.h"

#define BLOCK (1u << 20)
#define PAUSE_MS 200
#define REOPEN_AFTER 3 /* failures in a row before opening the file again */

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Block i of the pattern for seed, BLOCK bytes into buf. */
static void fill_block(uint8_t *buf, uint64_t seed, uint64_t i)
{
	uint64_t s = seed * 0x100000001b3ull ^ (i + 1) * 0xd6e8feb86659fd93ull;
	for (size_t k = 0; k < BLOCK; k += 8) {
		uint64_t v = splitmix64(&s);
		memcpy(buf + k, &v, 8);
	}
}

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
}

static void pause_ms(unsigned ms)
{
	struct timespec t = {.tv_sec = ms / 1000,
	                     .tv_nsec = (long)(ms % 1000) * 1000000};
	while (nanosleep(&t, &t) < 0 && errno == EINTR)
		;
}

/* ---- verify ---- */

/* memcmp first: the suite verifies hundreds of MiB at every kill, and a
 * byte loop under ASan let the writer run ahead of the kills. */
static uint64_t diff_bytes(const uint8_t *a, const uint8_t *b, size_t n)
{
	uint64_t d = 0;
	if (memcmp(a, b, n) == 0)
		return 0;
	for (size_t k = 0; k < n; k++)
		d += a[k] != b[k];
	return d;
}

static int do_verify(const char *path, uint64_t len, uint64_t seed)
{
	uint8_t *want = malloc(BLOCK), *got = malloc(BLOCK);
	FILE *f = fopen(path, "rb");
	uint64_t lost = 0, first_bad = UINT64_MAX;

	if (!want || !got) {
		fprintf(stderr, "verify: out of memory\n");
		return 2;
	}
	for (uint64_t off = 0; off < len; off += BLOCK) {
		size_t n = len - off < BLOCK ? (size_t)(len - off) : BLOCK;
		size_t r = f ? fread(got, 1, n, f) : 0;
		fill_block(want, seed, off / BLOCK);
		uint64_t d = diff_bytes(want, got, r) + (n - r);
		if (d && first_bad == UINT64_MAX)
			first_bad = off;
		lost += d;
	}
	if (f)
		fclose(f);
	free(want);
	free(got);
	if (first_bad != UINT64_MAX)
		say("%" PRIu64 " first_bad_block_at=%" PRIu64 "\n", lost,
		    first_bad);
	else
		say("%" PRIu64 "\n", lost);
	return lost ? 1 : 0;
}

/* ---- write ---- */

struct stream {
	const char *url, *name;
	uint64_t size, sync_every, seed;
	int logfd;
	double deadline;
	struct snfs_ctx *ctx;
	struct snfs_file *f;
	uint64_t acked; /* committed bytes from offset 0 */
	unsigned failures, in_a_row;
};

/* Append the acknowledged length to the log, durably. */
static int log_ack(struct stream *s)
{
	char line[32];
	int n = snprintf(line, sizeof(line), "%" PRIu64 "\n", s->acked);
	if (write(s->logfd, line, (size_t)n) != n || fsync(s->logfd) < 0) {
		perror("kill_writer: log");
		return -1;
	}
	return 0;
}

/* A failed call: count it, say so, pause. Returns false past the deadline. */
static bool failed(struct stream *s, const char *what, uint64_t off, long rc)
{
	s->failures++;
	s->in_a_row++;
	say("# failure %u: %s at %" PRIu64 ": %s (%s); back to %" PRIu64 "\n",
	    s->failures, what, off, strerror((int)-rc), snfs_last_error(),
	    s->acked);
	pause_ms(PAUSE_MS);
	return now_s() < s->deadline;
}

static int open_file(struct stream *s, int flags)
{
	for (;;) {
		int rc = snfs_open(s->ctx, s->name, flags, 0644, &s->f);
		if (rc == 0)
			return 0;
		s->f = NULL;
		if (!failed(s, "open", 0, rc))
			return rc;
	}
}

/* Open the file again (its open state may be what keeps failing). */
static int reopen(struct stream *s)
{
	if (s->f) {
		int rc = snfs_close(s->f);
		if (rc)
			say("# close before reopen: %s\n", strerror(-rc));
		s->f = NULL;
	}
	s->in_a_row = 0;
	return open_file(s, O_WRONLY);
}

/* Write and fsync blocks from the last acknowledged offset to the end. */
static int stream_run(struct stream *s, uint8_t *buf)
{
	uint64_t off = s->acked;

	while (s->acked < s->size) {
		/* A call can take the whole RPC timeout without failing (a
		 * write-behind error waits for the next fsync), so the
		 * deadline is checked here too. */
		if (now_s() > s->deadline) {
			say("# deadline passed at %" PRIu64 " (acknowledged "
			    "%" PRIu64 ")\n",
			    off, s->acked);
			return -1;
		}
		if (s->in_a_row >= REOPEN_AFTER && reopen(s))
			return -1;
		if (off < s->size) {
			fill_block(buf, s->seed, off / BLOCK);
			ssize_t w = snfs_pwrite(s->f, buf, BLOCK, off);
			if (w != BLOCK) {
				if (!failed(s, "pwrite", off, w < 0 ? w : -EIO))
					return -1;
				off = s->acked;
				continue;
			}
			off += BLOCK;
			if (off % s->sync_every && off < s->size)
				continue;
		}
		int rc = snfs_fsync(s->f);
		if (rc) {
			if (!failed(s, "fsync", off, rc))
				return -1;
			off = s->acked;
			continue;
		}
		s->in_a_row = 0;
		s->acked = off;
		if (log_ack(s))
			return -1;
	}
	return 0;
}

static void print_result(struct stream *s, double t0, int close_rc)
{
	struct snfs_stats st;
	snfs_stats(s->ctx, &st);
	double secs = now_s() - t0;
	say("# RESULT acked=%" PRIu64 " failures=%u close=%d seconds=%.1f "
	    "MiBps=%.1f reconnects=%" PRIu64 " retransmits=%" PRIu64
	    " write_resends=%" PRIu64 " writes=%" PRIu64 " commits=%" PRIu64
	    "\n",
	    s->acked, s->failures, close_rc, secs,
	    secs > 0 ? (double)s->size / BLOCK / secs : 0, st.reconnects,
	    st.retransmits, st.write_resends, st.calls[SNFS_OP_WRITE],
	    st.calls[SNFS_OP_COMMIT]);
}

static int do_write(struct stream *s)
{
	uint8_t *buf = malloc(BLOCK);
	double t0 = now_s();
	int rc;

	if (!buf)
		return 1;
	for (;;) {
		rc = snfs_mount(s->url, NULL, &s->ctx);
		if (rc == 0)
			break;
		if (!failed(s, "mount", 0, rc)) {
			free(buf);
			return 1;
		}
	}
	rc = open_file(s, O_WRONLY | O_CREAT | O_TRUNC);
	say("# started\n");
	if (rc == 0)
		rc = stream_run(s, buf);
	int close_rc = 0;
	if (s->f) {
		close_rc = snfs_close(s->f);
		if (close_rc)
			say("# close: %s (%s)\n", strerror(-close_rc),
			    snfs_last_error());
	}
	print_result(s, t0, close_rc);
	int urc = snfs_umount(s->ctx);
	if (urc)
		say("# umount: %s\n", strerror(-urc));
	free(buf);
	return rc || close_rc || urc ? 1 : 0;
}

static int usage(void)
{
	fprintf(stderr,
	        "usage: kill_writer write URL NAME SIZE_MIB SYNC_MIB SEED LOG "
	        "[DEADLINE_S]\n"
	        "       kill_writer verify FILE LEN SEED\n");
	return 2;
}

static uint64_t num(const char *s)
{
	return strtoull(s, NULL, 0);
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "verify"))
		return do_verify(argv[2], num(argv[3]), num(argv[4]));
	if ((argc != 8 && argc != 9) || strcmp(argv[1], "write"))
		return usage();
	struct stream s = {
	    .url = argv[2],
	    .name = argv[3],
	    .size = num(argv[4]) * BLOCK,
	    .sync_every = num(argv[5]) * BLOCK,
	    .seed = num(argv[6]),
	};
	if (!s.size || !s.sync_every)
		return usage();
	s.deadline = now_s() + (argc == 9 ? (double)num(argv[8]) : 600.0);
	s.logfd = open(argv[7], O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
	if (s.logfd < 0) {
		perror(argv[7]);
		return 2;
	}
	int rc = do_write(&s);
	close(s.logfd);
	return rc;
}
