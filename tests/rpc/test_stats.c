/* rpc/stats: buckets, quantiles, counting through rpc_service_handle (OK,
 * protocol status read from the results or set by the handler, RPC
 * failures), counting from many threads at once, the table and Prometheus
 * renderings, and the structured error log line; the operations of an
 * optab counted inside a procedure (per variant, their table, series and
 * error lines). */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../test.h"
#include "rpc/stats.h"
#include "rpc_testlib.h"
#include "util/log.h"

#define TOY 200200

static const char *toy_status_name(uint32_t st)
{
	return st == 70 ? "TOY_STALE" : NULL;
}

static int toy_null(struct rpc_call *call, struct xdr_out *res)
{
	(void)call;
	(void)res;
	return RPC_SUCCESS;
}

/* Results open with the status given as argument, like nfsstat3. */
static int toy_status(struct rpc_call *call, struct xdr_out *res)
{
	static const uint8_t fh[4] = {0xde, 0xad, 0xbe, 0xef};
	uint32_t st;

	if (!xdr_get_u32(&call->args, &st))
		return RPC_GARBAGE_ARGS;
	call->status_first = true;
	call->status_name = toy_status_name;
	rpc_call_set_fh(call, fh, sizeof(fh));
	xdr_put_u32(res, st);
	xdr_put_u32(res, 12345); /* more results */
	return RPC_SUCCESS;
}

/* Says its status itself; the results do not start with it. */
static int toy_setstatus(struct rpc_call *call, struct xdr_out *res)
{
	call->status = 9;
	xdr_put_u32(res, 0);
	return RPC_SUCCESS;
}

static int toy_fail(struct rpc_call *call, struct xdr_out *res)
{
	(void)call;
	(void)res;
	return RPC_SYSTEM_ERR;
}

static int toy_slow(struct rpc_call *call, struct xdr_out *res)
{
	(void)call;
	(void)res;
	usleep(3000); /* 3 ms: bucket [2048, 4096) us */
	return RPC_SUCCESS;
}

static const struct rpc_proc toy_procs[] = {
    [0] = {"NULL", toy_null},           [1] = {"STATUS", toy_status},
    [2] = {"SETSTATUS", toy_setstatus}, [3] = {"FAIL", toy_fail},
    [4] = {"SLOW", toy_slow},           [5] = {"HOLE", NULL},
};
static const struct rpc_version toy_versions[] = {
    {1, toy_procs, 2},
    {2, toy_procs, 6},
};
static const struct rpc_program toy_prog = {
    .prog = TOY, .name = "toy", .versions = toy_versions, .nversions = 2};

static const struct rpc_proc other_procs[] = {{"NULL", toy_null},
                                              {"PING", toy_null}};
static const struct rpc_version other_versions[] = {{7, other_procs, 2}};
static const struct rpc_program other_prog = {.prog = TOY + 1,
                                              .name = "we\"ird",
                                              .versions = other_versions,
                                              .nversions = 1};

static struct rpc_service *svc;

/* A call of prog on service s from 127.0.0.1:812, uid 1000. */
static void call_to(struct rpc_service *s, uint32_t prog, uint32_t vers,
                    uint32_t proc, const void *args, size_t n)
{
	struct xdr_out in, out;
	struct sockaddr_in peer = {.sin_family = AF_INET,
	                           .sin_port = htons(812),
	                           .sin_addr.s_addr = htonl(0x7f000001)};

	xdr_out_init(&in, 512, 1 << 20);
	tcall_encode(&(struct tcall){.xid = 1,
	                             .prog = prog,
	                             .vers = vers,
	                             .proc = proc,
	                             .cred_flavor = RPC_AUTH_SYS,
	                             .uid = 1000,
	                             .args = args,
	                             .args_len = n},
	             &in);
	xdr_out_init(&out, 256, 64 * 1024);
	rpc_service_handle(s, in.buf, in.len, (struct sockaddr *)&peer,
	                   sizeof(peer), RPC_TCP, NULL, &out);
	xdr_out_free(&in);
	xdr_out_free(&out);
}

static void call(uint32_t vers, uint32_t proc, const void *args, size_t n)
{
	call_to(svc, TOY, vers, proc, args, n);
}

static void call_status(uint32_t st)
{
	uint8_t a[4] = {(uint8_t)(st >> 24), (uint8_t)(st >> 16),
	                (uint8_t)(st >> 8), (uint8_t)st};
	call(2, 1, a, 4);
}

static const struct rpc_stats_row *find_row(const struct rpc_stats_row *rows,
                                            long n, uint32_t prog,
                                            uint32_t vers, uint32_t proc)
{
	for (long i = 0; i < n; i++)
		if (rows[i].prog == prog && rows[i].vers == vers &&
		    rows[i].proc == proc)
			return &rows[i];
	return NULL;
}

static uint64_t bucket_sum(const struct rpc_stats_row *r)
{
	uint64_t s = 0;
	for (int b = 0; b < RPC_STATS_BUCKETS; b++)
		s += r->buckets[b];
	return s;
}

static void test_buckets(void)
{
	CHECK(rpc_stats_bucket(0) == 0 && rpc_stats_bucket(999) == 0,
	      "under 1 us: bucket 0");
	CHECK(rpc_stats_bucket(1000) == 1 && rpc_stats_bucket(1999) == 1,
	      "[1, 2) us: bucket 1");
	CHECK(rpc_stats_bucket(2000) == 2 && rpc_stats_bucket(3999) == 2 &&
	          rpc_stats_bucket(4000) == 3,
	      "[2, 4) us: bucket 2; 4 us: bucket 3");
	CHECK(rpc_stats_bucket(3000000) == 12,
	      "3 ms: bucket 12 ([2048, 4096) us)");
	CHECK(rpc_stats_bucket(UINT64_MAX) == RPC_STATS_BUCKETS - 1,
	      "huge latency: last bucket");
	CHECK(rpc_stats_bucket_bound_us(0) == 1 &&
	          rpc_stats_bucket_bound_us(12) == 4096 &&
	          rpc_stats_bucket_bound_us(RPC_STATS_BUCKETS - 2) ==
	              (uint64_t)1 << (RPC_STATS_BUCKETS - 2) &&
	          rpc_stats_bucket_bound_us(RPC_STATS_BUCKETS - 1) == 0,
	      "bucket bounds");
	for (unsigned b = 1; b + 1 < RPC_STATS_BUCKETS; b++) {
		uint64_t hi = rpc_stats_bucket_bound_us(b) * 1000;
		if (rpc_stats_bucket(hi - 1) != b ||
		    rpc_stats_bucket(hi) != b + 1) {
			CHECK(0, "every bucket edge");
			return;
		}
	}
	CHECK(1, "every bucket edge");
}

static void test_quantiles(void)
{
	struct rpc_stats_row r;
	double q;

	memset(&r, 0, sizeof(r));
	CHECK(rpc_stats_quantile_ns(&r, 0.5) == 0, "no calls: quantile 0");
	r.buckets[5] = 100; /* [16, 32) us */
	q = rpc_stats_quantile_ns(&r, 0.5);
	CHECK(q > 23999 && q < 24001, "p50 inside one bucket: its middle");
	q = rpc_stats_quantile_ns(&r, 0.99);
	CHECK(q >= 31000 && q < 32000, "p99 near the bucket's top");
	memset(&r, 0, sizeof(r));
	r.buckets[1] = 90;  /* [1, 2) us */
	r.buckets[10] = 10; /* [512, 1024) us */
	q = rpc_stats_quantile_ns(&r, 0.5);
	CHECK(q >= 1000 && q < 2000, "p50 of a mix: the fast bucket");
	q = rpc_stats_quantile_ns(&r, 0.99);
	CHECK(q > 972799 && q < 972801,
	      "p99 of a mix: interpolated in the slow one");
	memset(&r, 0, sizeof(r));
	r.buckets[RPC_STATS_BUCKETS - 1] = 1;
	q = rpc_stats_quantile_ns(&r, 0.5);
	CHECK(q == 1000.0 * (double)((uint64_t)1 << (RPC_STATS_BUCKETS - 2)),
	      "unbounded bucket: its lower edge");
}

/* Capture what the logger writes to stderr while fn runs. */
static char *capture_stderr(void (*fn)(void))
{
	static char buf[65536];
	FILE *tmp = tmpfile();
	int saved = dup(2);
	size_t n;

	fflush(stderr);
	dup2(fileno(tmp), 2);
	fn();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	n = fread(buf, 1, sizeof(buf) - 1, tmp);
	buf[n] = '\0';
	fclose(tmp);
	return buf;
}

static void some_calls(void)
{
	call(1, 0, NULL, 0);  /* NULL v1 */
	call(2, 0, NULL, 0);  /* NULL v2 */
	call_status(0);       /* OK */
	call_status(0);       /* OK */
	call_status(70);      /* error, named */
	call_status(2);       /* error, unnamed */
	call(2, 1, NULL, 0);  /* GARBAGE_ARGS */
	call(2, 2, NULL, 0);  /* handler sets status 9 */
	call(2, 3, NULL, 0);  /* SYSTEM_ERR */
	call(2, 4, NULL, 0);  /* 3 ms */
	call(2, 5, NULL, 0);  /* PROC_UNAVAIL: not a procedure, not counted */
	call(2, 99, NULL, 0); /* PROC_UNAVAIL */
	call(9, 0, NULL, 0);  /* PROG_MISMATCH */
}

static void test_service_counts(void)
{
	struct rpc_stats_row *rows;
	const struct rpc_stats_row *r;
	char *log;
	long n;

	svc = rpc_service_new(NULL);
	CHECK(svc && rpc_service_stats(svc), "service has statistics");
	CHECK(rpc_service_add(svc, &toy_prog) == 0 &&
	          rpc_service_add(svc, &other_prog) == 0,
	      "programs registered");
	log = capture_stderr(some_calls);
	n = rpc_stats_snapshot(rpc_service_stats(svc), &rows);
	CHECK(n == 2 + 6 + 2, "one row per registered procedure");
	r = find_row(rows, n, TOY, 1, 0);
	CHECK(r && r->calls == 1 && r->errors == 0 &&
	          !strcmp(r->proc_name, "NULL"),
	      "v1 NULL counted apart from v2 NULL");
	r = find_row(rows, n, TOY, 2, 0);
	CHECK(r && r->calls == 1 && r->errors == 0,
	      "v2 NULL: 1 call, no error");
	r = find_row(rows, n, TOY, 2, 1);
	CHECK(r && r->calls == 5 && r->errors == 3,
	      "status read from the results: 5 calls, 3 errors (2 statuses, "
	      "1 GARBAGE_ARGS)");
	CHECK(r && bucket_sum(r) == 5, "histogram holds every call");
	r = find_row(rows, n, TOY, 2, 2);
	CHECK(r && r->calls == 1 && r->errors == 1,
	      "status set by the handler");
	r = find_row(rows, n, TOY, 2, 3);
	CHECK(r && r->calls == 1 && r->errors == 1, "SYSTEM_ERR is an error");
	r = find_row(rows, n, TOY, 2, 4);
	CHECK(r && r->calls == 1 && r->sum_ns >= 3000000 &&
	          r->buckets[rpc_stats_bucket(r->sum_ns)] == 1,
	      "latency measured (3 ms handler)");
	r = find_row(rows, n, TOY, 2, 5);
	CHECK(r && r->calls == 0, "unavailable procedure not counted");
	r = find_row(rows, n, TOY + 1, 7, 1);
	CHECK(r && r->calls == 0 && !strcmp(r->prog_name, "we\"ird"),
	      "second program's rows");

	CHECK(strstr(log, "op=STATUS prog=toy vers=2 client=127.0.0.1:812 "
	                  "uid=1000 fh=deadbeef status=TOY_STALE") != NULL,
	      "error log line: op, client, uid, handle, named status");
	CHECK(strstr(log, "op=STATUS prog=toy vers=2 client=127.0.0.1:812 "
	                  "uid=1000 fh=deadbeef status=2 ") != NULL,
	      "error log line: unnamed status as a number");
	CHECK(strstr(log, "op=SETSTATUS") && strstr(log, "fh=- status=9"),
	      "error log line without a handle");
	CHECK(strstr(log, "op=FAIL") && strstr(log, "status=SYSTEM_ERR"),
	      "error log line for an RPC failure");
	CHECK(!strstr(log, "status=0 ") && !strstr(log, "op=NULL") &&
	          !strstr(log, "op=SLOW"),
	      "no log line for successful calls");
	free(rows);
}

static void test_renderings(void)
{
	struct rpc_stats_row *rows;
	char *buf = NULL, line[256];
	size_t len = 0;
	long n = rpc_stats_snapshot(rpc_service_stats(svc), &rows);
	FILE *f = open_memstream(&buf, &len);

	rpc_stats_write_table(f, rows, (size_t)n);
	fclose(f);
	CHECK(strstr(buf, "OPERATION") && strstr(buf, "CALLS") &&
	          strstr(buf, "ERRORS") && strstr(buf, "P50") &&
	          strstr(buf, "P99") && strstr(buf, "MEAN"),
	      "table header");
	CHECK(strstr(buf, "STATUS") && strstr(buf, "SLOW"), "table rows");
	CHECK(!strstr(buf, "PING") && !strstr(buf, "HOLE"),
	      "table leaves out procedures never called");
	{
		unsigned long long calls, errors;
		char *p = strstr(buf, "STATUS");
		CHECK(p &&
		          sscanf(p, "STATUS %llu %llu", &calls, &errors) == 2 &&
		          calls == 5 && errors == 3,
		      "table: STATUS 5 calls 3 errors");
		p = strstr(buf, "SLOW");
		CHECK(p && strstr(p, "ms"), "table: 3 ms shown in ms");
		p = strstr(buf, "total");
		CHECK(p && sscanf(p, "total %llu %llu", &calls, &errors) == 2 &&
		          calls == 10 && errors == 5,
		      "table: total line");
	}
	free(buf);

	buf = NULL;
	f = open_memstream(&buf, &len);
	rpc_stats_write_prometheus(f, rows, (size_t)n);
	fclose(f);
	CHECK(strstr(buf, "# TYPE snfsd_rpc_calls_total counter\n") &&
	          strstr(buf, "# TYPE snfsd_rpc_duration_seconds histogram\n"),
	      "prometheus TYPE lines");
	CHECK(strstr(buf, "snfsd_rpc_calls_total{prog=\"toy\",vers=\"2\","
	                  "proc=\"STATUS\"} 5\n") != NULL,
	      "prometheus calls counter");
	CHECK(strstr(buf, "snfsd_rpc_errors_total{prog=\"toy\",vers=\"2\","
	                  "proc=\"STATUS\"} 3\n") != NULL,
	      "prometheus errors counter");
	CHECK(strstr(buf, "snfsd_rpc_calls_total{prog=\"we\\\"ird\",vers=\"7\","
	                  "proc=\"PING\"} 0\n") != NULL,
	      "prometheus: label escaped, uncalled procedure listed");
	{
		/* the slow call (3 ms, more on a loaded machine) steps the
		 * cumulative count from 0 to 1 at its bucket's bound */
		const struct rpc_stats_row *r = find_row(rows, n, TOY, 2, 4);
		unsigned b = rpc_stats_bucket(r->sum_ns);
		uint64_t hi = rpc_stats_bucket_bound_us(b);
		uint64_t lo = rpc_stats_bucket_bound_us(b - 1);
		char want1[160], want0[160];

		snprintf(want1, sizeof(want1),
		         "snfsd_rpc_duration_seconds_bucket{prog=\"toy\","
		         "vers=\"2\",proc=\"SLOW\",le=\"%llu.%06llu\"} 1\n",
		         (unsigned long long)(hi / 1000000),
		         (unsigned long long)(hi % 1000000));
		snprintf(want0, sizeof(want0),
		         "snfsd_rpc_duration_seconds_bucket{prog=\"toy\","
		         "vers=\"2\",proc=\"SLOW\",le=\"%llu.%06llu\"} 0\n",
		         (unsigned long long)(lo / 1000000),
		         (unsigned long long)(lo % 1000000));
		CHECK(b >= 12 && b + 1 < RPC_STATS_BUCKETS &&
		          strstr(buf, want1) && strstr(buf, want0),
		      "prometheus: a 3 ms call counted from its bucket's bound "
		      "on (le in exact decimal seconds)");
	}
	CHECK(strstr(buf, "le=\"0.000001\"") &&
	          strstr(buf, "le=\"0.004096\"") &&
	          strstr(buf, "le=\"67.108864\""),
	      "prometheus: bucket bounds 1 us .. 67.108864 s");
	CHECK(!strstr(buf, "snfsd_rpc_duration_seconds_bucket{prog=\"toy\","
	                   "vers=\"2\",proc=\"HOLE\""),
	      "prometheus: no histogram for procedures never called");
	{
		/* cumulative buckets never decrease; +Inf equals _count */
		char *p = buf, *nl;
		unsigned long long prev = 0, v, inf = 0, count = 1;
		int nb = 0;
		bool mono = true;
		const char *key =
		    "snfsd_rpc_duration_seconds_bucket{prog=\"toy\","
		    "vers=\"2\",proc=\"STATUS\"";
		const char *ckey =
		    "snfsd_rpc_duration_seconds_count{prog=\"toy\","
		    "vers=\"2\",proc=\"STATUS\"}";
		for (; (nl = strchr(p, '\n')); p = nl + 1) {
			size_t l = (size_t)(nl - p) < sizeof(line) - 1
			               ? (size_t)(nl - p)
			               : sizeof(line) - 1;
			memcpy(line, p, l);
			line[l] = '\0';
			if (!strncmp(line, key, strlen(key))) {
				v = strtoull(strrchr(line, ' ') + 1, NULL, 10);
				mono = mono && v >= prev;
				prev = v;
				nb++;
				if (strstr(line, "le=\"+Inf\""))
					inf = v;
			} else if (!strncmp(line, ckey, strlen(ckey))) {
				count =
				    strtoull(strrchr(line, ' ') + 1, NULL, 10);
			}
		}
		CHECK(nb == RPC_STATS_BUCKETS && mono,
		      "prometheus: every bucket, cumulative");
		CHECK(inf == 5 && count == 5,
		      "prometheus: +Inf == _count == calls");
	}
	free(buf);
	free(rows);
}

/* ---- many threads ---- */

#define THREADS 8
#define PER_THREAD 200000

struct worker_arg {
	struct rpc_stats *st;
	int slot;
};

static void *hammer(void *p)
{
	struct worker_arg *a = p;
	for (uint64_t i = 0; i < PER_THREAD; i++)
		rpc_stats_record(a->st, a->slot, 1, (i % 8) * 1000,
		                 (i & 3) == 0);
	return NULL;
}

static void test_threads(void)
{
	static const struct rpc_version *v = &toy_versions[1];
	struct rpc_stats *st = rpc_stats_new();
	struct worker_arg a = {.st = st};
	struct rpc_stats_row *rows;
	pthread_t t[THREADS];
	long n;

	rpc_stats_add_program(st, &toy_prog);
	a.slot = rpc_stats_slot(st, v);
	CHECK(a.slot == 2, "slot of the second version follows the first's");
	CHECK(rpc_stats_slot(st, &other_versions[0]) == -1,
	      "unknown version: no slot");
	rpc_stats_record(st, -1, 0, 1, false);      /* ignored */
	rpc_stats_record(st, a.slot, 77, 1, false); /* out of range: ignored */
	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, hammer, &a);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	n = rpc_stats_snapshot(st, &rows);
	CHECK(n == 8, "8 rows");
	CHECK(rows[a.slot + 1].calls == (uint64_t)THREADS * PER_THREAD,
	      "no call lost between threads");
	CHECK(rows[a.slot + 1].errors == (uint64_t)THREADS * PER_THREAD / 4,
	      "no error lost between threads");
	CHECK(bucket_sum(&rows[a.slot + 1]) == (uint64_t)THREADS * PER_THREAD,
	      "no histogram entry lost");
	CHECK(rows[a.slot + 1].sum_ns == (uint64_t)THREADS * PER_THREAD / 8 *
	                                     (0 + 1 + 2 + 3 + 4 + 5 + 6 + 7) *
	                                     1000,
	      "latency sum exact");
	CHECK(rows[a.slot + 1].buckets[0] == (uint64_t)THREADS * PER_THREAD / 8,
	      "sub-microsecond calls in bucket 0");
	{
		uint64_t others = 0;
		for (long i = 0; i < n; i++)
			if (i != a.slot + 1)
				others += rows[i].calls;
		CHECK(others == 0, "ignored records counted nowhere");
	}
	free(rows);
	rpc_stats_free(st);
}

/* Shards are made by the first call counted on them: 32 threads on a
 * fresh table (two per shard, so two race to make each) lose no call,
 * and counts made before a program is added survive the growth. */
#define SHARED_THREADS 32
#define SHARED_PER_THREAD 20000

static void *hammer_few(void *p)
{
	struct worker_arg *a = p;
	for (uint64_t i = 0; i < SHARED_PER_THREAD; i++)
		rpc_stats_record(a->st, a->slot, 0, 1000, false);
	return NULL;
}

static void test_lazy_shards(void)
{
	struct rpc_stats *st = rpc_stats_new();
	struct worker_arg a = {.st = st};
	struct rpc_stats_row *rows;
	pthread_t t[SHARED_THREADS];
	long n;

	rpc_stats_add_program(st, &toy_prog);
	a.slot = rpc_stats_slot(st, &toy_versions[0]);
	n = rpc_stats_snapshot(st, &rows);
	CHECK(n == 8 && rows[a.slot].calls == 0 && rows[a.slot].sum_ns == 0,
	      "lazy shards: nothing counted, all rows zero");
	free(rows);
	for (int i = 0; i < SHARED_THREADS; i++)
		pthread_create(&t[i], NULL, hammer_few, &a);
	for (int i = 0; i < SHARED_THREADS; i++)
		pthread_join(t[i], NULL);
	rpc_stats_record(st, a.slot, 1, 5000, true);
	CHECK(rpc_stats_add_program(st, &other_prog) == 0,
	      "lazy shards: a program added after counting");
	rpc_stats_record(st, rpc_stats_slot(st, &other_versions[0]), 1, 1000,
	                 false);
	n = rpc_stats_snapshot(st, &rows);
	CHECK(n == 10 &&
	          rows[a.slot].calls ==
	              (uint64_t)SHARED_THREADS * SHARED_PER_THREAD &&
	          bucket_sum(&rows[a.slot]) == rows[a.slot].calls,
	      "lazy shards: 32 threads on 16 fresh shards lose no call");
	CHECK(rows[a.slot + 1].calls == 1 && rows[a.slot + 1].errors == 1 &&
	          rows[a.slot + 1].sum_ns == 5000 && rows[9].calls == 1,
	      "lazy shards: counts survive a program added");
	free(rows);
	rpc_stats_free(st);
}

static int count_lines(const char *s, const char *needle)
{
	int n = 0;
	for (const char *p = s; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static void many_errors(void)
{
	for (int i = 0; i < 100; i++)
		call_status(70);
}

static void one_error_later(void)
{
	usleep(1100 * 1000); /* the next one-second window */
	call_status(70);
}

/* At the default level error lines are rate-limited, and the next line
 * says how many were left out; at debug level every error is logged. */
static void test_log_rate_limit(void)
{
	char *log;
	int n;

	log_set_level(LOG_INFO);
	log = capture_stderr(many_errors);
	n = count_lines(log, "status=TOY_STALE");
	/* 20 a second; the burst may straddle two windows */
	CHECK(n >= 1 && n <= 40,
	      "default level: 100 errors, at most 2x20 lines");
	log = capture_stderr(one_error_later);
	CHECK(count_lines(log, "status=TOY_STALE") == 1 &&
	          strstr(log, " suppressed=") != NULL,
	      "next line says how many were suppressed");
	log_set_level(LOG_DEBUG);
	log = capture_stderr(many_errors);
	CHECK(count_lines(log, "status=TOY_STALE") == 100,
	      "debug level: every error logged");
	log_set_level(LOG_INFO);
}

static void test_set_fh(void)
{
	struct rpc_call c;
	uint8_t big[200];

	memset(&c, 0, sizeof(c));
	memset(big, 0xab, sizeof(big));
	rpc_call_set_fh(&c, "\x01\x02", 2);
	rpc_call_set_fh(&c, "\x03\x04\x05", 3);
	CHECK(c.fh_len == 2 && c.fh[0] == 1 && c.fh[1] == 2,
	      "first handle set wins");
	memset(&c, 0, sizeof(c));
	rpc_call_set_fh(&c, big, sizeof(big));
	CHECK(c.fh_len == RPC_CALL_FH_MAX, "over-long handle cut");
}

/* ---- operations inside a procedure (optab) ---- */

#define TOYOPS (TOY + 2)

/* Two variants of four ops: TWO only in variant 1, op 3 in neither. */
static const char *toy_op_name(uint32_t variant, uint32_t op)
{
	static const char *const names[] = {"ZERO", "ONE", "TWO"};

	if (op == 2 && variant == 0)
		return NULL;
	return op < 3 ? names[op] : NULL;
}

static const struct rpc_stats_optab toy_optab = {
    .name = "toyops",
    .title = "Toy operations",
    .label = "flavor",
    .prefix = "v",
    .nvariants = 2,
    .nops = 4,
    .op_name = toy_op_name,
};

/* Runs the ops its arguments list, (variant, op, status) each, op k
 * taking (k + 1) us; logs the failed ones itself, like COMPOUND. The
 * results open with the last status. */
static int toy_batch(struct rpc_call *call, struct xdr_out *res)
{
	static const uint8_t fh[2] = {0xca, 0xfe};
	struct rpc_stats *st = rpc_service_stats(call->svc);
	int slot = rpc_stats_optab_slot(st, &toy_optab);
	uint32_t n, v, op, status = 0;

	call->status_first = true;
	call->status_name = toy_status_name;
	if (!xdr_get_u32(&call->args, &n))
		return RPC_GARBAGE_ARGS;
	while (n-- && xdr_get_u32(&call->args, &v) &&
	       xdr_get_u32(&call->args, &op) &&
	       xdr_get_u32(&call->args, &status)) {
		uint64_t ns = 1000 * (uint64_t)(op + 1);
		rpc_stats_record_op(st, slot, &toy_optab, v, op, ns, status);
		if (status) {
			const char *name = toy_op_name(v, op);
			rpc_stats_log_op_error(
			    st, call, &toy_optab,
			    &(struct rpc_op_failure){.op = name ? name : "?",
			                             .variant = v,
			                             .status = status,
			                             .fh = fh,
			                             .fh_len = sizeof(fh),
			                             .ns = ns});
			call->error_logged = true;
		}
	}
	xdr_put_u32(res, status);
	return RPC_SUCCESS;
}

static const struct rpc_proc toyops_procs[] = {
    [0] = {"NULL", toy_null},
    [1] = {"BATCH", toy_batch},
};
static const struct rpc_version toyops_versions[] = {
    {3, toyops_procs, 2},
    {4, toyops_procs, 2},
};
static const struct rpc_program toyops_prog = {.prog = TOYOPS,
                                               .name = "toyops",
                                               .versions = toyops_versions,
                                               .nversions = 2};

static struct rpc_service *ops_svc;

static void batch(const uint32_t *triples, uint32_t n)
{
	uint32_t a[1 + 3 * 8];

	a[0] = htonl(n);
	for (uint32_t i = 0; i < 3 * n && i < 3 * 8; i++)
		a[1 + i] = htonl(triples[i]);
	call_to(ops_svc, TOYOPS, 3, 1, a, 4 * (1 + 3 * n));
}

static void some_batches(void)
{
	/* variant 2 and op 9 are out of the table's range: not counted */
	static const uint32_t b1[] = {0, 1, 0, 1, 2, 0, 1, 2, 70};
	static const uint32_t b2[] = {1, 1, 0, 2, 1, 0, 0, 9, 0};

	batch(b1, 3);
	batch(b2, 3);
}

static const struct rpc_stats_row *op_row(const struct rpc_stats_row *rows,
                                          long n, uint32_t variant, uint32_t op)
{
	for (long i = 0; i < n; i++)
		if (rows[i].optab == &toy_optab && rows[i].vers == variant &&
		    rows[i].proc == op)
			return &rows[i];
	return NULL;
}

static void test_optab_counts(const char *log)
{
	struct rpc_stats *st = rpc_service_stats(ops_svc);
	struct rpc_stats_row *rows;
	const struct rpc_stats_row *r;
	uint64_t ops = 0;
	long n = rpc_stats_snapshot(st, &rows);

	CHECK(n == 2 + 2 + 2 * 4,
	      "optab: one row per procedure, then per variant and op, once "
	      "however often it is added");
	CHECK(rpc_stats_optab_slot(st, &toy_optab) == 4 &&
	          rpc_stats_optab_slot(st, NULL) == -1,
	      "optab slot after the procedures");
	r = op_row(rows, n, 0, 1);
	CHECK(r && r->calls == 1 && r->errors == 0 &&
	          !strcmp(r->proc_name, "ONE") &&
	          !strcmp(r->prog_name, "toyops"),
	      "optab: variant 0 ONE: 1 call");
	r = op_row(rows, n, 1, 2);
	CHECK(r && r->calls == 2 && r->errors == 1 && r->sum_ns == 6000 &&
	          r->buckets[rpc_stats_bucket(3000)] == 2,
	      "optab: variant 1 TWO: 2 calls, 1 error, 3 us each");
	r = op_row(rows, n, 1, 1);
	CHECK(r && r->calls == 1, "optab: variant 1 ONE apart from 0's");
	r = op_row(rows, n, 0, 2);
	CHECK(r && !r->proc_name && r->calls == 0,
	      "optab: an op its variant lacks has no name");
	for (long i = 0; i < n; i++)
		if (rows[i].optab)
			ops += rows[i].calls;
	CHECK(ops == 4, "optab: out-of-range variant and op not counted");
	r = find_row(rows, n, TOYOPS, 3, 1);
	CHECK(r && !r->optab && r->calls == 2 && r->errors == 1,
	      "optab: the procedure still counted as a call");
	CHECK(strstr(log, "op=TWO prog=toyops vers=3 flavor=1 "
	                  "client=127.0.0.1:812 uid=1000 fh=cafe "
	                  "status=TOY_STALE time_us=3") != NULL,
	      "op error line: op, variant, client, uid, handle, status, time");
	CHECK(!strstr(log, "op=BATCH"),
	      "op error line instead of the call's, not beside it");
	CHECK(count_lines(log, "op=") == 1, "op error line: only failed ops");
	free(rows);
}

/* The text of fn's rendering of ops_svc's statistics. */
static char *render(void (*fn)(FILE *, const struct rpc_stats_row *, size_t))
{
	struct rpc_stats_row *rows;
	char *buf = NULL;
	size_t len = 0;
	long n = rpc_stats_snapshot(rpc_service_stats(ops_svc), &rows);
	FILE *f = open_memstream(&buf, &len);

	fn(f, rows, (size_t)n);
	fclose(f);
	free(rows);
	return buf;
}

static void test_optab_table(void)
{
	char *buf = render(rpc_stats_write_table);
	unsigned long long calls = 0, errors = 0;
	char *ops = strstr(buf, "\nToy operations\n"), *p;

	CHECK(ops && strstr(buf, "BATCH") < ops,
	      "table: the ops' table, titled, after the procedures'");
	CHECK(ops && strstr(ops, "VERS") && strstr(ops, "OPERATION") &&
	          strstr(ops, "P99"),
	      "table: the ops' header");
	p = ops ? strstr(ops, "v1     TWO") : NULL;
	CHECK(p && sscanf(p, "v1 TWO %llu %llu", &calls, &errors) == 2 &&
	          calls == 2 && errors == 1,
	      "table: variant with its prefix, op, calls, errors");
	CHECK(ops && !strstr(ops, "ZERO"), "table: ops never run left out");
	p = ops ? strstr(ops, "\ntotal") : NULL;
	CHECK(p && sscanf(p, "\ntotal %llu %llu", &calls, &errors) == 2 &&
	          calls == 4 && errors == 1,
	      "table: the ops' total");
	p = strstr(buf, "\ntotal");
	CHECK(p && sscanf(p, "\ntotal %llu %llu", &calls, &errors) == 2 &&
	          calls == 2 && errors == 1,
	      "table: the procedures' total counts calls, not ops");
	free(buf);
}

static void test_optab_prometheus(void)
{
	char *buf = render(rpc_stats_write_prometheus);
	const char *h = "snfsd_toyops_op_duration_seconds";
	char want[512];

	CHECK(
	    strstr(buf, "# TYPE snfsd_toyops_ops_total counter\n") &&
	        strstr(buf, "# TYPE snfsd_toyops_op_errors_total counter\n") &&
	        strstr(buf, "# TYPE snfsd_toyops_op_duration_seconds "
	                    "histogram\n"),
	    "prometheus: the ops' TYPE lines");
	CHECK(strstr(buf, "snfsd_toyops_ops_total{op=\"TWO\",flavor=\"1\"} "
	                  "2\n") &&
	          strstr(buf, "snfsd_toyops_op_errors_total{op=\"TWO\","
	                      "flavor=\"1\"} 1\n"),
	      "prometheus: op calls and errors, labelled op and variant");
	CHECK(strstr(buf, "snfsd_toyops_ops_total{op=\"ZERO\",flavor=\"0\"} "
	                  "0\n") != NULL,
	      "prometheus: an op not run is listed at 0");
	CHECK(!strstr(buf, "{op=\"proc_2\",flavor=\"0\"}") &&
	          !strstr(buf, "{op=\"proc_3\""),
	      "prometheus: ops a variant lacks are not listed");
	CHECK(!strstr(buf, "snfsd_rpc_calls_total{op="),
	      "prometheus: ops stay out of the RPC series");
	snprintf(want, sizeof(want),
	         "%s_bucket{op=\"TWO\",flavor=\"1\",le=\"0.000002\"} 0\n"
	         "%s_bucket{op=\"TWO\",flavor=\"1\",le=\"0.000004\"} 2\n",
	         h, h);
	CHECK(strstr(buf, want) != NULL,
	      "prometheus: the op's histogram, cumulative");
	snprintf(want, sizeof(want),
	         "%s_bucket{op=\"TWO\",flavor=\"1\",le=\"+Inf\"} 2\n"
	         "%s_sum{op=\"TWO\",flavor=\"1\"} 0.000006000\n"
	         "%s_count{op=\"TWO\",flavor=\"1\"} 2\n",
	         h, h, h);
	CHECK(strstr(buf, want) != NULL, "prometheus: +Inf, _sum, _count");
	CHECK(
	    !strstr(buf, "snfsd_toyops_op_duration_seconds_count{op=\"ZERO\""),
	    "prometheus: no histogram for an op never run");
	free(buf);
}

static void test_optab(void)
{
	char *log;

	ops_svc = rpc_service_new(NULL);
	CHECK(ops_svc && rpc_service_add(ops_svc, &toyops_prog) == 0 &&
	          rpc_stats_add_optab(rpc_service_stats(ops_svc), &toy_optab) ==
	              0 &&
	          rpc_stats_add_optab(rpc_service_stats(ops_svc), &toy_optab) ==
	              0 &&
	          rpc_stats_add_optab(rpc_service_stats(ops_svc), NULL) ==
	              -EINVAL,
	      "optab: program and its optab (twice) registered");
	log = capture_stderr(some_batches);
	test_optab_counts(log);
	test_optab_table();
	test_optab_prometheus();
	rpc_service_free(ops_svc);
}

int main(void)
{
	log_set_level(LOG_INFO);
	test_buckets();
	test_quantiles();
	test_service_counts();
	test_renderings();
	test_log_rate_limit();
	test_threads();
	test_lazy_shards();
	test_set_fh();
	test_optab();
	rpc_service_free(svc);
	TEST_EXIT();
}
