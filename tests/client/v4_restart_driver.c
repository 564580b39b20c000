/* Integration driver for tests/client/t_snfs_v4_restart.sh: libsnfs
 * scenarios around an NFSv4.1/4.2 server restart that the snfs command
 * cannot express. Each mode mounts, does its first part, prints "ready"
 * and waits for one line on standard input (the suite restarts the server
 * meanwhile), then does the rest. Exit status 0 only if every step worked.
 *
 *   read URL NAME OUT     read NAME whole into OUT.1; after the line, read
 *                         it again through the same open file (OUT.2) and
 *                         through a new open (OUT.3)
 *   grace URL NAME SIZE   after the line, create NAME (a new OPEN, which
 *                         meets NFS4ERR_GRACE while the server is in its
 *                         grace period) and write SIZE bytes; prints the
 *                         milliseconds the create took
 *   threads URL N OUTDIR  N threads, each on a file tI of its own, write,
 *                         read back and fsync until the line comes; then
 *                         each closes, verifies its file through a new
 *                         open and stores what it should hold in OUTDIR/tI
 *
 * Not run by tests/run.sh (it needs a server and the suite's timing). */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "snfs/snfs.h"

#define CHUNK (1u << 20)
#define TFILE_SIZE (2u << 20)
#define TMAX 256

static int64_t now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
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

/* Block until the suite says go (a line, or EOF). */
static void wait_go(void)
{
	char line[64];
	say("ready\n");
	if (!fgets(line, sizeof(line), stdin))
		return;
}

static void print_stats(struct snfs_ctx *c)
{
	struct snfs_stats s;
	snfs_stats(c, &s);
	say("stats: calls=%" PRIu64 " compound=%" PRIu64 " retransmits=%" PRIu64
	    " reconnects=%" PRIu64 " write_resends=%" PRIu64 "\n",
	    s.total_calls, s.calls[SNFS_OP_COMPOUND], s.retransmits,
	    s.reconnects, s.write_resends);
}

/* ---- read ---- */

static int read_to(struct snfs_file *f, const char *path)
{
	FILE *out = fopen(path, "w");
	char *buf = malloc(CHUNK);
	uint64_t off = 0;
	int rc = 0;

	if (!out || !buf) {
		rc = -ENOMEM;
		goto done;
	}
	for (;;) {
		ssize_t n = snfs_pread(f, buf, CHUNK, off);
		if (n < 0) {
			fprintf(stderr, "pread at %" PRIu64 ": %s\n", off,
			        snfs_last_error());
			rc = (int)n;
			break;
		}
		if (n == 0)
			break;
		fwrite(buf, 1, (size_t)n, out);
		off += (uint64_t)n;
	}
done:
	if (out)
		fclose(out);
	free(buf);
	return rc;
}

static int mode_read(struct snfs_ctx *c, const char *name, const char *out)
{
	struct snfs_file *f, *g;
	char p[4096];
	int rc = snfs_open(c, name, O_RDONLY, 0, &f);
	if (rc < 0) {
		fprintf(stderr, "open %s: %s\n", name, snfs_last_error());
		return rc;
	}
	snprintf(p, sizeof(p), "%s.1", out);
	if ((rc = read_to(f, p)) < 0)
		return rc;
	wait_go();
	int64_t t0 = now_ms();
	snprintf(p, sizeof(p), "%s.2", out);
	if ((rc = read_to(f, p)) < 0)
		return rc;
	say("reread_ms=%" PRId64 "\n", now_ms() - t0);
	rc = snfs_open(c, name, O_RDONLY, 0, &g);
	if (rc < 0) {
		fprintf(stderr, "second open %s: %s\n", name,
		        snfs_last_error());
		return rc;
	}
	snprintf(p, sizeof(p), "%s.3", out);
	rc = read_to(g, p);
	int r2 = snfs_close(g);
	int r1 = snfs_close(f);
	if (rc == 0)
		rc = r2 ? r2 : r1;
	if (rc < 0)
		fprintf(stderr, "close: %s\n", snfs_last_error());
	return rc;
}

/* ---- grace ---- */

static int mode_grace(struct snfs_ctx *c, const char *name, size_t size)
{
	struct snfs_file *f;
	char *buf = malloc(size ? size : 1);
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < size; i++)
		buf[i] = (char)(i * 7 + 3);
	wait_go();
	int64_t t0 = now_ms();
	int rc = snfs_open(c, name, O_WRONLY | O_CREAT | O_TRUNC, 0644, &f);
	say("open_ms=%" PRId64 "\n", now_ms() - t0);
	if (rc < 0) {
		fprintf(stderr, "create %s: %s\n", name, snfs_last_error());
		free(buf);
		return rc;
	}
	ssize_t n = snfs_pwrite(f, buf, size, 0);
	rc = n < 0 ? (int)n : n != (ssize_t)size ? -EIO : 0;
	int rc2 = snfs_close(f);
	if (rc == 0)
		rc = rc2;
	if (rc < 0)
		fprintf(stderr, "write/close %s: %s\n", name,
		        snfs_last_error());
	free(buf);
	return rc;
}

/* ---- threads ---- */

struct worker {
	pthread_t tid;
	struct snfs_ctx *c;
	int idx;
	const char *outdir;
	uint64_t rng;
	uint8_t *want; /* what the file should hold */
	uint64_t iters;
	int64_t max_op_ms;
	int err;
	char msg[256];
};

static volatile int stop_flag; /* set once by main, read by workers */
static volatile int ready_count;

static uint64_t rnd(struct worker *w)
{
	w->rng ^= w->rng << 13;
	w->rng ^= w->rng >> 7;
	w->rng ^= w->rng << 17;
	return w->rng;
}

static int fail(struct worker *w, int rc, const char *what)
{
	w->err = rc ? rc : -EIO;
	snprintf(w->msg, sizeof(w->msg), "t%d: %s: %s (%d)", w->idx, what,
	         snfs_last_error(), rc);
	return w->err;
}

/* One round: a write of random bytes at a random place, sometimes a
 * read-back of another range, sometimes an fsync. */
static int one_round(struct worker *w, struct snfs_file *f, uint8_t *tmp)
{
	uint32_t len = 1 + (uint32_t)(rnd(w) % (256u << 10));
	uint64_t off = rnd(w) % (TFILE_SIZE - len);
	for (uint32_t i = 0; i < len; i++)
		w->want[off + i] = (uint8_t)rnd(w);
	int64_t t0 = now_ms();
	ssize_t n = snfs_pwrite(f, w->want + off, len, off);
	if (n != (ssize_t)len)
		return fail(w, (int)n, "pwrite");
	if (w->iters % 3 == 0) {
		len = 1 + (uint32_t)(rnd(w) % (256u << 10));
		off = rnd(w) % (TFILE_SIZE - len);
		n = snfs_pread(f, tmp, len, off);
		if (n != (ssize_t)len)
			return fail(w, (int)n, "pread");
		if (memcmp(tmp, w->want + off, len))
			return fail(w, -EILSEQ, "pread returned other data");
	}
	if (w->iters % 8 == 7) {
		int rc = snfs_fsync(f);
		if (rc < 0)
			return fail(w, rc, "fsync");
	}
	int64_t d = now_ms() - t0;
	if (d > w->max_op_ms)
		w->max_op_ms = d;
	return 0;
}

static int verify(struct worker *w, const char *name, uint8_t *tmp)
{
	struct snfs_file *f;
	int rc = snfs_open(w->c, name, O_RDONLY, 0, &f);
	if (rc < 0)
		return fail(w, rc, "reopen");
	ssize_t n = snfs_pread(f, tmp, TFILE_SIZE, 0);
	rc = snfs_close(f);
	if (n != (ssize_t)TFILE_SIZE)
		return fail(w, (int)n, "verify pread");
	if (memcmp(tmp, w->want, TFILE_SIZE))
		return fail(w, -EILSEQ, "file differs after close");
	return rc < 0 ? fail(w, rc, "verify close") : 0;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct snfs_file *f;
	char name[64], path[4096];
	uint8_t *tmp = malloc(TFILE_SIZE);

	snprintf(name, sizeof(name), "t%d", w->idx);
	w->want = calloc(1, TFILE_SIZE);
	if (!tmp || !w->want) {
		fail(w, -ENOMEM, "malloc");
		goto out;
	}
	int rc = snfs_open(w->c, name, O_RDWR | O_CREAT | O_TRUNC, 0644, &f);
	if (rc < 0) {
		fail(w, rc, "open");
		goto out;
	}
	/* the whole size first, so every read-back is inside the file */
	if (snfs_pwrite(f, w->want, TFILE_SIZE, 0) != (ssize_t)TFILE_SIZE) {
		fail(w, -EIO, "initial write");
		snfs_close(f);
		goto out;
	}
	while (!stop_flag && !w->err) {
		one_round(w, f, tmp);
		if (++w->iters == 4)
			__atomic_add_fetch(&ready_count, 1, __ATOMIC_SEQ_CST);
	}
	if (w->iters < 4)
		__atomic_add_fetch(&ready_count, 1, __ATOMIC_SEQ_CST);
	rc = snfs_close(f);
	if (rc < 0 && !w->err)
		fail(w, rc, "close");
	if (!w->err)
		verify(w, name, tmp);
	snprintf(path, sizeof(path), "%s/%s", w->outdir, name);
	FILE *o = fopen(path, "w");
	if (o) {
		fwrite(w->want, 1, TFILE_SIZE, o);
		fclose(o);
	}
out:
	free(tmp);
	return NULL;
}

static int mode_threads(struct snfs_ctx *c, int n, const char *outdir)
{
	static struct worker ws[TMAX];
	int rc = 0;

	for (int i = 0; i < n; i++) {
		ws[i] = (struct worker){.c = c, .idx = i, .outdir = outdir};
		ws[i].rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
		if (pthread_create(&ws[i].tid, NULL, worker_main, &ws[i])) {
			fprintf(stderr, "pthread_create failed\n");
			return -EAGAIN;
		}
	}
	while (__atomic_load_n(&ready_count, __ATOMIC_SEQ_CST) < n)
		nanosleep(&(struct timespec){0, 10000000}, NULL);
	wait_go();
	stop_flag = 1;
	int64_t t0 = now_ms();
	uint64_t iters = 0;
	int64_t max_op = 0;
	for (int i = 0; i < n; i++) {
		pthread_join(ws[i].tid, NULL);
		iters += ws[i].iters;
		if (ws[i].max_op_ms > max_op)
			max_op = ws[i].max_op_ms;
		if (ws[i].err) {
			fprintf(stderr, "%s\n", ws[i].msg);
			rc = ws[i].err;
		}
		free(ws[i].want);
	}
	say("joined_ms=%" PRId64 " rounds=%" PRIu64 " max_round_ms=%" PRId64
	    "\n",
	    now_ms() - t0, iters, max_op);
	return rc;
}

int main(int argc, char **argv)
{
	struct snfs_ctx *c;
	int rc;

	if (argc != 5) {
		fprintf(stderr,
		        "usage: %s read URL NAME OUT | grace URL NAME SIZE | "
		        "threads URL N OUTDIR\n",
		        argv[0]);
		return 2;
	}
	rc = snfs_mount(argv[2], NULL, &c);
	if (rc < 0) {
		fprintf(stderr, "mount %s: %s\n", argv[2], snfs_last_error());
		return 1;
	}
	if (!strcmp(argv[1], "read")) {
		rc = mode_read(c, argv[3], argv[4]);
	} else if (!strcmp(argv[1], "grace")) {
		rc = mode_grace(c, argv[3], strtoull(argv[4], NULL, 10));
	} else if (!strcmp(argv[1], "threads")) {
		int n = atoi(argv[3]);
		rc = n > 0 && n <= TMAX ? mode_threads(c, n, argv[4]) : -EINVAL;
	} else {
		fprintf(stderr, "unknown mode %s\n", argv[1]);
		rc = -EINVAL;
	}
	print_stats(c);
	int r2 = snfs_umount(c);
	if (rc == 0 && r2 < 0) {
		fprintf(stderr, "umount: %s\n", snfs_last_error());
		rc = r2;
	}
	say("result=%d\n", rc);
	return rc == 0 ? 0 : 1;
}
