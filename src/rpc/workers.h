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

/* Jobs gathered to be queued together (pool_submit_batch). */
struct pool_batch {
	struct pool_job *head, *tail;
	int n;
};
void pool_batch_add(struct pool_batch *b, struct pool_job *job);
/* Queue the batch's jobs (FIFO) and empty it. At most max_wake waiting
 * threads are woken for it: threads that finish a job take the next
 * without sleeping, so a burst of short calls read in one go runs on a
 * few awake threads instead of waking every one; jobs still queued when
 * more arrive wake more threads then. */
void pool_submit_batch(struct worker_pool *pool, struct pool_batch *b,
                       int max_wake);
/* Whether jobs wait in the queue (a racy hint, for a timeout). */
bool pool_backlog(struct worker_pool *pool);
/* Jobs have waited a while with nobody taking them (the awake threads are
 * blocked in slow calls): wake one more waiting thread, if any. */
void pool_kick(struct worker_pool *pool);
/* Put job at the head of the queue and wake a waiting thread for it, but
 * only when a thread waits that nobody has woken yet: true then; false,
 * and nothing queued, when every thread is busy or already on its way. The
 * event loop hands itself over this way (server.c), so it never waits
 * behind queued calls. */
bool pool_handoff(struct worker_pool *pool, struct pool_job *job);
/* Offer job to be run by another thread if pool_release_standby is
 * called before the offer is taken back (pool_reclaim): true, or false
 * and nothing offered when one is pending already or the pool stops.
 * The event loop offers itself this way while it runs a lone call
 * (server.c), and a thread watching the loop's sources releases it when
 * one becomes ready: a call that ends before anything else comes in
 * costs no wake-up of another thread. */
bool pool_standby(struct worker_pool *pool, struct pool_job *job);
/* Queue the job offered, if any, at the head (as pool_handoff, but
 * queued even when no thread waits): true when there was one. */
bool pool_release_standby(struct worker_pool *pool);
/* Take back the job offered: true when no thread took it. */
bool pool_reclaim(struct worker_pool *pool, struct pool_job *job);
/* Stop: running jobs finish, queued ones are cancelled, threads joined,
 * everything freed. */
void pool_stop(struct worker_pool *pool);

#endif
