/* Per-procedure (and per-op, for procedures with an optab) RPC
 * statistics: sharded lock-free counters, their snapshot, the table and
 * Prometheus renderings, and the rate-limited structured error log lines.
 * See stats.h. */
#include "rpc/stats.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rpc/rpc_int.h"
#include "util/log.h"

/* Error lines logged per second at the default log level. */
#define ERROR_LOG_PER_SEC 20

/* One procedure's counters in one shard. Relaxed atomics: each is an
 * independent tally, no ordering between them is promised to readers. */
struct op_counters {
	_Atomic uint64_t calls;
	_Atomic uint64_t errors;
	_Atomic uint64_t sum_ns;
	_Atomic uint64_t buckets[RPC_STATS_BUCKETS];
};

/* A registered version, or an optab, and where its rows start in the
 * table. */
struct stats_version {
	const struct rpc_program *prog;      /* NULL for an optab */
	const struct rpc_version *ver;       /* NULL for an optab */
	const struct rpc_stats_optab *optab; /* NULL for a version */
	uint32_t first;
};

/* Rows an entry takes: its procedures, or every (variant, op). */
static uint32_t entry_rows(const struct stats_version *e)
{
	return e->ver ? e->ver->nprocs : e->optab->nvariants * e->optab->nops;
}

struct rpc_stats {
	struct stats_version *vers;
	int nvers, cap;
	uint32_t nops; /* procedures over all versions */
	/* Each shard is its own cache-aligned block of nops counters, so
	 * threads on different shards never write the same line. A shard is
	 * made by the first call counted on it (NULL until then): a server
	 * with a few workers uses a few, and registering no longer zeroes
	 * and copies all 16 on every program added (~1 MiB each time, most
	 * of snfsd's start-up instructions after the exports). */
	_Atomic(struct op_counters *) shards[RPC_STATS_SHARDS];

	/* error log rate limit: a one-second window */
	_Atomic uint64_t log_window;
	_Atomic uint32_t log_in_window;
	_Atomic uint64_t log_suppressed;
};

struct rpc_stats *rpc_stats_new(void)
{
	return calloc(1, sizeof(struct rpc_stats));
}

void rpc_stats_free(struct rpc_stats *st)
{
	if (!st)
		return;
	for (int i = 0; i < RPC_STATS_SHARDS; i++)
		free(atomic_load(&st->shards[i]));
	free(st->vers);
	free(st);
}

/* A zeroed, cache-line-aligned array of n counters. */
static struct op_counters *counters_alloc(uint32_t n)
{
	size_t sz = (size_t)n * sizeof(struct op_counters);
	struct op_counters *c;

	sz = (sz + 63) & ~(size_t)63;
	c = aligned_alloc(64, sz ? sz : 64);
	if (c)
		memset(c, 0, sz ? sz : 64);
	return c;
}

/* Copy the old counters into the grown table (registration happens
 * before serving, but a test may record first). */
static void counters_copy(struct op_counters *dst,
                          const struct op_counters *src, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		atomic_init(&dst[i].calls, atomic_load(&src[i].calls));
		atomic_init(&dst[i].errors, atomic_load(&src[i].errors));
		atomic_init(&dst[i].sum_ns, atomic_load(&src[i].sum_ns));
		for (int b = 0; b < RPC_STATS_BUCKETS; b++)
			atomic_init(&dst[i].buckets[b],
			            atomic_load(&src[i].buckets[b]));
	}
}

/* Grow every shard made so far to nops counters; all or nothing. */
static int shards_grow(struct rpc_stats *st, uint32_t nops)
{
	struct op_counters *grown[RPC_STATS_SHARDS] = {0};

	for (int i = 0; i < RPC_STATS_SHARDS; i++) {
		if (!atomic_load(&st->shards[i]))
			continue;
		grown[i] = counters_alloc(nops);
		if (!grown[i]) {
			while (i-- > 0)
				free(grown[i]);
			return -ENOMEM;
		}
	}
	for (int i = 0; i < RPC_STATS_SHARDS; i++) {
		struct op_counters *old = atomic_load(&st->shards[i]);

		if (!old)
			continue;
		counters_copy(grown[i], old, st->nops);
		free(old);
		atomic_store(&st->shards[i], grown[i]);
	}
	st->nops = nops;
	return 0;
}

/* Append the entries to the table, each after the previous one's rows. */
static int entries_append(struct rpc_stats *st, const struct stats_version *add,
                          int n)
{
	uint32_t first = st->nops, total = st->nops;

	if (st->nvers + n > st->cap) {
		struct stats_version *v =
		    realloc(st->vers, (size_t)(st->nvers + n) * sizeof(*v));
		if (!v)
			return -ENOMEM;
		st->vers = v;
		st->cap = st->nvers + n;
	}
	for (int i = 0; i < n; i++)
		total += entry_rows(&add[i]);
	if (shards_grow(st, total))
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		struct stats_version *e = &st->vers[st->nvers++];
		*e = add[i];
		e->first = first;
		first += entry_rows(e);
	}
	return 0;
}

int rpc_stats_add_program(struct rpc_stats *st, const struct rpc_program *prog)
{
	struct stats_version *add =
	    calloc(prog->nversions ? prog->nversions : 1, sizeof(*add));
	int rc;

	if (!add)
		return -ENOMEM;
	/* each version's procedures follow the previous version's */
	for (uint32_t i = 0; i < prog->nversions; i++)
		add[i] = (struct stats_version){.prog = prog,
		                                .ver = &prog->versions[i]};
	rc = entries_append(st, add, (int)prog->nversions);
	free(add);
	return rc;
}

int rpc_stats_add_optab(struct rpc_stats *st, const struct rpc_stats_optab *t)
{
	const struct stats_version e = {.optab = t};

	if (!t)
		return -EINVAL;
	if (rpc_stats_optab_slot(st, t) >= 0)
		return 0;
	return entries_append(st, &e, 1);
}

struct rpc_stats *rpc_service_stats(const struct rpc_service *svc)
{
	return svc->stats;
}

int rpc_stats_slot(const struct rpc_stats *st, const struct rpc_version *ver)
{
	for (int i = 0; i < st->nvers; i++)
		if (ver && st->vers[i].ver == ver)
			return (int)st->vers[i].first;
	return -1;
}

int rpc_stats_optab_slot(const struct rpc_stats *st,
                         const struct rpc_stats_optab *t)
{
	for (int i = 0; i < st->nvers; i++)
		if (t && st->vers[i].optab == t)
			return (int)st->vers[i].first;
	return -1;
}

unsigned rpc_stats_bucket(uint64_t ns)
{
	uint64_t us = ns / 1000;
	unsigned b;

	if (us == 0)
		return 0;
	b = 64 - (unsigned)__builtin_clzll(us); /* floor(log2(us)) + 1 */
	return b < RPC_STATS_BUCKETS ? b : RPC_STATS_BUCKETS - 1;
}

uint64_t rpc_stats_bucket_bound_us(unsigned b)
{
	return b + 1 < RPC_STATS_BUCKETS ? (uint64_t)1 << b : 0;
}

/* This thread's shard. Thread ids are handed out in sequence, so the
 * workers of a pool land on different shards. */
static unsigned my_shard(void)
{
	static _Thread_local unsigned shard_plus_one;

	if (!shard_plus_one)
		shard_plus_one = (unsigned)gettid() % RPC_STATS_SHARDS + 1;
	return shard_plus_one - 1;
}

/* Shard s, made now if no call was counted on it yet; NULL when out of
 * memory (the call goes uncounted). Two threads of one shard may race to
 * make it: one block wins, the other is freed. */
static __attribute__((noinline, cold)) struct op_counters *
shard_make(struct rpc_stats *st, unsigned s)
{
	struct op_counters *c = counters_alloc(st->nops), *none = NULL;

	if (!c)
		return NULL;
	if (atomic_compare_exchange_strong_explicit(&st->shards[s], &none, c,
	                                            memory_order_acq_rel,
	                                            memory_order_acquire))
		return c;
	free(c);
	return none;
}

void rpc_stats_record(struct rpc_stats *st, int slot, uint32_t proc,
                      uint64_t ns, bool error)
{
	struct op_counters *c;
	uint64_t idx = (uint64_t)slot + proc;
	unsigned s;

	if (slot < 0 || idx >= st->nops)
		return;
	s = my_shard();
	c = atomic_load_explicit(&st->shards[s], memory_order_acquire);
	if (!c && !(c = shard_make(st, s)))
		return;
	c = &c[idx];
	atomic_fetch_add_explicit(&c->calls, 1, memory_order_relaxed);
	if (error)
		atomic_fetch_add_explicit(&c->errors, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&c->sum_ns, ns, memory_order_relaxed);
	atomic_fetch_add_explicit(&c->buckets[rpc_stats_bucket(ns)], 1,
	                          memory_order_relaxed);
}

void rpc_stats_record_op(struct rpc_stats *st, int slot,
                         const struct rpc_stats_optab *t, uint32_t variant,
                         uint32_t op, uint64_t ns, bool error)
{
	if (variant >= t->nvariants || op >= t->nops)
		return;
	rpc_stats_record(st, slot, variant * t->nops + op, ns, error);
}

/* Add one shard's counters for op idx into row. */
static void row_add(struct rpc_stats_row *row, const struct op_counters *c)
{
	row->calls += atomic_load_explicit(&c->calls, memory_order_relaxed);
	row->errors += atomic_load_explicit(&c->errors, memory_order_relaxed);
	row->sum_ns += atomic_load_explicit(&c->sum_ns, memory_order_relaxed);
	for (int b = 0; b < RPC_STATS_BUCKETS; b++)
		row->buckets[b] +=
		    atomic_load_explicit(&c->buckets[b], memory_order_relaxed);
}

/* Sum the shards' counters of row idx. */
static void row_sum(const struct rpc_stats *st, uint32_t idx,
                    struct rpc_stats_row *r)
{
	for (int s = 0; s < RPC_STATS_SHARDS; s++) {
		const struct op_counters *c =
		    atomic_load_explicit(&st->shards[s], memory_order_acquire);

		if (c)
			row_add(r, &c[idx]);
	}
}

/* The rows of a version's procedures. */
static void version_rows(const struct rpc_stats *st,
                         const struct stats_version *sv,
                         struct rpc_stats_row *rows)
{
	for (uint32_t p = 0; p < sv->ver->nprocs; p++) {
		struct rpc_stats_row *r = &rows[sv->first + p];
		r->prog_name = sv->prog->name;
		r->proc_name = sv->ver->procs[p].name;
		r->prog = sv->prog->prog;
		r->vers = sv->ver->vers;
		r->proc = p;
		row_sum(st, sv->first + p, r);
	}
}

/* The rows of an optab's ops, variant by variant. */
static void optab_rows(const struct rpc_stats *st,
                       const struct stats_version *sv,
                       struct rpc_stats_row *rows)
{
	const struct rpc_stats_optab *t = sv->optab;

	for (uint32_t v = 0; v < t->nvariants; v++) {
		for (uint32_t op = 0; op < t->nops; op++) {
			uint32_t idx = sv->first + v * t->nops + op;
			struct rpc_stats_row *r = &rows[idx];
			r->prog_name = t->name;
			r->proc_name = t->op_name(v, op);
			r->vers = v;
			r->proc = op;
			r->optab = t;
			row_sum(st, idx, r);
		}
	}
}

long rpc_stats_snapshot(const struct rpc_stats *st, struct rpc_stats_row **out)
{
	struct rpc_stats_row *rows =
	    calloc(st->nops ? st->nops : 1, sizeof(*rows));

	if (!rows)
		return -ENOMEM;
	for (int v = 0; v < st->nvers; v++) {
		if (st->vers[v].ver)
			version_rows(st, &st->vers[v], rows);
		else
			optab_rows(st, &st->vers[v], rows);
	}
	*out = rows;
	return (long)st->nops;
}

double rpc_stats_quantile_ns(const struct rpc_stats_row *r, double q)
{
	uint64_t total = 0, cum = 0;
	double rank;

	for (int b = 0; b < RPC_STATS_BUCKETS; b++)
		total += r->buckets[b];
	if (total == 0)
		return 0;
	rank = q * (double)total;
	for (unsigned b = 0; b < RPC_STATS_BUCKETS; b++) {
		double lo, hi;
		if (r->buckets[b] == 0 ||
		    (double)(cum + r->buckets[b]) < rank) {
			cum += r->buckets[b];
			continue;
		}
		lo = b == 0 ? 0 : 1000.0 * (double)((uint64_t)1 << (b - 1));
		if (b == RPC_STATS_BUCKETS - 1)
			return lo; /* unbounded: its lower edge is all we know
			            */
		hi = 1000.0 * (double)rpc_stats_bucket_bound_us(b);
		return lo +
		       (hi - lo) * (rank - (double)cum) / (double)r->buckets[b];
	}
	return 0;
}

/* ---- renderings ---- */

/* A latency for people: "35.2us", "1.25ms", "2.01s". */
static const char *fmt_duration(double ns, char *buf, size_t n)
{
	if (ns < 1e6)
		snprintf(buf, n, "%.1fus", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, n, "%.2fms", ns / 1e6);
	else
		snprintf(buf, n, "%.2fs", ns / 1e9);
	return buf;
}

static const char *row_proc_name(const struct rpc_stats_row *r, char *buf,
                                 size_t n)
{
	if (r->proc_name)
		return r->proc_name;
	snprintf(buf, n, "proc_%u", r->proc);
	return buf;
}

/* The count and latency columns of a row that has calls. */
static void write_cols(FILE *f, const struct rpc_stats_row *r)
{
	char mean[32], p50[32], p99[32];

	fprintf(f, " %12llu %10llu %10s %10s %10s\n",
	        (unsigned long long)r->calls, (unsigned long long)r->errors,
	        fmt_duration((double)r->sum_ns / (double)r->calls, mean,
	                     sizeof(mean)),
	        fmt_duration(rpc_stats_quantile_ns(r, 0.5), p50, sizeof(p50)),
	        fmt_duration(rpc_stats_quantile_ns(r, 0.99), p99, sizeof(p99)));
}

static void write_proc_table(FILE *f, const struct rpc_stats_row *rows,
                             size_t n)
{
	uint64_t calls = 0, errors = 0;
	char name[32];

	fprintf(f, "%-8s %4s  %-12s %12s %10s %10s %10s %10s\n", "PROGRAM",
	        "VERS", "OPERATION", "CALLS", "ERRORS", "MEAN", "P50", "P99");
	for (size_t i = 0; i < n; i++) {
		const struct rpc_stats_row *r = &rows[i];
		if (r->optab || r->calls == 0)
			continue;
		calls += r->calls;
		errors += r->errors;
		fprintf(f, "%-8s %4u  %-12s", r->prog_name, r->vers,
		        row_proc_name(r, name, sizeof(name)));
		write_cols(f, r);
	}
	fprintf(f, "%-8s %4s  %-12s %12llu %10llu\n", "total", "", "",
	        (unsigned long long)calls, (unsigned long long)errors);
}

/* The table of optab t: its rows that have calls, after its title. Op
 * names are up to 20 characters (BIND_CONN_TO_SESSION). */
static void write_optab_table(FILE *f, const struct rpc_stats_row *rows,
                              size_t n, const struct rpc_stats_optab *t)
{
	uint64_t calls = 0, errors = 0;
	char name[32], vers[32];

	fprintf(f, "\n%s\n%-6s %-20s %12s %10s %10s %10s %10s\n", t->title,
	        "VERS", "OPERATION", "CALLS", "ERRORS", "MEAN", "P50", "P99");
	for (size_t i = 0; i < n; i++) {
		const struct rpc_stats_row *r = &rows[i];
		if (r->optab != t || r->calls == 0)
			continue;
		calls += r->calls;
		errors += r->errors;
		snprintf(vers, sizeof(vers), "%s%u", t->prefix, r->vers);
		fprintf(f, "%-6s %-20s", vers,
		        row_proc_name(r, name, sizeof(name)));
		write_cols(f, r);
	}
	fprintf(f, "%-6s %-20s %12llu %10llu\n", "total", "",
	        (unsigned long long)calls, (unsigned long long)errors);
}

/* Call fn once per optab of the rows, in the order they come. */
static void for_each_optab(FILE *f, const struct rpc_stats_row *rows, size_t n,
                           void (*fn)(FILE *f, const struct rpc_stats_row *,
                                      size_t, const struct rpc_stats_optab *))
{
	const struct rpc_stats_optab *last = NULL;

	/* an optab's rows are consecutive (rpc_stats_snapshot) */
	for (size_t i = 0; i < n; i++) {
		if (!rows[i].optab || rows[i].optab == last)
			continue;
		last = rows[i].optab;
		fn(f, rows, n, last);
	}
}

void rpc_stats_write_table(FILE *f, const struct rpc_stats_row *rows, size_t n)
{
	write_proc_table(f, rows, n);
	for_each_optab(f, rows, n, write_optab_table);
}

/* A label value with \, " and newline escaped (exposition format). */
static void put_label(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

/* {prog="nfs",vers="3",proc="READ", or {op="READ",minor="2" for an op,
 * without the closing brace, so a histogram can append its le label. */
static void put_labels(FILE *f, const struct rpc_stats_row *r)
{
	char name[32];

	if (r->optab) {
		fputs("{op=\"", f);
		put_label(f, row_proc_name(r, name, sizeof(name)));
		fputs("\",", f);
		put_label(f, r->optab->label);
		fprintf(f, "=\"%u\"", r->vers);
		return;
	}
	fputs("{prog=\"", f);
	put_label(f, r->prog_name);
	fprintf(f, "\",vers=\"%u\",proc=\"", r->vers);
	put_label(f, row_proc_name(r, name, sizeof(name)));
	fputc('"', f);
}

/* Whether row r belongs to the series of optab t (NULL: the procedures).
 * Every procedure is listed; an op only where its variant has it. */
static bool row_listed(const struct rpc_stats_row *r,
                       const struct rpc_stats_optab *t)
{
	return r->optab == t && (!t || r->proc_name || r->calls);
}

static void write_counter(FILE *f, const struct rpc_stats_row *rows, size_t n,
                          const struct rpc_stats_optab *t, const char *name,
                          const char *help, bool errors)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
	for (size_t i = 0; i < n; i++) {
		if (!row_listed(&rows[i], t))
			continue;
		fputs(name, f);
		put_labels(f, &rows[i]);
		fprintf(f, "} %llu\n",
		        (unsigned long long)(errors ? rows[i].errors
		                                    : rows[i].calls));
	}
}

/* One histogram: cumulative buckets with le in seconds, sum, count. */
static void write_histogram(FILE *f, const char *name,
                            const struct rpc_stats_row *r)
{
	uint64_t cum = 0;

	for (unsigned b = 0; b < RPC_STATS_BUCKETS; b++) {
		uint64_t us = rpc_stats_bucket_bound_us(b);
		cum += r->buckets[b];
		fprintf(f, "%s_bucket", name);
		put_labels(f, r);
		if (b + 1 < RPC_STATS_BUCKETS)
			/* exact decimal seconds: 0.000001 .. 67.108864 */
			fprintf(f, ",le=\"%llu.%06llu\"} %llu\n",
			        (unsigned long long)(us / 1000000),
			        (unsigned long long)(us % 1000000),
			        (unsigned long long)cum);
		else
			fprintf(f, ",le=\"+Inf\"} %llu\n",
			        (unsigned long long)cum);
	}
	fprintf(f, "%s_sum", name);
	put_labels(f, r);
	fprintf(f, "} %.9f\n%s_count", (double)r->sum_ns / 1e9, name);
	put_labels(f, r);
	fprintf(f, "} %llu\n", (unsigned long long)cum);
}

/* The histograms of the rows of t (NULL: the procedures) that have calls. */
static void write_histograms(FILE *f, const struct rpc_stats_row *rows,
                             size_t n, const struct rpc_stats_optab *t,
                             const char *name, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
	for (size_t i = 0; i < n; i++)
		if (rows[i].optab == t && rows[i].calls)
			write_histogram(f, name, &rows[i]);
}

/* snfsd_NAME_ops_total, _op_errors_total, _op_duration_seconds. */
static void write_optab_metrics(FILE *f, const struct rpc_stats_row *rows,
                                size_t n, const struct rpc_stats_optab *t)
{
	char name[96], help[160];

	snprintf(name, sizeof(name), "snfsd_%s_ops_total", t->name);
	snprintf(help, sizeof(help), "%s run (labels: op, %s).", t->title,
	         t->label);
	write_counter(f, rows, n, t, name, help, false);
	snprintf(name, sizeof(name), "snfsd_%s_op_errors_total", t->name);
	snprintf(help, sizeof(help), "%s that ended with an error status.",
	         t->title);
	write_counter(f, rows, n, t, name, help, true);
	snprintf(name, sizeof(name), "snfsd_%s_op_duration_seconds", t->name);
	snprintf(help, sizeof(help),
	         "Time spent in %s (those run at least once).", t->title);
	write_histograms(f, rows, n, t, name, help);
}

void rpc_stats_write_prometheus(FILE *f, const struct rpc_stats_row *rows,
                                size_t n)
{
	write_counter(f, rows, n, NULL, "snfsd_rpc_calls_total",
	              "RPC calls handled, by program, version and procedure.",
	              false);
	write_counter(f, rows, n, NULL, "snfsd_rpc_errors_total",
	              "RPC calls answered with an error status.", true);
	write_histograms(f, rows, n, NULL, "snfsd_rpc_duration_seconds",
	                 "Time spent handling RPC calls (procedures called at "
	                 "least once).");
	for_each_optab(f, rows, n, write_optab_metrics);
}

/* ---- structured error log ---- */

/* Whether this error line may be written now, and how many were left out
 * before it (*dropped). At debug level every line is. */
static bool log_allowed(struct rpc_stats *st, uint64_t *dropped)
{
	struct timespec ts;
	uint64_t now, win;

	*dropped = 0;
	if (log_get_level() >= LOG_DEBUG)
		return true;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	now = (uint64_t)ts.tv_sec;
	win = atomic_load_explicit(&st->log_window, memory_order_relaxed);
	if (win != now &&
	    atomic_compare_exchange_strong(&st->log_window, &win, now))
		atomic_store(&st->log_in_window, 0);
	if (atomic_fetch_add(&st->log_in_window, 1) >= ERROR_LOG_PER_SEC) {
		atomic_fetch_add(&st->log_suppressed, 1);
		return false;
	}
	*dropped = atomic_exchange(&st->log_suppressed, 0);
	return true;
}

/* Name of an accept_stat, or of the handler's other verdicts. */
static const char *rpc_failure_name(uint32_t stat, char *buf, size_t n)
{
	static const char *const names[] = {
	    [RPC_PROG_UNAVAIL] = "PROG_UNAVAIL",
	    [RPC_PROG_MISMATCH] = "PROG_MISMATCH",
	    [RPC_PROC_UNAVAIL] = "PROC_UNAVAIL",
	    [RPC_GARBAGE_ARGS] = "GARBAGE_ARGS",
	    [RPC_SYSTEM_ERR] = "SYSTEM_ERR",
	};

	if (stat < sizeof(names) / sizeof(names[0]) && names[stat])
		return names[stat];
	if (stat == (uint32_t)RPC_REPLY_DROP)
		return "DROPPED";
	if (stat >= 0x100 && stat <= 0x1ff)
		snprintf(buf, n, "AUTH_ERROR_%u", stat & 0xff);
	else
		snprintf(buf, n, "RPC_%u", stat);
	return buf;
}

static const char *status_str(const struct rpc_call *call, uint32_t status,
                              bool rpc_failed, char *buf, size_t n)
{
	const char *s = NULL;

	if (rpc_failed)
		return rpc_failure_name(status, buf, n);
	if (call->status_name)
		s = call->status_name(status);
	if (!s) {
		snprintf(buf, n, "%u", status);
		s = buf;
	}
	return s;
}

/* Hex of a handle (cut at RPC_CALL_FH_MAX bytes), or "-". */
static const char *fh_hex(const uint8_t *fh, uint32_t fh_len, char *buf,
                          size_t n)
{
	static const char digits[] = "0123456789abcdef";
	size_t len = fh_len < RPC_CALL_FH_MAX ? fh_len : RPC_CALL_FH_MAX;

	if (!fh || len == 0 || n < 2 * len + 1)
		return "-";
	for (size_t i = 0; i < len; i++) {
		buf[2 * i] = digits[fh[i] >> 4];
		buf[2 * i + 1] = digits[fh[i] & 15];
	}
	buf[2 * len] = '\0';
	return buf;
}

static const char *uid_str(const struct rpc_call *call, char *buf, size_t n)
{
	if (call->cred.flavor != RPC_AUTH_SYS)
		return "-";
	snprintf(buf, n, "%u", call->cred.uid);
	return buf;
}

static const char *suppressed_str(uint64_t dropped, char *buf, size_t n)
{
	if (!dropped)
		return "";
	snprintf(buf, n, " suppressed=%llu", (unsigned long long)dropped);
	return buf;
}

void rpc_stats_log_error(struct rpc_stats *st, const struct rpc_call *call,
                         const struct rpc_program *prog,
                         const struct rpc_version *ver, uint32_t status,
                         bool rpc_failed, uint64_t ns)
{
	char peer[64], fh[2 * RPC_CALL_FH_MAX + 1], sbuf[32], pbuf[32];
	char uid[16], extra[48];
	const char *op = NULL;
	uint64_t dropped;

	if (!log_allowed(st, &dropped))
		return;
	if (call->proc < ver->nprocs)
		op = ver->procs[call->proc].name;
	if (!op) {
		snprintf(pbuf, sizeof(pbuf), "proc_%u", call->proc);
		op = pbuf;
	}
	log_info("op=%s prog=%s vers=%u client=%s uid=%s fh=%s status=%s "
	         "time_us=%llu%s",
	         op, prog->name, ver->vers,
	         rpc_peer_str((const struct sockaddr *)&call->peer, peer,
	                      sizeof(peer)),
	         uid_str(call, uid, sizeof(uid)),
	         fh_hex(call->fh, call->fh_len, fh, sizeof(fh)),
	         status_str(call, status, rpc_failed, sbuf, sizeof(sbuf)),
	         (unsigned long long)(ns / 1000),
	         suppressed_str(dropped, extra, sizeof(extra)));
}

void rpc_stats_log_op_error(struct rpc_stats *st, const struct rpc_call *call,
                            const struct rpc_stats_optab *t,
                            const struct rpc_op_failure *f)
{
	char peer[64], fh[2 * RPC_CALL_FH_MAX + 1], sbuf[32];
	char uid[16], extra[48];
	const struct rpc_program *prog =
	    call->svc ? rpc_service_find(call->svc, call->prog) : NULL;
	uint64_t dropped;

	if (!log_allowed(st, &dropped))
		return;
	log_info("op=%s prog=%s vers=%u %s=%u client=%s uid=%s fh=%s "
	         "status=%s time_us=%llu%s",
	         f->op, prog ? prog->name : "-", call->vers, t->label,
	         f->variant,
	         rpc_peer_str((const struct sockaddr *)&call->peer, peer,
	                      sizeof(peer)),
	         uid_str(call, uid, sizeof(uid)),
	         fh_hex(f->fh, f->fh_len, fh, sizeof(fh)),
	         status_str(call, f->status, false, sbuf, sizeof(sbuf)),
	         (unsigned long long)(f->ns / 1000),
	         suppressed_str(dropped, extra, sizeof(extra)));
}

void rpc_call_set_fh(struct rpc_call *call, const void *fh, uint32_t len)
{
	if (call->fh_len || !fh)
		return;
	if (len > RPC_CALL_FH_MAX)
		len = RPC_CALL_FH_MAX;
	memcpy(call->fh, fh, len);
	call->fh_len = len;
}
