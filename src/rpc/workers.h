/* A fixed pool of worker threads draining one FIFO of jobs, so a slow
 * handler blocks one worker, never the event loop or other clients. */
#ifndef SNFS_RPC_WORKERS_H
#define SNFS_RPC_WORKERS_H

#include <stdbool.h>

struct pool_job;
/* Runs a job on a worker; cancelled is true when the pool is shutting down
 * and the job must only release its resources. Owns (frees) the job. */
typedef void (*pool_job_fn)(struct pool_job *job, bool cancelled);

struct pool_job {
	struct pool_job *next;
	pool_job_fn fn;
};

struct worker_pool;

/* Start nthreads workers. NULL on failure. */
struct worker_pool *pool_start(int nthreads);
/* Queue a job (FIFO). */
void pool_submit(struct worker_pool *pool, struct pool_job *job);
/* Stop: running jobs finish, queued ones are cancelled, threads joined,
 * everything freed. */
void pool_stop(struct worker_pool *pool);

#endif
