/* `snfs bench`: the random read/write mix of sysbench fileio (test mode
 * rndrw), over libsnfs, for the page-cache seed (SEEDS.md section 3):
 * FILES prepared files of SIZE/FILES bytes each; THREADS threads pick a
 * file and a BLOCK-aligned offset at random, read with probability
 * RATIO/(1+RATIO) and write otherwise (sysbench's --file-rw-ratio is
 * reads:writes), and fsync a file after every FSYNC_FREQ requests to it
 * (sysbench's --file-fsync-freq, 100 by default). Prints requests/s,
 * reads/s, writes/s, latency min/avg/p95/p99/max and the RPC counters. */
#include "tools/snfs_bench.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "snfs/snfs.h"

#define PREP_CHUNK (1u << 20)
#define MIB (1024.0 * 1024.0)

const char snfs_bench_help[] =
    "  bench [--threads N] [--size BYTES] [--block BYTES] [--rw-ratio R]\n"
    "        [--time S] [--requests N] [--files N] [--fsync-freq N]\n"
    "        [--prepare-only] URL\n"
    "                      sysbench-like random read/write mix in the\n"
    "                      directory URL (defaults: 16 threads, 200M, 2K,\n"
    "                      0.5 = 1 read per 2 writes, 30 s, 128 files,\n"
    "                      fsync every 100 requests per file; --requests:\n"
    "                      stop after N requests, as sysbench's\n"
    "                      --max-requests, or after S seconds)\n";

struct bench_cfg {
	unsigned threads, files, fsync_freq;
	uint64_t size, fsize;
	uint64_t max_requests; /* 0: run for secs */
	uint32_t block;
	double ratio, secs;
	bool prepare_only;
	const char *url;
};

struct bench_file {
	struct snfs_file *f;
	uint64_t reqs; /* atomic: requests to this file so far */
};

struct bench;

struct worker {
	struct bench *b;
	pthread_t tid;
	uint64_t rng;
	uint64_t reads, writes, fsyncs, errors;
	double *lat; /* seconds, one per request */
	size_t nlat, cap;
	char err[256]; /* the first error */
};

struct bench {
	struct bench_cfg cfg;
	struct snfs_ctx *ctx;
	struct bench_file *files;
	struct timespec t0;
	uint64_t issued; /* atomic: requests started, for --requests */
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* splitmix64: a small, good, per-thread generator */
static uint64_t rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* "200M", "2K", "1G", "4096" */
static int parse_bytes(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long n = strtoull(s, &end, 10);
	if (errno || end == s || s[0] == '-')
		return -EINVAL;
	int shift = 0;
	switch (*end) {
	case 'k':
	case 'K':
		shift = 10;
		break;
	case 'm':
	case 'M':
		shift = 20;
		break;
	case 'g':
	case 'G':
		shift = 30;
		break;
	}
	if (shift)
		end++;
	if (*end == 'i' || *end == 'b' || *end == 'B') /* 200MiB, 2KB */
		end += end[0] == 'i' && end[1] == 'B' ? 2 : 1;
	if (*end || n > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)n << shift;
	return 0;
}

static int parse_uint(const char *s, unsigned lo, unsigned hi, unsigned *out)
{
	char *end;
	errno = 0;
	unsigned long n = strtoul(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || n < lo || n > hi)
		return -EINVAL;
	*out = (unsigned)n;
	return 0;
}

static int parse_double(const char *s, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	double d = strtod(s, &end);
	if (errno || end == s || *end || !(d >= lo && d <= hi))
		return -EINVAL;
	*out = d;
	return 0;
}

static int bench_usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "snfs bench: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\nTry 'snfs --help' for more information.\n");
	return 1;
}

static int parse_args(int argc, char **argv, struct bench_cfg *cfg)
{
	static const struct option opts[] = {
	    {"threads", required_argument, NULL, 't'},
	    {"size", required_argument, NULL, 's'},
	    {"block", required_argument, NULL, 'b'},
	    {"rw-ratio", required_argument, NULL, 'r'},
	    {"time", required_argument, NULL, 'T'},
	    {"files", required_argument, NULL, 'n'},
	    {"fsync-freq", required_argument, NULL, 'f'},
	    {"prepare-only", no_argument, NULL, 'p'},
	    {"requests", required_argument, NULL, 'R'},
	    {NULL, 0, NULL, 0}};
	uint64_t v;
	int opt;

	*cfg = (struct bench_cfg){.threads = 16,
	                          .files = 128,
	                          .fsync_freq = 100,
	                          .size = 200ull << 20,
	                          .block = 2048,
	                          .ratio = 0.5,
	                          .secs = 30};
	optind = 1;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		int rc = 0;
		switch (opt) {
		case 't':
			rc = parse_uint(optarg, 1, 1024, &cfg->threads);
			break;
		case 's':
			rc = parse_bytes(optarg, &cfg->size);
			break;
		case 'b':
			rc = parse_bytes(optarg, &v);
			if (rc == 0 && (v == 0 || v > (64u << 20)))
				rc = -EINVAL;
			cfg->block = (uint32_t)v;
			break;
		case 'r':
			rc = parse_double(optarg, 0, 1e9, &cfg->ratio);
			break;
		case 'T':
			rc = parse_double(optarg, 0.001, 1e7, &cfg->secs);
			break;
		case 'n':
			rc = parse_uint(optarg, 1, 1u << 20, &cfg->files);
			break;
		case 'f':
			rc =
			    parse_uint(optarg, 0, UINT32_MAX, &cfg->fsync_freq);
			break;
		case 'p':
			cfg->prepare_only = true;
			break;
		case 'R':
			rc = parse_bytes(optarg, &cfg->max_requests);
			break;
		default:
			return bench_usage("%s", "bad option");
		}
		if (rc < 0)
			return bench_usage("bad value '%s'", optarg);
	}
	if (optind != argc - 1)
		return bench_usage("%s", "expects one directory URL");
	cfg->url = argv[optind];
	if (!snfs_is_url(cfg->url))
		return bench_usage("'%s' is not an nfs:// URL", cfg->url);
	cfg->fsize = cfg->size / cfg->files / cfg->block * cfg->block;
	if (cfg->fsize == 0)
		return bench_usage("%s",
		                   "--size must give each file at least one "
		                   "block");
	return 0;
}

static void file_name(char *buf, size_t n, unsigned i)
{
	snprintf(buf, n, "snfs-bench.%u", i);
}

/* Make each file fsize bytes of data, unless it already is (files are
 * kept between runs, as sysbench's prepare step leaves them). */
static int prepare_one(struct snfs_ctx *c, unsigned i, uint64_t fsize,
                       uint8_t *buf, bool *made)
{
	char name[64];
	struct snfs_stat st;
	struct snfs_file *f;
	int rc;

	file_name(name, sizeof(name), i);
	if (snfs_stat(c, name, &st) == 0 && st.type == SNFS_REG &&
	    st.size == fsize)
		return 0;
	rc = snfs_open(c, name, O_RDWR | O_CREAT | O_TRUNC, 0644, &f);
	if (rc < 0)
		return rc;
	for (uint64_t off = 0; off < fsize && rc >= 0;) {
		size_t n = fsize - off < PREP_CHUNK ? fsize - off : PREP_CHUNK;
		ssize_t w = snfs_pwrite(f, buf, n, off);
		rc = w < 0 ? (int)w : 0;
		off += w > 0 ? (uint64_t)w : 0;
	}
	int rc2 = snfs_close(f);
	*made = true;
	return rc < 0 ? rc : rc2;
}

static int prepare(const struct bench_cfg *cfg)
{
	struct snfs_ctx *c;
	uint8_t *buf = malloc(PREP_CHUNK);
	unsigned made = 0;
	double t0 = now_s();
	int rc;

	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < PREP_CHUNK; i++)
		buf[i] = (uint8_t)(i * 31 + 7);
	rc = snfs_mount(cfg->url, NULL, &c);
	for (unsigned i = 0; rc == 0 && i < cfg->files; i++) {
		bool m = false;
		rc = prepare_one(c, i, cfg->fsize, buf, &m);
		made += m;
	}
	free(buf);
	if (rc < 0) {
		fprintf(stderr, "snfs bench: prepare: %s\n", snfs_last_error());
		return rc;
	}
	rc = snfs_umount(c);
	fprintf(stderr,
	        "snfs bench: prepared %u of %u files (%.2f MiB each) in "
	        "%.2f s\n",
	        made, cfg->files, (double)cfg->fsize / MIB, now_s() - t0);
	return rc;
}

static void note_lat(struct worker *w, double s)
{
	if (w->nlat == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 4096;
		double *nl = realloc(w->lat, cap * sizeof(*nl));
		if (!nl)
			return; /* keep counting, drop the sample */
		w->lat = nl;
		w->cap = cap;
	}
	w->lat[w->nlat++] = s;
}

static void note_err(struct worker *w, const char *what, ssize_t rc)
{
	if (w->errors++ == 0)
		snprintf(w->err, sizeof(w->err), "%s: %s (%s)", what,
		         strerror(rc < 0 ? (int)-rc : EIO), snfs_last_error());
}

/* One request: a read or a write of a block, then an fsync of the file
 * if it is its turn (its time counts in this request's latency, as the
 * caller waits for it). */
static void one_request(struct worker *w, uint8_t *buf, double pread_)
{
	const struct bench_cfg *cfg = &w->b->cfg;
	uint64_t r = rnd(&w->rng);
	unsigned fi = (unsigned)(r % cfg->files);
	uint64_t nblocks = cfg->fsize / cfg->block;
	uint64_t off = (rnd(&w->rng) % nblocks) * cfg->block;
	bool is_read =
	    (double)(rnd(&w->rng) >> 11) / 9007199254740992.0 < pread_;
	struct bench_file *bf = &w->b->files[fi];
	double t0 = now_s();
	ssize_t n;

	if (is_read) {
		n = snfs_pread(bf->f, buf, cfg->block, off);
		if (n != (ssize_t)cfg->block)
			note_err(w, "read", n < 0 ? n : -EIO);
		w->reads++;
	} else {
		buf[0] = (uint8_t)r; /* not all blocks alike */
		n = snfs_pwrite(bf->f, buf, cfg->block, off);
		if (n != (ssize_t)cfg->block)
			note_err(w, "write", n < 0 ? n : -EIO);
		w->writes++;
	}
	uint64_t k = __atomic_add_fetch(&bf->reqs, 1, __ATOMIC_RELAXED);
	if (cfg->fsync_freq && k % cfg->fsync_freq == 0) {
		int rc = snfs_fsync(bf->f);
		if (rc < 0)
			note_err(w, "fsync", rc);
		w->fsyncs++;
	}
	note_lat(w, now_s() - t0);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	const struct bench_cfg *cfg = &w->b->cfg;
	double pread_ = cfg->ratio / (1.0 + cfg->ratio);
	double end = (double)w->b->t0.tv_sec + (double)w->b->t0.tv_nsec / 1e9 +
	             cfg->secs;
	uint8_t *buf;

	if (posix_memalign((void **)&buf, 4096, cfg->block)) {
		note_err(w, "buffer", -ENOMEM);
		return NULL;
	}
	memset(buf, 0x5a, cfg->block);
	while (now_s() < end) {
		if (cfg->max_requests &&
		    __atomic_fetch_add(&w->b->issued, 1, __ATOMIC_RELAXED) >=
		        cfg->max_requests)
			break;
		one_request(w, buf, pread_);
	}
	free(buf);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(const double *v, size_t n, double p)
{
	if (n == 0)
		return 0;
	size_t i = (size_t)(p * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}

static const char *pagecache_name(const char *url)
{
	const char *q = strstr(url, "pagecache=");
	if (!q)
		return "partial (default)";
	q += strlen("pagecache=");
	if (!strncmp(q, "full", 4))
		return "full (classic: whole 4 KiB pages)";
	if (!strncmp(q, "off", 3))
		return "off";
	return "partial";
}

static void report(struct bench *b, struct worker *ws, double run_s,
                   double flush_s)
{
	const struct bench_cfg *cfg = &b->cfg;
	uint64_t reads = 0, writes = 0, fsyncs = 0, errors = 0;
	size_t n = 0;
	struct snfs_stats st;

	for (unsigned i = 0; i < cfg->threads; i++) {
		reads += ws[i].reads;
		writes += ws[i].writes;
		fsyncs += ws[i].fsyncs;
		errors += ws[i].errors;
		n += ws[i].nlat;
	}
	double *all = malloc((n ? n : 1) * sizeof(*all)), sum = 0;
	size_t k = 0;
	for (unsigned i = 0; all && i < cfg->threads; i++)
		for (size_t j = 0; j < ws[i].nlat; j++) {
			all[k++] = ws[i].lat[j];
			sum += ws[i].lat[j];
		}
	if (all)
		qsort(all, k, sizeof(*all), cmp_double);
	snfs_stats(b->ctx, &st);
	printf("snfs bench: rndrw, %u threads, %u files x %.2f MiB "
	       "(%.2f MiB), block %" PRIu32 ", rw-ratio %.2f, fsync every "
	       "%u requests per file\n",
	       cfg->threads, cfg->files, (double)cfg->fsize / MIB,
	       (double)cfg->fsize * cfg->files / MIB, cfg->block, cfg->ratio,
	       cfg->fsync_freq);
	printf("pagecache: %s\n", pagecache_name(cfg->url));
	printf("time: %.2f s (then %.3f s to close, flushing)\n", run_s,
	       flush_s);
	printf("requests: %" PRIu64 " (reads %" PRIu64 ", writes %" PRIu64
	       "), fsyncs %" PRIu64 ", errors %" PRIu64 "\n",
	       reads + writes, reads, writes, fsyncs, errors);
	printf("requests/s: %.2f\n", (double)(reads + writes) / run_s);
	printf("reads/s: %.2f\n", (double)reads / run_s);
	printf("writes/s: %.2f\n", (double)writes / run_s);
	printf("latency ms: min %.3f avg %.3f p95 %.3f p99 %.3f max %.3f\n",
	       k ? all[0] * 1e3 : 0, k ? sum / (double)k * 1e3 : 0,
	       all ? pct(all, k, 0.95) * 1e3 : 0,
	       all ? pct(all, k, 0.99) * 1e3 : 0, k ? all[k - 1] * 1e3 : 0);
	printf("rpc: READ %" PRIu64 " READ_PLUS %" PRIu64 " WRITE %" PRIu64
	       " COMMIT %" PRIu64 " total %" PRIu64 "\n",
	       st.calls[SNFS_OP_READ], st.calls[SNFS_OP_READ_PLUS],
	       st.calls[SNFS_OP_WRITE], st.calls[SNFS_OP_COMMIT],
	       st.total_calls);
	printf("bytes: sent %" PRIu64 " received %" PRIu64
	       " read-payload %" PRIu64 " write-payload %" PRIu64
	       " cache-hits %" PRIu64 " cache-misses %" PRIu64 "\n",
	       st.bytes_sent, st.bytes_received, st.read_bytes, st.write_bytes,
	       st.cache_hits, st.cache_misses);
	for (unsigned i = 0; i < cfg->threads; i++)
		if (ws[i].errors) {
			fprintf(stderr, "snfs bench: first error: %s\n",
			        ws[i].err);
			break;
		}
	free(all);
}

static int open_files(struct bench *b)
{
	char name[64];
	for (unsigned i = 0; i < b->cfg.files; i++) {
		file_name(name, sizeof(name), i);
		int rc = snfs_open(b->ctx, name, O_RDWR, 0, &b->files[i].f);
		if (rc < 0) {
			fprintf(stderr, "snfs bench: cannot open '%s': %s\n",
			        name, snfs_last_error());
			return rc;
		}
	}
	return 0;
}

static int close_files(struct bench *b)
{
	int rc = 0;
	for (unsigned i = 0; i < b->cfg.files; i++) {
		if (!b->files[i].f)
			continue;
		int r = snfs_close(b->files[i].f);
		if (r < 0 && rc == 0) {
			fprintf(stderr, "snfs bench: close: %s\n",
			        snfs_last_error());
			rc = r;
		}
		b->files[i].f = NULL;
	}
	return rc;
}

static int run(struct bench *b)
{
	const struct bench_cfg *cfg = &b->cfg;
	struct worker *ws = calloc(cfg->threads, sizeof(*ws));
	uint64_t seed = (uint64_t)time(NULL) * 0x2545f4914f6cdd1dull;
	unsigned started = 0;
	int rc = 0;

	if (!ws)
		return -ENOMEM;
	snfs_stats_reset(b->ctx);
	clock_gettime(CLOCK_MONOTONIC, &b->t0);
	double t0 = now_s();
	for (; started < cfg->threads; started++) {
		ws[started].b = b;
		/* a mixed seed each: plain seed + i * the increment would
		 * give every thread the same sequence, shifted */
		ws[started].rng = rnd(&seed);
		if (pthread_create(&ws[started].tid, NULL, worker_main,
		                   &ws[started]) != 0) {
			rc = -EAGAIN;
			break;
		}
	}
	for (unsigned i = 0; i < started; i++)
		pthread_join(ws[i].tid, NULL);
	double run_s = now_s() - t0, t1 = now_s();
	int crc = close_files(b);
	double flush_s = now_s() - t1;
	uint64_t errors = 0;
	for (unsigned i = 0; i < started; i++)
		errors += ws[i].errors;
	if (rc == 0)
		report(b, ws, run_s, flush_s);
	for (unsigned i = 0; i < cfg->threads; i++)
		free(ws[i].lat);
	free(ws);
	if (rc == 0 && crc < 0)
		rc = crc;
	if (rc == 0 && errors)
		rc = -EIO;
	return rc;
}

int snfs_cmd_bench(int argc, char **argv)
{
	struct bench b = {0};
	int rc;

	if (parse_args(argc, argv, &b.cfg) != 0)
		return 1;
	rc = prepare(&b.cfg);
	if (rc < 0)
		return 1;
	if (b.cfg.prepare_only)
		return 0;
	/* A fresh mount: the run starts with a cold cache. */
	rc = snfs_mount(b.cfg.url, NULL, &b.ctx);
	if (rc < 0) {
		fprintf(stderr, "snfs bench: %s\n", snfs_last_error());
		return 1;
	}
	b.files = calloc(b.cfg.files, sizeof(*b.files));
	rc = b.files ? open_files(&b) : -ENOMEM;
	if (rc == 0)
		rc = run(&b);
	else if (b.files)
		close_files(&b);
	int urc = snfs_umount(b.ctx);
	free(b.files);
	return rc < 0 || urc < 0 ? 1 : 0;
}
