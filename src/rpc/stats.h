/* Per-procedure statistics of an RPC service: calls, errors and a latency
 * histogram for every (program, version, procedure) registered, plus the
 * structured error log line. A procedure that carries operations of its
 * own (NFSv4's COMPOUND) names an operation table, and each operation of
 * it is counted the same way, per variant (minor version).
 *
 * Recording is lock-free: each thread adds to its own shard of relaxed
 * atomic counters (so workers never contend for a cache line), and readers
 * sum the shards. The table grows only while programs are registered,
 * before serving starts, so recording needs no lock either.
 *
 * Latency buckets are powers of two in microseconds: bucket 0 holds calls
 * under 1 us, bucket k (k >= 1) those in [2^(k-1), 2^k) us, and the last
 * bucket everything from 2^(RPC_STATS_BUCKETS-2) us (about 67 s) up.
 */
#ifndef SNFS_RPC_STATS_H
#define SNFS_RPC_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "rpc/rpc.h"

#define RPC_STATS_BUCKETS 28 /* 27 finite bounds (1 us .. 2^26 us), +Inf */
#define RPC_STATS_SHARDS 16  /* counter copies; threads map onto them */

struct rpc_stats;

/* The operations inside a procedure (NFSv4's COMPOUND), registered with
 * rpc_stats_add_optab: one row per operation number and variant, beside
 * the procedures' rows. */
struct rpc_stats_optab {
	const char *name;   /* "nfs4": the rows' prog_name, metric prefix */
	const char *title;  /* heading of its table: "NFSv4 operations" */
	const char *label;  /* Prometheus label and log key of the variant */
	const char *prefix; /* before the variant in the table: "4." */
	uint32_t nvariants; /* variants 0 .. nvariants-1 */
	uint32_t nops;      /* operation numbers 0 .. nops-1 */
	/* Name of op in variant, or NULL where the variant has no such op
	 * (its row is left out of the renderings). */
	const char *(*op_name)(uint32_t variant, uint32_t op);
};

/* One procedure's or operation's counters, summed over the shards. */
struct rpc_stats_row {
	const char *prog_name;     /* "nfs", "mountd", "portmap"; optab->name */
	const char *proc_name;     /* "READ"; NULL when the table has none */
	uint32_t prog, vers, proc; /* of an op: 0, variant, op number */
	const struct rpc_stats_optab *optab; /* NULL for a procedure */
	uint64_t calls;
	uint64_t errors; /* non-OK protocol status or a failed RPC */
	uint64_t sum_ns; /* total handler time */
	uint64_t buckets[RPC_STATS_BUCKETS];
};

struct rpc_stats *rpc_stats_new(void);
void rpc_stats_free(struct rpc_stats *st);
/* Make room for the procedures of prog. 0 or -ENOMEM. Not thread-safe:
 * call while registering programs, before serving. */
int rpc_stats_add_program(struct rpc_stats *st, const struct rpc_program *prog);
/* The same for the ops of optab t (a second time changes nothing);
 * -EINVAL for NULL. */
int rpc_stats_add_optab(struct rpc_stats *st, const struct rpc_stats_optab *t);
/* The service's statistics (made by rpc_service_new; never NULL for a
 * service that exists). */
struct rpc_stats *rpc_service_stats(const struct rpc_service *svc);

/* Index of procedure 0 of ver in the table, or -1 when ver is unknown. */
int rpc_stats_slot(const struct rpc_stats *st, const struct rpc_version *ver);
/* Count one call of procedure proc of the version at slot, which took ns
 * nanoseconds. Lock-free; safe from any thread. */
void rpc_stats_record(struct rpc_stats *st, int slot, uint32_t proc,
                      uint64_t ns, bool error);
/* Index of optab t's first row, or -1 when it was not added. */
int rpc_stats_optab_slot(const struct rpc_stats *st,
                         const struct rpc_stats_optab *t);
/* Count one op of optab t (at slot) in variant, which took ns
 * nanoseconds; ops and variants out of t's range are not counted.
 * Lock-free like rpc_stats_record. */
void rpc_stats_record_op(struct rpc_stats *st, int slot,
                         const struct rpc_stats_optab *t, uint32_t variant,
                         uint32_t op, uint64_t ns, bool error);
/* The bucket of a latency in nanoseconds. */
unsigned rpc_stats_bucket(uint64_t ns);
/* Upper bound of bucket b in microseconds (0 for the last, unbounded). */
uint64_t rpc_stats_bucket_bound_us(unsigned b);

/* Sum the shards: one row per registered procedure (then per op of an
 * optab), in registration order, into a malloc'd array (free() it).
 * Returns the number of rows, or -ENOMEM. Counters read while calls run
 * may be a few calls apart. */
long rpc_stats_snapshot(const struct rpc_stats *st,
                        struct rpc_stats_row **rows);
/* Estimated latency quantile q (0..1) of a row in nanoseconds,
 * interpolated inside the bucket where it falls; 0 with no calls. */
double rpc_stats_quantile_ns(const struct rpc_stats_row *r, double q);

/* Human-readable table of the procedure rows that have calls: program,
 * version, operation, calls, errors, mean/p50/p99 latency; then one table
 * per optab (its title, then version, operation, ...). */
void rpc_stats_write_table(FILE *f, const struct rpc_stats_row *rows, size_t n);
/* Prometheus text exposition format 0.0.4: calls and errors counters for
 * every procedure, a latency histogram (in seconds) for those called;
 * then per optab snfsd_NAME_ops_total, snfsd_NAME_op_errors_total and
 * snfsd_NAME_op_duration_seconds labelled {op="READ",LABEL="2"}. */
void rpc_stats_write_prometheus(FILE *f, const struct rpc_stats_row *rows,
                                size_t n);

/* After a call of prog/ver/proc failed with status (a protocol status
 * when rpc_failed is false, an accept_stat otherwise): log one key=value
 * line naming the operation, client, handle and status. At the default
 * log level at most a few lines per second are written (and how many were
 * left out is said on the next one); with -v every error is logged. */
void rpc_stats_log_error(struct rpc_stats *st, const struct rpc_call *call,
                         const struct rpc_program *prog,
                         const struct rpc_version *ver, uint32_t status,
                         bool rpc_failed, uint64_t ns);

/* One failed operation inside a call (an NFSv4 COMPOUND's op). */
struct rpc_op_failure {
	const char *op; /* "LOOKUP" */
	uint32_t variant;
	uint32_t status;   /* named by call->status_name */
	const uint8_t *fh; /* the handle the op worked on, or NULL */
	uint32_t fh_len;
	uint64_t ns; /* the op's own time */
};
/* The line of rpc_stats_log_error for one op of optab t: the op's name,
 * the variant (t->label=N after vers=), its status and handle; under the
 * same rate limit as the calls' lines. */
void rpc_stats_log_op_error(struct rpc_stats *st, const struct rpc_call *call,
                            const struct rpc_stats_optab *t,
                            const struct rpc_op_failure *f);

#endif
